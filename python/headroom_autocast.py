"""CUDA's autocast policy, run on the CPU: the ground truth for projecting an fp32 recording to
bf16 autocast on a GPU (docs/whatif-model.md, "Autocast from the op graph").

PyTorch's CPU autocast (1.13, Debian's) and CUDA's run different ops in fp32: CUDA's keeps
softmax, log_softmax, layer_norm, group_norm, pow, exp, rsqrt, sum, the losses and more in
fp32 (an eager attention's probabilities are fp32 there, bf16 on the CPU). A CPU recording
under ``torch.autocast("cpu")`` therefore measures the CPU's policy, not the GPU's the job
runs on. ``cuda_autocast()`` applies CUDA's lists instead, as a torch function mode, so the
CPU recorder measures what CUDA's autocast allocates.

The lists are those of aten/src/ATen/autocast_mode.h (PyTorch 2.x: AT_FORALL_LOWER_PRECISION_FP,
AT_FORALL_FP32, AT_FORALL_FP32_SET_OPT_DTYPE, AT_FORALL_PROMOTE), under the names the Python
API calls them. The policies are autocast's:
* lower precision: every fp32 floating input is cast to bf16 first; a leaf fp32 tensor that
  requires grad (a weight) is cast once per autocast region and the cast is cached until the
  outermost region exits;
* fp32: every bf16/fp16 input is cast to fp32 first;
* fp32 with an optional dtype (softmax, log_softmax, sum, cumsum, prod, norms): where the first
  input is bf16/fp16 and no dtype is given, ``dtype=torch.float32``;
* promote: the inputs are cast to the widest floating dtype among them.
Everything else runs at its inputs' dtypes.

What differs from CUDA's C++ autocast, and why it does not matter for the recordings it is
used for: the mode sees the outermost Python call (``F.cross_entropy``, not the
``log_softmax`` and ``nll_loss`` inside it), so a composite function outside the lists runs its
inner ops unconverted. The functions the lists name are intercepted where the user calls them;
``F.cross_entropy`` is taken as fp32 whole (CUDA runs both its ops in fp32); modules built of
Python composites that call listed ops inside (``nn.MultiheadAttention``) are not emulated and
the families recorded with it do not use them.
"""

import contextlib
import weakref

_LOWER = {
    "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "convolution", "prelu", "addmm", "addmv", "addr", "matmul", "rmatmul", "einsum", "mm", "mv", "vecdot",
    "linear", "addbmm", "baddbmm", "bmm", "chain_matmul", "multi_dot", "lstm_cell", "gru_cell",
    "rnn_tanh_cell", "rnn_relu_cell", "scaled_dot_product_attention",
}
_FP32 = {
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal",
    "rsqrt", "sinh", "tan", "pow", "rpow", "softplus", "layer_norm", "group_norm", "cosine_similarity",
    "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "hinge_embedding_loss", "kl_div", "l1_loss",
    "smooth_l1_loss", "huber_loss", "mse_loss", "margin_ranking_loss", "multilabel_margin_loss",
    "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss", "binary_cross_entropy_with_logits",
    "dist", "pdist", "cdist", "renorm", "logsumexp",
    # log_softmax (fp32 with its dtype set) and nll_loss (fp32) inside: fp32 whole
    "cross_entropy",
}
_FP32_SET_OPT_DTYPE = {"prod", "softmax", "log_softmax", "cumprod", "cumsum", "sum", "vector_norm", "matrix_norm"}
_PROMOTE = {"addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "grid_sampler", "index_put", "tensordot",
            "scatter_add"}


def _policy_name(func):
    """The op name autocast lists a Python API function under: ``__matmul__`` is matmul,
    ``__rpow__`` pow; in-place variants (``exp_``, ``__ipow__``) are in no list."""
    name = getattr(func, "__name__", "")
    if name.startswith("__i"):
        return ""
    if name.startswith("__") and name.endswith("__"):
        name = name[2:-2]
    if name.endswith("_"):
        return ""
    return name


class CudaAutocast(object):
    """A context manager: inside it, the torch functions the user calls follow CUDA's autocast
    lists at ``dtype`` (bf16 by default). Nested regions share the outermost one's cache."""

    _depth = 0
    _cache = {}
    entered = 0  # regions entered so far: headroom_cpu writes "autocast": "cuda" where it grew

    def __init__(self, dtype=None, enabled=True):
        import torch
        self._torch = torch
        self._dtype = dtype or torch.bfloat16
        self._enabled = enabled
        self._mode = None

    def __enter__(self):
        if not self._enabled:
            return self
        from torch.overrides import TorchFunctionMode
        emulator = self

        class _Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                return emulator._call(func, args, kwargs or {})
        self._mode = _Mode()
        self._mode.__enter__()
        CudaAutocast._depth += 1
        CudaAutocast.entered += 1
        return self

    def __exit__(self, *exc):
        if self._mode is None:
            return False
        self._mode.__exit__(*exc)
        self._mode = None
        CudaAutocast._depth -= 1
        if CudaAutocast._depth == 0:
            CudaAutocast._cache.clear()  # as autocast's exit of its outermost region does
        return False

    # ------------------------------------------------------------------ the policy
    def _call(self, func, args, kwargs):
        name = _policy_name(func)
        if name in _LOWER:
            args, kwargs = self._cast_all(args, kwargs, self._to_lower)
        elif name in _FP32:
            args, kwargs = self._cast_all(args, kwargs, self._to_fp32)
        elif name in _FP32_SET_OPT_DTYPE:
            kwargs = self._set_opt_dtype(args, kwargs)
        elif name in _PROMOTE:
            widest = self._widest(args, kwargs)
            if widest is not None:
                args, kwargs = self._cast_all(args, kwargs, lambda t: self._to(t, widest))
        return func(*args, **kwargs)

    def _eligible(self, t):
        T = self._torch
        return isinstance(t, T.Tensor) and t.is_floating_point() and t.dtype != T.float64

    def _to(self, t, dtype):
        return t.to(dtype) if self._eligible(t) and t.dtype != dtype else t

    def _to_fp32(self, t):
        return self._to(t, self._torch.float32)

    def _to_lower(self, t):
        if not self._eligible(t) or t.dtype == self._dtype:
            return t
        cacheable = (t.dtype == self._torch.float32 and t.requires_grad and t.is_leaf and not t._is_view())
        if not cacheable:
            return t.to(self._dtype)
        hit = CudaAutocast._cache.get(id(t))
        if hit is not None and hit[0]() is t:
            return hit[1]
        cast = t.to(self._dtype)
        CudaAutocast._cache[id(t)] = (weakref.ref(t), cast)
        return cast

    def _cast_all(self, args, kwargs, cast):
        def one(a):
            if isinstance(a, (list, tuple)) and any(isinstance(x, self._torch.Tensor) for x in a):
                return type(a)(one(x) for x in a)
            return cast(a) if isinstance(a, self._torch.Tensor) else a
        return tuple(one(a) for a in args), {k: one(v) for k, v in kwargs.items()}

    def _set_opt_dtype(self, args, kwargs):
        T = self._torch
        if kwargs.get("dtype") is not None or any(isinstance(a, T.dtype) for a in args):
            return kwargs
        first = next((a for a in args if isinstance(a, T.Tensor)), None)
        if first is not None and self._eligible(first) and first.dtype in (T.bfloat16, T.float16):
            kwargs = dict(kwargs, dtype=T.float32)
        return kwargs

    def _widest(self, args, kwargs):
        T = self._torch
        order = {T.float16: 0, T.bfloat16: 0, T.float32: 1}
        seen = [a for a in list(args) + list(kwargs.values()) if self._eligible(a)]
        if not seen:
            return None
        return max((a.dtype for a in seen), key=lambda d: order.get(d, 2))


def cuda_autocast(dtype=None, enabled=True):
    """``with cuda_autocast():`` runs the block under CUDA's autocast lists (bf16)."""
    if not enabled:
        return contextlib.nullcontext()
    return CudaAutocast(dtype=dtype)
