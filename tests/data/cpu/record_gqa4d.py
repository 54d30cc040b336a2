#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes gqa4d_base.pickle and gqa4d_seq4.pickle into the current directory (run with
# /usr/bin/python3: Debian's PyTorch 1.13 for the CPU); see README.md here.
#
# The llama family of python/cpu_models_more.py (RMSNorm, rotary embeddings, eager attention
# with an explicit causal mask, SwiGLU) made a grouped-query decoder at query heads x sequence
# = 4 x d_model: d_model 64, 4 query heads over 1 kv head, sequence 64 (base) and 256 (x4),
# micro-batch 2, fp32, AdamW, two iterations. d_model equals the sequence, so the recorder's
# dims mark the width of every [b, s, d] activation as a sequence dimension too: the shapes
# alone cannot tell b*s from b*s^2 (docs/whatif-model.md, "Laws", coincident marks).
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import torch, cpu_models, cpu_models_more, headroom_cpu
torch.set_num_threads(1)

DIMS = dict(vocab=256, dim=64, heads=4, kv_heads=1, hidden=176, layers=2)
for name, seq in (("base", 64), ("seq4", 256)):
    levers = dict(micro_batch=2, seq=seq, precision="fp32", checkpoint="none", accum=1, devices=1,
                  iterations=2, optimizer="adamw", model="gqa4d", family="gqa4d")
    with headroom_cpu.capture("gqa4d_%s.pickle" % name, oracle=False, **levers) as cap:
        model, make_batch, loss_fn = cpu_models_more.build_llama(2, seq, "fp32", "none", 0, **DIMS)
        opt = cpu_models.make_optimizer("adamw", model.parameters())
        cpu_models.train(model, opt, make_batch, loss_fn, "fp32", 1, 2, cap)
