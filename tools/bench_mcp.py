#!/usr/bin/env python3
"""Benchmark (not a test) of `headroom-cli mcp` on a file that stays loaded (issue 31: a call
on a 1M-event file that is already open answers in under 100 ms).

Starts the server, opens FILE (the load, the baseline of the ratios), then calls each of
summary, peak, diagnose, doctor, check and whatif twice and prints each call's time, the
second against the first and against the load. The first call of a tool may compute what
the file's cache then keeps (the analysis, the diagnosis); the second is what an agent's
later questions cost.

Usage: tools/bench_mcp.py --cli build/release/app/headroom-cli FILE
"""
import argparse
import json
import os
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("file")
    args = ap.parse_args()
    path = os.path.abspath(args.file)
    server = subprocess.Popen([args.cli, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, bufsize=1)
    ids = iter(range(1, 1 << 30))

    def call(method, params):
        message = {"jsonrpc": "2.0", "id": next(ids), "method": method, "params": params}
        start = time.perf_counter()
        server.stdin.write(json.dumps(message) + "\n")
        server.stdin.flush()
        reply = json.loads(server.stdout.readline())
        elapsed = time.perf_counter() - start
        if "error" in reply:
            sys.exit("bench_mcp: %s failed: %s" % (method, reply["error"]["message"]))
        return elapsed

    call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "bench_mcp", "version": "1"}})
    load = call("tools/call", {"name": "open", "arguments": {"file": path}})
    print("mcp open (load) %s: %.0f ms" % (os.path.basename(path), load * 1e3))
    calls = [("summary", {}), ("peak", {}), ("diagnose", {}), ("doctor", {}), ("check", {"max_peak": "80GiB"}),
             ("whatif", {"measured_micro_batch": 1, "measured_seq": 128, "micro_batch": 2})]
    worst = 0.0
    for name, extra in calls:
        arguments = dict(extra, file=path)
        first = call("tools/call", {"name": name, "arguments": arguments})
        second = call("tools/call", {"name": name, "arguments": arguments})
        worst = max(worst, second)
        print("mcp %-8s first %8.1f ms, again %7.1f ms = %.3f of the load" % (name, first * 1e3, second * 1e3,
                                                                               second / load))
    print("mcp: slowest repeated call %.1f ms   (target: under 100 ms on 1M events)" % (worst * 1e3))
    server.stdin.close()
    server.wait(timeout=30)


if __name__ == "__main__":
    main()
