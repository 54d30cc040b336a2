"""headroom_record: record a CUDA memory snapshot that Headroom can explain.

Copy this one file next to a training script. It needs only PyTorch, imported
lazily, so importing the module never fails.

* Starts ``torch.cuda.memory._record_memory_history`` (PyTorch >= 2.1) with
  ``enabled='all', context='all', stacks='python', max_entries=1_000_000``
  (``DEFAULT_MAX_ENTRIES``; PyTorch's own default is unbounded). ``stacks='all'``
  adds C++ frames, which gives backward allocations a stack but can make one
  dump take minutes. Where supported (>= 2.5) it passes
  ``global_record_annotations=True`` so markers from every thread are kept.
* Marks phases with ``torch.profiler.record_function`` names Headroom
  recognises, by hand (``with rec.phase("forward"):``) or automatically
  (``rec.attach(model, optimizer)``: module forward pre/post hooks, optimizer
  ``register_step_pre_hook``/``register_step_post_hook``, and a wrapper around
  ``torch.autograd.backward``).
* Dumps ``pickle.dump(torch.cuda.memory._snapshot(), f, protocol=4)`` (the
  official viewer rejects protocol 5) on out-of-memory (the allocator's OOM
  observer), after chosen iterations and on demand, to
  ``<out_dir>/headroom_rank<R>_step<S>_<reason>.pickle``.
* Never changes what training computes. When recording is impossible (no torch,
  no CUDA, PyTorch < 2.1) it warns once and every call becomes a no-op.

PHASE_NAMES (values) and ITERATION_PREFIX, the record_function names used::

    ## forward ##          model forward
    ## loss ##             loss computation
    ## backward ##         loss.backward() / torch.autograd.backward
    ## optimizer ##        optimizer.step() (and zero_grad when marked by hand)
    headroom.iteration#N   one training iteration, N = 0, 1, 2, ...

Each dump also carries a top-level ``headroom_record`` dict (rank, step, reason,
torch version, recording arguments, OOM details). Snapshots from PyTorch < 2.5
have no ``external_annotations``; the helper then adds that key from its own log
of the markers above, in the same shape (``{'name', 'stage': 'START'|'END',
'device', 'time_us'}``, wall-clock microseconds like trace entries' ``time_us``
from 2.2 on).
"""

import contextlib
import functools
import inspect
import os
import pickle
import re
import sys
import threading
import time
import warnings
from collections import deque

__version__ = "1.0"
__all__ = ["Recorder", "record", "HeadroomWarning", "PHASE_NAMES", "ITERATION_PREFIX",
           "DEFAULT_MAX_ENTRIES", "snapshot_filename", "current_rank", "torch_version"]

DEFAULT_MAX_ENTRIES = 1_000_000
MIN_TORCH = (2, 1)  # enabled/context/stacks/max_entries API
GLOBAL_ANNOTATIONS_SINCE = (2, 5)  # global_record_annotations, PR #129072 (inferred 2.5)
PICKLE_PROTOCOL = 4
PHASE_NAMES = {
    "forward": "## forward ##",
    "loss": "## loss ##",
    "backward": "## backward ##",
    "optimizer": "## optimizer ##",
}
ITERATION_PREFIX = "headroom.iteration#"
SNAPSHOT_META_KEY = "headroom_record"
_RANK_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "LOCAL_RANK")


class HeadroomWarning(RuntimeWarning):
    """Recording could not happen as asked; training continues unchanged."""


_WARNED = set()
_LOCK = threading.RLock()
_ACTIVE = []  # recorders currently recording
_OOM_ATTACHED = [False]  # the allocator cannot detach observers, so attach once per process
_BACKWARD_PATCH = {"orig": None, "wrapper": None, "users": 0}


def _warn_once(key, message):
    with _LOCK:
        if key in _WARNED:
            return
        _WARNED.add(key)
    warnings.warn("headroom_record: " + message, HeadroomWarning, stacklevel=3)


def _safe(fn, default):
    try:
        return fn()
    except Exception:
        return default


def torch_version(torch):
    """(major, minor) of ``torch.__version__``; (0, 0) if unparsable."""
    m = re.match(r"\s*(\d+)\.(\d+)", str(getattr(torch, "__version__", "")))
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def current_rank(torch=None):
    """torch.distributed rank if initialised, else $RANK (then the MPI/Slurm
    equivalents, then $LOCAL_RANK), else 0."""
    dist = getattr(torch, "distributed", None)
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    except Exception:
        pass
    for var in _RANK_VARS:
        try:
            return int(os.environ[var])
        except (KeyError, ValueError):
            continue
    return 0


def snapshot_filename(rank, step, reason, prefix="headroom"):
    """``headroom_rank0_step12_oom.pickle``; the reason is reduced to [A-Za-z0-9_-]."""
    reason = re.sub(r"[^A-Za-z0-9_-]+", "-", str(reason)).strip("-") or "manual"
    return "%s_rank%d_step%d_%s.pickle" % (prefix, rank, step, reason)


def _accepts(torch, param, version_default):
    """Whether _record_memory_history takes ``param``. Newer releases hide the
    parameters behind ``(enabled, *args, **kwargs)`` and ``..._impl``."""
    for name in ("_record_memory_history_impl", "_record_memory_history"):
        fn = getattr(torch.cuda.memory, name, None)
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            continue
        if param in params:
            return True
        if not any(p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) for p in params.values()):
            return False
    return version_default


def _oom_observer(device, alloc, device_allocated, device_free):
    # Called by the allocator just before it raises OutOfMemoryError: never raise here.
    for rec in list(_ACTIVE):
        try:
            rec._on_oom(device, alloc, device_allocated, device_free)
        except Exception as exc:
            _warn_once("oom-observer", "OOM dump failed: %r" % (exc,))


def _backward_wrapper(orig):
    @functools.wraps(orig)
    def backward(*args, **kwargs):
        me = threading.current_thread()
        recs = [r for r in list(_ACTIVE) if r._auto_backward and r._thread is me
                and not r._in_backward]
        if not recs:  # other threads, reentrant checkpointing inside backward
            return orig(*args, **kwargs)
        with contextlib.ExitStack() as stack:
            for r in recs:
                stack.enter_context(r._backward_window())
            return orig(*args, **kwargs)
    return backward


class Recorder:
    """Records CUDA allocator history and dumps Headroom-ready snapshots.

    ``out_dir``: where dumps go (created on first dump). ``max_entries``: ring
    buffer size (older events are overwritten). ``stacks``: 'python' (fast) or
    'all' (adds C++ frames, slow to dump). ``context``: 'all' (stacks for allocs
    and frees), 'alloc' or 'state'. ``dump_at_steps``: iteration numbers
    (0-based) after which to dump. ``ranks``: 'all', an int or ints; other ranks
    stay silent no-ops. ``max_oom_dumps``: OOM dumps per recorder (jobs that
    catch OOM and retry hit it repeatedly). ``global_annotations``: pass
    ``global_record_annotations=True`` where supported. ``verbose``: print each
    path written to stderr.

    Use it as a context manager or call ``start()``/``stop()``; dump before
    stopping, because stopping ends the history.
    """

    def __init__(self, out_dir=".", *, max_entries=DEFAULT_MAX_ENTRIES, stacks="python",
                 context="all", dump_on_oom=True, dump_at_steps=(), ranks="all",
                 max_oom_dumps=1, global_annotations=True, prefix="headroom", verbose=True):
        if stacks not in ("python", "all"):
            raise ValueError("stacks must be 'python' or 'all', not %r" % (stacks,))
        if context not in ("all", "alloc", "state"):
            raise ValueError("context must be 'all', 'alloc' or 'state', not %r" % (context,))
        if not isinstance(max_entries, int) or max_entries < 1:
            raise ValueError("max_entries must be a positive int")
        if ranks != "all":
            ranks = frozenset([ranks] if isinstance(ranks, int) else (int(r) for r in ranks))
        self.out_dir, self.prefix, self.verbose = os.fspath(out_dir), prefix, verbose
        self.max_entries, self.stacks, self.context = max_entries, stacks, context
        self.dump_on_oom, self.max_oom_dumps = dump_on_oom, max_oom_dumps
        self.dump_at_steps = frozenset(int(s) for s in dump_at_steps)
        self.ranks, self.global_annotations = ranks, global_annotations
        self.active = False  # True only while this recorder records on this rank
        self.selected = True  # False on ranks left out by ``ranks``
        self.step = 0  # current iteration number
        self.dumps = []  # paths written
        self.record_kwargs = None  # what was passed to _record_memory_history
        self._torch = self._rf_cls = self._thread = self._last_optimizer = None
        self._targets = None  # (model, optimizers, backward) from attach()
        self._device = self._fwd_depth = self._manual_iter = self._oom_dumps = 0
        self._started_history = self._in_backward = self._auto_backward = False
        self._own_annotations = deque(maxlen=200_000)
        self._open = {}  # key -> (record_function, name) for windows opened by hooks
        self._handles = []
        self._dump_lock = threading.RLock()

    # ------------------------------------------------------------ lifecycle
    def start(self):
        """Begin recording; with one warning, a no-op when that is impossible."""
        if self.active:
            return self
        try:
            import torch  # noqa: PLC0415 - lazy on purpose
        except Exception:
            _warn_once("no-torch", "PyTorch is not importable; not recording")
            return self
        version = torch_version(torch)
        if version < MIN_TORCH:
            _warn_once("old-torch", "PyTorch %s is older than 2.1, whose memory-history API "
                       "this needs; not recording" % getattr(torch, "__version__", "?"))
            return self
        if not _safe(lambda: bool(torch.cuda.is_available()), False):
            _warn_once("no-cuda", "CUDA is not available; not recording")
            return self
        if self.ranks != "all" and current_rank(torch) not in self.ranks:
            self.selected = False
            return self
        kwargs = {"enabled": "all", "context": self.context, "stacks": self.stacks,
                  "max_entries": self.max_entries}
        if self.global_annotations and _accepts(
                torch, "global_record_annotations", version >= GLOBAL_ANNOTATIONS_SINCE):
            kwargs["global_record_annotations"] = True
        was_enabled = _safe(lambda: bool(torch._C._cuda_isHistoryEnabled()), False)
        try:
            try:
                torch.cuda.memory._record_memory_history(**kwargs)
            except TypeError:
                if kwargs.pop("global_record_annotations", None) is None:
                    raise
                torch.cuda.memory._record_memory_history(**kwargs)
        except Exception as exc:
            _warn_once("record-failed", "_record_memory_history failed (%r); not recording"
                       % (exc,))
            return self
        self._torch, self.record_kwargs, self._started_history = torch, kwargs, not was_enabled
        self._thread = threading.current_thread()
        for owner in (getattr(torch, "profiler", None),
                      getattr(getattr(torch, "autograd", None), "profiler", None)):
            self._rf_cls = self._rf_cls or getattr(owner, "record_function", None)
        self._device = _safe(lambda: int(torch.cuda.current_device()), 0)
        with _LOCK:
            _ACTIVE.append(self)
            self.active = True
        if self.dump_on_oom:
            self._attach_oom_observer(torch)
        already = _safe(lambda: int(torch.cuda.memory_allocated()), 0)
        if already > 0:
            _warn_once("late-start", "%d bytes were allocated before recording started; those "
                       "blocks will have no stacks. Start the recorder before the model "
                       "touches the GPU." % already)
        if self._targets is not None:
            self._register_hooks()
        return self

    def stop(self):
        """Stop recording (only if this recorder turned it on) and remove all hooks."""
        if not self.active:
            return
        for key in ("loss", "backward", "forward", "optimizer", "iteration"):
            self._close(key)
        self._remove_hooks()
        with _LOCK:
            if self in _ACTIVE:
                _ACTIVE.remove(self)
            self.active = False
        if self._started_history:
            try:
                self._torch.cuda.memory._record_memory_history(enabled=None)
            except Exception as exc:
                _warn_once("stop-failed", "could not stop memory history: %r" % (exc,))
        self._started_history = False

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        self.stop()
        return False

    # ---------------------------------------------------------- annotations
    @contextlib.contextmanager
    def phase(self, name):
        """``with rec.phase("forward"):``; ``name`` is a key of PHASE_NAMES."""
        if name not in PHASE_NAMES:
            raise ValueError("phase must be one of %s, not %r" % (sorted(PHASE_NAMES), name))
        rf = self._enter(PHASE_NAMES[name])
        try:
            yield
        finally:
            self._exit(rf, PHASE_NAMES[name])

    @contextlib.contextmanager
    def iteration(self):
        """``with rec.iteration() as n:`` marks ``headroom.iteration#n``; a clean exit
        dumps if n is in ``dump_at_steps`` and advances the counter."""
        self._manual_iter += 1
        self._open_key("iteration", ITERATION_PREFIX + str(self.step))
        ok = False
        try:
            yield self.step
            ok = True
        finally:
            self._manual_iter -= 1
            if ok:
                self.end_iteration()
            else:
                self._close("iteration")

    def end_iteration(self):
        """Close iteration ``step``, dump if it is scheduled, and advance ``step``.
        ``iteration()`` and the automatic optimizer hook call this."""
        self._close("loss")
        self._close("iteration")
        if self.active and self.step in self.dump_at_steps:
            self.dump("scheduled")
        self.step += 1

    def _enter(self, name):
        if not self.active or self._rf_cls is None:
            return None
        try:
            rf = self._rf_cls(name)
            rf.__enter__()
        except Exception as exc:
            _warn_once("annotate-failed", "record_function(%r) failed: %r" % (name, exc))
            return None
        self._log(name, "START")
        return rf

    def _exit(self, rf, name):
        if rf is None:
            return
        try:
            rf.__exit__(None, None, None)
        except Exception as exc:
            _warn_once("annotate-failed", "record_function(%r) exit failed: %r" % (name, exc))
        self._log(name, "END")

    def _log(self, name, stage):
        self._own_annotations.append((name, stage, time.time_ns() // 1000))

    def _open_key(self, key, name):
        if key not in self._open:
            rf = self._enter(name)
            if rf is not None:
                self._open[key] = (rf, name)

    def _close(self, key):
        entry = self._open.pop(key, None)
        if entry is not None:
            self._exit(*entry)

    # ------------------------------------------------------- automatic mode
    def attach(self, model=None, optimizer=None, backward=True):
        """Annotate without touching the loop: ``## forward ##`` from hooks on
        ``model`` (the root module only); ``## optimizer ##`` and the iteration
        counter from step hooks on ``optimizer`` (one or a list; an iteration ends
        after the last one's step); ``## loss ##`` (forward end to backward start)
        and ``## backward ##`` by wrapping ``torch.autograd.backward``, which
        ``loss.backward()`` calls (``backward=False`` leaves it alone). The hooks
        return None, so inputs, outputs and gradients are untouched."""
        optimizers = (list(optimizer) if isinstance(optimizer, (list, tuple))
                      else [] if optimizer is None else [optimizer])
        self._remove_hooks()
        self._targets = (model, optimizers, bool(backward))
        if self.active:
            self._register_hooks()
        return self

    def _register_hooks(self):
        model, optimizers, backward = self._targets
        if model is not None:
            self._handles.append(model.register_forward_pre_hook(self._fwd_pre))
            try:  # always_call closes the window when forward raises
                handle = model.register_forward_hook(self._fwd_post, always_call=True)
            except TypeError:
                handle = model.register_forward_hook(self._fwd_post)
            self._handles.append(handle)
        for opt in optimizers:
            self._handles.append(opt.register_step_pre_hook(self._opt_pre))
            self._handles.append(opt.register_step_post_hook(self._opt_post))
        self._last_optimizer = optimizers[-1] if optimizers else None
        autograd = getattr(self._torch, "autograd", None)
        if backward and hasattr(autograd, "backward"):
            with _LOCK:
                state = _BACKWARD_PATCH
                if state["users"] == 0:
                    state["orig"] = autograd.backward
                    state["wrapper"] = autograd.backward = _backward_wrapper(state["orig"])
                state["users"] += 1
                self._auto_backward = True

    def _remove_hooks(self):
        for handle in self._handles:
            try:
                handle.remove()
            except Exception:
                pass
        self._handles = []
        if self._auto_backward:
            with _LOCK:
                state = _BACKWARD_PATCH
                self._auto_backward = False
                state["users"] -= 1
                if state["users"] == 0:
                    if self._torch.autograd.backward is state["wrapper"]:
                        self._torch.autograd.backward = state["orig"]
                    state["orig"] = state["wrapper"] = None

    @contextlib.contextmanager
    def _backward_window(self):
        self._close("loss")
        self._in_backward = True
        rf = self._enter(PHASE_NAMES["backward"])
        try:
            yield
        finally:
            self._exit(rf, PHASE_NAMES["backward"])
            self._in_backward = False

    def _fwd_pre(self, module, args):
        if threading.current_thread() is self._thread:
            self._fwd_depth += 1
            if self._fwd_depth == 1:
                self._close("loss")
                if self._last_optimizer is not None:
                    self._open_key("iteration", ITERATION_PREFIX + str(self.step))
                self._open_key("forward", PHASE_NAMES["forward"])

    def _fwd_post(self, module, args, output):
        if threading.current_thread() is self._thread and self._fwd_depth > 0:
            self._fwd_depth -= 1
            if self._fwd_depth == 0:
                self._close("forward")
                grad_enabled = getattr(self._torch, "is_grad_enabled", lambda: False)
                if (output is not None and self._auto_backward
                        and getattr(module, "training", False) and grad_enabled()):
                    self._open_key("loss", PHASE_NAMES["loss"])

    def _opt_pre(self, optimizer, args, kwargs):
        if threading.current_thread() is self._thread:
            self._close("loss")
            self._open_key("optimizer", PHASE_NAMES["optimizer"])

    def _opt_post(self, optimizer, args, kwargs):
        if threading.current_thread() is self._thread:
            self._close("optimizer")
            if optimizer is self._last_optimizer and self._manual_iter == 0:
                self.end_iteration()

    # ---------------------------------------------------------------- dumps
    def dump(self, reason="manual"):
        """Write a snapshot now; returns its path, or None if nothing was written."""
        if not self.active:
            if self.selected:
                _warn_once("dump-inactive", "not recording, so no snapshot is written")
            return None
        return self._write(reason)

    def _on_oom(self, device, alloc, device_allocated, device_free):
        if not self.dump_on_oom or self._oom_dumps >= self.max_oom_dumps:
            return
        self._oom_dumps += 1
        self._write("oom", {"device": int(device), "alloc": int(alloc),
                            "device_allocated": int(device_allocated),
                            "device_free": int(device_free)})

    def _write(self, reason, oom=None):
        torch = self._torch
        with self._dump_lock:
            try:
                snapshot = torch.cuda.memory._snapshot()
                rank = current_rank(torch)
                if isinstance(snapshot, dict):
                    meta = {"format": 1, "rank": rank, "step": self.step, "reason": reason,
                            "torch_version": str(getattr(torch, "__version__", "")),
                            "record_args": dict(self.record_kwargs or {}),
                            "time_us": time.time_ns() // 1000, "annotations_synthesized": False}
                    if oom is not None:
                        meta["oom"] = oom
                    if "external_annotations" not in snapshot and self._own_annotations:
                        snapshot["external_annotations"] = [
                            {"name": n, "stage": st, "device": self._device, "time_us": t}
                            for n, st, t in list(self._own_annotations)]
                        meta["annotations_synthesized"] = True
                    snapshot[SNAPSHOT_META_KEY] = meta
                os.makedirs(self.out_dir, exist_ok=True)
                path = os.path.join(self.out_dir,
                                    snapshot_filename(rank, self.step, reason, self.prefix))
                stem, n = path[: -len(".pickle")], 2
                while os.path.exists(path):  # never overwrite an earlier dump
                    path, n = "%s-%d.pickle" % (stem, n), n + 1
                with open(path + ".tmp", "wb") as f:
                    pickle.dump(snapshot, f, protocol=PICKLE_PROTOCOL)
                os.replace(path + ".tmp", path)  # no half-written .pickle if killed
            except Exception as exc:
                _warn_once("dump-failed-%s" % reason, "snapshot dump (%s) failed: %r"
                           % (reason, exc))
                return None
        self.dumps.append(path)
        if self.verbose:
            sys.stderr.write("headroom_record: wrote %s\n" % path)
        return path

    @staticmethod
    def _attach_oom_observer(torch):
        with _LOCK:
            if _OOM_ATTACHED[0]:
                return
            attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
            try:
                attach(_oom_observer)
                _OOM_ATTACHED[0] = True
            except Exception as exc:  # including attach is None
                _warn_once("no-oom-observer", "cannot watch for OOM (%r); no OOM dumps" % (exc,))


def record(out_dir=".", *, model=None, optimizer=None, backward=True, **options):
    """``Recorder(out_dir, **options)``, attached to ``model``/``optimizer`` when
    given. Use it as a context manager or call ``.start()``."""
    rec = Recorder(out_dir, **options)
    if model is not None or optimizer is not None:
        rec.attach(model, optimizer, backward=backward)
    return rec
