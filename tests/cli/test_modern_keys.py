#!/usr/bin/env python3
"""The newest keys in every combination (issue 30): tools/gen_modern_snapshot.py writes the 16
subsets of user_metadata, forward_frames, FX frames and private pools (pickle protocols 2 and
5); each opens, classifies every allocation, replays with no divergence and converts to .hrt
and back. The FX frames name the model's forward as the module (not dynamo's wrapper) and a
file with pools reserves a segment per pool apart from the default pool. Stdlib only.

    test_modern_keys.py --cli BUILD/app/headroom-cli --source REPO --workdir DIR
"""
import argparse
import glob
import json
import os
import subprocess
import sys


def run(cli, *args):
    r = subprocess.run([cli] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s %s: exit %d\n%s" % (os.path.basename(cli), " ".join(args), r.returncode, r.stderr))
    return r.stdout


def check_file(cli, path, workdir):
    """The problems with one generated file, as lines."""
    name = os.path.basename(path)[: -len(".pickle")]
    features = set() if name.startswith("none") else set(name.split("@")[0].split("+"))
    problems = []
    rows = json.loads(run(cli, "classify", "--json", path))["devices"][0]["allocations"]
    if len(rows) != 18:
        problems.append("%s: %d allocations, expected 18" % (name, len(rows)))
    forwards = {r["module_forward"] for r in rows if r["phase"] == "forward"}
    if forwards != {"/home/user/project/model.py:21:forward", "/home/user/project/model.py:22:forward"}:
        problems.append("%s: the forward's modules read %s" % (name, sorted(map(str, forwards))))
    replay = json.loads(run(cli, "replay", "--json", path))["devices"][0]
    if replay["first_divergence"] is not None or replay["segment_events_matched"] != replay["segment_events_recorded"]:
        problems.append("%s: the replay diverges: %s" % (name, replay["first_divergence"]))
    expected_segments = 4 if "pools" in features else 3  # two pools, or both graphs in the default pool
    if replay["segment_events_recorded"] != expected_segments:
        problems.append("%s: %d segments, expected %d" % (name, replay["segment_events_recorded"], expected_segments))
    # Each private pool reaches a script: state --json lists it with its segments and bytes.
    state = json.loads(run(cli, "state", "--json", path))
    pools = state["private_pools"]
    if ("pools" in features) != (len(pools) == 2):
        problems.append("%s: state --json lists %d private pools" % (name, len(pools)))
    if sum(p["reserved"] for p in pools) != sum(s["total_size"] for s in state["segments"] if s["pool_id"] != [0, 0]):
        problems.append("%s: the private pools' reserved bytes are not their segments'" % name)
    for cmd in ("summary", "analyze"):
        listed = json.loads(run(cli, cmd, "--json", path))["devices"][0]["private_pools"]
        if [p["pool_id"] for p in listed] != [p["pool_id"] for p in pools] or \
                [p["reserved_bytes"] for p in listed] != [p["reserved"] for p in pools]:
            problems.append("%s: %s --json lists other private pools than state: %r" % (name, cmd, listed))
    hrt = os.path.join(workdir, name + ".hrt")
    run(cli, "convert", path, hrt)
    if json.loads(run(cli, "classify", "--json", hrt))["devices"][0]["allocations"] != rows:
        problems.append("%s: the .hrt copy classifies differently" % name)
    return problems


def check_json_copy(cli, files, workdir):
    """The JSON form of the snapshot (what memory_viz accepts) reads the same keys."""
    import pickle
    full = [f for f in files if os.path.basename(f) == "user_metadata+forward_frames+fx+pools.pickle"]
    if not full:
        return ["the file with every key was not generated"]
    with open(full[0], "rb") as f:
        snapshot = pickle.load(f)  # our own generated file
    copy = os.path.join(workdir, "all_keys.json")
    with open(copy, "w") as f:
        json.dump(snapshot, f)
    a = json.loads(run(cli, "classify", "--json", full[0]))["devices"][0]["allocations"]
    b = json.loads(run(cli, "classify", "--json", copy))["devices"][0]["allocations"]
    ra = json.loads(run(cli, "replay", "--json", full[0]))["devices"][0]
    rb = json.loads(run(cli, "replay", "--json", copy))["devices"][0]
    problems = []
    if a != b:
        problems.append("the JSON copy classifies differently")
    if ra["segment_events_recorded"] != rb["segment_events_recorded"] or rb["first_divergence"] is not None:
        problems.append("the JSON copy replays differently")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    gen = os.path.join(args.source, "tools", "gen_modern_snapshot.py")
    problems = []
    files = []
    for protocol in (2, 5):
        out = os.path.join(args.workdir, "p%d" % protocol)
        subprocess.run([sys.executable, gen, "--all-combinations", out, "--protocol", str(protocol)], check=True)
        files += sorted(glob.glob(os.path.join(out, "*.pickle")))
    if len(files) != 32:
        problems.append("expected 32 generated files, found %d" % len(files))
    for path in files:
        problems += check_file(args.cli, path, os.path.dirname(path))
    problems += check_json_copy(args.cli, files, args.workdir)
    for p in problems:
        print("FAIL", p)
    print("%d files, %d problems" % (len(files), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
