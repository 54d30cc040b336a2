#!/usr/bin/env python3
"""One point of the GPU truth run, in its own process (a clean allocator; run.py sets
PYTORCH_CUDA_ALLOC_CONF in the environment before this process starts).

    python3 tools/gpu_truth/point.py --spec JSON --out DIR [--wait-go]
    python3 tools/gpu_truth/point.py --probe

Writes DIR/result.json (always, also when the point fails or is skipped) and, when a
snapshot was recorded, DIR/snapshot.pickle.gz.

On CUDA (lane "gpu", not a dry run): the recorder (python/headroom_record.py, shapes on) is
started before the model touches the GPU, the warm-up steps run, the peak statistics are
reset, the recorded steps run, the snapshot is dumped, the recorder stopped, and the timed
steps run without recording (torch.cuda.synchronize around each; the median is the step time).

On the CPU (lane "cpu", or the dry run): python/headroom_cpu.py's capture records the same
steps (built inside the capture, warm-up + recorded iterations, as cpu_models.run_point does);
max_allocated is the recorder's peak (rounded as the caching allocator rounds), reserved the
same; the timed steps run after the capture, without recording.

--wait-go: import torch (the slow part), then wait for a line on stdin: "go" runs the point,
anything else exits with status "skipped". run.py starts the next GPU point this way while
the current one runs, so the import does not count against the GPU lane.
"""

import argparse
import json
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"), HERE]

import common  # noqa: E402
from common import Skip  # noqa: E402

RESULT = "result.json"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spec", help="the point's spec, JSON (or @FILE)")
    ap.add_argument("--out", help="the point's folder (result.json, snapshot.pickle.gz)")
    ap.add_argument("--wait-go", action="store_true", help="import, then wait for 'go'")
    ap.add_argument("--probe", action="store_true", help="print torch/CUDA facts as JSON")
    args = ap.parse_args(argv)
    if args.probe:
        print(json.dumps(probe()))
        return 0
    if not args.spec or not args.out:
        ap.error("--spec and --out are needed")
    text = args.spec
    if text.startswith("@"):
        with open(text[1:]) as f:
            text = f.read()
    spec = json.loads(text)
    os.makedirs(args.out, exist_ok=True)
    result = run_guarded(spec, args.out, args.wait_go)
    with open(os.path.join(args.out, RESULT), "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    return 0


def probe():
    """torch version, CUDA, device name and memory: run.py decides GPU or dry run from it."""
    info = {"python": sys.version.split()[0]}
    try:
        import torch
        info["torch"] = torch.__version__
        info["cuda"] = bool(torch.cuda.is_available())
        if info["cuda"]:
            info.update(common.cuda_info(torch))
            info["cuda_version"] = getattr(torch.version, "cuda", None)
    except Exception as exc:
        info.update(torch=None, cuda=False, error=repr(exc))
    return info


def run_guarded(spec, out, wait_go):
    """The point, never raising: status ok / skipped / failed, with the error's tail."""
    res = {"name": spec["name"], "status": "failed", "error": None}
    t0 = time.time()
    try:
        threads = int(spec.get("threads") or 0)
        import torch
        if threads > 0:
            torch.set_num_threads(threads)
        res["torch"] = torch.__version__
        preload(spec)
        if wait_go:
            word = sys.stdin.readline().strip()
            if word != "go":
                raise Skip("not started: %s" % (word or "no go"))
        t0 = time.time()
        got = run(spec, out)
        got.setdefault("status", "ok")
        res.update(got)
    except Skip as exc:
        res.update(status="skipped", error=str(exc))
    except BaseException as exc:  # noqa: BLE001 - the result must be written
        res.update(status="failed", error="%s: %s" % (type(exc).__name__, exc),
                   traceback=traceback.format_exc()[-3000:])
    res["wall_s"] = round(time.time() - t0, 3)
    return res


def preload(spec):
    """Imports the kind's heavy library before 'go' (their import is seconds); a missing one
    makes the point skipped."""
    kind = spec["kind"]
    try:
        if kind == "llama":
            import transformers  # noqa: F401
        elif kind == "lightning":
            import special
            special.import_lightning()
    except ImportError as exc:
        raise Skip("%s needs %s: %s" % (spec["name"], "transformers" if kind == "llama"
                                         else "lightning or pytorch_lightning", exc))


def run(spec, out):
    import torch
    cpu = spec.get("dry_run") or spec["lane"] == "cpu"
    kind = spec["kind"]
    if cpu:
        if kind != "family":
            raise Skip(dry_reason(torch, kind))
        return cpu_family(spec, out)
    if not torch.cuda.is_available():
        raise Skip("needs CUDA: torch.cuda.is_available() is False")
    res = common.cuda_info(torch)
    if kind in ("family", "expandable"):
        res.update(gpu_family(spec, out))
    else:
        import special
        res.update(special.RUNNERS[kind](spec, out))
    return res


def dry_reason(torch, kind):
    if kind == "compile" and not hasattr(torch, "compile"):
        return "torch.compile needs torch >= 2.0 (this is %s); needs CUDA" % torch.__version__
    if kind == "expandable":
        return "needs CUDA: expandable_segments is a CUDA caching-allocator setting"
    if kind == "oom":
        return "needs CUDA: torch.cuda.set_per_process_memory_fraction and the OOM observer"
    if kind == "cuda_graph":
        return "needs CUDA: torch.cuda.graphs and their private pools"
    return "needs CUDA: the %s point runs on the GPU only (dry run)" % kind


# ------------------------------------------------------------------ the family, on CUDA
def gpu_family(spec, out):
    import torch
    rec = common.GpuRecording(spec, out)  # before the model touches the GPU
    model, make_batch, loss_fn = common.build_model(spec)
    model.to("cuda")
    opt = common.make_optimizer(torch, spec["optimizer"], model.parameters())
    rec.attach(model, opt, phases=False)  # shapes; the step places the markers by hand
    step = common.Step(torch, model, opt, loss_fn, spec["precision"])
    res = common.measure(spec, out, rec, step, make_batch)
    res["recorder_mode"] = "manual phases, attach(phases=False)"
    if step.scaler is not None:
        res["grad_scaler"] = type(step.scaler).__module__ + "." + type(step.scaler).__name__
    res["alloc_conf_env"] = os.environ.get("PYTORCH_CUDA_ALLOC_CONF")
    return res


# ------------------------------------------------------------------ the family, on the CPU
def cpu_family(spec, out):
    """headroom_cpu's capture of the same steps (cpu_models.train, as run_point does), the
    model built inside the block; amp-bf16 under CUDA's autocast lists, emulated on the CPU
    (python/headroom_autocast.py), since the file stands for the GPU's step."""
    import headroom_cpu
    import cpu_models
    prec = spec["precision"]
    if prec == "amp-fp16":
        raise Skip("amp-fp16 needs CUDA: the CPU recorder runs fp32, bf16 and bf16 autocast "
                   "only")
    auto = "cuda" if prec == "amp-bf16" else "cpu"
    iters = spec["warmup"] + spec["recorded"]
    path = os.path.join(out, "snapshot.pickle")
    kw = common.recorder_config(spec)
    for k in ("micro_batch", "seq", "precision", "optimizer", "checkpoint", "model"):
        kw.pop(k, None)
    kw.update(autocast=auto, iterations=iters)
    with headroom_cpu.capture(path, micro_batch=spec["micro_batch"], seq=spec["seq"],
                              precision=prec, optimizer=spec["optimizer"],
                              checkpoint=spec["checkpointing"], model=spec["family"],
                              **kw) as cap:
        model, make_batch, loss_fn = common.build_model(spec)
        opt = cpu_models.make_optimizer(spec["optimizer"], model.parameters())
        cpu_models.train(model, opt, make_batch, loss_fn, prec, 1, iters, cap, autocast=auto)
    res = {"recorder": "headroom_cpu", "autocast": auto if prec == "amp-bf16" else None,
           "max_allocated_bytes": int(cap.recorded_peak_rounded_bytes),
           "max_reserved_bytes": int(cap.recorded_peak_rounded_bytes),
           "cpu_recorded_peak_bytes": int(cap.recorded_peak_bytes),
           "cpu_oracle_peak_bytes": (None if cap.oracle_peak_bytes is None
                                     else int(cap.oracle_peak_bytes)),
           "n_recorded_steps": spec["recorded"], "warmup_steps": spec["warmup"],
           "peak_note": "the capture's peak over warm-up and recorded steps"}
    times = []
    for _ in range(spec["timed"]):
        t = time.perf_counter()
        cpu_models.train(model, opt, make_batch, loss_fn, prec, 1, 1, None, autocast=auto)
        times.append(time.perf_counter() - t)
    res.update(common.step_times(times))
    res.update(common.finish_snapshot(path, out))
    return res


if __name__ == "__main__":
    sys.exit(main())
