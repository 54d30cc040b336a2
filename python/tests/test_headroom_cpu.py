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


# headroom_tensor's keys of the op graph: the op, its inputs, what autograd saved
GRAPH_KEYS = {"op", "inputs", "saves", "casts", "dtype_arg"}

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


class _RecordingCase(unittest.TestCase):
    """A temporary directory, one thread and a fixed seed for each test that records."""

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


@needs_torch
class RecorderTest(_RecordingCase):

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
            keys = {"action", "addr", "size", "stream", "time_us", "frames"}
            if e["action"] == "alloc":  # shapes are on by default
                keys.add("headroom_tensor")
            self.assertEqual(set(e), keys)
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
        before = (torch.nn.Module.register_buffer, torch.optim.Optimizer.__init__,
                  torch.autograd.backward)
        with headroom_cpu.capture(self.path(), oracle=False):
            torch.nn.Parameter(torch.empty(3))
            self.assertNotEqual(torch.autograd.backward, before[2])  # followed for the truth
        self.assertNotIn("_make_subclass", torch.Tensor.__dict__)
        self.assertNotIn("data", torch.Tensor.__dict__)
        self.assertEqual(torch.get_rng_state.__module__, "torch.random")
        self.assertEqual((torch.nn.Module.register_buffer, torch.optim.Optimizer.__init__,
                          torch.autograd.backward), before)


@needs_torch
class TruthTest(_RecordingCase):
    """headroom_truth: the recorder's own category and phase of every allocation."""

    def record(self, path, truth=True, set_to_none=True):
        """Two AdamW steps of a tiny MLP; returns what the step saw, by address."""
        seen = {"grad": [], "saved": [], "temp": [], "input": []}
        with headroom_cpu.capture(path, oracle=False, truth=truth) as cap:
            model = _tiny_model()  # Linear, GELU, Linear, Sigmoid: sigmoid saves its output
            opt = torch.optim.AdamW(model.parameters())
            for _ in range(2):
                with cap.iteration():
                    x = cap.inputs(torch.randn(16, 32))
                    seen["input"].append(x.data_ptr())
                    with cap.phase("forward"):
                        y = model(x)
                        seen["saved"].append(y.data_ptr())
                    with cap.phase("loss"):
                        sq = y * y  # freed in the loss phase: a temporary
                        seen["temp"].append(sq.data_ptr())
                        loss = sq.mean()
                        del sq
                    with cap.phase("backward"):
                        loss.backward()
                    seen["grad"].append([p.grad.data_ptr() for p in model.parameters()])
                    with cap.phase("optimizer"):
                        opt.step()
                        opt.zero_grad(set_to_none=set_to_none)
                    del x, y, loss
        seen["param"] = [p.data_ptr() for p in model.parameters()]
        seen["state"] = [v.data_ptr() for st in opt.state.values() for v in st.values()]
        return load_plain(path), seen

    @staticmethod
    def truth_by_addr(snap):
        """addr -> [(time_us, category, phase)] of its allocations, in trace order."""
        allocs = [e for e in snap["device_traces"][0] if e["action"] == "alloc"]
        rows = snap["headroom_truth"]["allocations"]
        out = {}
        for e, r in zip(allocs, rows):
            out.setdefault(e["addr"], []).append(tuple(r))
        return out

    def test_one_row_per_alloc_entry_keyed_by_time(self):
        snap, _ = self.record(self.path())
        truth = snap["headroom_truth"]
        self.assertEqual(truth["version"], headroom_cpu.TRUTH_VERSION)
        allocs = [e for e in snap["device_traces"][0] if e["action"] == "alloc"]
        rows = truth["allocations"]
        self.assertEqual([r[0] for r in rows], [e["time_us"] for e in allocs])
        times = [e["time_us"] for e in snap["device_traces"][0]]
        self.assertEqual(len(set(times)), len(times))  # a unique key
        for t, cat, phase in rows:
            self.assertIsInstance(t, int)
            self.assertIn(cat, headroom_cpu.TRUTH_CATEGORIES)
            self.assertIn(phase, ("setup", "forward", "loss", "backward", "optimizer", "other"))
        self.assertTrue(only_plain(snap))

    def test_categories_and_phases(self):
        snap, seen = self.record(self.path())
        by_addr = self.truth_by_addr(snap)
        for a in seen["param"]:
            self.assertEqual(by_addr[a][0][1:], ("parameter", "setup"))
        for a in seen["state"]:  # exp_avg, exp_avg_sq and step, made in the first step
            self.assertIn(("optimizer_state", "optimizer"), [r[1:] for r in by_addr[a]])
        self.assertEqual(len(seen["state"]), 3 * 4)
        ann = snap["external_annotations"]
        opt_starts = [a["time_us"] for a in ann
                      if a["name"] == "## optimizer ##" and a["stage"] == "START"]
        fwd_starts = [a["time_us"] for a in ann
                      if a["name"] == "## forward ##" and a["stage"] == "START"]
        fwd_ends = [a["time_us"] for a in ann
                    if a["name"] == "## forward ##" and a["stage"] == "END"]
        loss_ends = [a["time_us"] for a in ann
                     if a["name"] == "## loss ##" and a["stage"] == "END"]

        def born_before(addr, t):
            return [r for r in by_addr[addr] if r[0] < t][-1]
        for it in range(2):
            # zero_grad(set_to_none=True) frees them: labelled when they became .grad
            for a in seen["grad"][it]:
                self.assertEqual(born_before(a, opt_starts[it])[1:], ("gradient", "backward"))
            self.assertEqual(born_before(seen["saved"][it], fwd_ends[it])[1:],
                             ("activation", "forward"))
            self.assertEqual(born_before(seen["temp"][it], loss_ends[it])[1:],
                             ("temporary", "loss"))
            self.assertEqual(born_before(seen["input"][it], fwd_starts[it])[1:],
                             ("input", "setup"))
        cats = {r[1] for rows in by_addr.values() for r in rows}
        self.assertNotIn("unknown", cats)

    def test_gradients_kept_by_zero_grad_set_to_none_false(self):
        snap, seen = self.record(self.path(), set_to_none=False)
        by_addr = self.truth_by_addr(snap)
        self.assertEqual(seen["grad"][0], seen["grad"][1])  # zeroed in place, never freed
        for a in seen["grad"][0]:
            self.assertEqual(by_addr[a][-1][1:], ("gradient", "backward"))

    def test_truth_changes_nothing_else(self):
        torch.manual_seed(0)
        on, _ = self.record(self.path("on.pickle"))
        torch.manual_seed(0)
        off, _ = self.record(self.path("off.pickle"), truth=False)
        self.assertNotIn("headroom_truth", off)

        def shape(snap):
            return [(e["action"], e["size"], [(f["filename"], f["name"]) for f in e["frames"]])
                    for e in snap["device_traces"][0]]
        self.assertEqual(shape(on), shape(off))
        self.assertEqual([(a["name"], a["stage"]) for a in on["external_annotations"]],
                         [(a["name"], a["stage"]) for a in off["external_annotations"]])
        for key in ("recorded_peak_bytes", "recorded_peak_rounded_bytes", "allocations"):
            self.assertEqual(on["headroom_config"][key], off["headroom_config"][key], key)

    def test_buffers_and_models_built_before_the_block(self):
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8))
        opt = torch.optim.Adam(model.parameters())
        model(torch.randn(4, 8)).sum().backward()
        opt.step()
        path = self.path()
        with headroom_cpu.capture(path, model=model, optimizer=opt, oracle=False) as cap:
            with cap.phase("forward"):
                out = model(torch.randn(4, 8))
            del out
        snap = load_plain(path)
        trace = snap["device_traces"][0]
        pre = [e for e in trace if e["frames"][0]["filename"] == "<before capture>"]
        rows = snap["headroom_truth"]["allocations"][:len(pre)]
        self.assertEqual([r[0] for r in rows], [e["time_us"] for e in pre])
        self.assertEqual(len({e["time_us"] for e in pre}), len(pre))
        want = {"parameter": "parameter", "buffer": "parameter", "gradient": "gradient",
                "optimizer": "optimizer_state"}
        for e, r in zip(pre, rows):
            self.assertEqual(r[1], want[e["frames"][0]["name"].split()[0]], e["frames"][0])
            self.assertEqual(r[2], "other")  # born before the block: phase unknown
        names = {e["frames"][0]["name"] for e in pre}
        self.assertIn("buffer 1.running_mean", names)

    def test_buffers_registered_in_the_block(self):
        path = self.path()
        with headroom_cpu.capture(path, oracle=False):
            bn = torch.nn.BatchNorm1d(16)
        snap = load_plain(path)
        cats = [r[1] for r in snap["headroom_truth"]["allocations"]]
        # weight, bias, running_mean, running_var, num_batches_tracked
        self.assertEqual(cats, ["parameter"] * 5)
        del bn


class _Layer(torch.nn.Module if TORCH else object):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 16)
        self.act = torch.nn.GELU()
        self.out = torch.nn.Linear(16, 8)
        self.helpers = [torch.nn.Tanh()]  # a plain list: not registered, no qualified name

    def forward(self, x):
        return self.out(self.helpers[0](self.act(self.fc(x))))


class _Net(torch.nn.Module if TORCH else object):
    """Qualified names: blocks.0.fc, blocks.1.act, ...; a buffer; [b, s, 8] in and out."""

    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([_Layer(), _Layer()])
        self.register_buffer("scale", torch.ones(8))

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x * self.scale


@needs_torch
class TensorKeysTest(_RecordingCase):
    """headroom_tensor on alloc entries: shape, dtype, dims, module, kind, phase."""
    B, S = 3, 5

    def record(self, path, b=B, s=S, iterations=2, stated=True, **kw):
        """Records the model on [b, s, 8] batches; ``stated``: micro_batch=b and seq=s are
        given to the capture."""
        seen = {"grad": [], "state": [], "input": [], "fc_out": []}
        mb, seq = (b, s) if stated else (None, None)
        with headroom_cpu.capture(path, micro_batch=mb, seq=seq, oracle=False, **kw) as cap:
            model = _Net()
            opt = torch.optim.AdamW(model.parameters())
            loss_fn = torch.nn.MSELoss()  # a module outside the model
            hook = model.blocks[1].fc.register_forward_hook(
                lambda m, a, out: seen["fc_out"].append(out.data_ptr()))
            for _ in range(iterations):
                with cap.iteration():
                    x, y = cap.inputs(torch.randn(b, s, 8), torch.randn(b, s, 8))
                    seen["input"].append(x.data_ptr())
                    with cap.phase("forward"):
                        out = model(x)
                    with cap.phase("loss"):
                        loss = loss_fn(out, y)
                    with cap.phase("backward"):
                        loss.backward()
                    seen["grad"].append({n: p.grad.data_ptr()
                                         for n, p in model.named_parameters()})
                    with cap.phase("optimizer"):
                        opt.step()
                        opt.zero_grad(set_to_none=True)
                    seen["state"].append([v.data_ptr() for st in opt.state.values()
                                          for v in st.values() if v.dim() > 0])
                    del x, y, out, loss
            hook.remove()
        seen["param"] = {n: p.data_ptr() for n, p in model.named_parameters()}
        seen["buffer"] = model.scale.data_ptr()
        self.model = model
        return load_plain(path), seen

    @staticmethod
    def allocs(snap):
        return [e for e in snap["device_traces"][0] if e["action"] == "alloc"]

    def keys_at(self, snap, addr):
        """headroom_tensor of every alloc entry at ``addr``, in trace order, without the op
        graph's keys (test_op_inputs_and_saves looks at those)."""
        return [{k: v for k, v in e["headroom_tensor"].items() if k not in GRAPH_KEYS}
                for e in self.allocs(snap) if e["addr"] == addr]

    def test_every_alloc_entry_is_keyed_and_plain(self):
        snap, _ = self.record(self.path())
        self.assertEqual(snap["headroom_tensor_keys"], 1)
        self.assertEqual(headroom_cpu.TENSOR_KEYS_VERSION, 1)
        self.assertTrue(only_plain(snap))
        allocs = self.allocs(snap)
        self.assertGreater(len(allocs), 50)
        for e in allocs:
            k = e["headroom_tensor"]
            self.assertEqual(set(k) - {"like"} - GRAPH_KEYS,
                             {"shape", "dtype", "dims", "module", "kind", "phase"})
            self.assertTrue(all(isinstance(n, int) and n > 0 for n in k.get("like", [1])))
            self.assertTrue(isinstance(k.get("op", ""), str))
            self.assertTrue(all(isinstance(n, int) and n > 0 for n in k.get("inputs", [])))
            self.assertTrue(all(isinstance(n, int) for n in k.get("saves", [])))
            self.assertEqual(set(k["dims"]), {"batch", "seq"})
            self.assertIn(k["kind"], headroom_cpu.TENSOR_KINDS)
            self.assertIn(k["phase"], ("forward", "backward", "optimizer", None))
            self.assertTrue(k["module"] is None or isinstance(k["module"], str))
            self.assertTrue(all(isinstance(n, int) for n in k["shape"]))
        for e in snap["device_traces"][0]:
            if e["action"] != "alloc":
                self.assertNotIn("headroom_tensor", e)

    def test_op_inputs_and_saves(self):
        """An mm's entry names its op and both inputs, and the input autograd keeps for the
        weight's gradient; an exp keeps its own result; a leaf's op has no inputs."""
        path = self.path()
        with headroom_cpu.capture(path, oracle=False) as cap:
            with cap.iteration():
                w = torch.randn(8, 8, requires_grad=True)
                x = torch.randn(4, 8)
                y = x @ w
                z = torch.exp(y)
                ptrs = [t.data_ptr() for t in (w, x, y, z)]
                del w, x, y, z
        trace = load_plain(path)["device_traces"][0]
        index = {e["addr"]: i for i, e in enumerate(trace) if e["action"] == "alloc" and
                 e["addr"] in ptrs}
        iw, ix, iy, iz = [index[p] for p in ptrs]
        keys = [trace[i]["headroom_tensor"] for i in (iw, ix, iy, iz)]
        self.assertEqual(keys[0]["op"], "aten::randn")
        self.assertEqual(keys[0]["inputs"], [])
        self.assertEqual(keys[2]["op"], "aten::mm")
        self.assertEqual(keys[2]["inputs"], [iy - ix, iy - iw])
        self.assertIn(iy - ix, keys[2]["saves"])
        self.assertEqual(keys[3]["op"], "aten::exp")
        self.assertEqual(keys[3]["inputs"], [iz - iy])
        self.assertEqual(keys[3]["saves"], [0])
        self.assertNotIn("saves", keys[1])

    def test_no_op_casts_and_dtype_arguments(self):
        """Casts that are no-ops in fp32 are named on the ops that take their results: a
        literal dtype, or the entry whose dtype they follow (read from the bytecode and the
        .dtype reads of the frame), with the bytes of the slice cast; a dtype= argument is
        named on the op it made."""
        path = self.path()
        with headroom_cpu.capture(path, oracle=False) as cap:
            with cap.iteration():
                x = torch.randn(4, 8)
                table = torch.randn(16, 8)
                dtype = x.dtype
                h = x.to(torch.float32)
                p = h.pow(2)
                q = (p * 2).to(dtype) + 1
                c = x * table[:4].to(x.dtype)
                s = torch.softmax(x, dim=-1, dtype=torch.float)
                z = torch.zeros(4, 8, dtype=x.dtype)
                ptrs = [t.data_ptr() for t in (x, table, p, q, c, s, z)]
                del x, table, h, p, q, c, s, z
        trace = load_plain(path)["device_traces"][0]
        index = {e["addr"]: i for i, e in enumerate(trace) if e["action"] == "alloc" and
                 e["addr"] in ptrs}
        ix, it, ip, iq, ic, i_s, iz = [index[a] for a in ptrs]
        keys = {i: trace[i]["headroom_tensor"] for i in (ip, iq, ic, i_s, iz)}
        self.assertEqual(keys[ip]["casts"], [[ip - ix, "float32", 4 * 8 * 4]])
        # (p * 2).to(dtype) + 1: the add takes the mul's result through the cast, like x
        im = next(i for i in range(ip + 1, iq) if trace[i]["action"] == "alloc" and
                  trace[i]["headroom_tensor"]["op"] == "aten::mul")
        self.assertEqual(keys[iq]["op"], "aten::add")
        self.assertEqual(keys[iq]["casts"], [[iq - im, iq - ix, 4 * 8 * 4]])
        self.assertEqual(keys[ic]["casts"], [[ic - it, ic - ix, 4 * 8 * 4]])
        self.assertEqual(keys[i_s]["dtype_arg"], "float32")
        self.assertEqual(keys[iz]["dtype_arg"], iz - ix)
        self.assertEqual(keys[iz]["op"], "aten::zeros")

    def test_a_cast_of_a_leaf_is_left_as_it_was(self):
        """x.float() of a leaf that requires grad returns x itself, so that writing it in
        place works as without the recorder."""
        with headroom_cpu.capture(self.path(), oracle=False) as cap:
            with cap.iteration():
                x = torch.randn(4, requires_grad=True)
                self.assertIs(x.float(), x)
                with torch.no_grad():
                    x.float().mul_(2)
                y = torch.randn(4)
                self.assertIsNot(y.float(), y)  # an alias: the ops that take it are told apart
                self.assertEqual(y.float().data_ptr(), y.data_ptr())

    def test_like_joins_shape_preserving_ops_only(self):
        """An exp and a mul of the exact shape are joined to their input; a matmul whose
        output has the same shape is not (its shape comes from other dimensions)."""
        path = self.path()
        with headroom_cpu.capture(path, micro_batch=2, seq=8, oracle=False) as cap:
            with cap.iteration():
                a = torch.randn(8, 8)
                b = torch.exp(a)
                c = b.mul(3.0)
                d = a @ b
                ptrs = [t.data_ptr() for t in (a, b, c, d)]
                del a, b, c, d
        trace = load_plain(path)["device_traces"][0]
        index = {e["addr"]: i for i, e in enumerate(trace) if e["action"] == "alloc" and
                 e["addr"] in ptrs}
        at = [index[p] for p in ptrs]
        like = [trace[i]["headroom_tensor"].get("like") for i in at]
        self.assertEqual(like[1], [at[1] - at[0]])
        self.assertEqual(like[2], [at[2] - at[1]])
        self.assertIsNone(like[3])

    def test_every_shape_matches_its_allocation(self):
        snap, _ = self.record(self.path())
        item = {"float32": 4, "int64": 8, "bool": 1}
        for e in self.allocs(snap):
            k = e["headroom_tensor"]
            n = 1
            for d in k["shape"]:
                n *= d
            self.assertEqual(headroom_cpu.round_size(n * item[k["dtype"]]), e["size"], k)

    def test_a_linear_layers_output(self):
        snap, seen = self.record(self.path())
        self.assertEqual(len(seen["fc_out"]), 2)
        for addr in seen["fc_out"]:
            # addmm made it as [b*s, 16]; the module returned the [b, s, 16] view of it
            k = [k for k in self.keys_at(snap, addr) if k["module"] == "blocks.1.fc"][-1]
            self.assertEqual(k, {"shape": [3, 5, 16], "dtype": "float32",
                                 "dims": {"batch": [0], "seq": [1]}, "module": "blocks.1.fc",
                                 "kind": "activation", "phase": "forward"})
        mods = {e["headroom_tensor"]["module"] for e in self.allocs(snap)}
        for name in ("blocks.0.fc", "blocks.0.act", "blocks.0.out", "blocks.1.fc",
                     "blocks.1.act", "blocks.1.out", ""):
            self.assertIn(name, mods)
        # the Tanh in a plain list has no qualified name: its layer's name stands
        self.assertNotIn("blocks.0.helpers.0", mods)
        # x * scale in the root's forward
        root = [e["headroom_tensor"] for e in self.allocs(snap)
                if e["headroom_tensor"]["module"] == ""]
        self.assertIn([3, 5, 8], [k["shape"] for k in root])

    def test_parameters_buffers_gradients_state_and_inputs(self):
        snap, seen = self.record(self.path())
        w = self.keys_at(snap, seen["param"]["blocks.0.fc.weight"])[0]
        self.assertEqual(w, {"shape": [16, 8], "dtype": "float32",
                             "dims": {"batch": [], "seq": []}, "module": None,
                             "kind": "parameter", "phase": None})
        self.assertEqual(self.keys_at(snap, seen["buffer"])[0]["kind"], "buffer")
        self.assertEqual(self.keys_at(snap, seen["buffer"])[0]["shape"], [8])
        for it in range(2):
            g = self.keys_at(snap, seen["grad"][it]["blocks.0.fc.weight"])
            self.assertIn({"shape": [16, 8], "dtype": "float32",
                           "dims": {"batch": [], "seq": []}, "module": None,
                           "kind": "gradient", "phase": "backward"}, g)
            x = self.keys_at(snap, seen["input"][it])
            self.assertIn({"shape": [3, 5, 8], "dtype": "float32",
                           "dims": {"batch": [0], "seq": [1]}, "module": None,
                           "kind": "input", "phase": None}, x)  # made outside every window
        for addr in seen["state"][0]:
            self.assertIn("optimizer_state", [k["kind"] for k in self.keys_at(snap, addr)])
            self.assertIn("optimizer", [k["phase"] for k in self.keys_at(snap, addr)])

    def test_loss_module_outside_the_model(self):
        snap, _ = self.record(self.path())
        loss = [e["headroom_tensor"] for e in self.allocs(snap)
                if e["headroom_tensor"]["module"] == "<MSELoss>"]
        self.assertTrue(loss)
        self.assertEqual({k["phase"] for k in loss}, {None})  # the loss window: none of three

    def test_backward_and_optimizer_run_in_no_module(self):
        snap, _ = self.record(self.path())
        for e in self.allocs(snap):
            k = e["headroom_tensor"]
            if k["phase"] in ("backward", "optimizer"):
                self.assertIsNone(k["module"], k)
            if k["module"] is not None:
                self.assertIn(k["phase"], ("forward", None))

    def test_every_matching_dimension_is_listed(self):
        snap, _ = self.record(self.path(), b=4, s=4, iterations=1)
        x = [e["headroom_tensor"] for e in self.allocs(snap)
             if e["headroom_tensor"]["kind"] == "input"][0]
        self.assertEqual(x["shape"], [4, 4, 8])
        self.assertEqual(x["dims"], {"batch": [0, 1], "seq": [0, 1]})
        snap, _ = self.record(self.path("none.pickle"), iterations=1, stated=False)
        for e in self.allocs(snap):
            self.assertEqual(e["headroom_tensor"]["dims"], {"batch": [], "seq": []})

    def test_kinds_agree_with_the_truth(self):
        snap, _ = self.record(self.path())
        rows = snap["headroom_truth"]["allocations"]
        allocs = self.allocs(snap)
        self.assertEqual(len(rows), len(allocs))
        for e, (t, cat, phase) in zip(allocs, rows):
            k = e["headroom_tensor"]["kind"]
            self.assertEqual(t, e["time_us"])
            if k == "buffer":
                self.assertEqual(cat, "parameter")
            elif k == "activation":  # also a module's output the truth calls temporary
                self.assertIn(cat, ("activation", "temporary"))
            else:
                self.assertEqual(k, cat)

    def test_shapes_off_changes_nothing_else(self):
        torch.manual_seed(0)
        on, _ = self.record(self.path("on.pickle"))
        torch.manual_seed(0)
        off, _ = self.record(self.path("off.pickle"), shapes=False)
        with mock.patch.dict(os.environ, {"HEADROOM_SHAPES": "0"}):
            torch.manual_seed(0)
            env, _ = self.record(self.path("env.pickle"))
        torch.manual_seed(0)
        no_truth, _ = self.record(self.path("no-truth.pickle"), truth=False)
        for snap in (off, env):
            self.assertNotIn("headroom_tensor_keys", snap)
            self.assertFalse(snap["headroom_config"]["shapes"])
            self.assertFalse(any("headroom_tensor" in e for e in snap["device_traces"][0]))
        self.assertTrue(on["headroom_config"]["shapes"])
        self.assertNotIn("headroom_truth", no_truth)  # the keys stay without the truth

        def shape(snap):
            return [(e["action"], e["size"], [(f["filename"], f["name"]) for f in e["frames"]])
                    for e in snap["device_traces"][0]]
        for snap in (off, env, no_truth):
            self.assertEqual(shape(on), shape(snap))
            for key in ("recorded_peak_bytes", "recorded_peak_rounded_bytes", "allocations"):
                self.assertEqual(on["headroom_config"][key], snap["headroom_config"][key], key)
        cats = [r[1:] for r in on["headroom_truth"]["allocations"]]
        for snap in (off, env):
            self.assertEqual(cats, [r[1:] for r in snap["headroom_truth"]["allocations"]])
        self.assertEqual([e["headroom_tensor"] for e in self.allocs(on)],
                         [e["headroom_tensor"] for e in self.allocs(no_truth)])

    def test_model_built_before_the_block(self):
        model = _Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        model(torch.randn(3, 5, 8)).sum().backward()
        opt.step()
        path = self.path()
        with headroom_cpu.capture(path, model=model, optimizer=opt, micro_batch=3, seq=5,
                                  oracle=False) as cap:
            with cap.phase("forward"):
                out = model(torch.randn(3, 5, 8))
            del out
        snap = load_plain(path)
        pre = [e for e in self.allocs(snap) if e["frames"][0]["filename"] == "<before capture>"]
        want = {"parameter": "parameter", "buffer": "buffer", "gradient": "gradient",
                "optimizer": "optimizer_state"}
        for e in pre:
            k = e["headroom_tensor"]
            self.assertEqual(k["kind"], want[e["frames"][0]["name"].split()[0]])
            self.assertEqual((k["module"], k["phase"]), (None, None))
        mods = {e["headroom_tensor"]["module"] for e in self.allocs(snap)}
        self.assertIn("blocks.1.out", mods)  # named after the model= argument

    def test_the_cli_reads_the_file_with_the_same_peak(self):
        cli = os.path.join(ROOT, "build", "release", "app", "headroom-cli")
        if not os.path.exists(cli):
            self.skipTest("no %s" % cli)
        path = self.path()
        self.record(path, iterations=1)
        plain = self.path("plain.pickle")
        snap = load_plain(path)
        snap.pop("headroom_tensor_keys")
        for e in snap["device_traces"][0]:
            e.pop("headroom_tensor", None)
        with open(plain, "wb") as f:
            pickle.dump(snap, f, protocol=4)

        def peak(p):
            out = subprocess.run([cli, "summary", p, "--json"], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            return [d["peak_allocated_bytes"] for d in json.loads(out.stdout)["devices"]]
        self.assertEqual(peak(path), peak(plain))


class _NoRecordFunction(object):
    def __init__(self, name):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@needs_torch
class GpuJoinCrossCheckTest(_RecordingCase):
    """headroom_record's hooks (module calls, saved tensors, the model's inputs and
    outputs, parameters, gradients, optimizer state) and its join, run with real PyTorch
    on the CPU inside a CPU capture: the join of what its hooks saw to the capture's trace
    (real addresses, one clock) gives the capture's own module, kind and phase."""

    def test_the_join_agrees_with_the_cpu_recorder(self):
        import copy
        import threading
        import headroom_record as hr
        path = self.path()
        with headroom_cpu.capture(path, micro_batch=3, seq=5, oracle=False) as cap:
            rec = hr.Recorder(self.dir, micro_batch=3, seq=5, verbose=False)
            # as start() leaves it on a GPU; this one keeps CPU tensors
            rec._torch, rec.active, rec._thread = torch, True, threading.current_thread()
            rec._rf_cls, rec._wanted = _NoRecordFunction, lambda t: True
            with mock.patch.object(hr, "_now_us", cap._now):
                model = _Net()
                opt = torch.optim.AdamW(model.parameters())
                rec.attach(model, opt, phases=False)
                for _ in range(2):
                    with cap.iteration():
                        x, y = cap.inputs(torch.randn(3, 5, 8), torch.randn(3, 5, 8))
                        with cap.phase("forward"), rec.phase("forward"):
                            out = model(x)
                        with cap.phase("loss"), rec.phase("loss"):
                            loss = ((out - y) ** 2).mean()
                        with cap.phase("backward"), rec.phase("backward"):
                            loss.backward()
                        with cap.phase("optimizer"), rec.phase("optimizer"):
                            opt.step()
                            opt.zero_grad(set_to_none=True)
                        del x, y, out, loss
                rec._pop_saved_hooks()  # before the capture's own
        snap = load_plain(path)
        joined = copy.deepcopy(snap)
        joined.pop("headroom_tensor_keys")
        for e in joined["device_traces"][0]:
            e.pop("headroom_tensor", None)
        with mock.patch.object(hr, "_now_us", cap._now):
            stats = rec._join_into(joined)
        rec.active = False
        rec._remove_hooks()
        self.assertEqual(stats["by"], ["time_us"])
        self.assertEqual(stats["unjoined"], {"no_trace": 0, "no_alloc": 0, "freed_before": 0,
                                             "size": 0, "ambiguous": 0})
        self.assertEqual(stats["records"], stats["joined_records"])
        kinds = {}
        for a, b in zip(snap["device_traces"][0], joined["device_traces"][0]):
            if "headroom_tensor" not in b:
                continue
            want, got = a["headroom_tensor"], b["headroom_tensor"]
            for f in ("dtype", "module", "kind", "phase", "dims"):
                self.assertEqual(got[f], want[f], (f, want, got))
            if got["shape"] != want["shape"]:  # a bias's .grad [8] of sum's [1, 8]
                n = [1, 1]
                for i, sh in enumerate((got["shape"], want["shape"])):
                    for d in sh:
                        n[i] *= d
                self.assertEqual(n[0], n[1], (want, got))
            kinds[got["kind"]] = kinds.get(got["kind"], 0) + 1
        self.assertEqual(kinds["parameter"], 8)  # 2 layers x (2 Linear x weight, bias)
        self.assertEqual(kinds["buffer"], 1)
        self.assertEqual(kinds["gradient"], 16)
        self.assertEqual(kinds["optimizer_state"], 24)  # step, exp_avg, exp_avg_sq
        self.assertEqual(kinds["input"], 2)
        self.assertGreater(kinds["activation"], 10)
        mods = {e["headroom_tensor"]["module"] for e in joined["device_traces"][0]
                if "headroom_tensor" in e}
        self.assertIn("blocks.1.fc", mods)


@needs_torch
class LoopStylesTest(unittest.TestCase):
    """python/loop_styles.py: each style's markers, stacks and truth (the small convnet)."""

    @classmethod
    def setUpClass(cls):
        import loop_styles
        cls.styles = loop_styles
        cls.tmp = tempfile.TemporaryDirectory()
        cls.threads = torch.get_num_threads()
        torch.set_num_threads(1)
        cls.snaps = {}
        for style in loop_styles.STYLES:
            path = os.path.join(cls.tmp.name, style + ".pickle")
            loop_styles.run_style(path, "convnet", style, iterations=2)
            cls.snaps[style] = load_plain(path)

    @classmethod
    def tearDownClass(cls):
        torch.set_num_threads(cls.threads)
        cls.tmp.cleanup()

    def phases(self, style):
        return [(a["name"], a["stage"]) for a in self.snaps[style]["external_annotations"]
                if not a["name"].startswith("headroom.iteration#")]

    def allocs(self, style):
        snap = self.snaps[style]
        allocs = [e for e in snap["device_traces"][0] if e["action"] == "alloc"]
        return list(zip(allocs, snap["headroom_truth"]["allocations"]))

    def test_markers_at_the_true_positions(self):
        one = [("## %s ##" % p, st) for p in ("forward", "loss", "backward", "optimizer")
               for st in ("START", "END")]
        for style in ("plain", "closure", "keep_grads", "trainer", "scaler"):
            self.assertEqual(self.phases(style), one * 2, style)
        micro = one[:6] * 4 + one[6:]
        self.assertEqual(self.phases("accum"), micro * 2)
        for style, snap in self.snaps.items():
            cfg = snap["headroom_config"]
            self.assertEqual((cfg["loop_style"], cfg["family"], cfg["micro_batch"],
                              cfg["iterations"], cfg["optimizer"]),
                             (style, "convnet", 2, 2, "adamw"))
            self.assertEqual(cfg["accum"], 4 if style == "accum" else 1)
            iters = [a["name"] for a in snap["external_annotations"]
                     if a["name"].startswith("headroom.iteration#") and a["stage"] == "START"]
            self.assertEqual(iters, ["headroom.iteration#0", "headroom.iteration#1"])

    def test_every_style_has_every_category(self):
        for style in self.snaps:
            cats = {r[1] for _, r in self.allocs(style)}
            self.assertEqual(cats, {"parameter", "gradient", "optimizer_state", "input",
                                    "activation", "temporary"}, style)

    def names(self, e):
        return [f["name"] for f in e["frames"]]

    def test_closure_stacks_look_like_lightning(self):
        fwd = [e for e, r in self.allocs("closure") if r[2] == "forward"]
        self.assertTrue(fwd)
        for e in fwd:
            names = self.names(e)
            self.assertIn("training_step", names)
            self.assertIn("closure", names)
            self.assertIn("step", names)  # optimizer.step(closure)

    def test_trainer_callback_allocates_in_the_optimizer_phase(self):
        cb = [(e, r) for e, r in self.allocs("trainer")
              if "on_before_optimizer_step" in self.names(e)]
        self.assertTrue(cb)
        for e, r in cb:
            self.assertEqual(r[1:], ["temporary", "optimizer"])
            self.assertIn("_run_batch", self.names(e))
            self.assertIn("fit", self.names(e))

    def test_scaler_unscales_in_the_optimizer_phase(self):
        un = [r for e, r in self.allocs("scaler") if "unscale_" in self.names(e)]
        self.assertTrue(un)
        self.assertEqual({r[2] for r in un}, {"optimizer"})
        self.assertIn("emulation", self.styles.GradScaler.__doc__)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--case":
        print(json.dumps(_case(sys.argv[2], sys.argv[3])))
    else:
        unittest.main()
