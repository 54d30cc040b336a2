#!/usr/bin/env python3
"""`headroom-cli analyze --categories FILE`: the user's own categories. On the bundled sample
the rule groups and the unclaimed rest add up to what is alive at the peak, the text agrees
with the JSON, and a bad rules file exits 2 with the file, the rule and what is wrong.
Stdlib only.

    test_categories.py --cli BUILD/app/headroom-cli --source REPO --workdir DIR
"""
import argparse
import glob
import json
import os
import subprocess
import sys


def run(cli, *args):
    r = subprocess.run([cli] + list(args), capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    problems = []
    sample = os.path.join(args.source, "sample_traces", "pt27_kk_memory_ctx128_fullstep.pickle.gz")
    rules = os.path.join(args.source, "tests", "data", "categories", "example.json")

    rc, out, err = run(args.cli, "analyze", sample, "--categories", rules, "--json")
    if rc != 0:
        problems.append("analyze --categories --json exited %d: %s" % (rc, err))
    else:
        g = json.loads(out)["devices"][0]["groups_at_peak"]
        u = g["by_user_category"]
        names = [r["name"] for r in u["rules"]]
        total = sum(r["bytes"] for r in u["rules"]) + u["unclaimed_bytes"]
        print("sample: %s; unclaimed %d of %d bytes" % (
            ", ".join("%s %d" % (r["name"], r["bytes"]) for r in u["rules"]), u["unclaimed_bytes"], g["bytes"]))
        if names != ["optimizer step", "attention", "autograd backward", "model code"]:
            problems.append("the rules in the file's order, got %r" % names)
        if total != g["bytes"]:
            problems.append("rule groups and the unclaimed rest (%d) must add up to the live bytes (%d)" % (total, g["bytes"]))
        opt = u["rules"][0]
        if opt["bytes"] <= 0 or opt["by_category"].get("optimizer_state", 0) <= 0:
            problems.append("the optimizer step rule must claim the optimizer state: %r" % opt)
        if u["rules"][0]["color"] != "#8e44ad":
            problems.append("the rule's colour is carried: %r" % u["rules"][0])
        rc2, text, _ = run(args.cli, "analyze", sample, "--categories", rules)
        if rc2 != 0 or "by your categories" not in text or "optimizer step" not in text or "(no rule)" not in text:
            problems.append("the text report lists the categories:\n" + text[-2000:])
    rc, out, _ = run(args.cli, "analyze", sample, "--json")
    if rc == 0 and "by_user_category" in json.loads(out)["devices"][0]["groups_at_peak"]:
        problems.append("without --categories there is no by_user_category")

    bad = {
        "regex.json": ('{"categories": [{"name": "a", "function": "(x"}]}',
                       'rule 1 ("a"): "function" is not a valid regular expression'),
        "key.json": ('[{"name": "a", "fucntion": "x"}]', 'unknown key "fucntion"'),
        "json.json": ('{"categories": [}', "not JSON at byte"),
    }
    for name, (text, expected) in bad.items():
        path = os.path.join(args.workdir, name)
        with open(path, "w") as f:
            f.write(text)
        rc, out, err = run(args.cli, "analyze", sample, "--categories", path)
        if rc != 2 or path not in err or expected not in err or out:
            problems.append("%s: expected exit 2 naming the file and %r, got %d: %s" % (name, expected, rc, err))
    rc, _, err = run(args.cli, "analyze", sample, "--categories", rules, "--markdown")
    if rc == 0:
        problems.append("--categories with --markdown must be refused, not ignored")

    # compare: each side's rows are what analyze says of that file (one set of rules, two
    # files' frame tables).
    silmont = os.path.join(args.source, "tests", "data", "real", "pt27_silmont_mem_snapshot.pickle")
    rc, out, err = run(args.cli, "compare", silmont, sample, "--categories", rules, "--json")
    if rc != 0:
        problems.append("compare --categories exited %d: %s" % (rc, err))
    else:
        rows = {r["name"]: r for r in json.loads(out)["by_user_category"]}
        for path, side in ((silmont, "a_bytes"), (sample, "b_bytes")):
            _, aj, _ = run(args.cli, "analyze", path, "--categories", rules, "--json")
            u = json.loads(aj)["devices"][0]["groups_at_peak"]["by_user_category"]
            for r in u["rules"]:
                if rows[r["name"]][side] != r["bytes"]:
                    problems.append("compare's %s for %s (%d) is not analyze's (%d) on %s" % (
                        side, r["name"], rows[r["name"]][side], r["bytes"], os.path.basename(path)))
            if rows["(no rule)"][side] != u["unclaimed_bytes"]:
                problems.append("compare's unclaimed %s differs from analyze's on %s" % (side, os.path.basename(path)))
        print("compare: %s" % ", ".join("%s %+d" % (n, r["delta_bytes"]) for n, r in rows.items()))
    rc, _, err = run(args.cli, "compare", silmont, sample, "--categories", os.path.join(args.workdir, "regex.json"))
    if rc != 2 or "rule 1" not in err:
        problems.append("compare with a bad rules file: expected exit 2 naming the rule, got %d: %s" % (rc, err))

    # check: a CI gate on one of the user's categories.
    rc, out, err = run(args.cli, "check", sample, "--categories", rules, "--max-category", "optimizer step=20GiB",
                       "--max-category", "attention=1GiB", "--json")
    j = json.loads(out) if out else {}
    cats = {c["category"]: c for c in j.get("checks", []) if c["name"] == "max-category"}
    if rc != 1 or j.get("passed") is not False or cats.get("optimizer step", {}).get("passed") is not False \
            or cats.get("attention", {}).get("passed") is not True:
        problems.append("check --max-category: expected optimizer step to fail 20GiB, attention to pass: %d %r" % (rc, j))
    for argv, expected in (
            (["--categories", rules, "--max-category", "nope=1GiB"], "no rule named 'nope'"),
            (["--max-category", "attention=1GiB"], "only with --categories"),
            (["--categories", rules, "--max-category", "attention"], "expected NAME=SIZE")):
        rc, _, err = run(args.cli, "check", sample, *argv)
        if rc != 2 or expected not in err:
            problems.append("check %s: expected exit 2 with %r, got %d: %s" % (" ".join(argv), expected, rc, err))

    # Every real file in the repository: the groups add up on each device.
    real = sorted(glob.glob(os.path.join(args.source, "tests", "data", "real", "*")))
    real = [f for f in real if os.path.isfile(f) and not f.endswith((".md", ".txt", ".py"))]
    for f in real:
        rc, out, err = run(args.cli, "analyze", f, "--categories", rules, "--json")
        if rc != 0:
            problems.append("%s: analyze --categories exited %d: %s" % (os.path.basename(f), rc, err.strip()))
            continue
        for d in json.loads(out)["devices"]:
            g = d["groups_at_peak"]
            u = g["by_user_category"]
            claimed = sum(r["bytes"] for r in u["rules"])
            if claimed + u["unclaimed_bytes"] != g["bytes"]:
                problems.append("%s device %d: groups do not add up" % (os.path.basename(f), d["device"]))
            print("%s device %d: %d of %d bytes claimed" % (os.path.basename(f), d["device"], claimed, g["bytes"]))
    if not real:
        problems.append("no real files found under tests/data/real")

    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
