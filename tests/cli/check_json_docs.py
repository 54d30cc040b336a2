#!/usr/bin/env python3
"""docs/cli-json.md against the real output (issue 19 §6). Stdlib only.

    check_json_docs.py --cli BUILD/app/headroom-cli --source REPO

Runs every subcommand's --json on the bundled sample snapshots (several invocations per
section where keys appear only sometimes, e.g. `measured` or the `growth` check) and checks:
  * every output is one JSON object with "schema_version": 2;
  * every top-level key an output has is listed in its section's `| key | type | meaning |`
    table, and every key the table lists appears in some output of that section;
  * every subcommand whose --help offers --json has a section (so a new one cannot ship
    undocumented), and every section names a subcommand that exists.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def sections(doc_path):
    """{section id: set of keys} from `## \\`id\\`` headings and their key tables."""
    out, current, in_keys = {}, None, False
    with open(doc_path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"^## `([^`]+)`\s*$", line)
            if m:
                current, in_keys = m.group(1), False
                out[current] = set()
                continue
            if current is None:
                continue
            if re.match(r"^\|\s*key\s*\|\s*type\s*\|\s*meaning\s*\|", line):
                in_keys = True
                continue
            if not line.startswith("|"):
                in_keys = False
                continue
            if in_keys:
                km = re.match(r"^\|\s*`([^`]+)`\s*\|", line)
                if km:
                    out[current].add(km.group(1))
    return out


def subcommands(cli):
    """Names listed under 'Subcommands:' in `headroom-cli --help`, and which offer --json."""
    text = subprocess.run([cli, "--help"], capture_output=True, text=True, check=True).stdout
    names, listing = [], False
    for line in text.splitlines():
        if line.startswith("Subcommands:"):
            listing = True
            continue
        if listing:
            m = re.match(r"^\s+(\S+)\s", line)
            if m:
                names.append(m.group(1))
            elif line.strip():
                listing = False
    with_json = []
    for n in names:
        h = subprocess.run([cli, n, "--help"], capture_output=True, text=True).stdout
        if "--json" in h:
            with_json.append(n)
    return names, with_json


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--source", required=True, help="the repository root")
    args = ap.parse_args()
    src = args.source
    silmont = os.path.join(src, "sample_traces", "pt27_silmont_mem_snapshot.pickle")
    kk = os.path.join(src, "sample_traces", "pt27_kk_memory_ctx128_fullstep.pickle.gz")
    proto5 = os.path.join(src, "tests", "fixtures", "proto5.pickle")
    oom = os.path.join(src, "tests", "fixtures", "oom.pickle")
    decoder = os.path.join(src, "tests", "data", "cpu", "decoder_base.pickle")
    budget_db = os.path.join(tempfile.mkdtemp(prefix="headroom-json-docs-"), "budget.db")
    # Section id -> the invocations whose top-level keys, together, the table must match.
    runs = {
        "budget record": [["budget", "record", "--json", "--db", budget_db, silmont, oom]],
        "budget status": [["budget", "status", "--json", "--db", budget_db]],
        "summary FILE": [["summary", "--json", silmont], ["summary", "--json", oom]],
        "summary FILE FILE...": [["summary", "--json", silmont, kk]],
        "analyze": [["analyze", "--json", silmont], ["analyze", "--json", "--capacity", "80GiB", oom]],
        "classify": [["classify", "--json", silmont]],
        "whatif": [["whatif", "--json", silmont], ["whatif", "--json", "--model", "gpt2"],
                   # the simulation overrules the ratio's "tight" (verdict_by_ratio)
                   ["whatif", "--json", kk, "--measured-micro-batch", "1", "--measured-seq", "128",
                    "--seq", "256", "--capacity", "54GiB"]],
        "whatif --verify": [["whatif", "--json", decoder, "--verify", decoder]],
        "ladder": [["ladder", "--json", silmont, "--capacity", "2GiB"],
                   ["ladder", "--json", "--model", "llama2-7b", "--capacity", "24GiB"]],
        "state": [["state", "--json", silmont], ["state", "--json", "--event", "3", silmont]],
        "check": [["check", "--json", silmont, "--max-peak", "70GiB", "--fit", "80GiB", "--baseline", kk,
                   "--max-growth", "5%"]],
        "doctor": [["doctor", "--json", silmont], ["doctor", "--json", proto5]],
        "compare": [["compare", "--json", silmont, kk], ["compare", "--json", silmont, kk, "--max-growth", "5%"],
                    ["compare", "--json", silmont, kk, "--categories",
                     os.path.join(src, "tests", "data", "categories", "example.json")]],
        "replay": [["replay", "--json", silmont], ["replay", "--json", oom, "--alloc-conf", "expandable_segments:True"]],
    }
    documented = sections(os.path.join(src, "docs", "cli-json.md"))
    problems = []
    names, with_json = subcommands(args.cli)
    print("subcommands: %s; with --json: %s" % (", ".join(names), ", ".join(with_json)))
    for sub in with_json:
        if not any(s.split()[0] == sub for s in documented):
            problems.append("`%s` has --json but docs/cli-json.md has no `## \\`%s\\`` section" % (sub, sub))
        if not any(s.split()[0] == sub for s in runs):
            problems.append("`%s` has --json but this test does not run it: add it to `runs`" % sub)
    for s in documented:
        if s.split()[0] not in names:
            problems.append("docs/cli-json.md documents `%s`, which headroom-cli does not have" % s)
    for section, invocations in runs.items():
        if section not in documented:
            problems.append("docs/cli-json.md has no section `%s`" % section)
            continue
        seen = set()
        for argv in invocations:
            r = subprocess.run([args.cli] + argv, capture_output=True, text=True)
            # check's and compare's verdict is the exit status: 1 (a check failed) still prints the JSON.
            if r.returncode not in ((0, 1) if argv[0] in ("check", "compare") else (0,)):
                problems.append("`%s` exited %d: %s" % (" ".join(argv), r.returncode, r.stderr.strip()[:300]))
                continue
            try:
                out = json.loads(r.stdout)
            except ValueError as e:
                problems.append("`%s` printed no JSON: %s" % (" ".join(argv), e))
                continue
            if not isinstance(out, dict):
                problems.append("`%s` printed a %s, not an object" % (" ".join(argv), type(out).__name__))
                continue
            if out.get("schema_version") != 2:
                problems.append("`%s`: schema_version is %r, expected 2" % (" ".join(argv), out.get("schema_version")))
            for k in out:
                if k not in documented[section]:
                    problems.append("`%s` outputs top-level key `%s`, not in docs/cli-json.md section `%s`"
                                    % (" ".join(argv), k, section))
            seen |= set(out)
        for k in sorted(documented[section] - seen):
            problems.append("docs/cli-json.md section `%s` lists `%s`, which no run printed" % (section, k))
        print("%-22s %2d keys documented, %2d seen" % (section, len(documented[section]), len(seen)))
    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        return 1
    print("docs/cli-json.md matches the output of every subcommand")
    return 0


if __name__ == "__main__":
    sys.exit(main())
