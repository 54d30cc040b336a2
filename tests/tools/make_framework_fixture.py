#!/usr/bin/env python3
"""Writes tests/data/frameworks/colocated_rl.pickle: a small snapshot whose framework
allocations carry the frames the frameworks' public sources make them with (stdlib only).

    make_framework_fixture.py [--out tests/data/frameworks/colocated_rl.pickle]

The shape of a colocated RL job (a Megatron actor beside a vLLM rollout engine on one GPU),
scaled down to MiB: vLLM's KV cache (6 x 4 MiB from CacheEngine._allocate_kv_cache, V0),
Megatron-core's param-and-grad buffer (param_data 8 MiB, then grad_data 16 MiB, two statements
of _ParamAndGradBuffer.__init__), the DistributedOptimizer's fp32 main parameters (a 16-bit
clone freed at once, then the 16 MiB fp32 copy kept), then a plain training step
(make_fixtures.training_step). The function names and lines are the public sources' (vLLM
017e7a4c, Megatron-LM d98e8a64; docs/categories-and-phases.md, "Frameworks' own memory"); no
file here was recorded with these frameworks. Deterministic: the same bytes every run.
"""
import argparse
import os
import pickle
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_fixtures import (CPP_EMPTY, CPP_GATHER, CPP_MALLOC, CPP_START, CPP_UNWIND, F, MiB, Sim,  # noqa: E402
                           full_snapshot, training_step)

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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "..", "data", "frameworks", "colocated_rl.pickle"))
    args = ap.parse_args(argv)
    with open(args.out, "wb") as f:
        pickle.dump(scenario(), f, protocol=4)
    print("wrote", os.path.normpath(args.out))


if __name__ == "__main__":
    main()
