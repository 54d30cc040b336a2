#!/usr/bin/env python3
"""tools/recorder_shapes_check.py's score of Headroom's stack-only module attribution.

Usage: test_recorder_shapes_check.py [PATH/TO/headroom-cli]

The join and the agreement rules run on made-up classify rows (no torch, no CLI). With a CLI
(the argument, else build/release/app/headroom-cli when it exists) and torch, one more test
scores tests/data/cpu/llama_base_shapes.pickle: the copy without the keys must show no
recorded module, and every row must join.
"""
import os
import pickle
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, ".."))
import recorder_shapes_check as rsc  # noqa: E402

CLI = None
SPANS = {"": ("/m/model.py", 10, 20), "blocks.0": ("/m/model.py", 30, 40),
         "blocks.0.lin": ("/t/linear.py", 100, 120)}


def row(event, nbytes, module=None, forward=None, device=0, addr=None):
    return {"device": device, "start_event": event, "bytes": nbytes,
            "addr": 0x1000 + event if addr is None else addr, "module": module,
            "module_forward": forward}


def score(pairs, spans=SPANS):
    """pairs: (event, bytes, recorded module, stack answer)."""
    rec = [row(e, b, module=m) for e, b, m, _ in pairs]
    stack = [row(e, b, forward=f) for e, b, _, f in pairs]
    return rsc.attribution(rec, stack, spans)


class AttributionTest(unittest.TestCase):
    def test_each_outcome(self):
        a = score([(0, 512, None, None),                            # neither: not counted
                   (1, 1024, "blocks.0.lin", "/t/linear.py:114:forward"),  # agree
                   (2, 2048, "", "/m/model.py:20:forward"),             # the root: agree
                   (3, 4096, "blocks.0", "/t/linear.py:114:forward"),   # an inner module
                   (4, 512, "blocks.0", None),                          # missed
                   (5, 512, None, "/m/model.py:35:forward"),            # extra
                   (6, 512, "<Nope>.sub", "/m/model.py:35:forward")])   # unresolved
        self.assertEqual((a["named"], a["agree"], a["other"], a["missed"], a["extra"],
                          a["unresolved"]), (5, 2, 1, 1, 1, 1))
        self.assertEqual(a["named_bytes"], 1024 + 2048 + 4096 + 512 + 512)
        self.assertEqual((a["agree_bytes"], a["other_bytes"], a["extra_bytes"]),
                         (1024 + 2048, 4096, 512))
        self.assertEqual((a["stripped_named"], a["unjoined"]), (0, 0))
        self.assertEqual(a["examples"]["other"][0]["start_event"], 3)

    def test_span_edges_and_file(self):
        a = score([(1, 1, "blocks.0", "/m/model.py:30:forward"),
                   (2, 1, "blocks.0", "/m/model.py:40:forward"),
                   (3, 1, "blocks.0", "/m/model.py:41:forward"),
                   (4, 1, "blocks.0", "/m/other.py:35:forward"),
                   (5, 1, "blocks.0", "C:/m/model.py:oops")])  # unreadable: not inside
        self.assertEqual((a["agree"], a["other"]), (2, 3))

    def test_join(self):
        rec = [row(0, 8, "", device=0), row(0, 8, "", device=1), row(-1, 8, addr=1),
               row(-1, 8, addr=2), row(7, 8, "")]
        stack = [row(0, 8, forward="/m/model.py:11:f", device=1), row(-1, 8, addr=2),
                 row(-1, 8, addr=1), row(0, 8, forward="/m/model.py:12:f", device=0),
                 row(7, 16, forward="/m/model.py:12:f"), row(9, 8)]
        a = rsc.attribution(rec, stack, SPANS)
        self.assertEqual(a["agree"], 2)
        self.assertEqual(a["unjoined"], 3)  # event 7 (sizes differ) on both sides, event 9
        stack[0]["module"] = "blocks.0"
        self.assertEqual(rsc.attribution(rec, stack, SPANS)["stripped_named"], 1)

    def test_parse_frame(self):
        self.assertEqual(rsc.parse_frame("/a:b/c.py:12:forward"), ("/a:b/c.py", 12))
        self.assertIsNone(rsc.parse_frame(None))
        self.assertIsNone(rsc.parse_frame("nolines"))

    def test_loss_module_name(self):
        try:
            import torch.nn  # noqa: F401
        except ImportError:
            self.skipTest("no torch")
        span = rsc.module_span({}, "<MSELoss>")
        self.assertTrue(span[0].endswith("loss.py"), span)
        self.assertIsNone(rsc.module_span({}, "<NoSuchLoss>"))


class CliTest(unittest.TestCase):
    def test_llama_base(self):
        if not CLI or not os.path.exists(CLI):
            self.skipTest("no headroom-cli")
        try:
            import torch  # noqa: F401
        except ImportError:
            self.skipTest("no torch")
        path = os.path.join(ROOT, "tests", "data", "cpu", "llama_base_shapes.pickle")
        with open(path, "rb") as f:
            snap = pickle.load(f)
        spans = rsc._forward_spans("llama", snap.get("headroom_config", {}))
        tmp = rsc.write_stripped(snap)
        try:
            a = rsc.attribution(rsc.cli_classify(CLI, path), rsc.cli_classify(CLI, tmp), spans)
        finally:
            os.unlink(tmp)
        self.assertEqual((a["stripped_named"], a["unjoined"]), (0, 0))
        self.assertGreater(a["named"], 100)
        self.assertEqual(a["agree"], a["named"], a["examples"])
        self.assertEqual(a["extra"], 0, a["examples"])


if __name__ == "__main__":
    CLI = sys.argv.pop(1) if len(sys.argv) > 1 and not sys.argv[1].startswith("-") \
        else rsc.DEFAULT_CLI
    unittest.main()
