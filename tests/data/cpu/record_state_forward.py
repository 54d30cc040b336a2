#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes state_forward_{fp32,amp_bf16}.pickle and state_forward_nograd_{fp32,amp_bf16}.pickle into
# the current directory (run with /usr/bin/python3: Debian's PyTorch 1.13 for the CPU); see
# README.md here.
#
# The llama of python/cpu_models_more.py (d_model 256, 4 layers, 4 heads over 2 kv heads) trained
# one AdamW step before the recording, then two forwards (with autograd on, as an evaluation
# that computes its loss) recorded in fp32 and under CPU bf16 autocast, micro-batch 2, sequence
# 64, without shapes; the _nograd files the same forwards under torch.no_grad(). The weights and Adam's two moments from that step are alive before the
# trace and have no allocation event (python/mid_run.py moves them to the snapshot's segments,
# as a GPU snapshot taken mid-run has them): three copies of the parameter set.
import contextlib, os, pickle, sys
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
import torch, cpu_models, headroom_cpu, mid_run
torch.set_num_threads(1)

DIMS = dict(dim=256, heads=4, kv_heads=2, hidden=704, layers=4)
RUNS = [(p, n, g) for g in (True, False) for p, n in (("fp32", "fp32"), ("amp-bf16", "amp_bf16"))]
for precision, name, grad in RUNS:
    model, make_batch, loss_fn = cpu_models.BUILDERS["llama"](2, 64, "fp32", "none", 0, **DIMS)
    opt = cpu_models.make_optimizer("adamw", model.parameters())
    cpu_models.train(model, opt, make_batch, loss_fn, "fp32", 1, 1)  # AdamW's state exists
    path = "state_forward_%s%s.pickle" % ("" if grad else "nograd_", name)
    levers = dict(micro_batch=2, seq=64, precision=precision, checkpoint="none", accum=1, devices=1,
                  iterations=2, family="llama")
    with headroom_cpu.capture(path, oracle=False, shapes=False, model=model, optimizer=opt, **levers) as cap:
        model.eval()
        for _ in range(2):
            with cap.iteration():
                x, y = make_batch()
                amp = torch.autocast("cpu", dtype=torch.bfloat16) if precision == "amp-bf16" \
                    else contextlib.nullcontext()
                with amp, cap.phase("forward"), torch.set_grad_enabled(grad):
                    loss = loss_fn(model(x), y)
                del loss, x, y
    with open(path, "rb") as f:
        snap = pickle.load(f)
    mid_run.as_recorded_mid_run(snap)
    snap.pop("headroom_truth", None)
    with open(path, "wb") as f:
        pickle.dump(snap, f, protocol=4)
