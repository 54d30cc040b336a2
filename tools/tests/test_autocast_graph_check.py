#!/usr/bin/env python3
"""tools/autocast_graph_check.py on the bundled CPU recordings with an op graph (no torch).

The fp32 decoder_infer run, replayed as CPU bf16 autocast makes it, must reach the recorded
autocast run's peak; a recording without the op graph is refused, never guessed at."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, ".."))
import autocast_graph_check as agc  # noqa: E402

DATA = os.path.join(ROOT, "tests", "data", "cpu")


class AutocastGraphTest(unittest.TestCase):
    def test_the_op_graph_gives_the_autocast_peak(self):
        base, amp, replayed = agc.check(os.path.join(DATA, "decoder_infer_graph.pickle"),
                                        os.path.join(DATA, "decoder_infer_graph_amp_bf16.pickle"))
        self.assertLess(amp, base)  # autocast narrows this forward ...
        self.assertGreater(amp, base // 2)  # ... by less than half: its weights' casts
        self.assertAlmostEqual(replayed / amp, 1.0, delta=0.01)

    def test_a_trace_without_the_graph_is_refused(self):
        with self.assertRaises(SystemExit) as e:
            agc.check(os.path.join(DATA, "decoder_infer_base.pickle"),
                      os.path.join(DATA, "decoder_infer_amp_bf16.pickle"))
        self.assertIn("no headroom_tensor op graph", str(e.exception))


if __name__ == "__main__":
    unittest.main()
