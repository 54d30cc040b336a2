#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the fixtures of the same name into the current directory (run with /usr/bin/python3:
# Debian's PyTorch 1.13 for the CPU); see README.md here.
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import torch, cpu_models, headroom_cpu
torch.set_num_threads(1)
# b*s = 2*32 = 64 = the hidden size: every b*s*h bf16 activation is half an h*h fp32 weight.
for name, mb in (("amp_bs_eq_h_mb2", 2), ("amp_bs_eq_h_mb4", 4)):
    seq = 32
    kw = dict(micro_batch=mb, seq=seq, precision="amp-bf16", checkpoint="none", accum=1, devices=1,
              iterations=2, optimizer="adamw", model="decoder", family="decoder")
    with headroom_cpu.capture(f"{name}.pickle", **kw) as cap:
        model, make_batch, loss_fn = cpu_models.build("decoder", mb, seq, "amp-bf16", "none", 0)
        opt = cpu_models.make_optimizer("adamw", model.parameters())
        cpu_models.train(model, opt, make_batch, loss_fn, "amp-bf16", 1, 2, cap)
    print(name, cap.recorded_peak_rounded_bytes)
