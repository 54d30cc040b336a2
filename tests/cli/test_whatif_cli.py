#!/usr/bin/env python3
"""`headroom-cli whatif` and `ladder` as a new user meets them (issue 29): they pick the device
and the capacity the way the GUI does (the device with the OOM, the capacity of its record),
and a value the trace does not tell is written "unknown", never 0. Stdlib only.

    test_whatif_cli.py --cli BUILD/app/headroom-cli --source REPO
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
    # Three real decoder steps as devices 0..2; device 1 was cut by an OOM (tests/data/cpu/README.md).
    oom = os.path.join(args.source, "tests", "data", "cpu", "imbalanced_oom.pickle")
    sample = os.path.join(args.source, "sample_traces", "pt27_kk_memory_ctx128_fullstep.pickle.gz")
    problems = []

    def run(*argv):
        r = subprocess.run([args.cli] + list(argv), capture_output=True, text=True)
        print("%s -> %d" % (" ".join(os.path.basename(a) for a in argv), r.returncode))
        return r

    r = run("whatif", "--json", oom)
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    cap = j.get("measured", {}).get("capacity", {})
    if cap.get("detail") != "OOM record" or j.get("capacity_bytes", 0) <= 0:
        problems.append("whatif on a multi-device OOM must calibrate the OOM's device and read its capacity: %r" % cap)
    r = run("whatif", "--json", "--device-index", "0", oom)
    if r.returncode != 0 or json.loads(r.stdout).get("capacity_bytes") != 0:
        problems.append("--device-index 0 names the device without an OOM (capacity unknown)")

    r = run("ladder", oom)
    if r.returncode != 0 or "hygiene" not in r.stdout:
        problems.append("ladder on an OOM file needs no --capacity: %d %r" % (r.returncode, r.stderr))
    r = run("ladder", sample)
    if r.returncode != 2 or "--capacity" not in r.stderr:
        problems.append("ladder without any capacity must ask for --capacity: %d %r" % (r.returncode, r.stderr))

    r = run("whatif", sample)
    for bad in ("micro-batch 0 ", "seq 0,", " 0 tokens/s", "= ?"):
        if bad in r.stdout:
            problems.append("whatif text must say unknown, not %r: %r" % (bad, r.stdout[:400]))
    if "micro-batch unknown" not in r.stdout or "tokens/s needs the measured micro-batch" not in r.stdout:
        problems.append("whatif text must write unknown values as unknown: %r" % r.stdout[-600:])

    # The allocated peak fits (tight) but the projected run's requests do not: the verdict is the
    # simulation's, and one sentence says both, of the same run (issue 29 §3, issue 28).
    r = run("whatif", sample, "--measured-micro-batch", "1", "--measured-seq", "128", "--seq", "256",
            "--capacity", "54GiB")
    joined = " ".join(r.stdout.split())
    if "Does not fit by the caching allocator's simulation (tight by allocated memory and a fragmentation " \
            "ratio): the projected run's requests fail at event" not in joined or ": does not fit (margin" not in joined:
        problems.append("the verdict must be the simulated allocator's OOM, beside the fit: %r" % r.stdout[-900:])

    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        return 1
    print("whatif cli: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
