#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the fixtures of the same name into the current directory (run with /usr/bin/python3:
# Debian's PyTorch 1.13 for the CPU); see README.md here.
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import torch, cpu_models, headroom_cpu
torch.set_num_threads(1)

class HandAdam:
    """An optimizer outside torch.optim (as DeepSpeed's or apex's): its moments are created
    lazily by plain code, with no Optimizer.step annotation."""
    def __init__(self, params, lr=1e-3):
        self.params = list(params); self.lr = lr; self.m = None; self.v = None
    def step(self):
        if self.m is None:
            # One flat buffer for both moments, as DeepSpeed and apex keep them (over 1 MiB).
            n = sum(p.numel() for p in self.params)
            self.flat = torch.zeros(2 * n)
            self.m, self.v, off = [], [], 0
            for p in self.params:
                self.m.append(self.flat[off:off + p.numel()].view_as(p)); off += p.numel()
            for p in self.params:
                self.v.append(self.flat[off:off + p.numel()].view_as(p)); off += p.numel()
        with torch.no_grad():
            for p, m, v in zip(self.params, self.m, self.v):
                m.mul_(0.9).add_(p.grad, alpha=0.1)
                v.mul_(0.999).addcmul_(p.grad, p.grad, value=0.001)
                p.addcdiv_(m, v.sqrt().add_(1e-8), value=-self.lr)
                p.grad = None

for name, mb in (("extopt_mb2", 2), ("extopt_mb4", 4)):
    seq = 128
    kw = dict(micro_batch=mb, seq=seq, precision="fp32", checkpoint="none", accum=1, devices=1,
              iterations=3, optimizer="external", model="decoder", family="decoder")
    with headroom_cpu.capture(f"{name}.pickle", **kw) as cap:
        model, make_batch, loss_fn = cpu_models.build("decoder", mb, seq, "fp32", "none", 0)
        opt = HandAdam(model.parameters())
        for _ in range(3):
            with cap.iteration():
                x, y = make_batch()
                with cap.phase("forward"):
                    out = model(x)
                with cap.phase("loss"):
                    loss = loss_fn(out, y)
                del out
                with cap.phase("backward"):
                    loss.backward()
                del loss, x, y
                opt.step()  # not marked: the phase a foreign optimizer leaves unannotated
    print(name, cap.recorded_peak_rounded_bytes)
