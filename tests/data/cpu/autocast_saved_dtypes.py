#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# What a forward saves for backward, by dtype, in fp32, under CPU bf16 autocast and in pure
# bf16, for each family of python/cpu_models.py (micro-batch 2, base sequence): the evidence
# for the what-if's fp32-to-16-bit activation factor (see README.md here). Run with
# /usr/bin/python3 (Debian's PyTorch 1.13); writes nothing. Sizes are storages rounded to
# the CUDA allocator's 512-byte blocks, each storage counted once.
import collections
import contextlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import torch  # noqa: E402
import cpu_models  # noqa: E402

torch.set_num_threads(1)


def rounded(n):
    return (n + 511) // 512 * 512 if n > 0 else 0


def saved(family, precision):
    model, make_batch, loss_fn = cpu_models.build(family, 2, None, precision, "none", 0)
    x, y = make_batch()
    params = {p.storage().data_ptr() for p in model.parameters()}
    shapes = {tuple(p.shape) for p in model.parameters()}
    seen = {}

    def pack(t):
        seen.setdefault(t.storage().data_ptr(), (t.dtype, t.storage().nbytes(), tuple(t.shape)))
        return t

    amp = torch.autocast("cpu", dtype=torch.bfloat16) if precision == "amp-bf16" else contextlib.nullcontext()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), amp:
        loss_fn(model(x), y)
    out = collections.Counter()
    for ptr, (dtype, nbytes, shape) in seen.items():
        if ptr in params:
            kind = "weight"
        elif precision == "amp-bf16" and dtype == torch.bfloat16 and shape in shapes:
            kind = "weight cast"
        elif nbytes <= 512:
            kind = "smallest block"
        else:
            kind = "activation " + str(dtype).replace("torch.", "")
        out[kind] += rounded(nbytes)
    return out


for family in cpu_models.FAMILIES:
    by = {p: saved(family, p) for p in ("fp32", "amp-bf16", "bf16")}
    act = {p: sum(v for k, v in c.items() if k.startswith("activation")) for p, c in by.items()}
    for p, c in by.items():
        print("%-8s %-9s %s" % (family, p, ", ".join("%s %d" % kv for kv in sorted(c.items()))))
    print("%-8s fp32 / autocast activations %.3f, fp32 / bf16 %.3f" % (family, act["fp32"] / act["amp-bf16"],
                                                                       act["fp32"] / act["bf16"]))
