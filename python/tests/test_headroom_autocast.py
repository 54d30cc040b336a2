#!/usr/bin/env python3
"""python/headroom_autocast.py: CUDA's autocast lists on the CPU (docs/whatif-model.md,
"Autocast from the op graph").

Each policy of CUDA's autocast on the ops a transformer uses, the weight-cast cache and its end,
and a recording under it, real and fake, against what it must show: softmax's probabilities in
fp32 where CPU autocast makes them bf16. Run with /usr/bin/python3 (Debian's PyTorch 1.13);
without an importable torch the tests skip with a message.
"""
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import cpu_models
    import headroom_autocast
    TORCH = True
    WHY = ""
except ImportError as e:
    TORCH = False
    WHY = "PyTorch is not importable here (%s); on Debian 12 install python3-torch and run with " \
          "/usr/bin/python3" % (e,)

needs_torch = unittest.skipUnless(TORCH, WHY)


@needs_torch
class PolicyTest(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.lin = nn.Linear(8, 8)
        self.x = torch.randn(2, 8, requires_grad=True)

    def test_each_list(self):
        with headroom_autocast.cuda_autocast():
            y = self.lin(self.x)
            self.assertEqual(y.dtype, torch.bfloat16)  # lower precision
            self.assertEqual(F.softmax(y, -1).dtype, torch.float32)  # fp32 with its dtype set
            self.assertEqual(y.softmax(-1).dtype, torch.float32)
            self.assertEqual(F.softmax(y, -1, dtype=torch.bfloat16).dtype, torch.bfloat16)  # a dtype given
            self.assertEqual(F.layer_norm(y, (8,)).dtype, torch.float32)  # fp32
            self.assertEqual(y.pow(2).dtype, torch.float32)
            self.assertEqual(torch.rsqrt(y.abs() + 1).dtype, torch.float32)
            self.assertEqual(y.sum().dtype, torch.float32)
            self.assertEqual(F.gelu(y).dtype, torch.bfloat16)  # in no list: its input's
            self.assertEqual((y + self.x).dtype, torch.float32)  # type promotion
            self.assertEqual(F.cross_entropy(y, torch.tensor([0, 1])).dtype, torch.float32)
            self.assertEqual((y @ y.t()).dtype, torch.bfloat16)
            y.exp_()  # in-place variants are in no list
            self.assertEqual(y.dtype, torch.bfloat16)

    def test_weight_casts_are_cached_for_the_region(self):
        with headroom_autocast.cuda_autocast():
            self.lin(self.x)
            n = len(headroom_autocast.CudaAutocast._cache)
            self.lin(self.x)
            self.assertEqual(len(headroom_autocast.CudaAutocast._cache), n)  # weight, bias, x
            self.assertEqual(n, 3)
            with headroom_autocast.cuda_autocast():  # nested: the outer region's cache
                self.lin(self.x)
            self.assertEqual(len(headroom_autocast.CudaAutocast._cache), n)
        self.assertEqual(len(headroom_autocast.CudaAutocast._cache), 0)

    def test_gradients_reach_fp32_weights(self):
        with headroom_autocast.cuda_autocast():
            loss = F.cross_entropy(self.lin(self.x), torch.tensor([0, 1]))
        loss.backward()
        self.assertEqual(self.lin.weight.grad.dtype, torch.float32)
        self.assertEqual(self.x.grad.dtype, torch.float32)


@needs_torch
class RecordingTest(unittest.TestCase):
    def record(self, path, **kw):
        return cpu_models.run_point(path, "decoder_infer", micro_batch=2, iterations=1, precision="amp-bf16",
                                    **kw)

    def test_cuda_lists_keep_the_probabilities_fp32(self):
        with tempfile.TemporaryDirectory() as d:
            cpu = self.record(os.path.join(d, "cpu.pickle"))
            cuda = self.record(os.path.join(d, "cuda.pickle"), autocast="cuda")
            fake = self.record(os.path.join(d, "fake.pickle"), autocast="cuda", fake=True)
        # the eager attention's b*h*s^2 probabilities: 2 bytes each on the CPU, 4 under CUDA's
        self.assertGreater(cuda.recorded_peak_bytes, 1.3 * cpu.recorded_peak_bytes)
        self.assertAlmostEqual(fake.recorded_peak_bytes / cuda.recorded_peak_bytes, 1.0, delta=0.005)

    def test_the_file_says_it_ran_under_cuda_lists(self):
        import pickle
        import headroom_cpu
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "own.pickle")
            with headroom_cpu.capture(path, precision="amp-bf16", target_device="h100-80gb") as cap:
                lin = nn.Linear(16, 16)
                with headroom_autocast.cuda_autocast(), cap.phase("forward"):
                    F.softmax(lin(torch.randn(4, 16)), -1)
            with open(path, "rb") as f:
                self.assertEqual(pickle.load(f)["headroom_config"]["autocast"], "cuda")


if __name__ == "__main__":
    unittest.main()
