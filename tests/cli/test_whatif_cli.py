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
    if not cap.get("detail", "").startswith("OOM record") or j.get("capacity_bytes", 0) <= 0:
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
            "ratio): the projected run's requests fail at event" not in joined or ": does not fit (judged with a" not in joined:
        problems.append("the verdict must be the simulated allocator's OOM, beside the fit: %r" % r.stdout[-900:])

    # --device is the device ordinal in every subcommand; a speed preset there is --speeds's old spelling.
    by_ordinal = run("whatif", "--json", "--device", "1", oom)
    by_position = run("whatif", "--json", "--device-index", "1", oom)
    if by_ordinal.returncode != 0 or by_ordinal.stdout != by_position.stdout:
        problems.append("whatif --device 1 must be device ordinal 1: %r" % by_ordinal.stderr[:200])
    old = run("whatif", "--json", "--device", "24gib", oom)
    new = run("whatif", "--json", "--speeds", "24gib", oom)
    if old.stdout != new.stdout or "--speeds" not in old.stderr:
        problems.append("whatif --device 24gib must be --speeds 24gib with a note: %r" % old.stderr[:200])

    # A measured value list takes one argument: the FILE after it is the file, not a value.
    r = run("ladder", "--capacity", "1GiB", "--measured-micro-batch", "2", "--measured-seq", "128", sample)
    if r.returncode == 2 and ("not in range" in r.stderr or "expected a" in r.stderr):
        problems.append("--measured-seq must not take the FILE after it as a value: %r" % r.stderr[:200])

    # A bad value says what was expected and what was found (CLI11's own check printed the range
    # 0 to 1.8e308 in full, and "Could not convert" for 2.5).
    for value in ("x2", "0", "2.5", "-3"):
        r = run("whatif", sample, "--micro-batch", value)
        want = "--micro-batch: expected a whole number above 0, found '%s'" % value
        if r.returncode != 2 or want not in r.stderr or len(r.stderr) > 200:
            problems.append("--micro-batch %s must say %r: %d %r" % (value, want, r.returncode, r.stderr[:300]))
    r = run("whatif", "--params", "6.7e9x", "--layers", "2")
    if r.returncode != 2 or "--params: expected a number above 0, found '6.7e9x'" not in r.stderr:
        problems.append("--params 6.7e9x must say what was expected: %r" % r.stderr[:300])

    problems += one_answer(run, args.source, oom, sample)
    problems += recorded_mid_run(run, args.source)

    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        return 1
    print("whatif cli: all checks passed")
    return 0


def recorded_mid_run(run, source):
    """Recorded after AdamW's first step (tests/data/cpu/record_late.py): the moments from before
    the trace are optimizer state for every consumer, so 8-bit Adam saves what it saves on the
    same run recorded from the start (issue 46; before, they read as weights and it saved 0)."""
    problems = []
    late = os.path.join(source, "tests", "data", "cpu", "decoder_late_adamw_mid.pickle")
    r = run("analyze", "--json", late)
    dev = json.loads(r.stdout)["devices"][0] if r.returncode == 0 else {}
    br = dev.get("before_recording") or {}
    if br.get("copies") != 3 or not br.get("decided"):
        problems.append("analyze --json must read the moments from before the trace: %r" % br)
    runs = []
    for extra in ((), ("--optimizer", "adamw8bit")):
        r = run("whatif", "--json", late, *extra)
        runs.append(json.loads(r.stdout)["peak_allocated_bytes"] if r.returncode == 0 else 0)
    saved = runs[0] - runs[1]
    if not (br.get("optimizer_state_low_bytes", 0) * 0.5 < saved):
        problems.append("8-bit Adam must save on the state from before the trace: %r -> %r (state %r)"
                        % (runs[0], runs[1], br.get("optimizer_state_low_bytes")))
    return problems


def one_answer(run, source, oom, sample):
    """Issue 45: one question, one answer, whichever command asks it."""
    problems = []
    silmont = os.path.join(source, "sample_traces", "pt27_silmont_mem_snapshot.pickle")

    def js(*argv):
        r = run(*argv)
        return json.loads(r.stdout) if r.returncode == 0 else {}

    # The headline is the peak of the breakdown shown beside it.
    for argv in ((sample, "--measured-micro-batch", "4", "--measured-seq", "128", "--accum", "4"),
                 (silmont, "--measured-micro-batch", "4", "--measured-seq", "128", "--seq", "256")):
        j = js("whatif", "--json", *argv)
        parts = (j.get("at_peak") or {}).get("components", {})
        if not parts or abs(sum(parts.values()) - j.get("peak_bytes", -1)) > 8:
            problems.append("the headline %r must be the sum of its breakdown %r" % (j.get("peak_bytes"), parts))
    # No step time in the trace: no step time, tokens/s or ratio anywhere.
    j = js("whatif", "--json", silmont, "--measured-micro-batch", "4", "--measured-seq", "128", "--seq", "256")
    if any(j.get(k, 0) is not None for k in ("step_time_s", "tokens_per_s", "relative_step_time")):
        problems.append("an untimed trace must give null step times: %r" % {k: j.get(k) for k in ("step_time_s", "tokens_per_s")})
    r = run("whatif", silmont, "--measured-micro-batch", "4", "--measured-seq", "128", "--seq", "256")
    if "Step time unknown" not in r.stdout or "tokens/s" in r.stdout.replace("Step time unknown", ""):
        problems.append("an untimed trace's text must say the step time is unknown: %r" % r.stdout[-500:])
    # A capacity below the peak: every command says it does not fit.
    j = js("whatif", "--json", sample, "--capacity", "40GiB")
    lad = js("ladder", "--json", sample, "--capacity", "40GiB")
    chk = run("check", sample, "--fit", "40GiB")
    if j.get("verdict") != "does not fit" or lad.get("fits_as_is") or (lad.get("start") or {}).get("fits") \
            or chk.returncode != 1:
        problems.append("40 GiB under a 51 GiB peak: whatif %r, ladder fits_as_is %r, check rc %d"
                        % (j.get("verdict"), lad.get("fits_as_is"), chk.returncode))
    # The diagnosis's first move is the ladder's first fitting rung (or neither fits).
    for argv in ((sample, "--capacity", "48GiB"), (oom,), (os.path.join(source, "tests", "fixtures", "oom.pickle"),)):
        lad = js("ladder", "--json", *argv)
        report = js("analyze", "--json", *argv)
        primary = [d for d in report.get("devices", []) if d.get("failing_requests")] or report.get("devices", [])[:1]
        first = (primary[0].get("ladder_first_fit") or {}).get("title") if primary else "no device"
        fit = lad.get("first_fit", -1)
        want = lad["rungs"][fit]["title"] if lad and fit >= 0 else None
        if first != want:
            problems.append("%s: the diagnosis's first move %r, the ladder's first fit %r"
                            % (os.path.basename(argv[0]), first, want))
    return problems


if __name__ == "__main__":
    sys.exit(main())
