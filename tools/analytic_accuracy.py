#!/usr/bin/env python3
"""The what-if's analytic mode (no file: dimensions only) against every full training step in
../shared/real_traces whose model dimensions are known (issue 50, item 4).

    tools/analytic_accuracy.py --cli build/release/app/headroom-cli [--dir ../shared/real_traces]

For each step: `headroom-cli whatif` with the model's dimensions and the run's settings (no
file), against the file's measured peak allocated (`summary --json`); prints a markdown row
each, and the median and worst error. Skips (exit 77) when the files are not beside the checkout.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

NIU = ["--layers", "4", "--hidden", "512", "--heads", "16", "--ffn", "1344", "--vocab", "10000",
       "--micro-batch", "10", "--optimizer", "adamw", "--flash-attn", "off"]
# Stanford CS336's LM at the sizes its repositories ran (../shared/real_traces/MANIFEST.md)
STEPS = [
    ("niu 4-layer LM, fp32, ctx 100", "gpu_series/niu_fwdbwd_ctx100.pickle", NIU + ["--seq", "100", "--precision", "fp32"]),
    ("niu 4-layer LM, fp32, ctx 150", "gpu_series/niu_fwdbwd_ctx150.pickle", NIU + ["--seq", "150", "--precision", "fp32"]),
    ("niu 4-layer LM, fp32, ctx 200", "gpu_series/niu_fwdbwd_ctx200.pickle", NIU + ["--seq", "200", "--precision", "fp32"]),
    ("niu 4-layer LM, bf16 autocast, ctx 200", "gpu_series/niu_fwdbwd_ctx200_mixed_precision.pickle",
     NIU + ["--seq", "200", "--precision", "amp-bf16"]),
    ("CS336 LM d 2560, 32 layers, fp32, micro-batch 4, seq 128 (the bundled sample)", "pt27_kk_memory_ctx128_fullstep.pickle",
     ["--layers", "32", "--hidden", "2560", "--heads", "32", "--ffn", "10240", "--vocab", "10000", "--micro-batch", "4",
      "--seq", "128", "--precision", "fp32", "--optimizer", "adamw", "--flash-attn", "off"]),
]


def run_json(cli, args):
    return json.loads(subprocess.run([cli] + args + ["--json"], capture_output=True, text=True, check=True).stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--dir", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "real_traces"))
    args = ap.parse_args()
    if not os.path.isdir(args.dir):
        print("SKIP: %s is not there" % args.dir)
        return 77
    print("| full step | measured MiB | analytic MiB | band MiB | error | band holds |")
    print("|---|---:|---:|---|---:|---|")
    errors = []
    for label, rel, levers in STEPS:
        measured = run_json(args.cli, ["summary", os.path.join(args.dir, rel)])["devices"][0]["peak_allocated_bytes"]
        p = run_json(args.cli, ["whatif"] + levers)
        c, lo, hi = p["peak_allocated_bytes"], p["peak_allocated_low_bytes"], p["peak_allocated_high_bytes"]
        err = (c - measured) / measured
        errors.append(abs(err))
        print("| %s | %.1f | %.1f | %.1f .. %.1f | %+.1f%% | %s |" % (label, measured / 2**20, c / 2**20, lo / 2**20,
              hi / 2**20, err * 100, "yes" if lo <= measured <= hi else "no"))
    print("\n%d full steps: median |error| %.1f%%, worst %.1f%%" % (len(errors), statistics.median(errors) * 100,
                                                                   max(errors) * 100))
    return 0


if __name__ == "__main__":
    sys.exit(main())
