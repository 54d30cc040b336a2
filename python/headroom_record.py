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

Shapes (on by default; ``Recorder(shapes=False)`` or HEADROOM_SHAPES=0 turns them
off): with a model attached, forward hooks on every module, saved-tensor hooks and
looks at the parameters, buffers, gradients and optimizer state keep what they see of
each tensor (storage address and size, shape, dtype, module, time). Each dump joins
them to the trace's alloc entries by address and time (join_tensor_records) and writes
``headroom_tensor`` on each joined entry: ``{"shape", "dtype", "dims": {"batch",
"seq"}, "module", "kind", "phase"}``, with ``headroom_tensor_keys: 1`` on the snapshot
and the join's counts in ``headroom_record["tensor_keys"]``.

Budget (issue 48): ``Recorder(config={...})`` and ``rec.step_tokens(n)`` /
``rec.iteration(tokens=n)`` put the run's configuration and each step's size into every
dump's ``headroom_config`` (``step_tokens``: "4096,4096,8192"), and ``log_run_metric(db)`` /
``rec.log_metric(db)`` add the run's peak, with no snapshot, to an SQLite budget store
(the schema of core/budget/budgetschema.cpp), with the standard library only.

Each dump also carries a top-level ``headroom_record`` dict (rank, step, reason,
torch version, recording arguments, OOM details). Snapshots from PyTorch < 2.5
have no ``external_annotations``; the helper then adds that key from its own log
of the markers above, in the same shape (``{'name', 'stage': 'START'|'END',
'device', 'time_us'}``, wall-clock microseconds like trace entries' ``time_us``
from 2.2 on).
"""

import contextlib
import datetime
import functools
import inspect
import json
import os
import pickle
import re
import sys
import threading
import time
import uuid
import warnings
import weakref
from collections import deque

__version__ = "1.2"
__all__ = ["Recorder", "record", "HeadroomWarning", "PHASE_NAMES", "ITERATION_PREFIX",
           "DEFAULT_MAX_ENTRIES", "snapshot_filename", "current_rank", "torch_version",
           "join_tensor_records", "shapes_default", "TENSOR_KEYS_VERSION",
           "DEFAULT_MAX_TENSOR_RECORDS", "log_run_metric", "BudgetStoreError",
           "BUDGET_SCHEMA_VERSION", "MAX_STEP_TOKENS_KEPT"]

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
# headroom_tensor on alloc trace entries, headroom_tensor_keys on the snapshot: the version
TENSOR_KEYS_VERSION = 1
SHAPES_ENV = "HEADROOM_SHAPES"
# tensors seen by the hooks, kept (the oldest dropped): about 350 B each, ~35 MB at most;
# about 100 steps of a 24-layer transformer, as many as the trace's 1M entries hold
DEFAULT_MAX_TENSOR_RECORDS = 100_000
DEFAULT_MAX_MODULE_CALLS = 100_000  # module forward intervals kept (about 100 B each)
TIME_US_SINCE = (2, 2)  # trace entries carry time_us
# what a hook saw, strongest first: a storage seen in several roles keeps the first
_KIND_ORDER = ("parameter", "buffer", "gradient", "optimizer_state", "input", "activation")
_KIND_RANK = {k: i for i, k in enumerate(_KIND_ORDER)}
# which record's shape a storage gets (after "covers the storage"): a scan of the model and
# optimizer, a module's output, the model's input, a tensor autograd saved
_SOURCE_RANK = {"scan": 0, "output": 1, "input": 2, "saved": 3}
_TENSOR_PHASE = {"forward": "forward", "backward": "backward", "optimizer": "optimizer"}
_PHASE_OF_MARKER = {v: k for k, v in PHASE_NAMES.items()}
_RANK_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "LOCAL_RANK")
SNAPSHOT_CONFIG_KEY = "headroom_config"
# step sizes kept for headroom_config's step_tokens (the newest); the largest dropped one
# still counts (max_step_tokens). 100,000 steps: far more than a 1M-entry trace holds.
MAX_STEP_TOKENS_KEPT = 100_000
# The budget store (core/budget/budgetschema.cpp): the version this module writes, and
# budgetMigration(0)'s statements, word for word, so both sides create the same store.
BUDGET_SCHEMA_VERSION = 1
_BUDGET_DDL = (
    "CREATE TABLE IF NOT EXISTS headroom_budget_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS headroom_budget_runs ("
    "run_id TEXT PRIMARY KEY, file_hash TEXT, file TEXT, device INTEGER NOT NULL, "
    "source TEXT NOT NULL, config_json TEXT NOT NULL, peak_allocated BIGINT NOT NULL, "
    "peak_reserved BIGINT, capacity BIGINT, oom INTEGER NOT NULL, oom_iteration INTEGER, "
    "worst_iteration INTEGER, iteration_peaks_json TEXT NOT NULL, categories_json TEXT NOT NULL, "
    "max_step_tokens BIGINT, worst_case_tokens BIGINT, recorded_at TEXT NOT NULL, "
    "tool_version TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS headroom_budget_runs_time ON headroom_budget_runs (recorded_at)",
)
_BUDGET_COLUMNS = (
    "run_id", "file_hash", "file", "device", "source", "config_json", "peak_allocated",
    "peak_reserved", "capacity", "oom", "oom_iteration", "worst_iteration",
    "iteration_peaks_json", "categories_json", "max_step_tokens", "worst_case_tokens",
    "recorded_at", "tool_version")
# sixteen ranks logging at the end of one job wait for each other's single INSERT; a minute
# is far past such a wait (the C++ store's busy timeout) and still ends a stuck writer
_BUDGET_BUSY_TIMEOUT_S = 60


class HeadroomWarning(RuntimeWarning):
    """Recording could not happen as asked; training continues unchanged."""


_WARNED = set()
_LOCK = threading.RLock()
_ACTIVE = []  # recorders currently recording
_OOM_ATTACHED = [False]  # the allocator cannot detach observers, so attach once per process
_BACKWARD_PATCH = {"orig": None, "wrapper": None, "users": 0}


def _now_us():
    """Wall-clock microseconds, as trace entries' time_us (PyTorch >= 2.2) are."""
    return time.time_ns() // 1000


def shapes_default():
    """Whether shapes are recorded when ``shapes`` is not given: yes, unless the environment
    variable HEADROOM_SHAPES is 0, false, no or off."""
    return os.environ.get(SHAPES_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def _storage_info(t):
    """(data pointer, size in bytes) of ``t``'s storage."""
    if hasattr(t, "untyped_storage"):  # 2.x
        st = t.untyped_storage()
    else:  # 1.13 (the CPU cross-check in test_headroom_cpu.py)
        st = t.storage()
    return st.data_ptr(), st.nbytes()


def _on_gpu(t):
    return bool(getattr(t, "is_cuda", False))


def _round512(n):
    return 512 if n < 512 else (n + 511) // 512 * 512


def _innermost(intervals, times, covered_from):
    """For each time of ``times`` (sorted), the name of the innermost interval (start, end,
    name) that holds it (start <= t <= end; end None: still open), None when none does, or
    the marker _UNCOVERED when t is before ``covered_from`` (older intervals were dropped).
    Intervals nest (module calls, phase windows), so a sweep with a stack finds it."""
    ivs = sorted(intervals, key=lambda iv: (iv[0], -(iv[1] if iv[1] is not None else 1 << 62)))
    out, stack, k = {}, [], 0
    for t in times:
        while k < len(ivs) and ivs[k][0] <= t:
            stack.append(ivs[k])
            k += 1
        # drop what ended before t, from the top, and what ended under an open interval
        while stack and stack[-1][1] is not None and stack[-1][1] < t:
            stack.pop()
        if covered_from is not None and t < covered_from:
            out[t] = _UNCOVERED
            continue
        name = None
        for iv in reversed(stack):
            if iv[1] is None or iv[1] >= t:
                name = iv[2]
                break
        out[t] = name
    return out


_UNCOVERED = object()


def _pre_hook_first(module, hook):
    """Registers ``hook`` before the module's own forward pre-hooks (``prepend``, PyTorch 2.0+):
    FSDP2's pre-forward hook, registered by fully_shard before the recorder attaches, all-gathers
    the layer's parameters, and those belong to the layer's forward and its module. Without
    ``prepend`` (older PyTorch) the hook is appended."""
    try:
        return module.register_forward_pre_hook(hook, prepend=True)
    except TypeError:
        return module.register_forward_pre_hook(hook)


def join_tensor_records(snapshot, records, modules=(), phases=(), micro_batch=None, seq=None,
                        modules_from=None, phases_from=None, wrapped=False):
    """Adds ``headroom_tensor`` to the alloc entries of ``snapshot["device_traces"]`` that
    the hooks' ``records`` name, and ``headroom_tensor_keys`` to the snapshot. Returns what
    was joined and why the rest was not.

    ``records``: tuples ``(time_us, device, addr, nbytes, shape, dtype, itemsize, kind,
    source, module, phase, alive)``: when a hook saw a tensor alive, its storage's data
    pointer and size, the tensor's shape and dtype, what it is (``_KIND_ORDER``), which hook
    saw it (``_SOURCE_RANK``), the innermost running module and the phase window at the
    hook, and ``alive``: whether its storage still lived at the dump (None: not known).

    The join: the entry is the latest ``alloc`` of that address at or before the record's
    time (``time_us`` of entries, PyTorch >= 2.2), provided no free of that address came
    between and its size is the storage's (or that rounded up to 512 bytes). Without
    ``time_us`` (PyTorch 2.1) the order decides: the last alloc of the address when the
    storage still lived at the dump and nothing freed it after, else the only alloc of the
    address when the trace did not wrap (``wrapped``), else none (ambiguous).

    Several records on one entry: the kind is the strongest; the shape and dtype are those
    of a record that covers the storage (prod(shape) * itemsize == nbytes) from the best
    source, the earliest first. ``modules`` and ``phases`` are intervals ``(start_us,
    end_us or None, name)``: module forward calls by qualified name, phase windows by
    PHASE_NAMES key. With ``time_us`` the module and phase are the innermost interval that
    holds the entry's own time (its allocation), for times from ``modules_from`` /
    ``phases_from`` on (older intervals were dropped); otherwise the hook's."""
    traces = snapshot.get("device_traces") or []
    stats = {"records": 0, "joined_records": 0, "entries": 0, "by": [],
             "unjoined": {"no_trace": 0, "no_alloc": 0, "freed_before": 0, "size": 0,
                          "ambiguous": 0},
             "module_from_hook": 0, "phase_from_hook": 0}
    by_dev = {}
    for r in records:
        by_dev.setdefault(r[1], []).append(r)
        stats["records"] += 1
    dims_cache, keys_cache = {}, {}
    for dev in sorted(by_dev):
        recs = by_dev[dev]
        if not isinstance(dev, int) or dev < 0 or dev >= len(traces):
            stats["unjoined"]["no_trace"] += len(recs)
            continue
        trace = traces[dev]
        allocs, frees = {}, {}
        timed = True
        for i, e in enumerate(trace):
            a = e.get("action")
            if a == "alloc":
                allocs.setdefault(e.get("addr"), []).append(i)
                if "time_us" not in e:
                    timed = False
            elif a in ("free_requested", "free_completed", "free"):
                frees.setdefault(e.get("addr"), []).append(i)
        stats["by"].append("time_us" if timed else "order")
        joined = {}
        for r in recs:
            t, addr, nbytes, alive = r[0], r[2], r[3], r[11]
            lst = allocs.get(addr)
            if not lst:
                stats["unjoined"]["no_alloc"] += 1
                continue
            idx = None
            if timed:
                lo, hi = 0, len(lst)  # the last alloc with time_us <= t (trace order)
                while lo < hi:
                    mid = (lo + hi) // 2
                    if trace[lst[mid]]["time_us"] <= t:
                        lo = mid + 1
                    else:
                        hi = mid
                if lo == 0:
                    stats["unjoined"]["no_alloc"] += 1
                    continue
                idx = lst[lo - 1]
                nxt = _first_after(frees.get(addr, ()), idx)
                if nxt is not None and trace[nxt].get("time_us", t) < t:
                    stats["unjoined"]["freed_before"] += 1
                    continue
            else:
                if alive and _first_after(frees.get(addr, ()), lst[-1]) is None:
                    idx = lst[-1]
                elif len(lst) == 1 and not wrapped:
                    idx = lst[0]
                else:
                    stats["unjoined"]["ambiguous"] += 1
                    continue
            size = trace[idx].get("size")
            if not isinstance(size, int) or not nbytes <= size <= _round512(nbytes):
                stats["unjoined"]["size"] += 1
                continue
            joined.setdefault(idx, []).append(r)
            stats["joined_records"] += 1
        if not joined:
            continue
        order = sorted(joined)
        mods = phs = None
        if timed:
            times = sorted({trace[i]["time_us"] for i in order})
            mods = _innermost(modules, times, modules_from)
            phs = _innermost(phases, times, phases_from)
        for idx in order:
            e = trace[idx]
            rs = joined[idx]
            kind = min((r[7] for r in rs), key=lambda k: _KIND_RANK.get(k, 99))
            size = e["size"]

            def rank(r):
                covers = _prod(r[4]) * r[6] in (r[3], size)
                return (0 if covers else 1, _SOURCE_RANK.get(r[8], 9), r[0])
            best = min(rs, key=rank)
            module, phase = best[9], best[10]
            if mods is not None:
                m = mods[e["time_us"]]
                if m is _UNCOVERED:
                    stats["module_from_hook"] += 1
                else:
                    module = m
                p = phs[e["time_us"]]
                if p is _UNCOVERED:
                    stats["phase_from_hook"] += 1
                else:
                    phase = p
            else:
                stats["module_from_hook"] += 1
                stats["phase_from_hook"] += 1
            phase = _TENSOR_PHASE.get(phase)
            shape = tuple(best[4])
            key = (shape, best[5], module, kind, phase)
            d = keys_cache.get(key)
            if d is None:
                b = tuple(i for i, n in enumerate(shape) if micro_batch is not None
                          and n == micro_batch)
                sq = tuple(i for i, n in enumerate(shape) if seq is not None and n == seq)
                dims = dims_cache.get((b, sq))
                if dims is None:
                    dims = dims_cache[(b, sq)] = {"batch": list(b), "seq": list(sq)}
                d = keys_cache[key] = {"shape": list(shape), "dtype": best[5], "dims": dims,
                                       "module": module, "kind": kind, "phase": phase}
            e["headroom_tensor"] = d
            stats["entries"] += 1
    snapshot["headroom_tensor_keys"] = TENSOR_KEYS_VERSION
    return stats


def _strip_tensor_keys(snapshot):
    snapshot.pop("headroom_tensor_keys", None)
    for trace in snapshot.get("device_traces") or []:
        for e in trace:
            if isinstance(e, dict):
                e.pop("headroom_tensor", None)


def _first_after(positions, idx):
    """The first of the sorted ``positions`` after ``idx``, or None."""
    lo, hi = 0, len(positions)
    while lo < hi:
        mid = (lo + hi) // 2
        if positions[mid] <= idx:
            lo = mid + 1
        else:
            hi = mid
    return positions[lo] if lo < len(positions) else None


def _prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


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

    ``shapes`` (default on, unless HEADROOM_SHAPES=0): with a model attached, hooks
    see tensors (module outputs, what autograd saves, the model's inputs, parameters,
    buffers, gradients and optimizer state) and each dump joins them to the trace's
    alloc entries as ``headroom_tensor`` (see join_tensor_records); ``micro_batch``
    and ``seq`` name the dimensions to find in the shapes. ``max_tensor_records``
    bounds the tensors kept between dumps.

    ``config``: the run's configuration (model, micro_batch, seq, precision,
    worst_case_tokens, ...), written into each dump's ``headroom_config`` and logged
    by ``log_metric``; ``step_tokens(n)`` or ``iteration(tokens=n)`` give each step's
    size (see the README's "Standing memory budget").

    Use it as a context manager or call ``start()``/``stop()``; dump before
    stopping, because stopping ends the history.
    """

    def __init__(self, out_dir=".", *, max_entries=DEFAULT_MAX_ENTRIES, stacks="python",
                 context="all", dump_on_oom=True, dump_at_steps=(), ranks="all",
                 max_oom_dumps=1, global_annotations=True, prefix="headroom", verbose=True,
                 shapes=None, micro_batch=None, seq=None,
                 max_tensor_records=DEFAULT_MAX_TENSOR_RECORDS, config=None):
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
        self._targets = None  # (model, optimizers, backward, phases) from attach()
        self._device = self._fwd_depth = self._manual_iter = self._oom_dumps = 0
        self._started_history = self._in_backward = self._auto_backward = False
        self._own_annotations = deque(maxlen=200_000)
        self._open = {}  # key -> (record_function, name) for windows opened by hooks
        self._handles = []
        self._dump_lock = threading.RLock()
        # shapes (headroom_tensor)
        self.shapes = shapes_default() if shapes is None else bool(shapes)
        self.micro_batch, self.seq = micro_batch, seq
        self._records = deque(maxlen=max(1, int(max_tensor_records)))
        self._records_dropped = 0
        self._calls = deque(maxlen=DEFAULT_MAX_MODULE_CALLS)  # (start, end, name)
        self._calls_from = None  # module intervals from then on are complete
        self._frames = []  # every thread's stack of running modules: [module, name, start]
        self._tls = threading.local()
        self._manual_phases = []
        self._shape_model = None  # the model whose modules are hooked
        self._shape_params = []
        self._seen = {}  # (role, id) -> (weakref, data_ptr) of the last tensor recorded
        self._dtypes = {}
        self._saved_ctx = self._saved_thread = None
        self._need_alive = False  # PyTorch < 2.2: entries have no time_us
        self._wanted = _on_gpu  # which tensors the hooks keep
        self.tensor_keys = None  # what the last dump joined (also in headroom_record)
        # budget: the run's configuration, each step's size, the step of the first OOM seen
        self.config = dict(config or {})
        self.tokens_by_step = {}  # step -> tokens (or samples), the newest MAX_STEP_TOKENS_KEPT
        self._dropped_max_tokens = None  # the largest size dropped from tokens_by_step
        self.oom_step = None

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
        self._manual_phases.append(name)
        if name == "optimizer":
            self._scan(grads=True)
        try:
            yield
        finally:
            self._exit(rf, PHASE_NAMES[name])
            if self._manual_phases and self._manual_phases[-1] == name:
                self._manual_phases.pop()
            elif name in self._manual_phases:
                self._manual_phases.remove(name)
            if name == "backward":
                self._scan(grads=True)
            elif name == "optimizer":
                self._scan(state=True)

    @contextlib.contextmanager
    def iteration(self, tokens=None):
        """``with rec.iteration() as n:`` marks ``headroom.iteration#n``; a clean exit
        dumps if n is in ``dump_at_steps`` and advances the counter. ``tokens``: the
        step's size, as ``step_tokens(tokens)`` (given first, so an OOM dump has it)."""
        if tokens is not None:
            self.step_tokens(tokens)
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

    def step_tokens(self, n):
        """Says that the current step (``step``) processes ``n`` tokens (or samples: one
        unit per job, the unit of ``worst_case_tokens``). Another call in the same step
        replaces it. Works whether or not recording runs, and never raises: a value that
        is no int >= 0 warns once and is ignored."""
        try:
            n = int(n)
            if n < 0:
                raise ValueError("negative")
        except Exception as exc:  # a bad count must not stop training
            _warn_once("step-tokens", "step_tokens(%r) is no count of tokens (%r); ignored"
                       % (n, exc))
            return
        sizes = self.tokens_by_step
        sizes[self.step] = n
        if len(sizes) > MAX_STEP_TOKENS_KEPT:  # bounded: a long job has millions of steps
            oldest = sizes.pop(next(iter(sizes)))
            self._dropped_max_tokens = max(oldest, self._dropped_max_tokens or 0)

    def step_sizes(self):
        """The step sizes kept, in step order (the oldest may have been dropped)."""
        sizes = dict(self.tokens_by_step)  # a C-level copy: safe against the loop's thread
        return [sizes[k] for k in sorted(sizes)]

    def max_step_tokens(self):
        """The largest step size given, dropped ones included; None if none was."""
        sizes = self.step_sizes()
        if self._dropped_max_tokens is not None:
            sizes.append(self._dropped_max_tokens)
        return max(sizes) if sizes else None

    def log_metric(self, db, *, device=None, worst_case_tokens=None, oom=None,
                   oom_iteration=None, run_id=None):
        """``log_run_metric(db, self.config, ...)`` with this recorder's step sizes, its
        device and, unless given, whether it saw an OOM (``oom_step``, seen by the OOM
        observer, so with ``dump_on_oom``). Raises as ``log_run_metric`` does."""
        if oom is None:
            oom = self.oom_step is not None
            oom_iteration = self.oom_step if oom_iteration is None else oom_iteration
        if device is None and self.active:
            device = self._device
        top = self.max_step_tokens()
        return log_run_metric(db, self.config, device=device,
                              step_tokens=None if top is None else [top],
                              worst_case_tokens=worst_case_tokens, oom=oom,
                              oom_iteration=oom_iteration, torch=self._torch, run_id=run_id)

    def _snapshot_config(self, existing):
        """headroom_config for a dump: what the snapshot has, then ``config`` (it wins), then
        ``step_tokens`` (and ``max_step_tokens`` when sizes were dropped)."""
        cfg = dict(existing) if isinstance(existing, dict) else {}
        cfg.update(self.config)
        sizes = self.step_sizes()
        if sizes:
            cfg["step_tokens"] = ",".join(str(n) for n in sizes)
            if self._dropped_max_tokens is not None:  # the list lost its oldest steps
                cfg["max_step_tokens"] = self.max_step_tokens()
        return cfg

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
        self._own_annotations.append((name, stage, _now_us()))

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
    def attach(self, model=None, optimizer=None, backward=True, phases=True):
        """Annotate without touching the loop: ``## forward ##`` from hooks on
        ``model`` (the root module only); ``## optimizer ##`` and the iteration
        counter from step hooks on ``optimizer`` (one or a list; an iteration ends
        after the last one's step); ``## loss ##`` (forward end to backward start)
        and ``## backward ##`` by wrapping ``torch.autograd.backward``, which
        ``loss.backward()`` calls (``backward=False`` leaves it alone). The hooks
        return None, so inputs, outputs and gradients are untouched.

        With ``shapes`` on, also hooks every module of ``model`` and pushes
        saved-tensor hooks (that pack a detached alias of what autograd saves, as
        autograd itself keeps it) to see the tensors of each dump's headroom_tensor.
        ``phases=False`` places no markers (the loop marks them by hand) and
        only does that."""
        optimizers = (list(optimizer) if isinstance(optimizer, (list, tuple))
                      else [] if optimizer is None else [optimizer])
        self._remove_hooks()
        self._targets = (model, optimizers, bool(backward), bool(phases))
        if self.active:
            self._register_hooks()
        return self

    def _register_hooks(self):
        model, optimizers, backward, phases = self._targets
        if self.shapes:
            self._register_shape_hooks(model, optimizers)
        if not phases:
            return
        if model is not None:
            self._handles.append(_pre_hook_first(model, self._fwd_pre))
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
        self._pop_saved_hooks()
        self._shape_model = None
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
            self._scan(grads=True)

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
            self._scan(grads=True)

    def _opt_post(self, optimizer, args, kwargs):
        if threading.current_thread() is self._thread:
            self._scan(state=True)
            self._close("optimizer")
            if optimizer is self._last_optimizer and self._manual_iter == 0:
                self.end_iteration()

    # ---------------------------------------------------------------- shapes
    def _register_shape_hooks(self, model, optimizers):
        """Forward pre/post hooks on every module of ``model`` (named as in
        ``model.named_modules()``) and saved-tensor hooks. A model that is no
        nn.Module (no named_modules) gets none: no shapes then."""
        named = getattr(model, "named_modules", None)
        if named is None:
            return
        try:
            modules = list(named())
        except Exception as exc:
            _warn_once("shapes-modules", "cannot list the model's modules (%r); no shapes" % (exc,))
            return
        compiled = [n or "the model" for n, m in modules
                    if getattr(m, "_compiled_call_impl", None) is not None
                    or type(m).__name__ == "OptimizedModule"]
        if compiled:
            _warn_once("shapes-compiled", "%s is compiled (torch.compile): hooks on its "
                       "modules would break its graphs, so no shapes are recorded; record an "
                       "eager run for them" % compiled[0])
            return
        self._shape_model = model
        self._need_alive = torch_version(self._torch) < TIME_US_SINCE
        self._calls_from = _now_us()  # nothing before the hooks is known
        for name, m in modules:
            try:
                self._handles.append(_pre_hook_first(m, functools.partial(self._mod_pre, name)))
                post = functools.partial(self._mod_post, name)
                try:  # always_call: the interval also ends when forward raises
                    handle = m.register_forward_hook(post, always_call=True)
                except TypeError:
                    handle = m.register_forward_hook(post)
                self._handles.append(handle)
            except Exception as exc:
                _warn_once("shapes-hooks", "cannot hook module %r (%r); its tensors have no "
                           "module" % (name, exc))
        params, seen = [], set()
        for group in [model] + list(optimizers):
            try:
                ps = (list(group.parameters()) if hasattr(group, "parameters")
                      else [p for g in group.param_groups for p in g["params"]])
            except Exception:
                ps = []
            for p in ps:
                if id(p) not in seen:
                    seen.add(id(p))
                    params.append(p)
        self._shape_params = params
        self._push_saved_hooks()
        self._scan(params=True)

    def _stack(self):
        st = getattr(self._tls, "stack", None)
        if st is None:
            st = self._tls.stack = []
            with _LOCK:
                self._frames.append(st)
        return st

    def _mod_pre(self, name, module, args):
        if not self.active:
            return
        st = self._stack()
        root = module is self._shape_model
        if root and st:  # a forward that raised (no always_call) left its frames behind
            self._end_frames(st, 0)
        st.append([module, name, _now_us()])
        if root:
            for a in args:
                self._record(a, "input", "input", None)

    def _mod_post(self, name, module, args, output):
        if not self.active:
            return
        st = self._stack()
        for i in range(len(st) - 1, -1, -1):
            if st[i][0] is module:
                self._end_frames(st, i)
                break
        self._walk(output, name, 0)

    def _end_frames(self, st, i):
        now = _now_us()
        calls = self._calls
        for _m, name, start in reversed(st[i:]):
            if len(calls) == calls.maxlen:  # the oldest interval goes: known from its end on
                self._calls_from = max(self._calls_from or 0, calls[0][1] + 1)
            calls.append((start, now, name))
        del st[i:]

    def _walk(self, out, name, depth):
        torch = self._torch
        if isinstance(out, torch.Tensor):
            self._record(out, "activation", "output", name)
        elif depth < 3:
            if isinstance(out, (list, tuple)):
                for o in out:
                    self._walk(o, name, depth + 1)
            elif isinstance(out, dict):
                for o in out.values():
                    self._walk(o, name, depth + 1)

    def _phase_hint(self):
        if self._manual_phases:
            return self._manual_phases[-1]
        if self._in_backward:
            return "backward"
        for key in ("optimizer", "forward", "loss"):
            if key in self._open:
                return key
        return None

    def _record(self, t, kind, source, module):
        """Keeps what a hook saw of ``t`` (a CUDA tensor with a storage)."""
        try:
            if not self._wanted(t):
                return
            ptr, nbytes = _storage_info(t)
            if not ptr:
                return
            dt = t.dtype
            d = self._dtypes.get(dt)
            if d is None:
                d = self._dtypes[dt] = (str(dt).replace("torch.", ""), int(t.element_size()))
            dev = t.device.index
            recs = self._records
            if len(recs) == recs.maxlen:
                self._records_dropped += 1
            recs.append((_now_us(), self._device if dev is None else int(dev), ptr, nbytes,
                         tuple(t.shape), d[0], d[1], kind, source, module, self._phase_hint(),
                         weakref.ref(t) if self._need_alive else None))
        except Exception:  # a tensor subclass without a plain storage, ...
            pass

    def _record_once(self, key, t, kind):
        """A parameter, buffer, gradient or state tensor, again only when it changed."""
        try:
            ptr = t.data_ptr()
        except Exception:
            return
        prev = self._seen.get(key)
        if prev is not None and prev[1] == ptr and prev[0]() is t:
            return
        self._seen[key] = (weakref.ref(t), ptr)
        self._record(t, kind, "scan", None)

    def _scan(self, params=False, grads=False, state=False):
        """Looks at the model's parameters and buffers, the gradients, the optimizers'
        state: a few attribute reads per tensor, a record only for what changed."""
        model = self._shape_model
        if model is None or not self.active:
            return
        try:
            if params:
                for n, p in model.named_parameters():
                    self._record_once(("p", n), p, "parameter")
                for n, b in model.named_buffers():
                    self._record_once(("b", n), b, "buffer")
            if grads:
                for p in self._shape_params:
                    g = p.grad
                    if g is not None:
                        self._record_once(("g", id(p)), g, "gradient")
            if state:
                Tensor = self._torch.Tensor
                for opt in self._targets[1]:
                    for p, st in opt.state.items():
                        for k, v in st.items():
                            if isinstance(v, Tensor):
                                self._record_once(("s", id(p), k), v, "optimizer_state")
        except Exception as exc:
            _warn_once("shapes-scan", "looking at parameters, gradients or optimizer state "
                       "failed (%r)" % (exc,))

    def _pack(self, t):
        # autograd keeps what this returns: a detached alias, as it keeps a tensor itself
        # (no reference to the graph, no copy)
        try:
            if self.active:
                st = getattr(self._tls, "stack", None)
                self._record(t, "activation", "saved", st[-1][1] if st else None)
            return t.detach()
        except Exception:
            return t

    @staticmethod
    def _unpack(t):
        return t

    def _push_saved_hooks(self):
        graph = getattr(getattr(self._torch, "autograd", None), "graph", None)
        cls = getattr(graph, "saved_tensors_hooks", None)
        if cls is None:
            return
        top = getattr(getattr(getattr(self._torch, "_C", None), "_autograd", None),
                      "_top_saved_tensors_default_hooks", None)
        if top is not None:  # PyTorch >= 2.8 tells: leave the step's own hooks alone
            try:
                if top(False) is not None:
                    _warn_once("shapes-saved-busy", "saved-tensor hooks are active already "
                               "(activation offloading?); what autograd saves is not seen")
                    return
            except Exception:
                pass
        try:
            ctx = cls(self._pack, self._unpack)
            ctx.__enter__()
        except Exception as exc:
            _warn_once("shapes-saved", "cannot push saved-tensor hooks (%r); what autograd "
                       "saves is not seen" % (exc,))
            return
        self._saved_ctx, self._saved_thread = ctx, threading.current_thread()

    def _pop_saved_hooks(self):
        ctx = self._saved_ctx
        if ctx is None:
            return
        self._saved_ctx = None
        if threading.current_thread() is not self._saved_thread:
            _warn_once("shapes-saved-thread", "saved-tensor hooks were pushed on another "
                       "thread; they stay there (they only pack detached aliases)")
            return
        try:
            ctx.__exit__(None, None, None)
        except Exception as exc:
            _warn_once("shapes-saved-pop", "cannot pop the saved-tensor hooks (%r)" % (exc,))

    def _join_into(self, snapshot):
        """headroom_tensor on the snapshot's alloc entries; returns the statistics."""
        self._scan(params=True, grads=True, state=True)
        now = _now_us()
        calls = list(self._calls)
        with _LOCK:
            frames = [list(st) for st in self._frames]
        for st in frames:  # still running (an OOM inside forward)
            calls += [(start, None, name) for _m, name, start in st]
        phases, open_ = [], {}
        ann = list(self._own_annotations)
        for name, stage, t in ann:
            short = _PHASE_OF_MARKER.get(name)
            if short is None:
                continue
            if stage == "START":
                open_.setdefault(name, []).append(t)
            elif open_.get(name):
                phases.append((open_[name].pop(), t, short))
            else:  # its start was dropped
                phases.append((-1, t, short))
        for name, starts in open_.items():
            phases += [(t, None, _PHASE_OF_MARKER[name]) for t in starts]
        full = len(ann) == self._own_annotations.maxlen
        phases_from = ann[0][2] if full and ann else None
        records = list(self._records)
        if self._need_alive:
            def alive(r):
                t = r[11]() if r[11] is not None else None
                try:
                    return t is not None and _storage_info(t)[0] == r[2]
                except Exception:
                    return False
            records = [r[:11] + (alive(r),) for r in records]
        wrapped = any(len(tr) >= self.max_entries
                      for tr in (snapshot.get("device_traces") or []))
        stats = join_tensor_records(snapshot, records, calls, phases, self.micro_batch,
                                    self.seq, modules_from=self._calls_from,
                                    phases_from=phases_from, wrapped=wrapped)
        stats.update({"micro_batch": self.micro_batch, "seq": self.seq,
                      "records_dropped": self._records_dropped,
                      "module_calls_kept": len(calls), "seconds": (_now_us() - now) / 1e6})
        self.tensor_keys = stats
        return stats

    # ---------------------------------------------------------------- dumps
    def dump(self, reason="manual"):
        """Write a snapshot now; returns its path, or None if nothing was written."""
        if not self.active:
            if self.selected:
                _warn_once("dump-inactive", "not recording, so no snapshot is written")
            return None
        return self._write(reason)

    def _on_oom(self, device, alloc, device_allocated, device_free):
        if self.oom_step is None:  # log_metric's oom and oom_iteration
            self.oom_step = self.step
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
                    if self.shapes and self._shape_model is not None:
                        try:
                            meta["tensor_keys"] = self._join_into(snapshot)
                        except Exception as exc:  # the dump matters more than its shapes
                            _strip_tensor_keys(snapshot)
                            _warn_once("shapes-join", "joining the shapes failed (%r); the "
                                       "dump has none" % (exc,))
                    if "external_annotations" not in snapshot and self._own_annotations:
                        snapshot["external_annotations"] = [
                            {"name": n, "stage": st, "device": self._device, "time_us": t}
                            for n, st, t in list(self._own_annotations)]
                        meta["annotations_synthesized"] = True
                    snapshot[SNAPSHOT_META_KEY] = meta
                    cfg = self._snapshot_config(snapshot.get(SNAPSHOT_CONFIG_KEY))
                    if cfg:  # no config and no step sizes: the snapshot stays as it was
                        snapshot[SNAPSHOT_CONFIG_KEY] = cfg
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


# ------------------------------------------------------- standing memory budget
class BudgetStoreError(RuntimeError):
    """The budget store cannot take the metric: a newer schema, not SQLite, a PostgreSQL
    URL, unreadable. The message names the store (PostgreSQL URLs are not repeated)."""


def log_run_metric(db, config=None, *, device=None, step_tokens=None, worst_case_tokens=None,
                   oom=False, oom_iteration=None, torch=None, run_id=None):
    """Adds this process's memory peak, with no snapshot, to the SQLite budget store ``db``
    as one run of ``source`` 'metric'; returns its run_id.

    The peak is what PyTorch's allocator counted on ``device`` (default: the current one)
    since the process started or ``torch.cuda.reset_peak_memory_stats``:
    ``max_memory_allocated``, ``max_memory_reserved``, and the device's ``total_memory`` as
    the capacity. ``config``: the run's configuration (key -> value, stored as text with the
    keys in lower case, as Headroom reads them). ``step_tokens``: the steps' sizes (their
    largest is the row's max_step_tokens; without them, config's ``max_step_tokens`` or
    ``step_tokens``). ``worst_case_tokens``: the largest step the data can produce (default:
    config's). ``run_id``: default 'metric:' + a random hex; the same id twice adds one row.

    A postgresql:// URL is written through ``headroom-cli budget record --metric-json -``
    ($HEADROOM_CLI, else headroom-cli on the PATH): the standard library has no PostgreSQL
    client. Raises RuntimeError without PyTorch or CUDA (only here: the caller asked for a
    peak) and BudgetStoreError for a store of a newer schema (left unchanged), a file that is
    no SQLite database, or a PostgreSQL store without headroom-cli. Many ranks may log into
    one store at once.""" 
    where = os.fspath(db)
    row = _metric_row(_cuda_of(torch), config, device, step_tokens, worst_case_tokens, oom,
                      oom_iteration, run_id)
    if str(where).startswith(("postgresql://", "postgres://")):
        _send_to_cli(where, row)
    else:
        _add_budget_row(where, row)
    return row["run_id"]


def _wal(con, sqlite3):
    """PRAGMA journal_mode=WAL, retried: switching a new store to WAL takes an exclusive lock
    and SQLite answers "database is locked" at once, without its busy handler, when another
    rank is switching it too."""
    import time
    deadline = time.monotonic() + _BUDGET_BUSY_TIMEOUT_S
    while True:
        try:
            con.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _send_to_cli(url, row):
    """A PostgreSQL store through `headroom-cli budget record --metric-json -` (the standard
    library has no PostgreSQL client): $HEADROOM_CLI, else headroom-cli on the PATH. The URL
    may hold a password: no message here repeats it (the CLI's hide it)."""
    import shutil
    import subprocess
    cli = os.environ.get("HEADROOM_CLI") or shutil.which("headroom-cli")
    if not cli:
        raise BudgetStoreError(
            "a PostgreSQL budget store is written through headroom-cli, which is not on the "
            "PATH (set HEADROOM_CLI to it), or log into an SQLite file")
    r = subprocess.run([cli, "budget", "record", "--db", url, "--metric-json", "-"],
                       input=json.dumps(row), capture_output=True, text=True)
    if r.returncode != 0:
        raise BudgetStoreError("headroom-cli budget record: " + r.stderr.strip())


def _cuda_of(torch):
    if torch is None:
        try:
            import torch  # noqa: PLC0415 - lazy, as everywhere in this module
        except Exception as exc:
            raise RuntimeError("headroom_record.log_run_metric: PyTorch is not importable "
                               "(%r); there is no peak to log" % (exc,)) from exc
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not _safe(lambda: bool(cuda.is_available()), False):
        raise RuntimeError("headroom_record.log_run_metric: CUDA is not available; there is "
                           "no GPU peak to log")
    return cuda


def _count(value):
    """An int >= 0 from an int or its text, else None (as the C++ reader's integerValue)."""
    try:
        n = int(str(value).strip())
    except (TypeError, ValueError):
        return None
    return n if n >= 0 else None


def _config_max_step_tokens(cfg):
    """config's max_step_tokens, else the largest of its comma-separated step_tokens."""
    top = _count(cfg.get("max_step_tokens"))
    if top is None:
        sizes = [_count(t) for t in cfg.get("step_tokens", "").split(",")]
        top = max((n for n in sizes if n is not None), default=None)
    return top


def _metric_row(cuda, config, device, step_tokens, worst_case_tokens, oom, oom_iteration, run_id):
    """The row, column -> value, of a metric run (core/budget/budgetschema.cpp's order)."""
    dev = getattr(device, "index", device)  # an int, a torch.device or None
    dev = int(cuda.current_device()) if dev is None else int(dev)
    cfg = {str(k).lower(): str(v) for k, v in (config or {}).items()}
    if worst_case_tokens is not None:  # the argument wins, and the row says what it used
        cfg["worst_case_tokens"] = str(int(worst_case_tokens))
    # The allocator as the user set it, read where a snapshot's allocator_settings reads it,
    # so a metric and a snapshot of one job key the same configuration.
    alloc_conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    if alloc_conf and "allocator" not in cfg:
        cfg["allocator"] = alloc_conf
    sizes = [int(n) for n in step_tokens or ()]
    return {
        "run_id": run_id or "metric:" + uuid.uuid4().hex, "file_hash": None, "file": None,
        "device": dev, "source": "metric", "config_json": json.dumps(cfg, sort_keys=True),
        "peak_allocated": int(cuda.max_memory_allocated(dev)),
        "peak_reserved": int(cuda.max_memory_reserved(dev)),
        "capacity": int(cuda.get_device_properties(dev).total_memory),
        "oom": 1 if oom else 0,
        "oom_iteration": None if oom_iteration is None else int(oom_iteration),
        "worst_iteration": None, "iteration_peaks_json": "[]", "categories_json": "{}",
        "max_step_tokens": max(sizes) if sizes else _config_max_step_tokens(cfg),
        "worst_case_tokens": _count(cfg.get("worst_case_tokens")),
        "recorded_at": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="milliseconds").replace("+00:00", "Z"),
        "tool_version": "headroom_record " + __version__,
    }


def _budget_schema_version(con, where):
    has = con.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table' "
                      "AND name = 'headroom_budget_meta'").fetchone()[0]
    if not has:
        return 0
    row = con.execute("SELECT value FROM headroom_budget_meta "
                      "WHERE key = 'schema_version'").fetchone()
    version = _count(row[0]) if row else 0
    if version is None:
        raise BudgetStoreError("%s: its schema_version %r is no number (left unchanged)"
                               % (where, row[0]))
    if version > BUDGET_SCHEMA_VERSION:
        raise BudgetStoreError(
            "%s: a budget store of schema version %d; headroom_record %s writes up to version "
            "%d (left unchanged; use a newer headroom_record)"
            % (where, version, __version__, BUDGET_SCHEMA_VERSION))
    return version


def _add_budget_row(where, row):
    """Inserts ``row`` into the store, creating its schema when it has none. Returns whether
    a row was added (False: that run_id was there already)."""
    import sqlite3  # noqa: PLC0415 - lazy: a Python built without sqlite3 still records dumps
    try:
        con = sqlite3.connect(where, timeout=_BUDGET_BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error as exc:
        raise BudgetStoreError("%s: cannot open it as an SQLite database (%s)"
                               % (where, exc)) from exc
    try:
        # read before anything is written, so a newer store or a non-database stays as it is
        _budget_schema_version(con, where)
        _wal(con, sqlite3)  # readers never block the ranks' writers
        # IMMEDIATE: writers opening a new store at once create it one after the other, and
        # the second finds the version the first wrote (as SqliteStore::migrate does)
        con.execute("BEGIN IMMEDIATE")
        try:
            if _budget_schema_version(con, where) < BUDGET_SCHEMA_VERSION:
                for sql in _BUDGET_DDL:
                    con.execute(sql)
                con.execute("INSERT INTO headroom_budget_meta (key, value) VALUES "
                            "('schema_version', ?) ON CONFLICT (key) DO UPDATE SET "
                            "value = excluded.value", (str(BUDGET_SCHEMA_VERSION),))
            cur = con.execute(
                "INSERT INTO headroom_budget_runs (%s) VALUES (%s) ON CONFLICT (run_id) DO "
                "NOTHING" % (", ".join(_BUDGET_COLUMNS), ", ".join("?" * len(_BUDGET_COLUMNS))),
                tuple(row[c] for c in _BUDGET_COLUMNS))
            con.execute("COMMIT")
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise
        return cur.rowcount == 1
    except sqlite3.Error as exc:
        raise BudgetStoreError("%s: cannot record the metric (SQLite: %s)" % (where, exc)) from exc
    finally:
        con.close()
