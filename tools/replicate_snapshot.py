#!/usr/bin/env python3
"""Makes a large benchmark snapshot out of a real one: the trace repeated N times.

tools/gen_snapshot.py writes what its author expected a snapshot to look like; a real file
has its own mix (C++ unwind frames, tracebacks shared between entries, compile_context on
every entry). This keeps all of that: each copy of the trace is made of new entry dicts,
with the tracebacks shared within a copy exactly as the original shares them (so Python's
pickler memoizes them as PyTorch's file does), time shifted past the previous copy. Segments,
allocator settings and annotations are kept as they are. Plain pickle, no torch needed.

    tools/replicate_snapshot.py ../shared/real_traces/gpu_series/cn_memory_nvtx_large_1024_forward.pickle \\
        --copies 100 --out /tmp/real_x100.pickle
    tools/bench.py --file /tmp/real_x100.pickle --scale-events 0
"""
import argparse
import pickle


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("snapshot")
    ap.add_argument("--copies", type=int, default=100)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    with open(args.snapshot, "rb") as f:
        snap = pickle.load(f)  # a file you chose to trust: this is Python's own unpickler
    traces = []
    for trace in snap["device_traces"]:
        times = [e["time_us"] for e in trace if "time_us" in e]
        span = (max(times) - min(times) + 1000) if times else 0
        out = []
        for k in range(args.copies):
            copies = {}  # id of an original traceback list -> its copy in this round
            for entry in trace:
                e = dict(entry)
                for key in ("frames", "cpp_frames"):
                    if key in entry:
                        if id(entry[key]) not in copies:
                            copies[id(entry[key])] = list(entry[key])
                        e[key] = copies[id(entry[key])]
                if "time_us" in e:
                    e["time_us"] = entry["time_us"] + k * span
                out.append(e)
        traces.append(out)
    snap["device_traces"] = traces
    with open(args.out, "wb") as f:
        pickle.dump(snap, f, protocol=4)
    print("%s: %d entries" % (args.out, sum(len(t) for t in traces)))


if __name__ == "__main__":
    main()
