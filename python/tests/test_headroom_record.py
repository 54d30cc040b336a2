"""Tests for headroom_record with a fake ``torch`` that records every call.

Run from the repository root: python3 -m unittest discover -s python/tests -v
No GPU and no PyTorch needed.
"""

import functools
import inspect
import json
import multiprocessing
import os
import pickle
import re
import sqlite3
import sys
import tempfile
import threading
import types
import unittest
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
import headroom_record as hr  # noqa: E402

MAXSIZE = sys.maxsize


def _recorded(calls, name, fn):
    """Wrap ``fn`` so each call is logged as (name, kwargs-by-name) and bad
    arguments raise TypeError exactly as the real signature would."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        sig.bind(*args, **kwargs)  # TypeError on unknown names, like PyTorch
        calls.append((name, dict(kwargs), args))
        return fn(*args, **kwargs)
    return wrapper


class _Handle:
    def __init__(self, hooks, hook):
        self.hooks, self.hook = hooks, hook

    def remove(self):
        if self.hook in self.hooks:
            self.hooks.remove(self.hook)


def make_fake_torch(version="2.1.0", cuda=True, flavor=None, allocated=0,
                    dist_rank=None, snapshot_fails=False, peaks=(3 << 30, 4 << 30),
                    total_memory=80 << 30):
    """flavor: '2.1' the 4-argument API, '2.5' explicit API with
    global_record_annotations, 'impl' (newest: public (enabled, *args, **kwargs)
    forwarding to _record_memory_history_impl), 'opaque-ok' / 'opaque-reject'
    (signature hides everything; the latter rejects global_record_annotations).
    ``peaks``: max_memory_allocated and max_memory_reserved (per device: + device), and
    ``total_memory`` get_device_properties' capacity."""
    flavor = flavor or ("2.1" if version.startswith("2.1") else "impl")
    calls = []
    state = {"history": False, "oom_observers": [], "rf_stack": []}
    torch = types.ModuleType("torch")
    torch.__version__ = version
    torch.calls, torch.state = calls, state

    def set_history(enabled):
        state["history"] = enabled is not None

    if flavor == "2.1":  # as in torch 2.1: the public function borrows _impl's signature
        def _impl(enabled="all", context="all", stacks="all", max_entries=MAXSIZE, device=None):
            set_history(enabled)

        def _record_memory_history(enabled="all", *args, **kwargs):
            return memory._record_memory_history_impl(enabled, *args, **kwargs)
        _record_memory_history.__signature__ = inspect.signature(_impl)
    elif flavor == "2.5":
        def _record_memory_history(enabled="all", context="all", stacks="all",
                                   max_entries=MAXSIZE, device=None, clear_history=False,
                                   compile_context=False, global_record_annotations=False):
            set_history(enabled)
    elif flavor in ("opaque-ok", "opaque-reject"):
        def _record_memory_history(*args, **kwargs):
            if flavor == "opaque-reject" and "global_record_annotations" in kwargs:
                raise TypeError("unexpected keyword argument 'global_record_annotations'")
            set_history(kwargs.get("enabled", "all"))
    else:
        def _impl(enabled="all", context="all", stacks="all", max_entries=MAXSIZE,
                  device=None, clear_history=False, compile_context=False,
                  global_record_annotations=False, skip_actions=None):
            set_history(enabled)

        def _record_memory_history(enabled="all", *args, **kwargs):
            return memory._record_memory_history_impl(enabled, *args, **kwargs)

    def _snapshot():
        if snapshot_fails:
            raise RuntimeError("snapshot exploded")
        snap = {"segments": [{"device": 0, "address": 1 << 40, "total_size": 2 << 20,
                              "blocks": []}],
                "device_traces": [[{"action": "alloc", "addr": 1 << 40, "size": 512,
                                    "stream": 0, "time_us": 1}]]}
        if flavor != "2.1":
            snap["allocator_settings"] = {}
            snap["external_annotations"] = []
        return snap

    memory = types.SimpleNamespace()
    memory._record_memory_history = _recorded(calls, "_record_memory_history",
                                              _record_memory_history)
    if flavor in ("2.1", "impl"):
        memory._record_memory_history_impl = _impl
    memory._snapshot = _recorded(calls, "_snapshot", _snapshot)
    torch.cuda = types.SimpleNamespace(
        memory=memory,
        is_available=lambda: cuda,
        current_device=lambda: 0,
        memory_allocated=lambda device=None: allocated,
        max_memory_allocated=lambda device=None: peaks[0] + (device or 0),
        max_memory_reserved=lambda device=None: peaks[1] + (device or 0),
        get_device_properties=lambda device: types.SimpleNamespace(total_memory=total_memory),
    )

    def attach(observer):
        calls.append(("_cuda_attach_out_of_memory_observer", {}, (observer,)))
        state["oom_observers"].append(observer)

    torch._C = types.SimpleNamespace(_cuda_attach_out_of_memory_observer=attach,
                                     _cuda_isHistoryEnabled=lambda: state["history"])

    class record_function:
        def __init__(self, name, args=None):
            self.name = name

        def __enter__(self):
            calls.append(("record_function.enter", {"name": self.name}, ()))
            state["rf_stack"].append(self.name)
            return self

        def __exit__(self, exc_type, exc_value, traceback):
            calls.append(("record_function.exit", {"name": self.name}, ()))
            state["rf_stack"].remove(self.name)
            return False

    torch.profiler = types.SimpleNamespace(record_function=record_function)

    def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
        calls.append(("autograd.backward", {"open": list(state["rf_stack"]),
                                            "retain_graph": retain_graph}, (tensors,)))

    torch.autograd = types.SimpleNamespace(backward=backward)
    torch.is_grad_enabled = lambda: True
    torch.distributed = types.SimpleNamespace(
        is_available=lambda: True,
        is_initialized=lambda: dist_rank is not None,
        get_rank=lambda: dist_rank,
    )
    return torch


class FakeModule:
    training = True

    def __init__(self, torch):
        self.torch, self.pre, self.post = torch, [], []
        self.always_call = None

    def register_forward_pre_hook(self, hook):
        self.pre.append(hook)
        return _Handle(self.pre, hook)

    def register_forward_hook(self, hook, *, always_call=False):
        self.always_call = always_call
        self.post.append(hook)
        return _Handle(self.post, hook)

    def __call__(self, x):
        for hook in list(self.pre):
            assert hook(self, (x,)) is None  # hooks must not replace inputs
        self.torch.calls.append(("module.forward", {"open": list(self.torch.state["rf_stack"])}, ()))
        out = x * 2
        for hook in list(self.post):
            assert hook(self, (x,), out) is None  # hooks must not replace outputs
        return out


class FakeOptimizer:
    def __init__(self, torch):
        self.torch, self.pre, self.post = torch, [], []

    def register_step_pre_hook(self, hook):
        self.pre.append(hook)
        return _Handle(self.pre, hook)

    def register_step_post_hook(self, hook):
        self.post.append(hook)
        return _Handle(self.post, hook)

    def step(self):
        for hook in list(self.pre):
            assert hook(self, (), {}) is None
        self.torch.calls.append(("optimizer.step", {"open": list(self.torch.state["rf_stack"])}, ()))
        for hook in list(self.post):
            hook(self, (), {})


class RecorderTestCase(unittest.TestCase):
    def setUp(self):
        self._saved_torch = sys.modules.get("torch", "absent")
        self._saved_env = {k: os.environ.pop(k) for k in ("RANK", "LOCAL_RANK") if k in os.environ}
        hr._WARNED.clear()
        hr._OOM_ATTACHED[0] = False
        self.tmp = tempfile.TemporaryDirectory()
        self.out = self.tmp.name
        self.recorders = []

    def tearDown(self):
        for rec in self.recorders:
            rec.stop()
        del hr._ACTIVE[:]
        hr._BACKWARD_PATCH.update(orig=None, wrapper=None, users=0)
        if self._saved_torch == "absent":
            sys.modules.pop("torch", None)
        else:
            sys.modules["torch"] = self._saved_torch
        os.environ.pop("RANK", None)
        os.environ.pop("LOCAL_RANK", None)
        os.environ.update(self._saved_env)
        self.tmp.cleanup()

    def install(self, **kwargs):
        torch = make_fake_torch(**kwargs)
        sys.modules["torch"] = torch
        return torch

    def recorder(self, **kwargs):
        kwargs.setdefault("verbose", False)
        rec = hr.Recorder(self.out, **kwargs)
        self.recorders.append(rec)
        return rec

    def history_calls(self, torch):
        return [kw for name, kw, _ in torch.calls if name == "_record_memory_history"]

    def annotations(self, torch):
        return [(name.split(".")[1], kw["name"]) for name, kw, _ in torch.calls
                if name.startswith("record_function.")]

    def start_warned(self, rec):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rec.start()
        return [w for w in caught if issubclass(w.category, hr.HeadroomWarning)]


class ArgumentsPerVersion(RecorderTestCase):
    def test_2_1_gets_the_four_argument_api(self):
        torch = self.install(version="2.1.2+cu121", flavor="2.1")
        rec = self.recorder().start()
        self.assertTrue(rec.active)
        self.assertEqual(self.history_calls(torch), [
            {"enabled": "all", "context": "all", "stacks": "python", "max_entries": 1_000_000}])
        self.assertEqual(hr.DEFAULT_MAX_ENTRIES, 1_000_000)

    def test_2_5_explicit_signature_adds_global_annotations(self):
        torch = self.install(version="2.5.1", flavor="2.5")
        self.recorder().start()
        self.assertEqual(self.history_calls(torch), [
            {"enabled": "all", "context": "all", "stacks": "python", "max_entries": 1_000_000,
             "global_record_annotations": True}])

    def test_newest_hidden_signature_is_found_through_impl(self):
        torch = self.install(version="2.11.0.dev20260301", flavor="impl")
        self.recorder().start()
        self.assertEqual(self.history_calls(torch)[0]["global_record_annotations"], True)

    def test_opaque_signature_falls_back_to_version(self):
        torch = self.install(version="2.3.0", flavor="opaque-ok")
        self.recorder().start()
        self.assertNotIn("global_record_annotations", self.history_calls(torch)[0])
        torch = self.install(version="2.6.0", flavor="opaque-ok")
        self.recorder().start()
        self.assertTrue(self.history_calls(torch)[0]["global_record_annotations"])

    def test_rejected_global_annotations_are_retried_without(self):
        torch = self.install(version="2.6.0", flavor="opaque-reject")
        rec = self.recorder().start()
        self.assertTrue(rec.active)
        calls = self.history_calls(torch)
        self.assertEqual(len(calls), 2)
        self.assertNotIn("global_record_annotations", calls[1])
        self.assertEqual(rec.record_kwargs, calls[1])

    def test_options_full_stacks_bounded_entries(self):
        torch = self.install(version="2.1.0", flavor="2.1")
        self.recorder(stacks="all", max_entries=5000, context="alloc").start()
        self.assertEqual(self.history_calls(torch), [
            {"enabled": "all", "context": "alloc", "stacks": "all", "max_entries": 5000}])

    def test_global_annotations_can_be_turned_off(self):
        torch = self.install(version="2.5.0", flavor="2.5")
        self.recorder(global_annotations=False).start()
        self.assertNotIn("global_record_annotations", self.history_calls(torch)[0])

    def test_bad_options_raise_early(self):
        for kwargs in ({"stacks": "cpp"}, {"context": "everything"}, {"max_entries": 0}):
            with self.assertRaises(ValueError):
                hr.Recorder(self.out, **kwargs)

    def test_stop_disables_only_history_it_enabled(self):
        torch = self.install(version="2.5.0", flavor="2.5")
        rec = self.recorder().start()
        rec.stop()
        self.assertEqual(self.history_calls(torch)[-1], {"enabled": None})
        self.assertFalse(rec.active)
        torch = self.install(version="2.5.0", flavor="2.5")
        torch.state["history"] = True  # the user enabled it already
        rec = self.recorder().start()
        rec.stop()
        self.assertEqual(len(self.history_calls(torch)), 1)


class Dumps(RecorderTestCase):
    def load(self, path):
        with open(path, "rb") as f:
            data = f.read()
        return data, pickle.loads(data)

    def test_dump_uses_protocol_4_and_names_rank_step_reason(self):
        torch = self.install(version="2.5.0", flavor="2.5")
        rec = self.recorder().start()
        path = rec.dump()
        self.assertEqual(os.path.basename(path), "headroom_rank0_step0_manual.pickle")
        data, snap = self.load(path)
        self.assertEqual(data[:2], b"\x80\x04")  # PROTO 4
        self.assertIn("segments", snap)
        meta = snap[hr.SNAPSHOT_META_KEY]
        self.assertEqual((meta["rank"], meta["step"], meta["reason"]), (0, 0, "manual"))
        self.assertEqual(meta["torch_version"], "2.5.0")
        self.assertEqual(meta["record_args"], self.history_calls(torch)[0])
        self.assertFalse(os.path.exists(path + ".tmp"))

    def test_filename_helper(self):
        self.assertEqual(hr.snapshot_filename(3, 12, "oom"), "headroom_rank3_step12_oom.pickle")
        self.assertEqual(hr.snapshot_filename(0, 1, "after warmup/1"),
                         "headroom_rank0_step1_after-warmup-1.pickle")
        self.assertEqual(hr.snapshot_filename(0, 0, "!!", prefix="run7"), "run7_rank0_step0_manual.pickle")

    def test_repeated_dump_does_not_overwrite(self):
        self.install(version="2.5.0", flavor="2.5")
        rec = self.recorder().start()
        first, second = rec.dump("eval"), rec.dump("eval")
        self.assertEqual(os.path.basename(first), "headroom_rank0_step0_eval.pickle")
        self.assertEqual(os.path.basename(second), "headroom_rank0_step0_eval-2.pickle")
        self.assertEqual(rec.dumps, [first, second])

    def test_oom_observer_writes_one_dump(self):
        torch = self.install(version="2.5.0", flavor="2.5")
        rec = self.recorder().start()
        self.recorder().start()  # a second recorder must not attach a second observer
        observers = torch.state["oom_observers"]
        self.assertEqual(len(observers), 1)
        rec.step = 7
        observers[0](0, 2 << 30, 70 << 30, 1 << 20)
        path = os.path.join(self.out, "headroom_rank0_step7_oom.pickle")
        self.assertTrue(os.path.exists(path))
        data, snap = self.load(path)
        self.assertEqual(data[:2], b"\x80\x04")
        self.assertEqual(snap[hr.SNAPSHOT_META_KEY]["oom"],
                         {"device": 0, "alloc": 2 << 30, "device_allocated": 70 << 30,
                          "device_free": 1 << 20})
        before = sorted(os.listdir(self.out))
        observers[0](0, 2 << 30, 70 << 30, 1 << 20)  # allocator retry: max_oom_dumps=1 per recorder
        self.assertEqual(sorted(os.listdir(self.out)), before)
        for r in self.recorders:
            r.stop()
        observers[0](0, 1, 1, 1)  # observer cannot be detached: must be inert after stop
        self.assertEqual(sorted(os.listdir(self.out)), before)

    def test_dump_on_oom_can_be_disabled(self):
        torch = self.install(version="2.5.0", flavor="2.5")
        self.recorder(dump_on_oom=False).start()
        self.assertEqual(torch.state["oom_observers"], [])

    def test_chosen_steps_dump_at_end_of_iteration(self):
        self.install(version="2.5.0", flavor="2.5")
        rec = self.recorder(dump_at_steps=[2, 4]).start()
        for expected in range(4):
            with rec.iteration() as n:
                self.assertEqual(n, expected)
        self.assertEqual(rec.step, 4)
        self.assertEqual(sorted(os.listdir(self.out)), ["headroom_rank0_step2_scheduled.pickle"])

    def test_failed_snapshot_warns_and_returns_none(self):
        self.install(version="2.5.0", flavor="2.5", snapshot_fails=True)
        rec = self.recorder().start()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.assertIsNone(rec.dump())
        self.assertTrue(any("snapshot exploded" in str(w.message) for w in caught))

    def test_old_snapshots_get_synthesized_annotations(self):
        self.install(version="2.1.0", flavor="2.1")
        rec = self.recorder().start()
        with rec.iteration():
            with rec.phase("forward"):
                pass
        _, snap = self.load(rec.dump())
        names = [(a["name"], a["stage"]) for a in snap["external_annotations"]]
        self.assertEqual(names, [("headroom.iteration#0", "START"), ("## forward ##", "START"),
                                 ("## forward ##", "END"), ("headroom.iteration#0", "END")])
        self.assertTrue(all(set(a) == {"name", "stage", "device", "time_us"}
                            for a in snap["external_annotations"]))
        self.assertTrue(snap[hr.SNAPSHOT_META_KEY]["annotations_synthesized"])

    def test_native_annotations_are_left_alone(self):
        self.install(version="2.5.0", flavor="2.5")
        rec = self.recorder().start()
        with rec.phase("loss"):
            pass
        _, snap = self.load(rec.dump())
        self.assertEqual(snap["external_annotations"], [])
        self.assertFalse(snap[hr.SNAPSHOT_META_KEY]["annotations_synthesized"])


class Ranks(RecorderTestCase):
    def test_rank_from_env(self):
        self.install(version="2.5.0", flavor="2.5")
        os.environ["LOCAL_RANK"] = "5"
        self.assertEqual(hr.current_rank(sys.modules["torch"]), 5)
        os.environ["RANK"] = "3"
        rec = self.recorder().start()
        self.assertEqual(os.path.basename(rec.dump("manual")), "headroom_rank3_step0_manual.pickle")

    def test_rank_from_initialised_distributed_wins(self):
        torch = self.install(version="2.5.0", flavor="2.5", dist_rank=6)
        os.environ["RANK"] = "3"
        self.assertEqual(hr.current_rank(torch), 6)
        self.assertEqual(hr.current_rank(None), 3)

    def test_unselected_rank_records_nothing_silently(self):
        torch = self.install(version="2.5.0", flavor="2.5")
        os.environ["RANK"] = "1"
        rec = self.recorder(ranks=[0, 2])
        self.assertEqual(self.start_warned(rec), [])
        self.assertFalse(rec.active)
        self.assertEqual(self.history_calls(torch), [])
        with rec.phase("forward"):
            pass
        self.assertEqual(self.annotations(torch), [])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.assertIsNone(rec.dump())
        self.assertEqual(caught, [])  # left out on purpose: not worth a warning
        self.assertEqual(os.listdir(self.out), [])

    def test_selected_rank_records(self):
        torch = self.install(version="2.5.0", flavor="2.5")
        os.environ["RANK"] = "2"
        self.assertTrue(self.recorder(ranks=2).start().active)
        self.assertTrue(self.recorder(ranks=(0, 2)).start().active)
        self.assertTrue(self.recorder(ranks="all").start().active)
        self.assertEqual(len(self.history_calls(torch)), 3)


class NoOp(RecorderTestCase):
    def test_module_imports_and_runs_without_torch(self):
        sys.modules["torch"] = None  # makes `import torch` raise ImportError
        rec = self.recorder()
        warned = self.start_warned(rec)
        self.assertEqual(len(warned), 1)
        self.assertIn("not importable", str(warned[0].message))
        self.assertEqual(self.start_warned(self.recorder()), [])  # once per process
        self.assertFalse(rec.active)
        with rec.iteration():
            with rec.phase("backward"):
                pass
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.assertIsNone(rec.dump())
        self.assertIn("not recording", str(caught[0].message))
        rec.attach(object(), None)
        rec.stop()

    def test_no_cuda_warns_once_and_leaves_training_alone(self):
        torch = self.install(version="2.5.0", flavor="2.5", cuda=False)
        original_backward = torch.autograd.backward
        model, opt = FakeModule(torch), FakeOptimizer(torch)
        rec = self.recorder().attach(model, opt)
        warned = self.start_warned(rec)
        self.assertEqual(len(warned), 1)
        self.assertIn("CUDA is not available", str(warned[0].message))
        self.assertEqual(self.start_warned(self.recorder()), [])
        self.assertEqual(self.history_calls(torch), [])
        self.assertEqual((model.pre, model.post, opt.pre, opt.post), ([], [], [], []))
        self.assertIs(torch.autograd.backward, original_backward)
        self.assertEqual(model(3), 6)
        self.assertEqual(torch.state["oom_observers"], [])

    def test_old_torch_warns_and_is_noop(self):
        torch = self.install(version="2.0.1+cu118", flavor="2.1")
        rec = self.recorder()
        warned = self.start_warned(rec)
        self.assertEqual(len(warned), 1)
        self.assertIn("older than 2.1", str(warned[0].message))
        self.assertFalse(rec.active)
        self.assertEqual(self.history_calls(torch), [])
        with rec.phase("forward"):
            pass
        self.assertEqual(self.annotations(torch), [])

    def test_late_start_warns_about_unattributed_blocks(self):
        self.install(version="2.5.0", flavor="2.5", allocated=4096)
        warned = self.start_warned(self.recorder())
        self.assertTrue(any("4096 bytes" in str(w.message) for w in warned))


class Annotations(RecorderTestCase):
    def test_phase_names_are_the_documented_ones(self):
        self.assertEqual(hr.PHASE_NAMES, {"forward": "## forward ##", "loss": "## loss ##",
                                          "backward": "## backward ##",
                                          "optimizer": "## optimizer ##"})
        self.assertEqual(hr.ITERATION_PREFIX, "headroom.iteration#")
        for name in list(hr.PHASE_NAMES.values()) + [hr.ITERATION_PREFIX]:
            self.assertIn(name, hr.__doc__)

    def test_manual_phases_call_record_function(self):
        torch = self.install(version="2.5.0", flavor="2.5")
        rec = self.recorder().start()
        for _ in range(2):
            with rec.iteration():
                for phase in ("forward", "loss", "backward", "optimizer"):
                    with rec.phase(phase):
                        pass
        expected = []
        for n in range(2):
            expected.append(("enter", "headroom.iteration#%d" % n))
            for phase in ("forward", "loss", "backward", "optimizer"):
                label = "## %s ##" % phase
                expected += [("enter", label), ("exit", label)]
            expected.append(("exit", "headroom.iteration#%d" % n))
        self.assertEqual(self.annotations(torch), expected)
        with self.assertRaises(ValueError):
            with rec.phase("warmup"):
                pass

    def test_phase_closes_on_exception_and_iteration_does_not_advance(self):
        torch = self.install(version="2.5.0", flavor="2.5")
        rec = self.recorder(dump_at_steps=[0]).start()
        with self.assertRaises(KeyError):
            with rec.iteration():
                with rec.phase("backward"):
                    raise KeyError("boom")
        self.assertEqual(torch.state["rf_stack"], [])
        self.assertEqual(rec.step, 0)
        self.assertEqual(os.listdir(self.out), [])

    def test_automatic_hooks_register_and_annotate(self):
        torch = self.install(version="2.5.0", flavor="2.5")
        original_backward = torch.autograd.backward
        model, opt = FakeModule(torch), FakeOptimizer(torch)
        rec = hr.record(self.out, model=model, optimizer=opt, dump_at_steps=[1], verbose=False)
        self.recorders.append(rec)
        with rec:
            self.assertEqual((len(model.pre), len(model.post), len(opt.pre), len(opt.post)),
                             (1, 1, 1, 1))
            self.assertTrue(model.always_call)
            self.assertIsNot(torch.autograd.backward, original_backward)
            for _ in range(2):  # an unmodified training loop
                out = model(3)
                self.assertEqual(out, 6)
                loss = out + 1
                self.assertIsNone(torch.autograd.backward(loss, retain_graph=True))
                opt.step()
            self.assertEqual(rec.step, 2)
        self.assertEqual([(args, kw["retain_graph"]) for name, kw, args in torch.calls
                          if name == "autograd.backward"],
                         [((7,), True), ((7,), True)])  # the wrapper passes arguments through
        seen = [(name, kw["open"]) for name, kw, _ in torch.calls
                if name in ("module.forward", "autograd.backward", "optimizer.step")]
        self.assertEqual(seen[:3], [
            ("module.forward", ["headroom.iteration#0", "## forward ##"]),
            ("autograd.backward", ["headroom.iteration#0", "## backward ##"]),
            ("optimizer.step", ["headroom.iteration#0", "## optimizer ##"])])
        self.assertEqual(seen[3][1], ["headroom.iteration#1", "## forward ##"])
        first = self.annotations(torch)[:10]
        self.assertEqual(first, [
            ("enter", "headroom.iteration#0"), ("enter", "## forward ##"),
            ("exit", "## forward ##"), ("enter", "## loss ##"), ("exit", "## loss ##"),
            ("enter", "## backward ##"), ("exit", "## backward ##"),
            ("enter", "## optimizer ##"), ("exit", "## optimizer ##"),
            ("exit", "headroom.iteration#0")])
        self.assertEqual(os.listdir(self.out), ["headroom_rank0_step1_scheduled.pickle"])
        # stop() removed every hook and restored torch.autograd.backward
        self.assertEqual((model.pre, model.post, opt.pre, opt.post), ([], [], [], []))
        self.assertIs(torch.autograd.backward, original_backward)
        self.assertEqual(torch.state["rf_stack"], [])

    def test_auto_mode_ignores_other_threads(self):
        torch = self.install(version="2.5.0", flavor="2.5")
        model = FakeModule(torch)
        rec = self.recorder().start().attach(model, backward=True)
        worker = threading.Thread(target=lambda: (model(1), torch.autograd.backward(1)))
        worker.start()
        worker.join()
        self.assertEqual(self.annotations(torch), [])
        self.assertEqual(len([c for c in torch.calls if c[0] == "autograd.backward"]), 1)
        rec.stop()

    def test_manual_iteration_wins_over_optimizer_hook(self):
        torch = self.install(version="2.5.0", flavor="2.5")
        opt = FakeOptimizer(torch)
        rec = self.recorder().start().attach(optimizer=opt)
        with rec.iteration():
            opt.step()
        self.assertEqual(rec.step, 1)
        opt.step()  # outside a manual iteration the hook advances the counter
        self.assertEqual(rec.step, 2)



# ------------------------------------------------------------------ shapes (headroom_tensor)
def _entry(action, addr, size, t=None):
    e = {"action": action, "addr": addr, "size": size, "stream": 0}
    if t is not None:
        e["time_us"] = t
    return e


def _rec(t, addr, nbytes, shape, kind="activation", source="saved", module=None, phase=None,
         alive=None, device=0, dtype="float32", itemsize=4):
    return (t, device, addr, nbytes, tuple(shape), dtype, itemsize, kind, source, module, phase,
            alive)


class JoinTest(unittest.TestCase):
    """join_tensor_records on snapshot dicts written by hand."""
    A, B = 1 << 40, (1 << 40) + 4096

    def snapshot(self, timed=True):
        t = (lambda x: x) if timed else (lambda x: None)
        return {"segments": [], "device_traces": [[
            _entry("alloc", self.A, 1024, t(10)),           # 0
            _entry("free_requested", self.A, 1024, t(20)),  # 1
            _entry("free_completed", self.A, 1024, t(21)),  # 2
            _entry("alloc", self.A, 2048, t(30)),           # 3
            _entry("alloc", self.B, 240, t(40)),            # 4
        ]]}

    def test_latest_alloc_at_or_before_the_hook(self):
        snap = self.snapshot()
        st = hr.join_tensor_records(snap, [
            _rec(15, self.A, 1024, [16, 16]),                  # the first allocation
            _rec(35, self.A, 2048, [2, 16, 16], "input", "input"),  # the second
            _rec(25, self.A, 1024, [16, 16]),                  # freed at 20: no entry
            _rec(5, self.A, 1024, [16, 16]),                   # before every alloc
            _rec(45, self.A, 1024, [16, 16]),                  # 1024 B is not entry 3's size
            _rec(30, self.B, 240, [60]),                       # alloc after the hook (40 > 30)
            _rec(50, self.B, 240, [60], device=3),             # no such device
        ])
        trace = snap["device_traces"][0]
        self.assertEqual(snap["headroom_tensor_keys"], 1)
        self.assertEqual(trace[0]["headroom_tensor"]["shape"], [16, 16])
        self.assertEqual(trace[3]["headroom_tensor"]["shape"], [2, 16, 16])
        self.assertEqual(trace[3]["headroom_tensor"]["kind"], "input")
        self.assertNotIn("headroom_tensor", trace[4])
        for e in trace[1:3]:
            self.assertNotIn("headroom_tensor", e)
        self.assertEqual(st["by"], ["time_us"])
        self.assertEqual((st["records"], st["joined_records"], st["entries"]), (7, 2, 2))
        self.assertEqual(st["unjoined"], {"no_trace": 1, "no_alloc": 2, "freed_before": 1,
                                          "size": 1, "ambiguous": 0})

    def test_the_key_format(self):
        snap = self.snapshot()
        hr.join_tensor_records(snap, [_rec(35, self.A, 2048, [2, 16, 16])],
                               [(31, 100, "blocks.3.attn")], [(0, 100, "forward")],
                               micro_batch=2, seq=16)
        self.assertEqual(snap["device_traces"][0][3]["headroom_tensor"], {
            "shape": [2, 16, 16], "dtype": "float32", "dims": {"batch": [0], "seq": [1, 2]},
            "module": None, "kind": "activation", "phase": "forward"})  # 30 is before 31
        snap = self.snapshot()
        hr.join_tensor_records(snap, [_rec(35, self.A, 2048, [2, 16, 16])],
                               [(25, 100, "blocks.3.attn")], [], micro_batch=None, seq=None)
        k = snap["device_traces"][0][3]["headroom_tensor"]
        self.assertEqual((k["module"], k["phase"], k["dims"]),
                         ("blocks.3.attn", None, {"batch": [], "seq": []}))

    def test_strongest_kind_and_the_covering_shape(self):
        snap = self.snapshot()
        hr.join_tensor_records(snap, [
            _rec(32, self.A, 2048, [16, 32], "activation", "saved"),  # weight.t() saved
            _rec(33, self.A, 2048, [4, 32], "activation", "saved"),   # a slice of it
            _rec(50, self.A, 2048, [32, 16], "parameter", "scan"),
        ])
        k = snap["device_traces"][0][3]["headroom_tensor"]
        self.assertEqual((k["kind"], k["shape"]), ("parameter", [32, 16]))
        snap = self.snapshot()
        hr.join_tensor_records(snap, [
            _rec(32, self.A, 2048, [4, 32], "activation", "saved"),   # covers nothing
            _rec(33, self.A, 2048, [2, 256], "activation", "saved"),
            _rec(34, self.A, 2048, [2, 16, 16], "activation", "output"),
        ])
        self.assertEqual(snap["device_traces"][0][3]["headroom_tensor"]["shape"], [2, 16, 16])

    def test_module_and_phase_of_the_allocation_time(self):
        trace = [_entry("alloc", (1 << 40) + 512 * i, 512, t) for i, t in
                 enumerate((5, 25, 40, 60, 150, 210))]
        snap = {"device_traces": [trace]}
        calls = [(0, 100, ""), (10, 50, "blocks.0"), (20, 30, "blocks.0.fc"),
                 (55, 70, "blocks.1"), (200, None, "blocks.2")]  # blocks.2 still runs
        phases = [(0, 100, "forward"), (100, 120, "loss"), (120, 180, "backward"),
                  (180, None, "optimizer")]
        recs = [_rec(t + 1, e["addr"], 512, [128], module="hook's") for e, t in
                zip(trace, (5, 25, 40, 60, 150, 210))]
        st = hr.join_tensor_records(snap, recs, calls, phases)
        got = [(e["headroom_tensor"]["module"], e["headroom_tensor"]["phase"]) for e in trace]
        self.assertEqual(got, [("", "forward"), ("blocks.0.fc", "forward"),
                               ("blocks.0", "forward"), ("blocks.1", "forward"),
                               (None, "backward"), ("blocks.2", "optimizer")])
        self.assertEqual(st["module_from_hook"], 0)
        # intervals before modules_from were dropped: the hook's module stands there
        for e in trace:
            del e["headroom_tensor"]
        st = hr.join_tensor_records(snap, recs, calls, phases, modules_from=50)
        got = [e["headroom_tensor"]["module"] for e in trace]
        self.assertEqual(got, ["hook's", "hook's", "hook's", "blocks.1", None, "blocks.2"])
        self.assertEqual(st["module_from_hook"], 3)

    def test_without_time_us_the_order_decides(self):
        snap = self.snapshot(timed=False)
        st = hr.join_tensor_records(snap, [
            _rec(99, self.A, 2048, [512], module="m", phase="forward", alive=True),
            _rec(98, self.A, 1024, [256], alive=False),  # two allocs at A: which one?
            _rec(97, self.B, 240, [60], module="n", phase="backward", alive=False),  # one
        ])
        trace = snap["device_traces"][0]
        self.assertEqual(st["by"], ["order"])
        self.assertEqual((trace[3]["headroom_tensor"]["shape"],
                          trace[3]["headroom_tensor"]["module"],
                          trace[3]["headroom_tensor"]["phase"]), ([512], "m", "forward"))
        self.assertEqual((trace[4]["headroom_tensor"]["module"],
                          trace[4]["headroom_tensor"]["phase"]), ("n", "backward"))
        self.assertNotIn("headroom_tensor", trace[0])
        self.assertEqual(st["unjoined"]["ambiguous"], 1)
        snap = self.snapshot(timed=False)  # a wrapped ring buffer: one alloc proves nothing
        st = hr.join_tensor_records(snap, [_rec(97, self.B, 240, [60], alive=False)],
                                    wrapped=True)
        self.assertEqual(st["unjoined"]["ambiguous"], 1)

    def test_equal_keys_are_one_object(self):
        trace = [_entry("alloc", (1 << 40) + 512 * i, 512, i) for i in range(4)]
        snap = {"device_traces": [trace]}
        hr.join_tensor_records(snap, [_rec(i, e["addr"], 512, [128]) for i, e in
                                      enumerate(trace)])
        self.assertEqual(len({id(e["headroom_tensor"]) for e in trace}), 1)
        self.assertEqual(pickle.loads(pickle.dumps(snap, protocol=4)), snap)


class _Dtype:
    def __init__(self, name, size):
        self.name, self.size = name, size

    def __str__(self):
        return "torch." + self.name


FLOAT32 = _Dtype("float32", 4)


class _Storage:
    def __init__(self, ptr, nbytes):
        self.ptr, self.size = ptr, nbytes

    def data_ptr(self):
        return self.ptr

    def nbytes(self):
        return self.size


class _World:
    """A fake CUDA allocator (its trace, with time_us from a clock the recorder shares),
    tensors, a two-layer model with qualified names, an optimizer and autograd."""

    def __init__(self, torch, timed=True):
        self.torch, self.timed = torch, timed
        self.now, self.next, self.trace, self.saved = 1000, 1 << 40, [], []
        world = self

        class Tensor:
            def __init__(self, shape, storage=None):
                self.shape, self.dtype, self.is_cuda = tuple(shape), FLOAT32, True
                self.device, self.grad = types.SimpleNamespace(index=0), None
                n = 4
                for d in shape:
                    n *= d
                self._st = storage or world.alloc(n)

            def untyped_storage(self):
                return self._st

            def data_ptr(self):
                return self._st.ptr

            def element_size(self):
                return 4

            def detach(self):
                return Tensor(self.shape, self._st)

            def view(self, *shape):
                return Tensor(shape, self._st)
        torch.Tensor = self.Tensor = Tensor
        hooks = torch.state.setdefault("saved_hooks", [])

        class saved_tensors_hooks:
            def __init__(self, pack, unpack):
                self.pair = (pack, unpack)

            def __enter__(self):
                hooks.append(self.pair)

            def __exit__(self, *exc):
                hooks.remove(self.pair)
        torch.autograd.graph = types.SimpleNamespace(saved_tensors_hooks=saved_tensors_hooks)
        torch.autograd.backward = self.backward
        torch.cuda.memory._snapshot = lambda: {"segments": [],
                                               "device_traces": [list(self.trace)]}
        self.model = _Net(self)
        self.opt = _Adam(torch, self)

    def clock(self):
        self.now += 1
        return self.now

    def alloc(self, nbytes):
        ptr, self.next = self.next, self.next + max(512, (nbytes + 511) // 512 * 512)
        self.trace.append(_entry("alloc", ptr, nbytes, self.clock() if self.timed else None))
        return _Storage(ptr, nbytes)

    def free(self, t):
        for action in ("free_requested", "free_completed"):
            self.trace.append(_entry(action, t.data_ptr(), t._st.size,
                                     self.clock() if self.timed else None))

    def save(self, t):
        """What autograd does with a tensor it saves for backward."""
        hooks = self.torch.state["saved_hooks"]
        self.saved.append(hooks[-1][0](t) if hooks else t)

    def backward(self, tensors, grad_tensors=None, retain_graph=None, create_graph=False,
                 inputs=None):
        for _, p in self.model.named_parameters():
            p.grad = self.Tensor(p.shape)
        self.saved = []


class _Module:
    def __init__(self):
        self.pre, self.post, self.children, self.params = [], [], {}, {}
        self.training = True

    def named_modules(self, prefix=""):
        yield prefix, self
        for n, m in self.children.items():
            yield from m.named_modules(prefix + "." + n if prefix else n)

    def named_parameters(self):
        for name, m in self.named_modules():
            for n, p in m.params.items():
                yield (name + "." + n if name else n), p

    def named_buffers(self):
        return iter(())

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def register_forward_pre_hook(self, hook, *, prepend=False):
        self.pre.insert(0, hook) if prepend else self.pre.append(hook)
        return _Handle(self.pre, hook)

    def register_forward_hook(self, hook, *, always_call=False):
        self.post.append(hook)
        return _Handle(self.post, hook)

    def __call__(self, *args):
        for h in list(self.pre):
            assert h(self, args) is None
        out = self.forward(*args)
        for h in list(self.post):
            assert h(self, args, out) is None
        return out


class _Act(_Module):
    def __init__(self, world):
        super().__init__()
        self.world = world

    def forward(self, x):
        self.world.save(x)  # a GELU saves its input: made by the enclosing layer
        return self.world.Tensor(x.shape)


class _Linear(_Module):
    def __init__(self, world, d_in, d_out):
        super().__init__()
        self.world, self.d_out = world, d_out
        self.params["weight"] = world.Tensor((d_out, d_in))
        self.children["act"] = _Act(world)
        self.during = None  # called in the middle of forward

    def forward(self, x):
        b, s, _ = x.shape
        self.world.save(x)
        self.world.save(self.params["weight"].detach())  # weight.t(), as mm saves it
        y = self.world.Tensor((b * s, self.d_out))  # addmm's output
        if self.during:
            self.during()
        return self.children["act"](y.view(b, s, self.d_out))


class _Net(_Module):
    def __init__(self, world):
        super().__init__()
        self.world = world
        self.children["blocks"] = blocks = _Module()
        blocks.children["0"] = _Linear(world, 8, 16)
        blocks.children["1"] = _Linear(world, 16, 8)

    def forward(self, x):
        for b in self.children["blocks"].children.values():
            x = b(x)
        self.world.Tensor((3,))  # a temporary no hook sees
        return x


class _Adam(FakeOptimizer):
    def __init__(self, torch, world):
        super().__init__(torch)
        self.world, self.state = world, {}
        self.param_groups = [{"params": world.model.parameters()}]

    def step(self):
        for hook in list(self.pre):
            hook(self, (), {})
        for p in self.param_groups[0]["params"]:
            if p not in self.state:
                self.state[p] = {"exp_avg": self.world.Tensor(p.shape)}
        for hook in list(self.post):
            hook(self, (), {})

    def zero_grad(self):
        for p in self.param_groups[0]["params"]:
            if p.grad is not None:
                self.world.free(p.grad)
                p.grad = None


class ShapesTest(RecorderTestCase):
    """The hooks and the join, with a fake torch that allocates as the caching allocator
    does and writes its trace."""

    def run_steps(self, version="2.5.0", flavor="2.5", steps=2, during=None, before_attach=None, **kw):
        torch = self.install(version=version, flavor=flavor)
        world = self.world = _World(torch, timed=version >= "2.2")
        if before_attach:
            before_attach(world)
        orig = hr._now_us
        hr._now_us = world.clock
        self.addCleanup(setattr, hr, "_now_us", orig)
        kw.setdefault("micro_batch", 3)
        kw.setdefault("seq", 5)
        rec = self.recorder(**kw).start()
        rec.attach(world.model, world.opt)
        self.inputs, self.outputs = [], []
        for i in range(steps):
            x = world.Tensor((3, 5, 8))
            self.inputs.append(x)
            if during and i == steps - 1:
                world.model.children["blocks"].children["1"].during = during
            out = world.model(x)
            self.outputs.append(out)
            torch.autograd.backward(out)
            world.opt.step()
            world.opt.zero_grad()
        return torch, world, rec

    def keys(self, snap, addr):
        return [e.get("headroom_tensor") for e in snap["device_traces"][0]
                if e["action"] == "alloc" and e["addr"] == addr]

    def load(self, path):
        with open(path, "rb") as f:
            return pickle.load(f)

    def test_keys_of_a_recorded_step(self):
        torch, world, rec = self.run_steps()
        snap = self.load(rec.dump())
        self.assertEqual(snap["headroom_tensor_keys"], 1)
        fc0 = world.model.children["blocks"].children["0"]
        # the layer's own output ([b*s, 16] made, [b, s, 16] returned) through its act
        for e in snap["device_traces"][0]:
            k = e.get("headroom_tensor")
            if k and k["module"] == "blocks.0" and k["kind"] == "activation":
                self.assertEqual(k, {"shape": [3, 5, 16], "dtype": "float32",
                                     "dims": {"batch": [0], "seq": [1]}, "module": "blocks.0",
                                     "kind": "activation", "phase": "forward"})
                break
        else:
            self.fail("no activation of blocks.0")
        w = self.keys(snap, fc0.params["weight"].data_ptr())
        self.assertEqual(w, [{"shape": [16, 8], "dtype": "float32",
                              "dims": {"batch": [], "seq": []}, "module": None,
                              "kind": "parameter", "phase": None}])
        x = self.keys(snap, self.inputs[0].data_ptr())[0]
        self.assertEqual((x["kind"], x["shape"], x["dims"], x["module"]),
                         ("input", [3, 5, 8], {"batch": [0], "seq": [1]}, None))
        out = self.keys(snap, self.outputs[-1].data_ptr())[0]
        self.assertEqual((out["module"], out["kind"]), ("blocks.1.act", "activation"))
        grads = [e["headroom_tensor"] for e in snap["device_traces"][0]
                 if e.get("headroom_tensor", {}).get("kind") == "gradient"]
        self.assertEqual(len(grads), 4)  # two weights, two steps
        self.assertEqual({(g["phase"], g["module"]) for g in grads}, {("backward", None)})
        state = self.keys(snap, world.opt.state[fc0.params["weight"]]["exp_avg"].data_ptr())
        self.assertEqual((state[0]["kind"], state[0]["phase"]), ("optimizer_state", "optimizer"))
        # the temporary of the root's forward: no hook saw it
        temps = [e for e in snap["device_traces"][0] if e["action"] == "alloc"
                 and e["size"] == 12]
        self.assertEqual(len(temps), 2)
        self.assertTrue(all("headroom_tensor" not in e for e in temps))
        meta = snap[hr.SNAPSHOT_META_KEY]["tensor_keys"]
        self.assertEqual(meta["by"], ["time_us"])
        self.assertEqual(meta["unjoined"]["no_alloc"], 0)
        self.assertEqual((meta["micro_batch"], meta["seq"]), (3, 5))

    def test_module_hooks_run_before_a_frameworks_own(self):
        # fully_shard registers FSDP2's pre-forward hook (its all-gather) before the recorder
        # attaches: the recorder's goes first, so what that hook allocates is the layer's
        order = []

        def framework_hook(world):
            block = world.model.children["blocks"].children["0"]
            block.register_forward_pre_hook(lambda m, a: order.append(("fsdp", self.world.clock())))

        torch, world, rec = self.run_steps(steps=1, before_attach=framework_hook)
        block = world.model.children["blocks"].children["0"]
        self.assertEqual(len(block.pre), 2)
        self.assertIsNot(block.pre[0], block.pre[-1])
        self.assertEqual(block.pre[0].func.__name__, "_mod_pre")  # the recorder's, first
        self.assertEqual(block.pre[0].args, ("blocks.0",))
        self.assertEqual(len(order), 1)

    def test_module_is_where_the_storage_was_allocated(self):
        # the act saves (and returns a new) tensor; what it saved, the layer's [b*s, 16]
        # viewed [b, s, 16], was made by blocks.0 before blocks.0.act ran
        torch, world, rec = self.run_steps(steps=1)
        snap = self.load(rec.dump())
        trace = snap["device_traces"][0]
        y = [e["headroom_tensor"] for e in trace if e["action"] == "alloc" and e["size"] == 960]
        # the layer's [b*s, 16], seen only as what its act saved, then the act's output
        self.assertEqual([k["module"] for k in y], ["blocks.0", "blocks.0.act"])
        self.assertEqual(y[0]["shape"], [3, 5, 16])
        y_addr = [e["addr"] for e in trace if e["action"] == "alloc" and e["size"] == 960][0]
        saved = [r for r in rec._records if r[8] == "saved" and r[2] == y_addr]
        self.assertEqual([r[9] for r in saved], ["blocks.0.act"])  # the hook's module

    def test_an_oom_inside_forward_names_the_running_module(self):
        def oom():
            world = self.world
            world.Tensor((7, 7))  # allocated, seen by no hook
            world.save(world.Tensor((6, 6)))  # allocated and saved in blocks.1
            world.torch.state["oom_observers"][0](0, 1 << 30, 1 << 30, 0)
        torch, world, rec = self.run_steps(during=oom)
        path = os.path.join(self.out, "headroom_rank0_step1_oom.pickle")
        snap = self.load(path)
        self.assertIn("headroom_tensor_keys", snap)
        trace = snap["device_traces"][0]
        self.assertEqual(trace[-1]["size"], 144)  # the last entry before the dump
        # blocks.1 still runs (no post hook yet): its open call holds the allocation
        self.assertEqual(trace[-1]["headroom_tensor"]["module"], "blocks.1")
        self.assertEqual(trace[-1]["headroom_tensor"]["phase"], "forward")
        self.assertEqual(trace[-2]["size"], 196)
        self.assertNotIn("headroom_tensor", trace[-2])  # no hook saw it

    def test_pytorch_2_1_joins_by_order(self):
        torch, world, rec = self.run_steps(version="2.1.0", flavor="2.1")
        snap = self.load(rec.dump())
        self.assertTrue(all("time_us" not in e for e in snap["device_traces"][0]))
        meta = snap[hr.SNAPSHOT_META_KEY]["tensor_keys"]
        self.assertEqual(meta["by"], ["order"])
        fc0 = world.model.children["blocks"].children["0"]
        w = self.keys(snap, fc0.params["weight"].data_ptr())[0]
        self.assertEqual(w["kind"], "parameter")
        out = self.keys(snap, self.outputs[-1].data_ptr())[0]  # still alive at the dump
        self.assertEqual((out["module"], out["phase"]), ("blocks.1.act", "forward"))

    def test_hooks_go_with_stop(self):
        torch, world, rec = self.run_steps(steps=1)
        fc0 = world.model.children["blocks"].children["0"]
        self.assertEqual((len(fc0.pre), len(fc0.post)), (1, 1))
        self.assertEqual(len(world.model.pre), 2)  # the phases' and the shapes'
        self.assertEqual(len(torch.state["saved_hooks"]), 1)
        rec.stop()
        self.assertEqual((fc0.pre, fc0.post, world.model.pre), ([], [], []))
        self.assertEqual(torch.state["saved_hooks"], [])

    def test_shapes_off(self):
        for kw, env in (({"shapes": False}, None), ({}, "0")):
            if env is not None:
                os.environ["HEADROOM_SHAPES"] = env
                self.addCleanup(os.environ.pop, "HEADROOM_SHAPES", None)
            torch, world, rec = self.run_steps(steps=1, **kw)
            fc0 = world.model.children["blocks"].children["0"]
            self.assertEqual((fc0.pre, fc0.post), ([], []))
            self.assertEqual(torch.state["saved_hooks"], [])
            snap = self.load(rec.dump())
            self.assertNotIn("headroom_tensor_keys", snap)
            self.assertNotIn("tensor_keys", snap[hr.SNAPSHOT_META_KEY])
            self.assertFalse(any("headroom_tensor" in e for e in snap["device_traces"][0]))
            rec.stop()

    def test_a_failed_join_leaves_no_half_keys(self):
        torch, world, rec = self.run_steps(steps=1)

        def broken(snapshot, *a, **k):
            snapshot["device_traces"][0][0]["headroom_tensor"] = {}
            snapshot["headroom_tensor_keys"] = 1
            raise RuntimeError("join exploded")
        orig = hr.join_tensor_records
        hr.join_tensor_records = broken
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                path = rec.dump()
        finally:
            hr.join_tensor_records = orig
        self.assertTrue(any("join exploded" in str(w.message) for w in caught))
        snap = self.load(path)
        self.assertNotIn("headroom_tensor_keys", snap)
        self.assertFalse(any("headroom_tensor" in e for e in snap["device_traces"][0]))

    def test_the_steps_own_saved_tensor_hooks_are_left_alone(self):
        torch = self.install(version="2.8.0", flavor="impl")
        world = _World(torch)
        torch._C._autograd = types.SimpleNamespace(
            _top_saved_tensors_default_hooks=lambda ignore_is_tracing: ("pack", "unpack"))
        rec = self.recorder()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rec.start().attach(world.model, world.opt)
        self.assertEqual(torch.state["saved_hooks"], [])
        self.assertTrue(any("saved-tensor hooks are active" in str(w.message) for w in caught))
        fc0 = world.model.children["blocks"].children["0"]
        self.assertEqual(len(fc0.pre), 1)  # the module hooks are there all the same

    def test_a_compiled_model_gets_no_hooks(self):
        torch = self.install(version="2.5.0", flavor="2.5")
        world = _World(torch)
        world.model.children["blocks"]._compiled_call_impl = object()  # blocks.compile()
        rec = self.recorder()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rec.start().attach(world.model, world.opt)
        self.assertTrue(any("blocks is compiled" in str(w.message) for w in caught))
        fc0 = world.model.children["blocks"].children["0"]
        self.assertEqual((fc0.pre, torch.state["saved_hooks"]), ([], []))
        self.assertEqual(len(world.model.pre), 1)  # the phases' hooks only
        self.assertNotIn("headroom_tensor_keys", self.load(rec.dump()))

    def test_pack_keeps_a_detached_alias(self):
        torch, world, rec = self.run_steps(steps=1)
        x = world.Tensor((3, 5, 8))
        packed = torch.state["saved_hooks"][-1][0](x)
        self.assertIsNot(packed, x)
        self.assertIs(packed.untyped_storage(), x.untyped_storage())
        self.assertIs(torch.state["saved_hooks"][-1][1](packed), packed)


class StepTokens(RecorderTestCase):
    def load(self, path):
        with open(path, "rb") as f:
            return pickle.load(f)

    def test_step_tokens_land_in_headroom_config(self):
        self.install(version="2.5.0", flavor="2.5")
        config = {"model": "gpt2", "micro_batch": 8, "precision": "bf16",
                  "worst_case_tokens": "8192"}
        rec = self.recorder(config=config).start()
        with rec.iteration(tokens=4096):
            pass
        with rec.iteration(tokens=4096):
            pass
        with rec.iteration():
            rec.step_tokens(1)
            rec.step_tokens(8192)  # the step's last word counts
        cfg = self.load(rec.dump())["headroom_config"]
        self.assertEqual(cfg, dict(config, step_tokens="4096,4096,8192"))
        self.assertEqual(config, {"model": "gpt2", "micro_batch": 8, "precision": "bf16",
                                  "worst_case_tokens": "8192"})  # the caller's dict untouched

    def test_config_wins_over_what_the_snapshot_has(self):
        torch = self.install(version="2.5.0", flavor="2.5")
        orig = torch.cuda.memory._snapshot
        torch.cuda.memory._snapshot = lambda: dict(orig(), headroom_config={"model": "old",
                                                                            "seq": 512})
        rec = self.recorder(config={"model": "new"}).start()
        self.assertEqual(self.load(rec.dump())["headroom_config"], {"model": "new", "seq": 512})

    def test_no_config_and_no_sizes_leave_the_snapshot_as_it_was(self):
        self.install(version="2.5.0", flavor="2.5")
        rec = self.recorder().start()
        with rec.iteration():
            pass
        self.assertNotIn("headroom_config", self.load(rec.dump()))

    def test_an_oom_dump_has_the_running_steps_size(self):
        torch = self.install(version="2.5.0", flavor="2.5")
        rec = self.recorder().start()
        with rec.iteration(tokens=100):
            pass
        with self.assertRaises(MemoryError):
            with rec.iteration(tokens=300):
                torch.state["oom_observers"][0](0, 1 << 30, 70 << 30, 1 << 20)
                raise MemoryError
        path = os.path.join(self.out, "headroom_rank0_step1_oom.pickle")
        self.assertEqual(self.load(path)["headroom_config"], {"step_tokens": "100,300"})
        self.assertEqual(rec.oom_step, 1)

    def test_bad_counts_warn_and_training_goes_on_without_cuda(self):
        self.install(version="2.5.0", cuda=False)
        rec = self.recorder(config={"model": "m"})
        self.start_warned(rec)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with rec.iteration(tokens="many"):
                rec.step_tokens(-1)
            with rec.iteration(tokens=64):
                pass
        self.assertEqual(len([w for w in caught if "step_tokens" in str(w.message)]), 1)
        self.assertEqual(rec.step_sizes(), [64])

    def test_the_oldest_sizes_go_but_their_maximum_stays(self):
        self.install(version="2.5.0", flavor="2.5")
        saved, hr.MAX_STEP_TOKENS_KEPT = hr.MAX_STEP_TOKENS_KEPT, 3
        try:
            rec = self.recorder().start()
            for n in (10, 90, 20, 30, 40):
                with rec.iteration(tokens=n):
                    pass
        finally:
            hr.MAX_STEP_TOKENS_KEPT = saved
        self.assertEqual((rec.step_sizes(), rec.max_step_tokens()), ([20, 30, 40], 90))
        cfg = self.load(rec.dump())["headroom_config"]
        self.assertEqual(cfg, {"step_tokens": "20,30,40", "max_step_tokens": 90})


def _budget_rows(db):
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute("SELECT * FROM headroom_budget_runs ORDER BY rowid")]
    finally:
        con.close()


def _log_metrics(db, rank, count, barrier):
    """One rank of the concurrency test (a forked process): ``count`` metrics at once."""
    torch = make_fake_torch(version="2.5.0", flavor="2.5")
    barrier.wait()
    for i in range(count):
        hr.log_run_metric(db, {"rank": rank}, torch=torch, step_tokens=[i])


class RunMetric(RecorderTestCase):
    def setUp(self):
        super().setUp()
        self.db = os.path.join(self.out, "budget.sqlite")

    def test_one_row_per_call_with_the_schemas_columns(self):
        torch = self.install(version="2.5.0", flavor="2.5")
        run = hr.log_run_metric(self.db, {"Model": "gpt2", "micro_batch": 8}, device=1,
                                step_tokens=[4096, 8192, 4096], worst_case_tokens=8192,
                                oom=True, oom_iteration=2)
        self.assertRegex(run, r"^metric:[0-9a-f]{32}$")
        (row,) = _budget_rows(self.db)
        recorded_at = row.pop("recorded_at")
        self.assertRegex(recorded_at, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        self.assertEqual(row, {
            "run_id": run, "file_hash": None, "file": None, "device": 1, "source": "metric",
            "config_json": json.dumps({"micro_batch": "8", "model": "gpt2",
                                       "worst_case_tokens": "8192"}, sort_keys=True),
            "peak_allocated": (3 << 30) + 1, "peak_reserved": (4 << 30) + 1,
            "capacity": 80 << 30, "oom": 1, "oom_iteration": 2, "worst_iteration": None,
            "iteration_peaks_json": "[]", "categories_json": "{}", "max_step_tokens": 8192,
            "worst_case_tokens": 8192, "tool_version": "headroom_record " + hr.__version__})
        # the second run, from the config alone, on the current device
        hr.log_run_metric(self.db, {"worst_case_tokens": 512, "step_tokens": "256,512"},
                          torch=torch)
        rows = _budget_rows(self.db)
        self.assertEqual(len(rows), 2)
        self.assertEqual((rows[1]["device"], rows[1]["oom"], rows[1]["max_step_tokens"],
                          rows[1]["worst_case_tokens"]), (0, 0, 512, 512))
        con = sqlite3.connect(self.db)
        try:
            self.assertEqual(con.execute("SELECT value FROM headroom_budget_meta WHERE key = "
                                         "'schema_version'").fetchall(), [("1",)])
            self.assertEqual(con.execute("PRAGMA journal_mode").fetchone()[0], "wal")
            self.assertEqual(con.execute("SELECT count(*) FROM sqlite_master WHERE name = "
                                         "'headroom_budget_runs_time'").fetchone()[0], 1)
        finally:
            con.close()

    def test_the_same_run_id_is_one_row(self):
        torch = self.install(version="2.5.0", flavor="2.5")
        for _ in range(2):
            self.assertEqual(hr.log_run_metric(self.db, torch=torch, run_id="job7/0"), "job7/0")
        self.assertEqual(len(_budget_rows(self.db)), 1)

    def test_a_newer_store_is_refused_and_left_as_it_was(self):
        self.install(version="2.5.0", flavor="2.5")
        con = sqlite3.connect(self.db)
        con.execute("CREATE TABLE headroom_budget_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        con.execute("INSERT INTO headroom_budget_meta VALUES ('schema_version', '2')")
        con.commit()
        con.close()
        with open(self.db, "rb") as f:
            before = f.read()
        with self.assertRaises(hr.BudgetStoreError) as caught:
            hr.log_run_metric(self.db, {"model": "m"})
        self.assertIn(self.db, str(caught.exception))
        self.assertIn("schema version 2", str(caught.exception))
        with open(self.db, "rb") as f:
            self.assertEqual(f.read(), before)

    def test_a_file_that_is_no_database_is_refused_as_it_is(self):
        self.install(version="2.5.0", flavor="2.5")
        with open(self.db, "wb") as f:
            f.write(b"not sqlite at all " * 100)
        with self.assertRaises(hr.BudgetStoreError) as caught:
            hr.log_run_metric(self.db)
        self.assertIn(self.db, str(caught.exception))
        with open(self.db, "rb") as f:
            self.assertEqual(f.read(), b"not sqlite at all " * 100)

    def test_postgresql_goes_through_headroom_cli_without_repeating_the_url(self):
        self.install(version="2.5.0", flavor="2.5")
        saved = {k: os.environ.get(k) for k in ("HEADROOM_CLI", "PATH")}
        try:
            os.environ.pop("HEADROOM_CLI", None)
            os.environ["PATH"] = self.out  # no headroom-cli to be found
            for url in ("postgresql://u:secret@host/db", "postgres://u:secret@host/db"):
                with self.assertRaises(hr.BudgetStoreError) as caught:
                    hr.log_run_metric(url)
                self.assertIn("headroom-cli", str(caught.exception))
                self.assertNotIn("secret", str(caught.exception))
            # A stand-in CLI that keeps what it was given: the row on stdin, the URL in argv.
            fake = os.path.join(self.out, "fake-cli")
            seen = os.path.join(self.out, "seen.json")
            with open(fake, "w") as f:
                f.write("#!%s\nimport json, sys\njson.dump({'argv': sys.argv[1:], 'row': json.load(sys.stdin)}, "
                        "open(%r, 'w'))\n" % (sys.executable, seen))
            os.chmod(fake, 0o755)
            os.environ["HEADROOM_CLI"] = fake
            run_id = hr.log_run_metric("postgresql://u:secret@host/db", {"model": "m"}, step_tokens=[4, 8])
            with open(seen) as f:
                got = json.load(f)
            self.assertEqual(got["argv"], ["budget", "record", "--db", "postgresql://u:secret@host/db",
                                           "--metric-json", "-"])
            self.assertEqual(got["row"]["run_id"], run_id)
            self.assertEqual(got["row"]["max_step_tokens"], 8)
            self.assertEqual(json.loads(got["row"]["config_json"])["model"], "m")
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def test_no_cuda_raises_only_when_a_metric_is_asked_for(self):
        self.install(version="2.5.0", cuda=False)
        rec = self.recorder(config={"model": "m"})
        self.start_warned(rec)
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            with rec.iteration(tokens=8):  # training is left alone
                pass
            self.assertIsNone(rec.dump())
        for call in (lambda: hr.log_run_metric(self.db), lambda: rec.log_metric(self.db)):
            with self.assertRaisesRegex(RuntimeError, "CUDA is not available"):
                call()
        self.assertFalse(os.path.exists(self.db))

    def test_the_recorders_metric_has_its_config_sizes_and_oom(self):
        torch = self.install(version="2.5.0", flavor="2.5")
        rec = self.recorder(config={"model": "gpt2", "worst_case_tokens": 8192}).start()
        for n in (4096, 8192):
            with rec.iteration(tokens=n):
                pass
        with rec.iteration(tokens=2048):
            torch.state["oom_observers"][0](0, 1 << 30, 70 << 30, 1 << 20)
        rec.log_metric(self.db)
        (row,) = _budget_rows(self.db)
        self.assertEqual((row["source"], row["device"], row["oom"], row["oom_iteration"],
                          row["max_step_tokens"], row["worst_case_tokens"]),
                         ("metric", 0, 1, 2, 8192, 8192))
        self.assertEqual(json.loads(row["config_json"]),
                         {"model": "gpt2", "worst_case_tokens": "8192"})

    def test_the_schema_is_budgetschema_cpps(self):
        cpp = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                           "core", "budget", "budgetschema.cpp")
        if not os.path.exists(cpp):
            self.skipTest("core/budget/budgetschema.cpp is not next to python/")
        with open(cpp) as f:
            text = f.read()
        body = text[text.index("budgetMigration(int fromVersion)"):]
        body = body[:body.index("};")]
        statements = [re.sub(r'"\s*"', "", s) for s in
                      re.findall(r'("(?:[^"\\]|\\.)*"(?:\s*"(?:[^"\\]|\\.)*")*)\s*,', body)]
        self.assertEqual([s.strip('"') for s in statements], list(hr._BUDGET_DDL))
        columns = re.findall(r'\{"(\w+)", (?:true|false)\}', text)
        # the columns added to version 1 since (budgetAddedColumns) are the recorder's to leave NULL
        added = re.findall(r'\{"(\w+)", "TEXT"\}', text)
        self.assertEqual(added, ["projection_json"])
        self.assertEqual(tuple(c for c in columns if c not in added), hr._BUDGET_COLUMNS)

    def test_eight_processes_log_at_once(self):
        try:
            ctx = multiprocessing.get_context("fork")  # the children share this module's state
        except ValueError:
            self.skipTest("no fork on this platform")
        barrier = ctx.Barrier(8)
        procs = [ctx.Process(target=_log_metrics, args=(self.db, r, 20, barrier))
                 for r in range(8)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        self.assertEqual([p.exitcode for p in procs], [0] * 8)
        rows = _budget_rows(self.db)
        self.assertEqual(len(rows), 160)
        self.assertEqual(len({r["run_id"] for r in rows}), 160)
        per_rank = {}
        for r in rows:
            per_rank.setdefault(json.loads(r["config_json"])["rank"], []).append(r)
        self.assertEqual(sorted((k, len(v)) for k, v in per_rank.items()),
                         [(str(k), 20) for k in range(8)])


if __name__ == "__main__":
    unittest.main()
