#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes ckpt_window.pickle into the current directory (run with /usr/bin/python3: Debian's
# PyTorch 1.13 for the CPU); see README.md here.
#
# The llama of python/cpu_models_more.py small and long (d_model 64, 2 layers, sequence 512,
# micro-batch 2, fp32, AdamW, two iterations, built inside the capture): its activations (the
# 2 MiB scores) outweigh its weights and Adam's state many times, so its first iteration, which
# a checkpointing projection does not transform, holds more than the checkpointed second one.
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import torch, cpu_models, cpu_models_more, headroom_cpu
torch.set_num_threads(1)

levers = dict(micro_batch=2, seq=512, precision="fp32", checkpoint="none", accum=1, devices=1,
              iterations=2, optimizer="adamw", model="llama", family="llama")
with headroom_cpu.capture("ckpt_window.pickle", oracle=False, **levers) as cap:
    model, make_batch, loss_fn = cpu_models_more.build_llama(2, 512, "fp32", "none", 0, vocab=256, dim=64,
                                                             heads=2, kv_heads=1, hidden=176, layers=2)
    opt = cpu_models.make_optimizer("adamw", model.parameters())
    cpu_models.train(model, opt, make_batch, loss_fn, "fp32", 1, 2, cap)
