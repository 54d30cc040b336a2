#!/usr/bin/env python3
"""Writes tests/data/frameworks/colocated_rl.pickle and deepspeed_zero1.pickle: small snapshots
whose framework allocations carry the frames the frameworks' public sources make them with
(stdlib only).

    make_framework_fixture.py [--out-dir tests/data/frameworks]

The shape of a colocated RL job (a Megatron actor beside a vLLM rollout engine on one GPU),
scaled down to MiB: vLLM's model as its loader leaves it (three 2 MiB weights made by a layer's
create_weights inside the model's constructor, under model_loader/loader.py's _initialize_model
and load_model; a 2 MiB copy the loader's weight processing frees where it made it), vLLM's KV
cache (6 x 4 MiB from CacheEngine._allocate_kv_cache, V0),
Megatron-core's param-and-grad buffer (param_data 8 MiB, then grad_data 16 MiB, two statements
of _ParamAndGradBuffer.__init__), the DistributedOptimizer's fp32 main parameters (a 16-bit
clone freed at once, then the 16 MiB fp32 copy kept), then a plain training step
(make_fixtures.training_step). The function names and lines are the public sources' (vLLM
017e7a4c, Megatron-LM d98e8a64; docs/categories-and-phases.md, "Frameworks' own memory"); no
file here was recorded with these frameworks. Deterministic: the same bytes every run.

deepspeed_zero1.pickle: a DeepSpeed ZeRO-1 step, scaled down the same way: the constructor's
flat 16-bit group and fp32 partition, a forward and a backward, then the engine's reduction of
the gradients after the backward (engine.py allreduce_gradients -> stage_1_and_2.py
reduce_gradients, which the engine calls at stage 1 only, in every release from v0.9.5 to
edaa7221), which flattens a bucket and frees each gradient it reduced, and the step's fp32
gradient partition. Frames and lines of DeepSpeed edaa7221.

fsdp2_step.pickle: an FSDP2 (fully_shard) step over two ranks, rank 0's memory (fsdp2_scenario):
the function names of PyTorch's torch/distributed/fsdp/_fully_shard/ as its public source has
them in 2025 (read with the search tool; lines are approximate). No FSDP run was recorded here.

fsdp1_mixed_step.pickle: an FSDP1 step over four ranks under bf16 mixed precision, rank 0's
memory (fsdp1_mp_scenario): torch/distributed/fsdp/'s function names (_flat_param.py's
_get_shard, _use_low_precision_shard, _alloc_padded_unsharded_flat_param; _runtime_utils.py's
hooks), so that the all-gather's output is twice the fp32 shard and four times the bf16 copy.

deepspeed_zero3_step.pickle: a DeepSpeed ZeRO-3 step over two ranks, rank 0's memory
(deepspeed_zero3_scenario): the function names of DeepSpeed 38327e07 (0.16.5), lines approximate.

fsdp2_wrapped_step.pickle: fsdp2_step's step as a ring buffer that wrapped in its forward keeps
it (fsdp2_wrapped_scenario): a window with half a forward, whose gathers tell no world size.
"""
import argparse
import os
import pickle
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_fixtures import (CPP_EMPTY, CPP_ENGINE, CPP_GATHER, CPP_MALLOC, CPP_START, CPP_UNWIND, F, MiB,  # noqa: E402
                           PY_MODULE, Sim,
                           TB_BWD, TB_FWD, TB_OPT, full_snapshot, training_step)

SITE = "/usr/local/lib/python3.10/dist-packages/"
RL_MAIN = F("/home/user/rl/main_ppo.py", 212, "main")


def stack(*python):
    """A CUDA allocation's frames: the allocator's C++ frames, then Python innermost first."""
    return [CPP_UNWIND, CPP_GATHER, CPP_MALLOC, CPP_EMPTY] + list(python) + [RL_MAIN, CPP_START]


VLLM_LOADER = SITE + "vllm/model_executor/model_loader/loader.py"
VLLM_LOAD_MODEL = [F(VLLM_LOADER, 405, "load_model"),
                   F(SITE + "vllm/model_executor/model_loader/__init__.py", 19, "get_model"),
                   F(SITE + "vllm/worker/model_runner.py", 1011, "load_model")]
# torch's DeviceContext (`with target_device:`) is the innermost Python frame of every weight.
ENGINE_WEIGHT = stack(F(SITE + "torch/utils/_device.py", 77, "__torch_function__"),
                      F(SITE + "vllm/model_executor/layers/linear.py", 342, "create_weights"),
                      F(SITE + "vllm/model_executor/layers/linear.py", 318, "__init__"),
                      F(SITE + "vllm/model_executor/models/llama.py", 160, "__init__"),
                      F(VLLM_LOADER, 168, "_initialize_model"), *VLLM_LOAD_MODEL)
ENGINE_STAGING = stack(F(SITE + "vllm/model_executor/layers/quantization/fp8.py", 260, "process_weights_after_loading"),
                       F(VLLM_LOADER, 420, "load_model"), *VLLM_LOAD_MODEL[1:])
KV_CACHE = stack(F(SITE + "vllm/worker/cache_engine.py", 92, "_allocate_kv_cache"),
                 F(SITE + "vllm/worker/cache_engine.py", 63, "__init__"),
                 F(SITE + "vllm/worker/worker.py", 235, "_init_cache_engine"))
DDP = F(SITE + "megatron/core/distributed/distributed_data_parallel.py", 314, "__init__")
PARAM_DATA = stack(F(SITE + "megatron/core/distributed/param_and_grad_buffer.py", 1184, "__init__"), DDP)
GRAD_DATA = stack(F(SITE + "megatron/core/distributed/param_and_grad_buffer.py", 1190, "__init__"), DDP)
MAIN_PARAM = stack(F(SITE + "megatron/core/optimizer/distrib_optimizer.py", 445, "_build_model_and_main_param_groups"),
                   F(SITE + "megatron/core/optimizer/distrib_optimizer.py", 774, "__init__"))


def scenario():
    sim = Sim()
    for w in range(3):
        sim.alloc("engine_w%d" % w, 2 * MiB, ENGINE_WEIGHT)
    sim.alloc("engine_staging", 2 * MiB, ENGINE_STAGING)
    sim.free("engine_staging")
    for layer in range(6):
        sim.alloc("kv%d" % layer, 4 * MiB, KV_CACHE)
    sim.alloc("param_data", 8 * MiB, PARAM_DATA)
    sim.alloc("grad_data", 16 * MiB, GRAD_DATA)
    sim.alloc("main_clone", 8 * MiB, MAIN_PARAM)   # shard_model_param.clone() ...
    sim.alloc("main_param", 16 * MiB, MAIN_PARAM)  # ... .float(): the fp32 copy kept
    sim.free("main_clone")
    training_step(sim)
    return full_snapshot(sim)


DS_ENGINE_BACKWARD = F(SITE + "deepspeed/runtime/engine.py", 2982, "backward")
DS_ALLREDUCE = F(SITE + "deepspeed/runtime/engine.py", 2910, "allreduce_gradients")
DS_REDUCE = F(SITE + "deepspeed/runtime/zero/stage_1_and_2.py", 879, "reduce_gradients")
DS_ZERO12 = SITE + "deepspeed/runtime/zero/stage_1_and_2.py"
DS_INIT = stack(F(DS_ZERO12, 545, "__init__"))
DS_FP32_PARTITION = stack(F(DS_ZERO12, 569, "__init__"))
DS_BUCKET = stack(F(SITE + "torch/_utils.py", 526, "_flatten_dense_tensors"),
                  F(DS_ZERO12, 1784, "flatten"),
                  F(DS_ZERO12, 1768, "reduce_ready_partitions_and_remove_grads"),
                  DS_REDUCE, DS_ALLREDUCE, DS_ENGINE_BACKWARD)
DS_GRAD_FREED = [F(DS_ZERO12, 1768, "reduce_ready_partitions_and_remove_grads"), DS_REDUCE, DS_ALLREDUCE,
                 DS_ENGINE_BACKWARD, RL_MAIN, CPP_START]
DS_STEP = stack(F(DS_ZERO12, 2361, "step"))


def zero1_scenario():
    sim = Sim()
    sim.alloc("bit16_flat", 8 * MiB, DS_INIT)
    sim.alloc("fp32_partition", 8 * MiB, DS_FP32_PARTITION)
    sim.alloc("act", 6 * MiB, TB_FWD)
    sim.alloc("grad0", 4 * MiB, TB_BWD)
    sim.alloc("grad1", 4 * MiB, TB_BWD)
    sim.free("act")
    sim.alloc("bucket", 8 * MiB, DS_BUCKET)
    sim.free("bucket")
    for g in ("grad0", "grad1"):
        sim.free_requested(g, frames=DS_GRAD_FREED)
        sim.free_completed(g, frames=DS_GRAD_FREED)
    sim.alloc("grad_partition", 4 * MiB, DS_STEP)
    sim.free("grad_partition")
    return full_snapshot(sim)


FS = SITE + "torch/distributed/fsdp/_fully_shard/"
FSDP_INIT = F(FS + "_fully_shard.py", 196, "fully_shard")
FSDP_SHARD = stack(F(FS + "_fsdp_param.py", 380, "_init_sharded_param"), F(FS + "_fsdp_param.py", 255, "__init__"),
                   F(FS + "_fsdp_param_group.py", 141, "<listcomp>"), F(FS + "_fsdp_param_group.py", 140, "__init__"),
                   FSDP_INIT)


def fsdp_unshard(*hook):
    """The all-gather output and the copy-out's unsharded parameters, under `hook` (the forward's
    pre-hook, called by the module's __call__, or the backward's, called by autograd's engine)."""
    unshard = F(FS + "_fsdp_param_group.py", 283, "unshard")
    gather = stack(F(FS + "_fsdp_collectives.py", 168, "allocate"),
                   F(FS + "_fsdp_collectives.py", 262, "foreach_all_gather"), unshard, *hook)
    copy_out = stack(F(FS + "_fsdp_param.py", 879, "alloc_storage"),
                     F(FS + "_fsdp_param.py", 553, "alloc_all_gather_outputs"),
                     F(FS + "_fsdp_collectives.py", 322, "foreach_all_gather_copy_out"),
                     F(FS + "_fsdp_param_group.py", 302, "wait_for_unshard"), *hook)
    return gather, copy_out


FSDP_FWD_GATHER, FSDP_FWD_COPY = fsdp_unshard(F(FS + "_fsdp_state.py", 231, "_pre_forward"), PY_MODULE)
FSDP_BWD_GATHER, FSDP_BWD_COPY = fsdp_unshard(F(FS + "_fsdp_param_group.py", 473, "pre_backward"), CPP_ENGINE)
FSDP_REDUCE = stack(F(FS + "_fsdp_collectives.py", 168, "allocate"),
                    F(FS + "_fsdp_collectives.py", 455, "foreach_reduce"),
                    F(FS + "_fsdp_param_group.py", 505, "post_backward"), CPP_ENGINE)


def fsdp_reshard_free(*hook):
    """The unsharded parameters' free after a layer: FSDP2's reshard, called by the forward's
    post-hook (inside the module's __call__) or the backward's post_backward (autograd's engine)."""
    return [F(FS + "_fsdp_param.py", 890, "free_storage"), F(FS + "_fsdp_param.py", 610, "free_unsharded_param"),
            F(FS + "_fsdp_param_group.py", 318, "reshard"), *hook, CPP_START]


FSDP_FWD_FREE = fsdp_reshard_free(F(FS + "_fsdp_param_group.py", 440, "post_forward"),
                                  F(FS + "_fsdp_state.py", 258, "_post_forward"), PY_MODULE, RL_MAIN)
FSDP_BWD_FREE = fsdp_reshard_free(F(FS + "_fsdp_param_group.py", 505, "post_backward"), CPP_ENGINE)
FSDP_REDUCE_FREE = [F(FS + "_fsdp_collectives.py", 470, "foreach_reduce"),
                    F(FS + "_fsdp_param_group.py", 505, "post_backward"), CPP_ENGINE, CPP_START]


def sharded_adamw_step(sim, units):
    """AdamW's first step over `units` 4 MiB shards (two moments each), then zero_grad freeing
    the sharded gradients grad0.. the backward kept."""
    sim.annotate("Optimizer.step#AdamW.step", "START")
    for unit in range(units):
        sim.alloc("exp_avg%d" % unit, 4 * MiB, TB_OPT)
        sim.alloc("exp_avg_sq%d" % unit, 4 * MiB, TB_OPT)
    sim.annotate("Optimizer.step#AdamW.step", "END")
    sim.annotate("Optimizer.zero_grad#AdamW.zero_grad", "START")
    for unit in range(units):
        sim.free("grad%d" % unit)
    sim.annotate("Optimizer.zero_grad#AdamW.zero_grad", "END")


def gathered_forward(sim, units, first, gathered, freed):
    """Each unit's forward: `first` (name, bytes, frames: the all-gather's own buffer or the
    cast it sends), the 8 MiB gathered parameters (name, frames) made from it, `first` freed,
    the unit's 6 MiB activation, the gathered parameters freed at `freed`."""
    for unit in range(units):
        sim.alloc("%s%d" % (first[0], unit), first[1], first[2])
        sim.alloc("%s%d" % (gathered[0], unit), 8 * MiB, gathered[1])
        sim.free("%s%d" % (first[0], unit))
        sim.alloc("act%d" % unit, 6 * MiB, TB_FWD)
        sim.free("%s%d" % (gathered[0], unit), frames=freed)


def gathered_backward(sim, unit, first, gathered, freed):
    """One unit's backward up to its reduce-scatter: gathered again as in gathered_forward, its
    8 MiB unsharded gradient (ugrad), its activation and gathered parameters freed."""
    sim.alloc("%s_b%d" % (first[0], unit), first[1], first[2])
    sim.alloc("%s_b%d" % (gathered[0], unit), 8 * MiB, gathered[1])
    sim.free("%s_b%d" % (first[0], unit))
    sim.alloc("ugrad%d" % unit, 8 * MiB, TB_BWD)
    sim.free("act%d" % unit)
    sim.free("%s_b%d" % (gathered[0], unit), frames=freed)


def fsdp2_backward_and_step(sim):
    """FSDP2's backward of two layers (gathered again, reduce-scattered: the 8 MiB input, the
    4 MiB sharded gradient kept) and AdamW's step; the snapshot."""
    for layer in reversed(range(2)):
        gathered_backward(sim, layer, ("ag_out", 8 * MiB, FSDP_BWD_GATHER), ("unsharded", FSDP_BWD_COPY), FSDP_BWD_FREE)
        sim.alloc("rs_in%d" % layer, 8 * MiB, FSDP_REDUCE)
        sim.alloc("grad%d" % layer, 4 * MiB, FSDP_REDUCE)
        sim.free("ugrad%d" % layer, frames=FSDP_REDUCE_FREE)
        sim.free("rs_in%d" % layer, frames=FSDP_REDUCE_FREE)
    sharded_adamw_step(sim, 2)
    return full_snapshot(sim)


def fsdp2_scenario():
    """An FSDP2 (fully_shard) step of two layers over two ranks, rank 0's memory, scaled down:
    each layer's 8 MiB of parameters kept as a 4 MiB shard; the forward gathers each layer
    (the all-gather output, then the unsharded parameters it is copied out into) and frees it
    after the layer; the backward gathers again (pre_backward), makes the layer's 8 MiB of
    unsharded gradients, reduce-scatters them through an 8 MiB input into a 4 MiB output kept as
    the sharded gradient; AdamW keeps two 4 MiB moments per shard."""
    sim = Sim()
    for layer in range(2):
        sim.alloc("shard%d" % layer, 4 * MiB, FSDP_SHARD)
    gathered_forward(sim, 2, ("ag_out", 8 * MiB, FSDP_FWD_GATHER), ("unsharded", FSDP_FWD_COPY), FSDP_FWD_FREE)
    return fsdp2_backward_and_step(sim)


FS1 = SITE + "torch/distributed/fsdp/"
FSDP1_INIT = [F(FS1 + "_init_utils.py", 600, "_init_param_handle_from_params"),
              F(FS1 + "fully_sharded_data_parallel.py", 509, "__init__"), RL_MAIN, CPP_START]
FSDP1_SHARD = [CPP_UNWIND, CPP_GATHER, CPP_MALLOC, CPP_EMPTY, F(FS1 + "_flat_param.py", 994, "_get_shard"),
               F(FS1 + "_flat_param.py", 913, "shard")] + FSDP1_INIT
FSDP1_FLATTEN = [CPP_UNWIND, CPP_GATHER, CPP_MALLOC, CPP_EMPTY, F(FS1 + "_flat_param.py", 790, "flatten_tensors"),
                 F(FS1 + "_flat_param.py", 818, "flatten_tensors_into_flat_param")] + FSDP1_INIT


def fsdp1_unshard(*hook):
    """The low-precision shard (mixed precision's cast) and the padded unsharded flat parameter
    the all-gather fills, under `hook` (FSDP1's _pre_forward or _pre_backward_hook)."""
    unshard = [F(FS1 + "_flat_param.py", 1339, "unshard"), F(FS1 + "_runtime_utils.py", 290, "_unshard")]
    cast = stack(F(FS1 + "_flat_param.py", 1286, "_use_low_precision_shard"),
                 F(FS1 + "_flat_param.py", 1300, "pre_unshard"), *unshard[1:], *hook)
    gather = stack(F(SITE + "torch/storage.py", 1050, "_resize_"),
                   F(SITE + "torch/distributed/utils.py", 160, "_alloc_storage"),
                   F(FS1 + "_flat_param.py", 1366, "_alloc_padded_unsharded_flat_param"), *unshard, *hook)
    return cast, gather


FSDP1_FWD_CAST, FSDP1_FWD_GATHER = fsdp1_unshard(F(FS1 + "_runtime_utils.py", 370, "_pre_forward_unshard"),
                                                 F(FS1 + "_runtime_utils.py", 330, "_pre_forward"),
                                                 F(FS1 + "fully_sharded_data_parallel.py", 848, "forward"), PY_MODULE)
FSDP1_BWD_CAST, FSDP1_BWD_GATHER = fsdp1_unshard(F(FS1 + "_runtime_utils.py", 680, "_pre_backward_hook"), CPP_ENGINE)
FSDP1_REDUCE = stack(F(FS1 + "_runtime_utils.py", 790, "_get_reduce_scatter_tensors"),
                     F(FS1 + "_runtime_utils.py", 760, "_reduce_grad"),
                     F(FS1 + "_runtime_utils.py", 720, "_post_backward_hook"), CPP_ENGINE)
FSDP1_REDUCE_FREE = [F(FS1 + "_runtime_utils.py", 762, "_reduce_grad"),
                     F(FS1 + "_runtime_utils.py", 720, "_post_backward_hook"), CPP_ENGINE, CPP_START]


def fsdp1_reshard_free(*hook):
    """The unsharded flat parameter's free after a unit: FSDP1's _reshard, called by _post_forward
    (inside the module's __call__) or _post_backward_hook (autograd's engine)."""
    return [F(SITE + "torch/distributed/utils.py", 175, "_free_storage"),
            F(FS1 + "_flat_param.py", 1600, "_free_unsharded_flat_param"), F(FS1 + "_flat_param.py", 1560, "reshard"),
            F(FS1 + "_runtime_utils.py", 520, "_reshard"), *hook, CPP_START]


FSDP1_FWD_FREE = fsdp1_reshard_free(F(FS1 + "_runtime_utils.py", 420, "_post_forward_reshard"),
                                    F(FS1 + "_runtime_utils.py", 400, "_post_forward"),
                                    F(FS1 + "fully_sharded_data_parallel.py", 856, "forward"), PY_MODULE, RL_MAIN)
FSDP1_BWD_FREE = fsdp1_reshard_free(F(FS1 + "_runtime_utils.py", 730, "_post_backward_reshard"),
                                    F(FS1 + "_runtime_utils.py", 720, "_post_backward_hook"), CPP_ENGINE)


def fsdp2_wrapped_scenario():
    """fsdp2_scenario's step as a ring buffer that wrapped in its forward keeps it: the first
    layer's gather and forward happened before the window (its shards and activation alive
    when it opens). The window's one forward gathers half the shards: weighed as whole, its
    8 MiB over the 8 MiB of shards would read one rank, not two."""
    sim = Sim()
    sim.recording[0] = False
    for layer in range(2):
        sim.alloc("shard%d" % layer, 4 * MiB, FSDP_SHARD)
    gathered_forward(sim, 1, ("ag_out", 8 * MiB, FSDP_FWD_GATHER), ("unsharded", FSDP_FWD_COPY), FSDP_FWD_FREE)
    sim.recording[0] = True
    sim.alloc("ag_out1", 8 * MiB, FSDP_FWD_GATHER)
    sim.alloc("unsharded1", 8 * MiB, FSDP_FWD_COPY)
    sim.free("ag_out1")
    sim.alloc("act1", 6 * MiB, TB_FWD)
    sim.free("unsharded1", frames=FSDP_FWD_FREE)
    return fsdp2_backward_and_step(sim)


def fsdp1_mp_scenario():
    """An FSDP1 step of two units over four ranks under bf16 mixed precision, rank 0's memory,
    scaled down: each unit's 16 MiB of fp32 parameters flattened (freed once sharded) and kept
    as a 4 MiB fp32 shard; each unshard casts the shard to a 2 MiB bf16 copy and all-gathers it
    into an 8 MiB padded unsharded flat parameter (four times the copy, twice the fp32 shard:
    the world size is the first ratio); the backward gathers again, makes the unit's 8 MiB bf16
    gradient, reduce-scatters it into a 2 MiB shard kept as the gradient (cast to fp32: 4 MiB);
    AdamW keeps two 4 MiB moments per shard."""
    sim = Sim()
    for unit in range(2):
        sim.alloc("flat%d" % unit, 16 * MiB, FSDP1_FLATTEN)
        sim.alloc("shard%d" % unit, 4 * MiB, FSDP1_SHARD)
        sim.free("flat%d" % unit)
    gathered_forward(sim, 2, ("mp", 2 * MiB, FSDP1_FWD_CAST), ("full", FSDP1_FWD_GATHER), FSDP1_FWD_FREE)
    for unit in reversed(range(2)):
        gathered_backward(sim, unit, ("mp", 2 * MiB, FSDP1_BWD_CAST), ("full", FSDP1_BWD_GATHER), FSDP1_BWD_FREE)
        sim.alloc("rs_out%d" % unit, 2 * MiB, FSDP1_REDUCE)
        sim.free("ugrad%d" % unit, frames=FSDP1_REDUCE_FREE)
        sim.alloc("grad%d" % unit, 4 * MiB, FSDP1_REDUCE)
        sim.free("rs_out%d" % unit, frames=FSDP1_REDUCE_FREE)
    sharded_adamw_step(sim, 2)
    return full_snapshot(sim)


DS = SITE + "deepspeed/runtime/zero/"
DS_NVTX = F(SITE + "deepspeed/utils/nvtx.py", 15, "wrapped_fn")  # instrument_w_nvtx's wrapper
DS_PARTITION = stack(F(DS + "partition_parameters.py", 1586, "_partition_param"),
                     F(DS + "partition_parameters.py", 1538, "_partition"),
                     F(DS + "partition_parameters.py", 1388, "partition"),
                     F(DS + "partition_parameters.py", 1090, "_convert_to_zero_parameters"))
DS3 = DS + "stage3.py"
DS3_FP32 = stack(F(DS3, 747, "_create_fp32_partitions"), F(DS3, 360, "__init__"))
DS3_GRAD_PARTITIONS = stack(F(DS3, 547, "_setup_for_real_optimizer"), F(DS3, 365, "__init__"))
DS3_BUCKET = stack(F(DS3, 538, "_setup_for_real_optimizer"), F(DS3, 365, "__init__"))
DS_COORD = DS + "partitioned_param_coordinator.py"
DS_OFFLOAD = DS + "parameter_offload.py"


def ds_fetch(*hook):
    """A layer's gather under `hook`: _all_gather_dtype's staging buffer, then the unsharded
    parameters AllGatherCoalescedHandle.wait makes with instrument_w_nvtx(torch.cat)."""
    fetch = [F(DS_COORD, 285, "fetch_sub_module"), DS_NVTX, *hook]
    staging = stack(F(DS + "partition_parameters.py", 1172, "_all_gather_dtype"),
                    F(DS + "partition_parameters.py", 1200, "all_gather_coalesced"),
                    F(DS_COORD, 473, "__all_gather_params_"), F(DS_COORD, 460, "__all_gather_params"), *fetch)
    unsharded = stack(DS_NVTX, F(DS + "partition_parameters.py", 707, "wait"), DS_NVTX, *fetch)
    return staging, unsharded


def ds_release(*hook):
    """The unsharded parameters freed after the layer: free_param sets param.data to an empty tensor."""
    return [F(DS + "partition_parameters.py", 291, "free_param"),
            F(DS + "partition_parameters.py", 1551, "_partition_param"),
            F(DS + "partition_parameters.py", 1538, "_partition"), F(DS + "partition_parameters.py", 1388, "partition"),
            F(DS_COORD, 515, "__release_param"), F(DS_COORD, 422, "release_sub_module"), *hook, CPP_START]


DS_FWD_STAGING, DS_FWD_UNSHARDED = ds_fetch(F(DS_OFFLOAD, 470, "pre_sub_module_forward_function"), PY_MODULE,
                                            RL_MAIN)
DS_BWD_STAGING, DS_BWD_UNSHARDED = ds_fetch(F(DS_OFFLOAD, 500, "pre_sub_module_backward_function"), CPP_ENGINE)
DS_FWD_RELEASE = ds_release(F(DS_OFFLOAD, 480, "post_sub_module_forward_function"), PY_MODULE, RL_MAIN)
DS_BWD_RELEASE = ds_release(F(DS_OFFLOAD, 520, "post_sub_module_backward_function"), CPP_ENGINE)
DS3_REDUCE_HOOK = [F(DS3, 1258, "reduce_independent_p_g_buckets_and_remove_grads"),
                   F(DS3, 1529, "reduce_ready_partitions_and_remove_grads"),
                   F(DS3, 1177, "reduce_partition_and_remove_grads"), CPP_ENGINE]
DS3_GRAD_INTO_BUCKET = [F(DS3, 1286, "__add_grad_to_ipg_bucket"), DS_NVTX] + DS3_REDUCE_HOOK + [CPP_START]
DS3_SCATTER = stack(DS_NVTX, F(SITE + "deepspeed/runtime/comm/coalesced_collectives.py", 199,
                                "reduce_scatter_coalesced"), DS_NVTX, F(DS3, 1380, "__avg_scatter_grads"), DS_NVTX,
                    F(DS3, 1310, "__reduce_and_partition_ipg_grads"), DS_NVTX, *DS3_REDUCE_HOOK)
DS3_SCATTER_FREE = [F(DS3, 1320, "__reduce_and_partition_ipg_grads"), DS_NVTX] + DS3_REDUCE_HOOK + [CPP_START]


def deepspeed_zero3_scenario():
    """A DeepSpeed ZeRO-3 step of two layers over two ranks, rank 0's memory, scaled down, from
    the function names of DeepSpeed 38327e07 (0.16.5): each layer's 8 MiB of parameters kept as a
    4 MiB partition; the optimizer's fp32 partitions, its flat gradient partitions and its ipg
    bucket made once; each layer gathered for its forward (a staging buffer, then the unsharded
    parameters) and released after it; gathered again for its backward, its 8 MiB unsharded
    gradient copied into the bucket (which frees it), reduce-scattered through an 8 MiB flat
    buffer into the kept partition; AdamW keeps two 4 MiB moments per partition."""
    sim = Sim()
    for layer in range(2):
        sim.alloc("partition%d" % layer, 4 * MiB, DS_PARTITION)
    for layer in range(2):
        sim.alloc("fp32_%d" % layer, 4 * MiB, DS3_FP32)
    sim.alloc("grad_partitions", 8 * MiB, DS3_GRAD_PARTITIONS)
    sim.alloc("ipg_bucket", 8 * MiB, DS3_BUCKET)
    gathered_forward(sim, 2, ("staging", 8 * MiB, DS_FWD_STAGING), ("unsharded", DS_FWD_UNSHARDED), DS_FWD_RELEASE)
    for layer in reversed(range(2)):
        gathered_backward(sim, layer, ("staging", 8 * MiB, DS_BWD_STAGING), ("unsharded", DS_BWD_UNSHARDED),
                          DS_BWD_RELEASE)
        sim.free("ugrad%d" % layer, frames=DS3_GRAD_INTO_BUCKET)
        sim.alloc("scatter%d" % layer, 8 * MiB, DS3_SCATTER)
        sim.free("scatter%d" % layer, frames=DS3_SCATTER_FREE)
    sim.annotate("Optimizer.step#AdamW.step", "START")
    for layer in range(2):
        sim.alloc("exp_avg%d" % layer, 4 * MiB, TB_OPT)
        sim.alloc("exp_avg_sq%d" % layer, 4 * MiB, TB_OPT)
    sim.annotate("Optimizer.step#AdamW.step", "END")
    return full_snapshot(sim)


SCENARIOS = {"colocated_rl.pickle": scenario, "deepspeed_zero1.pickle": zero1_scenario,
             "fsdp2_step.pickle": fsdp2_scenario, "fsdp1_mixed_step.pickle": fsdp1_mp_scenario,
             "fsdp2_wrapped_step.pickle": fsdp2_wrapped_scenario,
             "deepspeed_zero3_step.pickle": deepspeed_zero3_scenario}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", default=os.path.join(HERE, "..", "data", "frameworks"))
    args = ap.parse_args(argv)
    for name, make in SCENARIOS.items():
        out = os.path.join(args.out_dir, name)
        with open(out, "wb") as f:
            pickle.dump(make(), f, protocol=4)
        print("wrote", os.path.normpath(out))


if __name__ == "__main__":
    main()
