#!/usr/bin/env python3
"""Kill the .hrt writer at random points; the target must stay old-or-new, never a mix.

Usage: kill_save_test.py CLI SMALL_INPUT [--big BIG_INPUT] [--kills N] [--seed S]
                         [--workdir DIR] [--json RESULTS]

Issue 7 part 5 ("data safety"). `headroom-cli convert IN OUT.hrt` writes through
core/util/atomicfile.cpp (temporary file in OUT's directory, fsync, rename over OUT, fsync the
directory). This test:

1. converts SMALL_INPUT into OLD.hrt and keeps its bytes; converts BIG_INPUT (generated
   with tools/gen_snapshot.py when not given) uninterrupted into a reference NEW.hrt, twice,
   to learn whether the writer is deterministic;
2. calibrates: runs three uninterrupted `convert BIG OLD.hrt` while watching
   /proc/PID/fd, and records when the writer opens its output file, when the target's
   inode changes (the rename) and when the process exits (the run with the median
   open..rename window is used);
3. N times, starts `convert BIG TARGET` and sends SIGKILL after a random delay: a quarter
   spread over the whole lifetime (timed from the start), the rest aimed at the write: the
   test waits until the process has its output file open, then kills it within the
   calibrated open..rename window, so kills land in the write, the fsync and around
   the rename. One kill in four runs
   with no target beforehand (the "new file" case);
4. after each kill, TARGET must be exactly the old bytes, or absent when there was none,
   or a complete new file: `summary --json TARGET` exits 0 and equals the summary of the
   reference (ignoring the file name and format), and the bytes equal the reference when
   the writer is deterministic. Anything else fails the test.
5. Leftovers: every other file in the target's directory is a leftover temporary. They are
   counted, must never have the target's name, and the per-rank directory summary
   (`summary --json DIR`, which reads every regular file not starting with '.') must
   still see exactly the targets, i.e. no leftover is ever picked up as a trace.

Prints how many kills landed before the rename (target old/absent), during the open
output file, after the rename (target new, process killed) and after the process had
already exited. Stdlib only.
"""
import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

IGNORED_KEYS = {"file", "path", "format", "source", "file_size", "file_bytes", "bytes_on_disk"}


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def normalise(obj):
    if isinstance(obj, dict):
        return {k: normalise(v) for k, v in obj.items() if k not in IGNORED_KEYS}
    if isinstance(obj, list):
        return [normalise(v) for v in obj]
    return obj


def summary(cli, path):
    r = run([cli, "summary", "--json", path])
    if r.returncode != 0:
        return None, f"summary exit {r.returncode}: {r.stderr.strip()[:300]}"
    try:
        return json.loads(r.stdout), None
    except ValueError as e:
        return None, f"summary output is not JSON: {e}"


def convert(cli, src, dst):
    r = run([cli, "convert", src, dst])
    if r.returncode != 0:
        sys.exit(f"FAIL: convert {src} {dst} exited {r.returncode}: {r.stderr.strip()}")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def sha(data):
    return hashlib.sha256(data).hexdigest()[:16]


def open_outputs(pid, outdir):
    """Files under outdir the process has open (an O_TMPFILE shows as 'DIR/#ino (deleted)')."""
    found = []
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return found
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(outdir + "/"):
            found.append(target)
    return found


def inode(path):
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return None


def calibrate(cli, big, outdir, target, old_bytes):
    """One uninterrupted run, polled: (t_open, t_rename, t_exit) in seconds from start."""
    with open(target, "wb") as f:
        f.write(old_bytes)
    ino0 = inode(target)
    t0 = time.monotonic()
    p = subprocess.Popen([cli, "convert", big, target], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    t_open = t_rename = None
    while p.poll() is None:
        now = time.monotonic() - t0
        if t_open is None and open_outputs(p.pid, outdir):
            t_open = now
        if t_rename is None and inode(target) != ino0:
            t_rename = now
        time.sleep(0.0003)
    t_exit = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"FAIL: calibration convert exited {p.returncode}: {p.stderr.read().decode()}")
    if t_rename is None:
        t_rename = t_exit
    return t_open, t_rename, t_exit


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cli")
    ap.add_argument("small")
    ap.add_argument("--big", help="input whose conversion gets killed (generated when absent)")
    ap.add_argument("--kills", type=int, default=40)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--workdir", help="scratch directory (a fresh temporary one by default)")
    ap.add_argument("--json", help="write the counts here")
    ap.add_argument("--keep", action="store_true",
                    help="keep the scratch directory after a pass (it is always kept on failure)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    cli = os.path.abspath(args.cli)

    if args.workdir:
        shutil.rmtree(args.workdir, ignore_errors=True)
        os.makedirs(args.workdir)
        work = os.path.abspath(args.workdir)
    else:
        work = tempfile.mkdtemp(prefix="kill_save_")
    outdir = os.path.join(work, "out")   # holds only targets and whatever the writer leaves
    os.makedirs(outdir)
    started = time.monotonic()

    big = args.big
    if not big or not os.path.isfile(big):
        gen = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                           "gen_snapshot.py")
        big = os.path.join(work, "big.pickle")
        r = run([sys.executable, gen, "--events", "200000", "--seed", "2", "--out", big])
        if r.returncode != 0:
            sys.exit(f"FAIL: gen_snapshot: {r.stderr}")

    old_hrt = os.path.join(work, "old.hrt")
    convert(cli, args.small, old_hrt)
    old_bytes = read(old_hrt)
    ref1, ref2 = os.path.join(work, "new1.hrt"), os.path.join(work, "new2.hrt")
    convert(cli, big, ref1)
    convert(cli, big, ref2)
    new_bytes = read(ref1)
    deterministic = new_bytes == read(ref2)
    new_summary, err = summary(cli, ref1)
    if err:
        sys.exit(f"FAIL: reference: {err}")
    new_summary = normalise(new_summary)
    if old_bytes == new_bytes:
        sys.exit("FAIL: old and new inputs convert to the same bytes; the test would see nothing")

    target = os.path.join(outdir, "rank0.hrt")
    # fsync time varies a lot from run to run (2 ms to 40 ms here), so take medians.
    cals = sorted((calibrate(cli, big, outdir, target, old_bytes) for _ in range(3)),
                  key=lambda c: c[1] - (c[0] if c[0] is not None else c[1]))
    t_open, t_rename, t_exit = cals[1]
    if t_open is None:
        t_open = 0.9 * t_rename
    window = max(t_rename - t_open, 0.001)
    print(f"old.hrt {len(old_bytes)} bytes ({sha(old_bytes)}), new {len(new_bytes)} bytes "
          f"({sha(new_bytes)}), writer deterministic: {deterministic}")
    print(f"calibration: output opened at {t_open * 1000:.1f} ms, renamed by "
          f"{t_rename * 1000:.1f} ms, exit at {t_exit * 1000:.1f} ms")
    os.unlink(target)

    failures = []
    counts = {"kills": 0, "before_open": 0, "while_open": 0, "before_rename": 0,
              "after_rename": 0, "exited_first": 0, "target_old": 0, "target_absent": 0,
              "target_new": 0, "fresh_target_runs": 0, "leftovers_created": 0}
    leftover_names = []
    seen = set()
    for i in range(args.kills):
        fresh = i % 4 == 3                      # the target did not exist before
        if fresh:
            counts["fresh_target_runs"] += 1
            if os.path.exists(target):
                os.unlink(target)
        else:
            with open(target + ".reset", "wb") as f:
                f.write(old_bytes)
            os.replace(target + ".reset", target)
        # A quarter of the kills fall anywhere in the run (timed from the start); the rest
        # are aimed at the write: wait until the process has its output open, then kill
        # within the calibrated open..rename window (plus a margin past the rename).
        aimed = rng.random() >= 0.25
        delay = rng.uniform(0, t_exit) if not aimed else rng.uniform(0, window)
        p = subprocess.Popen([cli, "convert", big, target], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        t0 = time.monotonic()
        if aimed:
            while p.poll() is None and not open_outputs(p.pid, outdir):
                time.sleep(0.0002)
            t0 = time.monotonic()
        while True:
            left = delay - (time.monotonic() - t0)
            if left <= 0:
                break
            time.sleep(min(left, 0.002) if left < 0.01 else left - 0.008)
        was_open = bool(open_outputs(p.pid, outdir))
        try:
            os.kill(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
        killed = p.returncode == -signal.SIGKILL
        counts["kills"] += killed
        if not killed:
            counts["exited_first"] += 1
            if p.returncode != 0:
                failures.append(f"run {i}: convert exited {p.returncode} without being killed")

        # The target: old bytes, absent (only when there was none), or complete new.
        where = (f"run {i} ({'aimed, ' if aimed else ''}delay {delay * 1000:.1f} ms, "
                 f"{'no target before' if fresh else 'old target'})")
        if not os.path.exists(target):
            state = "absent"
            if not fresh:
                failures.append(f"{where}: the old target vanished")
        else:
            data = read(target)
            if data == old_bytes and not fresh:
                state = "old"
            else:
                state = "new"
                s, err = summary(cli, target)
                if err:
                    failures.append(f"{where}: target is neither old nor a valid file "
                                    f"({len(data)} bytes, {sha(data)}): {err}")
                elif normalise(s) != new_summary:
                    failures.append(f"{where}: target loads but its summary differs from the new input's")
                elif deterministic and data != new_bytes:
                    failures.append(f"{where}: target loads but differs from the reference bytes")
        counts["target_" + state] += 1
        if killed:
            if state == "new":
                counts["after_rename"] += 1
            else:
                counts["before_rename"] += 1
                counts["while_open" if was_open else "before_open"] += 1

        # Leftovers: anything else in outdir.
        for name in sorted(os.listdir(outdir)):
            if name == os.path.basename(target) or name in seen:
                continue
            seen.add(name)
            counts["leftovers_created"] += 1
            data = read(os.path.join(outdir, name))
            complete = "complete" if data == new_bytes else "partial"
            counts["leftovers_" + complete] = counts.get("leftovers_" + complete, 0) + 1
            leftover_names.append(f"{name} ({len(data)} bytes, {complete}, after {where})")

    # A leftover must never pass for a trace: the per-rank directory summary reads every
    # regular file whose name does not start with '.'.
    present = 1 if os.path.exists(target) else 0
    if os.listdir(outdir):
        r = run([cli, "summary", "--json", outdir])
        files = json.loads(r.stdout).get("files", []) if r.returncode == 0 else None
        if files is None and present:
            failures.append(f"`summary --json {outdir}` fails with the leftovers present: "
                            f"{r.stderr.strip()[:300]}")
        elif files is not None and len(files) != present:
            failures.append(f"`summary --json {outdir}` read {len(files)} files, "
                            f"expected {present}: a leftover passed for a trace")
    visible = [n for n in os.listdir(outdir) if n != "rank0.hrt" and not n.startswith(".")]
    counts["leftovers_visible"] = len(visible)
    counts["leftovers_total"] = len(seen)

    print(f"{counts['kills']} kills + {counts['exited_first']} runs that finished first: "
          f"{counts['before_rename']} before the rename ({counts['before_open']} before the output "
          f"was opened, {counts['while_open']} while it was open), {counts['after_rename']} after "
          f"the rename")
    print(f"target afterwards: old {counts['target_old']}, absent {counts['target_absent']} "
          f"(of {counts['fresh_target_runs']} runs without a target), new {counts['target_new']}")
    print(f"leftover temporaries: {len(seen)} ({len(visible)} without a leading dot)")
    for line in leftover_names[:10]:
        print("  " + line)
    if len(leftover_names) > 10:
        print(f"  ... and {len(leftover_names) - 10} more")
    print(f"{time.monotonic() - started:.1f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**counts, "failures": failures, "leftovers": leftover_names,
                       "calibration_ms": [t_open * 1000, t_rename * 1000, t_exit * 1000]}, f, indent=1)
    if failures:
        for f in failures:
            print("FAIL: " + f)
        return 1
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
