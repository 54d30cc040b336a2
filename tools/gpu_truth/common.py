"""Helpers shared by point.py and special.py: the recorder (or a plain fallback), one training
step with phase markers, the warm-up / recorded / timed sequence, and the snapshot's gzip.

Every 2.x-only API is looked up with getattr/try, so that the same code imports and runs under
Debian's torch 1.13 (the dry run) and PyTorch 2.11 on the GPU machine.
"""

import contextlib
import gzip
import os
import pickle
import shutil
import statistics
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PYDIR = os.path.join(ROOT, "python")
SNAPSHOT = "snapshot.pickle.gz"
# a snapshot larger than this is gzipped but not loaded again to count its entries
INSPECT_MAX_BYTES = 96 << 20


class Skip(Exception):
    """The point cannot run here; the message says why (written as status "skipped")."""


class NoMarks(object):
    """Marker stand-in for the timed steps: nothing recorded, nothing annotated."""

    def phase(self, name):
        return contextlib.nullcontext()

    def iteration(self):
        return contextlib.nullcontext()


NO_MARKS = NoMarks()


class PhaseTracker(object):
    """Wraps a marker object and remembers the innermost phase open (where an OOM raised)."""

    def __init__(self, marks):
        self.marks, self.current = marks, None

    @contextlib.contextmanager
    def phase(self, name):
        outer, self.current = self.current, name
        with self.marks.phase(name):
            yield
        self.current = outer  # not restored on an exception: the OOM's phase stays readable

    def iteration(self):
        return self.marks.iteration()


# ------------------------------------------------------------------ recording on CUDA
class GpuRecording(object):
    """python/headroom_record.py's Recorder, started before the model touches the GPU (so its
    parameters have stacks). If the Recorder cannot record under this torch, a plain
    ``_record_memory_history`` with record_function markers stands in (recorder "plain"), so
    the point still yields a snapshot and the failure is reported, not fatal."""

    def __init__(self, spec, out):
        import torch
        self.torch, self.dir = torch, os.path.join(out, "rec")
        self.error, self.rec, self._stopped, self._plain_iter = None, None, False, 0
        self._catch = warnings.catch_warnings(record=True)
        self._caught = self._catch.__enter__()
        warnings.simplefilter("always")
        try:
            from headroom_record import Recorder
            self.rec = Recorder(self.dir, micro_batch=spec.get("micro_batch"),
                                seq=spec.get("seq"), shapes=True, verbose=False,
                                config=recorder_config(spec))
            self.rec.start()
            if not self.rec.active:
                raise RuntimeError("Recorder.start() did not activate (see warnings)")
            self.name = "headroom_record"
        except Exception as exc:  # record the failure, keep the point alive
            self.error = "headroom_record: %s: %s" % (type(exc).__name__, exc)
            self.rec = None
            self.name = "plain"
            self._plain_start()

    def _plain_start(self):
        mem = self.torch.cuda.memory
        try:
            mem._record_memory_history(enabled="all", context="all", stacks="python",
                                       max_entries=1000000)
        except TypeError:  # 2.0's signature
            mem._record_memory_history(True)

    def attach(self, model, optimizer, phases=False):
        """The recorder's hooks; if attaching fails, the point goes on without them (the
        failure is the finding, the step's numbers still count)."""
        if self.rec is None:
            return
        try:
            self.rec.attach(model, optimizer, phases=phases)
        except Exception as exc:
            self.error = "attach: %s: %s" % (type(exc).__name__, exc)
            try:
                self.rec.attach(None, None, backward=False, phases=False)
            except Exception:
                pass

    def phase(self, name):
        if self.rec is not None:
            return self.rec.phase(name)
        return self.torch.profiler.record_function("## %s ##" % name)

    def iteration(self):
        if self.rec is not None:
            return self.rec.iteration()
        self._plain_iter += 1  # the names Headroom reads, as the recorder writes them
        return self.torch.profiler.record_function("headroom.iteration#%d"
                                                   % (self._plain_iter - 1))

    def dumps(self):
        return list(self.rec.dumps) if self.rec is not None else []

    def dump(self, reason="recorded"):
        """The recorder's dump; a plain snapshot when it writes none (said in the result)."""
        if self.rec is not None:
            path = self.rec.dump(reason)
            if path:
                return path
            self.error = (self.error or "") + " dump wrote nothing: plain snapshot instead"
            self.name = "plain"
        os.makedirs(self.dir, exist_ok=True)
        path = os.path.join(self.dir, "plain_%s.pickle" % reason)
        with open(path, "wb") as f:
            pickle.dump(self.torch.cuda.memory._snapshot(), f, protocol=4)
        return path

    def stop(self):
        if self._stopped:
            return
        self._stopped = True
        try:
            if self.rec is not None:
                self.rec.stop()
            else:
                self.torch.cuda.memory._record_memory_history(enabled=None)
        except Exception as exc:
            self.error = (self.error or "") + " stop: %r" % (exc,)
        self._catch.__exit__(None, None, None)

    def report(self):
        """What the result gets: recorder name, its warnings, the join's counts, errors."""
        out = {"recorder": self.name,  # every warning while recording, the recorder's too
               "warnings_while_recording": sorted({str(w.message)[:300]
                                                   for w in self._caught})[:40]}
        if self.error:
            out["recorder_error"] = self.error
        if self.rec is not None and self.rec.tensor_keys is not None:
            keys = self.rec.tensor_keys
            out["tensor_keys"] = {k: v for k, v in keys.items()
                                  if isinstance(v, (int, float, str)) or v is None}
        return out


def recorder_config(spec):
    """headroom_config for the dump: the point's levers, so the file says what it is."""
    keys = ("family", "micro_batch", "seq", "precision", "optimizer", "kind", "alloc_conf")
    cfg = {k: spec[k] for k in keys if spec.get(k) is not None}
    cfg["checkpoint"] = spec.get("checkpointing", "none")
    cfg["model"] = spec.get("family")
    cfg["point"] = spec["name"]
    cfg["source"] = "tools/gpu_truth"
    return cfg


# ------------------------------------------------------------------ models and steps
def build_model(spec):
    """(model, make_batch, loss_fn) from python/cpu_models.py, with the spec's dims. The
    builder sees 'fp32' for the autocast precisions: autocast leaves the model in fp32."""
    import cpu_models
    prec = spec["precision"]
    builder = cpu_models.BUILDERS[spec["family"]]
    dims = dict(spec.get("dims") or {})
    if "widths" in dims:
        dims["widths"] = tuple(dims["widths"])
    return builder(micro_batch=spec["micro_batch"], seq=spec["seq"],
                   precision="bf16" if prec == "bf16" else "fp32",
                   checkpoint=spec.get("checkpointing", "none"), seed=0, **dims)


def make_optimizer(torch, name, params, capturable=False):
    params = list(params)
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-3)
    if capturable:  # CUDA graphs: AdamW's step counters must live on the device
        try:
            return torch.optim.AdamW(params, lr=1e-3, capturable=True)
        except TypeError:
            pass
    return torch.optim.AdamW(params, lr=1e-3)


def grad_scaler(torch):
    """torch.amp.GradScaler('cuda') (2.3+), else torch.cuda.amp.GradScaler (deprecated)."""
    amp = getattr(torch, "amp", None)
    if amp is not None and hasattr(amp, "GradScaler"):
        try:
            return amp.GradScaler("cuda")
        except TypeError:
            pass
    return torch.cuda.amp.GradScaler()


def autocast(torch, precision):
    if precision == "amp-bf16":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    if precision == "amp-fp16":
        return torch.autocast("cuda", dtype=torch.float16)
    return contextlib.nullcontext()


class Step(object):
    """One optimizer step on CUDA, the batch moved to the device inside the iteration (as a
    loader's batch is), forward and loss under autocast, GradScaler for amp-fp16."""

    def __init__(self, torch, model, opt, loss_fn, precision):
        self.torch, self.model, self.opt, self.loss_fn = torch, model, opt, loss_fn
        self.precision = precision
        self.scaler = grad_scaler(torch) if precision == "amp-fp16" else None

    def __call__(self, x, y, marks):
        torch = self.torch
        with marks.iteration():
            x, y = x.to("cuda", non_blocking=True), y.to("cuda", non_blocking=True)
            with autocast(torch, self.precision):
                with marks.phase("forward"):
                    out = self.model(x)
                with marks.phase("loss"):
                    loss = self.loss_fn(out, y)
            del out
            with marks.phase("backward"):
                (self.scaler.scale(loss) if self.scaler else loss).backward()
            del loss
            with marks.phase("optimizer"):
                if self.scaler:
                    self.scaler.step(self.opt)
                    self.scaler.update()
                else:
                    self.opt.step()
                self.opt.zero_grad(set_to_none=True)


def on_device(torch, batch):
    return tuple(t.to("cuda") for t in batch)


def measure(spec, out, rec, step, make_batch, marks=None):
    """Warm-up (recorded in the trace too: the recorder runs from the start), the peak stats
    reset, the recorded steps, the dump, the recorder stopped, then timed steps without
    recording. ``marks``: what the recorded steps annotate with (None: no manual markers,
    when the recorder's attach() places them)."""
    import torch
    marks = rec if marks is None else marks
    for _ in range(spec["warmup"]):
        step(*make_batch(), marks)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for _ in range(spec["recorded"]):
        step(*make_batch(), marks)
    torch.cuda.synchronize()
    res = {"recorded_s": round(time.perf_counter() - t0, 4),
           "max_allocated_bytes": int(torch.cuda.max_memory_allocated()),
           "max_reserved_bytes": int(torch.cuda.max_memory_reserved()),
           "n_recorded_steps": spec["recorded"], "warmup_steps": spec["warmup"]}
    path = rec.dump("recorded")
    rec.stop()
    res.update(rec.report())
    res.update(finish_snapshot(path, out))  # before the timed steps: kept if they fail
    res.update(timed_steps(torch, spec, step, make_batch))
    return res


def timed_steps(torch, spec, step, make_batch):
    """Median step time without recording; batches staged on the device beforehand."""
    staged = [on_device(torch, make_batch()) for _ in range(spec["timed"])]
    times = []
    for x, y in staged:
        torch.cuda.synchronize()
        t = time.perf_counter()
        step(x, y, NO_MARKS)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    return step_times(times)


def step_times(times):
    if not times:
        return {"step_time_s": None, "step_times_s": []}
    return {"step_time_s": round(statistics.median(times), 6),
            "step_times_s": [round(t, 6) for t in times], "timed_steps": len(times)}


def cuda_info(torch):
    try:
        props = torch.cuda.get_device_properties(0)
        return {"device": torch.cuda.get_device_name(0), "total_memory": int(props.total_memory)}
    except Exception as exc:
        return {"device": "unknown (%r)" % (exc,)}


# ------------------------------------------------------------------ snapshots
def finish_snapshot(path, out):
    """Gzips ``path`` to out/snapshot.pickle.gz (deleting the raw pickle) and counts what the
    snapshot holds; returns the result keys."""
    if not path or not os.path.exists(path):  # the numbers stay; the point says it failed
        return {"snapshot": None, "status": "failed",
                "error": "no snapshot: the dump wrote nothing (%r)" % (path,)}
    raw = os.path.getsize(path)
    info = inspect_snapshot(path) if raw <= INSPECT_MAX_BYTES else {}
    dst = os.path.join(out, SNAPSHOT)
    with open(path, "rb") as src, gzip.open(dst, "wb", compresslevel=6) as gz:
        shutil.copyfileobj(src, gz, 1 << 20)
    os.unlink(path)
    info.update({"snapshot": SNAPSHOT, "snapshot_bytes": raw, "gz_bytes": os.path.getsize(dst)})
    return info


def inspect_snapshot(path):
    """Counts for the manifest: trace entries, segments, expandable segments (does the alloc
    conf reach the allocator?), annotations, entries with headroom_tensor."""
    try:
        with open(path, "rb") as f:
            snap = pickle.load(f)
    except Exception as exc:
        return {"snapshot_inspect_error": repr(exc)[:300]}
    if not isinstance(snap, dict):
        return {}
    traces = snap.get("device_traces") or []
    entries = [e for tr in traces for e in (tr or [])]
    segs = snap.get("segments") or []
    return {"trace_entries": len(entries),
            "tensor_keyed_allocs": sum(1 for e in entries if isinstance(e, dict)
                                       and "headroom_tensor" in e),
            "segments": len(segs),
            "expandable_segments_seen": any(bool(s.get("is_expandable")) for s in segs
                                            if isinstance(s, dict)),
            "annotations": len(snap.get("external_annotations") or [])}
