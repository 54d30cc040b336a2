#!/usr/bin/env python3
"""The what-if against real GPU runs kept outside the repository.

Projects each calibration file of ../shared/real_traces/gpu_series (the niu 4-layer LM, the
CS336 small model forward and inference series) to the other runs of its series and prints
a markdown row per pair, then the median and worst error and how often the band held: the
measured peak allocated
(`headroom-cli summary --json`), the projection (`whatif --json`'s
`peak_allocated_bytes`), the error and whether the band holds the measurement. These files
carry no configuration, so the measured values are stated.

    tools/gpu_series_accuracy.py --cli build/release/app/headroom-cli [--dir ../shared/real_traces/gpu_series]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

# Each series as its repository's scripts run it (../shared/real_traces/MANIFEST.md): the
# stated micro-batch and precision, and the pairs (calibrated on, its sequence, projected to,
# the levers that move, label).
SERIES = [
    ("niu 4-layer LM, forward + backward + AdamW, batch 10", ["--measured-micro-batch", "10", "--measured-precision", "fp32"], [
        ("niu_fwdbwd_ctx100.pickle", 100, "niu_fwdbwd_ctx150.pickle", ["--seq", "150"], "ctx100 -> ctx150"),
        ("niu_fwdbwd_ctx100.pickle", 100, "niu_fwdbwd_ctx200.pickle", ["--seq", "200"], "ctx100 -> ctx200"),
        ("niu_fwdbwd_ctx150.pickle", 150, "niu_fwdbwd_ctx200.pickle", ["--seq", "200"], "ctx150 -> ctx200"),
        ("niu_fwdbwd_ctx200.pickle", 200, "niu_fwdbwd_ctx100.pickle", ["--seq", "100"], "ctx200 -> ctx100"),
        ("niu_fwdbwd_ctx200.pickle", 200, "niu_fwdbwd_ctx200_mixed_precision.pickle", ["--precision", "amp-bf16"],
         "ctx200 fp32 -> ctx200 autocast"),
        ("niu_fwdbwd_ctx100.pickle", 100, "niu_fwdbwd_ctx200_mixed_precision.pickle", ["--seq", "200", "--precision", "amp-bf16"],
         "ctx100 fp32 -> ctx200 autocast"),
    ]),
    ("niu 4-layer LM, forward only, batch 10", ["--measured-micro-batch", "10", "--measured-precision", "fp32"], [
        ("niu_fwd_ctx100.pickle", 100, "niu_fwd_ctx150.pickle", ["--seq", "150"], "ctx100 -> ctx150"),
        ("niu_fwd_ctx100.pickle", 100, "niu_fwd_ctx200.pickle", ["--seq", "200"], "ctx100 -> ctx200"),
        ("niu_fwd_ctx200.pickle", 200, "niu_fwd_ctx100.pickle", ["--seq", "100"], "ctx200 -> ctx100"),
    ]),
    ("CS336 small, forward, batch 8 (histories cut at 10,000 entries)", ["--measured-micro-batch", "8", "--measured-precision", "fp32"], [
        ("cn_memory_nvtx_small_128_forward.pickle", 128, "cn_memory_nvtx_small_256_forward.pickle", ["--seq", "256"], "seq 128 -> 256"),
        ("cn_memory_nvtx_small_128_forward.pickle", 128, "cn_memory_nvtx_small_512_forward.pickle", ["--seq", "512"], "seq 128 -> 512"),
        ("cn_memory_nvtx_small_128_forward.pickle", 128, "cn_memory_nvtx_small_1024_forward.pickle", ["--seq", "1024"], "seq 128 -> 1024"),
        ("cn_memory_nvtx_small_512_forward.pickle", 512, "cn_memory_nvtx_small_1024_forward.pickle", ["--seq", "1024"], "seq 512 -> 1024"),
        ("cn_memory_nvtx_small_1024_forward.pickle", 1024, "cn_memory_nvtx_small_256_forward.pickle", ["--seq", "256"], "seq 1024 -> 256"),
    ]),
    ("CS336 small, inference, batch 32", ["--measured-micro-batch", "32", "--measured-precision", "fp32"], [
        ("hf_small_fp32_seq128_inference.pickle", 128, "hf_small_fp32_seq512_inference.pickle", ["--seq", "512"], "seq 128 -> 512"),
        ("hf_small_fp32_seq512_inference.pickle", 512, "hf_small_fp32_seq128_inference.pickle", ["--seq", "128"], "seq 512 -> 128"),
    ]),
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
    errors, held = [], 0
    print("| series | calibrated on -> projected to | measured MiB | projected MiB | band MiB | error | band holds |")
    print("|---|---|---:|---:|---|---:|---|")
    for title, stated, pairs in SERIES:
        for base, seq, target, levers, label in pairs:
            b, t = os.path.join(args.dir, base), os.path.join(args.dir, target)
            measured = max(d["peak_allocated_bytes"] for d in run_json([args.cli, "summary", "--json", t])["devices"])
            p = run_json([args.cli, "whatif", b, *stated, "--measured-devices", "1", "--measured-seq", str(seq), *levers, "--json"])
            proj, lo, hi = p["peak_allocated_bytes"], p["peak_allocated_low_bytes"], p["peak_allocated_high_bytes"]
            err = (proj - measured) / measured * 100
            holds = lo <= measured <= hi
            errors.append(abs(err))
            held += holds
            print(f"| {title} | {label} | {measured / 2**20:.1f} | {proj / 2**20:.1f} | {lo / 2**20:.1f} .. {hi / 2**20:.1f} | "
                  f"{err:+.1f}% | {'yes' if holds else 'no'} |")
    print(f"\n{len(errors)} pairs: median |error| {statistics.median(errors):.1f}%, worst {max(errors):.1f}%, "
          f"band holds {held} of {len(errors)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
