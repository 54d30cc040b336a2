#!/usr/bin/env python3
"""Bring a GPU truth run's output into the repository (run here, after the device run).

    python3 tools/gpu_truth/unpack.py FILES_AT_DIR tests/data/gpu [--limit-mb 25] [--apply-drops]

FILES_AT_DIR is the folder the device's files came back to (truth.json, run.log and
truth_partN.tar, found at any depth under it). The archives are extracted into DEST (member
names checked: relative, at most 2 folders down, letters, digits, '.', '_', '-'), truth.json
is copied beside them, every "file" and "cpu_file" it names is checked to exist (and to be
gzip), and the total size of what would go into the repository is printed.

Over --limit-mb (decimal MB): it lists what to drop, in pack.py's order (the CPU recordings of
the non-base points, then the lever points' snapshots, then the CPU recordings of the bases,
the rest last; the largest first within each), until the rest fits. --apply-drops deletes those
files and rewrites truth.json with them as dropped (the numbers stay).

Exit status: 0 when complete and under the limit, 1 when a named file is missing or bad, 2
when over the limit (and --apply-drops was not given).
"""

import argparse
import json
import os
import re
import shutil
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pack  # noqa: E402  (DROP_ORDER)

NAME = re.compile(r"^[A-Za-z0-9._-]+$")
PART = re.compile(r"^truth_part\d+\.tar$")


def find(src):
    """(truth.json path, archive paths) under src."""
    truths, parts = [], []
    for root, _dirs, names in os.walk(src):
        for n in names:
            if n == "truth.json":
                truths.append(os.path.join(root, n))
            elif PART.match(n):
                parts.append(os.path.join(root, n))
    if len(truths) != 1:
        raise SystemExit("expected one truth.json under %s, found %d" % (src, len(truths)))
    return truths[0], sorted(parts)


def safe_name(name):
    """A member name that stays inside DEST: relative, no '..', at most 2 folders down."""
    parts = name.split("/")
    return (not name.startswith("/") and len(parts) <= 3
            and all(p not in ("", ".", "..") and NAME.match(p) for p in parts))


def extract(part, dest):
    names = []
    with tarfile.open(part, "r:") as tf:
        for m in tf.getmembers():
            if m.isdir():
                continue
            if not m.isfile() or not safe_name(m.name):
                raise SystemExit("%s: refusing member %r" % (part, m.name))
            path = os.path.join(dest, *m.name.split("/"))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with tf.extractfile(m) as src, open(path, "wb") as dst:
                shutil.copyfileobj(src, dst)
            names.append(m.name)
    return names


def named_files(truth):
    """(point, key, name) for every snapshot truth.json names."""
    out = []
    for p in truth.get("points", []):
        for key in ("file", "cpu_file"):
            if p.get(key):
                out.append((p, key, p[key]))
    return out


def check(dest, truth):
    """Problems with the files truth.json names (missing, not gzip)."""
    problems = []
    for _p, _key, name in named_files(truth):
        path = os.path.join(dest, *name.split("/"))
        if not os.path.isfile(path):
            problems.append("missing: %s" % name)
            continue
        with open(path, "rb") as f:
            if f.read(2) != b"\x1f\x8b":
                problems.append("not gzip: %s" % name)
    return problems


def drop_class(point, key):
    base = point.get("tier") in ("base", "special")
    return ("cpu_" if key == "cpu_file" else "gpu_") + ("base" if base else "lever")


def plan_drops(dest, truth, limit, total):
    """What to drop, in pack.DROP_ORDER, largest first, until total <= limit."""
    rows = []
    for p, key, name in named_files(truth):
        path = os.path.join(dest, *name.split("/"))
        size = os.path.getsize(path) if os.path.isfile(path) else 0
        rows.append((pack.DROP_ORDER.index(drop_class(p, key)), -size, name, p, key, size))
    drops = []
    for row in sorted(rows, key=lambda r: r[:3]):
        if total <= limit:
            break
        drops.append(row)
        total -= row[5]
    return drops, total


def apply_drops(dest, truth, drops):
    for _o, _s, name, p, key, size in drops:
        os.unlink(os.path.join(dest, *name.split("/")))
        p[key] = None
        p["dropped_" + key] = name
        truth.setdefault("dropped", []).append(
            {"file": name, "point": p.get("name"), "class": drop_class(p, key),
             "gz_bytes": size, "reason": "over the repository's size limit (unpack.py)"})


def total_bytes(dest, truth):
    size = os.path.getsize(os.path.join(dest, "truth.json"))
    for _p, _k, name in named_files(truth):
        path = os.path.join(dest, *name.split("/"))
        size += os.path.getsize(path) if os.path.isfile(path) else 0
    return size


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src", help="the folder the device's files came back to")
    ap.add_argument("dest", help="where they go, e.g. tests/data/gpu")
    ap.add_argument("--limit-mb", type=float, default=25.0, help="decimal MB (10^6 bytes)")
    ap.add_argument("--apply-drops", action="store_true", help="delete what is over the limit")
    args = ap.parse_args(argv)
    truth_path, parts = find(args.src)
    os.makedirs(args.dest, exist_ok=True)
    members = []
    for part in parts:
        members += extract(part, args.dest)
    with open(truth_path) as f:
        truth = json.load(f)
    shutil.copyfile(truth_path, os.path.join(args.dest, "truth.json"))
    problems = check(args.dest, truth)
    extra = sorted(set(members) - {n for _p, _k, n in named_files(truth)})
    total = total_bytes(args.dest, truth)
    limit = int(args.limit_mb * 1e6)
    print("unpack: %d archives, %d files extracted, %d named in truth.json (%d points); "
          "total %d bytes (%.2f MB, limit %.0f MB)" % (
              len(parts), len(members), len(named_files(truth)), len(truth.get("points", [])),
              total, total / 1e6, args.limit_mb))
    for name in extra:
        print("  extracted but not named in truth.json: %s" % name)
    for p in problems:
        print("  " + p)
    status = 1 if problems else 0
    if total > limit:
        drops, left = plan_drops(args.dest, truth, limit, total)
        print("over the limit by %d bytes; drop, in this order:" % (total - limit))
        for _o, _s, name, p, key, size in drops:
            print("  %-60s %9d bytes  (%s)" % (name, size, drop_class(p, key)))
        if args.apply_drops:
            apply_drops(args.dest, truth, drops)
            with open(os.path.join(args.dest, "truth.json"), "w") as f:
                json.dump(truth, f, indent=1)
            print("dropped %d files; total now %d bytes" % (len(drops),
                                                            total_bytes(args.dest, truth)))
        else:
            status = status or 2
    return status


if __name__ == "__main__":
    sys.exit(main())
