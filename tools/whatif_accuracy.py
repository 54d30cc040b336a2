#!/usr/bin/env python3
"""The what-if's error table against real PyTorch: project every point of the CPU matrix
from one calibration point per family and compare with what that point measured.

Usage:
  whatif_accuracy.py --cli headroom-cli --matrix DIR/matrix.json
                     [--markdown FILE] [--json FILE] [--check LANDED.json] [--slack 0.005]

The matrix comes from tools/cpu_matrix.py (real training steps recorded on the CPU by
python/headroom_cpu.py). For each family the calibration point is the one named "base";
every other point moves one lever (micro-batch, accumulation, sequence, checkpointing,
precision, optimizer, iterations). For each, `headroom-cli whatif BASE --json` with that
lever moved gives the projected peak of allocated memory and its band; the measured peak is
`headroom-cli summary --json` of the point's own snapshot (both with the CUDA allocator's
512-byte rounding, so the comparison is like for like). The measured configuration is read
from the file (its headroom_config), never passed on the command line.

--without-shapes DIR first writes every point without what the recorder adds to an alloc entry
(its shapes and op graph), as a GPU snapshot of the same run would be, into DIR and evaluates
those: the what-if then reads sizes and stacks alone (docs/whatif-accuracy.md, "Without the
recorder's shapes").

Every recording's summary peak must equal the Python replay's (else exit 1 with the point).
--check fails (exit 1) when any point's |error| grew past the landed table's by more than
--slack (absolute, default 0.5 percentage points), or a point's band held the measurement
in the landed table and no longer does. Stdlib only.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

LEVER_FLAGS = {
    "micro_batch": "--micro-batch",
    "accum": "--accum",
    "seq": "--seq",
    "checkpoint": "--checkpoint",
    "precision": "--precision",
    "optimizer": "--optimizer",
}
# The targets: micro-batch and accumulation within 3% median and 5% worst; the other
# levers within 10% worst; the band holds the measurement in at least 90% of points.
TARGETS = {"micro_batch": (0.03, 0.05), "accum": (0.03, 0.05)}
DEFAULT_WORST = 0.10
# Levers that are not projections: a one-iteration run is the first step (no optimizer state in
# its forward), while the what-if projects the steady state; shown, not held to a target.
INFORMATIONAL = {"iterations"}
# Families whose "seq" is an image side: activations follow the positions, side^2, so the
# what-if is asked for seq x mult^2 (the configuration in the file gives the side).
SPATIAL = {"convnet"}
BAND_TARGET = 0.90


def run_json(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), p.returncode, p.stderr.strip()))
    return json.loads(p.stdout)


def measured_peak(cli, path):
    j = run_json([cli, "summary", "--json", path])
    return max(d["peak_allocated_bytes"] for d in j["devices"])


def moved_levers(base, point):
    out = []
    for k in ("micro_batch", "accum", "seq", "checkpoint", "precision", "optimizer", "iterations"):
        if str(point.get(k)) != str(base.get(k)):
            out.append(k)
    return out


def levers_of(entry):
    return entry.get("levers", entry)


def evaluate(cli, matrix_path):
    with open(matrix_path) as f:
        matrix = json.load(f)
    root = os.path.dirname(os.path.abspath(matrix_path))
    points = matrix["points"] if isinstance(matrix, dict) else matrix
    by_family = {}
    for p in points:
        by_family.setdefault(p["family"], []).append(p)
    rows = []
    # Every recording must import in Headroom with the peak the independent Python replay
    # (tests/tools/snapshot_summary.py, run by cpu_matrix.py) found.
    # The same summary is every point's measured peak below: read it once.
    peaks = {}
    for p in points:
        got = peaks[p["file"]] = measured_peak(cli, os.path.join(root, p["file"]))
        if p.get("replay_peak_bytes") is not None and got != p["replay_peak_bytes"]:
            raise RuntimeError("%s/%s: headroom-cli summary peaks at %d, the Python replay at %d"
                               % (p["family"], p["name"], got, p["replay_peak_bytes"]))
    for family in sorted(by_family):
        pts = by_family[family]
        base = next((p for p in pts if p["name"] == "base"), None)
        if base is None:
            raise RuntimeError("family %s has no point named 'base'" % family)
        base_file = os.path.join(root, base["file"])
        bl = levers_of(base)
        for p in pts:
            if p is base:
                continue
            pl = levers_of(p)
            moved = moved_levers(bl, pl)
            cmd = [cli, "whatif", base_file, "--json"]
            for k in moved:
                if k == "seq" and family in SPATIAL:
                    cmd += ["--seq", str(int(bl["seq"] * (pl["seq"] / bl["seq"]) ** 2))]
                elif k in LEVER_FLAGS:
                    cmd += [LEVER_FLAGS[k], str(pl[k])]
            proj = run_json(cmd)
            measured = peaks[p["file"]]
            projected = proj["peak_allocated_bytes"]
            low, high = proj["peak_allocated_low_bytes"], proj["peak_allocated_high_bytes"]
            rows.append({
                "family": family,
                "point": p["name"],
                "lever": "+".join(moved) if moved else "none",
                "measured_bytes": measured,
                "projected_bytes": projected,
                "low_bytes": low,
                "high_bytes": high,
                "error": projected / measured - 1.0,
                "band_holds": low <= measured <= high,
                "band_width": (high - low) / projected if projected > 0 else 0.0,
            })
    return rows


def summarize(rows):
    by_lever = {}
    for r in rows:
        by_lever.setdefault(r["lever"], []).append(r)
    out = []
    for lever in sorted(by_lever):
        errs = [abs(r["error"]) for r in by_lever[lever]]
        median, worst = statistics.median(errs), max(errs)
        tmed, tworst = TARGETS.get(lever, (None, DEFAULT_WORST))
        if lever in INFORMATIONAL or lever == "none":
            target, met = "none (not a projection)", None
        else:
            met = worst <= tworst and (tmed is None or median <= tmed)
            target = ("%g%% median, %g%% worst" % (tmed * 100, tworst * 100)) if tmed else "%g%% worst" % (tworst * 100)
        holds = sum(1 for r in by_lever[lever] if r["band_holds"])
        out.append({"lever": lever, "points": len(errs), "median_abs_error": median, "worst_abs_error": worst,
                    "target": target, "met": met, "band_holds": holds,
                    "band_median_width": statistics.median(r["band_width"] for r in by_lever[lever]),
                    "band_max_width": max(r["band_width"] for r in by_lever[lever]),
                    "band_scale_for_target": scale_for_target(by_lever[lever])})
    projected = [r for r in rows if r["lever"] not in INFORMATIONAL]
    holds = sum(1 for r in projected if r["band_holds"])
    widths = [r["band_width"] for r in projected]
    rows = projected
    return out, {"band_holds": holds, "points": len(rows),
                 "band_holds_share": holds / len(rows) if rows else 0.0,
                 "band_median_width": statistics.median(widths) if widths else 0.0}


def needed_scale(r):
    """How much of its band (each side scaled about the projection) the point needs to hold its
    measurement: 0 when exact, above 1 when the band misses."""
    p, m = r["projected_bytes"], r["measured_bytes"]
    side = (p - r["low_bytes"]) if m < p else (r["high_bytes"] - p)
    if m == p:
        return 0.0
    return abs(m - p) / side if side > 0 else float("inf")


def scale_for_target(rows):
    """The smallest share of every band of these points at which BAND_TARGET of them still hold:
    how much narrower the evidence would allow the bands to be, by lever (issue 50, item 3)."""
    need = sorted(needed_scale(r) for r in rows)
    if not need:
        return 0.0
    k = max(0, -(-int(BAND_TARGET * 100) * len(need) // 100) - 1)  # ceil(0.9 n) - 1
    return need[k]


def mib(b):
    return "%.2f" % (b / 2**20)


def markdown(rows, levers, band):
    lines = ["| family | point | lever | measured MiB | projected MiB | error | band MiB | holds |",
             "|---|---|---|---:|---:|---:|---|---|"]
    for r in rows:
        lines.append("| %s | %s | %s | %s | %s | %+.1f%% | %s-%s | %s |" % (
            r["family"], r["point"], r["lever"], mib(r["measured_bytes"]), mib(r["projected_bytes"]),
            r["error"] * 100, mib(r["low_bytes"]), mib(r["high_bytes"]), "yes" if r["band_holds"] else "**no**"))
    lines += ["", "| lever | points | median abs error | worst abs error | target | met | band holds | "
              "band width, median / widest | share of the band that still holds 90% |",
              "|---|---:|---:|---:|---|---|---:|---|---:|"]
    for s in levers:
        scale = s["band_scale_for_target"]
        lines.append("| %s | %d | %.1f%% | %.1f%% | %s | %s | %d of %d | %.1f%% / %.1f%% | %s |" % (
            s["lever"], s["points"], s["median_abs_error"] * 100, s["worst_abs_error"] * 100, s["target"],
            "-" if s["met"] is None else "yes" if s["met"] else "**no**", s["band_holds"], s["points"],
            s["band_median_width"] * 100, s["band_max_width"] * 100,
            "%.2f" % scale if scale <= 1 else "**%.2f**" % scale))
    lines += ["", "Band (projections only): holds the measurement in %d of %d points (%.0f%%; target >= %d%%), median width %.1f%% of "
              "the projection." % (band["band_holds"], band["points"], band["band_holds_share"] * 100,
                                   BAND_TARGET * 100, band["band_median_width"] * 100)]
    return "\n".join(lines) + "\n"


def without_shapes(matrix_path, out_dir):
    """The matrix's points without the recorder's keys, in out_dir; returns its matrix.json."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import verify_check  # beside this file
    with open(matrix_path) as f:
        matrix = json.load(f)
    root = os.path.dirname(os.path.abspath(matrix_path))
    for p in matrix["points"]:
        out = os.path.join(out_dir, p["file"])
        os.makedirs(os.path.dirname(out), exist_ok=True)
        verify_check.without_recorder_keys(os.path.join(root, p["file"]), out)
    path = os.path.join(out_dir, "matrix.json")
    with open(path, "w") as f:
        json.dump(matrix, f)
    return path


def check(rows, landed_path, slack):
    with open(landed_path) as f:
        landed = {(r["family"], r["point"]): r for r in json.load(f)["rows"]}
    failures = []
    for r in rows:
        old = landed.get((r["family"], r["point"]))
        if old is None:
            continue
        if abs(r["error"]) > abs(old["error"]) + slack:
            failures.append("%s/%s: error %+.2f%% grew past the landed %+.2f%%" % (
                r["family"], r["point"], r["error"] * 100, old["error"] * 100))
        if old["band_holds"] and not r["band_holds"]:
            failures.append("%s/%s: the band no longer holds the measurement" % (r["family"], r["point"]))
    missing = set(landed) - {(r["family"], r["point"]) for r in rows}
    for fam, pt in sorted(missing):
        failures.append("%s/%s: in the landed table but not measured" % (fam, pt))
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--matrix", required=True)
    ap.add_argument("--markdown")
    ap.add_argument("--json")
    ap.add_argument("--check")
    ap.add_argument("--slack", type=float, default=0.005)
    ap.add_argument("--without-shapes", metavar="DIR")
    a = ap.parse_args()
    matrix = without_shapes(a.matrix, a.without_shapes) if a.without_shapes else a.matrix
    rows = evaluate(a.cli, matrix)
    levers, band = summarize(rows)
    md = markdown(rows, levers, band)
    sys.stdout.write(md)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(md)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": rows, "levers": levers, "band": band}, f, indent=1, sort_keys=True)
            f.write("\n")
    if a.check:
        failures = check(rows, a.check, a.slack)
        for msg in failures:
            print("whatif_accuracy: " + msg, file=sys.stderr)
        if failures:
            return 1
        print("whatif_accuracy: no error grew past the landed table (%d points)" % len(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
