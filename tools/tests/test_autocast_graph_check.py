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

    def test_cuda_lists_give_the_cuda_autocast_peak(self):
        # the same decoder_infer forward named for an 80 GiB GPU, against a run under CUDA's
        # lists (python/headroom_autocast.py): softmax in fp32 makes it outgrow the fp32 run
        for stem in ("decoder_infer_graph", "gpt2fused_graph"):
            base, amp, replayed = agc.check(os.path.join(DATA, stem + "_h100.pickle"),
                                            os.path.join(DATA, stem + "_amp_cuda.pickle"), "cuda")
            self.assertAlmostEqual(replayed / amp, 1.0, delta=0.01)
            _, _, cpu = agc.check(os.path.join(DATA, stem + "_h100.pickle"),
                                  os.path.join(DATA, stem + "_amp_cuda.pickle"), "cpu")
            self.assertLess(cpu, 0.9 * amp)

    def test_a_trace_without_the_graph_is_refused(self):
        with self.assertRaises(SystemExit) as e:
            agc.check(os.path.join(DATA, "decoder_infer_base.pickle"),
                      os.path.join(DATA, "decoder_infer_amp_bf16.pickle"))
        self.assertIn("no headroom_tensor op graph", str(e.exception))


if __name__ == "__main__":
    unittest.main()
