"""Casts that are no-ops in the recorded run, for python/headroom_cpu.py (headroom_tensor's
"casts", docs/formats.md).

``x.to(torch.float32)`` on an fp32 tensor returns ``x`` itself: no op reaches the dispatch
mode and no allocation is made, yet in the same code run at another precision it is a real
copy (Llama's RMSNorm computes in fp32 from a bf16 input; ``cos.to(x.dtype)`` makes the rotary
tables bf16 under autocast). A torch function mode sees the call. The cast's result is handed
back as an alias of ``x`` (a view: no memory), so that the ops that take the cast's result can
be told from the ops that take ``x``, and the recorder names the cast on their entries.

What the cast asks for is kept as the code says it, where Python's bytecode shows it:
* a literal dtype (``.float()``, ``.to(torch.float32)``, ``.to(dtype=torch.bfloat16)``);
* the dtype of another tensor (``.type_as(y)``, ``.to(y)``, ``.to(y.dtype)``, or a dtype
  variable that the same frame read from a tensor before: ``dtype = x.dtype ... h.to(dtype)``).
A dtype variable that is neither (set from a configuration: ``x.to(dtype)`` where ``dtype`` is
the run's precision) is not named: in another run it holds another dtype.
Parameters, other leaves that require grad (a view of one may not be written in place) and
casts made by torch itself (``Module.to``) are left alone. A view of a cast's
result is the cast's result too.

A torch function called with a floating ``dtype=`` (``F.softmax(x, dtype=torch.float)``) makes
its outputs in that dtype whatever its input's: ``pinned()`` names it while the call runs.
"""

import dis
import os
import sys
import weakref

_HERE = os.path.abspath(__file__)
_SKIP_FILES = (os.path.join("torch", "overrides.py"), _HERE)
_METHOD_DTYPES = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16"}
_DTYPE_NAMES = {"float32", "float", "float64", "double", "float16", "half", "bfloat16"}
_SKIP_OPS = {"CACHE", "PRECALL", "KW_NAMES", "CALL", "CALL_METHOD", "CALL_FUNCTION", "CALL_FUNCTION_KW"}


def _dtype_name(dt):
    return str(dt).replace("torch.", "")


class CastWatch(object):
    """A torch function mode, active while the recorder is: ``spec_of(t)`` says whether
    ``t`` is the result of a no-op cast, and what the cast asked for."""

    def __init__(self, torch):
        self._torch = torch
        self._casts = {}  # id(alias) -> (weakref to alias, spec)
        self._dtype_reads = {}  # id(frame) -> [(dtype, tensor)]: .dtype read in that frame
        self._instructions = {}  # code -> {offset: index}, [instructions]
        self._mode = None
        self._pin = []  # dtype= arguments of the torch functions running now, innermost last
        self._held = []  # the cast results each of them took
        T = torch.Tensor
        self._cast_methods = {T.to, T.type, T.type_as, T.float, T.double, T.half, T.bfloat16}
        self._dtype_attr = T.dtype

    def install(self):
        from torch.overrides import TorchFunctionMode
        watch = self

        class _CastMode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                return watch._call(func, args, kwargs or {})
        self._mode = _CastMode()
        self._mode.__enter__()

    def uninstall(self):
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None
        self._casts.clear()
        self._dtype_reads.clear()

    def spec_of(self, t):
        """("float32", None) for a literal cast, (None, tensor) for a cast to another
        tensor's dtype, None when ``t`` is no cast's result."""
        hit = self._casts.get(id(t))
        if hit is None or hit[0]() is not t:
            return None
        return hit[1]

    # ------------------------------------------------------------------ the mode
    def pinned(self):
        """What a ``dtype=`` argument of the torch function running now asked for
        (``F.softmax(x, dtype=torch.float)``), as ``spec_of`` says it; None outside one."""
        return self._pin[-1] if self._pin else None

    def _call(self, func, args, kwargs):
        if getattr(func, "__self__", None) is self._dtype_attr and args:
            out = func(*args, **kwargs)
            self._read_dtype(args[0], out)
            return out
        pin = kwargs.get("dtype")
        pinned = isinstance(pin, self._torch.dtype) and pin.is_floating_point and \
            func not in self._cast_methods
        held = self._cast_args(args) if self._casts else []
        if pinned:
            self._pin.append(self._provenance(pin, self._caller()))  # None: not told
        if held:
            self._held.append(held)
        try:
            out = func(*args, **kwargs)
        finally:
            if pinned:
                self._pin.pop()
            if held:
                self._held.pop()
        if func in self._cast_methods and args and out is args[0]:
            return self._alias(func, args, kwargs, out)
        if self._casts and isinstance(out, self._torch.Tensor) and out._is_view():
            self._inherit(args, out)  # a view of a cast's result is the cast's result too
        return out

    def held(self):
        """(cast result, spec) of every cast result the torch functions running now took: the
        ops inside them (a view made in C++, an index) read it through its storage."""
        return [h for level in self._held for h in level]

    def _cast_args(self, args):
        out = []
        for a in args:
            for t in (a if isinstance(a, (list, tuple)) else (a,)):
                spec = self.spec_of(t) if isinstance(t, self._torch.Tensor) else None
                if spec is not None:
                    out.append((t, spec))
        return out

    def _inherit(self, args, out):
        for a in args:
            spec = self.spec_of(a) if isinstance(a, self._torch.Tensor) else None
            if spec is not None:
                key = id(out)
                self._casts[key] = (weakref.ref(out, lambda _r, k=key: self._casts.pop(k, None)), spec)
                return

    def _caller(self):
        f = sys._getframe(2)
        while f is not None and f.f_code.co_filename.endswith(_SKIP_FILES):
            f = f.f_back
        return f

    def _read_dtype(self, t, dtype):
        f = self._caller()
        if f is None or not isinstance(t, self._torch.Tensor):
            return
        reads = self._dtype_reads.setdefault(id(f), [])
        reads.append((dtype, weakref.ref(t)))
        del reads[:-8]

    def _alias(self, func, args, kwargs, out):
        torch = self._torch
        if not isinstance(out, torch.Tensor) or isinstance(out, torch.nn.Parameter) or \
                not out.is_floating_point() or (out.requires_grad and out.is_leaf):
            return out  # a leaf's view may not be written in place: the cast stays unnamed
        f = self._caller()
        if f is None or os.sep + "torch" + os.sep in f.f_code.co_filename:
            return out  # torch's own casts (Module.to, the optimizers)
        spec = self._spec(func, args, kwargs, f)
        if spec is None:
            return out
        alias = out.view_as(out)
        key = id(alias)
        self._casts[key] = (weakref.ref(alias, lambda _r, k=key: self._casts.pop(k, None)), spec)
        return alias

    def _spec(self, func, args, kwargs, frame):
        torch = self._torch
        name = getattr(func, "__name__", "")
        if name in _METHOD_DTYPES:
            return (_METHOD_DTYPES[name], None)
        rest = list(args[1:]) + [kwargs.get("dtype"), kwargs.get("other")]
        other = next((a for a in rest if isinstance(a, torch.Tensor)), None)
        if other is not None:
            return (None, other)  # type_as(y), to(y)
        dtype = next((a for a in rest if isinstance(a, torch.dtype)), None)
        if dtype is None or not dtype.is_floating_point:
            return None
        return self._provenance(dtype, frame)

    def _provenance(self, dtype, frame):
        """A dtype argument as the code wrote it: a literal, or the dtype of a tensor; None
        where the bytecode shows neither (a variable set from a configuration takes another
        value in another run)."""
        if frame is None:
            return None
        load = self._argument_load(frame)
        if load is not None and load.opname == "LOAD_ATTR" and load.argval in _DTYPE_NAMES:
            return (_dtype_name(dtype), None)  # torch.float32 written at the call
        for d, ref in reversed(self._dtype_reads.get(id(frame), [])):
            t = ref()
            if d == dtype and t is not None:
                return (None, t)  # x.dtype read here: at the call, or kept in a variable
        return None  # a dtype variable from elsewhere (a configuration): not told

    def _argument_load(self, frame):
        """The instruction that loaded the call's last argument, in the caller's bytecode."""
        code = frame.f_code
        entry = self._instructions.get(code)
        if entry is None:
            ins = list(dis.get_instructions(code))
            entry = self._instructions[code] = ({i.offset: n for n, i in enumerate(ins)}, ins)
        where, ins = entry
        n = where.get(frame.f_lasti)
        if n is None:
            return None
        n -= 1
        while n >= 0 and ins[n].opname in _SKIP_OPS:
            n -= 1
        return ins[n] if n >= 0 else None
