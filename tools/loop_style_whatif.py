#!/usr/bin/python3
"""The what-if's micro-batch projection on every training-loop style (issue 27 point 2).

Usage: /usr/bin/python3 tools/loop_style_whatif.py [--out DIR] [--cli PATH]
           [--families decoder,lstm] [--styles plain,closure] [--check PCT] [--json OUT]

Needs PyTorch (Debian 12: python3-torch 1.13.1, /usr/bin/python3); exit status 77 without it.
For every family of python/cpu_models.py and every style of python/loop_styles.py it records
the step at micro-batch 2 and 4 (the family's base sequence, fp32, AdamW, 2 iterations; the
recorder and the loop are those of tools/category_truth.py, one forked child per recording),
removes the phase markers (the what-if reads the stacks alone, as on a file nobody marked) and
runs `headroom-cli whatif MB2 --micro-batch 4 --verify MB4 --json`: the projected peak
allocated against the one measured at micro-batch 4, and whether the band holds it. Each point
runs twice: with the recorder's shapes, and with them removed as well (`headroom_tensor`), as a
GPU snapshot has none, so the laws read sizes and stacks alone.

--check PCT exits 1 when any point's error is over PCT percent or its band misses the
measurement. Cache: a recording is kept while tools/category_truth.py's source hash (the
recorder, the models, the loop styles) is unchanged.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import category_truth as ct  # noqa: E402  (its recorder, cache hash and stacks-only copy)

DEFAULT_OUT = os.path.join(ct.ROOT, "build", "loop-style-whatif")
MICRO_BATCHES = (2, 4)


def record(args):
    """One recording, in a forked child (category_truth.record_in_child)."""
    family, style, path, micro_batch = args
    import torch
    import loop_styles
    torch.set_num_threads(1)
    levers = dict(ct.BASE, micro_batch=micro_batch)
    loop_styles.run_style(path, family, style, **levers)
    return {"micro_batch": micro_batch}


def recordings(out, families, styles, src):
    """{(family, style, micro_batch): stacks-only copy}, recording what the cache lacks."""
    index_path = os.path.join(out, "index.json")
    index = {}
    if os.path.exists(index_path):
        with open(index_path) as f:
            index = json.load(f)
    files, recorded = {}, 0
    for fam in families:
        for st in styles:
            for mb in MICRO_BATCHES:
                path = os.path.join(out, fam, "%s_mb%d.pickle" % (st, mb))
                copy = path[:-len(".pickle")] + ".stacks.pickle"
                name = "%s/%s/mb%d" % (fam, st, mb)
                if index.get(name) != src or not os.path.exists(copy):
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    ct.record_in_child((fam, st, path, mb), work=record)
                    ct.stacks_only_copy(path, copy)
                    index[name] = src
                    recorded += 1
                    with open(index_path, "w") as f:
                        json.dump(index, f, indent=1, sort_keys=True)
                files[(fam, st, mb)] = copy
    return files, recorded


def without_shapes(copy):
    """The stacks-only copy without the recorder's shapes (written next to it, once)."""
    import verify_check
    out = copy[:-len(".stacks.pickle")] + ".noshapes.pickle"
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(copy):
        verify_check.without_recorder_keys(copy, out + ".tmp")
        os.replace(out + ".tmp", out)
    return out


def verify(cli, before, after):
    out = subprocess.run([cli, "whatif", before, "--micro-batch", str(MICRO_BATCHES[1]), "--verify", after,
                          "--json"], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError("`headroom-cli whatif %s --verify %s` exited %d: %s"
                           % (before, after, out.returncode, (out.stderr or out.stdout).strip()[-600:]))
    return json.loads(out.stdout)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--cli", default=ct.DEFAULT_CLI)
    ap.add_argument("--families", default=",".join(ct.FAMILIES))
    ap.add_argument("--styles", default=",".join(ct.STYLES))
    ap.add_argument("--check", type=float, metavar="PCT")
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print("loop_style_whatif: PyTorch is not importable (%s); run with /usr/bin/python3" % e,
              file=sys.stderr)
        return 77
    cli = os.path.abspath(args.cli)
    if not os.access(cli, os.X_OK):
        print("loop_style_whatif: the Headroom CLI %s does not exist; build it or pass --cli" % cli,
              file=sys.stderr)
        return 2
    families = [f for f in args.families.split(",") if f]
    styles = [s for s in args.styles.split(",") if s]
    t0 = time.perf_counter()
    files, recorded = recordings(os.path.abspath(args.out), families, styles, ct.source_hash())
    print("loop_style_whatif: %d recordings made in %.1f s, %d from the cache"
          % (recorded, time.perf_counter() - t0, len(files) - recorded))
    print("%-9s %-11s %12s %12s %8s  %-6s  %s" % ("family", "style", "projected", "measured", "error", "band",
                                                 "without shapes"))
    rows, failed = [], []
    for fam in families:
        for st in styles:
            before, after = files[(fam, st, 2)], files[(fam, st, 4)]
            try:
                v = verify(cli, before, after)
                n = verify(cli, without_shapes(before), without_shapes(after))
            except (RuntimeError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
                print("loop_style_whatif: %s/%s: %s" % (fam, st, e), file=sys.stderr)
                return 2
            err, nerr = 100.0 * v["error"], 100.0 * n["error"]
            print("%-9s %-11s %12d %12d %+7.1f%%  %-6s  %+.1f%% %s"
                  % (fam, st, v["projected_peak_bytes"], v["measured_peak_bytes"], err,
                     "holds" if v["band_holds"] else "MISSES", nerr, "holds" if n["band_holds"] else "MISSES"))
            rows.append({"family": fam, "style": st, "projected_peak_bytes": v["projected_peak_bytes"],
                         "measured_peak_bytes": v["measured_peak_bytes"], "error_percent": round(err, 2),
                         "band_holds": v["band_holds"],
                         "without_shapes": {"projected_peak_bytes": n["projected_peak_bytes"],
                                            "error_percent": round(nerr, 2), "band_holds": n["band_holds"]}})
            if args.check is not None:
                for what, e, holds in (("", err, v["band_holds"]), (" without shapes", nerr, n["band_holds"])):
                    if abs(e) > args.check or not holds:
                        failed.append("%s/%s%s (%+.1f%%%s)" % (fam, st, what, e, "" if holds else ", band misses"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"format": "headroom-loop-style-whatif-1", "points": rows}, f, indent=1)
    if failed:
        print("loop_style_whatif: over %g%% or outside the band: %s" % (args.check, ", ".join(failed)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
