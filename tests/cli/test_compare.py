#!/usr/bin/env python3
"""`headroom-cli compare` on two real runs of the same job (the 4-layer LM's forward at
sequence 100 and 200, tests/data/real/gpu_series): it must name the category and the phase
that grew, give check's exit codes, and keep its text within 100 columns. Stdlib only.

    test_compare.py --cli BUILD/app/headroom-cli --source REPO
"""
import argparse
import json
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--source", required=True)
    args = ap.parse_args()
    series = os.path.join(args.source, "tests", "data", "real", "gpu_series")
    a = os.path.join(series, "niu_fwd_ctx100.pickle.gz")
    b = os.path.join(series, "niu_fwd_ctx200.pickle.gz")
    problems = []

    def run(*argv):
        r = subprocess.run([args.cli, "compare"] + list(argv), capture_output=True, text=True)
        print("compare %s -> %d" % (" ".join(os.path.basename(x) for x in argv), r.returncode))
        return r

    r = run(a, b, "--json")
    if r.returncode != 0:
        problems.append("compare --json exited %d: %s" % (r.returncode, r.stderr))
    else:
        j = json.loads(r.stdout)
        grew = j["grew"]
        print("  grew: %s" % ", ".join("%s %s %+d" % (g["kind"], g["name"], g["delta_bytes"]) for g in grew[:4]))
        # The sequence doubled in a forward: the activations born in the forward grew.
        if not grew or (grew[0]["kind"], grew[0]["name"]) != ("category", "activation"):
            problems.append("the largest growth must be category activation: %r" % grew[:3])
        if not any(g["kind"] == "phase" and g["name"] == "forward" for g in grew):
            problems.append("phase forward must be among what grew: %r" % grew)
        if j["peak_delta_bytes"] != j["peak_b_bytes"] - j["peak_a_bytes"] or j["peak_delta_bytes"] <= 0:
            problems.append("peak_delta_bytes: %r" % j["peak_delta_bytes"])
        cats = j["by_category"]
        if sum(v["delta_bytes"] for v in cats.values()) != j["peak_delta_bytes"]:
            problems.append("the category deltas must add up to the peak's")
        if j["shrank"]:
            problems.append("nothing shrinks when only the sequence grows: %r" % j["shrank"][:3])
        if len(j["iterations"]) != 3 or any(it["b_peak_bytes"] <= it["a_peak_bytes"] for it in j["iterations"]):
            problems.append("three iterations, each larger in B: %r" % j["iterations"])
        if j["passed"] is not None:
            problems.append("passed must be null without --max-growth")

    r = run(a, b)
    if "category activation" not in r.stdout or "phase forward" not in r.stdout:
        problems.append("the text must name the category and phase that grew: %r" % r.stdout)
    wide = [l for l in r.stdout.splitlines() if len(l) > 100]
    if wide:
        problems.append("text lines wider than 100 columns: %r" % wide)

    r = run(a, b, "--max-growth", "5%")
    if r.returncode != 1 or "FAIL growth" not in r.stdout:
        problems.append("--max-growth 5%% on a +113%% peak must exit 1 with FAIL: %d %r" % (r.returncode, r.stdout[-200:]))
    r = run(a, b, "--max-growth", "200%")
    if r.returncode != 0 or "PASS growth" not in r.stdout:
        problems.append("--max-growth 200%% must pass: %d" % r.returncode)
    r = run(b, a, "--json")
    if r.returncode == 0 and json.loads(r.stdout)["grew"]:
        problems.append("B -> A: nothing grows")

    for bad, why in [([a, "/nonexistent.pickle"], "/nonexistent.pickle"),
                     ([a, b, "--max-growth", "lots"], "--max-growth")]:
        r = run(*bad)
        lines = r.stderr.strip().splitlines()
        if r.returncode != 2 or r.stdout or len(lines) != 1 or why not in lines[0]:
            problems.append("%r: expected exit 2 and one line naming %r, got %d %r" % (bad, why, r.returncode, r.stderr))

    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        return 1
    print("compare: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
