#!/usr/bin/env python3
"""The standing budget (issue 48) end to end, against an SQLite file and against a real
PostgreSQL server started for the test (postgres_server.py): the same suite on both, with the
same results. Stdlib only.

    test_budget.py --cli BUILD/app/headroom-cli --source REPO --workdir DIR [--backend sqlite|postgres|both]

Checks, on each backend: every real file in the repository is recorded once (a second
`budget record` adds nothing); the policy on real CPU recordings (tests/data/cpu/
record_budget_runs.py): short batches only -> not validated, the worst-case step within the
margin -> validated and `check --budget` passes, a later OOM of the same configuration takes
it back; a store with a newer schema and (SQLite) a file that is not a database are refused
and left unchanged; 16 writers x 50 runs at once lose nothing; a writer killed mid-write
leaves a store that reads and takes the rest; the GPU recorder's run metric (with a stand-in
for torch.cuda) lands in both and validates on its worst-case step; a URL's password appears
in no output.
"""
import argparse
import glob
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from postgres_server import PostgresServer  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import headroom_record  # noqa: E402

PASSWORD = "s3cret-pw"


class Suite:
    def __init__(self, args, backend, new_store, server=None):
        self.args, self.backend, self.new_store, self.server = args, backend, new_store, server
        self.problems, self.outputs = [], []
        self.cpu = os.path.join(args.source, "tests", "data", "cpu")

    def cli(self, *argv, rc=0):
        r = subprocess.run([self.args.cli] + [str(a) for a in argv], capture_output=True, text=True)
        self.outputs.append(r.stdout + r.stderr)
        if rc is not None and r.returncode != rc:
            self.fail("`%s` exited %d, expected %d: %s" % (" ".join(map(str, argv[:3])), r.returncode, rc,
                                                            (r.stdout + r.stderr)[-400:]))
        return r

    def json(self, *argv, rc=0):
        r = self.cli(*argv, "--json", rc=rc)
        try:
            return json.loads(r.stdout)
        except ValueError:
            self.fail("`%s` printed no JSON" % " ".join(map(str, argv[:3])))
            return {}

    def fail(self, message):
        self.problems.append("%s: %s" % (self.backend, message))

    def expect(self, ok, message):
        if not ok:
            self.fail(message)

    def real_files(self):
        real = sorted(glob.glob(os.path.join(self.args.source, "tests", "data", "real", "*.pickle")))
        return real + [os.path.join(self.cpu, n) for n in
                       ("imbalanced_oom.pickle", "budget_short_steps.pickle", "budget_worst_step.pickle")]

    def record_real_files(self):
        db = self.new_store("real")
        first = self.json("budget", "record", "--db", db, *self.real_files())
        added = [r["added"] for r in first.get("recorded", [])]
        self.expect(added and all(added), "the first record of the real files added %s" % added)
        again = self.json("budget", "record", "--db", db, *self.real_files())
        self.expect(not any(r["added"] for r in again.get("recorded", [])),
                    "recording the same files again added runs")
        status = self.json("budget", "status", "--db", db)
        runs = sum(len(c["runs"]) for c in status.get("configurations", []))
        self.expect(runs == len(added), "the store holds %d runs, %d were recorded" % (runs, len(added)))
        return status

    def policy(self):
        db = self.new_store("policy")
        short = os.path.join(self.cpu, "budget_short_steps.pickle")
        worst = os.path.join(self.cpu, "budget_worst_step.pickle")
        # 4 GiB: check --fit's projection of these CPU recordings counts a 1 GiB CUDA context
        self.json("budget", "record", "--db", db, "--capacity", "4GiB", short)
        c = self.json("budget", "status", "--db", db)["configurations"]
        self.expect(len(c) == 1 and not c[0]["validated"] and c[0]["shortfall"] == "not_worst_case",
                    "short batches only: %s" % [(x["validated"], x["shortfall"]) for x in c])
        r = self.cli("check", worst, "--budget", db, rc=1)
        self.expect("never run on its worst-case step" in r.stdout, "check --budget before validation: " + r.stdout)
        self.json("budget", "record", "--db", db, "--capacity", "4GiB", worst)
        c = self.json("budget", "status", "--db", db)["configurations"]
        self.expect(len(c) == 1 and c[0]["validated"] and c[0]["validated_by"].endswith("/0"),
                    "the worst-case step: %s" % [(x["validated"], x["shortfall"]) for x in c])
        self.cli("check", worst, "--budget", db, rc=0)
        self.cli("check", short, "--budget", db, rc=0)
        # The same configuration, OOMed later (the three-device OOM, named as this job).
        self.json("budget", "record", "--db", db, os.path.join(self.cpu, "imbalanced_oom.pickle"),
                  "--config", "model=decoder_budget", "--config", "micro_batch=2", "--config", "seq=64",
                  "--config", "precision=fp32", "--config", "optimizer=adamw", "--config", "devices=1",
                  "--config", "step_tokens=128")
        c = self.json("budget", "status", "--db", db)["configurations"]
        self.expect(len(c) == 1 and not c[0]["validated"] and c[0]["shortfall"] == "oomed",
                    "an OOM after validation: %s" % [(x["validated"], x["shortfall"], x["status"]) for x in c])
        self.cli("check", worst, "--budget", db, rc=1)
        return c

    def one_answer(self):
        """The budget's margin and check --fit's agree on the same file, capacity and margin."""
        worst = os.path.join(self.cpu, "budget_worst_step.pickle")
        outcomes = set()
        cases = (("1GiB", "10%"), ("2GiB", "10%"), ("2GiB", "55%"), ("4GiB", "10%"), ("4GiB", "80%"))
        for i, (capacity, margin) in enumerate(cases):
            db = self.new_store("one_answer_%d" % i)
            self.json("budget", "record", "--db", db, "--capacity", capacity, worst,
                      "--config", "worst_case_tokens=128")
            c = self.json("budget", "status", "--db", db, "--margin", margin)["configurations"]
            fit = self.cli("check", worst, "--fit", capacity, "--margin", margin, rc=None)
            fit_json = self.json("check", worst, "--fit", capacity, "--margin", margin, rc=None)["checks"][0]
            run = c[0]["runs"][0] if len(c) == 1 and c[0]["runs"] else {}
            self.expect(run.get("judged_by") == "projection" and c[0]["validated"] == (fit.returncode == 0)
                        and abs(run.get("margin_left", 9) - fit_json["margin_left"]) < 1e-9,
                        "at %s with %s free: budget %s (%s), check --fit exit %d"
                        % (capacity, margin, c[0]["validated"] if c else None, run.get("shortfall"), fit.returncode))
            outcomes.add(fit.returncode)
        self.expect(outcomes == {0, 1}, "the capacities and margins should both pass and fail: %s" % outcomes)

    def newer_schema(self):
        db = self.new_store("newer")
        self.json("budget", "record", "--db", db, os.path.join(self.cpu, "budget_short_steps.pickle"))
        if self.backend == "sqlite":
            con = sqlite3.connect(db)
            con.execute("UPDATE headroom_budget_meta SET value = '2' WHERE key = 'schema_version'")
            con.commit()
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            con.close()
            before = open(db, "rb").read()
        else:
            name = db.rsplit("/", 1)[1]
            self.server.sql("UPDATE headroom_budget_meta SET value = '2' WHERE key = 'schema_version'", name)
            before = self.server.sql("SELECT count(*) FROM headroom_budget_runs", name)
        for argv in (["budget", "status", "--db", db],
                     ["budget", "record", "--db", db, os.path.join(self.cpu, "budget_worst_step.pickle")]):
            r = self.cli(*argv, rc=2)
            self.expect("schema version 2" in r.stderr and "left unchanged" in r.stderr, "newer schema: " + r.stderr)
        after = open(db, "rb").read() if self.backend == "sqlite" else \
            self.server.sql("SELECT count(*) FROM headroom_budget_runs", db.rsplit("/", 1)[1])
        self.expect(before == after, "a store with a newer schema was modified")

    def corrupt_file(self):
        path = os.path.join(self.args.workdir, "corrupt.db")
        with open(path, "wb") as f:
            f.write(b"not a database at all, " * 100)
        before = open(path, "rb").read()
        r = self.cli("budget", "status", "--db", path, rc=2)
        self.expect(path in r.stderr and "not a database" in r.stderr, "corrupt file: " + r.stderr)
        self.expect(open(path, "rb").read() == before, "a corrupt store was modified")

    def tiny_files(self, count):
        """`count` distinct small snapshots (one template, trailing whitespace apart)."""
        folder = os.path.join(self.args.workdir, "tiny")
        os.makedirs(folder, exist_ok=True)
        template = open(os.path.join(self.args.source, "tests", "fixtures", "json", "legacy_list_snapshot.json")).read()
        paths = []
        for i in range(count):
            p = os.path.join(folder, "run%04d.json" % i)
            if not os.path.exists(p):
                with open(p, "w") as f:
                    f.write(template + " " * (i % 40) + "\n" * (1 + i // 40))
            paths.append(p)
        return paths

    def writers(self, count=16, each=50):
        db = self.new_store("writers")  # new: the writers create its tables among themselves
        files = self.tiny_files(count * each)
        procs = [subprocess.Popen([self.args.cli, "budget", "record", "--db", db] + files[w * each:(w + 1) * each],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for w in range(count)]
        for p in procs:
            err = p.communicate()[1]
            self.outputs.append(err)
            self.expect(p.returncode == 0, "a writer exited %d: %s" % (p.returncode, err[-300:]))
        runs = sum(len(c["runs"]) for c in self.json("budget", "status", "--db", db)["configurations"])
        self.expect(runs == count * each, "%d writers x %d runs left %d runs" % (count, each, runs))

    def killed_writer(self):
        db = self.new_store("killed")
        self.json("budget", "status", "--db", db)
        files = self.tiny_files(800)
        p = subprocess.Popen([self.args.cli, "budget", "record", "--db", db] + files,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Killed once it has written some runs, so the kill lands among the writes.
        deadline = time.time() + 30
        while self.count_rows(db) < 20 and p.poll() is None and time.time() < deadline:
            time.sleep(0.005)
        p.send_signal(signal.SIGKILL)
        p.wait()
        status = self.json("budget", "status", "--db", db)
        partial = sum(len(c["runs"]) for c in status.get("configurations", []))
        if self.backend == "sqlite":
            ok = sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0]
            self.expect(ok == "ok", "integrity after a killed writer: " + ok)
        self.json("budget", "record", "--db", db, *files)
        runs = sum(len(c["runs"]) for c in self.json("budget", "status", "--db", db)["configurations"])
        self.expect(runs == len(files), "after a killed writer (%d runs) and a full rerun: %d runs, expected %d"
                    % (partial, runs, len(files)))
        print("%s: a writer killed after %d of %d runs; the rerun completed the store" % (self.backend, partial, len(files)))

    def count_rows(self, db):
        try:
            if self.backend == "sqlite":
                con = sqlite3.connect(db, timeout=5)
                try:
                    return con.execute("SELECT count(*) FROM headroom_budget_runs").fetchone()[0]
                finally:
                    con.close()
            return int(self.server.sql("SELECT count(*) FROM headroom_budget_runs", db.rsplit("/", 1)[1]))
        except (sqlite3.Error, subprocess.CalledProcessError, ValueError):
            return 0

    def metric(self):
        """The GPU recorder's run metric (python/headroom_record.py) into this store: SQLite
        written by the recorder itself, PostgreSQL through `budget record --metric-json -`."""
        db = self.new_store("metric")
        os.environ["HEADROOM_CLI"] = self.args.cli
        config = {"model": "decoder_budget", "micro_batch": 2, "seq": 64, "precision": "fp32",
                  "optimizer": "adamw", "devices": 1}
        for i, (peak, steps) in enumerate(((3 << 20, [64, 64]), (5 << 20, [64, 128]))):
            headroom_record.log_run_metric(db, config, torch=FakeTorch(peak), step_tokens=steps,
                                           worst_case_tokens=128, run_id="metric:test-%d" % i)
        c = self.json("budget", "status", "--db", db)["configurations"]
        self.expect(len(c) == 1 and c[0]["validated"] and c[0]["validated_by"] == "metric:test-1"
                    and [r["source"] for r in c[0]["runs"]] == ["metric", "metric"]
                    and all(r["judged_by"] == "allocated_peak" for r in c[0]["runs"]),
                    "two run metrics: %s" % [(x["validated"], x["status"]) for x in c])
        # The recorder writes the columns it knows; Headroom added projection_json when it
        # opened the store, and the recorder's next run still lands.
        headroom_record.log_run_metric(db, config, torch=FakeTorch(4 << 20), step_tokens=[64],
                                       worst_case_tokens=128, run_id="metric:test-2")
        runs = self.json("budget", "status", "--db", db)["configurations"][0]["runs"]
        self.expect([r["run_id"] for r in runs][-1:] == ["metric:test-2"], "a run metric after the column was added")
        return c

    def run(self):
        t = time.time()
        real = self.record_real_files()
        metric = self.metric()
        policy = self.policy()
        self.one_answer()
        self.newer_schema()
        if self.backend == "sqlite":
            self.corrupt_file()
        self.writers()
        self.killed_writer()
        leaked = [o for o in self.outputs if PASSWORD in o]
        self.expect(not leaked, "the URL's password was printed: %s" % (leaked[:1],))
        print("%s: %d checks' outputs, %.1f s, %s" % (self.backend, len(self.outputs), time.time() - t,
                                                     "ok" if not self.problems else "FAILED"))
        return comparable(real), comparable(policy), comparable(metric)


class FakeTorch:
    """What log_run_metric reads of torch.cuda: a peak, and a 16 GiB device."""

    def __init__(self, peak):
        self.cuda = self
        self.peak = peak

    def is_available(self):
        return True

    def current_device(self):
        return 0

    def max_memory_allocated(self, device):
        return self.peak

    def max_memory_reserved(self, device):
        return self.peak + (1 << 20)

    def get_device_properties(self, device):
        return type("Properties", (), {"total_memory": 16 << 30})()


def comparable(status):
    """What must agree across backends: everything but the store's name and the times."""
    configs = status.get("configurations", status) if isinstance(status, dict) else status
    out = []
    for c in configs:
        c = dict(c)
        c["status"] = c["status"].split(" (device")[0]
        c["runs"] = [{k: v for k, v in r.items() if k != "recorded_at"} for r in c["runs"]]
        out.append(c)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--backend", default="both", choices=("sqlite", "postgres", "both"))
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    results, problems = {}, []

    if args.backend in ("sqlite", "both"):
        def sqlite_store(name):
            path = os.path.join(args.workdir, name + ".db")
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(path + suffix):
                    os.remove(path + suffix)
            return path
        s = Suite(args, "sqlite", sqlite_store)
        results["sqlite"] = s.run()
        problems += s.problems
    if args.backend in ("postgres", "both"):
        with PostgresServer() as pg:
            p = Suite(args, "postgres", lambda name: pg.new_database(name, PASSWORD), pg)
            results["postgres"] = p.run()
            problems += p.problems
            # A server that refuses: the message names the store without its password.
            r = subprocess.run([args.cli, "budget", "status", "--db",
                                "postgresql://headroom:%s@127.0.0.1:%d/nosuchdb" % (PASSWORD, pg.port)],
                               capture_output=True, text=True)
            if r.returncode != 2 or PASSWORD in r.stderr or "headroom:***@" not in r.stderr:
                problems.append("a refused connection: exit %d, %s" % (r.returncode, r.stderr.strip()))
    if len(results) == 2 and results["sqlite"] != results["postgres"]:
        problems.append("SQLite and PostgreSQL disagree on the same runs")
    if problems:
        print("FAIL:\n  " + "\n  ".join(problems))
        return 1
    print("budget: %s agree" % " and ".join(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
