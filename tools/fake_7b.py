#!/usr/bin/python3
"""Record a Llama-7B-shaped training step in fake mode (python/headroom_cpu.py, fake=True).

Usage: /usr/bin/python3 tools/fake_7b.py --out PATH [--checkpoint none|full] [--layers N]
                                         [--seq 4096] [--micro-batch 1] [--iterations 2] [--real]

The model is python/cpu_models_more.py's llama family sized as Llama 2 7B: d_model 4096, 32
layers, 32 heads (no grouped-query attention: 32 kv heads), SwiGLU hidden 11008, vocabulary
32000, untied embedding and head, RMSNorm; its attention is that family's eager one (einsum,
mask, a softmax written out), not a fused kernel. AdamW, forward and loss under
torch.autocast('cpu', dtype=torch.bfloat16) (``--autocast cuda``: CUDA's autocast lists, emulated by
python/headroom_autocast.py, as the target GPU runs them), fp32 weights, micro-batch 1, sequence 4096. The
model, the optimizer and the batch are built inside the fake capture: every tensor is a fake
tensor, nothing of the model's or the activations' size is allocated (the recorded peak is
188 GiB, 106 GiB with --checkpoint full; the run takes seconds and about 300 MB of RSS).
``--real`` records the same step for real (the memory it needs: at 2 layers and sequence 512,
about 12 GB), to hold a fake recording against. ``--iterations 2`` (the default) records a second step, where the optimizer state is alive
during the forward (the steady state).

Prints one JSON object: seconds, max RSS (resource.getrusage), the recorded peak, the bytes
alive at the file's peak by headroom_truth category (parameter, gradient, optimizer_state,
activation, ...) next to the analytic counts:
  parameters = 32000*4096*2 + L*(4*4096*4096 + 3*4096*11008 + 2*4096) + 4096 elements,
  fp32 weights (4 bytes each), gradients the same, AdamW two fp32 moments (8 bytes each) and
  a step counter per parameter tensor. Exit status 77 when torch cannot be imported.
"""
import argparse
import json
import os
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

VOCAB, DIM, HEADS, HIDDEN = 32000, 4096, 32, 11008


def analytic_parameters(layers, vocab=VOCAB, dim=DIM, hidden=HIDDEN):
    return vocab * dim * 2 + layers * (4 * dim * dim + 3 * dim * hidden + 2 * dim) + dim


def at_peak(path):
    """The file's live bytes at its peak (sizes as written: 512-byte rounded), by
    headroom_truth category, and the configuration."""
    import pickle
    with open(path, "rb") as f:
        snap = pickle.load(f)
    cat_of = {t_us: cat for t_us, cat, _phase in snap["headroom_truth"]["allocations"]}
    live, by_cat, total, peak, best = {}, {}, 0, -1, {}
    for e in snap["device_traces"][0]:
        if e["action"] == "alloc":
            cat = cat_of.get(e["time_us"], "unknown")
            live[e["addr"]] = (e["size"], cat)
            by_cat[cat] = by_cat.get(cat, 0) + e["size"]
            total += e["size"]
            if total > peak:
                peak, best = total, dict(by_cat)
        elif e["action"] == "free_completed" and e["addr"] in live:
            size, cat = live.pop(e["addr"])
            by_cat[cat] -= size
            total -= size
    return snap["headroom_config"], peak, best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="the snapshot to write (.pickle)")
    ap.add_argument("--checkpoint", choices=("none", "full"), default="none")
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--micro-batch", type=int, default=1)
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--autocast", choices=("cpu", "cuda"), default="cpu",
                    help="whose autocast lists the step runs under (cuda: emulated, as the target GPU runs them)")
    ap.add_argument("--target", default="h100-80gb", help="the GPU it is meant for (headroom_cpu's target_device)")
    ap.add_argument("--real", action="store_true",
                    help="record for real instead (needs the memory: a check of fake mode at few layers)")
    args = ap.parse_args(argv)
    try:
        import torch
    except Exception as e:  # pragma: no cover
        print("fake_7b: PyTorch is not importable (%s); use /usr/bin/python3" % (e,),
              file=sys.stderr)
        return 77
    import cpu_models
    import cpu_models_more
    import headroom_cpu
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    kw = dict(micro_batch=args.micro_batch, seq=args.seq, precision="amp-bf16",
              optimizer="adamw", checkpoint=args.checkpoint, accum=1, devices=1,
              iterations=args.iterations, model="llama-7b-shaped", family="llama",
              layers=args.layers, fake=not args.real, target_device=args.target, autocast=args.autocast)
    with headroom_cpu.capture(args.out, **kw) as cap:
        model, make_batch, loss_fn = cpu_models_more.build_llama(
            micro_batch=args.micro_batch, seq=args.seq, precision="amp-bf16",
            checkpoint=args.checkpoint, vocab=VOCAB, dim=DIM, heads=HEADS, kv_heads=HEADS,
            hidden=HIDDEN, layers=args.layers)
        opt = cpu_models.make_optimizer("adamw", model.parameters())
        cpu_models.train(model, opt, make_batch, loss_fn, "amp-bf16", 1, args.iterations, cap,
                         autocast=args.autocast)
        n_params = sum(p.numel() for p in model.parameters())
    seconds = time.perf_counter() - t0
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cfg, peak, cats = at_peak(args.out)
    expect = analytic_parameters(args.layers)
    report = {
        "out": args.out, "layers": args.layers, "checkpoint": args.checkpoint,
        "seq": args.seq, "micro_batch": args.micro_batch, "iterations": args.iterations,
        "seconds": round(seconds, 1), "max_rss_bytes": rss_kib * 1024,
        "recorded_peak_bytes": cap.recorded_peak_bytes,
        "recorded_peak_rounded_bytes": cap.recorded_peak_rounded_bytes,
        "allocations": cfg.get("allocations"),
        "parameters_counted": n_params, "parameters_analytic": expect,
        "parameter_bytes_analytic": 4 * expect, "gradient_bytes_analytic": 4 * expect,
        "adamw_state_bytes_analytic": 8 * expect,
        "file_peak_bytes": peak, "at_peak_by_category": cats,
    }
    print(json.dumps(report, indent=1, sort_keys=True))
    if n_params != expect:
        print("fake_7b: the model has %d parameters, the analytic count is %d"
              % (n_params, expect), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
