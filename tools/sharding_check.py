# SPDX-License-Identifier: MIT
"""The what-if's reading of data-parallel sharding, on category_truth's recordings of
python/distributed_styles.py (issue 47): the ZeRO stage it reads from the stacks, and a
projection from one sharding to another against the recording made at the other.

Each family recorded in all four styles is checked:
  * `whatif --json` reads zero = 0 on ddp_1/ddp_2 and zero = 1 on zero1_1/zero1_2, "read";
  * zero1_2 projected to one device matches zero1_1's own projection (its measured peak);
  * ddp_2 projected to ZeRO-1 matches zero1_2's own projection.
Used by tools/category_truth.py --check."""
import json
import os
import subprocess

PAIRS = (("zero1_2", ["--devices", "1"], "zero1_1"), ("ddp_2", ["--zero", "1"], "zero1_2"))
READS = {"ddp_1": "0", "ddp_2": "0", "zero1_1": "1", "zero1_2": "1"}
# Of the measured peak. torch's ZeroRedundancyOptimizer gives each rank whole parameters (greedy
# by size), so a rank's share of the state is near 1/N, not 1/N; the projection takes 1/N (convnet,
# whose few large weights split worst: +1.94% when this was written; the others within 0.6%).
TOLERANCE = 0.025


def whatif(cli, path, extra=()):
    out = subprocess.run([cli, "whatif", path, "--json"] + list(extra), capture_output=True,
                         text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError("`headroom-cli whatif %s --json %s` exited %d: %s"
                           % (path, " ".join(extra), out.returncode, out.stderr.strip()[-400:]))
    return json.loads(out.stdout)


def check(cli, out_dir, families):
    """Prints one line per check; returns the failures (strings)."""
    failures = []
    for fam in families:
        paths = {st: os.path.join(out_dir, fam, st + ".stacks.pickle") for st in READS}
        if not all(os.path.exists(p) for p in paths.values()):
            continue
        for st, want in READS.items():
            zero = whatif(cli, paths[st])["measured"].get("zero", {})
            ok = zero.get("value") == want and zero.get("how") == "read"
            print("sharding %-8s %-8s zero read %s (%s)" % (fam, st, zero.get("value"),
                                                           "ok" if ok else "want " + want))
            if not ok:
                failures.append("%s/%s: zero %r, want %s read" % (fam, st, zero, want))
        for src, lever, dst in PAIRS:
            got = whatif(cli, paths[src], lever)["peak_allocated_bytes"]
            want = whatif(cli, paths[dst])["peak_allocated_bytes"]
            err = (got - want) / want
            print("sharding %-8s %s %s -> %d, %s measured %d (%+.2f%%)"
                  % (fam, src, " ".join(lever), got, dst, want, 100 * err))
            if abs(err) > TOLERANCE:
                failures.append("%s: %s %s projects %d, %s measured %d (%+.2f%%)"
                                % (fam, src, " ".join(lever), got, dst, want, 100 * err))
    return failures
