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
"""
import argparse
import os
import pickle
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_fixtures import (CPP_EMPTY, CPP_GATHER, CPP_MALLOC, CPP_START, CPP_UNWIND, F, MiB, Sim,  # noqa: E402
                           TB_BWD, TB_FWD, full_snapshot, training_step)

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


SCENARIOS = {"colocated_rl.pickle": scenario, "deepspeed_zero1.pickle": zero1_scenario}


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
