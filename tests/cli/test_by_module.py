#!/usr/bin/env python3
"""`headroom-cli analyze --by-module`: what is alive at the peak by module. On a CPU recording
with the recorder's module names (tests/data/cpu/llama_base_shapes.pickle) the rows are the
qualified names and their bytes add up; on the bundled sample (no recorder keys) they are the
module frames of the stacks; on every real file it runs and its JSON agrees with its text.
Stdlib only.

    test_by_module.py --cli BUILD/app/headroom-cli --source REPO
"""
import argparse
import glob
import json
import os
import subprocess
import sys


def analyze(cli, path, *extra):
    r = subprocess.run([cli, "analyze", path] + list(extra), capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--source", required=True)
    args = ap.parse_args()
    problems = []

    shaped = os.path.join(args.source, "tests", "data", "cpu", "llama_base_shapes.pickle")
    rc, out, err = analyze(args.cli, shaped, "--json", "--top", "50")
    g = json.loads(out)["devices"][0]["groups_at_peak"] if rc == 0 else None
    if g is None:
        problems.append("analyze --json on the shaped llama exited %d: %s" % (rc, err))
    else:
        mods = g["by_module"]
        print("llama (recorded): %d modules, %d of %d bytes named" % (len(mods), g["recorded_module_bytes"], g["bytes"]))
        if not mods or any(m["source"] != "recorded" for m in mods):
            problems.append("every module row of a recording with names must be recorded: %r" % mods[:3])
        if not any(m["name"] == "blocks.blocks.0.self_attn" for m in mods):
            problems.append("blocks.blocks.0.self_attn missing from %r" % [m["name"] for m in mods])
        if sum(m["bytes"] for m in mods) != g["module_bytes"]:
            problems.append("module rows %d != module_bytes %d" % (sum(m["bytes"] for m in mods), g["module_bytes"]))
        for m in mods:
            if sum(m["by_category"].values()) != m["bytes"]:
                problems.append("%s: categories %r do not add up to %d" % (m["name"], m["by_category"], m["bytes"]))
    rc, out, err = analyze(args.cli, shaped, "--by-module", "--top", "3")
    if rc != 0 or "named by the" not in out or "blocks.blocks.0.self_attn" not in out:
        problems.append("analyze --by-module text on the shaped llama: rc %d\n%s%s" % (rc, out, err))

    sample = os.path.join(args.source, "sample_traces", "pt27_kk_memory_ctx128_fullstep.pickle.gz")
    rc, out, err = analyze(args.cli, sample, "--json")
    if rc != 0:
        problems.append("analyze --json on the sample exited %d: %s" % (rc, err))
    else:
        mods = json.loads(out)["devices"][0]["groups_at_peak"]["by_module"]
        print("sample (stacks): %s" % ", ".join("%s %d" % (m["forward"], m["bytes"]) for m in mods))
        if not mods or any(m["source"] != "stack" or not m["forward"].endswith(":forward") for m in mods):
            problems.append("the sample's module rows must be its stacks' forward frames: %r" % mods)

    files = sorted(glob.glob(os.path.join(args.source, "tests", "data", "real", "*")))
    files = [f for f in files if os.path.isfile(f) and not f.endswith((".md", ".txt", ".py"))]
    for f in files:
        rc, out, err = analyze(args.cli, f, "--by-module")
        if rc != 0:
            problems.append("%s: analyze --by-module exited %d: %s" % (os.path.basename(f), rc, err.strip()))
        elif "alive at the peak by module" not in out:
            problems.append("%s: no module section" % os.path.basename(f))
    print("real files: %d" % len(files))

    for p in problems:
        print("FAIL: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
