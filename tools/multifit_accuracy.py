#!/usr/bin/env python3
"""Calibrating on two runs of one job against one (issue 17: several calibration runs).

For each family of the CPU matrix (tools/cpu_matrix.py), projects with `headroom-cli whatif`
from the base run alone and from the base run plus a second run at another micro-batch or
sequence, and compares both with the measured peak allocated of a third point. Prints a
markdown table.

    tools/multifit_accuracy.py --cli build/release/app/headroom-cli --matrix build/cpu-matrix/matrix.json
"""
import argparse
import json
import os
import subprocess
import sys

# (second run, target point, the lever, how far): the second run is on the same side of the
# base as the target for extrapolation, the other side for interpolation.
CASES = [("mb4", "mb8", "micro_batch"), ("mb4", "mb1", "micro_batch"), ("mb1", "mb8", "micro_batch"),
         ("seq2", "seq4", "seq"), ("seq4", "seq2", "seq")]
SPATIAL = {"convnet"}  # its "sequence" is the image side: the what-if would need side^2 positions


def run_json(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), p.returncode, p.stderr.strip()))
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--matrix", required=True)
    args = ap.parse_args()
    matrix = json.load(open(args.matrix))
    root = os.path.dirname(os.path.abspath(args.matrix))
    points = {(p["family"], p["name"]): p for p in matrix["points"]}
    print("| family | second run | target | measured MiB | one run | two runs | two-run band holds |")
    print("|---|---|---|---:|---:|---:|---|")
    for family in sorted({f for f, _ in points}):
        base = os.path.join(root, family, "base.pickle")
        for second, target, lever in CASES:
            if lever == "seq" and family in SPATIAL:
                continue
            if (family, second) not in points or (family, target) not in points:
                continue
            t = points[(family, target)]
            value = t["levers"][lever]
            flag = "--micro-batch" if lever == "micro_batch" else "--seq"
            measured = max(d["peak_allocated_bytes"]
                           for d in run_json([args.cli, "summary", "--json", os.path.join(root, family, target + ".pickle")])["devices"])
            one = run_json([args.cli, "whatif", base, flag, str(value), "--json"])
            two = run_json([args.cli, "whatif", base, os.path.join(root, family, second + ".pickle"), flag, str(value), "--json"])
            e1 = (one["peak_allocated_bytes"] - measured) / measured * 100
            e2 = (two["peak_allocated_bytes"] - measured) / measured * 100
            holds = two["peak_allocated_low_bytes"] <= measured <= two["peak_allocated_high_bytes"]
            print("| %s | %s | %s | %.2f | %+.1f%% | %+.1f%% | %s |" % (family, second, target, measured / 2**20, e1, e2,
                                                                  "yes" if holds else "**no**"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
