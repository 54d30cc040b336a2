#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes amp_casts_seq16.pickle and amp_casts_seq256.pickle into the current directory (run with
# /usr/bin/python3: Debian's PyTorch 1.13 for the CPU); see README.md here.
#
# The decoder of python/cpu_models.py at d_model 256, 4 layers, run forward under no_grad and
# CPU bf16 autocast at micro-batch 1, sequence 16 and 256, two iterations, recorded without
# headroom_tensor (shapes=False: no shapes and no op graph, as a GPU snapshot has none). Its
# fp32 weights (12.5 MiB) outweigh its activations, and autocast caches a bf16 cast of each,
# alive at the forward's peak (tools/autocast_cast_check.py has more sizes and families).
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import torch, cpu_models, headroom_cpu
torch.set_num_threads(1)

for seq in (16, 256):
    levers = dict(micro_batch=1, seq=seq, precision="amp-bf16", checkpoint="none", accum=1, devices=1,
                  iterations=2, optimizer="none", model="decoder_infer", family="decoder_infer",
                  mode="inference")
    with headroom_cpu.capture("amp_casts_seq%d.pickle" % seq, oracle=False, shapes=False, **levers) as cap:
        model, make_batch, _ = cpu_models.build_decoder(1, seq, "fp32", "none", 0, vocab=256, dim=256,
                                                        heads=4, layers=4)
        cpu_models.infer(model, make_batch, "amp-bf16", 2, cap)
