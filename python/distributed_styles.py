# SPDX-License-Identifier: MIT
"""Data-parallel training loops recorded on the CPU: ground truth for the frameworks' own memory
(issue 47). Each rank is a process of its own joined over gloo, as a GPU job's ranks are over
NCCL; rank 0's step is written to the path, the other ranks' are recorded and dropped (the ranks
run the same code on the same shapes).

Styles, "<framework>_<ranks>":
  ddp_1, ddp_2      torch.nn.parallel.DistributedDataParallel around the model, AdamW. DDP's
                    Reducer keeps the gradients a second time in flat buckets (built in its
                    constructor, rebuilt in the second forward in the order the gradients came);
                    a communication hook that runs DDP's own allreduce labels each bucket as
                    "gradient" in headroom_truth (cap.gradients), since no parameter's .grad is it.
  zero1_1, zero1_2  DDP with torch.distributed.optim.ZeroRedundancyOptimizer(AdamW): each rank
                    keeps the optimizer state of its share of the parameters (ZeRO stage 1).
"""
import os
import shutil
import tempfile

import torch

import cpu_models

DIST_STYLES = ("ddp_1", "ddp_2", "zero1_1", "zero1_2")


def ranks_of(style):
    return int(style.rsplit("_", 1)[1])


def _label_buckets(cap, ddp):
    """DDP's default allreduce through a communication hook that first labels the bucket."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    def hook(state, bucket):
        cap.gradients(bucket.buffer())
        return default_hooks.allreduce_hook(state, bucket)

    ddp.register_comm_hook(None, hook)


def _rank_main(rank, world, init, paths, family, style, micro_batch, seq, iterations, seed, truth):
    import torch.distributed as dist
    import headroom_cpu
    import loop_styles
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    try:
        zero = style.startswith("zero1")
        kw = dict(micro_batch=micro_batch, seq=seq, precision="fp32", checkpoint="none", accum=1,
                  devices=world, iterations=iterations, optimizer="adamw", model=family,
                  family=family, prebuilt=False, loop_style=style, oracle=False, truth=truth,
                  zero=1 if zero else 0)
        with headroom_cpu.capture(paths[rank], **kw) as cap:
            model, make_batch, loss_fn = cpu_models.build(family, micro_batch, seq, "fp32", "none",
                                                          seed + rank)
            ddp = torch.nn.parallel.DistributedDataParallel(model)
            _label_buckets(cap, ddp)
            if zero:
                from torch.distributed.optim import ZeroRedundancyOptimizer
                opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.AdamW)
            else:
                opt = cpu_models.make_optimizer("adamw", ddp.parameters())
            loop_styles.train_plain(cap, ddp, opt, make_batch, loss_fn, iterations)
    finally:
        dist.destroy_process_group()


def run_distributed(path, family, style, micro_batch=2, seq_mult=1, iterations=2, seed=0,
                    truth=True):
    """Record ``family`` in the data-parallel ``style``: rank 0's step into ``path``."""
    import torch.multiprocessing as mp
    if style not in DIST_STYLES:
        raise ValueError("style must be one of %s, not %r" % (DIST_STYLES, style))
    world = ranks_of(style)
    seq = cpu_models.BASE_SEQ[family] * seq_mult
    work = tempfile.mkdtemp(prefix="headroom_dist_")
    try:
        paths = [path] + [os.path.join(work, "rank%d.pickle" % r) for r in range(1, world)]
        init = "file://" + os.path.join(work, "rendezvous")
        mp.spawn(_rank_main, nprocs=world,
                 args=(world, init, paths, family, style, micro_batch, seq, iterations, seed, truth))
    finally:
        shutil.rmtree(work, ignore_errors=True)
