#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes outlier_batch.pickle into the current directory; run from the repository root with
# /usr/bin/python3 (Debian's PyTorch 1.13 for the CPU):
#     /usr/bin/python3 tests/data/cpu/record_outlier_batch.py tests/data/cpu
#
# One outlier batch (issue 27): the decoder trained four steps at micro-batch 2 with no phase
# markers, the third batch 512 tokens long where the others are 128 (a length-bucketed sampler's
# long bucket). Its attention scores are 16x the others' and its step peaks far above them.
import os, sys
sys.path.insert(0, "python")
import torch, cpu_models, headroom_cpu
torch.set_num_threads(1)

out = sys.argv[1] if len(sys.argv) > 1 else "."
kw = dict(micro_batch=2, precision="fp32", checkpoint="none", accum=1, devices=1, iterations=4,
          optimizer="adamw", model="decoder", family="decoder")
with headroom_cpu.capture(os.path.join(out, "outlier_batch.pickle"), **kw) as cap:
    model, _, loss_fn = cpu_models.build("decoder", 2, 512, "fp32", "none", 0)
    opt = cpu_models.make_optimizer("adamw", model.parameters())
    short, long = cpu_models._tokens(256, 2, 128, 1), cpu_models._tokens(256, 2, 512, 2)
    for step in range(4):
        cpu_models.train(model, opt, long if step == 2 else short, loss_fn, "fp32", 1, 1)
print("peak", cap.recorded_peak_rounded_bytes)
