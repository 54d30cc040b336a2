#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes decoder_infer_bare_h100.pickle, decoder_infer_bare_amp_cuda.pickle,
# encdec_bare_h100.pickle and encdec_bare_amp_cuda.pickle into the current directory (run with
# /usr/bin/python3: Debian's PyTorch 1.13 for the CPU); see README.md here.
#
# As record_cuda_autocast.py (fp32 naming an 80 GiB GPU as the target, and the run under CUDA's
# autocast lists emulated on the CPU), for the decoder_infer (no_grad forward) and encdec
# (trained, no attention dropout) points of tools/cpu_matrix.py, then stripped of the
# recorder's shapes and op graph, as GPU snapshots of the same runs would be: the terms price
# the move to autocast, with the attention scores read from what is alive (issue 50).
import os, sys
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import torch, cpu_models, verify_check
torch.set_num_threads(1)

for family in ("decoder_infer", "encdec"):
    for suffix, kw in (("h100", dict(precision="fp32", target_device="h100-80gb")),
                       ("amp_cuda", dict(precision="amp-bf16", autocast="cuda"))):
        full = "%s_full_%s.pickle" % (family, suffix)
        cpu_models.run_point(full, family, micro_batch=2, iterations=2, **kw)
        verify_check.without_recorder_keys(full, "%s_bare_%s.pickle" % (family, suffix))
        os.remove(full)
