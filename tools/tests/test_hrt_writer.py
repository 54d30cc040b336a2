#!/usr/bin/env python3
"""tools/hrt_writer.py output opens in headroom-cli with the expected numbers.

Usage: test_hrt_writer.py PATH/TO/headroom-cli
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from hrt_writer import HrtWriter  # noqa: E402

CLI = None


class HrtWriterTest(unittest.TestCase):
    def test_output_opens(self):
        w = HrtWriter(source_format="jax test allocator", notes=["written by the test"])
        dev = w.device(0, device_type="cuda", rank=2)
        dev.segment(address=0x1000, total_size=8 << 20, blocks=[(0x1000, 1 << 20, "active_allocated"),
                                                               (0x101000, 7 << 20, "inactive")])
        stack = [("model.py", 12, "forward"), ("train.py", 40, "step")]
        dev.event("alloc", addr=0x1000, size=1 << 20, time_us=100, stack=stack, category="activation")
        dev.event("alloc", addr=0x101000, size=3 << 20, time_us=110, stack=stack[1:], category="gradient")
        dev.event("free", addr=0x101000, size=3 << 20, time_us=120)
        dev.event("oom", size=64 << 30, time_us=130)
        cpu = w.device(-1, device_type="cpu")
        cpu.event("alloc", addr=0x9000, size=4096)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "out.hrt")
            w.write(path)
            out = subprocess.run([CLI, "summary", "--json", path], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            s = json.loads(out.stdout)
            gpu = [x for x in s["devices"] if x["device"] == 0][0]
            self.assertEqual(gpu["device_type"], "cuda")
            self.assertEqual(gpu["rank"], 2)
            self.assertEqual(gpu["source_format"], "jax test allocator")
            self.assertEqual(gpu["trace_entries"], 4)
            self.assertEqual(gpu["peak_allocated_bytes"], 4 << 20)
            self.assertEqual(gpu["reserved_bytes"], 8 << 20)
            self.assertEqual(len(gpu["oom"]), 1)
            self.assertTrue(gpu["exact_categories"])
            self.assertIn("written by the test", s["notes"])
            self.assertEqual([x["device_type"] for x in s["devices"]], ["cpu", "cuda"])
            # Recompressing with the C++ writer keeps the summary.
            small = os.path.join(d, "small.hrt")
            subprocess.run([CLI, "convert", path, small], check=True, capture_output=True)
            again = json.loads(subprocess.run([CLI, "summary", "--json", small], capture_output=True,
                                              text=True, check=True).stdout)
            self.assertEqual(again["devices"], s["devices"])


if __name__ == "__main__":
    CLI = sys.argv.pop(1)
    unittest.main()
