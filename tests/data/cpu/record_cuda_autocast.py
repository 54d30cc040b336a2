#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes gpt2fused_graph_h100.pickle, gpt2fused_graph_amp_cuda.pickle,
# decoder_infer_graph_h100.pickle and decoder_infer_graph_amp_cuda.pickle into the current
# directory (run with /usr/bin/python3: Debian's PyTorch 1.13 for the CPU); see README.md here.
#
# The gpt2fused (trained) and decoder_infer (no_grad forward) points of tools/cpu_matrix.py,
# micro-batch 2, base sequence, two iterations, with the op graph: in fp32 naming an 80 GiB GPU
# as the target (target_device='h100-80gb': Headroom projects autocast with CUDA's lists), and
# under bf16 autocast with CUDA's lists, emulated on the CPU (python/headroom_autocast.py): the
# run the projection must reach. tools/cuda_autocast_check.py runs the other families.
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import torch, cpu_models
torch.set_num_threads(1)

for family, stem in (("gpt2fused", "gpt2fused_graph"), ("decoder_infer", "decoder_infer_graph")):
    cpu_models.run_point(stem + "_h100.pickle", family, micro_batch=2, iterations=2, precision="fp32",
                         target_device="h100-80gb")
    cpu_models.run_point(stem + "_amp_cuda.pickle", family, micro_batch=2, iterations=2, precision="amp-bf16",
                         autocast="cuda")

# The same forward under the CPU's autocast (torch.autocast("cpu")) for the same GPU target, in
# fake mode: `headroom-cli doctor` warns that the GPU's lists keep more in fp32.
cpu_models.run_point("decoder_infer_amp_cpu_h100.pickle", "decoder_infer", micro_batch=2, iterations=2,
                     precision="amp-bf16", target_device="h100-80gb", fake=True)
