#!/usr/bin/env python3
"""Writes tests/data/frameworks/colocated_rl.pickle and deepspeed_zero1.pickle: small snapshots
whose framework allocations carry the frames the frameworks' public sources make them with
(stdlib only).

    make_framework_fixture.py [--out-dir tests/data/frameworks]

The shape of a colocated RL job (a Megatron actor beside a vLLM rollout engine on one GPU),
scaled down to MiB: vLLM's KV cache (6 x 4 MiB from CacheEngine._allocate_kv_cache, V0),
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
FSDP_FREE = [F(FS + "_fsdp_param.py", 890, "free_storage"), F(FS + "_fsdp_param.py", 610, "free_unsharded_param"),
             RL_MAIN, CPP_START]
FSDP_REDUCE_FREE = [F(FS + "_fsdp_collectives.py", 470, "foreach_reduce"),
                    F(FS + "_fsdp_param_group.py", 505, "post_backward"), CPP_ENGINE, CPP_START]


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
    for layer in range(2):
        sim.alloc("ag_out%d" % layer, 8 * MiB, FSDP_FWD_GATHER)
        sim.alloc("unsharded%d" % layer, 8 * MiB, FSDP_FWD_COPY)
        sim.free("ag_out%d" % layer)
        sim.alloc("act%d" % layer, 6 * MiB, TB_FWD)
        sim.free("unsharded%d" % layer, frames=FSDP_FREE)
    for layer in reversed(range(2)):
        sim.alloc("ag_out_b%d" % layer, 8 * MiB, FSDP_BWD_GATHER)
        sim.alloc("unsharded_b%d" % layer, 8 * MiB, FSDP_BWD_COPY)
        sim.free("ag_out_b%d" % layer)
        sim.alloc("ugrad%d" % layer, 8 * MiB, TB_BWD)
        sim.free("act%d" % layer)
        sim.free("unsharded_b%d" % layer, frames=FSDP_FREE)
        sim.alloc("rs_in%d" % layer, 8 * MiB, FSDP_REDUCE)
        sim.alloc("grad%d" % layer, 4 * MiB, FSDP_REDUCE)
        sim.free("ugrad%d" % layer, frames=FSDP_REDUCE_FREE)
        sim.free("rs_in%d" % layer, frames=FSDP_REDUCE_FREE)
    sim.annotate("Optimizer.step#AdamW.step", "START")
    for layer in range(2):
        sim.alloc("exp_avg%d" % layer, 4 * MiB, TB_OPT)
        sim.alloc("exp_avg_sq%d" % layer, 4 * MiB, TB_OPT)
    sim.annotate("Optimizer.step#AdamW.step", "END")
    sim.annotate("Optimizer.zero_grad#AdamW.zero_grad", "START")
    for layer in range(2):
        sim.free("grad%d" % layer)
    sim.annotate("Optimizer.zero_grad#AdamW.zero_grad", "END")
    return full_snapshot(sim)


SCENARIOS = {"colocated_rl.pickle": scenario, "deepspeed_zero1.pickle": zero1_scenario,
             "fsdp2_step.pickle": fsdp2_scenario}


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
