#!/usr/bin/env python3
"""The what-if against real GPU runs kept outside the repository.

Projects each calibration file of ../shared/real_traces/gpu_series (the niu 4-layer LM:
d 512, 16 heads, batch 10, eager attention, AdamW, three iterations each) to the other
runs of the series and prints a markdown row per pair: the measured peak allocated
(`headroom-cli summary --json`), the projection (`whatif --json`'s
`peak_allocated_bytes`), the error and whether the band holds the measurement. These files
carry no configuration, so the measured values are stated.

    tools/gpu_series_accuracy.py --cli build/release/app/headroom-cli [--dir ../shared/real_traces/gpu_series]
"""
import argparse
import json
import os
import subprocess
import sys

STATED = ["--measured-micro-batch", "10", "--measured-precision", "fp32", "--measured-devices", "1"]
# (calibrated on, its sequence, projected to, the levers that move, label)
PAIRS = [
    ("niu_fwdbwd_ctx100.pickle", 100, "niu_fwdbwd_ctx150.pickle", ["--seq", "150"], "ctx100 fp32 -> ctx150 fp32 (`--seq 150`)"),
    ("niu_fwdbwd_ctx100.pickle", 100, "niu_fwdbwd_ctx200.pickle", ["--seq", "200"], "ctx100 fp32 -> ctx200 fp32 (`--seq 200`)"),
    ("niu_fwdbwd_ctx150.pickle", 150, "niu_fwdbwd_ctx200.pickle", ["--seq", "200"], "ctx150 fp32 -> ctx200 fp32 (`--seq 200`)"),
    ("niu_fwdbwd_ctx200.pickle", 200, "niu_fwdbwd_ctx100.pickle", ["--seq", "100"], "ctx200 fp32 -> ctx100 fp32 (`--seq 100`)"),
    ("niu_fwdbwd_ctx200.pickle", 200, "niu_fwdbwd_ctx200_mixed_precision.pickle", ["--precision", "amp-bf16"],
     "ctx200 fp32 -> ctx200 autocast (`--precision amp-bf16`)"),
    ("niu_fwdbwd_ctx100.pickle", 100, "niu_fwdbwd_ctx200_mixed_precision.pickle", ["--seq", "200", "--precision", "amp-bf16"],
     "ctx100 fp32 -> ctx200 autocast (both)"),
]


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--dir", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "real_traces", "gpu_series"))
    args = ap.parse_args()
    if not os.path.isdir(args.dir):
        print(f"gpu_series_accuracy: {args.dir} is not there (the series is kept outside the repository)", file=sys.stderr)
        return 77
    print("| calibrated on -> projected to | measured MiB | projected MiB | band MiB | error | band holds |")
    print("|---|---:|---:|---|---:|---|")
    for base, seq, target, levers, label in PAIRS:
        b, t = os.path.join(args.dir, base), os.path.join(args.dir, target)
        measured = max(d["peak_allocated_bytes"] for d in run_json([args.cli, "summary", "--json", t])["devices"])
        p = run_json([args.cli, "whatif", b, *STATED, "--measured-seq", str(seq), *levers, "--json"])
        proj, lo, hi = p["peak_allocated_bytes"], p["peak_allocated_low_bytes"], p["peak_allocated_high_bytes"]
        err = (proj - measured) / measured * 100
        holds = "yes" if lo <= measured <= hi else "no"
        print(f"| {label} | {measured / 2**20:.1f} | {proj / 2**20:.1f} | {lo / 2**20:.1f} .. {hi / 2**20:.1f} | "
              f"{err:+.1f}% | {holds} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
