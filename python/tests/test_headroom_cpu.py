"""Tests of python/headroom_cpu.py (the CPU recorder) with real PyTorch on the CPU.

Run: /usr/bin/python3 -m unittest discover -s python/tests -p test_headroom_cpu.py -v

Without an importable torch (the repository's other Python tests run without it) the
tests that need it are skipped with a message; the rest needs only the standard library.
"""
import contextlib
import importlib.util
import io
import json
import os
import pickle
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)
ROOT = os.path.dirname(PYDIR)
REPLAY = os.path.join(ROOT, "tests", "tools", "snapshot_summary.py")
sys.path.insert(0, PYDIR)

import headroom_cpu  # noqa: E402  (imports without torch)

try:
    import torch
    TORCH = True
    WHY = ""
except Exception as e:  # ImportError, or a broken install
    torch = None
    TORCH = False
    WHY = "PyTorch is not importable here (%s: %s); on Debian 12 install python3-torch and " \
          "run with /usr/bin/python3" % (type(e).__name__, e)

needs_torch = unittest.skipUnless(TORCH, WHY)


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("global %s.%s refused" % (module, name))


def load_plain(path):
    with open(path, "rb") as f:
        return _PlainUnpickler(f).load()


def replay_module():
    spec = importlib.util.spec_from_file_location("snapshot_summary", REPLAY)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def only_plain(v):
    if isinstance(v, dict):
        return all(isinstance(k, str) and only_plain(x) for k, x in v.items())
    if isinstance(v, list):
        return all(only_plain(x) for x in v)
    return v is None or isinstance(v, (bool, int, float, str))


def _tiny_model():
    return torch.nn.Sequential(torch.nn.Linear(32, 128), torch.nn.GELU(),
                               torch.nn.Linear(128, 32), torch.nn.Sigmoid())


def _step(cap, model, opt):
    with cap.iteration():
        x = torch.randn(16, 32)
        with cap.phase("forward"):
            y = model(x)
        with cap.phase("loss"):
            loss = (y * y).mean()
        with cap.phase("backward"):
            loss.backward()
        with cap.phase("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)


def _case(name, path):
    """One capture compared with the oracle, run in a fresh process (see oracle()): the
    legacy profiler's numbers for a later capture in a process that already ran several can
    be wrong (tools/cpu_matrix.py records every point in its own process for that reason)."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    if name == "inside":
        with headroom_cpu.capture(path, micro_batch=16, seq=32, model="tiny-mlp") as cap:
            model = _tiny_model()
            opt = torch.optim.AdamW(model.parameters())
            for _ in range(2):
                _step(cap, model, opt)
    elif name == "prebuilt":
        model = _tiny_model()
        opt = torch.optim.AdamW(model.parameters())
        with headroom_cpu.capture(path + ".warm", oracle=False) as warm:
            _step(warm, model, opt)
        with headroom_cpu.capture(path, model=model, optimizer=opt) as cap:
            _step(cap, model, opt)
    elif name == "to-bf16":
        with headroom_cpu.capture(path, precision="bf16") as cap:
            model = _tiny_model().to(torch.bfloat16)
    return {"recorded": cap.recorded_peak_bytes, "oracle": cap.oracle_peak_bytes,
            "rounded": cap.recorded_peak_rounded_bytes}


class RoundSizeTest(unittest.TestCase):
    def test_cuda_rounding(self):
        self.assertEqual(headroom_cpu.round_size(0), 512)
        self.assertEqual(headroom_cpu.round_size(1), 512)
        self.assertEqual(headroom_cpu.round_size(512), 512)
        self.assertEqual(headroom_cpu.round_size(513), 1024)
        self.assertEqual(headroom_cpu.round_size(4000), 4096)

    def test_imports_without_torch(self):
        code = ("import sys; sys.modules['torch'] = None; sys.path.insert(0, %r)\n"
                "import headroom_cpu\n"
                "try:\n    headroom_cpu.capture('x.pickle')\nexcept ImportError:\n"
                "    print('import-error')\n" % PYDIR)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("import-error", out.stdout)


@needs_torch
class RecorderTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.threads = torch.get_num_threads()
        torch.set_num_threads(1)
        torch.manual_seed(0)

    def tearDown(self):
        torch.set_num_threads(self.threads)
        self.tmp.cleanup()

    def path(self, name="s.pickle"):
        return os.path.join(self.dir, name)

    def tiny_model(self):
        return _tiny_model()

    def step(self, cap, model, opt):
        _step(cap, model, opt)

    def record_tiny(self, path, iterations=2):
        with headroom_cpu.capture(path, micro_batch=16, seq=32, model="tiny-mlp") as cap:
            model = self.tiny_model()
            opt = torch.optim.AdamW(model.parameters())
            for _ in range(iterations):
                self.step(cap, model, opt)
        return cap

    def oracle(self, case):
        """Runs _case(case) in a fresh interpreter; returns its peaks and the file."""
        path = self.path(case + ".pickle")
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--case", case, path],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        res = json.loads(out.stdout.strip().splitlines()[-1])
        res["path"] = path
        return res

    def assertClose(self, res):
        diff = abs(res["recorded"] - res["oracle"]) / res["oracle"]
        self.assertLess(diff, 0.01, res)

    # ------------------------------------------------------------------ peaks
    def test_recorded_peak_matches_oracle(self):
        res = self.oracle("inside")
        self.assertGreater(res["oracle"], 0)
        self.assertClose(res)

    def test_replay_peak_equals_rounded_recorded_peak(self):
        path = self.path()
        cap = self.record_tiny(path)
        out = subprocess.run([sys.executable, REPLAY, path], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        dev = json.loads(out.stdout)["devices"][0]
        self.assertEqual(dev["peak_allocated_bytes"], cap.recorded_peak_rounded_bytes)
        self.assertGreaterEqual(cap.recorded_peak_rounded_bytes, cap.recorded_peak_bytes)

    def test_prebuilt_model_and_optimizer_are_alive_before_the_trace(self):
        res = self.oracle("prebuilt")
        self.assertClose(res)
        snap = load_plain(res["path"])
        trace = snap["device_traces"][0]
        pre = [e for e in trace
               if e["frames"] and e["frames"][0]["filename"] == "<before capture>"]
        n_params = 4  # two Linear layers
        # parameters and AdamW's exp_avg, exp_avg_sq and step per parameter
        self.assertEqual(len(pre), 4 * n_params)
        self.assertEqual(trace[:len(pre)], pre)
        names = [e["frames"][0]["name"] for e in pre]
        self.assertIn("parameter 0.weight", names)
        self.assertIn("optimizer state exp_avg of 0.weight", names)
        cfg = snap["headroom_config"]
        self.assertEqual(cfg["model"], "Sequential")
        self.assertEqual(cfg["optimizer"], "adamw")
        params = 4 * (32 * 128 + 128 + 128 * 32 + 32)
        self.assertGreaterEqual(cfg["before_capture_bytes"], 3 * params)
        self.assertEqual(cfg["found_mid_step_allocations"], 0)

    def test_model_to_bf16_inside_the_block(self):
        # Module.to(dtype) swaps storages with `param.data = ...`
        res = self.oracle("to-bf16")
        self.assertEqual(res["recorded"], res["oracle"])
        cfg = load_plain(res["path"])["headroom_config"]
        self.assertEqual(cfg["live_bytes_at_end"], 2 * (32 * 128 + 128 + 128 * 32 + 32))

    # ------------------------------------------------------------------ storages
    def test_views_share_one_allocation(self):
        path = self.path()
        with headroom_cpu.capture(path, oracle=False):
            x = torch.empty(1000)
            v = x.view(10, 100)
            w = x[5:]
            t = v.t()
            del x, v
            mid = None
            del w
        del t  # after the block: not recorded
        trace = load_plain(path)["device_traces"][0]
        self.assertEqual([e["action"] for e in trace], ["alloc"])
        self.assertEqual(trace[0]["size"], 4096)  # 4000 bytes, rounded
        self.assertIsNone(mid)

    def test_storage_freed_when_the_last_view_dies(self):
        path = self.path()
        with headroom_cpu.capture(path, oracle=False):
            x = torch.empty(1000)
            v = x.view(10, 100)
            del x
            torch.empty(1)  # a marker allocation between the two deletions
            del v
        actions = [(e["action"], e["size"]) for e in load_plain(path)["device_traces"][0]]
        self.assertEqual(actions, [("alloc", 4096), ("alloc", 512), ("free_requested", 512),
                                   ("free_completed", 512), ("free_requested", 4096),
                                   ("free_completed", 4096)])

    def test_saved_output_lives_as_long_as_the_graph(self):
        path = self.path()
        with headroom_cpu.capture(path, oracle=False):
            x = torch.randn(1000, requires_grad=True)
            y = torch.sigmoid(x)  # sigmoid saves its output for backward
            z = (y * 2).sum()
            del y
            torch.empty(1)  # marker: y's storage must still be alive here
            del z  # frees the graph, and with it the saved output
        trace = load_plain(path)["device_traces"][0]
        marker = next(i for i, e in enumerate(trace) if e["action"] == "alloc" and e["size"] == 512
                      and i > 1)
        sig_addr = trace[1]["addr"]
        frees = [i for i, e in enumerate(trace) if e["action"] == "free_completed"
                 and e["addr"] == sig_addr]
        self.assertEqual(len(frees), 1)
        self.assertGreater(frees[0], marker)

    def test_zero_byte_storages_are_not_allocations(self):
        path = self.path()
        with headroom_cpu.capture(path, oracle=False):
            e = torch.empty(0)
            f = e.view(0, 3)
            del e, f
        self.assertEqual(load_plain(path)["device_traces"][0], [])

    # ------------------------------------------------------------------ the file
    def test_snapshot_is_plain_and_complete(self):
        path = self.path()
        cap = self.record_tiny(path)
        snap = load_plain(path)  # no globals: plain types only
        self.assertTrue(only_plain(snap))
        self.assertEqual(list(snap)[:4], ["segments", "device_traces", "allocator_settings",
                                          "external_annotations"])
        self.assertEqual(snap["segments"], [])
        self.assertEqual(len(snap["device_traces"]), 1)
        with open(path, "rb") as f:
            self.assertEqual(f.read(2), b"\x80\x04")  # protocol 4
        cfg = snap["headroom_config"]
        for key, value in (("micro_batch", 16), ("seq", 32), ("precision", "fp32"),
                           ("optimizer", "adamw"), ("checkpoint", "none"), ("accum", 1),
                           ("devices", 1), ("iterations", 2), ("model", "tiny-mlp"),
                           ("recorder", "headroom_cpu"), ("torch_version", str(torch.__version__))):
            self.assertEqual(cfg[key], value, key)
        self.assertEqual(cfg["oracle_peak_bytes"], cap.oracle_peak_bytes)
        self.assertEqual(cfg["recorded_peak_bytes"], cap.recorded_peak_bytes)
        self.assertNotIn("incomplete", cfg)
        # replay oracle loads it with its own restricted unpickler
        replay = replay_module()
        dev = replay.summarize(replay.load_file(path))["devices"][0]
        self.assertEqual(dev["peak_allocated_bytes"], cap.recorded_peak_rounded_bytes)

    def test_trace_entries_and_frames(self):
        path = self.path()
        self.record_tiny(path, iterations=1)
        snap = load_plain(path)
        trace = snap["device_traces"][0]
        times = [e["time_us"] for e in trace]
        self.assertEqual(times, sorted(times))
        for i, e in enumerate(trace):
            self.assertEqual(set(e), {"action", "addr", "size", "stream", "time_us", "frames"})
            self.assertEqual(e["size"] % 512, 0)
            if e["action"] == "free_requested":  # always followed by its completion
                nxt = trace[i + 1]
                self.assertEqual((nxt["action"], nxt["addr"], nxt["size"]),
                                 ("free_completed", e["addr"], e["size"]))
            for fr in e["frames"]:
                self.assertEqual(set(fr), {"filename", "line", "name"})
                self.assertNotEqual(os.path.basename(fr["filename"]), "headroom_cpu.py")
        # innermost first: the first alloc of the model (nn.Linear) ends in this file
        first = trace[0]["frames"]
        self.assertIn("torch/nn/", first[0]["filename"].replace(os.sep, "/"))
        self.assertTrue(any(fr["filename"] == os.path.abspath(__file__) or
                            fr["filename"].endswith("test_headroom_cpu.py") for fr in first))
        # interned: equal stacks are one list object
        lists = [id(e["frames"]) for e in trace if e["frames"]]
        self.assertLess(len(set(lists)), len(lists))

    def test_phase_and_iteration_annotations(self):
        path = self.path()
        self.record_tiny(path, iterations=2)
        ann = load_plain(path)["external_annotations"]
        names = [(a["name"], a["stage"]) for a in ann]
        self.assertEqual(names[:10], [
            ("headroom.iteration#0", "START"),
            ("## forward ##", "START"), ("## forward ##", "END"),
            ("## loss ##", "START"), ("## loss ##", "END"),
            ("## backward ##", "START"), ("## backward ##", "END"),
            ("## optimizer ##", "START"), ("## optimizer ##", "END"),
            ("headroom.iteration#0", "END")])
        self.assertEqual(names[10], ("headroom.iteration#1", "START"))
        self.assertTrue(all(a["device"] == 0 for a in ann))
        times = [a["time_us"] for a in ann]
        self.assertEqual(len(set(times)), len(times))  # no two markers share a microsecond
        self.assertEqual(times, sorted(times))

    def test_bad_phase_name(self):
        cap = headroom_cpu.Capture(self.path(), oracle=False)
        with self.assertRaises(ValueError):
            with cap.phase("warmup"):
                pass

    # ------------------------------------------------------------------ bad input
    def test_step_that_raises_writes_an_incomplete_file(self):
        path = self.path()
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            with self.assertRaises(ZeroDivisionError):
                with headroom_cpu.capture(path) as cap:
                    keep = torch.empty(1000)
                    1 / 0
        self.assertIn("incomplete", err.getvalue())
        self.assertIn(path, err.getvalue())
        snap = load_plain(path)
        self.assertTrue(snap["headroom_config"]["incomplete"])
        self.assertIn("ZeroDivisionError", snap["headroom_config"]["error"])
        self.assertEqual([e["action"] for e in snap["device_traces"][0]], ["alloc"])
        self.assertTrue(cap.incomplete)
        self.assertEqual(os.listdir(self.dir), ["s.pickle"])  # no temporary file left
        del keep

    def test_write_is_atomic(self):
        path = self.path()
        with open(path, "wb") as f:
            f.write(b"previous")
        with mock.patch.object(headroom_cpu.pickle, "dump", side_effect=OSError("disk full")):
            with self.assertRaises(OSError):
                with headroom_cpu.capture(path, oracle=False):
                    torch.empty(10)
        with open(path, "rb") as f:
            self.assertEqual(f.read(), b"previous")
        self.assertEqual(os.listdir(self.dir), ["s.pickle"])

    def test_cuda_model_is_refused_with_a_pointer_to_the_gpu_helper(self):
        model = self.tiny_model()
        fake = property(lambda t: getattr(t, "_fake_cuda", False))
        model[0].weight._fake_cuda = True
        with mock.patch.object(torch.Tensor, "is_cuda", fake, create=True):
            with self.assertRaises(headroom_cpu.HeadroomCpuError) as ctx:
                with headroom_cpu.capture(self.path(), model=model):
                    pass
        self.assertIn("python/headroom_record.py", str(ctx.exception))
        self.assertIn("CUDA", str(ctx.exception))
        self.assertFalse(os.path.exists(self.path()))
        self.assertIsNone(headroom_cpu._ACTIVE[0])

    def test_cuda_tensor_in_the_step_stops_it_and_writes_what_was_recorded(self):
        path = self.path()
        x = torch.ones(4)
        x._fake_cuda = True
        fake = property(lambda t: getattr(t, "_fake_cuda", False))
        err = io.StringIO()
        with mock.patch.object(torch.Tensor, "is_cuda", fake, create=True), \
                contextlib.redirect_stderr(err):
            with self.assertRaises(headroom_cpu.HeadroomCpuError) as ctx:
                with headroom_cpu.capture(path, oracle=False):
                    a = torch.empty(100)
                    x.add_(1)  # a CUDA tensor reaches an op
        self.assertIn("python/headroom_record.py", str(ctx.exception))
        self.assertTrue(load_plain(path)["headroom_config"]["incomplete"])
        del a

    def test_no_nested_captures(self):
        with headroom_cpu.capture(self.path(), oracle=False):
            with self.assertRaises(headroom_cpu.HeadroomCpuError):
                with headroom_cpu.capture(self.path("inner.pickle"), oracle=False):
                    pass
        self.assertIsNone(headroom_cpu._ACTIVE[0])

    def test_patches_are_undone(self):
        with headroom_cpu.capture(self.path(), oracle=False):
            torch.nn.Parameter(torch.empty(3))
        self.assertNotIn("_make_subclass", torch.Tensor.__dict__)
        self.assertNotIn("data", torch.Tensor.__dict__)
        self.assertEqual(torch.get_rng_state.__module__, "torch.random")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--case":
        print(json.dumps(_case(sys.argv[2], sys.argv[3])))
    else:
        unittest.main()
