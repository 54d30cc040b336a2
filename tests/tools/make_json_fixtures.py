#!/usr/bin/env python3
"""Writes the synthetic JSON fixtures of tests/fixtures/json/ (deterministic).

They cover what no real file in shared/real_traces covers: a PyTorch 2.4+-style Chrome
trace (fractional `ts`, `baseTimeNanoseconds`, Addr + totals, an `[OutOfMemory]` event, a
HIP device, host memory, ProfilerStep/Optimizer/backward windows), the `[times, sizes]`
timeline form (plain and gzip), and a JSON rendition of a real snapshot.

Usage: make_json_fixtures.py [--out tests/fixtures/json] [--real ../shared/real_traces]
"""
import argparse
import gzip
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import snapshot_summary  # noqa: E402  (restricted unpickler)


def chrome_2x():
    base_ns = 1714000000000000000  # > 2^53
    events = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}}]
    t = 10.125
    total = {1: 2 << 30, 6: 0, 0: 0}  # CUDA device 0 starts with 2 GiB alive before the window
    reserved = {1: 4 << 30, 6: 1 << 30, 0: 0}
    addr = 0x7f0000000000
    live = []
    events.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
                   "ts": 10.0, "dur": 900.5})
    events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 11.0, "dur": 3.0})
    events.append({"ph": "X", "cat": "user_annotation", "name": "forward", "pid": 1, "tid": 1, "ts": 12.0, "dur": 300})
    events.append({"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: MmBackward0",
                   "pid": 1, "tid": 2, "ts": 400.0, "dur": 100.25})
    events.append({"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#AdamW.step", "pid": 1, "tid": 1,
                   "ts": 600.0, "dur": 200.0})
    for i in range(40):
        dtype, did = [(1, 0), (6, 1), (0, -1)][i % 3]
        if live and i % 4 == 3:
            a, b, dt, di = live.pop(0)
            if (dt, di) != (dtype, did):
                live.insert(0, (a, b, dt, di))
                continue
            total[dtype] -= b
            args = {"Device Type": dtype, "Device Id": did, "Addr": a, "Bytes": -b,
                    "Total Allocated": total[dtype], "Total Reserved": reserved[dtype]}
        else:
            b = (i + 1) * (1 << 20) * (3 if dtype == 1 else 1)
            if total[dtype] + b > reserved[dtype] and dtype != 0:
                reserved[dtype] += 1 << 30
            addr += 1 << 24
            live.append((addr, b, dtype, did))
            total[dtype] += b
            args = {"Device Type": dtype, "Device Id": did, "Addr": addr, "Bytes": b,
                    "Total Allocated": total[dtype], "Total Reserved": reserved[dtype] if dtype else 0}
        args["Ev Idx"] = 1000 + i
        events.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1,
                       "ts": round(t, 3), "args": args})
        t += 7.375
    events.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[OutOfMemory]", "pid": 1, "tid": 1,
                   "ts": round(t, 3), "args": {"Device Type": 1, "Device Id": 0, "Bytes": 80 << 30,
                                               "Total Allocated": total[1], "Total Reserved": reserved[1]}})
    events.reverse()  # Chrome traces need not be sorted
    return {"schemaVersion": 1, "deviceProperties": [], "distributedInfo": {"backend": "nccl", "rank": 3,
                                                                            "world_size": 4},
            "profile_memory": 1, "baseTimeNanoseconds": base_ns, "displayTimeUnit": "ms",
            "traceEvents": events, "traceName": "synthetic"}


def times_sizes():
    times, sizes = [], []
    cats = [0] * 8
    for i in range(30):
        times.append(1700000000000000 + i * 125)
        c = i % 8
        cats[c] = max(0, cats[c] + ((i * 7919) % 13 - 5) * (1 << 20))
        if i % 9 == 0:
            cats[0] = (i + 1) * (1 << 22)  # parameters
        sizes.append([0] + list(cats))
    return [times, sizes]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "..", "fixtures", "json"))
    ap.add_argument("--real", default=os.path.join(HERE, "..", "..", "..", "shared", "real_traces"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)

    def write(name, obj, gz=False):
        data = json.dumps(obj, separators=(",", ":")).encode()
        path = os.path.join(a.out, name)
        if gz:
            data = gzip.compress(data, mtime=0)
        with open(path, "wb") as f:
            f.write(data)

    write("chrome_2x_oom.pt.trace.json", chrome_2x())
    write("timeline_times_sizes.json", times_sizes())
    write("timeline_times_sizes.json.gz", times_sizes(), gz=True)
    snap = snapshot_summary.load_file(os.path.join(a.real, "pt27_silmont_mem_snapshot.pickle"))
    write("silmont_snapshot.json.gz", snap, gz=True)
    write("legacy_list_snapshot.json",
          snapshot_summary.load_file(os.path.join(HERE, "..", "fixtures", "legacy_list.pickle")))


if __name__ == "__main__":
    main()
