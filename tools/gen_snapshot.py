#!/usr/bin/env python3
"""Write a large, realistic synthetic PyTorch CUDA memory snapshot.

The output is a pickle with the schema that torch.cuda.memory._dump_snapshot()
writes in PyTorch 2.7 (top-level keys segments, device_traces,
allocator_settings, external_annotations; trace entries with time_us and
C++ + Python stacks), pickle protocol 4, encoded with the same object-sharing
pattern as real files: every distinct frame dict exists once and is shared by
reference, one frames list per traceback (an alloc shares it with its block and
with the segment it caused; a free_requested shares it with its
free_completed), one shared empty list for "no context", and key/value strings
shared, so the pickler memoizes them exactly as in real snapshots.

It simulates a GPT-style decoder trained with AdamW (foreach), bf16 weights
and activations, on one CUDA device, through a model of the caching allocator:

  * parameters (and the causal-mask buffers) are created before recording
    starts, so they appear only as active blocks with empty frames;
  * every layer's forward allocates activations (Python + C++ frames), some of
    which are saved for backward; temporaries die at the end of their source
    line or inside the same op;
  * backward runs on the autograd thread (C++ frames only, e.g.
    torch::autograd::Engine::thread_main and ...Backward0::apply), frees the
    saved activations and creates the gradients;
  * gradient clipping and optimizer.step() allocate temporaries; the first
    optimizer.step() creates the Adam state (frames in torch/optim/adam.py);
    zero_grad(set_to_none=True) frees the gradients;
  * external_annotations carry the Optimizer.step#AdamW.step and
    Optimizer.zero_grad#AdamW.zero_grad START/END markers;
  * time_us increases monotonically (CPU dispatch time, with the CPU waiting
    for the GPU at cudaFree and at the per-step loss.item());
  * the segment/block list matches the end state of the trace: blocks tile
    their segments exactly, block sizes are multiples of 512, requests of at
    most 1 MiB come from 2 MiB small-pool segments, larger ones from 20 MiB or
    2 MiB-rounded large segments (or from expandable segments mapped in 2 MiB /
    20 MiB pages with --expandable).

The run is deterministic for a given set of arguments (--seed drives the
per-step sequence lengths and the timing jitter).  With the defaults (a
1.3 B-parameter model, about 5,600 trace entries per step),
--events 1000000 takes about 6 s and writes about 190 MB on a 2-core machine.

Usage:
    python3 gen_snapshot.py --out big.pickle --events 1000000
    python3 gen_snapshot.py --out small.pickle --layers 4 --steps 2
    python3 gen_snapshot.py --out oom.pickle --layers 12 --steps 3 --oom
    python3 gen_snapshot.py --out exp.pickle --steps 2 --expandable

Options (defaults in brackets):
    --out PATH          output pickle (required)
    --layers N          transformer blocks [24]
    --steps N           optimizer steps to simulate [2]
    --events N          instead of --steps: simulate whole steps until about N
                        trace entries exist
    --micro-batch N     sequences per micro-batch [4]
    --grad-accum N      micro-batches per optimizer step [1]
    --seq-len N         maximum sequence length [1024]
    --seq-jitter F      each step uses a random length in [(1-F)*seq-len,
                        seq-len], multiple of 64 [0.25]
    --hidden N          model width [2048]
    --heads N           attention heads [16]
    --vocab N           vocabulary size [32000]
    --device-gib N      device capacity in GiB [80]
    --oom               after the normal steps, retry the step with a doubled
                        micro-batch until the allocator runs out of memory;
                        the trace then ends with the failing request's 'oom'
                        entry (the snapshot is taken at that moment)
    --expandable        PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
                        (segment_map / segment_unmap instead of
                        segment_alloc / segment_free)
    --empty-cache-every N   call torch.cuda.empty_cache() after every Nth step
                        (segment_free / segment_unmap events) [0 = never]
    --leak-bytes N      keep N bytes alive per step (a slow leak) [0]
    --max-entries N     keep only the last N trace entries, like
                        _record_memory_history(max_entries=N) [unlimited]
    --compact           share one frames list per distinct stack (much
                        smaller file; real files share per traceback only)
    --seed N            random seed [0]
    --truth PATH        also write a JSON sidecar with the true category and
                        phase of every 'alloc' entry of the written trace
                        (format headroom-truth-1; see tools/README.md)

Only the Python standard library is used.
"""

import argparse
import bisect
import json
import os
import pickle
import random
import sys
import time

MiB = 1 << 20
GiB = 1 << 30

# Caching-allocator constants (c10/cuda/CUDACachingAllocator.cpp).
MIN_BLOCK = 512               # every block size is a multiple of this
SMALL_SIZE = 1 * MiB          # requests up to this size use the small pool
SMALL_BUFFER = 2 * MiB        # small-pool segment size
LARGE_BUFFER = 20 * MiB       # segment size for 1-10 MiB requests
MIN_LARGE_ALLOC = 10 * MiB    # larger requests get their own rounded segment
ROUND_LARGE = 2 * MiB
CONTEXT_BYTES = 520 * MiB     # CUDA context + libraries, not available to us

BF16 = 2
FP32 = 4
INT64 = 8


# Ground truth (--truth): the categories of docs/categories-and-phases.md and the
# training phases, as the simulated program knows them.
CATEGORIES = ('parameter', 'gradient', 'optimizer_state', 'activation', 'temporary',
              'input', 'autograd_detail', 'unknown')
PHASES = ('setup', 'forward', 'loss', 'backward', 'optimizer', 'other')

# Category of each allocation site; TrainingRun.new() callers override it
# where one site serves tensors of different kinds (b_ln: the layer-norm
# weight gradients are 'gradient'), and accumulate() turns a gradient that
# AccumulateGrad adds in place and frees (--grad-accum > 1) into 'temporary'.
SITE_CATEGORY = {
    # train_step: batch.to(device)
    'tokens': 'input',
    # forward: saved for backward (or kept until the backward frees them)
    'wte': 'activation', 'ln1': 'activation', 'qk_copy': 'activation',
    'mask': 'activation', 'softmax': 'activation', 'v_copy': 'activation',
    'y2': 'activation', 'resid1': 'activation', 'ln2': 'activation',
    'fc': 'activation', 'gelu': 'activation', 'resid2': 'activation',
    'lnf': 'activation', 'lm_head': 'activation',
    # forward: freed again within the forward pass
    'qkv': 'temporary', 'scores': 'temporary', 'scale': 'temporary',
    'masked': 'temporary', 'pv': 'temporary', 'attn_proj': 'temporary',
    'mlp_proj': 'temporary',
    # cuBLAS workspace: not a tensor, never freed
    'workspace': 'unknown',
    # loss: the f32 copy dies on its line; log_softmax output, loss and
    # total_weight live until the backward (or the del after it) frees them
    'logits_f32': 'temporary', 'log_softmax': 'activation', 'nll': 'activation',
    # backward: the grad_output of loss.backward(), held until backward ends
    'make_grads': 'autograd_detail',
    # backward: parameter gradients (kept as p.grad until zero_grad)
    'b_addmm_w': 'gradient', 'b_addmm_b': 'gradient', 'b_mm_w': 'gradient',
    'b_emb_w': 'gradient',
    # backward: activation gradients and scratch, freed within backward
    'b_addmm_in': 'temporary', 'b_mm_in': 'temporary', 'b_gelu': 'temporary',
    'b_ln': 'temporary', 'b_bmm1': 'temporary', 'b_bmm2': 'temporary',
    'b_softmax': 'temporary', 'b_masked': 'temporary', 'b_mul': 'temporary',
    'b_split': 'temporary', 'b_add': 'temporary', 'b_nll': 'temporary',
    'b_log_softmax': 'temporary', 'b_to_copy': 'temporary', 'b_emb_tmp': 'temporary',
    # clip_grad_norm_ and optimizer.step()
    'clip_norms': 'temporary', 'clip_stack': 'temporary', 'clip_total': 'temporary',
    'clip_coef': 'temporary', 'adam_sqrt': 'temporary',
    'adam_exp_avg': 'optimizer_state', 'adam_exp_avg_sq': 'optimizer_state',
    # --leak-bytes
    'leak': 'unknown',
}


class OutOfMemory(Exception):
    """Raised by the allocator model after it recorded an 'oom' entry."""


# --------------------------------------------------------------------------
# Stack frames
# --------------------------------------------------------------------------

SITE = '/opt/conda/envs/train/lib/python3.11/site-packages/'
PROJ = '/workspace/llm-train/'
TRAIN = PROJ + 'train.py'
MODEL = PROJ + 'model.py'

UNWIND = (('torch::unwind::unwind()', '??'),
          ('torch::CapturedTraceback::gather(bool, bool, bool)', '??'),
          ('torch::cuda::(anonymous namespace)::gather_with_cpp()', 'memory_snapshot.cpp'))

MALLOC = UNWIND + (
    ('c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc('
     'signed char, unsigned long, CUstream_st*)', 'CUDACachingAllocator.cpp'),
    ('c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc('
     'void**, signed char, unsigned long, CUstream_st*)', ''),
    ('c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate('
     'unsigned long)', ''))

EMPTY_CUDA = (
    ('at::TensorBase at::detail::_empty_generic<long>(c10::ArrayRef<long>, '
     'c10::Allocator*, c10::DispatchKeySet, c10::ScalarType, '
     'std::optional<c10::MemoryFormat>)', ''),
    ('at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*, '
     'c10::DispatchKeySet, c10::ScalarType, std::optional<c10::MemoryFormat>)', '??'),
    ('at::detail::empty_cuda(c10::ArrayRef<long>, c10::ScalarType, '
     'std::optional<c10::Device>, std::optional<c10::MemoryFormat>)', '??'),
    ('at::detail::empty_cuda(c10::ArrayRef<long>, std::optional<c10::ScalarType>, '
     'std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, '
     'std::optional<c10::MemoryFormat>)', '??'),
    ('at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)', '??'))

FREE = UNWIND + (
    ('c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::free('
     'c10::cuda::CUDACachingAllocator::Native::(anonymous namespace)::Block*)',
     'CUDACachingAllocator.cpp'),
    ('c10::cuda::CUDACachingAllocator::Native::local_raw_delete(void*)',
     'CUDACachingAllocator.cpp'),
    ('c10::StorageImpl::~StorageImpl()', ''),
    ('c10::intrusive_ptr<c10::StorageImpl, c10::detail::'
     'intrusive_target_default_null_type<c10::StorageImpl> >::reset_()', ''),
    ('c10::TensorImpl::~TensorImpl()', '??'),
    ('c10::TensorImpl::~TensorImpl() [clone .localalias]', 'TensorImpl.cpp'))

TENSOR_VEC = 'std::vector<at::Tensor, std::allocator<at::Tensor> >'
AUTOGRAD_TAIL = (
    ('torch::autograd::Node::operator()(%s&&)' % TENSOR_VEC, ''),
    ('torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::'
     'GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, '
     'std::shared_ptr<torch::autograd::ReadyQueue> const&)', '??'),
    ('torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::'
     'GraphTask> const&)', '??'),
    ('torch::autograd::Engine::thread_init(int, std::shared_ptr<torch::autograd::'
     'ReadyQueue> const&, bool)', '??'),
    ('torch::autograd::python::PythonEngine::thread_init(int, std::shared_ptr<'
     'torch::autograd::ReadyQueue> const&, bool)', '??'),
    ('execute_native_thread_routine', 'thread48.o'),
    ('start_thread', '??'),
    ('__clone3', '??'))

# What the interpreter contributes between and below the Python frames.
PY_EVAL = ('_PyEval_EvalFrameDefault', '??')
PY_GLUE = (('_PyFunction_Vectorcall', '??'), ('_PyObject_Call_Prepend', '??'),
           ('slot_tp_call', '??'), ('_PyObject_MakeTpCall', '??'))
PY_MAIN = tuple((n, '??') for n in (
    'PyEval_EvalCode', 'run_eval_code_obj', 'run_mod', 'pyrun_file',
    '_PyRun_SimpleFileObject', '_PyRun_AnyFileObject', 'pymain_run_file_obj',
    'pymain_run_file', 'Py_RunMain', 'pymain_main', 'Py_BytesMain',
    '__libc_init_first', '__libc_start_main', '_start'))


def functor(fn, args, file, dispatch_keys=False):
    """The boxing adapter frame the dispatcher puts around every kernel."""
    sig = ('c10::DispatchKeySet, ' + args) if dispatch_keys else args
    return ('c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::'
            'WrapFunctionIntoFunctor_<c10::CompileTimeFunctionPointer<at::Tensor (%s), &%s>, '
            'at::Tensor, c10::guts::typelist::typelist<%s> >, at::Tensor (%s)>::call('
            'c10::OperatorKernel*, c10::DispatchKeySet, %s)' % (sig, fn, sig, sig, args), file)


def aten(op, args, binding=None, structured=True, backend='CUDA', extra=()):
    """C++ frames from the dispatcher down to the tensor allocation for `op`.

    Returned innermost first (the order of a captured traceback), without the
    allocator frames, which the caller prepends.
    """
    register = 'Register%s.cpp' % backend
    variable_type = 'VariableType_%d.cpp' % (len(op) % 4)
    frames = []
    if structured:
        frames.append(('at::(anonymous namespace)::create_out(c10::ArrayRef<long>, '
                       'c10::ArrayRef<long>, c10::TensorOptions const&)', register))
        frames.append(('at::(anonymous namespace)::structured_%s_out_functional::'
                       'set_output_raw_strided(long, c10::ArrayRef<long>, '
                       'c10::ArrayRef<long>, c10::TensorOptions, '
                       'c10::ArrayRef<at::Dimname>)' % op, register))
        frames.append(('at::meta::structured_%s::meta(%s)' % (op, args), '??'))
    frames.extend(extra)
    kernel = 'at::(anonymous namespace)::wrapper_%s_%s' % (backend, op)
    frames.append(('%s(%s)' % (kernel, args), register))
    frames.append(functor(kernel, args, register))
    frames.append(('at::_ops::%s::redispatch(c10::DispatchKeySet, %s)' % (op, args), '??'))
    autograd = 'torch::autograd::VariableType::(anonymous namespace)::%s' % op
    frames.append(('%s(c10::DispatchKeySet, %s)' % (autograd, args), variable_type))
    frames.append(functor(autograd, args, variable_type, dispatch_keys=True))
    frames.append(('at::_ops::%s::call(%s)' % (op, args), '??'))
    if binding:
        frames.extend(binding)
    return tuple(frames)


T = 'at::Tensor const&'
S = 'c10::Scalar const&'


def py_binding(name, cpp_file='python_variable_methods.cpp'):
    return (('torch::autograd::THPVariable_%s(_object*, _object*, _object*)' % name,
             cpp_file),)


OPT_T = 'std::optional<at::Tensor> const&'

# Frames of allocations that are not a kernel output.
CUBLAS_WORKSPACE = (
    ('at::cuda::getCurrentCUDABlasHandle()', '??'),
    ('at::cuda::blas::gemm_and_bias<c10::BFloat16>(...)', '??'),
    ('at::native::(anonymous namespace)::addmm_out_cuda_impl(at::Tensor&, %s, %s, %s, %s, %s, ...)'
     % (T, T, T, S, S), '??'))
PY_DEALLOC = (('THPVariable_subclass_dealloc(_object*)', 'python_variable.cpp'),)
SET_GRAD = (('THPVariable_set_grad(THPVariable*, _object*, void*)', '??'),
            ('_PyObject_GenericSetAttrWithDict', '??'),
            ('PyObject_GenericSetAttr', '??'))
EMPTY_CACHE = (
    ('c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::emptyCache()',
     'CUDACachingAllocator.cpp'),
    ('c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::emptyCache()', ''),
    ('THCPModule_emptyCache(_object*, _object*)', 'Module.cpp'))

# Python files of the simulated job.
TORCH = SITE + 'torch/'
MODULE_PY = TORCH + 'nn/modules/module.py'
FUNCTIONAL_PY = TORCH + 'nn/functional.py'


def step_line(line):
    """Python frames of train.py's train_step() at `line`, innermost first."""
    return (('train_step', TRAIN, line), ('train', TRAIN, 233), ('main', TRAIN, 287),
            ('<module>', TRAIN, 301))


def kernel_chains():
    """C++ frames of the ops the forward pass and the optimizer call from Python."""
    matmul = ('at::native::matmul(%s, %s)' % (T, T), '??')
    linear = ('at::native::linear(%s, %s, %s)' % (T, T, OPT_T), '??')
    cross_entropy = ('at::native::cross_entropy_loss_symint(%s, %s, ...)' % (T, T), '??')
    explicit = {'structured': False, 'backend': 'CompositeExplicitAutograd'}
    return {
        'addmm': aten('addmm', ', '.join([T, T, T, S, S]),
                      (linear, ('at::_ops::linear::call(%s, %s, %s)' % (T, T, OPT_T), '??')) +
                      py_binding('linear', 'python_nn_functions.cpp')),
        'mm_linear': aten('mm', '%s, %s' % (T, T),
                          (matmul, linear) + py_binding('linear', 'python_nn_functions.cpp')),
        'layer_norm': aten(
            'native_layer_norm', '%s, c10::ArrayRef<c10::SymInt>, %s, %s, double' % (T, OPT_T, OPT_T),
            (('at::native::layer_norm_symint(%s, c10::ArrayRef<c10::SymInt>, %s, %s, double, bool)'
              % (T, OPT_T, OPT_T), '??'),) +
            py_binding('layer_norm', 'python_torch_functions_1.cpp'),
            structured=False,
            extra=(('at::native::layer_norm_cuda(%s, c10::ArrayRef<long>, %s, %s, double)'
                    % (T, OPT_T, OPT_T), '??'),)),
        'clone_for_matmul': aten('clone', '%s, std::optional<c10::MemoryFormat>' % T,
                                 (('at::native::reshape_symint(%s, c10::ArrayRef<c10::SymInt>)' % T,
                                   '??'), matmul) +
                                 py_binding('matmul', 'python_torch_functions_0.cpp'), **explicit),
        'bmm': aten('bmm', '%s, %s' % (T, T),
                    (matmul,) + py_binding('matmul', 'python_torch_functions_0.cpp')),
        'mul': aten('mul_Tensor', '%s, %s' % (T, T), py_binding('mul')),
        'eq': aten('eq_Scalar', '%s, %s' % (T, S), py_binding('eq')),
        'masked_fill': aten('masked_fill_Scalar', '%s, %s, %s' % (T, T, S),
                            py_binding('masked_fill'), **explicit),
        'softmax': aten('_softmax', '%s, long, bool' % T,
                        (('at::native::softmax(%s, long, std::optional<c10::ScalarType>)' % T, '??'),) +
                        py_binding('softmax')),
        'contiguous': aten('clone', '%s, std::optional<c10::MemoryFormat>' % T,
                           (('at::native::contiguous(%s, c10::MemoryFormat)' % T, '??'),) +
                           py_binding('contiguous'), **explicit),
        'add': aten('add_Tensor', '%s, %s, %s' % (T, T, S), py_binding('add')),
        'gelu': aten('gelu', '%s, c10::basic_string_view<char>' % T,
                     py_binding('gelu', 'python_nn_functions.cpp')),
        'embedding': aten('embedding', '%s, %s, long, bool, bool' % (T, T),
                          py_binding('embedding', 'python_torch_functions_1.cpp'),
                          structured=False, backend='CompositeImplicitAutograd',
                          extra=(('at::native::index_select_cuda(%s, long, %s)' % (T, T), '??'),)),
        'to_copy': aten('_to_copy', '%s, std::optional<c10::ScalarType>, ...' % T,
                        (('at::native::to(%s, c10::ScalarType, bool, bool, '
                          'std::optional<c10::MemoryFormat>)' % T, '??'),) + py_binding('to'),
                        extra=(('at::native::_to_copy(%s, ...)' % T, '??'),), **explicit),
        'log_softmax': aten('_log_softmax', '%s, long, bool' % T,
                            (('at::native::log_softmax(%s, long, std::optional<c10::ScalarType>)' % T,
                              '??'), cross_entropy) +
                            py_binding('cross_entropy_loss', 'python_nn_functions.cpp')),
        'nll_loss': aten('nll_loss_forward', '%s, %s, %s, long, long' % (T, T, OPT_T),
                         (cross_entropy,) + py_binding('cross_entropy_loss', 'python_nn_functions.cpp')),
        'ones_like': aten('fill_', '%s, %s' % (T, S),
                          (('at::native::ones_like(%s, ...)' % T, '??'),) +
                          py_binding('ones_like', 'python_torch_functions_2.cpp'), **explicit),
        'zeros_like': aten('empty_like', '%s, ...' % T,
                           (('at::native::zeros_like(%s, ...)' % T, '??'),) +
                           py_binding('zeros_like', 'python_torch_functions_2.cpp'), **explicit),
        'foreach_sqrt': aten('_foreach_sqrt', 'c10::ArrayRef<at::Tensor>',
                             py_binding('_foreach_sqrt', 'python_torch_functions_0.cpp'),
                             structured=False,
                             extra=(('at::native::foreach_tensor_sqrt_cuda(c10::ArrayRef<at::Tensor>)',
                                     '??'),)),
        'foreach_norm': aten('_foreach_norm_Scalar', 'c10::ArrayRef<at::Tensor>, %s, ...' % S,
                             py_binding('_foreach_norm', 'python_torch_functions_0.cpp'),
                             structured=False,
                             extra=(('at::native::foreach_tensor_norm_cuda(c10::ArrayRef<at::Tensor>, '
                                     '%s, ...)' % S, '??'),)),
        'vector_norm': aten('linalg_vector_norm', '%s, %s, ...' % (T, S),
                            py_binding('linalg_vector_norm', 'python_linalg_functions.cpp')),
        'stack': aten('cat', 'c10::IListRef<at::Tensor> const&, long',
                      (('at::native::stack(c10::ArrayRef<at::Tensor>, long)', '??'),) +
                      py_binding('stack', 'python_torch_functions_2.cpp')),
    }


class Frames:
    """Interns frames and builds the frames lists of trace entries.

    A frame dict is created once per distinct (name, filename, line) and
    shared.  A *site* is a precomputed tuple of shared frame dicts; every
    trace entry gets a new list built from its site (or, with compact=True,
    one list per site), as real snapshots have one list per traceback.
    """

    def __init__(self, compact):
        self._frames = {}
        self._strings = {}
        self._lists = {}
        self.compact = compact
        self.empty = []      # the single shared "no context" list

    def _s(self, text):
        return self._strings.setdefault(text, text)

    def frame(self, name, filename='??', line=0):
        key = (name, filename, line)
        f = self._frames.get(key)
        if f is None:
            f = {'name': self._s(name), 'filename': self._s(filename), 'line': line}
            self._frames[key] = f
        return f

    def main_site(self, cpp, py):
        """A stack on the Python main thread.

        cpp: C++ frames (name, filename) innermost first; py: Python frames
        (name, filename, line) innermost first.  Python frames are spliced in
        before an interpreter frame, as CPython's unwinder reports them; the
        two outermost ones follow '_start', as in real captures where they
        could not be matched.
        """
        out = [self.frame(n, f) for n, f in cpp]
        inner, outer = py[:-2], py[-2:]
        for i, (n, f, ln) in enumerate(inner):
            out.append(self.frame(n, f, ln))
            out.append(self.frame(*PY_EVAL))
            out.append(self.frame(*PY_GLUE[i % len(PY_GLUE)]))
        out.extend(self.frame(n, f) for n, f in PY_MAIN)
        out.extend(self.frame(n, f, ln) for n, f, ln in outer)
        return tuple(out)

    def thread_site(self, cpp, via_node=True):
        """A stack on the autograd engine thread (no Python frames).

        via_node: the frames were reached through Node::operator() (a backward
        function running); otherwise directly from Engine::evaluate_function.
        """
        tail = AUTOGRAD_TAIL if via_node else AUTOGRAD_TAIL[1:]
        return tuple(self.frame(n, f) for n, f in cpp + tail)

    def new_list(self, site):
        """The frames list for one trace entry (and its block/segment)."""
        if self.compact:
            lst = self._lists.get(id(site))
            if lst is None:
                lst = self._lists[id(site)] = list(site)
            return lst
        return list(site)


# --------------------------------------------------------------------------
# Caching allocator model
# --------------------------------------------------------------------------

class Block:
    """A block of device memory: a doubly linked list tiles each segment."""

    __slots__ = ('addr', 'size', 'requested', 'allocated', 'frames', 'seg',
                 'prev', 'next')

    def __init__(self, addr, size, seg, prev, nxt, frames):
        self.addr = addr
        self.size = size
        self.requested = 0
        self.allocated = False
        self.frames = frames
        self.seg = seg
        self.prev = prev
        self.next = nxt


class Segment:
    """One cudaMalloc'ed range (or the mapped part of an expandable segment)."""

    __slots__ = ('addr', 'size', 'pool', 'head', 'tail', 'frames', 'expandable')

    def __init__(self, addr, size, pool, frames, expandable):
        self.addr = addr
        self.size = size
        self.pool = pool
        self.head = None
        self.tail = None
        self.frames = frames
        self.expandable = expandable


class Pool:
    """Free blocks of one pool, ordered like the allocator's (size, address)."""

    def __init__(self, small):
        self.small = small
        self.keys = []          # sorted [(size, addr)] of free blocks
        self.free = {}          # addr -> Block
        self.expandable = None  # the pool's expandable Segment, if any
        self.page = SMALL_BUFFER if small else LARGE_BUFFER

    def add(self, b):
        bisect.insort(self.keys, (b.size, b.addr))
        self.free[b.addr] = b

    def remove(self, b):
        keys = self.keys
        del keys[bisect.bisect_left(keys, (b.size, b.addr))]
        del self.free[b.addr]


class Clock:
    """CPU time of the process (what time_us records) and GPU completion time."""

    def __init__(self, start_us, rng):
        self.t = start_us
        self.gpu = start_us
        self.rnd = rng.random

    def cpu(self, lo, hi):
        self.t += lo + int(self.rnd() * (hi - lo))
        return self.t

    def kernel(self, us):
        """Queue GPU work that runs after what is already queued."""
        self.gpu = max(self.gpu, self.t) + us

    def sync(self):
        """The CPU waits for the GPU (cudaFree, .item(), ...)."""
        self.t = int(max(self.t, self.gpu)) + 3


class Allocator:
    """A model of the CUDA caching allocator that records a trace like PyTorch's.

    Best fit over (size, address) per pool, block splitting and coalescing,
    512-byte rounding, 2 MiB small-pool segments, 20 MiB or 2 MiB-rounded
    large segments, release of cached segments before giving up, and
    optionally expandable segments.
    """

    def __init__(self, clock, frames, capacity, expandable):
        self.clock = clock
        self.frames = frames
        self.usable = capacity - CONTEXT_BYTES
        self.expandable = expandable
        self.small = Pool(True)
        self.large = Pool(False)
        self.segments = []
        self.reserved = 0
        self.trace = []
        self.recording = False
        self.next_va = 0x7f3c80000000 if not expandable else 0x602000000

    # -- trace ------------------------------------------------------------
    def _record(self, action, addr, size, frames, lo=1, hi=4):
        if self.recording:
            self.trace.append({'action': action, 'addr': addr, 'size': size,
                               'stream': 0, 'time_us': self.clock.cpu(lo, hi),
                               'frames': frames})

    # -- segments ---------------------------------------------------------
    def _reserve_va(self, size):
        addr = self.next_va
        self.next_va += (size + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE
        return addr

    def _fits(self, size, req, frames):
        """Make room for `size` new bytes of device memory, or raise OOM."""
        if self.reserved + size <= self.usable:
            return
        self.release_cached(frames)
        if self.reserved + size <= self.usable:
            return
        self._oom(req, frames)

    def _oom(self, req, frames):
        """Record the failing request like the allocator does, then raise."""
        if self.recording:
            self.trace.append({'action': 'oom', 'device_free': self.usable - self.reserved,
                               'size': req, 'stream': 0,
                               'time_us': self.clock.cpu(20, 60), 'frames': frames})
        raise OutOfMemory(req)

    def _new_segment(self, pool, size, req, frames):
        if pool.small:
            seg_size = SMALL_BUFFER
        elif size < MIN_LARGE_ALLOC:
            seg_size = LARGE_BUFFER
        else:
            seg_size = (size + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE
        self._fits(seg_size, req, frames)
        seg = Segment(self._reserve_va(seg_size), seg_size, pool, frames, False)
        b = Block(seg.addr, seg_size, seg, None, None, self.frames.empty)
        seg.head = seg.tail = b
        self.segments.append(seg)
        self.reserved += seg_size
        self.clock.cpu(80, 400)      # cudaMalloc latency
        self._record('segment_alloc', seg.addr, seg_size, frames)
        pool.add(b)

    def _map_pages(self, pool, size, req, frames):
        """Grow the pool's expandable segment so its free tail holds `size`."""
        seg = pool.expandable
        if seg is None:
            seg = Segment(self._reserve_va(self.usable + GiB), 0, pool,
                          self.frames.empty, True)
            pool.expandable = seg
        page = pool.page
        for attempt in (0, 1):
            tail = seg.tail
            have = tail.size if tail is not None and not tail.allocated else 0
            grow = (size - have + page - 1) // page * page
            if self.reserved + grow <= self.usable:
                break
            if attempt:
                self._oom(req, frames)
            self.release_cached(frames)     # may unmap this segment's free tail
        if seg.size == 0:
            self.segments.append(seg)
        addr = seg.addr + seg.size
        seg.size += grow
        self.reserved += grow
        self.clock.cpu(30, 120)
        self._record('segment_map', addr, grow, frames)
        if have:
            pool.remove(tail)
            tail.size += grow
            pool.add(tail)
        else:
            b = Block(addr, grow, seg, tail, None, self.frames.empty)
            if tail is None:
                seg.head = b
            else:
                tail.next = b
            seg.tail = b
            pool.add(b)

    def release_cached(self, frames):
        """torch.cuda.empty_cache(): return every unused page to the driver."""
        self.clock.sync()
        for pool in (self.large, self.small):
            if self.expandable:
                seg = pool.expandable
                if seg is None or seg.size == 0 or seg.tail.allocated:
                    continue
                tail = seg.tail
                end = seg.addr + seg.size
                first = seg.addr + (tail.addr - seg.addr + pool.page - 1) // pool.page * pool.page
                if first >= end:
                    continue
                pool.remove(tail)
                self._record('segment_unmap', first, end - first, frames, 20, 80)
                seg.size -= end - first
                self.reserved -= end - first
                tail.size -= end - first
                if tail.size:
                    pool.add(tail)
                else:
                    seg.tail = tail.prev
                    if tail.prev is None:
                        seg.head = None
                    else:
                        tail.prev.next = None
                if seg.size == 0:
                    self.segments.remove(seg)
                continue
            # Whole free segments, in the pool's (size, address) order.
            for size, addr in list(pool.keys):
                b = pool.free[addr]
                if b.prev is None and b.next is None:
                    pool.remove(b)
                    self.segments.remove(b.seg)
                    self.reserved -= size
                    self._record('segment_free', addr, size, frames, 20, 80)

    # -- blocks -----------------------------------------------------------
    def malloc(self, req, frames):
        size = MIN_BLOCK if req < MIN_BLOCK else (req + MIN_BLOCK - 1) // MIN_BLOCK * MIN_BLOCK
        small = size <= SMALL_SIZE
        pool = self.small if small else self.large
        keys = pool.keys
        i = bisect.bisect_left(keys, (size, 0))
        if i == len(keys):
            if self.expandable:
                self._map_pages(pool, size, req, frames)
            else:
                self._new_segment(pool, size, req, frames)
            i = bisect.bisect_left(keys, (size, 0))
        bsize, addr = keys.pop(i)
        b = pool.free.pop(addr)
        rest = bsize - size
        # Split off the remainder if it is worth keeping as a free block.
        if (rest >= MIN_BLOCK) if small else (rest > SMALL_SIZE):
            r = Block(addr + size, rest, b.seg, b, b.next, self.frames.empty)
            if b.next is None:
                b.seg.tail = r
            else:
                b.next.prev = r
            b.next = r
            b.size = size
            pool.add(r)
        b.allocated = True
        b.requested = req
        b.frames = frames
        self._record('alloc', addr, req, frames)
        return b

    def free(self, b, frames):
        if self.recording:
            t = self.clock.cpu(1, 4)
            self.trace.append({'action': 'free_requested', 'addr': b.addr,
                               'size': b.requested, 'stream': 0, 'time_us': t,
                               'frames': frames})
            self.trace.append({'action': 'free_completed', 'addr': b.addr,
                               'size': b.requested, 'stream': 0, 'time_us': t + 1,
                               'frames': frames})
            self.clock.t = t + 1
        b.allocated = False
        b.frames = self.frames.empty
        seg = b.seg
        pool = seg.pool
        p = b.prev
        if p is not None and not p.allocated:
            pool.remove(p)
            b.addr = p.addr
            b.size += p.size
            b.prev = p.prev
            if p.prev is None:
                seg.head = b
            else:
                p.prev.next = b
        n = b.next
        if n is not None and not n.allocated:
            pool.remove(n)
            b.size += n.size
            b.next = n.next
            if n.next is None:
                seg.tail = b
            else:
                n.next.prev = b
        pool.add(b)

    # -- snapshot ---------------------------------------------------------
    def segment_dicts(self):
        empty = self.frames.empty
        zero = 0
        out = []
        for seg in sorted(self.segments, key=lambda s: s.addr):
            blocks = []
            allocated = requested = 0
            b = seg.head
            while b is not None:
                if b.allocated:
                    allocated += b.size
                    requested += b.requested
                    blocks.append({'address': b.addr, 'size': b.size,
                                   'requested_size': b.requested,
                                   'state': 'active_allocated', 'frames': b.frames})
                else:
                    blocks.append({'address': b.addr, 'size': b.size,
                                   'requested_size': b.requested,
                                   'state': 'inactive', 'frames': empty})
                b = b.next
            out.append({'device': 0, 'address': seg.addr, 'total_size': seg.size,
                        'allocated_size': allocated, 'active_size': allocated,
                        'requested_size': requested, 'stream': 0,
                        'segment_type': 'small' if seg.pool.small else 'large',
                        'segment_pool_id': (0, zero),   # one tuple per segment
                        'is_expandable': seg.expandable,
                        'blocks': blocks, 'frames': seg.frames})
        return out


# --------------------------------------------------------------------------
# The training run
# --------------------------------------------------------------------------

class Param:
    __slots__ = ('name', 'nbytes', 'data', 'grad', 'exp_avg', 'exp_avg_sq')

    def __init__(self, name, nbytes):
        self.name = name
        self.nbytes = nbytes
        self.data = self.grad = self.exp_avg = self.exp_avg_sq = None


class TrainingRun:
    """Replays one training script's tensor lifetimes through the allocator."""

    def __init__(self, args, alloc, frames, clock):
        self.a = args
        self.alloc = alloc
        self.fr = frames
        self.clock = clock
        self.annotations = []
        self.leaked = []
        self.first_step_done = False
        self.workspace = None
        H, L, V = args.hidden, args.layers, args.vocab
        self.params = [Param('wte', V * H * BF16)]
        for i in range(L):
            for name, n in (('ln_1.w', H), ('ln_1.b', H), ('attn.c_attn.w', 3 * H * H),
                            ('attn.c_attn.b', 3 * H), ('attn.c_proj.w', H * H),
                            ('attn.c_proj.b', H), ('ln_2.w', H), ('ln_2.b', H),
                            ('mlp.c_fc.w', 4 * H * H), ('mlp.c_fc.b', 4 * H),
                            ('mlp.c_proj.w', 4 * H * H), ('mlp.c_proj.b', H)):
                self.params.append(Param('h.%d.%s' % (i, name), n * BF16))
        self.params.append(Param('ln_f.w', H * BF16))
        self.params.append(Param('ln_f.b', H * BF16))
        self.params.append(Param('lm_head.w', V * H * BF16))
        self.layer_params = [self.params[1 + 12 * i:13 + 12 * i] for i in range(L)]
        self.mask_buffers = []
        # --truth: (trace index, category, phase, bytes) per recorded alloc
        self.truth = [] if getattr(args, 'truth', None) else None
        self.phase = 'other'
        self.truth_block = None
        self._build_sites()

    # -- stacks -----------------------------------------------------------
    def _build_sites(self):
        """Precompute every allocation/free site as a tuple of shared frames.

        The Python frames say where in the (fictional) training script and in
        torch the tensor was created or released; the C++ frames are the
        dispatcher path of the op that allocated it.
        """
        self.site = {}
        k = kernel_chains()
        self._forward_sites(k)
        self._backward_sites()
        self._optimizer_sites(k)

    def _forward_sites(self, k):
        M, site = self.fr.main_site, self.site
        call = (('_call_impl', MODULE_PY, 1750), ('_wrapped_call_impl', MODULE_PY, 1739))
        fwd = step_line(156)                                  # logits = model(tokens)
        gpt = (('forward', MODEL, 203),) + call + fwd         # x = block(x)
        blk_attn = (('forward', MODEL, 131),) + call + gpt    # x = x + self.attn(self.ln_1(x))
        blk_mlp = (('forward', MODEL, 132),) + call + gpt     # x = x + self.mlp(self.ln_2(x))

        def attn(line):                                       # CausalSelfAttention.forward
            return (('forward', MODEL, line),) + call + blk_attn

        def mlp(line):                                        # MLP.forward
            return (('forward', MODEL, line),) + call + blk_mlp

        def gpt_line(line):                                   # GPT.forward
            return (('forward', MODEL, line),) + call + fwd

        linear = (('forward', TORCH + 'nn/modules/linear.py', 125),) + call
        layer_norm = (('layer_norm', FUNCTIONAL_PY, 2910),
                      ('forward', TORCH + 'nn/modules/normalization.py', 217)) + call

        def cpp(chain):
            return MALLOC + EMPTY_CUDA + k[chain]

        site['tokens'] = M(cpp('to_copy'), step_line(151))   # batch.to(device)
        site['workspace'] = M(MALLOC + CUBLAS_WORKSPACE + k['addmm'], linear + attn(78))
        site['wte'] = M(cpp('embedding'), (('embedding', FUNCTIONAL_PY, 2551),
                                          ('forward', TORCH + 'nn/modules/sparse.py', 190)) +
                        call + gpt_line(201))
        site['ln1'] = M(cpp('layer_norm'), layer_norm + blk_attn)
        site['qkv'] = M(cpp('addmm'), linear + attn(78))
        site['qk_copy'] = M(cpp('clone_for_matmul'), attn(82))
        site['scores'] = M(cpp('bmm'), attn(82))
        site['scale'] = M(cpp('mul'), attn(82))
        site['mask'] = M(cpp('eq'), attn(83))
        site['masked'] = M(cpp('masked_fill'), attn(83))
        site['softmax'] = M(cpp('softmax'), (('softmax', FUNCTIONAL_PY, 2140),) + attn(84))
        site['v_copy'] = M(cpp('clone_for_matmul'), attn(85))
        site['pv'] = M(cpp('bmm'), attn(85))
        site['y2'] = M(cpp('contiguous'), attn(86))
        site['attn_proj'] = M(cpp('addmm'), linear + attn(87))
        site['resid1'] = M(cpp('add'), blk_attn)
        site['ln2'] = M(cpp('layer_norm'), layer_norm + blk_mlp)
        site['fc'] = M(cpp('addmm'), linear + mlp(104))
        site['gelu'] = M(cpp('gelu'), mlp(105))
        site['mlp_proj'] = M(cpp('addmm'), linear + mlp(106))
        site['resid2'] = M(cpp('add'), blk_mlp)
        site['lnf'] = M(cpp('layer_norm'), layer_norm + gpt_line(204))
        site['lm_head'] = M(cpp('mm_linear'), linear + gpt_line(205))
        loss_line = step_line(157)          # loss = F.cross_entropy(logits.float()...)
        cross_entropy = (('cross_entropy', FUNCTIONAL_PY, 3494),) + loss_line
        site['logits_f32'] = M(cpp('to_copy'), loss_line)
        site['log_softmax'] = M(cpp('log_softmax'), cross_entropy)
        site['nll'] = M(cpp('nll_loss'), cross_entropy)
        backward_call = (('backward', TORCH + 'autograd/__init__.py', 340),
                         ('backward', TORCH + '_tensor.py', 626)) + step_line(160)
        site['make_grads'] = M(cpp('ones_like'), (('_make_grads', TORCH + 'autograd/__init__.py', 220),)
                               + backward_call)
        site['leak'] = M(cpp('to_copy'), step_line(170))   # history.append(...)

        # Tensors released by Python (end of a line, end of a function, del).
        def freed_at(py):
            return M(FREE + PY_DEALLOC, py)

        site['f_attn82'] = freed_at(attn(82))
        site['f_attn83'] = freed_at(attn(83))
        site['f_attn84'] = freed_at(attn(84))
        site['f_attn86'] = freed_at(attn(86))
        site['f_attn_ret'] = freed_at(blk_attn)
        site['f_resid1'] = freed_at(blk_attn)
        site['f_resid2'] = freed_at(blk_mlp)
        site['f_loss_line'] = freed_at(loss_line)
        site['f_del'] = freed_at(step_line(161))           # del logits, loss, tokens, targets
        site['f_make_grads'] = freed_at(backward_call)
        self.freed_at = freed_at

    def _backward_sites(self):
        """Sites on the autograd engine thread: C++ frames only."""
        A, site = self.fr.thread_site, self.site

        def node(name):
            return (('torch::autograd::generated::%s::apply(%s&&)' % (name, TENSOR_VEC), '??'),)

        def bw(chain, name):
            return A(MALLOC + EMPTY_CUDA + chain + node(name))

        mm = aten('mm', '%s, %s' % (T, T))
        bmm = aten('bmm', '%s, %s' % (T, T))
        bias_sum = aten('sum_dim_IntList', '%s, at::OptionalArrayRef<long>, bool, '
                        'std::optional<c10::ScalarType>' % T)
        site['b_addmm_in'] = bw(mm, 'AddmmBackward0')
        site['b_addmm_w'] = bw(mm, 'AddmmBackward0')
        site['b_addmm_b'] = bw(bias_sum, 'AddmmBackward0')
        site['b_mm_in'] = bw(mm, 'MmBackward0')
        site['b_mm_w'] = bw(mm, 'MmBackward0')
        site['b_gelu'] = bw(aten('gelu_backward', '%s, %s, c10::basic_string_view<char>' % (T, T)),
                            'GeluBackward0')
        site['b_ln'] = bw(aten('native_layer_norm_backward', '%s, %s, ...' % (T, T),
                               structured=False,
                               extra=(('at::native::layer_norm_backward_cuda(%s, %s, ...)' % (T, T),
                                       '??'),)),
                          'NativeLayerNormBackward0')
        site['b_bmm1'] = bw(bmm, 'BmmBackward0')
        site['b_bmm2'] = bw(bmm, 'BmmBackward0')
        site['b_softmax'] = bw(aten('_softmax_backward_data', '%s, %s, long, c10::ScalarType' % (T, T)),
                               'SoftmaxBackward0')
        site['b_masked'] = bw(aten('masked_fill_Scalar', '%s, %s, %s' % (T, T, S), structured=False,
                                   backend='CompositeExplicitAutograd'), 'MaskedFillBackward0')
        site['b_mul'] = bw(aten('mul_Tensor', '%s, %s' % (T, T)), 'MulBackward0')
        site['b_split'] = bw(aten('cat', 'c10::IListRef<at::Tensor> const&, long'), 'SplitBackward0')
        site['b_add'] = A(MALLOC + EMPTY_CUDA + aten('add_Tensor', '%s, %s, %s' % (T, T, S)) +
                          (('torch::autograd::InputBuffer::add(unsigned long, at::Tensor&&, '
                            'std::optional<c10::Stream> const&, std::optional<c10::Stream> const&)',
                            '??'),),
                          via_node=False)
        site['b_nll'] = bw(aten('nll_loss_backward', '%s, %s, %s, ...' % (T, T, T)), 'NllLossBackward0')
        site['b_log_softmax'] = bw(aten('_log_softmax_backward_data',
                                        '%s, %s, long, c10::ScalarType' % (T, T)),
                                   'LogSoftmaxBackward0')
        site['b_to_copy'] = bw(aten('_to_copy', '%s, ...' % T, structured=False,
                                    backend='CompositeExplicitAutograd'), 'ToCopyBackward0')
        # embedding_dense_backward sorts the indices in scratch tensors (freed
        # inside the op) before it allocates the weight gradient.
        emb_bw = ('at::native::embedding_dense_backward_cuda(%s, %s, long, long, bool)' % (T, T), '??')
        sort = aten('sort_stable', '%s, std::optional<bool>, long, bool' % T,
                    extra=(('at::native::sort_out_stable_cuda(...)', '??'),))
        site['b_emb_tmp'] = bw(sort + (emb_bw,), 'EmbeddingBackward0')
        site['b_emb_w'] = bw(aten('zeros', 'c10::ArrayRef<long>, ...', structured=False,
                                  backend='CompositeExplicitAutograd') + (emb_bw,), 'EmbeddingBackward0')
        site['b_free_tmp'] = A(FREE + (emb_bw,) + node('EmbeddingBackward0'))

        # Saved tensors released after their backward function ran.
        for name in ('AddmmBackward0', 'MmBackward0', 'GeluBackward0', 'NativeLayerNormBackward0',
                     'BmmBackward0', 'SoftmaxBackward0', 'MaskedFillBackward0', 'NllLossBackward0',
                     'LogSoftmaxBackward0'):
            site['r_' + name] = A(FREE + (('torch::autograd::SavedVariable::reset_data()', '??'),
                                          ('torch::autograd::generated::%s::release_variables()'
                                           % name, '??')),
                                  via_node=False)
        # Incoming gradients dropped once consumed; in-place gradient accumulation.
        site['b_free_grad'] = A(FREE + (('%s::~vector()' % TENSOR_VEC, '??'),), via_node=False)
        site['b_acc_free'] = A(FREE + (('torch::autograd::AccumulateGrad::apply(%s&&)' % TENSOR_VEC,
                                        '??'),))

    def _optimizer_sites(self, k):
        M, site, freed_at = self.fr.main_site, self.site, self.freed_at

        def cpp(chain):
            return MALLOC + EMPTY_CUDA + k[chain]

        # torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        clip_py = TORCH + 'nn/utils/clip_grad.py'
        wrapper = (('_no_grad_wrapper', clip_py, 36),)
        clip_call = (('clip_grad_norm_', clip_py, 222),) + wrapper + step_line(164)

        def in_clip(name, line):                 # a helper called by clip_grad_norm_
            return ((name, clip_py, line),) + wrapper + clip_call

        site['clip_norms'] = M(cpp('foreach_norm'), in_clip('_get_total_norm', 108))
        site['clip_stack'] = M(cpp('stack'), in_clip('_get_total_norm', 113))
        site['clip_total'] = M(cpp('vector_norm'), in_clip('_get_total_norm', 113))
        site['clip_coef'] = M(cpp('add'), in_clip('_clip_grads_with_norm_', 163))
        site['f_clip'] = freed_at(clip_call)
        site['f_clip_ret'] = freed_at(step_line(164))
        # optimizer.step(): AdamW(foreach=None -> foreach on CUDA)
        optimizer_py = TORCH + 'optim/optimizer.py'
        adam_py = TORCH + 'optim/adam.py'
        step_call = (('step', adam_py, 247), ('_use_grad', optimizer_py, 79),
                     ('wrapper', optimizer_py, 493)) + step_line(165)
        site['adam_exp_avg'] = M(cpp('zeros_like'), (('_init_group', adam_py, 175),) + step_call)
        site['adam_exp_avg_sq'] = M(cpp('zeros_like'), (('_init_group', adam_py, 179),) + step_call)
        multi = (('adam', adam_py, 948), ('maybe_fallback', optimizer_py, 154)) + step_call
        site['adam_sqrt'] = M(cpp('foreach_sqrt'), (('_multi_tensor_adam', adam_py, 706),) + multi)
        site['f_adam'] = freed_at(multi)
        # optimizer.zero_grad(set_to_none=True)
        zero_grad = (('zero_grad', optimizer_py, 975), ('_fn', TORCH + '_dynamo/eval_frame.py', 745),
                     ('inner', TORCH + '_compile.py', 32)) + step_line(166)
        site['f_zero_grad'] = M(FREE + SET_GRAD, zero_grad)
        # torch.cuda.empty_cache()
        site['empty_cache'] = M(UNWIND + EMPTY_CACHE,
                                (('empty_cache', TORCH + 'cuda/memory.py', 224),) + step_line(168))

    # -- helpers ----------------------------------------------------------
    def new(self, nbytes, site, gpu_us=0.0, category=None):
        """Allocate a tensor; returns its block.

        category: the tensor's true category when it differs from the
        site's entry in SITE_CATEGORY (recorded only with --truth).
        """
        self.clock.cpu(4, 25)                     # op dispatch
        b = self.alloc.malloc(nbytes, self.fr.new_list(self.site[site]))
        if self.truth is not None and self.alloc.recording:
            # malloc may record segment entries first; the 'alloc' comes last.
            index = len(self.alloc.trace) - 1
            assert self.alloc.trace[index]['action'] == 'alloc'
            self.truth.append([index, category or SITE_CATEGORY[site], self.phase, nbytes])
            self.truth_block = b
        if gpu_us:
            self.clock.kernel(gpu_us)
        return b

    def drop(self, block, site):
        self.alloc.free(block, self.fr.new_list(self.site[site]))

    def annotate(self, name, stage):
        self.clock.cpu(2, 8)
        self.annotations.append({'stage': stage, 'name': name, 'device': 0,
                                 'time_us': self.clock.t})

    @staticmethod
    def gemm_us(m, n, k):
        return 2.0 * m * n * k / 350e6          # ~350 TFLOP/s in bf16

    @staticmethod
    def mem_us(nbytes):
        return nbytes / 2.5e6                   # ~2.5 TB/s

    # -- model setup (before recording) -------------------------------------
    def build_model(self):
        """model = GPT(cfg).cuda().to(torch.bfloat16), before recording starts."""
        alloc, empty = self.alloc, self.fr.empty
        for p in self.params:
            fp32 = alloc.malloc(p.nbytes * 2, empty)    # created in fp32 ...
            p.data = alloc.malloc(p.nbytes, empty)      # ... cast to bf16
            alloc.free(fp32, empty)
        S = self.a.seq_len
        for _ in range(self.a.layers):                  # causal-mask buffers
            self.mask_buffers.append(alloc.malloc(S * S * BF16, empty))

    # -- one micro-batch ----------------------------------------------------
    def forward_layer(self, B, S, x):
        H, nh = self.a.hidden, self.a.heads
        BS = B * S
        act, act3, act4 = BS * H * BF16, BS * 3 * H * BF16, BS * 4 * H * BF16
        scores = B * nh * S * S * BF16
        stat = BS * FP32
        new, drop = self.new, self.drop
        ln1 = new(act, 'ln1', self.mem_us(2 * act))
        mean1, rstd1 = new(stat, 'ln1'), new(stat, 'ln1')
        if self.workspace is None:
            self.workspace = new(32 * MiB, 'workspace')
        qkv = new(act3, 'qkv', self.gemm_us(BS, 3 * H, H))
        qc = new(act, 'qk_copy', self.mem_us(2 * act))
        kc = new(act, 'qk_copy', self.mem_us(2 * act))
        att0 = new(scores, 'scores', self.gemm_us(B * nh * S, S, H // nh))
        att1 = new(scores, 'scale', self.mem_us(2 * scores))
        drop(att0, 'f_attn82')
        mask = new(S * S, 'mask', self.mem_us(S * S * 3))
        att2 = new(scores, 'masked', self.mem_us(2 * scores))
        drop(att1, 'f_attn83')
        att3 = new(scores, 'softmax', self.mem_us(2 * scores))
        drop(att2, 'f_attn84')
        vc = new(act, 'v_copy', self.mem_us(2 * act))
        y = new(act, 'pv', self.gemm_us(B * nh * S, H // nh, S))
        y2 = new(act, 'y2', self.mem_us(2 * act))
        drop(y, 'f_attn86')
        proj = new(act, 'attn_proj', self.gemm_us(BS, H, H))
        drop(qkv, 'f_attn_ret')
        xm = new(act, 'resid1', self.mem_us(3 * act))
        drop(proj, 'f_resid1')
        ln2 = new(act, 'ln2', self.mem_us(2 * act))
        mean2, rstd2 = new(stat, 'ln2'), new(stat, 'ln2')
        h = new(act4, 'fc', self.gemm_us(BS, 4 * H, H))
        g = new(act4, 'gelu', self.mem_us(2 * act4))
        o = new(act, 'mlp_proj', self.gemm_us(BS, H, 4 * H))
        xo = new(act, 'resid2', self.mem_us(3 * act))
        drop(o, 'f_resid2')
        return xo, (x, ln1, mean1, rstd1, qc, kc, mask, att3, vc, y2, xm, ln2, mean2, rstd2, h, g)

    def accumulate(self, param, grad):
        """AccumulateGrad: steal the first gradient, add later ones in place."""
        if param.grad is None:
            param.grad = grad
        else:
            if self.truth and self.truth_block is grad:
                self.truth[-1][1] = 'temporary'     # added in place and freed
            self.clock.kernel(self.mem_us(3 * param.nbytes))
            self.drop(grad, 'b_acc_free')

    def backward_layer(self, B, S, saved, params, g_out):
        H, nh = self.a.hidden, self.a.heads
        BS = B * S
        act, act3, act4 = BS * H * BF16, BS * 3 * H * BF16, BS * 4 * H * BF16
        scores = B * nh * S * S * BF16
        x, ln1, mean1, rstd1, qc, kc, mask, att3, vc, y2, xm, ln2, mean2, rstd2, h, g = saved
        (ln1w, ln1b, qkvw, qkvb, projw, projb, ln2w, ln2b, fcw, fcb, fc2w, fc2b) = params
        new, drop, acc = self.new, self.drop, self.accumulate
        gemm, mem = self.gemm_us, self.mem_us
        # mlp.c_proj
        g_g = new(act4, 'b_addmm_in', gemm(BS, 4 * H, H))
        acc(fc2w, new(fc2w.nbytes, 'b_addmm_w', gemm(4 * H, H, BS)))
        acc(fc2b, new(fc2b.nbytes, 'b_addmm_b', mem(act)))
        drop(g, 'r_AddmmBackward0')
        # gelu
        g_h = new(act4, 'b_gelu', mem(3 * act4))
        drop(g_g, 'b_free_grad')
        drop(h, 'r_GeluBackward0')
        # mlp.c_fc
        g_ln2 = new(act, 'b_addmm_in', gemm(BS, H, 4 * H))
        acc(fcw, new(fcw.nbytes, 'b_addmm_w', gemm(4 * H, H, BS)))
        acc(fcb, new(fcb.nbytes, 'b_addmm_b', mem(act4)))
        drop(g_h, 'b_free_grad')
        drop(ln2, 'r_AddmmBackward0')
        # ln_2
        g_part = new(act, 'b_ln', mem(4 * act))
        acc(ln2w, new(ln2w.nbytes, 'b_ln', category='gradient'))
        acc(ln2b, new(ln2b.nbytes, 'b_ln', category='gradient'))
        drop(g_ln2, 'b_free_grad')
        drop(mean2, 'r_NativeLayerNormBackward0')
        drop(rstd2, 'r_NativeLayerNormBackward0')
        drop(xm, 'r_NativeLayerNormBackward0')
        g_xm = new(act, 'b_add', mem(3 * act))
        drop(g_out, 'b_free_grad')
        drop(g_part, 'b_free_grad')
        # attn.c_proj
        g_y2 = new(act, 'b_addmm_in', gemm(BS, H, H))
        acc(projw, new(projw.nbytes, 'b_addmm_w', gemm(H, H, BS)))
        acc(projb, new(projb.nbytes, 'b_addmm_b', mem(act)))
        drop(y2, 'r_AddmmBackward0')
        # y = att @ v
        g_att = new(scores, 'b_bmm1', gemm(B * nh * S, S, H // nh))
        g_v = new(act, 'b_bmm2', gemm(B * nh * S, H // nh, S))
        drop(g_y2, 'b_free_grad')
        drop(vc, 'r_BmmBackward0')
        # softmax, masked_fill, scale
        g_s = new(scores, 'b_softmax', mem(3 * scores))
        drop(g_att, 'b_free_grad')
        drop(att3, 'r_SoftmaxBackward0')
        g_m = new(scores, 'b_masked', mem(2 * scores))
        drop(g_s, 'b_free_grad')
        drop(mask, 'r_MaskedFillBackward0')
        g_mul = new(scores, 'b_mul', mem(2 * scores))
        drop(g_m, 'b_free_grad')
        # att = q @ k^T
        g_q = new(act, 'b_bmm1', gemm(B * nh * S, H // nh, S))
        g_k = new(act, 'b_bmm2', gemm(B * nh * S, H // nh, S))
        drop(g_mul, 'b_free_grad')
        drop(qc, 'r_BmmBackward0')
        drop(kc, 'r_BmmBackward0')
        # split of c_attn's output
        g_qkv = new(act3, 'b_split', mem(2 * act3))
        drop(g_q, 'b_free_grad')
        drop(g_k, 'b_free_grad')
        drop(g_v, 'b_free_grad')
        # attn.c_attn
        g_ln1 = new(act, 'b_addmm_in', gemm(BS, H, 3 * H))
        acc(qkvw, new(qkvw.nbytes, 'b_addmm_w', gemm(3 * H, H, BS)))
        acc(qkvb, new(qkvb.nbytes, 'b_addmm_b', mem(act3)))
        drop(g_qkv, 'b_free_grad')
        drop(ln1, 'r_AddmmBackward0')
        # ln_1 and the residual
        g_part = new(act, 'b_ln', mem(4 * act))
        acc(ln1w, new(ln1w.nbytes, 'b_ln', category='gradient'))
        acc(ln1b, new(ln1b.nbytes, 'b_ln', category='gradient'))
        drop(g_ln1, 'b_free_grad')
        drop(mean1, 'r_NativeLayerNormBackward0')
        drop(rstd1, 'r_NativeLayerNormBackward0')
        drop(x, 'r_NativeLayerNormBackward0')
        g_x = new(act, 'b_add', mem(3 * act))
        drop(g_xm, 'b_free_grad')
        drop(g_part, 'b_free_grad')
        return g_x

    def micro_batch(self, B, S):
        a = self.a
        H, V = a.hidden, a.vocab
        BS = B * S
        act = BS * H * BF16
        new, drop = self.new, self.drop
        self.phase = 'setup'
        tokens = new(BS * INT64, 'tokens')
        targets = new(BS * INT64, 'tokens')
        self.clock.cpu(30, 120)                      # model(tokens): Python overhead
        self.phase = 'forward'
        x = new(act, 'wte', self.mem_us(2 * act))
        saved = []
        for _ in range(a.layers):
            x, sv = self.forward_layer(B, S, x)
            saved.append(sv)
        lnf = new(act, 'lnf', self.mem_us(2 * act))
        meanf, rstdf = new(BS * FP32, 'lnf'), new(BS * FP32, 'lnf')
        logits = new(BS * V * BF16, 'lm_head', self.gemm_us(BS, V, H))
        self.phase = 'loss'
        lf = new(BS * V * FP32, 'logits_f32', self.mem_us(6 * BS * V))
        lsm = new(BS * V * FP32, 'log_softmax', self.mem_us(8 * BS * V))
        loss = new(FP32, 'nll')
        total_weight = new(FP32, 'nll')
        drop(lf, 'f_loss_line')
        # loss.backward()
        self.phase = 'backward'
        ones = new(FP32, 'make_grads')
        g = new(BS * V * FP32, 'b_nll', self.mem_us(4 * BS * V))
        drop(total_weight, 'r_NllLossBackward0')
        g2 = new(BS * V * FP32, 'b_log_softmax', self.mem_us(12 * BS * V))
        drop(g, 'b_free_grad')
        drop(lsm, 'r_LogSoftmaxBackward0')
        g3 = new(BS * V * BF16, 'b_to_copy', self.mem_us(6 * BS * V))
        drop(g2, 'b_free_grad')
        head, lnfw, lnfb = self.params[-1], self.params[-3], self.params[-2]
        g_lnf = new(act, 'b_mm_in', self.gemm_us(BS, H, V))
        self.accumulate(head, new(head.nbytes, 'b_mm_w', self.gemm_us(V, H, BS)))
        drop(g3, 'b_free_grad')
        drop(lnf, 'r_MmBackward0')
        g_x = new(act, 'b_ln', self.mem_us(4 * act))
        self.accumulate(lnfw, new(lnfw.nbytes, 'b_ln', category='gradient'))
        self.accumulate(lnfb, new(lnfb.nbytes, 'b_ln', category='gradient'))
        drop(g_lnf, 'b_free_grad')
        drop(meanf, 'r_NativeLayerNormBackward0')
        drop(rstdf, 'r_NativeLayerNormBackward0')
        drop(x, 'r_NativeLayerNormBackward0')
        for i in range(a.layers - 1, -1, -1):
            g_x = self.backward_layer(B, S, saved[i], self.layer_params[i], g_x)
        wte = self.params[0]
        tmp = [new(BS * INT64, 'b_emb_tmp', self.mem_us(4 * BS * INT64)) for _ in range(3)]
        gw = new(wte.nbytes, 'b_emb_w', self.mem_us(2 * wte.nbytes + act))
        for t in tmp:
            drop(t, 'b_free_tmp')
        self.accumulate(wte, gw)
        drop(g_x, 'b_free_grad')
        drop(ones, 'f_make_grads')
        self.phase = 'other'
        # del logits, loss, tokens, targets
        for b in (logits, loss, tokens, targets):
            drop(b, 'f_del')

    # -- one optimizer step -------------------------------------------------
    def clip_grad_norm(self):
        new, drop = self.new, self.drop
        norms = [new(FP32, 'clip_norms') for _ in self.params]
        stacked = new(FP32 * len(self.params), 'clip_stack')
        total = new(FP32, 'clip_total')
        coef = new(FP32, 'clip_coef')
        clamped = new(FP32, 'clip_coef')
        for b in norms:
            drop(b, 'f_clip')
        for b in (stacked, coef, clamped):
            drop(b, 'f_clip')
        drop(total, 'f_clip_ret')

    def optimizer_step(self):
        self.annotate('Optimizer.step#AdamW.step', 'START')
        if not self.first_step_done:
            for p in self.params:
                p.exp_avg = self.new(p.nbytes, 'adam_exp_avg', self.mem_us(p.nbytes))
                p.exp_avg_sq = self.new(p.nbytes, 'adam_exp_avg_sq', self.mem_us(p.nbytes))
            self.first_step_done = True
        temps = [self.new(p.nbytes, 'adam_sqrt') for p in self.params]
        self.clock.kernel(sum(self.mem_us(12 * p.nbytes) for p in self.params))
        for b in temps:
            self.drop(b, 'f_adam')
        self.annotate('Optimizer.step#AdamW.step', 'END')

    def zero_grad(self):
        self.annotate('Optimizer.zero_grad#AdamW.zero_grad', 'START')
        for p in self.params:
            if p.grad is not None:
                self.drop(p.grad, 'f_zero_grad')
                p.grad = None
        self.annotate('Optimizer.zero_grad#AdamW.zero_grad', 'END')

    def step(self, index, micro_batch, seq_len):
        for _ in range(self.a.grad_accum):
            self.micro_batch(micro_batch, seq_len)
        self.phase = 'optimizer'
        self.clip_grad_norm()
        self.optimizer_step()
        self.zero_grad()
        self.phase = 'other'
        self.clock.sync()                            # loss.item() for logging
        self.clock.cpu(200, 2000)
        if self.a.empty_cache_every and (index + 1) % self.a.empty_cache_every == 0:
            self.alloc.release_cached(self.fr.new_list(self.site['empty_cache']))
        if self.a.leak_bytes:
            self.leaked.append(self.new(self.a.leak_bytes, 'leak'))


# --------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------

def allocator_settings(expandable):
    return {
        'PYTORCH_CUDA_ALLOC_CONF': 'expandable_segments:True' if expandable else '',
        'max_split_size': -1,
        'garbage_collection_threshold': 0.0,
        'expandable_segments': expandable,
        'pinned_num_register_threads': 1,
        'release_lock_on_cudamalloc': False,
        'pinned_use_cuda_host_register': False,
        'roundup_power2_divisions': {str(1 << i): 0 for i in range(16)},
    }


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description='Write a large, realistic synthetic PyTorch CUDA memory snapshot '
                    '(PyTorch 2.7 schema, pickle protocol 4).')
    ap.add_argument('--out', required=True, help='output pickle')
    ap.add_argument('--layers', type=int, default=24, help='transformer blocks [24]')
    length = ap.add_mutually_exclusive_group()
    length.add_argument('--steps', type=int, default=None,
                        help='optimizer steps to simulate [2]')
    length.add_argument('--events', type=int, default=None,
                        help='simulate whole steps until about this many trace entries exist')
    ap.add_argument('--micro-batch', type=int, default=4, help='sequences per micro-batch [4]')
    ap.add_argument('--grad-accum', type=int, default=1, help='micro-batches per step [1]')
    ap.add_argument('--seq-len', type=int, default=1024, help='maximum sequence length [1024]')
    ap.add_argument('--seq-jitter', type=float, default=0.25,
                    help='per-step sequence length varies down to (1-F)*seq-len [0.25]')
    ap.add_argument('--hidden', type=int, default=2048, help='model width [2048]')
    ap.add_argument('--heads', type=int, default=16, help='attention heads [16]')
    ap.add_argument('--vocab', type=int, default=32000, help='vocabulary size [32000]')
    ap.add_argument('--device-gib', type=float, default=80.0, help='device capacity in GiB [80]')
    ap.add_argument('--oom', action='store_true',
                    help='end with an outlier batch that runs out of memory (oom entry)')
    ap.add_argument('--expandable', action='store_true',
                    help='expandable segments (segment_map / segment_unmap)')
    ap.add_argument('--empty-cache-every', type=int, default=0,
                    help='torch.cuda.empty_cache() after every Nth step [0 = never]')
    ap.add_argument('--leak-bytes', type=int, default=0,
                    help='bytes kept alive per step, a slow leak [0]')
    ap.add_argument('--max-entries', type=int, default=None,
                    help='keep only the last N trace entries (ring buffer) [unlimited]')
    ap.add_argument('--compact', action='store_true',
                    help='share one frames list per distinct stack (smaller file)')
    ap.add_argument('--seed', type=int, default=0, help='random seed [0]')
    ap.add_argument('--truth', default=None, metavar='PATH',
                    help='also write a JSON sidecar with the true category and phase '
                         'of every alloc entry (headroom-truth-1)')
    a = ap.parse_args(argv)
    if a.steps is None and a.events is None:
        a.steps = 2
    for name in ('layers', 'micro_batch', 'grad_accum', 'seq_len', 'hidden', 'heads',
                 'vocab', 'steps', 'events', 'max_entries'):
        value = getattr(a, name)
        if value is not None and value < 1:
            ap.error('--%s must be at least 1' % name.replace('_', '-'))
    for name in ('empty_cache_every', 'leak_bytes'):
        if getattr(a, name) < 0:
            ap.error('--%s must not be negative' % name.replace('_', '-'))
    if a.hidden % a.heads:
        ap.error('--hidden must be a multiple of --heads')
    if not 0.0 <= a.seq_jitter < 1.0:
        ap.error('--seq-jitter must be in [0, 1)')
    if a.device_gib * GiB <= 2 * CONTEXT_BYTES:
        ap.error('--device-gib is too small')
    return a


def generate(a):
    """Run the simulation; returns (snapshot dict, summary dict)."""
    rng = random.Random(a.seed)
    frames = Frames(a.compact)
    clock = Clock(1_750_000_000_000_000 + a.seed * 3_600_000_000, rng)
    alloc = Allocator(clock, frames, int(a.device_gib * GiB), a.expandable)
    run = TrainingRun(a, alloc, frames, clock)
    try:
        run.build_model()
    except OutOfMemory:
        raise SystemExit('error: the model (%d parameters) does not fit in --device-gib %g'
                         % (sum(p.nbytes for p in run.params) // BF16, a.device_gib))
    alloc.recording = True            # torch.cuda.memory._record_memory_history()
    clock.cpu(1000, 5000)

    def seq_for_step():
        if a.seq_len < 128 or a.seq_jitter == 0.0:
            return a.seq_len
        hi = a.seq_len // 64 * 64
        lo = max(64, int(a.seq_len * (1.0 - a.seq_jitter)) // 64 * 64)
        return rng.randrange(lo, hi + 1, 64)

    steps = 0
    oom = None
    try:
        while True:
            run.step(steps, a.micro_batch, seq_for_step())
            steps += 1
            if a.steps is not None and steps >= a.steps:
                break
            if a.events is not None and len(alloc.trace) >= a.events:
                break
        if a.oom:
            mb = a.micro_batch
            while mb < a.micro_batch << 20:          # an outlier batch, ever larger
                mb *= 2
                run.step(steps, mb, a.seq_len)
                steps += 1
            sys.stderr.write('warning: no OOM even with micro-batch %d\n' % mb)
    except OutOfMemory as e:
        oom = e.args[0]

    trace = alloc.trace
    if a.max_entries is not None and len(trace) > a.max_entries:
        trace = trace[-a.max_entries:]
    dropped = len(alloc.trace) - len(trace)
    snapshot = {
        'segments': alloc.segment_dicts(),
        'device_traces': [trace],
        'allocator_settings': allocator_settings(a.expandable),
        'external_annotations': run.annotations,
    }
    summary = {'steps': steps, 'events': len(trace), 'segments': len(snapshot['segments']),
               'reserved_bytes': alloc.reserved, 'oom_request': oom,
               'params': sum(p.nbytes for p in run.params) // BF16}
    if run.truth is not None:
        kept = [t for t in run.truth if t[0] >= dropped]
        summary['truth'] = {
            'format': 'headroom-truth-1',
            'events': len(trace),
            'alloc_event_index': [t[0] - dropped for t in kept],
            'category': [t[1] for t in kept],
            'phase': [t[2] for t in kept],
            'bytes': [t[3] for t in kept],
        }
    return snapshot, summary


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    t0 = time.time()
    snapshot, summary = generate(a)
    t1 = time.time()
    tmp = a.out + '.tmp'
    with open(tmp, 'wb') as f:
        pickle.dump(snapshot, f, protocol=4)
    os.replace(tmp, a.out)
    truth = summary.pop('truth', None)
    if truth is not None:
        tmp = a.truth + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(truth, f, separators=(',', ':'))
            f.write('\n')
        os.replace(tmp, a.truth)
    t2 = time.time()
    summary['bytes'] = os.path.getsize(a.out)
    summary['simulate_s'] = round(t1 - t0, 2)
    summary['write_s'] = round(t2 - t1, 2)
    sys.stderr.write('wrote %s: %d events, %d steps, %d segments, %.1f GiB reserved, '
                     '%d bytes (simulate %.1fs, write %.1fs)%s\n'
                     % (a.out, summary['events'], summary['steps'], summary['segments'],
                        summary['reserved_bytes'] / GiB, summary['bytes'],
                        summary['simulate_s'], summary['write_s'],
                        ', ends with OOM (%d bytes requested)' % summary['oom_request']
                        if summary['oom_request'] else ''))
    return 0


if __name__ == '__main__':
    sys.exit(main())
