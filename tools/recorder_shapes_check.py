#!/usr/bin/env python3
"""Check the headroom_tensor keys that python/headroom_cpu.py writes (issue 30, point 1).

Usage:
  /usr/bin/python3 tools/recorder_shapes_check.py [--out DIR] [--families all|a,b]
                                                  [--read DIR] [--cli PATH | --no-cli]
                                                  [--cost N] [--json FILE]

Records the base point of each family of the CPU matrix (tools/cpu_matrix.py's BASE:
micro-batch 2, the family's base sequence, fp32, AdamW, 2 iterations, model built inside the
capture; decoder_infer forward only) into DIR/<family>/base.pickle (DIR defaults to
build/recorder-shapes), each in a fresh process as cpu_matrix.py does, or with --read DIR
reads DIR/<family>/base.pickle (a cpu_matrix.py output directory, say) without recording.

Per family it prints:
  allocs    the number of alloc entries in device_traces[0]
  keyed     the share that carry headroom_tensor
  exact     the share of keyed entries whose shape matches the entry's size exactly:
            round_size(prod(shape) * itemsize) == size, round_size being the CUDA caching
            allocator's 512-byte rounding the recorder writes (headroom_cpu.round_size)
  smaller   the share whose shape is smaller than the size (a storage that holds more than
            the first tensor made for it); "larger" (a shape that does not fit its
            allocation) must be 0
  module    the share of keyed entries with a module name (not null)
  dims      entries whose dims do not list exactly the indices of the shape equal to the
            recorded micro_batch / seq (must be 0)
  truth     entries whose kind disagrees with headroom_truth's category (must be 0; the
            equivalences are in kind_agrees())
  stack     entries with a module whose stack disagrees (must be 0): the innermost frame
            named "forward" (autograd's and checkpoint's own left out) is not inside the
            forward of the named module's class (the family's model built again to find it)
  peak      with --cli (default: build/release/app/headroom-cli when it exists): "same" when
            `headroom-cli summary FILE --json` gives every device the same
            peak_allocated_bytes as for a copy of the file without the keys

With --cli it also scores Headroom's stack-only module attribution against the recorder's
module (issue 30): `headroom-cli classify --json` on the copy without the keys gives each
allocation's module_forward (the frame Module._call_impl called, innermost module first), on
the file itself the recorded module; the rows are joined by (device, start_event). For the
recorded module M (its class's forward found in the family's model built again, as for
`stack`), per family and over all of them, over allocations and over bytes:
  named     allocations the recorder names a module for ("" the root module included)
  hr-agree  the share of named ones whose module_forward's file:line lies inside
            type(M).forward's source (inspect.getsourcelines, same file by realpath), by
            count and by bytes
  hr-other  named ones whose module_forward is another forward (an outer or inner module)
  hr-missed named ones with no module_forward
  hr-extra  ones the recorder names no module for but that have a module_forward
A module the rebuilt model does not list (a `<ClassName>.sub` name) is counted apart as
unresolved. These are measurements: they do not fail the run, but a module on the copy
without the keys does (classify must then see only the stack).

--cost N times N recordings of each base point with shapes on and N with shapes off,
interleaved, each in a fresh interpreter, with the oracle off (the recorder alone: the
strictest ratio), and prints the medians of run_point's wall time and of the process's CPU
time (build, the two iterations and the file written) and their ratios. The machine's other
load shows up as noise in the wall time: run it on a quiet machine.

Exit status: 1 when a shape is larger than its allocation, a dims, truth or stack
disagreement, a peak that differs, a recorded module on the copy without the keys, rows of
the two classify runs that do not join, or no keys at all (hr-* disagreement does not
count); 77 when torch cannot be imported.
"""
import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PYDIR = os.path.join(ROOT, "python")
sys.path.insert(0, PYDIR)
sys.path.insert(0, HERE)

DEFAULT_OUT = os.path.join(ROOT, "build", "recorder-shapes")
DEFAULT_CLI = os.path.join(ROOT, "build", "release", "app", "headroom-cli")
ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "complex128": 16,
            "complex64": 8, "complex32": 4, "int64": 8, "int32": 4, "int16": 2, "int8": 1,
            "uint8": 1, "bool": 1, "quint8": 1, "qint8": 1, "qint32": 4,
            "float8_e4m3fn": 1, "float8_e5m2": 1}


def round_size(size):
    if size < 512:
        return 512
    return (size + 511) // 512 * 512


def prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


def kind_agrees(kind, truth):
    """headroom_tensor's kind against headroom_truth's category of the same entry: the same,
    except that a buffer is "parameter" in the truth and that a module's output is an
    activation the truth may call temporary (freed in the step: no backward kept it) or
    unknown (alive at the end)."""
    if kind == truth:
        return True
    if kind == "buffer":
        return truth == "parameter"
    if kind == "activation":
        return truth in ("temporary", "unknown")
    return False


def check_snapshot(snap):
    """The counts of one snapshot (a dict): see the module docstring."""
    cfg = snap.get("headroom_config", {})
    mb, seq = cfg.get("micro_batch"), cfg.get("seq")
    trace = snap["device_traces"][0]
    allocs = [e for e in trace if e["action"] == "alloc"]
    truth = snap.get("headroom_truth", {}).get("allocations")
    r = {"allocs": len(allocs), "keyed": 0, "exact": 0, "smaller": 0, "larger": 0,
         "unknown_dtype": 0, "module": 0, "dims_wrong": 0, "truth_wrong": 0,
         "truth_rows": truth is not None, "kinds": {}, "version": snap.get("headroom_tensor_keys"),
         "examples_larger": [], "examples_truth": []}
    for i, e in enumerate(allocs):
        k = e.get("headroom_tensor")
        if k is None:
            continue
        r["keyed"] += 1
        r["kinds"][k["kind"]] = r["kinds"].get(k["kind"], 0) + 1
        if k["module"] is not None:
            r["module"] += 1
        shape = k["shape"]
        want_b = [j for j, n in enumerate(shape) if mb is not None and n == mb]
        want_s = [j for j, n in enumerate(shape) if seq is not None and n == seq]
        if k["dims"] != {"batch": want_b, "seq": want_s}:
            r["dims_wrong"] += 1
        item = ITEMSIZE.get(k["dtype"])
        if item is None:
            r["unknown_dtype"] += 1
        else:
            n = round_size(prod(shape) * item)
            if n == e["size"]:
                r["exact"] += 1
            elif n < e["size"]:
                r["smaller"] += 1
            else:
                r["larger"] += 1
                if len(r["examples_larger"]) < 5:
                    r["examples_larger"].append([shape, k["dtype"], e["size"], k["module"]])
        if truth is not None and i < len(truth):
            if truth[i][0] != e["time_us"] or not kind_agrees(k["kind"], truth[i][1]):
                r["truth_wrong"] += 1
                if len(r["examples_truth"]) < 5:
                    r["examples_truth"].append([k["kind"], truth[i][1], shape, k["module"]])
    return r


def _forward_spans(family, cfg):
    """qualified name -> (file, first line, last line) of its class's forward."""
    import cpu_models
    model, _, _ = cpu_models.build(family, cfg.get("micro_batch") or 2, cfg.get("seq"),
                                   "fp32", "none", 0)
    return {name: _span_of(type(m).forward) for name, m in model.named_modules()}


def _span_of(f):
    import inspect
    try:
        lines, start = inspect.getsourcelines(f)
        return (inspect.getsourcefile(f), start, start + len(lines) - 1)
    except (OSError, TypeError):
        return None


def module_span(spans, name):
    """(file, first, last line) of the forward of the recorded module ``name``'s class: a
    qualified name of the rebuilt model, or ``<ClassName>`` (a torch.nn module the CPU
    recorder saw called outside the model); None when neither resolves."""
    if name in spans:
        return spans[name]
    if name.startswith("<") and name.endswith(">"):
        import torch.nn
        cls = getattr(torch.nn, name[1:-1], None)
        if isinstance(cls, type) and hasattr(cls, "forward"):
            return _span_of(cls.forward)
    return None


_NOT_A_MODULE = ("torch/autograd/function.py", "torch/utils/checkpoint.py")


def stack_disagreements(snap, family, spans=None):
    """Entries with a module whose innermost module forward frame is elsewhere."""
    if spans is None:
        spans = _forward_spans(family, snap.get("headroom_config", {}))
    bad = 0
    for e in snap["device_traces"][0]:
        k = e.get("headroom_tensor")
        if not k or k["module"] is None:
            continue
        fr = next((f for f in e["frames"] if f["name"] == "forward" and not
                   f["filename"].replace(os.sep, "/").endswith(_NOT_A_MODULE)), None)
        sp = spans.get(k["module"])
        if not (fr and sp and fr["filename"] == sp[0] and sp[1] <= fr["line"] <= sp[2]):
            bad += 1
    return bad


def strip_keys(snap):
    out = dict(snap)
    out.pop("headroom_tensor_keys", None)
    out["device_traces"] = [[{k: v for k, v in e.items() if k != "headroom_tensor"}
                             for e in dev] for dev in snap["device_traces"]]
    return out


def cli_peaks(cli, path):
    out = subprocess.run([cli, "summary", path, "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("%s summary %s: exit %d: %s" % (cli, path, out.returncode,
                                                           out.stderr.strip()[:500]))
    return [d["peak_allocated_bytes"] for d in json.loads(out.stdout)["devices"]]


def write_stripped(snap):
    """A temporary copy of the snapshot without the keys: its path (the caller unlinks it)."""
    fd, tmp = tempfile.mkstemp(suffix=".pickle")
    with os.fdopen(fd, "wb") as f:
        pickle.dump(strip_keys(snap), f, protocol=4)
    return tmp


def cli_classify(cli, path):
    """`headroom-cli classify --json` rows, each with its "device" added."""
    out = subprocess.run([cli, "classify", "--json", path], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("%s classify --json %s: exit %d: %s" % (
            cli, path, out.returncode, out.stderr.strip()[:500]))
    rows = []
    for d in json.loads(out.stdout)["devices"]:
        for r in d["allocations"]:
            rows.append(dict(r, device=d["device"]))
    return rows


def _row_key(r):
    # start_event is unique per device for allocations born in the trace; those alive
    # before it (-1) share it, their address tells them apart
    return (r["device"], r["start_event"], r["addr"] if r["start_event"] < 0 else None)


def parse_frame(text):
    """"file:line:function" -> (file, line), None for null or an unreadable one."""
    if text is None:
        return None
    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    return parts[0], int(parts[1])


def same_source(recorded, here):
    """Whether a file named in a recording is this checkout's file: the same path, or, for a
    file recorded in another checkout (the committed test data), the same path below the
    repository root (python/cpu_models_more.py)."""
    if os.path.realpath(recorded) == os.path.realpath(here):
        return True
    rel = os.path.relpath(os.path.realpath(here), ROOT)
    return not rel.startswith("..") and recorded.replace(os.sep, "/").endswith("/" + rel.replace(os.sep, "/"))


def in_span(frame, span):
    if frame is None or span is None:
        return False
    return same_source(frame[0], span[0]) and span[1] <= frame[1] <= span[2]


ATTRIBUTION = ("agree", "other", "missed", "extra", "unresolved")


def attribution(recorded_rows, stack_rows, spans, n_examples=3):
    """Headroom's stack-only module answer (``stack_rows``: classify on the copy without the
    keys) against the recorder's module (``recorded_rows``: classify on the file), joined by
    (device, start_event). ``spans`` maps qualified names to their class's forward (see
    module_span). Returns the counts (and bytes) of ATTRIBUTION plus ``named``, and
    ``stripped_named`` (rows of the copy that still show a recorded module),
    ``unjoined`` (rows of either run without a partner) and examples of each disagreement."""
    r = {"named": 0, "named_bytes": 0, "stripped_named": 0, "unjoined": 0, "examples": {}}
    for k in ATTRIBUTION:
        r[k] = r[k + "_bytes"] = 0
    stack = {}
    for s in stack_rows:
        if s["module"] is not None:
            r["stripped_named"] += 1
        stack[_row_key(s)] = s
    joined = set()
    for t in recorded_rows:
        key = _row_key(t)
        s = stack.get(key)
        if s is None or s["bytes"] != t["bytes"] or s["addr"] != t["addr"]:
            r["unjoined"] += 1
            continue
        joined.add(key)
        m, fwd = t["module"], s["module_forward"]
        if m is None:
            if fwd is None:
                continue
            what = "extra"
        else:
            r["named"] += 1
            r["named_bytes"] += t["bytes"]
            span = module_span(spans, m)
            if span is None:
                what = "unresolved"
            elif fwd is None:
                what = "missed"
            elif in_span(parse_frame(fwd), span):
                what = "agree"
            else:
                what = "other"
        r[what] += 1
        r[what + "_bytes"] += t["bytes"]
        if what != "agree":
            ex = r["examples"].setdefault(what, [])
            if len(ex) < n_examples:
                ex.append({"device": t["device"], "start_event": t["start_event"],
                           "bytes": t["bytes"], "module": m, "module_forward": fwd,
                           "category": t.get("category"), "phase": t.get("phase")})
    r["unjoined"] += len(stack) - len(joined)
    return r


def _record(job):
    """One recording in a worker process: returns (wall seconds, CPU seconds of the
    process, seconds spent building the keys at the end)."""
    family, path, shapes, oracle = job
    import torch
    import cpu_matrix
    import cpu_models
    torch.set_num_threads(1)
    levers = cpu_matrix.point_levers(family, {})
    t0, c0 = time.perf_counter(), time.process_time()
    cap = cpu_models.run_point(path, family, point="base", oracle=oracle, shapes=shapes, **levers)
    return time.perf_counter() - t0, time.process_time() - c0, cap.shapes_seconds


def run_jobs(jobs, n_workers, fresh=False):
    """Each job in a process of its own: forked from this one, or with ``fresh`` a new
    interpreter (the timings: a forked child's garbage collector also walks the heap it
    inherited, which made an extra collection cost up to 18% of the LSTM's step)."""
    import multiprocessing
    ctx = multiprocessing.get_context("spawn" if fresh else "fork")
    with ctx.Pool(max(1, n_workers), maxtasksperchild=1) as pool:
        return pool.map(_record, jobs, chunksize=1)


def pct(a, b):
    return "%6.1f%%" % (100.0 * a / b) if b else "     -"


def print_attribution(fams, results):
    """The table of Headroom's stack-only module attribution against the recorder's."""
    keys = ["named", "named_bytes"] + [k + s for k in ATTRIBUTION for s in ("", "_bytes")]
    rows = [(f, results[f]["attribution"]) for f in fams]
    rows.append(("all", {k: sum(a[k] for _, a in rows) for k in keys}))
    print("\nstack-only module attribution (headroom-cli classify on the copy without the keys) "
          "against the recorder's module")
    print("%-13s %6s %9s %9s %8s %9s %9s" % (
        "family", "named", "hr-agree", "by bytes", "hr-other", "hr-missed", "hr-extra"))
    for f, a in rows:
        print("%-13s %6d %9s %9s %8d %9d %9d" % (
            f, a["named"], pct(a["agree"], a["named"]), pct(a["agree_bytes"], a["named_bytes"]),
            a["other"], a["missed"], a["extra"]))
    for f, a in rows[:-1]:
        if a["unresolved"]:
            print("%s: %d named allocations whose module the rebuilt model does not list"
                  % (f, a["unresolved"]))
        for what, ex in sorted(a["examples"].items()):
            for e in ex[:1]:
                print("  %s %s: start_event %d, %d bytes, %s, module %r, module_forward %s" % (
                    f, what, e["start_event"], e["bytes"], e["category"], e["module"],
                    e["module_forward"]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--families", default="all")
    ap.add_argument("--read", default="", help="read DIR/<family>/base.pickle, record nothing")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--cli", default=DEFAULT_CLI)
    ap.add_argument("--no-cli", action="store_true")
    ap.add_argument("--cost", type=int, default=0, metavar="N",
                    help="also time N recordings per family with shapes on and off")
    ap.add_argument("--json", default="", help="write the results to this file")
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError as e:
        print("recorder_shapes_check: PyTorch is not importable (%s); on Debian 12 install "
              "python3-torch and run with /usr/bin/python3" % e, file=sys.stderr)
        return 77
    import cpu_matrix
    fams = [f for f in args.families.split(",") if f]
    if "all" in fams:
        fams = list(cpu_matrix.ALL_FAMILIES)
    for f in fams:
        if f not in cpu_matrix.ALL_FAMILIES:
            ap.error("unknown family %r (families: %s)" % (f, ", ".join(cpu_matrix.ALL_FAMILIES)))
    base = os.path.abspath(args.read or args.out)
    paths = {f: os.path.join(base, f, "base.pickle") for f in fams}
    if not args.read:
        for p in paths.values():
            os.makedirs(os.path.dirname(p), exist_ok=True)
        t0 = time.perf_counter()
        run_jobs([(f, paths[f], True, True) for f in fams], args.jobs)
        print("recorded %d base points in %.1f s into %s (torch %s)"
              % (len(fams), time.perf_counter() - t0, base, torch.__version__))
    cli = None if args.no_cli else args.cli
    if cli and not os.path.exists(cli):
        print("recorder_shapes_check: no %s: the peak check and the module attribution "
              "score are skipped" % cli)
        cli = None
    results, bad = {}, []
    print("%-13s %6s %8s %8s %8s %7s %8s %5s %6s %6s %6s" % (
        "family", "allocs", "keyed", "exact", "smaller", "larger", "module", "dims",
        "truth", "stack", "peak"))
    for f in fams:
        with open(paths[f], "rb") as fh:
            snap = pickle.load(fh)
        r = check_snapshot(snap)
        spans = _forward_spans(f, snap.get("headroom_config", {}))
        r["stack_wrong"] = stack_disagreements(snap, f, spans)
        peak = "-"
        if cli:
            tmp = write_stripped(snap)
            try:
                w, wo = cli_peaks(cli, paths[f]), cli_peaks(cli, tmp)
                hr = attribution(cli_classify(cli, paths[f]), cli_classify(cli, tmp), spans)
            finally:
                os.unlink(tmp)
            r["cli_peak"], r["cli_peak_without_keys"] = w, wo
            r["attribution"] = hr
            peak = "same" if w == wo else "DIFF"
            if w != wo:
                bad.append("%s: the CLI's peak is %s with the keys, %s without" % (f, w, wo))
            if hr["stripped_named"]:
                bad.append("%s: classify shows a recorded module on %d rows of the copy "
                           "without the keys" % (f, hr["stripped_named"]))
            if hr["unjoined"]:
                bad.append("%s: %d classify rows of the file and its copy without the keys "
                           "do not join" % (f, hr["unjoined"]))
        results[f] = r
        keyed = r["keyed"]
        print("%-13s %6d %8s %8s %8s %7d %8s %5d %6s %6d %6s" % (
            f, r["allocs"], pct(keyed, r["allocs"]), pct(r["exact"], keyed),
            pct(r["smaller"], keyed), r["larger"], pct(r["module"], keyed), r["dims_wrong"],
            r["truth_wrong"] if r["truth_rows"] else "-", r["stack_wrong"], peak))
        if r["version"] != 1 or not keyed:
            bad.append("%s: headroom_tensor_keys is %r, %d entries keyed"
                       % (f, r["version"], keyed))
        if r["larger"]:
            bad.append("%s: %d shapes larger than their allocation, e.g. %s"
                       % (f, r["larger"], r["examples_larger"]))
        if r["dims_wrong"]:
            bad.append("%s: %d entries with wrong dims" % (f, r["dims_wrong"]))
        if r["stack_wrong"]:
            bad.append("%s: %d modules disagree with their stacks" % (f, r["stack_wrong"]))
        if r["truth_wrong"]:
            bad.append("%s: %d kinds disagree with headroom_truth, e.g. %s"
                       % (f, r["truth_wrong"], r["examples_truth"]))
    tot = {k: sum(r[k] for r in results.values()) for k in
           ("allocs", "keyed", "exact", "smaller", "larger", "module", "dims_wrong",
            "truth_wrong", "stack_wrong")}
    print("%-13s %6d %8s %8s %8s %7d %8s %5d %6d %6d" % (
        "all", tot["allocs"], pct(tot["keyed"], tot["allocs"]), pct(tot["exact"], tot["keyed"]),
        pct(tot["smaller"], tot["keyed"]), tot["larger"], pct(tot["module"], tot["keyed"]),
        tot["dims_wrong"], tot["truth_wrong"], tot["stack_wrong"]))
    kinds = {}
    for r in results.values():
        for k, n in r["kinds"].items():
            kinds[k] = kinds.get(k, 0) + n
    print("kinds: " + ", ".join("%s %d" % kv for kv in sorted(kinds.items(), key=lambda x: -x[1])))
    if cli:
        print_attribution(fams, results)

    cost = {}
    if args.cost > 0:
        tmp = tempfile.mkdtemp(prefix="shapes-cost-")
        jobs = []
        for f in fams:
            for i in range(args.cost):
                for on in (True, False):
                    jobs.append((f, os.path.join(tmp, "%s-%d-%d.pickle" % (f, i, on)), on, False))
        t0 = time.perf_counter()
        res = run_jobs(jobs, 1, fresh=True)  # one at a time: the timing wants no neighbour
        print("\ncost: %d recordings in %.1f s, one at a time, oracle off, one thread"
              % (len(jobs), time.perf_counter() - t0))
        print("medians of %d; wall: elapsed time, cpu: the process's CPU time (what the "
              "recorder costs, less sensitive to other load)" % args.cost)
        print("%-13s %9s %9s %7s   %9s %9s %7s %8s" % (
            "family", "wall on", "wall off", "ratio", "cpu on", "cpu off", "ratio", "keys"))
        ratios = []
        for f in fams:
            mine = [(j[2], r) for j, r in zip(jobs, res) if j[0] == f]
            m = {}
            for i, what in ((0, "wall"), (1, "cpu")):
                for on in (True, False):
                    m[what, on] = statistics.median(r[i] for o, r in mine if o == on)
            keys = statistics.median(r[2] for o, r in mine if o)
            cost[f] = {"runs": [[o] + list(r) for o, r in mine], "keys_s": keys,
                       "median_wall_on_s": m["wall", True], "median_wall_off_s": m["wall", False],
                       "median_cpu_on_s": m["cpu", True], "median_cpu_off_s": m["cpu", False]}
            ratios.append(m["cpu", True] / m["cpu", False])
            print("%-13s %6.1f ms %6.1f ms %+6.1f%%   %6.1f ms %6.1f ms %+6.1f%% %5.1f ms" % (
                f, 1e3 * m["wall", True], 1e3 * m["wall", False],
                100.0 * (m["wall", True] / m["wall", False] - 1),
                1e3 * m["cpu", True], 1e3 * m["cpu", False],
                100.0 * (m["cpu", True] / m["cpu", False] - 1), 1e3 * keys))
        print("cpu ratio of the medians: median %+.1f%%, largest %+.1f%%"
              % (100.0 * (statistics.median(ratios) - 1), 100.0 * (max(ratios) - 1)))
        for name in os.listdir(tmp):
            os.unlink(os.path.join(tmp, name))
        os.rmdir(tmp)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"torch_version": str(torch.__version__), "families": results,
                       "cost": cost}, fh, indent=1, sort_keys=True)
            fh.write("\n")
    for b in bad:
        print("recorder_shapes_check: " + b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
