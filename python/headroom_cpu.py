"""headroom_cpu: record a training step that runs on the CPU as a CUDA memory snapshot.

Single file, needs only PyTorch (1.13 or later; written against Debian 12's 1.13.1 and the
2.x API). Ground truth for Headroom without a GPU: tensor sizes and lifetimes of a training
step are decided by PyTorch and the model, not by the device, so a CPU run holds the same
activations, gradients and optimizer state a GPU run does (see python/README.md, "Recording
on the CPU: ground truth", for what differs).

    import headroom_cpu
    with headroom_cpu.capture("step.pickle", micro_batch=4, seq=128, precision="fp32",
                              optimizer="adamw") as cap:
        model, opt = build()                    # built inside: every tensor is seen
        with cap.iteration():                   # headroom.iteration#0
            with cap.phase("forward"):          # ## forward ##
                out = model(x)
            with cap.phase("loss"):
                loss = loss_fn(out, y)
            with cap.phase("backward"):
                loss.backward()
            with cap.phase("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
    print(cap.recorded_peak_bytes, cap.oracle_peak_bytes)

What is recorded
* Every aten op's outputs, through ``torch.utils._python_dispatch.TorchDispatchMode``:
  forward, backward (on the CPU the autograd engine runs backward on the calling thread) and
  the optimizer. Storages are tracked, not tensors: a storage is keyed by its data pointer,
  each live tensor object on it holds one count (a weak reference with a callback), and the
  storage is freed when the count reaches zero. Views share one allocation; zero-byte
  storages (null data pointer) are not allocations.
* Tensors that autograd saves for backward are packed through
  ``torch.autograd.graph.saved_tensors_hooks`` as a detached alias, so a saved output stays
  alive as long as the graph holds it (without the hook the Python object dies first).
* ``nn.Parameter`` creation (``Tensor._make_subclass``) and ``tensor.data = ...`` (what
  ``Module.to(dtype)`` does) are followed while the capture is active; an unknown tensor that
  reaches an op is adopted (an alias of a known storage, or a storage that existed before).
* Tensors that exist before the block (``model=``, ``optimizer=``, ``tensors=``, and storages
  first seen as op inputs) are written as ``alloc`` entries at the start of the trace, before
  every other entry, with one frame ``<before capture>`` naming the tensor.
* The snapshot is PyTorch's ``_dump_snapshot`` format (2.4/2.5 era) for CUDA device 0:
  ``segments`` is empty (a trace-only snapshot: no allocator simulation here),
  ``device_traces[0]`` holds ``alloc`` / ``free_requested`` / ``free_completed`` entries with
  sizes rounded as the CUDA caching allocator rounds them (512 B minimum, multiples of
  512 B), addresses are the CPU allocator's addresses, ``time_us`` is wall-clock
  microseconds made strictly increasing, ``frames`` is the Python stack (innermost first,
  the recorder's own frames dropped, frame dicts and stacks interned).
  ``external_annotations`` holds the phase and iteration markers, ``headroom_config`` the
  configuration and the peaks.
* ``headroom_truth`` (version 1, ``truth=False`` leaves it out) is the recorder's ground
  truth: ``{"version": 1, "allocations": [[time_us, category, phase], ...]}``, one row per
  ``alloc`` entry of ``device_traces[0]``, in trace order (``time_us`` is the entry's: a
  unique key). ``category`` is what the storage was, from what the recorder sees, never from
  stacks: "parameter" (``nn.Parameter`` storages, storages re-bound to a parameter by
  ``t.data = x`` / ``Module.to``, and module buffers), "gradient" (a known parameter's
  ``.grad``, looked at after every ``torch.autograd.backward`` call, at every marker and at
  the end), "optimizer_state" (values of ``optimizer.state[p]``, looked at at the same
  points), "input" (``cap.inputs(x, y)``), "activation" (saved for backward through the
  saved-tensor hooks, or born in forward/loss and alive when a backward phase starts),
  "temporary" (born in the block, none of these, freed in it) and "unknown" (none of these
  and alive at the end, or alive before the block with nothing known). A storage seen in
  several roles gets the first of parameter, gradient, optimizer_state, input, activation.
  ``phase`` is the innermost ``cap.phase`` window open at the allocation, "setup" when none
  is, "other" for storages alive before the block.
* ``headroom_tensor`` (``headroom_tensor_keys: 1`` on the snapshot; ``shapes=False`` or the
  environment variable HEADROOM_SHAPES=0 leaves both out) on every ``alloc`` entry:
  ``{"shape": [ints], "dtype": "float32", "dims": {"batch": [i, ...], "seq": [i, ...]},
  "module": "blocks.blocks.3.attn" | "" | None, "kind": ..., "phase": ...}``. ``shape`` and
  ``dtype`` are those of the op output the storage was made for, or of the output of the
  innermost module that returned a tensor covering the whole storage, when the storage was
  allocated inside that module (nn.Linear's [b, s, d], not the [b*s, d] its addmm made).
  ``dims`` lists every index whose size equals ``micro_batch`` / ``seq`` (empty when not
  given). ``module`` is the qualified name (``named_modules()`` of the model: ``model=``, or
  the first module called at the top level) of the innermost module whose forward was
  running at the allocation (global forward hooks), None when none was; a module called at
  the top level outside the model is ``<ClassName>``. ``kind`` is headroom_truth's category
  with module buffers as "buffer" and a module's output as "activation". ``phase`` is
  "forward", "backward" or "optimizer" (the ``cap.phase`` window), else None (setup, the
  loss window, before the block). ``like`` (only where there is one): how many entries back
  in the trace each alloc entry is whose tensor had exactly this output's shape in a
  shape-preserving op (SHAPE_PRESERVING_OPS: pointwise ops, copies, softmaxes, norms), both
  covering their whole storage: the two grow alike. ``op`` (on entries made by an op the
  mode saw): the ATen op's name; ``inputs``: how many entries back the storages of its
  tensor arguments are; ``saves`` (where any): how many entries back each storage is that
  autograd saved for its backward (0 its own, negative a later output of the same op).
* The oracle: the legacy autograd profiler records every CPU-allocator allocation and free
  (``kind() == 'memory_alloc'``); the running sum's maximum (plus the bytes alive before the
  block) is ``oracle_peak_bytes``. ``recorded_peak_bytes`` is the recorder's peak of live
  bytes before rounding; they should agree within 1%.

Fake mode (``fake=True``; headroom_fake.py beside this file)
* The block runs under a FakeTensorMode (``torch._subclasses.fake_tensor``, 1.13 or later)
  below the recorder's dispatch mode: every tensor made in the block (parameters of a model
  built there, the batch, activations, gradients, optimizer state) is a fake tensor, with
  shape, dtype, strides and a storage size but no data, so a model too big for this
  machine can be recorded (tools/fake_7b.py: a Llama-7B-shaped step, seq 4096, in seconds
  and about 300 MB). The step's code runs unchanged; build the model inside the block::

      with headroom_cpu.capture("7b.pickle", micro_batch=1, seq=4096, fake=True) as cap:
          model = MyModel(config)              # fake parameters: nothing allocated
          opt = torch.optim.AdamW(model.parameters())
          ...                                  # the same step as for a real capture

  or before it under ``with headroom_cpu.fake_mode():`` and pass ``model=`` /
  ``optimizer=`` (real tensors given to a fake capture are refused).
* The snapshot has the same keys (trace, headroom_truth, headroom_tensor with modules, op
  graph and phases, annotations): on the families of cpu_models.py the alloc / free
  sequence, sizes and peak equal a real recording's (python/tests/test_headroom_fake.py).
  A fake storage is keyed by its StorageImpl (``t.storage()._cdata``) instead of its data
  pointer; trace addresses are synthetic (from headroom_fake.FAKE_BASE, never reused).
  ``headroom_config`` says ``"fake": true``; the oracle is off (nothing is allocated for
  the profiler to count: ``oracle_peak_bytes`` -1) and ``time_us`` is the fake run's wall
  clock, not the kernels' (step times read from it mean nothing).
* Ops run on meta kernels, except: ``profiler::`` ops (``record_function``, which
  ``Optimizer.step`` uses) run for real with the modes off; 1.13's missing convolution
  backward and the norms whose meta output dtypes differ from the CPU kernel's have
  kernels in headroom_fake.py. What fake mode cannot run (an op without a fake kernel,
  ``.item()`` of a computed tensor, ``nonzero`` / boolean masks: shapes that depend on
  values, such as top-k MoE routing) raises HeadroomCpuError naming the op, the module
  whose forward ran, the phase and the line; the file is written marked incomplete with
  ``fake_unsupported: [{op, module, phase}]`` in headroom_config. Nothing is skipped and
  no real fallback kernel runs.
"""

import contextlib
import os
import pickle
import sys
import tempfile
import threading
import time
import weakref

try:  # beside this file: the casts that are no-ops in the recorded run (headroom_tensor "casts")
    from headroom_casts import CastWatch as _CastWatch
except ImportError:
    _CastWatch = None
try:  # beside this file: fake mode (capture(..., fake=True))
    import headroom_fake as _fake
except ImportError:
    _fake = None

__all__ = ["capture", "Capture", "HeadroomCpuError", "fake_mode", "round_size", "PHASE_NAMES",
           "TRUTH_CATEGORIES", "TRUTH_VERSION", "TENSOR_KEYS_VERSION", "TENSOR_KINDS",
           "shapes_default"]

PICKLE_PROTOCOL = 4
PHASE_NAMES = {
    "forward": "## forward ##",
    "loss": "## loss ##",
    "backward": "## backward ##",
    "optimizer": "## optimizer ##",
}
ITERATION_PREFIX = "headroom.iteration#"
BEFORE_CAPTURE = "<before capture>"
GPU_HELPER = "python/headroom_record.py"
PRECISIONS = ("fp32", "amp-bf16", "bf16")
OPTIMIZERS = ("sgd", "sgd-momentum", "adamw", "adam")
CHECKPOINTS = ("none", "full")
TRUTH_VERSION = 1
# headroom_truth categories, by priority: a storage seen in several roles keeps the highest
TRUTH_CATEGORIES = ("unknown", "temporary", "activation", "input", "optimizer_state",
                    "gradient", "parameter")
# internal roles, by the same priority; a module buffer is "parameter" in headroom_truth
# (version 1 has no buffer) and "buffer" in headroom_tensor
_UNKNOWN, _TEMPORARY, _ACTIVATION, _INPUT, _OPTSTATE, _GRADIENT, _BUFFER, _PARAMETER = range(8)
_TRUTH_NAMES = TRUTH_CATEGORIES[:6] + ("parameter", "parameter")
_SHORT_PHASE = {v: k for k, v in PHASE_NAMES.items()}
# headroom_tensor (version TENSOR_KEYS_VERSION): shape, dtype, dims, module, kind and phase of
# each alloc entry; "headroom_tensor_keys" on the snapshot says which version
TENSOR_KEYS_VERSION = 1
TENSOR_KINDS = ("parameter", "buffer", "gradient", "optimizer_state", "activation", "temporary",
                "input", "unknown")
_KIND_NAMES = ("unknown", "temporary", "activation", "input", "optimizer_state", "gradient",
               "buffer", "parameter")
# headroom_tensor's phase: the recorder's phase windows that are one of its three values; the
# loss window, setup and memory alive before the block are null (the loss window is in
# external_annotations)
_TENSOR_PHASE = {"forward": "forward", "backward": "backward", "optimizer": "optimizer"}
SHAPES_ENV = "HEADROOM_SHAPES"
# the row of an allocation with shapes: [time_us, category, phase] + these
_R_SHAPE, _R_DTYPE, _R_ITEM, _R_MOD, _R_FIXED, _R_MOUT, _R_LIKE, _R_OP, _R_INPUTS, _R_SAVES, \
    _R_CASTS, _R_PIN = range(3, 15)
# ATen ops whose output has the shape of their inputs broadcast together (pointwise ops,
# copies, normalisations and softmaxes over a dimension): an output made by one of these
# with the exact shape of an input grows as that input does, whatever the sizes say
# (headroom_tensor's "like"). PyTorch 1.13 has no pointwise tag on its ops; this list is
# ATen's op semantics, not a reading of any model.
SHAPE_PRESERVING_OPS = frozenset(
    "aten::" + n for n in (
        "abs neg exp exp2 expm1 log log1p log2 log10 sqrt rsqrt reciprocal square sign sgn "
        "sin cos tan tanh sigmoid relu relu6 gelu silu mish hardswish hardsigmoid hardtanh "
        "leaky_relu elu celu selu softplus erf erfc floor ceil round trunc frac "
        "add sub rsub mul div true_divide floor_divide remainder fmod pow float_power "
        "maximum minimum clamp clamp_min clamp_max where masked_fill lerp addcmul addcdiv "
        "eq ne lt le gt ge logical_not logical_and logical_or logical_xor bitwise_not "
        "bitwise_and bitwise_or isnan isinf nan_to_num atan2 hypot xlogy copysign "
        "threshold threshold_backward gelu_backward silu_backward sigmoid_backward "
        "tanh_backward hardswish_backward leaky_relu_backward elu_backward mish_backward "
        "softplus_backward hardtanh_backward "
        "_to_copy clone copy contiguous zeros_like ones_like empty_like full_like rand_like "
        "randn_like fill bernoulli native_dropout native_dropout_backward "
        "_softmax _log_softmax _softmax_backward_data _log_softmax_backward_data "
        "native_layer_norm native_group_norm native_batch_norm _native_batch_norm_legit "
        "cumsum cumprod tril triu flip roll").split())

# ATen ops whose backward formula uses their own result (derivatives.yaml's ``result``), and
# which of their outputs it uses: autograd saves those after the op returns, where the other
# saves are of an op's inputs, made before it dispatches (headroom_tensor's "saves")
RESULT_SAVING_OPS = dict(
    [("aten::" + n, (0,)) for n in (
        "exp exp2 expm1 tanh tan sigmoid rsqrt sqrt reciprocal relu _softmax _log_softmax "
        "logsumexp cumprod prod norm linalg_vector_norm std var _cdist_forward elu").split()] +
    [("aten::" + n, (1, 2)) for n in (
        "native_layer_norm native_group_norm native_batch_norm _native_batch_norm_legit").split()] +
    [("aten::" + n, (1,)) for n in (
        "native_dropout max_pool2d_with_indices max_pool3d_with_indices").split()])
_DISPATCH_FILE = os.path.join("torch", "utils", "_python_dispatch.py")
# frames of the modes' own machinery: the dispatch mode, the torch function mode and its handler
_OVERRIDES_FILE = os.path.join("torch", "overrides.py")
_SKIPPED_FILES = (_DISPATCH_FILE, _OVERRIDES_FILE, "headroom_casts.py", "headroom_fake.py",
                  "headroom_autocast.py")
_PLAIN, _SKIP, _REBIND, _FRESH, _DETACH = 0, 1, 2, 3, 4
# addresses for storages found mid-step that existed before it (below any heap or mmap
# address of an x86-64/aarch64 Linux process, and under 2**63 for 8-byte pickle integers)
_LATE_BASE = 0x100000000000
_ACTIVE = [None]
_LOCK = threading.Lock()


class HeadroomCpuError(RuntimeError):
    """The step cannot be recorded on the CPU (a CUDA tensor, a nested capture, ...)."""


def round_size(size):
    """Size the CUDA caching allocator hands out for a request of ``size`` bytes:
    512 bytes at least, else rounded up to a multiple of 512 (kMinBlockSize)."""
    if size < 512:
        return 512
    return (size + 511) // 512 * 512


def shapes_default():
    """Whether headroom_tensor is written when ``shapes`` is not given: yes, unless the
    environment variable HEADROOM_SHAPES is 0, false, no or off."""
    return os.environ.get(SHAPES_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def _cuda_message(what):
    return ("headroom_cpu records a step that runs on the CPU, but %s is on a CUDA device. "
            "Run the step on the CPU (model.cpu(), tensors on the CPU), or record it on the GPU "
            "with %s (torch.cuda.memory._record_memory_history)." % (what, GPU_HELPER))


class _Storage(object):
    """One live allocation: a storage and the number of live tensor objects on it."""
    __slots__ = ("ptr", "addr", "nbytes", "count", "live", "host", "truth")

    def __init__(self, ptr, nbytes, host=False, addr=None):
        self.ptr = ptr  # the CPU data pointer: the key while the storage lives
        self.addr = ptr if addr is None else addr  # the address written to the trace
        self.nbytes = nbytes
        self.count = 0
        self.live = True
        self.host = host  # a CPU tensor on a GPU run too: not in the snapshot
        self.truth = None  # this allocation's headroom_truth row [time_us, category, phase]


def _storage_fn(torch):
    if hasattr(torch.Tensor, "untyped_storage"):  # 2.x
        def info(t):
            s = t.untyped_storage()
            return s.data_ptr(), s.nbytes()
    else:  # 1.13: TypedStorage with data_ptr() and nbytes()
        def info(t):
            s = t.storage()
            return s.data_ptr(), s.nbytes()
    return info


class Capture(object):
    """Records one block of CPU training code; use :func:`capture`."""

    def __init__(self, path, micro_batch=None, seq=None, precision="fp32", optimizer="adamw",
                 checkpoint="none", accum=1, devices=1, iterations=None, model=None,
                 tensors=None, oracle=True, truth=True, shapes=None, fake=False, **more):
        import torch  # imported late so that the module itself imports without torch
        self._torch = torch
        self.path = os.fspath(path)
        self._model_obj = model if isinstance(model, torch.nn.Module) else None
        self._optim_obj = optimizer if isinstance(optimizer, torch.optim.Optimizer) else None
        self._extra = list(tensors or [])
        model_name = more.pop("model_name", None)
        if model_name is None:
            if model is None or isinstance(model, str):
                model_name = model or ""
            else:
                model_name = type(model).__name__
        if self._optim_obj is not None:
            optimizer = _optimizer_name(self._optim_obj)
        if precision not in PRECISIONS:
            raise ValueError("precision must be one of %s, not %r" % (PRECISIONS, precision))
        if checkpoint not in CHECKPOINTS:
            raise ValueError("checkpoint must be one of %s, not %r" % (CHECKPOINTS, checkpoint))
        self._iterations_arg = iterations
        self.config = {
            "micro_batch": micro_batch, "seq": seq, "precision": precision,
            "optimizer": optimizer, "checkpoint": checkpoint, "accum": int(accum),
            "devices": int(devices), "iterations": int(iterations or 1), "model": model_name,
        }
        target = more.pop("target_device", None)
        self.config.update(more)
        if target is not None:
            self.config["target_device"], self.config["target_capacity_bytes"] = _target_device(target)
        self._oracle_wanted = oracle
        self._fake = None  # headroom_fake.FakeSupport in fake mode
        if fake:
            self._fake = self._fake_support()
            self._oracle_wanted = False
            self.config["fake"] = True
            self.config["oracle"] = "off: fake mode allocates nothing for the profiler to count"
        self.recorded_peak_bytes = None
        self.recorded_peak_rounded_bytes = None
        self.oracle_peak_bytes = None
        self.oracle_records = None
        self.incomplete = False
        self._info = _storage_fn(torch) if self._fake is None else self._fake.info
        self._table = {}      # ptr -> _Storage (live)
        self._objs = {}       # id(tensor) -> (weakref, _Storage)
        self._pre = []        # (addr, nbytes, frames): alive before the first entry
        self._ev = []         # (action, addr, nbytes, time_us, frames)
        self._ann = []        # (name, stage, time_us)
        self._frames = {}     # (filename, line, name) -> frame dict
        self._stacks = {}     # tuple of (code, line) -> list of frame dicts
        self._last_us = 0
        self._pending_saves = []  # rows autograd saved since the last op (headroom_tensor saves)
        self._watch = None  # headroom_casts.CastWatch while recording with shapes
        self._prev_fresh = []  # the rows of the last op's fresh storages
        self._prev_kept = ()  # the rows of its outputs its backward uses (RESULT_SAVING_OPS)
        self._kinds = {}      # OpOverload -> _PLAIN / _SKIP / _REBIND / _FRESH / _DETACH
        self._late = 0        # storages first seen mid-step that existed before it
        self._iter = 0
        self._active = False
        self._patches = []
        # ground truth (headroom_truth) and tensors (headroom_tensor): both need the roles
        self._truth_wanted = bool(truth)
        self._shapes_on = shapes_default() if shapes is None else bool(shapes)
        self.config["shapes"] = self._shapes_on
        self._roles_on = self._truth_wanted or self._shapes_on
        self._rows = []       # [time_us, category, phase, tensor info] per alloc event
        self._pre_rows = []   # the same per entry of self._pre (time filled when written)
        self._phase_stack = []
        self._phase_now = "setup"
        self._params = {}     # id(parameter) -> weakref: their .grad are gradients
        self._optims = []     # weakrefs to optimizers: their state is optimizer state
        self._buf_mods = weakref.WeakSet()  # modules with buffers
        self.truth_seconds = 0.0  # time spent in the sweeps (the rest is per allocation)
        # headroom_tensor: the innermost module whose forward runs, by qualified name
        self._dtypes = {}     # torch.dtype -> (name, itemsize)
        self._mod_stack = []  # [(module, qualified name or the enclosing one's)] running
        self._mod_now = None  # the qualified name of the innermost named running module
        self._mod_names = {}  # id(module) -> (weakref, qualified name or None)
        self._mod_root = None  # weakref to the model: names are its named_modules()
        self._mod_hooks = []
        self.shapes_seconds = 0.0  # time spent building the keys at the end

    # ------------------------------------------------------------------ clock & stacks
    def _now(self):
        t = time.time_ns() // 1000
        if t <= self._last_us:
            t = self._last_us + 1
        self._last_us = t
        return t

    def _stack(self):
        f = sys._getframe(1)
        keys = []
        this = _THIS_FILE
        while f is not None:
            code = f.f_code
            fn = code.co_filename
            if fn.endswith(_OVERRIDES_FILE):
                # the torch function mode's handler: where a Python function (F.mse_loss)
                # called it from its has_torch_function branch, that caller is the same
                # function again, already on the stack
                outer = f.f_back
                if outer is not None and keys and outer.f_code is keys[-1][0]:
                    f = outer
            elif fn != this and not fn.endswith(_SKIPPED_FILES):  # the recorder and the modes
                keys.append((code, f.f_lineno))
            f = f.f_back
        keys = tuple(keys)
        st = self._stacks.get(keys)
        if st is None:
            st = []
            for code, line in keys:
                k = (code.co_filename, line, code.co_name)
                fr = self._frames.get(k)
                if fr is None:
                    fr = {"filename": k[0], "line": k[1], "name": k[2]}
                    self._frames[k] = fr
                st.append(fr)
            self._stacks[keys] = st
        return st

    # ------------------------------------------------------------------ storage tracking
    def _alloc(self, ptr, nbytes, tensor=None):
        s = _Storage(ptr, nbytes, addr=None if self._fake is None else self._fake.address(nbytes))
        self._table[ptr] = s
        t = self._now()
        self._ev.append(("alloc", s.addr, nbytes, t, self._stack()))
        if self._roles_on:
            s.truth = row = self._row(t, _TEMPORARY, self._phase_now, tensor, self._mod_now)
            self._rows.append(row)
        return s

    def _row(self, t_us, category, phase, t, module):
        """A storage's row: [time_us, category, phase], and with shapes, of the tensor it is
        made for (one list per allocation: the garbage collector has fewer to look at):
        shape, dtype, itemsize, module, fixed (the shape is final: a module returned the
        tensor), module output, the rows of the inputs it is shaped like (_R_SHAPE ...
        _R_LIKE)."""
        if self._shapes_on and t is not None:
            try:
                dt = t.dtype
                d = self._dtypes.get(dt)
                if d is None:
                    d = self._dtypes[dt] = (str(dt).replace("torch.", ""), t.element_size())
                return [t_us, category, phase, tuple(t.shape), d[0], d[1], module, False, False,
                        None, None, None, None, None, None]
            except Exception:
                pass
        return [t_us, category, phase]

    def _free(self, s):
        s.live = False
        if s.ptr == 0:  # a zero-byte placeholder: never an allocation
            return
        if self._table.get(s.ptr) is s:
            del self._table[s.ptr]
        if self._active and s.host:
            self._ev.append(("host_free", s.addr, s.nbytes, 0, None))
        elif self._active:
            frames = self._stack()
            t = self._now()
            self._ev.append(("free_requested", s.addr, s.nbytes, t, frames))
            self._ev.append(("free_completed", s.addr, s.nbytes, self._now(), frames))

    def _host_tensor(self, t):
        """A tensor that lives on the host on a GPU run too (the RNG state that
        torch.utils.checkpoint saves): followed for the comparison with the oracle, left
        out of the snapshot."""
        info = self._info_safe(t)
        if info is None or info[0] == 0 or id(t) in self._objs:
            return
        s = _Storage(info[0], info[1], host=True)
        self._table[info[0]] = s
        self._ev.append(("host_alloc", info[0], info[1], 0, None))
        self._bind(t, s)

    def _pre_existing(self, ptr, nbytes, label, category=_UNKNOWN, tensor=None):
        addr = None
        if self._ev:
            # first seen mid-step, written at the start of the trace: its CPU address may
            # have served another allocation in between, so it gets an address of its own
            self._late += 1
            addr = _LATE_BASE + self._late * 512
        if self._fake is not None:
            addr = self._fake.address(nbytes)
        s = _Storage(ptr, nbytes, addr=addr)
        self._table[ptr] = s
        self._pre.append((s.addr, nbytes, [{"filename": BEFORE_CAPTURE, "line": 0, "name": label}]))
        if self._roles_on:
            # born before the block: no module, no phase
            s.truth = row = self._row(None, category, "other", tensor, None)
            self._pre_rows.append(row)
        return s

    def _bind(self, t, s):
        key = id(t)
        s.count += 1

        def dead(_ref, key=key, s=s, self=self):
            rec = self._objs.get(key)
            if rec is not None and rec[0] is _ref:
                del self._objs[key]
            self._release(s)
        self._objs[key] = (weakref.ref(t, dead), s)

    def _release(self, s):
        s.count -= 1
        if s.count == 0 and s.live:
            self._free(s)

    def _unbind(self, t):
        rec = self._objs.pop(id(t), None)
        if rec is not None:
            self._release(rec[1])

    def _check_device(self, t):
        if t.is_cuda:
            raise HeadroomCpuError(_cuda_message("a tensor of shape %s" % (tuple(t.shape),)))

    def _info_safe(self, t):
        try:
            return self._info(t)
        except Exception:  # sparse, mkldnn, wrapper subclasses: no plain storage
            return None

    def _adopt_input(self, t):
        """A tensor object not seen before reaches an op: an alias of a known storage, or a
        storage that existed before the block."""
        if id(t) in self._objs:
            return
        if t.is_cuda:
            self._check_device(t)
        info = self._info_safe(t)
        if info is None or info[0] == 0:
            return
        s = self._table.get(info[0])
        if s is None:
            s = self._pre_existing(info[0], info[1], "tensor %s %s" % (tuple(t.shape), t.dtype),
                                   tensor=t)
        self._bind(t, s)

    def _output(self, t, fresh):
        rec = self._objs.get(id(t))
        if t.is_cuda:
            self._check_device(t)
        info = self._info_safe(t)
        if info is None:
            return
        ptr, nbytes = info
        if rec is not None:  # a tracked object comes back (in-place op, out=)
            s = rec[1]
            if s.ptr != ptr or s.nbytes != nbytes:
                self._moved(t, s, ptr, nbytes)
            return
        if ptr == 0:
            # zero bytes: not an allocation, but follow the object in case it is resized
            self._bind(t, _Storage(0, 0))
            return
        s = None if fresh else self._table.get(ptr)
        if s is None:
            if fresh and ptr in self._table:
                old = self._table[ptr]
                old.live = False  # a storage freed behind our back (no live tensor object)
                self._free(old)
            s = self._alloc(ptr, nbytes, t)
        self._bind(t, s)

    def _moved(self, t, s, ptr, nbytes):
        """The storage under a tracked tensor object has a new data pointer or size: the
        storage was reallocated (resize_, out=): all its aliases move with it."""
        if s.ptr != 0 and s.live:
            if self._table.get(s.ptr) is s:
                del self._table[s.ptr]
            frames = self._stack()
            self._ev.append(("free_requested", s.addr, s.nbytes, self._now(), frames))
            self._ev.append(("free_completed", s.addr, s.nbytes, self._now(), frames))
        s.ptr, s.addr, s.nbytes = ptr, ptr, nbytes
        if ptr != 0:
            if self._fake is not None:
                s.addr = self._fake.address(nbytes)
            s.live = True
            self._table[ptr] = s
            now = self._now()
            self._ev.append(("alloc", s.addr, nbytes, now, self._stack()))
            if self._roles_on:
                # a new allocation: a role of the old one carries over (a resized .grad)
                old = s.truth[1] if s.truth is not None and s.truth[1] > _TEMPORARY \
                    else _TEMPORARY
                s.truth = row = self._row(now, old, self._phase_now, t, self._mod_now)
                self._rows.append(row)

    def _rebind(self, t):
        """``t`` now points at another storage (``t.data = x``, ``set_``)."""
        info = self._info_safe(t)
        rec = self._objs.get(id(t))
        if info is None:
            return
        if rec is not None and rec[1].ptr == info[0] and rec[1].live:
            return
        self._unbind(t)
        if info[0] == 0:
            self._bind(t, _Storage(0, 0))
            return
        s = self._table.get(info[0])
        if s is None:
            s = self._pre_existing(info[0], info[1], "tensor %s %s" % (tuple(t.shape), t.dtype),
                                   tensor=t)
        self._bind(t, s)

    def _op_kind(self, func):
        kind = self._kinds.get(func)
        if kind is None:
            try:
                qual = func._schema.name  # 'aten::add'
                overload = func.__name__
            except AttributeError:
                qual = overload = str(func)
            if qual.startswith("profiler::"):
                kind = _SKIP  # record_function handles: CPU tensors even on a GPU run
            elif qual.startswith("prim::"):
                kind = _SKIP  # prim::device of a fake tensor, asked from C++: no tensor out
            elif overload.startswith("set_"):
                kind = _REBIND
            elif overload.startswith("detach"):
                kind = _DETACH
            elif overload.startswith("lift"):
                kind = _FRESH  # torch.tensor(data): made outside the mode, fresh
            else:
                kind = _PLAIN
            self._kinds[func] = kind
        return kind

    def _on_op(self, func, args, kwargs, out):
        Tensor = self._torch.Tensor
        kind = self._op_kind(func)
        if kind == _SKIP:
            return
        # _DETACH is a plain op for the bookkeeping
        if kind == _FRESH:  # torch.tensor(data): its input is the fresh tensor itself
            if isinstance(out, Tensor):
                self._output(out, True)
            return
        # inputs first, so that an output aliasing an unknown input finds its storage
        for a in args:
            if isinstance(a, Tensor):
                if id(a) not in self._objs:
                    self._adopt_input(a)
            elif isinstance(a, (list, tuple)):
                for b in a:
                    if isinstance(b, Tensor) and id(b) not in self._objs:
                        self._adopt_input(b)
        if kwargs:
            for a in kwargs.values():
                if isinstance(a, Tensor) and id(a) not in self._objs:
                    self._adopt_input(a)
        if kind == _REBIND:
            if isinstance(out, Tensor):
                self._rebind(out)
            return
        fresh = False
        before_us = self._last_us
        if isinstance(out, Tensor):
            self._output(out, fresh)
        elif isinstance(out, (list, tuple)):
            for o in out:
                if isinstance(o, Tensor):
                    self._output(o, fresh)
                elif isinstance(o, (list, tuple)):
                    for p in o:
                        if isinstance(p, Tensor):
                            self._output(p, fresh)
        if self._shapes_on:
            self._link_op(func, args, kwargs, out, before_us)
            if self._last_us != before_us:
                self._link_like(func, args, out, before_us)

    def _tensor_rows(self, values):
        """The rows of the storages under the tensors in ``values`` (lists looked into),
        each once, in argument order."""
        Tensor = self._torch.Tensor
        rows, seen = [], set()
        for a in values:
            for t in (a if isinstance(a, (list, tuple)) else (a,)):
                if not isinstance(t, Tensor):
                    continue
                s = self._storage_of(t)
                r = s.truth if s is not None else None
                if r is not None and id(r) not in seen:
                    seen.add(id(r))
                    rows.append(r)
        return rows

    def _link_op(self, func, args, kwargs, out, before_us):
        """headroom_tensor's "op", "inputs" and "saves": the op a fresh storage was made by,
        the storages of that op's tensor inputs, and the storages autograd saved for its
        backward. Autograd saves an op's inputs before it dispatches it and its outputs after:
        the saves pending now are this op's, less those of the previous op's own outputs."""
        pending = self._settle_saves()
        if self._last_us == before_us:
            return  # no fresh storage: an in-place op or a view (its saves are not kept)
        try:
            name = func._schema.name
        except AttributeError:
            name = str(func)
        fresh = [r for r in self._tensor_rows([out]) if len(r) > _R_SAVES and r[0] > before_us]
        if not fresh:
            return
        values = list(args) + list((kwargs or {}).values())
        ins = self._tensor_rows(values)
        ins = [r for r in ins if not any(r is f for f in fresh)]
        casts = self._casts_of(values)
        pin = self._watch.pinned() if self._watch is not None else None
        if pin is not None:  # a literal dtype name, or the row of the tensor it follows
            rows = self._tensor_rows([pin[1]]) if pin[1] is not None else []
            pin = pin[0] if pin[1] is None else (rows[0] if rows else None)
        for r in fresh:
            r[_R_OP], r[_R_INPUTS], r[_R_CASTS], r[_R_PIN] = name, ins, casts, pin
        if pending:
            fresh[0][_R_SAVES] = pending
        self._prev_fresh = fresh
        kept = RESULT_SAVING_OPS.get(name)
        if kept:
            outs = list(out) if isinstance(out, (list, tuple)) else [out]
            self._prev_kept = self._tensor_rows([outs[i] for i in kept if i < len(outs)])

    def _casts_of(self, values):
        """headroom_tensor's "casts": for each argument that is a no-op cast's result
        (headroom_casts.py), its storage's row and what the cast asked for: a dtype name, or
        the row of the tensor whose dtype it follows. None when there is none."""
        watch = self._watch
        if watch is None:
            return None
        out = []
        held = watch.held()
        for a in values:
            for t in (a if isinstance(a, (list, tuple)) else (a,)):
                if not isinstance(t, self._torch.Tensor):
                    continue
                spec = watch.spec_of(t)
                if spec is None and held:
                    info = self._info_safe(t)
                    spec = next((sp for h, sp in held if info is not None and
                                 self._info_safe(h) == info), None)
                if spec is None:
                    continue
                rows = self._tensor_rows([t] if spec[1] is None else [t, spec[1]])
                nbytes = t.numel() * t.element_size()  # a slice of its storage is cast alone
                if spec[1] is None and rows:
                    out.append((rows[0], spec[0], nbytes))
                elif len(rows) == 2:
                    out.append((rows[0], rows[1], nbytes))
        return out or None

    def _settle_saves(self):
        """Gives the previous op the saves of the outputs it keeps (the first save of each; a
        second save of the same storage is the next op's input) and returns the rest."""
        pending, self._pending_saves = self._pending_saves, []
        prev, kept = self._prev_fresh, self._prev_kept
        self._prev_kept = ()
        if not pending or not kept:
            return pending
        late, rest = [], []
        for r in pending:
            mine = any(r is p for p in kept) and not any(r is q for q in late)
            (late if mine else rest).append(r)
        if late:
            prev[0][_R_SAVES] = (prev[0][_R_SAVES] or []) + late
        return rest

    def _link_like(self, func, args, out, before_us):
        """headroom_tensor's "like": a shape-preserving op's fresh output that covers its
        storage has the exact shape of these inputs, each covering its own storage."""
        try:
            name = func._schema.name
        except AttributeError:
            return
        if name not in SHAPE_PRESERVING_OPS:
            return
        Tensor = self._torch.Tensor
        outs = [out] if isinstance(out, Tensor) else \
            [o for o in out if isinstance(o, Tensor)] if isinstance(out, (list, tuple)) else []
        ins = [a for a in args if isinstance(a, Tensor)]
        for o in outs:
            s = self._storage_of(o)
            row = s.truth if s is not None else None
            if row is None or len(row) <= _R_LIKE or row[0] <= before_us or not self._covers(o, s):
                continue
            like = []
            for a in ins:
                si = self._storage_of(a)
                r = si.truth if si is not None else None
                if r is not None and r is not row and tuple(a.shape) == tuple(o.shape) and \
                        self._covers(a, si):
                    like.append(r)
            if like:
                row[_R_LIKE] = like

    @staticmethod
    def _covers(t, s):
        try:
            return t.numel() * t.element_size() == s.nbytes and t.numel() > 0
        except Exception:
            return False

    def _track_existing(self, t, label, category=_UNKNOWN):
        if t is None or not isinstance(t, self._torch.Tensor):
            return
        if t.is_cuda:
            raise HeadroomCpuError(_cuda_message(label))
        if id(t) in self._objs:
            self._label(t, category)
            return
        info = self._info_safe(t)
        if info is None or info[0] == 0:
            return
        s = self._table.get(info[0])
        if s is None:
            s = self._pre_existing(info[0], info[1], label, category, tensor=t)
        self._bind(t, s)
        self._label_storage(s, category)

    def _track_model_and_optimizer(self):
        if self._model_obj is not None:
            for n, p in self._model_obj.named_parameters():
                self._track_existing(p, "parameter " + n, _PARAMETER)
                self._track_existing(p.grad, "gradient of " + n, _GRADIENT)
                self._add_param(p)
            for n, b in self._model_obj.named_buffers():
                self._track_existing(b, "buffer " + n, _BUFFER)
            for m in self._model_obj.modules():
                if m._buffers:
                    self._buf_mods.add(m)
        if self._optim_obj is not None:
            names = {}
            if self._model_obj is not None:
                names = {id(p): n for n, p in self._model_obj.named_parameters()}
            for g in self._optim_obj.param_groups:
                for p in g["params"]:
                    n = names.get(id(p), "parameter %s" % (tuple(p.shape),))
                    self._track_existing(p, n if n.startswith("parameter") else "parameter " + n,
                                         _PARAMETER)
                    self._track_existing(p.grad, "gradient of " + n, _GRADIENT)
            for p, st in self._optim_obj.state.items():
                n = names.get(id(p), "%s" % (tuple(p.shape),))
                for k, v in st.items():
                    self._track_existing(v, "optimizer state %s of %s" % (k, n), _OPTSTATE)
            self._add_optimizer(self._optim_obj)
        for i, t in enumerate(self._extra):
            self._track_existing(t, "tensor %d %s" % (i, tuple(t.shape)))

    # ------------------------------------------------------------------ ground truth
    def _storage_of(self, t):
        rec = self._objs.get(id(t))
        if rec is not None and rec[0]() is t and rec[1].live:
            return rec[1]
        info = self._info_safe(t)
        if info is None or info[0] == 0:
            return None
        return self._table.get(info[0])

    @staticmethod
    def _label_storage(s, category):
        if s is not None:
            row = s.truth
            if row is not None and row[1] < category:
                row[1] = category

    def _label(self, t, category):
        if self._roles_on and t is not None:
            self._label_storage(self._storage_of(t), category)

    def _add_param(self, p):
        if self._roles_on:
            self._params[id(p)] = weakref.ref(p)

    def _add_optimizer(self, opt):
        if self._roles_on and not any(r() is opt for r in self._optims):
            self._optims.append(weakref.ref(opt))
            for g in opt.param_groups:
                for p in g["params"]:
                    self._add_param(p)

    def _sweep(self, state=True):
        """Labels the storages that are some parameter's .grad now and, with ``state``, the
        optimizer state and module buffers. Cheap: a few attribute reads per tensor. Runs
        after every backward call and at every marker (the state at the end of an optimizer
        phase, at iteration markers and at the end of the block)."""
        if not (self._roles_on and self._active):
            return
        t0 = time.perf_counter()
        Tensor = self._torch.Tensor
        dead = []
        for key, ref in self._params.items():
            p = ref()
            if p is None:
                dead.append(key)
                continue
            g = p.grad
            if g is not None:
                self._label_storage(self._storage_of(g), _GRADIENT)
        for key in dead:
            del self._params[key]
        if state:
            for ref in self._optims:
                opt = ref()
                if opt is None:
                    continue
                for st in opt.state.values():
                    for v in st.values():
                        if isinstance(v, Tensor):
                            self._label_storage(self._storage_of(v), _OPTSTATE)
            for m in list(self._buf_mods):
                for b in m._buffers.values():
                    if b is not None:
                        self._label_storage(self._storage_of(b), _BUFFER)
        self.truth_seconds += time.perf_counter() - t0

    def _backward_starts(self):
        """Forward outputs kept until the backward are activations."""
        t0 = time.perf_counter()
        for s in self._table.values():
            row = s.truth
            if row is not None and row[1] < _ACTIVATION and (row[2] == "forward" or
                                                             row[2] == "loss"):
                row[1] = _ACTIVATION
        self.truth_seconds += time.perf_counter() - t0

    def inputs(self, *tensors):
        """``x, y = cap.inputs(x, y)`` labels the batch (model inputs and targets) as
        "input" in headroom_truth; returns its arguments (one tensor as it is)."""
        if self._roles_on and self._active:
            for t in tensors:
                if isinstance(t, self._torch.Tensor):
                    if id(t) not in self._objs:
                        self._adopt_input(t)
                    self._label(t, _INPUT)
        return tensors[0] if len(tensors) == 1 else tensors

    def gradients(self, *tensors):
        """``cap.gradients(bucket.buffer())`` labels memory that holds gradients without being
        a parameter's ``.grad`` (DistributedDataParallel's flat gradient buckets) as "gradient"
        in headroom_truth."""
        if self._roles_on and self._active:
            for t in tensors:
                if isinstance(t, self._torch.Tensor):
                    self._label(t, _GRADIENT)

    # ------------------------------------------------------------------ modules
    def _names_from(self, root, prefix=None):
        """Qualified names of ``root``'s modules, as ``root.named_modules()`` gives them (a
        module listed twice keeps its first name). The model's names (``prefix`` None)
        replace any earlier name; a module outside the model gets ``prefix`` + its name
        only where it has none."""
        names = self._mod_names
        for n, m in root.named_modules():
            if prefix is not None:
                n = prefix + "." + n if n else prefix
                ent = names.get(id(m))
                if ent is not None and ent[0]() is m:
                    continue
            names[id(m)] = (weakref.ref(m), n)

    def _set_root(self, m):
        self._mod_root = weakref.ref(m)
        self._names_from(m)

    def _known_name(self, m):
        ent = self._mod_names.get(id(m))
        if ent is not None and ent[0]() is m:
            return True, ent[1]
        return False, None

    def _module_name(self, m):
        """The qualified name of ``m`` in the model, None for a module no named_modules()
        lists (not registered: the enclosing module's name stands). The model is the
        ``model=`` argument, else the first module called at the top level, replaced by a
        module called at the top level that holds it. A module called at the top level
        outside the model (a loss module) and its submodules are named ``<ClassName>`` and
        ``<ClassName>.sub``."""
        known, name = self._known_name(m)
        if known:
            return name
        root = self._mod_root() if self._mod_root is not None else None
        if root is None:
            self._set_root(m)
        else:
            self._names_from(root)  # the model may have grown
            known, name = self._known_name(m)
            if known:
                return name
            if not self._mod_stack:
                if any(x is root for x in m.modules()):
                    self._set_root(m)  # it holds the model: the model it is
                else:
                    self._names_from(m, "<%s>" % type(m).__name__)
            else:
                self._mod_names[id(m)] = (weakref.ref(m), None)
        return self._known_name(m)[1]

    def _module_output(self, name, out, depth=0):
        """``out`` (tensors, or lists, tuples and dicts of them) was returned by the module
        named ``name``: its storages are activations, and a storage allocated inside that
        module's forward takes the shape of the output that covers it (nn.Linear returns
        [b, s, d], a view of the [b*s, d] that addmm made), once: the innermost module that
        returns it decides."""
        if isinstance(out, self._torch.Tensor):
            s = self._storage_of(out)
            if s is None or s.truth is None or len(s.truth) == 3:
                return
            row = s.truth
            row[_R_MOUT] = True
            if row[_R_FIXED]:
                return
            m = row[_R_MOD]
            if m is None or name is None:
                return
            if not (m == name or m.startswith(name + ".") or
                    (name == "" and not m.startswith("<"))):
                return  # made before this module ran (its input, a parameter)
            try:
                d = self._dtypes.get(out.dtype)
                if d is None or d[0] != row[_R_DTYPE]:
                    return
                if out.numel() * d[1] == s.nbytes and out.is_contiguous():
                    row[_R_SHAPE] = tuple(out.shape)
                    row[_R_FIXED] = True
            except Exception:
                return
        elif depth < 3:
            if isinstance(out, (list, tuple)):
                for o in out:
                    self._module_output(name, o, depth + 1)
            elif isinstance(out, dict):
                for o in out.values():
                    self._module_output(name, o, depth + 1)

    def _install_modules(self):
        """Global forward hooks: the stack of running modules (for the module of each
        allocation) and their outputs."""
        torch = self._torch
        rec = self
        mm = torch.nn.modules.module
        if not hasattr(mm, "register_module_forward_pre_hook"):
            self.config["shapes_modules"] = "no global module hooks in this torch"
            return

        def pre(module, args):
            if rec._active:
                name = rec._module_name(module)
                if name is None:
                    name = rec._mod_now
                rec._mod_stack.append((module, name))
                rec._mod_now = name

        def post(module, args, output):
            if not rec._active:
                return
            st = rec._mod_stack
            name = None
            for i in range(len(st) - 1, -1, -1):
                if st[i][0] is module:  # and what a forward that raised left above it
                    name = st[i][1]
                    del st[i:]
                    break
            else:
                return
            rec._mod_now = st[-1][1] if st else None
            rec._module_output(name, output)

        self._mod_hooks.append(mm.register_module_forward_pre_hook(pre))
        try:  # 2.x: also when forward raises
            self._mod_hooks.append(mm.register_module_forward_hook(post, always_call=True))
        except TypeError:
            self._mod_hooks.append(mm.register_module_forward_hook(post))
        if self._model_obj is not None:
            self._set_root(self._model_obj)

    # ------------------------------------------------------------------ markers
    def _mark(self, name, stage):
        self._ann.append((name, stage, self._now()))

    @contextlib.contextmanager
    def phase(self, name):
        """``with cap.phase("forward"):`` marks ``## forward ##`` (also ``loss``,
        ``backward``, ``optimizer``; a full marker name is accepted as it is)."""
        marker = PHASE_NAMES.get(name, name)
        if marker not in PHASE_NAMES.values():
            raise ValueError("phase must be one of %s, not %r" % (sorted(PHASE_NAMES), name))
        short = _SHORT_PHASE[marker]
        truth = self._roles_on and self._active
        if truth:
            self._sweep(state=False)
            if short == "backward":
                self._backward_starts()
        self._mark(marker, "START")
        self._phase_stack.append(short)
        self._phase_now = short
        try:
            yield
        finally:
            if truth:  # optimizer state and buffers: after an optimizer phase (and below)
                self._sweep(state=short == "optimizer")
            self._mark(marker, "END")
            if self._phase_stack and self._phase_stack[-1] == short:
                self._phase_stack.pop()
            elif short in self._phase_stack:  # windows closed out of order
                self._phase_stack.remove(short)
            self._phase_now = self._phase_stack[-1] if self._phase_stack else "setup"

    @contextlib.contextmanager
    def iteration(self):
        """``with cap.iteration() as n:`` marks ``headroom.iteration#n``."""
        n = self._iter
        self._iter += 1
        self._sweep()
        self._mark(ITERATION_PREFIX + str(n), "START")
        try:
            yield n
        finally:
            self._sweep()
            self._mark(ITERATION_PREFIX + str(n), "END")

    # ------------------------------------------------------------------ enter / exit
    def __enter__(self):
        with _LOCK:
            if _ACTIVE[0] is not None:
                raise HeadroomCpuError("a headroom_cpu capture is already active")
            _ACTIVE[0] = self
        try:
            self._t0 = self._now()
            self._cuda_autocast0 = _cuda_autocast_regions()
            self._track_model_and_optimizer()
            self._start_oracle()
            self._install()
        except BaseException:
            self._uninstall()
            self._stop_oracle(discard=True)
            _ACTIVE[0] = None
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            try:
                self._sweep()
            except Exception:  # the truth must never break the recording
                pass
            self._uninstall()
            self._stop_oracle()
        finally:
            _ACTIVE[0] = None
        if exc_type is not None:
            self.incomplete = True
            self.config["incomplete"] = True
            self.config["error"] = "%s: %s" % (exc_type.__name__, exc)
            if getattr(exc, "op", None) is not None:  # what fake mode could not run
                self.config["fake_unsupported"] = [{"op": exc.op, "module": exc.module,
                                                    "phase": exc.phase}]
        self._write()
        if exc_type is not None:
            print("headroom_cpu: the step raised %s; wrote what was recorded to %s "
                  "(marked incomplete)" % (exc_type.__name__, self.path), file=sys.stderr)
        return False

    def _install(self):
        torch = self._torch
        from torch.utils._python_dispatch import TorchDispatchMode
        rec = self
        Tensor = torch.Tensor
        fake_cls = () if self._fake is None else self._fake.tensor_class

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                if fake_cls and args and isinstance(args[0], Tensor) and \
                        not isinstance(args[0], fake_cls) and rec._op_kind(func) == _DETACH:
                    return args[0]  # fake mode: a saved scalar operand (real), as below
                out = func(*args, **(kwargs or {}))
                if not isinstance(out, Tensor) and isinstance(out, (float, int, complex)) \
                        and args and isinstance(args[0], Tensor) \
                        and rec._op_kind(func) == _DETACH:
                    # detach of a wrapped Python number (a saved scalar operand, unpacked by
                    # our saved-tensor hook) comes back as a Python number; the caller needs
                    # a tensor: hand back the wrapped number itself (never written to)
                    return args[0]
                rec._on_op(func, args, kwargs, out)
                return out

        # Parameter(...) wraps a detached alias made in C++, out of the mode's sight
        base_make = torch._C._TensorBase._make_subclass
        had_make = "_make_subclass" in torch.Tensor.__dict__
        old_make = torch.Tensor.__dict__.get("_make_subclass")

        Parameter = torch.nn.Parameter

        def _make_subclass(cls, data, *a, **k):
            out = base_make(cls, data, *a, **k)
            if rec._active and not issubclass(cls, fake_cls):  # fake mode's own wrappers
                rec._adopt_input(out)
                if rec._roles_on and isinstance(out, Parameter):
                    rec._label(out, _PARAMETER)
                    rec._add_param(out)
            return out
        torch.Tensor._make_subclass = staticmethod(_make_subclass)
        self._patches.append(("_make_subclass", had_make, old_make))

        # t.data (a shallow copy made in C++) and t.data = x (Module.to(dtype))
        base_data = torch._C._TensorBase.__dict__["data"]
        had_data = "data" in torch.Tensor.__dict__
        old_data = torch.Tensor.__dict__.get("data")

        def _get_data(t):
            d = base_data.__get__(t, type(t))
            if rec._active:
                rec._adopt_input(d)
            return d

        def _set_data(t, v):
            base_data.__set__(t, v)
            if rec._active:
                rec._rebind(t)
                if rec._roles_on and isinstance(t, Parameter):
                    rec._label(t, _PARAMETER)  # the parameter's new storage
        torch.Tensor.data = property(_get_data, _set_data)
        self._patches.append(("data", had_data, old_data))

        # torch.utils.checkpoint saves the CPU RNG state (a ByteTensor made outside the
        # dispatcher): host memory on a GPU run as well
        base_rng = torch.get_rng_state

        def get_rng_state():
            st = base_rng()
            if rec._active:
                rec._host_tensor(st)
            return st
        torch.get_rng_state = get_rng_state
        self._rng = base_rng

        self._more_patches = []
        if self._roles_on:
            self._install_truth()
        if self._shapes_on or self._fake is not None:  # fake mode: for its errors' module
            self._install_modules()
        if self._fake is not None:  # entered here: below the recorder's dispatch mode
            self._fake.install(self, self._patch, _PARAMETER)

        from torch.utils._mode_utils import no_dispatch

        def pack(t):
            # A detached alias, as autograd saves an output (tensor_data): it holds the
            # storage as long as the graph does, without a reference cycle through grad_fn.
            # Made with the mode off (a wrapped Python number cannot pass through it) and
            # counted here when its storage is a known one.
            if isinstance(t, fake_cls):
                d = rec._fake.detach(t)  # a fake alias (no_dispatch alone makes a meta one)
            else:
                with no_dispatch():
                    d = t.detach()
            if rec._active:
                info = rec._info_safe(d)
                if info is not None and info[0] in rec._table:
                    s = rec._table[info[0]]
                    rec._bind(d, s)
                    rec._label_storage(s, _ACTIVATION)  # saved for backward
                    if rec._shapes_on and s.truth is not None and len(s.truth) > _R_SAVES:
                        rec._pending_saves.append(s.truth)
            return d

        def unpack(d):
            return d
        self._hooks = torch.autograd.graph.saved_tensors_hooks(pack, unpack)
        self._hooks.__enter__()
        self._mode = _Mode()
        self._mode.__enter__()
        self._watch = None
        if self._shapes_on and _CastWatch is not None:
            self._watch = _CastWatch(torch)
            self._watch.install()
        self._active = True

    @property
    def fake_mode(self):
        """The FakeTensorMode of a fake capture (``from_tensor`` makes a real tensor fake),
        None for a real one."""
        return self._fake.mode if self._fake is not None else None

    def _patch(self, owner, name, new):
        """Sets ``owner.name`` to ``new`` until the capture ends."""
        self._more_patches.append((owner, name, name in owner.__dict__, owner.__dict__.get(name)))
        setattr(owner, name, new)

    def _fake_support(self):
        if _fake is None:
            raise HeadroomCpuError("fake mode needs headroom_fake.py beside headroom_cpu.py")
        torch = self._torch
        given = list(self._extra)
        if self._model_obj is not None:
            given += list(self._model_obj.parameters()) + list(self._model_obj.buffers())
        if self._optim_obj is not None:
            given += [p for g in self._optim_obj.param_groups for p in g["params"]]
            given += [v for st in self._optim_obj.state.values() for v in st.values()
                      if isinstance(v, torch.Tensor)]
        try:
            return _fake.FakeSupport(torch, HeadroomCpuError, given)
        except ImportError as e:
            raise HeadroomCpuError("fake mode needs torch._subclasses.fake_tensor (PyTorch 1.13 "
                                   "or later): %s" % (e,))

    def _install_truth(self):
        """What headroom_truth needs to see: module buffers as they are registered,
        optimizers as they are made, and the gradients after every backward call. The
        wrappers live in this file, so that no stack shows them."""
        torch = self._torch
        rec = self

        def patch(owner, name, new):
            had = name in owner.__dict__
            self._more_patches.append((owner, name, had, owner.__dict__.get(name)))
            setattr(owner, name, new)

        Module = torch.nn.Module
        base_register_buffer = Module.register_buffer

        def register_buffer(module, name, tensor, *a, **k):
            out = base_register_buffer(module, name, tensor, *a, **k)
            if rec._active and tensor is not None:
                rec._buf_mods.add(module)
                rec._label(tensor, _BUFFER)
            return out
        patch(Module, "register_buffer", register_buffer)

        Optimizer = torch.optim.Optimizer
        base_opt_init = Optimizer.__init__

        def optimizer_init(opt, *a, **k):
            base_opt_init(opt, *a, **k)
            if rec._active:
                rec._add_optimizer(opt)
        patch(Optimizer, "__init__", optimizer_init)

        autograd = torch.autograd
        base_backward = autograd.backward

        def backward(*a, **k):
            try:
                return base_backward(*a, **k)
            finally:
                rec._sweep(state=False)  # .grad of every parameter: gradients
        patch(autograd, "backward", backward)

    def _uninstall(self):
        torch = self._torch
        was = self._active
        self._active = False
        for owner, name, had, old in reversed(getattr(self, "_more_patches", [])):
            if had:
                setattr(owner, name, old)
            else:
                try:
                    delattr(owner, name)
                except AttributeError:
                    pass
        self._more_patches = []
        for h in self._mod_hooks:
            h.remove()
        self._mod_hooks = []
        self._mod_stack = []
        self._mod_now = None
        if getattr(self, "_watch", None) is not None:
            self._watch.uninstall()
            self._watch = None
        if getattr(self, "_mode", None) is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None
        if getattr(self, "_fake", None) is not None:  # below the recorder's mode: out after it
            self._fake.uninstall()
        if getattr(self, "_hooks", None) is not None:
            self._hooks.__exit__(None, None, None)
            self._hooks = None
        for name, had, old in reversed(self._patches):
            if had:
                setattr(torch.Tensor, name, old)
            else:
                try:
                    delattr(torch.Tensor, name)
                except AttributeError:
                    pass
        self._patches = []
        if getattr(self, "_rng", None) is not None:
            torch.get_rng_state = self._rng
            self._rng = None
        if was:
            self._end_us = self._now()
            # dropping the weak references drops their callbacks: tensors that outlive the
            # block never call back into the recorder
            self._objs_at_end = len(self._objs)
            self._objs = {}

    # ------------------------------------------------------------------ oracle
    def _start_oracle(self):
        self._oracle_on = False
        if not self._oracle_wanted:
            return
        torch = self._torch
        try:
            from torch.autograd import ProfilerConfig, ProfilerState
            cfg = ProfilerConfig(ProfilerState.CPU, False, True, False, False, False,
                                 torch.profiler._ExperimentalConfig())
            torch.autograd._enable_profiler_legacy(cfg)
            self._oracle_on = True
        except Exception as e:  # 2.x builds without the legacy profiler
            self.config["oracle_error"] = "%s: %s" % (type(e).__name__, e)

    def _stop_oracle(self, discard=False):
        if not getattr(self, "_oracle_on", False):
            return
        self._oracle_on = False
        recs = self._torch.autograd._disable_profiler_legacy()
        if discard:
            return
        flat = [r for thread in recs for r in thread]
        start = None
        for r in flat:
            if r.kind() == "mark" and r.name() == "__start_profile":
                start = r
                break
        if start is None:
            return
        mem = []
        for i, r in enumerate(flat):
            if r.kind() == "memory_alloc":
                mem.append((start.cpu_elapsed_us(r), i, r.cpu_memory_usage()))
        mem.sort()
        self.oracle_records = mem
        run = peak = 0
        for _, _, d in mem:
            run += d
            if run > peak:
                peak = run
        self._oracle_rel_peak = peak
        self._oracle_flat = flat
        self._oracle_start = start

    # ------------------------------------------------------------------ output
    def _pre_times(self):
        """Times of the entries alive before the block: distinct, ending at the block's
        start, so that time_us is a unique key of every entry."""
        n = len(self._pre)
        return [self._t0 - (n - 1 - i) for i in range(n)]

    def _trace(self):
        entries = []
        for (addr, n, frames), t in zip(self._pre, self._pre_times()):
            entries.append({"action": "alloc", "addr": addr, "size": round_size(n), "stream": 0,
                            "time_us": t, "frames": frames})
        for action, addr, n, t, frames in self._ev:
            if action[0] == "h":  # host_alloc / host_free
                continue
            entries.append({"action": action, "addr": addr, "size": round_size(n), "stream": 0,
                            "time_us": t, "frames": frames})
        return entries

    def _peaks(self):
        live = live_r = sum(n for _, n, _ in self._pre)
        live_r = sum(round_size(n) for _, n, _ in self._pre)
        peak, peak_r = live, live_r
        host = peak_h = live
        for action, _addr, n, _t, _f in self._ev:
            if action == "alloc":
                live += n
                host += n
                live_r += round_size(n)
                if live > peak:
                    peak = live
                if live_r > peak_r:
                    peak_r = live_r
            elif action == "free_completed":
                live -= n
                host -= n
                live_r -= round_size(n)
            elif action == "host_alloc":
                host += n
            elif action == "host_free":
                host -= n
            if host > peak_h:
                peak_h = host
        self.recorded_peak_with_host_bytes = peak_h
        return peak, peak_r, live, live_r

    def _write(self):
        torch = self._torch
        peak, peak_r, end, end_r = self._peaks()
        self.recorded_peak_bytes = peak
        self.recorded_peak_rounded_bytes = peak_r
        pre_bytes = sum(n for _, n, _ in self._pre)
        if getattr(self, "_oracle_rel_peak", None) is not None:
            self.oracle_peak_bytes = pre_bytes + self._oracle_rel_peak
        cfg = self.config
        if self._iterations_arg is None and self._iter:
            cfg["iterations"] = self._iter
        if _cuda_autocast_regions() > getattr(self, "_cuda_autocast0", 0):
            cfg.setdefault("autocast", "cuda")  # the step ran under CUDA's lists (headroom_autocast)
        cfg.update({
            "recorder": "headroom_cpu",
            "torch_version": str(torch.__version__),
            "oracle_peak_bytes": (-1 if self.oracle_peak_bytes is None
                                  else int(self.oracle_peak_bytes)),
            "recorded_peak_bytes": int(peak),
            "recorded_peak_rounded_bytes": int(peak_r),
            "recorded_peak_with_host_bytes": int(self.recorded_peak_with_host_bytes),
            "before_capture_bytes": int(pre_bytes),
            "live_bytes_at_end": int(end),
            "allocations": sum(1 for e in self._ev if e[0] == "alloc") + len(self._pre),
            "host_allocations": sum(1 for e in self._ev if e[0] == "host_alloc"),
            "before_capture_allocations": len(self._pre),
            "found_mid_step_allocations": self._late,
            "rounding": "cuda-caching-allocator-512",
            "num_threads": int(torch.get_num_threads()),
        })
        ann = [{"name": n, "stage": st, "device": 0, "time_us": t} for n, st, t in self._ann]
        snapshot = {
            "segments": [],
            "device_traces": [self._trace()],
            "allocator_settings": {
                "PYTORCH_CUDA_ALLOC_CONF": "",
                "max_split_size": -1,
                "garbage_collection_threshold": 0.0,
                "expandable_segments": False,
                "pinned_num_register_threads": 1,
                "release_lock_on_cudamalloc": False,
                "pinned_use_cuda_host_register": False,
                "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)},
            },
            "external_annotations": ann,
            "headroom_config": _plain(cfg),
        }
        if self._roles_on:
            self._finish_rows()
        if self._shapes_on:
            t0 = time.perf_counter()
            self._tensor_keys(snapshot["device_traces"][0])
            snapshot["headroom_tensor_keys"] = TENSOR_KEYS_VERSION
            self.shapes_seconds += time.perf_counter() - t0
        if self._truth_wanted:
            snapshot["headroom_truth"] = self._truth()
        _atomic_pickle(self.path, snapshot)

    def _finish_rows(self):
        """Times of the rows of memory alive before the block; storages alive at the end
        with no role seen become unknown."""
        for row, t in zip(self._pre_rows, self._pre_times()):
            row[0] = t
        for s in self._table.values():  # alive at the end, no role seen: unknown
            if s.live and s.truth is not None and s.truth[1] == _TEMPORARY:
                s.truth[1] = _UNKNOWN

    def _truth(self):
        """The headroom_truth key: one [time_us, category, phase] per alloc entry."""
        names = _TRUTH_NAMES
        rows = [[int(r[0]), names[r[1]], r[2]] for r in self._pre_rows]
        rows += [[int(r[0]), names[r[1]], r[2]] for r in self._rows]
        return {"version": TRUTH_VERSION, "allocations": rows}

    def _tensor_keys(self, trace):
        """Adds headroom_tensor to every alloc entry of ``trace`` whose tensor is known.
        Equal dicts (and dims) are one object, so that pickle writes each once."""
        mb, seq = self.config.get("micro_batch"), self.config.get("seq")
        mb = mb if isinstance(mb, int) and not isinstance(mb, bool) else None
        seq = seq if isinstance(seq, int) and not isinstance(seq, bool) else None
        dims_cache, keys_cache = {}, {}
        self._settle_saves()  # the last op's own
        entry_of = {id(row): index for index, _e, row in self._alloc_rows(trace)}
        written = 0
        for index, e, row in self._alloc_rows(trace):
            if len(row) == 3:
                continue
            _t, c, _ph, shape, dtype, _itemsize, module, _fixed, mout, like_rows, op, ins, \
                saves, casts, pin = row
            if mout and c < _ACTIVATION:
                c = _ACTIVATION  # a module's output
            phase = _TENSOR_PHASE.get(row[2])
            key = (shape, dtype, module, c, phase)
            d = keys_cache.get(key)
            if d is None:
                b = tuple(i for i, n in enumerate(shape) if n == mb)
                sq = tuple(i for i, n in enumerate(shape) if n == seq)
                dims = dims_cache.get((b, sq))
                if dims is None:
                    dims = dims_cache[(b, sq)] = {"batch": list(b), "seq": list(sq)}
                d = keys_cache[key] = {"shape": list(shape), "dtype": dtype, "dims": dims,
                                       "module": module, "kind": _KIND_NAMES[c],
                                       "phase": phase}
            back = [index - entry_of[id(r)] for r in like_rows or () if id(r) in entry_of]
            if back:
                d = dict(d, like=back)
            if op is not None:
                d = dict(d, op=op,
                         inputs=[index - entry_of[id(r)] for r in ins if id(r) in entry_of])
                saved = [index - entry_of[id(r)] for r in saves or () if id(r) in entry_of]
                if saved:
                    d["saves"] = saved
                cast = [[index - entry_of[id(r)], spec if isinstance(spec, str) else
                         index - entry_of[id(spec)], nbytes]
                        for r, spec, nbytes in casts or () if id(r) in entry_of and
                        (isinstance(spec, str) or id(spec) in entry_of)]
                if cast:
                    d["casts"] = cast
                if isinstance(pin, str):
                    d["dtype_arg"] = pin
                elif pin is not None and id(pin) in entry_of:
                    d["dtype_arg"] = index - entry_of[id(pin)]
            e["headroom_tensor"] = d
            written += 1
        return written

    def _alloc_rows(self, trace):
        """(index, entry, row) of each alloc entry of ``trace`` and its storage's row (rows
        are in entry order)."""
        rows = iter(self._pre_rows + self._rows)
        for index, e in enumerate(trace):
            if e["action"] != "alloc":
                continue
            row = next(rows, None)
            if row is None:
                return
            yield index, e, row

    # ------------------------------------------------------------------ diagnostics
    def oracle_breakdown(self, ops=None):
        """Explains a difference between the recorded and the oracle peak.

        Every op the recorder sees runs twice nested in the profiler's records: the call
        that reached the dispatch mode and, inside it, the mode's own call of the op (same
        name), under which nothing is visible to Python. An allocation made and freed inside
        that inner call (matched by size, last in first out) is kernel scratch. Returns
        ``{'oracle_peak_bytes', 'peak_without_scratch_bytes', 'scratch_at_peak': [(op,
        bytes), ...], 'scratch_ops': [(op, allocations, bytes), ...]}`` (bytes alive before
        the block included in both peaks). ``ops`` (names such as 'aten::convolution')
        limits the scratch to those ops."""
        flat = getattr(self, "_oracle_flat", None)
        if not flat:
            return None
        start = self._oracle_start
        evs = []
        for i, r in enumerate(flat):
            k = r.kind()
            if k in ("push", "pop", "memory_alloc"):
                evs.append((start.cpu_elapsed_us(r), i, k, r.name(), r.cpu_memory_usage()))
        evs.sort()
        stack = []  # [name, inner call?, {size: [event positions]}]
        scratch = {}  # event position -> op name
        per_op = {}
        for pos, (_t, _i, k, name, d) in enumerate(evs):
            if k == "push":
                inner = bool(stack) and stack[-1][0] == name and not stack[-1][1]
                stack.append([name, inner, {}])
            elif k == "pop":
                if stack:
                    stack.pop()
            else:
                frame = None
                for f in reversed(stack):
                    if f[1]:
                        frame = f
                        break
                if frame is None or (ops is not None and frame[0] not in ops):
                    continue
                if d > 0:
                    frame[2].setdefault(d, []).append(pos)
                elif d < 0:
                    opened = frame[2].get(-d)
                    if opened:
                        a = opened.pop()
                        scratch[a] = scratch[pos] = frame[0]
                        n, b = per_op.get(frame[0], (0, 0))
                        per_op[frame[0]] = (n + 1, b - d)
        pre = sum(n for _, n, _ in self._pre)
        run = peak = run2 = peak2 = 0
        live_scratch = {}
        at_peak = {}
        for pos, (_t, _i, k, name, d) in enumerate(evs):
            if k != "memory_alloc":
                continue
            run += d
            if pos in scratch:
                live_scratch[scratch[pos]] = live_scratch.get(scratch[pos], 0) + d
            else:
                run2 += d
                peak2 = max(peak2, run2)
            if run > peak:
                peak = run
                at_peak = {o: b for o, b in live_scratch.items() if b}
        return {
            "oracle_peak_bytes": pre + peak,
            "peak_without_scratch_bytes": pre + peak2,
            "scratch_at_peak": sorted(at_peak.items(), key=lambda x: -x[1]),
            "scratch_ops": sorted(((o, n, b) for o, (n, b) in per_op.items()), key=lambda x: -x[2]),
        }


# frames of this file are the recorder's own: the filename exactly as code objects carry it
_THIS_FILE = Capture._stack.__code__.co_filename


# the devices a recording may name as its target (Headroom's device presets), in GiB
TARGET_DEVICES = {"24gib": 24, "40gib": 40, "a100-40gb": 40, "48gib": 48, "80gib": 80, "h100": 80,
                  "h100-80gb": 80, "a100-80gb": 80, "94gib": 94, "141gib": 141, "h200": 141}


def _cuda_autocast_regions():
    """How many headroom_autocast.cuda_autocast regions were entered so far (0: never imported)."""
    mod = sys.modules.get("headroom_autocast")
    return getattr(getattr(mod, "CudaAutocast", None), "entered", 0)


def _target_device(target):
    """(name, capacity in bytes) of ``target_device=``: a name of TARGET_DEVICES or GiB."""
    if isinstance(target, (int, float)) and not isinstance(target, bool) and target > 0:
        return "%g GiB" % target, int(target * 2**30)
    gib = TARGET_DEVICES.get(str(target).lower())
    if gib is None:
        raise HeadroomCpuError("target_device=%r: expected GiB or one of %s"
                               % (target, ", ".join(sorted(TARGET_DEVICES))))
    return str(target), gib * 2**30


def _optimizer_name(opt):
    n = type(opt).__name__.lower()
    if n == "sgd":
        mom = any(g.get("momentum", 0) for g in opt.param_groups)
        return "sgd-momentum" if mom else "sgd"
    return n


def _plain(v):
    """Config values as plain pickle types (dict, list, str, int, float, bool, None)."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def _atomic_pickle(path, obj):
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            pickle.dump(obj, f, protocol=PICKLE_PROTOCOL)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def capture(path, micro_batch=None, seq=None, precision="fp32", optimizer="adamw",
            checkpoint="none", accum=1, devices=1, **more):
    """``with capture(path, ...) as cap: step()`` records the block and writes ``path``.

    ``model=`` (an ``nn.Module``, or a name) and ``optimizer=`` (an ``Optimizer``, or one of
    'sgd', 'sgd-momentum', 'adamw', 'adam') built before the block have their parameters,
    buffers, gradients and optimizer state recorded as alive before the trace; ``tensors=``
    adds more. ``oracle=False`` skips the legacy-profiler oracle, ``truth=False`` the
    ``headroom_truth`` key, ``shapes=False`` the ``headroom_tensor`` keys (default: on, unless
    HEADROOM_SHAPES=0 is set). ``target_device=`` ('h100-80gb', 'a100-40gb', ... or GiB) names
    the GPU the step is meant for: headroom_config's ``target_device`` and
    ``target_capacity_bytes``, which Headroom takes as the capacity where no OOM record gives
    one. ``fake=True`` records the step with fake tensors (nothing
    allocated, no kernel run; see "Fake mode" in the module docstring). Other keyword
    arguments go into ``headroom_config``.
    """
    return Capture(path, micro_batch=micro_batch, seq=seq, precision=precision,
                   optimizer=optimizer, checkpoint=checkpoint, accum=accum, devices=devices,
                   **more)


def fake_mode():
    """The fake mode of ``capture(..., fake=True)``, to build a model (and take warm-up steps)
    before a fake capture: ``with headroom_cpu.fake_mode(): model = build()``, then
    ``capture(..., fake=True, model=model, optimizer=opt)`` records under that same mode."""
    if _fake is None:
        raise HeadroomCpuError("fake mode needs headroom_fake.py beside headroom_cpu.py")
    return _fake.fake_mode(HeadroomCpuError)
