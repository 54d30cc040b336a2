#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes closure_mb2.pickle and closure_mb4.pickle into the current directory (run with
# /usr/bin/python3: Debian's PyTorch 1.13 for the CPU); see README.md here.
#
# A PyTorch Lightning-style loop (issue 27): the forward, the loss and the backward run inside
# `optimizer.step(closure)`, called from a `training_step` of a LightningModule-like class, and
# the only phase marker is the user's "optimizer" around the step, as a user who marks the step
# they see in their loop writes it. Headroom must still find two forwards and two backwards.
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import torch, cpu_models, headroom_cpu
torch.set_num_threads(1)


class LitModule:
    def __init__(self, model, loss_fn):
        self.model, self.loss_fn = model, loss_fn

    def training_step(self, batch):
        x, y = batch
        return self.loss_fn(self.model(x), y)


def fit(module, opt, make_batch, cap, iterations):
    for _ in range(iterations):
        batch = make_batch()

        def closure():
            opt.zero_grad(set_to_none=True)
            loss = module.training_step(batch)
            loss.backward()
            return loss

        with cap.iteration():
            with cap.phase("optimizer"):
                opt.step(closure)


for name, mb in (("closure_mb2", 2), ("closure_mb4", 4)):
    seq = 128
    kw = dict(micro_batch=mb, seq=seq, precision="fp32", checkpoint="none", accum=1, devices=1,
              iterations=2, optimizer="adamw", model="decoder", family="decoder", loop="closure")
    with headroom_cpu.capture(f"{name}.pickle", **kw) as cap:
        model, make_batch, loss_fn = cpu_models.build("decoder", mb, seq, "fp32", "none", 0)
        opt = cpu_models.make_optimizer("adamw", model.parameters())
        fit(LitModule(model, loss_fn), opt, make_batch, cap, 2)
    print(name, cap.recorded_peak_rounded_bytes)
