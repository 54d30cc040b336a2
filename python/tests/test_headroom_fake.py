"""Tests of fake mode in python/headroom_cpu.py (``capture(..., fake=True)``, headroom_fake.py)
with real PyTorch on the CPU.

Run: /usr/bin/python3 -m unittest discover -s python/tests -p test_headroom_fake.py -v

A fake recording of a step is compared with a real recording of the same step: the
sequence of (size, action) of the alloc and free_completed entries of device_traces[0]
(and the same with the recorder's unrounded sizes), the peak of live bytes, and the keys
per alloc entry (headroom_tensor, headroom_truth, frames) and the annotations.

Frees with no allocation between them are compared as a sorted run: the order in which C++
drops a container of tensors (autocast's cast cache when an autocast block exits, a hash map
keyed by TensorImpl address) is not the same from one real run to the next either; it never
moves a peak.

Without an importable torch the tests skip with a message.
"""
import contextlib
import json
import os
import pickle
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)
ROOT = os.path.dirname(PYDIR)
REPLAY = os.path.join(ROOT, "tests", "tools", "snapshot_summary.py")
FAKE_7B = os.path.join(ROOT, "tools", "fake_7b.py")
sys.path.insert(0, PYDIR)

import headroom_cpu  # noqa: E402  (imports without torch)

try:
    import torch
    from torch._subclasses.fake_tensor import FakeTensor  # noqa: F401
    import cpu_models
    import loop_styles
    TORCH = True
    WHY = ""
except Exception as e:  # ImportError, or a torch without fake tensors
    torch = None
    TORCH = False
    WHY = "PyTorch with torch._subclasses.fake_tensor is not importable here (%s: %s); on " \
          "Debian 12 install python3-torch and run with /usr/bin/python3" % (type(e).__name__, e)

needs_torch = unittest.skipUnless(TORCH, WHY)

# families of cpu_models.py / cpu_models_more.py that fake mode records (moe cannot: its
# routing reads values, see MoETest)
FAMILIES = ("decoder", "encoder", "convnet", "lstm", "llama", "gpt2fused", "encdec", "vit",
            "decoder_infer", "llama_infer")
INFERENCE = ("decoder_infer", "llama_infer")
# levers tried on every family, and the other points of tools/cpu_matrix.py on two
LEVERS_ALL = (("amp-bf16", {"precision": "amp-bf16"}), ("bf16", {"precision": "bf16"}),
              ("ckpt", {"checkpoint": "full"}))
LEVERS_SOME = (("mb1", {"micro_batch": 1}), ("mb4", {"micro_batch": 4}),
               ("accum4", {"accum": 4}), ("seq2", {"seq_mult": 2}),
               ("sgd", {"optimizer": "sgd"}), ("adam", {"optimizer": "adam"}),
               ("iter1", {"iterations": 1}), ("iter3", {"iterations": 3}))
STYLES_OK = ("plain", "closure", "accum", "keep_grads", "gradpen", "jvp")
STYLES_ITEM = ("trainer", "scaler")  # .item() of a computed tensor in the optimizer phase


@contextlib.contextmanager
def quiet():
    """stderr off (the recorder's note on an incomplete file)."""
    with open(os.devnull, "w") as f, contextlib.redirect_stderr(f):
        yield


def load(path):
    with open(path, "rb") as f:
        return pickle.load(f)


def _runs(pairs):
    """(size, action) pairs with every run of frees (no alloc between them) sorted."""
    out, run = [], []
    for size, action in pairs:
        if action == "alloc":
            out += sorted(run)
            run = []
            out.append((size, action))
        else:
            run.append((size, action))
    return out + sorted(run)


def trace_sequence(snap):
    """(size, action) of the alloc and free_completed entries of device_traces[0]."""
    return _runs([(e["size"], e["action"]) for e in snap["device_traces"][0]
                  if e["action"] in ("alloc", "free_completed")])


def recorder_sequence(cap):
    """The same with the recorder's own unrounded byte counts."""
    pairs = [(n, "alloc") for _a, n, _f in cap._pre]
    pairs += [(n, "alloc" if a == "alloc" else "free_completed")
              for a, _addr, n, _t, _f in cap._ev if a in ("alloc", "free_completed")]
    return _runs(pairs)


def alloc_keys(snap):
    """Per alloc entry: headroom_tensor, frames; and the truth rows without their times."""
    allocs = [e for e in snap["device_traces"][0] if e["action"] == "alloc"]
    truth = [r[1:] for r in snap.get("headroom_truth", {}).get("allocations", [])]
    return ([e.get("headroom_tensor") for e in allocs], [e["frames"] for e in allocs], truth,
            [(a["name"], a["stage"]) for a in snap["external_annotations"]])


class _Case(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.dir = self._tmp.name
        torch.set_num_threads(1)

    def tearDown(self):
        self._tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def assertSameRecording(self, real, fake, real_path, fake_path, what):
        """The fake recording equals the real one (see the module docstring)."""
        a, b = load(real_path), load(fake_path)
        self.assertFalse(b["headroom_config"].get("incomplete"), b["headroom_config"].get("error"))
        sa, sb = trace_sequence(a), trace_sequence(b)
        if sa != sb:
            i = next((k for k, (x, y) in enumerate(zip(sa, sb)) if x != y), min(len(sa), len(sb)))
            self.fail("%s: (size, action) differ at entry %d of %d/%d: real %s, fake %s"
                      % (what, i, len(sa), len(sb), sa[max(0, i - 2):i + 3],
                         sb[max(0, i - 2):i + 3]))
        self.assertEqual(recorder_sequence(real), recorder_sequence(fake), what)
        self.assertLessEqual(abs(fake.recorded_peak_bytes - real.recorded_peak_bytes),
                             0.005 * real.recorded_peak_bytes, what)
        self.assertEqual(fake.recorded_peak_bytes, real.recorded_peak_bytes, what)
        ka, kb = alloc_keys(a), alloc_keys(b)
        for name, x, y in zip(("headroom_tensor", "frames", "headroom_truth", "annotations"),
                              ka, kb):
            if x != y:
                i = next((k for k, (p, q) in enumerate(zip(x, y)) if p != q), None)
                self.fail("%s: %s differ at %s: real %r, fake %r"
                          % (what, name, i, x[i] if i is not None and i < len(x) else None,
                             y[i] if i is not None and i < len(y) else None))
        cfg = b["headroom_config"]
        self.assertIs(cfg["fake"], True)
        self.assertEqual(cfg["oracle_peak_bytes"], -1)
        self.assertNotIn("fake", a["headroom_config"])
        self.assertEqual(set(a), set(b))  # the same snapshot keys

    def point(self, family, name, **levers):
        """One matrix point recorded real, then fake; both compared."""
        caps = []
        for fake in (False, True):
            torch.manual_seed(0)
            p = self.path("%s-%s-%s.pickle" % (family, name, "fake" if fake else "real"))
            lv = dict(iterations=2)
            lv.update(levers)
            caps.append((cpu_models.run_point(p, family, fake=fake, oracle=False, **lv), p))
        (real, rp), (fake, fp) = caps
        self.assertSameRecording(real, fake, rp, fp, "%s/%s" % (family, name))
        return real, fake


@needs_torch
class FamiliesTest(_Case):
    def test_every_family_base_point(self):
        for fam in FAMILIES:
            with self.subTest(family=fam):
                self.point(fam, "base")

    def test_precisions_and_checkpointing_on_every_family(self):
        for fam in FAMILIES:
            for name, levers in LEVERS_ALL:
                if fam in INFERENCE and "checkpoint" in levers:
                    continue  # forward only: nothing to recompute
                with self.subTest(family=fam, point=name):
                    self.point(fam, name, **levers)

    def test_other_levers(self):
        for fam in ("decoder", "llama"):
            for name, levers in LEVERS_SOME:
                with self.subTest(family=fam, point=name):
                    self.point(fam, name, **levers)


@needs_torch
class MoETest(_Case):
    def test_data_dependent_routing_is_refused_by_op_and_module(self):
        path = self.path("moe.pickle")
        with quiet():
            with self.assertRaises(headroom_cpu.HeadroomCpuError) as ctx:
                cpu_models.run_point(path, "moe", iterations=2, fake=True, oracle=False)
        e = ctx.exception
        # F.one_hot reads its input's values (min/max) before torch.where routes the tokens
        self.assertEqual(e.op, "aten::_local_scalar_dense")
        self.assertEqual(e.module, "blocks.blocks.0.moe")
        self.assertEqual(e.phase, "forward")
        self.assertIn("aten::_local_scalar_dense", str(e))
        self.assertIn("'blocks.blocks.0.moe'", str(e))
        self.assertIn("cpu_models_more.py", str(e))
        cfg = load(path)["headroom_config"]  # what was recorded, marked incomplete
        self.assertTrue(cfg["incomplete"])
        self.assertEqual(cfg["fake_unsupported"], [{"op": "aten::_local_scalar_dense",
                                                    "module": "blocks.blocks.0.moe",
                                                    "phase": "forward"}])

    def test_nonzero_is_refused(self):
        with quiet():
            with self.assertRaises(headroom_cpu.HeadroomCpuError) as ctx:
                with headroom_cpu.capture(self.path("nz.pickle"), fake=True) as cap:
                    lin = torch.nn.Linear(4, 4)
                    with cap.phase("forward"):
                        torch.where(lin(torch.randn(3, 4)) > 0)
        self.assertEqual(ctx.exception.op, "aten::nonzero")
        self.assertIn("DynamicOutputShapeException", str(ctx.exception))

    def test_target_device_is_written_as_a_capacity(self):
        with quiet():
            with headroom_cpu.capture(self.path("t.pickle"), fake=True, target_device="h100-80gb") as cap:
                lin = torch.nn.Linear(4, 4)
                with cap.phase("forward"):
                    lin(torch.randn(3, 4))
        cfg = load(self.path("t.pickle"))["headroom_config"]
        self.assertEqual((cfg["target_device"], cfg["target_capacity_bytes"]), ("h100-80gb", 80 * 2**30))
        with self.assertRaises(headroom_cpu.HeadroomCpuError):
            headroom_cpu.capture(self.path("u.pickle"), target_device="tpu-v5")


@needs_torch
class LoopStylesTest(_Case):
    def style(self, style, fake):
        torch.manual_seed(0)
        p = self.path("%s-%d.pickle" % (style, fake))
        return loop_styles.run_style(p, "decoder", style, fake=fake), p

    def test_styles_match(self):
        for style in STYLES_OK:
            with self.subTest(style=style):
                (real, rp), (fake, fp) = self.style(style, False), self.style(style, True)
                self.assertSameRecording(real, fake, rp, fp, style)

    def test_item_in_the_step_is_refused(self):
        for style in STYLES_ITEM:
            with self.subTest(style=style):
                with quiet():
                    with self.assertRaises(headroom_cpu.HeadroomCpuError) as ctx:
                        self.style(style, True)
                self.assertEqual(ctx.exception.op, "aten::_local_scalar_dense")
                self.assertEqual(ctx.exception.phase, "optimizer")
                self.assertIn("loop_styles.py", str(ctx.exception))

    def late(self, style, fake):
        """loop_styles.run_late's flow, with the model, the optimizer and the warm-up steps
        under headroom_cpu.fake_mode() for the fake run."""
        optimizer, set_to_none = loop_styles.LATE[style]
        seq = cpu_models.BASE_SEQ["decoder"]
        torch.manual_seed(0)
        with headroom_cpu.fake_mode() if fake else contextlib.nullcontext():
            model, make_batch, loss_fn = cpu_models.build("decoder", 2, seq, "fp32", "none", 0)
            opt = loop_styles.make_optimizer(optimizer, model.parameters())
            cpu_models.train(model, opt, make_batch, loss_fn, "fp32", 1, loop_styles.WARMUP,
                             None, set_to_none=set_to_none)
        p = self.path("%s-%d.pickle" % (style, fake))
        with headroom_cpu.capture(p, micro_batch=2, seq=seq, model=model, optimizer=opt,
                                  model_name="decoder", loop_style=style, oracle=False,
                                  fake=fake) as cap:
            loop_styles.train_plain(cap, model, opt, make_batch, loss_fn, 2,
                                    set_to_none=set_to_none)
        return cap, p

    def test_models_built_before_the_capture(self):
        for style in loop_styles.LATE_STYLES:
            with self.subTest(style=style):
                (real, rp), (fake, fp) = self.late(style, False), self.late(style, True)
                self.assertSameRecording(real, fake, rp, fp, style)
                self.assertGreater(len(fake._pre), 0)  # parameters and state before the trace
                self.assertEqual(len(real._pre), len(fake._pre))


@needs_torch
class MechanicsTest(_Case):
    def tiny_step(self, cap):
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(),
                                    torch.nn.Linear(64, 32))
        opt = torch.optim.AdamW(model.parameters())
        with cap.iteration():
            x = cap.inputs(torch.randn(8, 32))
            with cap.phase("forward"):
                y = model(x)
            with cap.phase("loss"):
                loss = (y * y).mean()
            with cap.phase("backward"):
                loss.backward()
            with cap.phase("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
        return model, opt

    def test_tensors_are_fake_and_the_config_says_so(self):
        path = self.path("t.pickle")
        with headroom_cpu.capture(path, micro_batch=8, fake=True) as cap:
            model, opt = self.tiny_step(cap)
        for p in model.parameters():
            self.assertIsInstance(p, FakeTensor)
            self.assertIsInstance(p, torch.nn.Parameter)
        for st in opt.state.values():
            for v in st.values():
                self.assertIsInstance(v, FakeTensor)
        self.assertIsNone(cap.oracle_peak_bytes)
        cfg = load(path)["headroom_config"]
        self.assertIs(cfg["fake"], True)
        self.assertIn("fake mode", cfg["oracle"])
        self.assertEqual(cfg["oracle_peak_bytes"], -1)
        cats = {r[1] for r in load(path)["headroom_truth"]["allocations"]}
        self.assertLessEqual({"parameter", "gradient", "optimizer_state", "input", "activation"},
                             cats)

    def test_addresses_are_synthetic_aligned_and_unique_while_live(self):
        import headroom_fake
        path = self.path("a.pickle")
        with headroom_cpu.capture(path, fake=True) as cap:
            self.tiny_step(cap)
        live = {}
        for e in load(path)["device_traces"][0]:
            if e["action"] == "alloc":
                self.assertGreaterEqual(e["addr"], headroom_fake.FAKE_BASE)
                self.assertEqual(e["addr"] % 512, 0)
                self.assertNotIn(e["addr"], live)
                live[e["addr"]] = e["size"]
            elif e["action"] == "free_completed":
                self.assertEqual(live.pop(e["addr"]), e["size"])

    def test_views_share_one_allocation(self):
        path = self.path("v.pickle")
        with headroom_cpu.capture(path, fake=True, shapes=False, truth=False):
            x = torch.empty(1024, 256)
            v = x.view(256, 1024)
            w = x[3:]
            del x, v, w
        actions = [(e["action"], e["size"]) for e in load(path)["device_traces"][0]
                   if e["action"] != "free_requested"]
        self.assertEqual(actions, [("alloc", 1 << 20), ("free_completed", 1 << 20)])

    def test_replay_peak_equals_the_rounded_recorded_peak(self):
        path = self.path("r.pickle")
        with headroom_cpu.capture(path, fake=True) as cap:
            self.tiny_step(cap)
        out = subprocess.run([sys.executable, REPLAY, path], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        dev = json.loads(out.stdout)["devices"][0]
        self.assertEqual(dev["peak_allocated_bytes"], cap.recorded_peak_rounded_bytes)

    def test_patches_and_modes_are_undone(self):
        new = torch.nn.Parameter.__dict__["__new__"]
        make = torch.Tensor.__dict__.get("_make_subclass")
        with headroom_cpu.capture(self.path("p.pickle"), fake=True) as cap:
            self.tiny_step(cap)
            self.assertEqual(torch._C._len_torch_dispatch_stack(), 2)  # fake, then recorder
        self.assertEqual(torch._C._len_torch_dispatch_stack(), 0)
        self.assertIs(torch.nn.Parameter.__dict__["__new__"], new)
        self.assertIs(torch.Tensor.__dict__.get("_make_subclass"), make)
        self.assertFalse(isinstance(torch.empty(2), FakeTensor))

    def test_record_function_in_the_step(self):
        with headroom_cpu.capture(self.path("rf.pickle"), fake=True) as cap:
            with torch.autograd.profiler.record_function("user range"):
                y = torch.randn(4, 4) @ torch.randn(4, 4)
        self.assertIsInstance(y, FakeTensor)
        self.assertEqual(cap.recorded_peak_bytes, 3 * 64)

    def test_real_tensors_given_to_a_fake_capture_are_refused(self):
        model = torch.nn.Linear(2, 2)
        with self.assertRaises(headroom_cpu.HeadroomCpuError) as ctx:
            headroom_cpu.capture(self.path("x.pickle"), fake=True, model=model)
        self.assertIn("real", str(ctx.exception))
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode():
            other = torch.nn.Linear(2, 2)
        with self.assertRaises(headroom_cpu.HeadroomCpuError):
            headroom_cpu.capture(self.path("x.pickle"), fake=True, model=other)

    def test_a_model_built_under_fake_mode_is_taken_with_its_mode(self):
        with headroom_cpu.fake_mode():
            model = torch.nn.Linear(16, 16)
        path = self.path("m.pickle")
        with headroom_cpu.capture(path, fake=True, model=model) as cap:
            model(torch.randn(4, 16)).sum().backward()
        self.assertIs(cap.fake_mode, model.weight.fake_mode)
        snap = load(path)
        pre = [e for e in snap["device_traces"][0] if e["frames"] and
               e["frames"][0]["filename"] == headroom_cpu.BEFORE_CAPTURE]
        self.assertEqual(len(pre), 2)  # weight and bias
        self.assertEqual(snap["headroom_truth"]["allocations"][0][1], "parameter")

    def test_refused_in_backward_names_the_phase(self):
        class ReadsValues(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2 if g.sum().item() > 0 else g

        with quiet():
            with self.assertRaises(headroom_cpu.HeadroomCpuError) as ctx:
                with headroom_cpu.capture(self.path("b.pickle"), fake=True) as cap:
                    lin = torch.nn.Linear(4, 4)
                    with cap.phase("forward"):
                        y = ReadsValues.apply(lin(torch.randn(2, 4)))
                    with cap.phase("backward"):
                        y.sum().backward()
        self.assertEqual(ctx.exception.phase, "backward")
        self.assertIsNone(ctx.exception.module)


@needs_torch
class Fake7BToolTest(_Case):
    """tools/fake_7b.py at 2 layers (the 32-layer run is the tool's own: see its docstring)."""

    def run_tool(self, *extra):
        out = self.path("7b.pickle")
        res = subprocess.run([sys.executable, FAKE_7B, "--out", out, "--layers", "2"] +
                             list(extra), capture_output=True, text=True, timeout=300)
        self.assertEqual(res.returncode, 0, res.stderr[-2000:])
        return json.loads(res.stdout), out

    def test_two_layers(self):
        rep, out = self.run_tool()
        n = 32000 * 4096 * 2 + 2 * (4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096) + 4096
        self.assertEqual(rep["parameters_counted"], n)
        self.assertEqual(rep["parameters_analytic"], n)
        at = rep["at_peak_by_category"]
        rope = 2 * 4096 * 128 * 4  # the rotary cos/sin tables: buffers ("parameter" in the truth)
        self.assertEqual(at["parameter"], 4 * n + rope)
        tensors = 2 * 9 + 3  # per layer 7 linears and 2 norms; embedding, norm, head
        self.assertEqual(at["optimizer_state"], 8 * n + 512 * tensors)  # two moments, steps
        self.assertLess(rep["max_rss_bytes"], 1 << 30)  # fp32 weights alone would be 2.7 GB
        self.assertLess(rep["seconds"], 60)
        self.assertEqual(rep["file_peak_bytes"], rep["recorded_peak_rounded_bytes"])
        self.assertIs(load(out)["headroom_config"]["fake"], True)

    def test_two_layers_checkpointed(self):
        full, _ = self.run_tool("--checkpoint", "full")
        none, _ = self.run_tool()
        self.assertLess(full["recorded_peak_bytes"], none["recorded_peak_bytes"])
        self.assertLess(full["at_peak_by_category"].get("activation", 0),
                        none["at_peak_by_category"]["activation"])


if __name__ == "__main__":
    unittest.main()
