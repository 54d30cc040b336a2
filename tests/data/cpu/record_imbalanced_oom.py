#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes imbalanced_oom.pickle into the current directory; run from the repository root with
# /usr/bin/python3 (Debian's PyTorch 1.13 for the CPU):
#     /usr/bin/python3 tests/data/cpu/record_imbalanced_oom.py tests/data/cpu
#
# An nn.DataParallel-like OOM built from three real CPU recordings of the decoder (issue 27): the
# same step at micro-batch 2, 16 and 4 becomes devices 0, 1 and 2 of one snapshot (a scatter that
# split the inputs unevenly), with no phase markers. Device 1 is cut where its allocated bytes
# would first pass a capacity of 1.3x device 2's peak: that request becomes an `oom` entry with its
# own frames, and nothing after it is kept, as a CUDA OOM ends the step. Every size, lifetime and
# stack is PyTorch's; only the cut and the side-by-side devices are made here.
import os, pickle, sys, tempfile
sys.path.insert(0, "python")
import torch, cpu_models, headroom_cpu
torch.set_num_threads(1)


def record(path, micro_batch):
    kw = dict(micro_batch=micro_batch, seq=128, precision="fp32", checkpoint="none", accum=1, devices=1,
              iterations=1, optimizer="adamw", model="decoder", family="decoder")
    with headroom_cpu.capture(path, **kw):
        model, make_batch, loss_fn = cpu_models.build("decoder", micro_batch, 128, "fp32", "none", 0)
        opt = cpu_models.make_optimizer("adamw", model.parameters())
        cpu_models.train(model, opt, make_batch, loss_fn, "fp32", 1, 1)
    with open(path, "rb") as f:
        return pickle.load(f)["device_traces"][0]


def peak(trace):
    live, top = 0, 0
    for e in trace:
        if e["action"] == "alloc":
            live += e["size"]
            top = max(top, live)
        elif e["action"] == "free_completed":
            live -= e["size"]
    return top


def cut_at(trace, capacity):
    live = 0
    for i, e in enumerate(trace):
        if e["action"] == "alloc" and live + e["size"] > capacity:
            oom = {"action": "oom", "addr": 0, "size": e["size"], "stream": 0, "time_us": e["time_us"],
                   "frames": e["frames"], "device_free": capacity - live}
            return trace[:i] + [oom]
        if e["action"] == "alloc":
            live += e["size"]
        elif e["action"] == "free_completed":
            live -= e["size"]
    raise SystemExit("the capacity is never reached")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    with tempfile.TemporaryDirectory() as tmp:
        traces = {mb: record(os.path.join(tmp, "mb%d.pickle" % mb), mb) for mb in (2, 16, 4)}
    capacity = int(1.3 * peak(traces[4]))
    snapshot = {"segments": [], "device_traces": [traces[2], cut_at(traces[16], capacity), traces[4]],
                "external_annotations": []}
    with open(os.path.join(out, "imbalanced_oom.pickle"), "wb") as f:
        pickle.dump(snapshot, f, protocol=4)
    print("capacity", capacity, "peaks", {mb: peak(t) for mb, t in traces.items()})


main()
