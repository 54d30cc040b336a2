"""The special GPU points: a transformers Llama (sdpa / eager), a torch.compile'd model, a
CUDA-graph captured step, an OOM forced in the forward, a Lightning Trainer run, FSDP2 and FSDP1
at world size 1. Each returns
the result keys of point.py; each needs CUDA (point.py skips them on the dry run).
"""

import os
import re
import time

import common
from common import NO_MARKS, PhaseTracker, Skip


def import_lightning():
    """lightning.pytorch, else pytorch_lightning (whichever imports)."""
    try:
        import lightning.pytorch as pl
    except ImportError:
        import pytorch_lightning as pl
    return pl


# ------------------------------------------------------------------ transformers Llama
def _llama_model(spec):
    import transformers
    d = spec["dims"]
    cfg = transformers.LlamaConfig(vocab_size=d["vocab_size"], hidden_size=d["hidden_size"],
                                   intermediate_size=d["intermediate_size"],
                                   num_hidden_layers=d["num_hidden_layers"],
                                   num_attention_heads=d["num_attention_heads"],
                                   num_key_value_heads=d["num_attention_heads"],
                                   max_position_embeddings=max(2048, spec["seq"]),
                                   use_cache=False)
    cls = transformers.LlamaForCausalLM
    try:  # the supported way to pick the attention (4.36+)
        model = cls._from_config(cfg, attn_implementation=spec["attn"])
    except (TypeError, ValueError, AttributeError):
        cfg._attn_implementation = spec["attn"]
        model = cls(cfg)
    return model, transformers.__version__


def llama(spec, out):
    """LlamaForCausalLM from a config (random weights), loss from labels= as users write it;
    the recorder attached with its automatic markers (forward hooks, the backward wrapper,
    optimizer step hooks): the other recorder mode, next to the families' manual one."""
    import torch
    rec = common.GpuRecording(spec, out)
    model, version = _llama_model(spec)
    model.to("cuda")
    model.train()
    opt = common.make_optimizer(torch, "adamw", model.parameters())
    rec.attach(model, opt, phases=True)
    vocab, shape = spec["dims"]["vocab_size"], (spec["micro_batch"], spec["seq"])
    gen = torch.Generator().manual_seed(1)

    def make_batch():
        x = torch.randint(0, vocab, shape, generator=gen)
        return x, x

    def step(x, y, marks):
        x = x.to("cuda", non_blocking=True)
        with common.autocast(torch, spec["precision"]):
            loss = model(input_ids=x, labels=x, use_cache=False).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    res = common.measure(spec, out, rec, step, make_batch, marks=NO_MARKS)
    used = getattr(model.config, "_attn_implementation", None)
    res.update(recorder_mode="attach(model, optimizer): automatic markers",
               transformers=version, attn_implementation=used)
    if used != spec["attn"]:
        res["attn_mismatch"] = "asked %s, the model uses %s" % (spec["attn"], used)
    res["attention_kernels"] = _kernels(torch, step, make_batch)
    return res


def _kernels(torch, step, make_batch):
    """The CUDA kernels of one step whose names say attention (flash, memory-efficient,
    softmax, ...): which SDPA backend ran. Best effort; the error is the answer otherwise."""
    try:
        from torch.profiler import ProfilerActivity, profile
        x, y = common.on_device(torch, make_batch())
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step(x, y, NO_MARKS)
            torch.cuda.synchronize()
        names = {e.key for e in prof.key_averages()}
        pat = re.compile(r"flash|fmha|efficient|attention|sdpa|softmax|cutlass", re.I)
        return sorted(n[:160] for n in names if pat.search(n))[:30]
    except Exception as exc:
        return ["error: %r" % (exc,)]


# ------------------------------------------------------------------ torch.compile
def compile_point(spec, out):
    """The decoder compiled with torch.compile (default inductor). The recorder warns and
    keeps no shapes for a compiled model (hooks would break its graphs), so the markers are
    placed by hand; the snapshot's stacks show the compiled frames."""
    import torch
    if not hasattr(torch, "compile"):
        raise Skip("torch.compile needs torch >= 2.0 (this is %s)" % torch.__version__)
    rec = common.GpuRecording(spec, out)
    model, make_batch, loss_fn = common.build_model(spec)
    model.to("cuda")
    opt = common.make_optimizer(torch, spec["optimizer"], model.parameters())
    compiled = torch.compile(model)
    rec.attach(compiled, opt, phases=False)  # exercises the recorder's compiled-model warning
    step = common.Step(torch, compiled, opt, loss_fn, spec["precision"])
    t0 = time.perf_counter()
    step(*make_batch(), rec)  # the first call compiles: timed apart from the warm-up
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - t0
    spec = dict(spec, warmup=max(0, spec["warmup"] - 1))
    res = common.measure(spec, out, rec, step, make_batch)
    res.update(recorder_mode="manual phases (compiled model: no hooks)",
               first_step_s=round(compile_s, 3), warmup_steps=spec["warmup"] + 1)
    return res


# ------------------------------------------------------------------ CUDA graphs
def cuda_graph(spec, out):
    """The whole training step captured in a CUDA graph (PyTorch's 'whole network capture'):
    warm-up on a side stream, the capture (its allocations go to the graph's private pool)
    as one recorded iteration, one replay as the next; the timed steps are replays."""
    import torch
    rec = common.GpuRecording(spec, out)
    model, make_batch, loss_fn = common.build_model(spec)
    model.to("cuda")
    opt = common.make_optimizer(torch, spec["optimizer"], model.parameters(), capturable=True)
    rec.attach(model, opt, phases=False)
    step = common.Step(torch, model, opt, loss_fn, "fp32")
    static_x, static_y = common.on_device(torch, make_batch())
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(spec["warmup"]):
            step(static_x, static_y, rec)
    torch.cuda.current_stream().wait_stream(side)
    opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    graph = torch.cuda.CUDAGraph()
    with rec.iteration():
        with torch.cuda.graph(graph):
            with rec.phase("forward"):
                static_out = model(static_x)
            with rec.phase("loss"):
                static_loss = loss_fn(static_out, static_y)
            with rec.phase("backward"):
                static_loss.backward()
            with rec.phase("optimizer"):
                opt.step()
    with rec.iteration():
        graph.replay()
    torch.cuda.synchronize()
    res = {"max_allocated_bytes": int(torch.cuda.max_memory_allocated()),
           "max_reserved_bytes": int(torch.cuda.max_memory_reserved()),
           "n_recorded_steps": 2, "warmup_steps": spec["warmup"],
           "recorded_steps_are": "the capture, then one replay",
           "recorder_mode": "manual phases, attach(phases=False)",
           "optimizer_class": type(opt).__name__,
           "capturable": bool(opt.defaults.get("capturable", False))}
    path = rec.dump("recorded")
    rec.stop()
    res.update(rec.report())
    res.update(common.finish_snapshot(path, out))
    times = []
    for _ in range(spec["timed"]):
        torch.cuda.synchronize()
        t = time.perf_counter()
        graph.replay()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    res.update(common.step_times(times))
    return res


# ------------------------------------------------------------------ OOM in the forward
def oom(spec, out):
    """A step too large for a memory fraction of limit_gib: the allocator raises in the
    forward, the recorder's OOM observer dumps first. max_allocated is the peak up to it."""
    import torch
    total = torch.cuda.get_device_properties(0).total_memory
    frac = min(1.0, spec["limit_gib"] * (1 << 30) / float(total))
    torch.cuda.set_per_process_memory_fraction(frac)
    rec = common.GpuRecording(spec, out)
    model, make_batch, loss_fn = common.build_model(spec)
    model.to("cuda")
    opt = common.make_optimizer(torch, spec["optimizer"], model.parameters())
    rec.attach(model, opt, phases=False)
    step = common.Step(torch, model, opt, loss_fn, spec["precision"])
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    tracker = PhaseTracker(rec)
    oom_cls = getattr(torch.cuda, "OutOfMemoryError", RuntimeError)
    res = {"memory_fraction": round(frac, 6), "limit_bytes": int(frac * total),
           "recorder_mode": "manual phases, attach(phases=False)"}
    try:
        step(*make_batch(), tracker)
        res["oom"] = False
    except oom_cls as exc:
        if "out of memory" not in str(exc).lower():
            raise
        res.update(oom=True, oom_phase=tracker.current, oom_message=str(exc)[:400])
    torch.cuda.synchronize()
    res.update(max_allocated_bytes=int(torch.cuda.max_memory_allocated()),
               max_reserved_bytes=int(torch.cuda.max_memory_reserved()),
               n_recorded_steps=1, warmup_steps=0, step_time_s=None)
    dumps = [p for p in rec.dumps() if p.endswith("_oom.pickle")]
    res["oom_dump_by_observer"] = bool(dumps)
    path = dumps[0] if dumps else rec.dump("after-oom")
    rec.stop()
    res.update(rec.report())
    res.update(common.finish_snapshot(path, out))
    if not res["oom"]:
        res["status"] = "failed"
        res["error"] = "no OOM at a %.2f GiB limit" % spec["limit_gib"]
    return res


# ------------------------------------------------------------------ Lightning
def lightning(spec, out):
    """The decoder trained by a Lightning Trainer (automatic optimization: optimizer.step
    with a closure that runs training_step and backward). The recorder starts before fit
    (Lightning moves the model to the GPU) and is attached with its automatic markers once
    the optimizer exists; a callback resets the peak, dumps and stops, and times steps."""
    import torch
    pl = import_lightning()
    rec = common.GpuRecording(spec, out)
    model, make_batch, loss_fn = common.build_model(spec)
    n_rec = spec["warmup"] + spec["recorded"]
    batches = [make_batch() for _ in range(n_rec + spec["timed"])]
    state = {"times": [], "res": {}, "path": None}

    class Module(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = model

        def training_step(self, batch, batch_idx):
            x, y = batch
            return loss_fn(self.model(x), y)

        def configure_optimizers(self):
            return common.make_optimizer(torch, spec["optimizer"], self.parameters())

    class Probe(pl.Callback):
        def on_train_start(self, trainer, module):
            # the inner model: Lightning calls training_step, never the LightningModule's
            # forward, so hooks on the LightningModule itself would place no forward marker
            rec.attach(module.model, trainer.optimizers[0], phases=True)

        def on_train_batch_start(self, trainer, module, batch, batch_idx):
            torch.cuda.synchronize()
            if batch_idx == spec["warmup"]:
                torch.cuda.reset_peak_memory_stats()
            state["t"] = time.perf_counter()

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            torch.cuda.synchronize()
            if batch_idx >= n_rec:
                state["times"].append(time.perf_counter() - state["t"])
            if batch_idx == n_rec - 1:
                state["res"] = {"max_allocated_bytes": int(torch.cuda.max_memory_allocated()),
                                "max_reserved_bytes": int(torch.cuda.max_memory_reserved())}
                state["path"] = rec.dump("recorded")
                rec.stop()

    trainer = pl.Trainer(accelerator="gpu", devices=1, max_steps=len(batches), max_epochs=1,
                         logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, num_sanity_val_steps=0,
                         limit_val_batches=0, callbacks=[Probe()])
    loader = torch.utils.data.DataLoader(batches, batch_size=None, num_workers=0)
    trainer.fit(Module(), train_dataloaders=loader)
    if state["path"] is None:
        rec.stop()
        raise RuntimeError("the Trainer ran %d steps, fewer than %d" % (trainer.global_step, n_rec))
    res = dict(state["res"], n_recorded_steps=spec["recorded"], warmup_steps=spec["warmup"],
               recorder_mode="attach(inner model, optimizer) in a closure loop",
               lightning=getattr(pl, "__version__", None), lightning_module=pl.__name__)
    res.update(rec.report())
    res.update(common.step_times(state["times"]))
    res.update(common.finish_snapshot(state["path"], out))
    return res


# ------------------------------------------------------------------ FSDP
def _fully_shard(torch):
    """FSDP2's fully_shard: torch.distributed.fsdp from about 2.6, _composable.fsdp in 2.4-2.5."""
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        try:
            from torch.distributed._composable.fsdp import fully_shard
        except ImportError:
            raise Skip("FSDP2 (fully_shard) needs torch >= 2.4 (this is %s)" % torch.__version__)
    return fully_shard


def fsdp(spec, out):
    """The decoder under FSDP at world size 1 (NCCL, one process): FSDP2 shards each block and
    the root; FSDP1 wraps the model whole. Whatever sites a one-GPU run shows (FSDP1 switches to
    NO_SHARD at world size 1; newer FSDP2 skips the all-gather collective but keeps its copy-out
    and the reduce-scatter's buffers) check docs/categories-and-phases.md's FSDP rows, which were
    written from the source alone. The markers are placed by hand."""
    import torch
    import torch.distributed as dist
    if not (dist.is_available() and dist.is_nccl_available()):
        raise Skip("torch.distributed with NCCL is not available")
    wrap = _fully_shard(torch) if spec["fsdp"] == 2 else None
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=0, world_size=1)
    try:
        rec = common.GpuRecording(spec, out)
        model, make_batch, loss_fn = common.build_model(spec)
        model.to("cuda")
        if wrap:
            for block in model.blocks.blocks:
                wrap(block)
            wrap(model)
        else:
            from torch.distributed.fsdp import FullyShardedDataParallel
            model = FullyShardedDataParallel(model, use_orig_params=True)
        opt = common.make_optimizer(torch, spec["optimizer"], model.parameters())
        rec.attach(model, opt, phases=False)
        step = common.Step(torch, model, opt, loss_fn, spec["precision"])
        res = common.measure(spec, out, rec, step, make_batch)
        res.update(recorder_mode="manual phases", fsdp_version=spec["fsdp"], world_size=1)
        return res
    finally:
        dist.destroy_process_group()


RUNNERS = {"llama": llama, "compile": compile_point, "cuda_graph": cuda_graph, "oom": oom,
           "lightning": lightning, "fsdp": fsdp}
