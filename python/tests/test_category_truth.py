"""Tests of tools/category_truth.py (scoring Headroom's categories and phases).

Run: /usr/bin/python3 -m unittest discover -s python/tests -p test_category_truth.py -v

The scoring tests need only the standard library; the end-to-end test records one point
(needs torch, skipped without it) and scores it with a fake ``headroom-cli classify``.
"""
import importlib.util
import json
import os
import pickle
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(ROOT, "tools", "category_truth.py")

spec = importlib.util.spec_from_file_location("category_truth", SCRIPT)
ct = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ct)

TORCH = importlib.util.find_spec("torch") is not None
WHY = "PyTorch is not importable here; on Debian 12 run with /usr/bin/python3"


def row(t, nbytes, start, end, cat, phase):
    return {"alloc_time_us": t, "addr": 0, "bytes": nbytes, "start_event": start,
            "end_event": end, "category": cat, "phase": phase, "rule": "r"}


class ScoreTest(unittest.TestCase):
    def test_scores_by_hand(self):
        truth = {10: ("parameter", "setup"), 20: ("temporary", "forward"),
                 30: ("activation", "forward"), 40: ("unknown", "other")}
        doc = {"devices": [{"device": 0, "peak_event": 4, "allocations": [
            row(10, 100, 0, -1, "parameter", "setup"),           # right
            row(20, 50, 1, 2, "autograd_detail", "loss"),        # category accepted, phase wrong
            row(30, 200, 2, 5, "temporary", "loss"),             # both wrong
            row(40, 1000, 3, -1, "parameter", "setup"),          # truth unknown/other: excluded
            row(None, 10, 4, 6, "temporary", "forward"),         # unmatched: wrong
        ]}]}
        res = ct.score(truth, doc)
        # alive at event 4: 10, 30, 40 (excluded) and the unmatched one; 20 died at 2
        self.assertAlmostEqual(res["category_peak"], 100.0 * 100 / 310)
        self.assertAlmostEqual(res["phase_peak"], 100.0 * 100 / 310)
        # lifetimes to the end (event 7): 100 x 7, 50 x 1, 200 x 3, 10 x 2
        self.assertAlmostEqual(res["category_timeline"], 100.0 * (700 + 50) / 1370)
        self.assertAlmostEqual(res["phase_timeline"], 100.0 * 700 / 1370)
        self.assertEqual(res["unmatched"], 1)
        self.assertEqual(res["truth_rows_not_in_headroom"], 0)
        self.assertAlmostEqual(res["excluded_percent"]["category_peak"], 100.0 * 1000 / 1310)
        conf = {(c["kind"], c["truth"], c["headroom"]): c for c in res["confusions"]}
        self.assertAlmostEqual(conf["category", "activation", "temporary"]["peak_percent"],
                               100.0 * 200 / 310)
        self.assertAlmostEqual(conf["category", "(no truth)", "temporary"]["timeline_percent"],
                               100.0 * 20 / 1370)
        self.assertAlmostEqual(conf["phase", "forward", "loss"]["timeline_percent"],
                               100.0 * (50 + 600) / 1370)

    def test_alive_before_the_trace_and_nothing_scored(self):
        truth = {5: ("gradient", "backward")}
        doc = {"devices": [{"device": 0, "peak_event": 0, "allocations": [
            row(5, 512, -1, 3, "gradient", "backward")]}]}
        res = ct.score(truth, doc)
        self.assertEqual(res["category_peak"], 100.0)
        self.assertEqual(res["phase_timeline"], 100.0)
        res = ct.score({5: ("unknown", "other")}, doc)
        self.assertIsNone(res["category_peak"])
        self.assertIsNone(res["phase_timeline"])

    def test_memory_from_before_the_trace_scored_by_size(self):
        # Three blocks of one size from before the trace: a weight and two moments. Which block
        # is which no snapshot says, so Headroom is right while its count per category is.
        before = {1: "parameter", 2: "optimizer_state", 3: "optimizer_state", 4: "parameter"}

        def pre(addr, nbytes, cat):
            r = row(None, nbytes, -1, -1, cat, "setup")
            r["addr"] = addr
            return r
        doc = {"devices": [{"device": 0, "peak_event": 0, "allocations": [
            pre(1, 100, "optimizer_state"), pre(2, 100, "parameter"), pre(3, 100, "optimizer_state"),
            pre(4, 50, "optimizer_state")]}]}
        res = ct.score({}, doc, before)
        self.assertAlmostEqual(res["category_peak"], 100.0 * 300 / 350)
        self.assertEqual(res["unmatched"], 0)
        self.assertIsNone(res["phase_peak"])  # no phase before the trace: excluded

    def test_mid_run_moves_the_memory_from_before_out_of_the_trace(self):
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import mid_run
        bc = [{"filename": mid_run.BEFORE_CAPTURE, "line": 0, "name": "parameter w"}]
        snap = {"segments": [], "device_traces": [[
            {"action": "alloc", "addr": 8, "size": 512, "frames": bc},
            {"action": "alloc", "addr": 16, "size": 1024, "frames": bc},
            {"action": "alloc", "addr": 32, "size": 512, "frames": []},
            {"action": "free_completed", "addr": 16, "size": 1024, "frames": []}]],
            "headroom_truth": {"version": 1, "allocations": [
                [1, "parameter", "other"], [2, "gradient", "other"], [3, "temporary", "forward"]]}}
        mid_run.as_recorded_mid_run(snap)
        self.assertEqual([e["addr"] for e in snap["device_traces"][0]], [32, 16])
        self.assertEqual([s["address"] for s in snap["segments"]], [8, 32])
        self.assertEqual(snap["headroom_truth"]["allocations"], [[3, "temporary", "forward"]])
        self.assertEqual(snap["headroom_truth"]["before_window"],
                         [[8, 512, "parameter"], [16, 1024, "gradient"]])

    def test_wrapped_keeps_the_trace_from_the_middle_of_the_last_forward(self):
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import mid_run

        def alloc(addr, size):
            return {"action": "alloc", "addr": addr, "size": size, "frames": []}

        def free(addr, size):
            return {"action": "free_completed", "addr": addr, "size": size, "frames": []}
        # a weight; iteration 1: forward a, backward, optimizer state s; iteration 2: forward
        # b, c, d (the wrap falls at c), backward, the forward's frees
        snap = {"segments": [], "device_traces": [[
            alloc(8, 512), alloc(16, 512), alloc(24, 512), free(16, 512), alloc(32, 512),
            alloc(40, 512), alloc(48, 512), alloc(56, 512), alloc(64, 512), free(40, 512),
            free(48, 512), free(56, 512), free(64, 512)]],
            "headroom_truth": {"version": 1, "allocations": [
                [1, "parameter", "setup"], [2, "activation", "forward"], [3, "gradient", "backward"],
                [4, "optimizer_state", "optimizer"], [5, "activation", "forward"],
                [6, "activation", "forward"], [7, "activation", "forward"],
                [8, "temporary", "backward"]]}}
        mid_run.as_wrapped(snap)
        entries = snap["device_traces"][0]
        self.assertEqual(entries[0], alloc(48, 512))  # c: the middle of the last forward
        self.assertEqual([r[0] for r in snap["headroom_truth"]["allocations"]], [6, 7, 8])
        # alive at the wrap, with no alloc entry left: the weight, a gradient, the state, b
        self.assertEqual(snap["headroom_truth"]["before_window"],
                         [[8, 512, "parameter"], [24, 512, "gradient"], [32, 512, "optimizer_state"],
                          [40, 512, "activation"]])
        self.assertEqual([s["address"] for s in snap["segments"]], [8, 24, 32])

    def test_out_of_memory_ends_the_step_at_the_request_halfway_through_the_phase(self):
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import mid_run

        def alloc(addr, size):
            return {"action": "alloc", "addr": addr, "size": size, "frames": [{"name": "f%d" % addr}]}
        snap = {"segments": [], "device_traces": [[
            alloc(8, 512), alloc(16, 512), alloc(24, 1024), alloc(32, 2048), alloc(40, 512),
            {"action": "free_completed", "addr": 16, "size": 512, "frames": []}]],
            "headroom_truth": {"version": 1, "allocations": [
                [1, "parameter", "setup"], [2, "activation", "forward"], [3, "activation", "forward"],
                [4, "activation", "forward"], [5, "temporary", "backward"]]}}
        mid_run.as_out_of_memory(snap, "forward")
        entries = snap["device_traces"][0]
        self.assertEqual([e["action"] for e in entries], ["alloc", "alloc", "oom"])
        self.assertEqual(entries[-1]["size"], 1024)  # the request halfway through the forward
        self.assertEqual(entries[-1]["frames"], [{"name": "f24"}])
        self.assertEqual(snap["headroom_truth"]["allocations"], [[1, "parameter", "setup"],
                                                                  [2, "activation", "forward"]])
        self.assertEqual([s["address"] for s in snap["segments"]], [8, 16])

    def test_equivalences(self):
        self.assertEqual(set(ct.ACCEPT["temporary"]), {"temporary", "autograd_detail"})
        for cat in ("parameter", "gradient", "optimizer_state", "input", "activation"):
            self.assertEqual(ct.ACCEPT[cat], (cat,))


FAKE_CLI = r'''#!%s
"""A stand-in for `headroom-cli classify FILE --json`: events are the trace entries;
category and phase are the truth's (or "unknown" for everything with --wrong)."""
import json, pickle, sys
args = sys.argv[1:]
assert args[0] == "classify" and args[2] == "--json", args
snap = pickle.load(open(args[1], "rb"))
assert "external_annotations" not in snap
wrong = %r
truth = {t: (c, p) for t, c, p in snap["headroom_truth"]["allocations"]}
rows, open_ = [], {}
live = peak = 0
peak_event = -1
for i, e in enumerate(snap["device_traces"][0]):
    if e["action"] == "alloc":
        c, p = truth[e["time_us"]]
        r = {"alloc_time_us": e["time_us"], "addr": e["addr"], "bytes": e["size"],
             "start_event": i, "end_event": -1, "category": "unknown" if wrong else c,
             "phase": p, "rule": "fake"}
        rows.append(r)
        open_[e["addr"]] = r
        live += e["size"]
        if live > peak:
            peak, peak_event = live, i
    elif e["action"] == "free_completed":
        open_.pop(e["addr"])["end_event"] = i
        live -= e["size"]
print(json.dumps({"schema_version": 2, "devices": [
    {"device": 0, "peak_event": peak_event, "allocations": rows}]}))
'''


@unittest.skipUnless(TORCH, WHY)
class EndToEndTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.tmp.name, "out")

    def tearDown(self):
        self.tmp.cleanup()

    def fake(self, wrong):
        path = os.path.join(self.tmp.name, "fake-cli-%d" % wrong)
        with open(path, "w") as f:
            f.write(FAKE_CLI % (sys.executable, wrong))
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return path

    def run_tool(self, *args):
        return subprocess.run([sys.executable, SCRIPT, "--out", self.out, "--families", "convnet",
                               "--styles", "plain"] + list(args),
                              capture_output=True, text=True)

    def test_record_copy_score_and_cache(self):
        js = os.path.join(self.tmp.name, "scores.json")
        out = self.run_tool("--cli", self.fake(False), "--check", "--json", js)
        self.assertEqual(out.returncode, 0, out.stderr + out.stdout)
        self.assertIn("1 points recorded", out.stdout)
        with open(js) as f:
            doc = json.load(f)
        (pt,) = doc["points"]
        for m in ct.METRICS:
            self.assertEqual(pt[m], 100.0, m)
        self.assertEqual(pt["unmatched"], 0)
        with open(os.path.join(self.out, "convnet", "plain.stacks.pickle"), "rb") as f:
            copy = pickle.load(f)
        self.assertNotIn("external_annotations", copy)
        self.assertIn("headroom_truth", copy)
        with open(os.path.join(self.out, "convnet", "plain.pickle"), "rb") as f:
            self.assertIn("external_annotations", pickle.load(f))
        # the second run comes from the cache; every category wrong fails --check
        out = self.run_tool("--cli", self.fake(True), "--check")
        self.assertEqual(out.returncode, 1, out.stderr + out.stdout)
        self.assertIn("0 points recorded", out.stdout)
        self.assertIn("convnet/plain", out.stderr)

    def test_missing_cli(self):
        out = self.run_tool("--cli", os.path.join(self.tmp.name, "no-such-cli"))
        self.assertEqual(out.returncode, 2)
        self.assertIn("does not exist", out.stderr)


if __name__ == "__main__":
    unittest.main()
