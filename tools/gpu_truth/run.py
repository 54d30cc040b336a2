#!/usr/bin/env python3
"""The GPU truth run (issue 52): every point in its own process, within a time budget, packed
for the trip back from the device machine.

    python3 tools/gpu_truth/run.py --out DIR [--budget-s 400] [--dry-run] [--only NAME,...]
                                   [--jobs N] [--no-cpu] [--max-part-mib 15.5]

Two lanes run side by side:
* the GPU lane, one point at a time (step times are only comparable alone on the device):
  the four families' bases and levers, Llama sdpa/eager, then OOM, expandable segments,
  torch.compile, a CUDA graph and Lightning. The next point's process is started while the
  current one runs and waits after `import torch` for a "go" on its stdin, so the import is
  off the lane's clock. The lane launches no point after budget - cpu_reserve (60 s).
* the CPU lane, N processes at a time: the CPU recorder (python/headroom_cpu.py) on the same
  family points, bases first, with CUDA hidden from them. It uses other cores than the GPU
  lane (sched_setaffinity), to keep the GPU lane's launch overhead undisturbed, and runs
  until budget - pack_reserve.
A point that runs past its timeout is killed (its process group) and reported "timeout".
At the end, always (also after SIGTERM): the snapshots are packed (pack.py), truth.json and
run.log written, the work folder removed, the output's limits checked and one summary line
printed. The dry run (--dry-run, or no CUDA) runs the same path on the CPU with small dims.

Exit status: 0; 1 when a GPU-lane point failed, timed out or was killed, or the output breaks
the transfer's limits (the files are written all the same); 77 when torch cannot be imported.
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
POINT = os.path.join(HERE, "point.py")
sys.path.insert(0, HERE)

import pack  # noqa: E402
import plan  # noqa: E402

FORMAT = "headroom-gpu-truth-1"
MAX_OUT_FILES = 8
MAX_OUT_BYTES = 16 << 20
ERROR_TAIL = 1500
# result keys that truth.json does not repeat (they are in run.log, or are work paths)
_NOT_IN_TRUTH = ("name", "snapshot", "traceback", "torch")


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output folder (the device's $OUT)")
    ap.add_argument("--budget-s", type=float, default=400.0, help="whole run, seconds")
    ap.add_argument("--dry-run", action="store_true", help="CPU only, small dims")
    ap.add_argument("--only", default="", help="GPU points to run, by name (comma separated)")
    ap.add_argument("--jobs", type=int, default=0, help="CPU-lane processes (0: from cores)")
    ap.add_argument("--no-cpu", action="store_true", help="no CPU-recorder companions")
    ap.add_argument("--cpu-reserve-s", type=float, default=None,
                    help="no GPU point starts later than this before the budget's end "
                         "(default: 60 s, at most 15%% of the budget)")
    ap.add_argument("--pack-reserve-s", type=float, default=None,
                    help="everything stops this long before the budget's end, to pack "
                         "(default: 15 s, at most 5%% of the budget)")
    ap.add_argument("--max-part-mib", type=float, default=15.5, help="size limit per archive")
    ap.add_argument("--max-parts", type=int, default=pack.MAX_PARTS)
    ap.add_argument("--work", default=None,
                    help="work folder (default a new folder under the system's temp dir, removed): never "
                         "under OUT, whose files beyond 8 would not come back from the device if the "
                         "run were killed before packing")
    ap.add_argument("--keep-work", action="store_true", help="do not remove the work folder")
    args = ap.parse_args(argv)
    if args.cpu_reserve_s is None:
        args.cpu_reserve_s = min(60.0, 0.15 * args.budget_s)
    if args.pack_reserve_s is None:
        args.pack_reserve_s = min(15.0, 0.05 * args.budget_s)
    return args


# ------------------------------------------------------------------ processes
class Child(object):
    """One point's process: its spec, folder, log, and times (start, go, end)."""

    def __init__(self, spec, work, cores, threads, wait_go):
        self.spec, self.dir = spec, os.path.join(work, spec["name"])
        os.makedirs(self.dir, exist_ok=True)
        spec = dict(spec, threads=threads)
        with open(os.path.join(self.dir, "spec.json"), "w") as f:
            json.dump(spec, f, indent=1, sort_keys=True)
        cmd = [sys.executable, POINT, "--spec", "@" + os.path.join(self.dir, "spec.json"),
               "--out", self.dir] + (["--wait-go"] if wait_go else [])
        self.log_path = os.path.join(self.dir, "child.log")
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env=child_env(spec, threads), stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.PIPE if wait_go else subprocess.DEVNULL, start_new_session=True,
            preexec_fn=(lambda: os.sched_setaffinity(0, cores)) if cores else None)
        log.close()
        self.t_start = time.monotonic()
        self.t_go = None if wait_go else self.t_start
        self.timeout = None
        self.verdict = None  # set by the scheduler: "timeout", "killed", "budget"

    def go(self, timeout, word="go"):
        self.t_go, self.timeout = time.monotonic(), timeout
        try:
            self.proc.stdin.write((word + "\n").encode())
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass  # it died while importing: its result (or its absence) says so

    def done(self):
        return self.proc.poll() is not None

    def overdue(self, now):
        return self.t_go is not None and self.timeout is not None \
            and now - self.t_go > self.timeout

    def kill(self, verdict):
        self.verdict = self.verdict or verdict
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the point and anything it started
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()


def child_env(spec, threads):
    """PYTORCH_CUDA_ALLOC_CONF as the point says (unset otherwise) before CUDA can start;
    threads; CUDA hidden from the CPU lane; no network for transformers."""
    env = dict(os.environ)
    for k in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "HEADROOM_SHAPES"):
        env.pop(k, None)
    if spec.get("alloc_conf"):
        env["PYTORCH_CUDA_ALLOC_CONF"] = spec["alloc_conf"]
    if spec["lane"] == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false")
    return env


def probe(timeout):
    """point.py --probe in a fresh process (the orchestrator never imports torch itself)."""
    try:
        out = subprocess.run([sys.executable, POINT, "--probe"], capture_output=True,
                             timeout=timeout, cwd=ROOT, env=child_env({"lane": "gpu"}, 1))
        return json.loads(out.stdout.decode().strip().splitlines()[-1])
    except Exception as exc:
        return {"torch": None, "cuda": False, "error": repr(exc)}


def split_cores(jobs):
    """(GPU-lane cores, CPU-lane cores, CPU jobs, threads per CPU job)."""
    avail = sorted(os.sched_getaffinity(0))
    n_gpu = max(1, min(4, len(avail) // 4))
    gpu, cpu = avail[:n_gpu], avail[n_gpu:] or avail
    jobs = jobs or max(1, len(cpu) // 3)
    return set(gpu), set(cpu), jobs, max(1, len(cpu) // jobs)


# ------------------------------------------------------------------ the scheduler
class Scheduler(object):
    def __init__(self, args, gpu_specs, cpu_specs, work, log):
        self.args, self.work, self.log = args, work, log
        self.t0 = time.monotonic()
        self.end = self.t0 + args.budget_s
        self.gpu_queue, self.cpu_queue = list(gpu_specs), list(cpu_specs)
        self.gpu_cores, self.cpu_cores, self.jobs, self.threads = split_cores(args.jobs)
        self.gpu_threads = len(self.gpu_cores)
        self.current = self.next = None
        self.cpu_running = []
        self.results = {}  # name -> result dict (from result.json, or made up)
        self.walls = {}  # GPU kind -> walls of finished points; cpu family -> base wall
        self.stopping = False

    def elapsed(self):
        return time.monotonic() - self.t0

    # -- the GPU lane
    def gpu_est(self, spec):
        seen = self.walls.get(spec["kind"])
        return statistics.median(seen) if seen else spec["est_s"]

    def gpu_fits(self, spec, now):
        return now + self.gpu_est(spec) <= self.end - self.args.cpu_reserve_s

    def gpu_timeout(self, spec, now):
        return max(1.0, min(spec["timeout_s"], self.end - self.args.pack_reserve_s - now))

    def gpu_tick(self, now):
        if self.current is not None:
            if self.current.overdue(now):
                self.current.kill("timeout")
            if self.current.done():
                self.finish(self.current)
                self.current = None
        while self.current is None and (self.next is not None or self.gpu_queue):
            child, self.next = self.next, None
            spec = child.spec if child else self.gpu_queue.pop(0)
            if not self.gpu_fits(spec, now):
                self.not_started(spec, child)
                continue
            if child is None:
                child = Child(spec, self.work, self.gpu_cores, self.gpu_threads, True)
            child.go(self.gpu_timeout(spec, now))
            child.cpu_busy = len(self.cpu_running)
            self.current = child
        if self.current is not None and self.next is None and self.gpu_queue:
            self.next = Child(self.gpu_queue.pop(0), self.work, self.gpu_cores,
                              self.gpu_threads, True)

    def not_started(self, spec, child):
        left = self.end - self.args.cpu_reserve_s - time.monotonic()
        why = "budget: not started (needs ~%.0f s, %.0f s left for GPU points)" % (
            self.gpu_est(spec), max(0.0, left))
        if child is not None:
            child.go(5, word="skip")
            child.verdict = "budget"
            child.proc.wait()
        self.record(spec, {"name": spec["name"], "status": "skipped", "error": why})

    # -- the CPU lane
    def cpu_est(self, spec):
        base = self.walls.get("cpu_" + spec["family"])
        return spec["cost"] * base if base else spec["est_s"]

    def cpu_tick(self, now):
        for child in list(self.cpu_running):
            if child.overdue(now):
                child.kill("timeout")
            if child.done():
                self.cpu_running.remove(child)
                self.finish(child)
        stop_at = self.end - self.args.pack_reserve_s
        while len(self.cpu_running) < self.jobs and self.cpu_queue:
            spec = self.cpu_queue.pop(0)
            if now + self.cpu_est(spec) > stop_at:
                self.record(spec, {"name": spec["name"], "status": "skipped",
                                   "error": "budget: not started (needs ~%.0f s, %.0f s "
                                            "left)" % (self.cpu_est(spec), stop_at - now)})
                continue
            child = Child(spec, self.work, self.cpu_cores, self.threads, False)
            child.timeout = max(1.0, min(spec["timeout_s"], stop_at - now))
            self.cpu_running.append(child)

    # -- results
    def finish(self, child):
        res = read_result(child)
        spec = child.spec
        if child.t_go is not None and child.verdict is None:
            # the lane's time, from "go" to the exit (CUDA's teardown included): the budget's
            # estimate for the next point of the kind
            res["lane_s"] = round(time.monotonic() - child.t_go, 3)
        if res.get("status") == "ok" and res.get("lane_s"):
            if spec["lane"] == "gpu":
                self.walls.setdefault(spec["kind"], []).append(res["lane_s"])
            elif spec["tier"] == "base":  # the CPU lane scales its family's levers from it
                self.walls["cpu_" + spec["family"]] = res["lane_s"]
        if getattr(child, "cpu_busy", None) is not None:
            res["cpu_lane_jobs_at_start"] = child.cpu_busy
        self.record(spec, res)

    def record(self, spec, res):
        self.results[spec["name"]] = res
        line = "[%6.1fs] %-3s %-28s %-7s %6s" % (
            self.elapsed(), spec["lane"], spec["name"], res.get("status"),
            "%.1fs" % res["wall_s"] if res.get("wall_s") is not None else "-")
        if res.get("max_allocated_bytes"):
            line += "  max_alloc %.1f MiB" % (res["max_allocated_bytes"] / 2.0 ** 20)
        if res.get("step_time_s"):
            line += "  step %.4f s" % res["step_time_s"]
        print(line, flush=True)
        self.log.append(line)
        if res.get("status") != "ok" and res.get("error"):
            tail = res.get("log_tail") or res.get("traceback") or ""
            self.log.append("    error: " + str(res["error"])[:ERROR_TAIL])
            if tail and res.get("status") != "skipped":
                self.log += ["    | " + t for t in tail[-ERROR_TAIL:].splitlines()]

    def run(self):
        while not self.stopping:
            now = time.monotonic()
            self.gpu_tick(now)
            self.cpu_tick(now)
            idle = self.current is None and self.next is None and not self.gpu_queue
            if idle and not self.cpu_running and not self.cpu_queue:
                break
            time.sleep(0.05)
        self.shutdown()

    def shutdown(self):
        """Kill what still runs (SIGTERM, or the budget): their results say "killed"."""
        for child in [c for c in (self.current, self.next) if c] + self.cpu_running:
            if child is self.next and child.t_go is None:
                child.kill("unstarted")
            elif not child.done():
                child.kill("killed")
            self.finish(child)
        self.current = self.next = None
        self.cpu_running = []
        for spec in self.gpu_queue + self.cpu_queue:
            self.record(spec, {"name": spec["name"], "status": "skipped",
                               "error": "not started: the run was stopped"})
        self.gpu_queue, self.cpu_queue = [], []


def read_result(child):
    """result.json, or a result made from the exit status and the log's tail."""
    path = os.path.join(child.dir, "result.json")
    res = {}
    if os.path.exists(path):
        try:
            with open(path) as f:
                res = json.load(f)
        except ValueError as exc:
            res = {"status": "failed", "error": "unreadable result.json: %s" % exc}
    rc = child.proc.returncode
    if child.verdict in ("budget", "unstarted"):
        res = {"status": "skipped", "error": "budget: not started" if child.verdict == "budget"
               else "not started: the run was stopped"}
    elif child.verdict in ("timeout", "killed"):
        res = {"status": child.verdict, "error": "%s after %.0f s" % (
            child.verdict, time.monotonic() - (child.t_go or child.t_start))}
    elif not res:
        res = {"status": "failed", "error": "exit status %s, no result.json" % rc}
    if rc not in (0, None) and child.verdict is None:
        res["exit_code"] = rc
    if res.get("status") in ("failed", "timeout", "killed"):
        res["log_tail"] = tail(child.log_path)
    res.setdefault("name", child.spec["name"])
    if res.get("wall_s") is None and child.t_go is not None \
            and child.verdict not in ("budget", "unstarted"):
        res["wall_s"] = round(time.monotonic() - child.t_go, 3)
    res["_dir"] = child.dir
    return res


def tail(path, n=ERROR_TAIL):
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


# ------------------------------------------------------------------ truth.json
TRUTH_KEYS = ("family", "micro_batch", "seq", "precision", "checkpointing", "optimizer",
              "phase", "kind", "lever", "tier", "alloc_conf")


def entry(spec, res, cpu_spec, cpu_res):
    """One point of truth.json: the issue's keys first, then what the point measured."""
    e = {"file": None, "name": spec["name"]}
    e.update({k: spec.get(k) for k in TRUTH_KEYS})
    for k in ("max_allocated_bytes", "max_reserved_bytes", "step_time_s", "recorder",
              "status", "error"):
        e[k] = res.get(k)
    if spec.get("attn"):
        e["attn"] = spec["attn"]
    e["dims"] = spec.get("dims")
    for k, v in sorted(res.items()):
        if k not in e and k not in _NOT_IN_TRUTH and not k.startswith("_") and k != "log_tail":
            e[k] = v
    if e.get("error"):
        e["error"] = str(e["error"])[:500]
    snap = os.path.join(res.get("_dir", ""), "snapshot.pickle.gz")
    if res.get("_dir") and os.path.exists(snap):
        e["file"], e["_src"] = spec["file"], snap
    if cpu_spec is not None:
        _cpu_keys(e, cpu_spec, cpu_res or {"status": "skipped", "error": "not run"})
    return e


def _cpu_keys(e, cpu_spec, res):
    e["cpu_file"] = None
    e["cpu_status"], e["cpu_error"] = res.get("status"), res.get("error")
    for k in ("max_allocated_bytes", "cpu_oracle_peak_bytes", "wall_s", "torch"):
        if res.get(k) is not None:
            e["cpu_" + k.replace("cpu_", "")] = res[k]
    snap = os.path.join(res.get("_dir", ""), "snapshot.pickle.gz")
    if res.get("_dir") and os.path.exists(snap):
        e["cpu_file"], e["_cpu_src"] = cpu_spec["file"], snap


def counts(entries, prefix=""):
    out = {}
    for e in entries:
        st = e.get(prefix + "status")
        if st is not None:
            out[st] = out.get(st, 0) + 1
    return out


def check_out(out):
    """The transfer's limits on the output folder: problems, as text (empty when fine)."""
    problems, files = [], []
    for root, dirs, names in os.walk(out):
        depth = os.path.relpath(root, out).count(os.sep) + (root != out)
        if depth > 2:
            problems.append("%s is more than 2 folders down" % root)
        files += [os.path.join(root, n) for n in names]
    if len(files) > MAX_OUT_FILES:
        problems.append("%d files (at most %d)" % (len(files), MAX_OUT_FILES))
    for f in files:
        name = os.path.basename(f)
        if os.path.getsize(f) > MAX_OUT_BYTES:
            problems.append("%s is over 16 MiB" % name)
        if not all(c.isalnum() and c.isascii() or c in "._-" for c in name):
            problems.append("%s has a character other than letters, digits, . _ -" % name)
    return problems


def main(argv=None):
    args = parse(argv)
    t0 = time.monotonic()
    out = os.path.abspath(args.out)
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="gpu_truth_work_"))
    info = probe(120)
    if not info.get("torch"):
        print("gpu_truth: torch cannot be imported (%s); nothing to run" % info.get("error"))
        return 77  # ctest's SKIP_RETURN_CODE, as tools/cpu_matrix.py
    os.makedirs(work, exist_ok=True)
    os.makedirs(out, exist_ok=True)
    dry = bool(args.dry_run or not info.get("cuda"))
    gpu_specs = plan.select(plan.gpu_points(dry), args.only)
    cpu_specs = [] if args.no_cpu else plan.cpu_points(gpu_specs, dry)
    log = ["gpu_truth: torch %s, %s, %s; budget %.0f s; %d GPU-lane points, %d CPU-lane" % (
        info.get("torch"), info.get("device", "no CUDA"), "DRY RUN" if dry else "GPU run",
        args.budget_s, len(gpu_specs), len(cpu_specs))]
    print(log[0], flush=True)
    sched = Scheduler(args, gpu_specs, cpu_specs, work, log)
    sched.t0, sched.end = t0, t0 + args.budget_s  # the probe counts against the budget

    def on_signal(signum, frame):
        sched.stopping = True
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        sched.run()
    finally:
        bad = finish(args, info, dry, gpu_specs, cpu_specs, sched, out, work, log, t0)
    return 1 if bad else 0


def finish(args, info, dry, gpu_specs, cpu_specs, sched, out, work, log, t0):
    """Pack, write truth.json and run.log, remove the work folder, check, summarise; returns
    the limit problems and the GPU-lane points that failed (the exit status is 1 then)."""
    by_of = {c["of"]: c for c in cpu_specs}
    entries = [entry(s, sched.results.get(s["name"], {"status": "skipped",
                                                      "error": "not reached"}),
                     by_of.get(s["name"]),
                     sched.results.get(by_of[s["name"]]["name"]) if s["name"] in by_of
                     else None) for s in gpu_specs]
    cap = int(args.max_part_mib * (1 << 20))
    for name in os.listdir(out):  # an earlier run's parts would be mistaken for this one's
        if name.startswith("truth_part") and name.endswith(".tar"):
            os.unlink(os.path.join(out, name))
    parts, dropped = pack.pack(entries, out, cap, args.max_parts)
    for e in entries:
        e.pop("_src", None)
        e.pop("_cpu_src", None)
    truth = {"format": FORMAT, "device": info.get("device") if not dry else
             "cpu (dry run)", "torch": info.get("torch"), "dry_run": dry,
             "cuda_version": info.get("cuda_version"), "total_memory": info.get("total_memory"),
             "python": info.get("python"), "budget_s": args.budget_s,
             "wall_s": round(time.monotonic() - t0, 1), "command": sys.argv,
             "cpu_lane": {"jobs": sched.jobs, "threads_per_job": sched.threads,
                          "cores": sorted(sched.cpu_cores), "gpu_lane_cores":
                          sorted(sched.gpu_cores), "concurrent_with_gpu_lane": True},
             "counts": counts(entries), "cpu_counts": counts(entries, "cpu_"),
             "points": entries, "dropped": dropped, "parts": parts}
    if not dry and not info.get("cuda"):
        truth["dry_run_reason"] = "CUDA not available: %s" % info.get("error", "")
    with open(os.path.join(out, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1)
    if not args.keep_work and (args.work is None or work.startswith(out + os.sep)):
        shutil.rmtree(work, ignore_errors=True)  # its own temp folder, or one under OUT
    part_bytes = sum(p["bytes"] for p in parts)
    log.append("packed: %d parts, %d bytes; dropped %d: %s" % (
        len(parts), part_bytes, len(dropped), ", ".join(d["file"] for d in dropped) or "-"))
    with open(os.path.join(out, "run.log"), "w") as f:
        f.write("\n".join(log) + "\n")
    problems = check_out(out)
    with open(os.path.join(out, "run.log"), "a") as f:
        f.write("limits: %s\n" % ("; ".join(problems) or "ok"))
    print("gpu_truth: %d points %s; cpu recordings %s; %d parts %.2f MiB, %d dropped; "
          "limits %s; wall %.1f s; %s" % (
              len(entries), _fmt(truth["counts"]), _fmt(truth["cpu_counts"]), len(parts),
              part_bytes / 2.0 ** 20, len(dropped), "; ".join(problems) or "ok",
              time.monotonic() - t0, out), flush=True)
    failed = [e["name"] for e in entries if e["status"] in ("failed", "timeout", "killed")]
    return problems + failed


def _fmt(c):
    return "(" + ", ".join("%d %s" % (v, k) for k, v in sorted(c.items())) + ")"


if __name__ == "__main__":
    sys.exit(main())
