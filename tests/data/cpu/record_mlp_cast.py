#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes mlp_infer_fp32.pickle and mlp_infer_bf16.pickle into the current directory (run with
# /usr/bin/python3: Debian's PyTorch 1.13 for the CPU); see README.md here.
#
# A plain MLP (no attention, no norm that upcasts) run forward under no_grad at micro-batch 1,
# built inside the capture: its weights (2.5 MiB in fp32) dwarf its activations. The bf16 run
# builds the same model in fp32 and casts it (model.to(torch.bfloat16)), so its peak is the
# cast, every fp32 weight alive beside the first 16-bit copy: above the fp32 run's own peak.
# The cast-after-build reading (core/whatif/replay/castplan.h) was written from the CPU llama_infer
# family; this model is the held-out check.
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import torch, cpu_models, headroom_cpu
torch.set_num_threads(1)


def build(precision):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256),
                                torch.nn.LayerNorm(256), torch.nn.Linear(256, 512))
    dtype = torch.float32
    if precision == "bf16":
        model.to(torch.bfloat16)
        dtype = torch.bfloat16
    g = torch.Generator().manual_seed(1)

    def make_batch():
        return torch.randn(1, 16, 256, generator=g).to(dtype), torch.zeros(1, dtype=torch.long)
    return model, make_batch


for precision in ("fp32", "bf16"):
    levers = dict(micro_batch=1, seq=16, precision=precision, checkpoint="none", accum=1, devices=1,
                  iterations=1, optimizer="none", model="mlp_infer", family="mlp_infer", mode="inference")
    with headroom_cpu.capture("mlp_infer_%s.pickle" % precision, **levers) as cap:
        model, make_batch = build(precision)
        cpu_models.infer(model, make_batch, precision, 1, cap)
