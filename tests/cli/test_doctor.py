#!/usr/bin/env python3
"""`headroom-cli doctor` on fixtures, real snapshots and generated variants (issue 19 §5).
Stdlib only.

    test_doctor.py --cli BUILD/app/headroom-cli --source REPO --real REAL_DIR --workdir DIR

Every kind documented in docs/cli-json.md must be reported on at least one file here, and
each file must report the kinds listed for it (and not those listed as absent). The good
file (pt27_silmont) has no warning. Variants nothing in the repository covers are made
from real files: the same snapshot with its Python frames removed (C++-only stacks), with
no frames at all, and a generated run whose ring buffer kept the last 1000 entries.
"""
import argparse
import io
import json
import os
import pickle
import re
import subprocess
import sys


class NoGlobals(pickle.Unpickler):
    """Memory snapshots are plain containers; never import anything while reading one."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError("refusing global %s.%s" % (module, name))


def load_snapshot(path):
    with open(path, "rb") as f:
        return NoGlobals(io.BytesIO(f.read())).load()


def frame_lists(snap):
    """Every `frames` list of trace entries, segments and blocks (shared lists once each)."""
    seen = set()
    for trace in snap.get("device_traces", []):
        for e in trace:
            yield from _once(e.get("frames"), seen)
    for seg in snap.get("segments", []):
        yield from _once(seg.get("frames"), seen)
        for b in seg.get("blocks", []):
            yield from _once(b.get("frames"), seen)


def _once(lst, seen):
    if isinstance(lst, list) and id(lst) not in seen:
        seen.add(id(lst))
        yield lst


def make_variants(real, workdir, source):
    os.makedirs(workdir, exist_ok=True)
    base = os.path.join(real, "pt27_silmont_mem_snapshot.pickle")
    out = {}
    snap = load_snapshot(base)
    for frames in frame_lists(snap):
        frames[:] = [f for f in frames if not str(f.get("filename", "")).endswith(".py")]
    out["cpp_only"] = os.path.join(workdir, "silmont_cpp_only.pickle")
    with open(out["cpp_only"], "wb") as f:
        pickle.dump(snap, f, protocol=4)
    snap = load_snapshot(base)
    for frames in frame_lists(snap):
        frames[:] = []
    out["no_frames"] = os.path.join(workdir, "silmont_no_frames.pickle")
    with open(out["no_frames"], "wb") as f:
        pickle.dump(snap, f, protocol=4)
    # A run whose ring buffer kept only its last 1000 entries (no overflow flag in the file).
    out["wrapped"] = os.path.join(workdir, "gen_wrapped_1000.pickle")
    subprocess.run([sys.executable, os.path.join(source, "tools", "gen_snapshot.py"), "--out", out["wrapped"],
                    "--layers", "2", "--steps", "3", "--hidden", "512", "--heads", "8", "--vocab", "8000",
                    "--seq-len", "512", "--max-entries", "1000"], check=True, capture_output=True)
    return out


def documented_kinds(doc):
    kinds, in_table = [], False
    with open(doc, encoding="utf-8") as f:
        for line in f:
            if re.match(r"^\|\s*kind\s*\|\s*severity\s*\|", line):
                in_table = True
                continue
            if in_table:
                m = re.match(r"^\|\s*`([a-z0-9_]+)`\s*\|\s*(warning|info)\s*\|", line)
                if m:
                    kinds.append((m.group(1), m.group(2)))
                elif not line.startswith("|"):
                    in_table = False
    return kinds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--real", required=True, help="the real PyTorch files (tests/data/real)")
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    fx = os.path.join(args.source, "tests", "fixtures")
    real = args.real
    v = make_variants(real, args.workdir, args.source)
    problems = []

    def doctor(path):
        r = subprocess.run([args.cli, "doctor", "--json", path], capture_output=True, text=True)
        if r.returncode != 0:
            problems.append("doctor %s exited %d: %s" % (path, r.returncode, r.stderr.strip()))
            return None
        return json.loads(r.stdout)

    # file -> (kinds it must report, kinds it must not report)
    cases = [
        (os.path.join(fx, "ring_wrapped.pickle"), {"history_truncated", "frees_without_allocations"}, set()),
        (os.path.join(real, "pt20_yiyi_oom_snapshot.pickle"),
         {"history_truncated", "frees_without_allocations", "allocator_settings_unknown", "no_timestamps",
          "no_oom_record", "no_annotations"}, {"no_stacks", "pickle_protocol_5"}),
        (os.path.join(real, "pt21_ftcourse_memory_snapshot.pickle"),
         {"frees_without_allocations", "allocator_settings_unknown", "no_timestamps"}, {"history_truncated"}),
        (os.path.join(real, "pt27_kk_memory_ctx128_fullstep.pickle"),
         {"frees_without_allocations", "no_phase_markers", "no_oom_record"},
         {"cpp_only_stacks", "no_stacks", "history_truncated", "no_annotations"}),
        (os.path.join(fx, "legacy_list.pickle"), {"no_history", "no_stacks", "allocator_settings_unknown"},
         {"devices_without_history"}),
        (os.path.join(fx, "multi_device.pickle"), {"devices_without_history"}, {"no_history"}),
        (os.path.join(fx, "proto5.pickle"), {"pickle_protocol_5"}, set()),
        (os.path.join(fx, "proto2.pickle"), set(), {"pickle_protocol_5"}),
        (os.path.join(fx, "oom.pickle"), set(), {"no_oom_record"}),
        (os.path.join(args.source, "tests", "data", "cpu", "fake_decoder.pickle"), {"fake_recording"},
         {"no_oom_record", "cpu_autocast_for_gpu"}),
        (os.path.join(args.source, "tests", "data", "cpu", "decoder_infer_amp_cpu_h100.pickle"),
         {"fake_recording", "cpu_autocast_for_gpu"}, set()),
        (os.path.join(args.source, "tests", "data", "cpu", "gpt2fused_graph_h100.pickle"), set(),
         {"cpu_autocast_for_gpu"}),
        (os.path.join(real, "pt19_kineto_resnet50_worker0.pt.trace.json.gz"), {"not_a_snapshot"},
         {"no_oom_record", "pickle_protocol_5"}),
        (os.path.join(real, "pt27_silmont_mem_snapshot.pickle"), {"no_annotations", "no_oom_record"}, set()),
        (v["cpp_only"], {"cpp_only_stacks"}, {"no_stacks"}),
        (v["no_frames"], {"no_stacks"}, {"cpp_only_stacks"}),
        (v["wrapped"], {"history_truncated", "frees_without_allocations"}, set()),
    ]
    seen = set()
    for path, must, must_not in cases:
        out = doctor(path)
        if out is None:
            continue
        kinds = {f["kind"] for f in out["findings"]}
        seen |= kinds
        name = os.path.basename(path)
        print("%-48s %s" % (name, ", ".join(f["kind"] for f in out["findings"]) or "-"))
        for k in sorted(must - kinds):
            problems.append("%s: expected %s, got %s" % (name, k, sorted(kinds)))
        for k in sorted(must_not & kinds):
            problems.append("%s: did not expect %s" % (name, k))
        for f in out["findings"]:
            if not f["message"] or "\n" in f["message"] or not f["fix"]:
                problems.append("%s: %s needs a one-line message and a fix" % (name, f["kind"]))
        if out.get("schema_version") != 2:
            problems.append("%s: schema_version %r" % (name, out.get("schema_version")))

    # The figures behind the ring_wrapped finding (tests/tools/make_fixtures.py scen_ring):
    # ghost1 2 MiB + ghost2 300000 + ghost3 6 MiB still allocated; old1 4 MiB + old2 1 MiB + 2048
    # freed without their allocation.
    ring = doctor(os.path.join(fx, "ring_wrapped.pickle"))
    if ring:
        f = [x for x in ring["findings"] if x["kind"] == "frees_without_allocations"][0]
        want = {"allocated_before_trace_bytes": 2 * 2**20 + 300000 + 6 * 2**20,
                "freed_without_allocation_bytes": 4 * 2**20 + 2**20 + 2048,
                "reconstructed_baseline_bytes": 13933536, "freed_without_allocation": 2,
                "allocated_before_trace": 3}
        for k, val in want.items():
            if f["data"].get(k) != val:
                problems.append("ring_wrapped: data.%s = %r, expected %r" % (k, f["data"].get(k), val))
        if "max_entries=" not in [x for x in ring["findings"] if x["kind"] == "history_truncated"][0]["fix"]:
            problems.append("ring_wrapped: the history_truncated fix must name max_entries")
    multi = doctor(os.path.join(fx, "multi_device.pickle"))
    if multi:
        f = [x for x in multi["findings"] if x["kind"] == "devices_without_history"][0]
        if f["devices"] != [1]:
            problems.append("multi_device: devices_without_history names %r, expected [1]" % f["devices"])
    good = doctor(os.path.join(real, "pt27_silmont_mem_snapshot.pickle"))
    if good and good["warnings"] != 0:
        problems.append("pt27_silmont (a good capture) has %d warnings" % good["warnings"])

    # The text output and the exit codes: 0 whatever the findings, 2 for unreadable input.
    r = subprocess.run([args.cli, "doctor", os.path.join(fx, "ring_wrapped.pickle")], capture_output=True, text=True)
    if r.returncode != 0 or "warning history_truncated:" not in r.stdout or "  fix: " not in r.stdout:
        problems.append("doctor text output: rc %d\n%s" % (r.returncode, r.stdout))
    for bad in (os.path.join(fx, "no_such_file.pickle"), os.path.join(fx, "empty.pickle"),
                os.path.join(fx, "malicious_reduce.pickle")):
        r = subprocess.run([args.cli, "doctor", bad], capture_output=True, text=True)
        lines = r.stderr.strip().splitlines()
        if r.returncode != 2 or r.stdout or len(lines) != 1 or os.path.basename(bad) not in lines[0]:
            problems.append("doctor %s: expected exit 2 with one line naming the file, got %d %r"
                            % (os.path.basename(bad), r.returncode, r.stderr))

    doc = documented_kinds(os.path.join(args.source, "docs", "cli-json.md"))
    names = {k for k, _ in doc}
    for k in sorted(names - seen):
        problems.append("documented kind %s is not reported on any test file" % k)
    for k in sorted(seen - names):
        problems.append("kind %s is reported but not documented in docs/cli-json.md" % k)
    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        return 1
    print("doctor: all %d documented kinds seen; the good file has no warning" % len(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
