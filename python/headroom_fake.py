"""headroom_fake: fake mode for python/headroom_cpu.py (``capture(path, ..., fake=True)``).

In fake mode every tensor the step makes is a fake tensor (PyTorch's FakeTensorMode,
``torch._subclasses.fake_tensor``, 1.13 or later): a tensor with a shape, a dtype, strides
and a storage of the right size on the ``meta`` device, so that no data is allocated and no
kernel runs; the recorder writes the same snapshot from it. What it takes here:

* The mode (``HeadroomFakeMode``) is PyTorch's with no fallback to real kernels (an op
  without a fake implementation would run for real on zeros, allocating its real size) and
  with data-dependent ops refused (``.item()`` of a computed tensor would answer 0):
  what it cannot run raises ``HeadroomCpuError`` naming the op, the module whose forward was
  running, the phase and the user's line. Nothing is skipped.
* ``profiler::`` ops (``torch.autograd.profiler.record_function``, which ``Optimizer.step``
  wraps itself in) are run for real with the modes off: in 1.13 the fake mode takes
  ``profiler::_record_function_enter`` for a tensor constructor and fails on it.
* Ops with no meta kernel in 1.13 that a training step needs get one here (``_kernels``):
  the convolution's backward (its outputs have the shapes of the input, the weight and the
  bias). Layer norm and batch norm (forward and backward) make their outputs in the dtypes
  the CPU kernel gives (probed on tiny real tensors), where 1.13's meta kernels differ
  (fp32 statistics of a bfloat16 input, as CUDA makes them).
* Storages of fake tensors have no data pointer (0): the recorder keys a fake storage by the
  address of its StorageImpl (``t.storage()._cdata``: one per storage, shared by its views,
  unique while it lives, as a data pointer is) and writes synthetic, never reused,
  512-aligned addresses in the trace (from ``FAKE_BASE``). Sizes are the storage's nbytes.
* Scalars made with ``torch.tensor(x)`` (AdamW's step count) are the mode's constants: a
  one-element real tensor beside the fake one, so ``.item()`` of them works.

``fake_mode()`` makes the mode for tensors built before a capture (``model=`` /
``optimizer=``): a fake capture adopts the mode of the fake tensors it is given.
"""

import os
import sys

# synthetic addresses of fake storages in the trace: above headroom_cpu's _LATE_BASE range
FAKE_BASE = 0x200000000000
_CLASS = [None]
_HERE = os.path.abspath(__file__)


def _op_name(func):
    try:
        return func._schema.name
    except AttributeError:
        return str(func)


def _kernels(torch, ft, no_dispatch):
    """Fake implementations of the ops that have no meta kernel in 1.13."""
    from torch.fx.operator_schemas import normalize_function

    def empty(mode, shape, dtype, device, like=None):
        fmt = torch.contiguous_format
        if like is not None and like.dim() == 4 and not like.is_contiguous() and \
                like.is_contiguous(memory_format=torch.channels_last):
            fmt = torch.channels_last
        with no_dispatch():
            meta = torch.empty(shape, dtype=dtype, device="meta", memory_format=fmt)
        return ft.FakeTensor(mode, meta, device)

    def convolution_backward(mode, func, args, kwargs):
        _, kw = normalize_function(func, args, kwargs, normalize_to_only_use_kwargs=True)
        inp, weight, mask = kw["input"], kw["weight"], kw["output_mask"]
        dev = inp.device
        gi = empty(mode, inp.shape, inp.dtype, dev, inp) if mask[0] else None
        gw = empty(mode, weight.shape, weight.dtype, dev, weight) if mask[1] else None
        gb = None
        if mask[2]:
            n = kw["bias_sizes"][0] if kw.get("bias_sizes") else weight.shape[0]
            gb = empty(mode, (n,), kw["grad_output"].dtype, dev)
        return gi, gw, gb

    # ops whose meta kernel makes an output in another dtype than the CPU kernel does (in
    # 1.13: layer norm's mean and rstd, batch norm's saved statistics in bfloat16, batch norm
    # backward's weight and bias gradients for a bfloat16 input with fp32 weights): the meta
    # outputs are remade in the dtypes the CPU kernel gives on tiny real inputs (probed once
    # per dtype combination, with the modes off; a few bytes, never recorded)
    probed = {}

    def tiny(a, first):
        if not isinstance(a, torch.Tensor):
            return a
        shape = [1] * a.dim()
        if first and a.dim() >= 2:
            shape[0] = 2  # batch norm in training needs more than one value per channel
        with no_dispatch():
            return torch.zeros(shape, dtype=a.dtype)

    def plain(a):
        if isinstance(a, torch.Tensor):
            return a.dtype
        return tuple(a) if isinstance(a, list) else a

    def cpu_dtypes(func, args, kwargs):
        key = (func,) + tuple(plain(a) for a in args) + \
            tuple((k, plain(v)) for k, v in sorted(kwargs.items()))
        hit = probed.get(key)
        if hit is None:
            small = [tiny(a, i < 2) for i, a in enumerate(args)]
            if func is torch.ops.aten.native_layer_norm.default:
                small[1] = [1] * len(args[1])  # normalized_shape
            try:
                with no_dispatch():
                    out = func(*small, **kwargs)
                hit = tuple(o.dtype if isinstance(o, torch.Tensor) else None for o in out)
            except Exception:  # the probe does not apply: the meta kernel's dtypes stand
                hit = ()
            probed[key] = hit
        return hit

    def cpu_dtype_outputs(mode, func, args, kwargs):
        out = ft.FakeTensorMode.__torch_dispatch__(mode, func, None, args, kwargs)
        ts = [a for a in args if isinstance(a, ft.FakeTensor)]
        if not ts or ts[0].device.type != "cpu":
            return out
        want = cpu_dtypes(func, args, kwargs)
        if not want:
            return out
        return tuple(o if not isinstance(o, torch.Tensor) or dt is None or o.dtype == dt else
                     empty(mode, o.shape, dt, o.device, o) for o, dt in zip(out, want))

    aten = torch.ops.aten
    table = {aten.convolution_backward.default: convolution_backward}
    for op in (aten.native_layer_norm.default, aten.native_batch_norm.default,
               aten.native_batch_norm_backward.default):
        table[op] = cpu_dtype_outputs
    return table


def mode_class():
    """The FakeTensorMode subclass (made once, after torch is imported)."""
    if _CLASS[0] is not None:
        return _CLASS[0]
    import torch
    from torch._subclasses import fake_tensor as ft
    from torch.utils._mode_utils import no_dispatch
    kernels = _kernels(torch, ft, no_dispatch)
    refused = (ft.DynamicOutputShapeException, ft.DataDependentOutputException,
               ft.UnsupportedFakeTensorException, NotImplementedError)
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    why = {ft.DynamicOutputShapeException: "its output's shape depends on the tensor's values",
           ft.DataDependentOutputException: "it reads a tensor's values (a Python number from "
                                            "a computed tensor)",
           ft.UnsupportedFakeTensorException: "fake tensors do not support it",
           NotImplementedError: "it has no fake (meta) implementation in this torch"}

    class HeadroomFakeMode(ft.FakeTensorMode):
        """FakeTensorMode without real fallback kernels, refusing data-dependent ops, running
        profiler ops for real and the kernels of KERNELS; what it cannot run raises
        ``error`` (headroom_cpu.HeadroomCpuError) naming the op and where it ran."""

        def __init__(self, error=RuntimeError):
            try:
                super().__init__(allow_fallback_kernels=False, throw_on_data_dependent_ops=True)
            except TypeError:  # later torch: data-dependent ops always refused
                super().__init__(allow_fallback_kernels=False)
            self.error = error
            self.context = None  # callable: (module, phase) of the running capture

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = _op_name(func)
            if name.startswith("profiler::"):
                with no_dispatch():  # record_function's handles: real, tiny, not recorded
                    return func(*args, **kwargs)
            try:
                kernel = kernels.get(func)
                if kernel is not None:
                    return kernel(self, func, args, kwargs)
                return ft.FakeTensorMode.__torch_dispatch__(self, func, types, args, kwargs)
            except refused as e:
                reason = next((w for c, w in why.items() if isinstance(e, c)), "")
                raise self._refuse(name, type(e).__name__, reason, e) from e
            except self.error:
                raise
            except Exception as e:
                if "non-Fake Tensor inputs" not in str(e):
                    raise
                raise self._refuse(name, "real tensor", "a real (not fake) tensor reached it: "
                                   "in fake mode make every tensor inside the capture, or "
                                   "under headroom_cpu.fake_mode()", e) from e

        def _refuse(self, name, kind, reason, exc):
            module, phase = self.context() if self.context is not None else (None, None)
            where = _user_frame(torch_dir)
            msg = "fake mode cannot run %s (%s: %s)" % (name, kind, reason)
            msg += "; module %s" % (repr(module) if module is not None else "none")
            if phase is not None:
                msg += ", phase %s" % phase
            if where:
                msg += ", at %s" % where
            detail = str(exc).strip().splitlines()
            if detail and kind != "real tensor":
                msg += " [%s]" % detail[0][:200]
            msg += ". Record this step for real (fake=False), or keep tensor values out of the " \
                   "step's shapes and Python control flow (.item(), nonzero, boolean masks)."
            err = self.error(msg)
            err.op, err.module, err.phase = name, module, phase
            return err

    _CLASS[0] = HeadroomFakeMode
    return HeadroomFakeMode


def _user_frame(torch_dir):
    """file:line in function of the innermost frame outside torch and the recorder."""
    f = sys._getframe(1)
    while f is not None:
        fn = os.path.abspath(f.f_code.co_filename)
        if not fn.startswith(torch_dir) and fn != _HERE and \
                not fn.endswith(("headroom_cpu.py", "headroom_casts.py")):
            return "%s:%d in %s" % (f.f_code.co_filename, f.f_lineno, f.f_code.co_name)
        f = f.f_back
    return None


def fake_mode(error=None):
    """A mode to build tensors before a fake capture (``with headroom_cpu.fake_mode() as m:
    model = build()``, then ``capture(..., fake=True, model=model)``)."""
    if error is None:
        from headroom_cpu import HeadroomCpuError as error
    return mode_class()(error)


def _fake_tensor_class():
    from torch._subclasses.fake_tensor import FakeTensor
    return FakeTensor


class FakeSupport(object):
    """What a fake capture needs: its mode, storage keys and addresses, and the patches."""

    def __init__(self, torch, error, tensors=()):
        self._torch = torch
        self.tensor_class = _fake_tensor_class()
        mode = None
        for t in tensors:  # a model built under a fake mode before the block: that mode
            m = getattr(t, "fake_mode", None)
            if isinstance(t, self.tensor_class) and m is not None:
                if not isinstance(m, mode_class()):
                    raise error("fake mode: the tensors given to the capture were made under a "
                                "FakeTensorMode of their own; make them under "
                                "headroom_cpu.fake_mode() (its profiler ops, kernels and "
                                "refusals are the capture's)")
                mode = m
                break
            if isinstance(t, torch.Tensor) and not isinstance(t, self.tensor_class):
                raise error("fake mode: a tensor given to the capture (model=, optimizer= or "
                            "tensors=) is real, of shape %s; build it inside the capture (the "
                            "fake mode is active there) or under headroom_cpu.fake_mode()"
                            % (tuple(t.shape),))
        self.mode = mode if mode is not None else mode_class()(error)
        self._next = FAKE_BASE
        Fake = self.tensor_class
        untyped = hasattr(torch.Tensor, "untyped_storage")  # 2.x; 1.13: TypedStorage

        def info(t):
            s = t.untyped_storage() if untyped else t.storage()
            if isinstance(t, Fake):
                n = s.nbytes()
                return (s._cdata if n else 0), n
            return s.data_ptr(), s.nbytes()  # real: the RNG state torch.utils.checkpoint saves
        self.info = info

    def address(self, nbytes):
        a = self._next
        self._next += (nbytes + 511) // 512 * 512 or 512
        return a

    def detach(self, t):
        """A detached fake alias of ``t`` (its storage), made with every mode off: what the
        recorder's saved-tensor hook keeps (``no_dispatch`` alone gives a plain meta tensor)."""
        from torch.utils._mode_utils import no_dispatch
        with no_dispatch():
            meta = t.detach()
        return self.tensor_class(t.fake_mode, meta, t.fake_device, constant=t.constant)

    def install(self, rec, patch, parameter_role):
        """Enters the mode (below the recorder's dispatch mode) and follows nn.Parameter
        creation: a fake parameter is a detached alias marked ``_is_param`` (no
        ``_make_subclass``)."""
        torch = self._torch
        Parameter = torch.nn.Parameter
        base_new = Parameter.__dict__["__new__"]
        base_fn = base_new.__func__ if isinstance(base_new, staticmethod) else base_new

        def new(cls, data=None, requires_grad=True):
            out = base_fn(cls, data, requires_grad)
            if rec._active and isinstance(out, self.tensor_class):
                rec._adopt_input(out)
                rec._label(out, parameter_role)
                rec._add_param(out)
            return out
        patch(Parameter, "__new__", staticmethod(new))
        self.mode.context = lambda: (rec._mod_now, rec._phase_now if rec._phase_stack else None)
        self.mode.__enter__()
        self._entered = True

    def uninstall(self):
        if getattr(self, "_entered", False):
            self._entered = False
            self.mode.context = None
            self.mode.__exit__(None, None, None)
