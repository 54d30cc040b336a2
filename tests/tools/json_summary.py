#!/usr/bin/env python3
"""Independent, stdlib-only reference summary of the JSON inputs Headroom reads.

Usage: json_summary.py FILE... [--out-dir DIR] | --check --golden-dir DIR FILE_OR_DIR...

Covers Chrome/Kineto traces with [memory]/[OutOfMemory] events, export_memory_timeline raw
rows and [times, sizes], and JSON renditions of snapshots (delegated to snapshot_summary.py,
so a JSON snapshot must summarise exactly like its pickle). Keys per device: device,
device_type, trace_entries, actions, peak_allocated_bytes, reserved_peak_bytes, oom (count).

Semantics (docs/formats.md, "Profiler memory timelines", "Chrome traces", and core/io/chrometraceimporter.h, core/io/profiletimelineimporter.h):
- Chrome: one device per (Device Type, Device Id); type 0 is device -1 "cpu", type 1 "cuda",
  type 6 "hip". With `Total Allocated` on every event the peak is the largest of those (and
  of the value before the first event); without, the running sum of Bytes in time order,
  raised by the smallest constant that keeps it >= 0. Reserved peak: max `Total Reserved`.
- Raw timeline rows: the running sum of numbytes in file order; peak >= 0.
- [times, sizes]: the largest row sum; one entry per category band change.
"""
import argparse
import gzip
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import snapshot_summary  # noqa: E402

DEVICE_TYPES = {0: "cpu", 1: "cuda", 6: "hip", 9: "xla", 12: "xpu", 13: "mps"}


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data)


def chrome(doc):
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    base = doc.get("baseTimeNanoseconds", 0) if isinstance(doc, dict) else 0
    groups = {}
    for order, e in enumerate(events):
        if not isinstance(e, dict) or e.get("name") not in ("[memory]", "[OutOfMemory]"):
            continue
        a = e["args"]
        key = (a.get("Device Type", 1), a.get("Device Id", -1 if a.get("Device Type", 1) == 0 else 0))
        ts_ns = base + round(e["ts"] * 1000)
        groups.setdefault(key, []).append((ts_ns, a.get("Ev Idx", -1), order, e["name"] == "[OutOfMemory]", a))
    out = []
    for (dtype, did), recs in groups.items():
        recs.sort(key=lambda r: (r[0], r[1], r[2]))
        mem = [r for r in recs if not r[3]]
        actions = {}
        for r in recs:
            k = "oom" if r[3] else ("alloc" if r[4]["Bytes"] >= 0 else "free")
            actions[k] = actions.get(k, 0) + 1
        with_totals = all("Total Allocated" in r[4] for r in mem)
        if with_totals:
            first = recs[0][4]
            before = first["Total Allocated"]
            if not recs[0][3]:
                before -= first["Bytes"]
            peak = max([max(0, before)] + [r[4]["Total Allocated"] for r in recs if "Total Allocated" in r[4]])
        else:
            run, lo, hi = 0, 0, 0
            for r in mem:
                run += r[4]["Bytes"]
                lo, hi = min(lo, run), max(hi, run)
            peak = hi - lo
        with_reserved = mem and all("Total Reserved" in r[4] for r in mem)
        reserved = max(r[4]["Total Reserved"] for r in recs if "Total Reserved" in r[4]) if with_reserved else 0
        out.append({"device": -1 if dtype == 0 else did,
                    "device_type": DEVICE_TYPES.get(dtype, "device type %d" % dtype),
                    "trace_entries": len(recs), "actions": actions, "peak_allocated_bytes": peak,
                    "reserved_peak_bytes": reserved, "oom": sum(1 for r in recs if r[3])})
    return sorted(out, key=lambda d: d["device"])


def raw_timeline(rows):
    names = {1: "preexisting", 2: "create", 3: "increment_version", 4: "destroy"}
    run = peak = 0
    actions = {}
    for t, action, nbytes, cat in rows:
        run += nbytes
        peak = max(peak, run)
        actions[names[action]] = actions.get(names[action], 0) + 1
    return [{"device": 0, "device_type": "cuda", "trace_entries": len(rows), "actions": actions,
             "peak_allocated_bytes": peak, "reserved_peak_bytes": 0, "oom": 0}]


def times_sizes(doc):
    times, sizes = doc
    prev = [0] * 8
    entries, actions = 0, {}
    for row in sizes:
        for c in range(8):
            if row[c + 1] != prev[c]:
                entries += 1
                k = "free" if row[c + 1] == 0 else "alloc"
                actions[k] = actions.get(k, 0) + 1
        prev = row[1:9]
    peak = max([0] + [sum(r[1:9]) for r in sizes])
    return [{"device": 0, "device_type": "cuda", "trace_entries": entries, "actions": actions,
             "peak_allocated_bytes": peak, "reserved_peak_bytes": 0, "oom": 0}]


def summarize(doc):
    if (isinstance(doc, dict) and "traceEvents" in doc) or (
            isinstance(doc, list) and doc and isinstance(doc[0], dict) and "ph" in doc[0]):
        return {"devices": chrome(doc)}
    if isinstance(doc, dict) or (isinstance(doc, list) and doc and isinstance(doc[0], dict)):
        s = snapshot_summary.summarize(doc)
        for d in s["devices"]:
            d["device_type"] = "cuda"
            d["oom"] = len(d["oom"])
        return s
    if isinstance(doc, list) and len(doc) == 2 and isinstance(doc[0], list) and (not doc[1] or isinstance(doc[1][0], list)):
        return {"devices": times_sizes(doc)}
    return {"devices": raw_timeline(doc)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--out-dir")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--golden-dir")
    args = ap.parse_args(argv)
    files = []
    for p in args.files:
        files += [os.path.join(p, n) for n in sorted(os.listdir(p))] if os.path.isdir(p) else [p]
    failed = compared = 0
    for path in files:
        golden = os.path.join(args.golden_dir or args.out_dir or ".", os.path.basename(path) + ".summary.json")
        if args.check:
            if not os.path.exists(golden):
                continue
            with open(golden) as f:
                expected = json.load(f)
            compared += 1
            if json.loads(json.dumps(summarize(load(path)))) != expected:
                failed += 1
                print("MISMATCH", path, file=sys.stderr)
            continue
        text = json.dumps(summarize(load(path)), indent=1, sort_keys=True) + "\n"
        if args.out_dir:
            os.makedirs(args.out_dir, exist_ok=True)
            with open(golden, "w") as f:
                f.write(text)
            print("wrote", golden)
        else:
            sys.stdout.write(text)
    if args.check:
        print("%d passed, %d failed" % (compared - failed, failed))
        return 1 if failed or compared == 0 else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
