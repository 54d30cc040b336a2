#!/usr/bin/env python3
"""Runs the bad-input corpus (make_badinputs.py) through headroom-cli (issue 7).

    run_badinputs.py --cli BUILD/app/headroom-cli --out BUILD/tests/badinputs/cases
                     [--real REAL_TRACES] [--asan] [--mem-mb 1024] [--timeout 30] [--jobs 2]

Every case runs as `headroom-cli summary --json FILE` under a memory limit (RLIMIT_AS, so
an allocation past it fails inside the process; under ASan, which reserves terabytes of
address space, ASan's own max_allocation_size_mb / hard_rss_limit_mb instead) and a
wall-clock limit. A case passes when:
  - the CLI exited 2 (refused), with nothing on stdout and exactly one line on stderr,
    "headroom-cli: <the file's path>...", or exited 0 with a complete JSON summary on
    stdout -- never a signal, another exit code, or partial output;
  - that outcome is allowed by the case ("error": must refuse, "ok": must load);
  - it finished within the time limit and its peak RSS stayed under the limit;
  - for the malicious pickles, the command they carry never ran (no marker file).
Cases that load are also run through `analyze --json`, which must succeed. Under ASan the
bombs are skipped (ASan's operator new aborts instead of throwing std::bad_alloc).
Writes a results JSON (--results) and prints a per-kind table; exit 1 on any failure.
"""
import argparse
import concurrent.futures
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run_one(cmd, mem_mb, timeout, asan):
    """Runs cmd; returns (rc or -signal, stdout, stderr, seconds, peak RSS MiB, timed_out)."""
    def limits():
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if not asan:
            resource.setrlimit(resource.RLIMIT_AS, (mem_mb << 20, mem_mb << 20))
    env = dict(os.environ)
    if asan:
        env['ASAN_OPTIONS'] = ('detect_leaks=1:abort_on_error=1:allocator_may_return_null=1:'
                               'max_allocation_size_mb=%d:hard_rss_limit_mb=%d' % (mem_mb, 3 * mem_mb))
        env['UBSAN_OPTIONS'] = 'print_stacktrace=1:halt_on_error=1'
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, preexec_fn=limits, env=env)
        timed_out = False
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - start > timeout:
                p.kill()
                timed_out = True
                pid, status, usage = os.wait4(p.pid, 0)
                break
            time.sleep(0.005)
        p.returncode = 0  # reaped by wait4; keep Popen from waiting again
        seconds = time.monotonic() - start
        rc = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return rc, out.read(), err.read(), seconds, usage.ru_maxrss / 1024.0, timed_out


def check(case, cli, args):
    path = case['path']
    if args.asan and case['kind'] == 'bomb':
        # ASan's operator new aborts when an allocation fails instead of throwing
        # std::bad_alloc, so the path a bomb takes under a memory limit cannot run here;
        # without a limit it would inflate 16 GiB. The release run covers the bombs.
        return {'name': case['name'], 'kind': case['kind'], 'expect': case['expect'], 'rc': None,
                'seconds': 0.0, 'rss_mb': 0.0, 'problems': [], 'skipped': 'bomb under ASan', 'stderr': ''}
    rc, out, err, secs, rss, timed_out = run_one([cli, 'summary', '--json', path], args.mem_mb, args.timeout,
                                                 args.asan)
    r = {'name': case['name'], 'kind': case['kind'], 'expect': case['expect'], 'rc': rc,
         'seconds': round(secs, 3), 'rss_mb': round(rss, 1), 'problems': []}
    errtext = err.decode('utf-8', 'replace')
    r['stderr'] = errtext.strip()[:400]
    bad = r['problems'].append
    if timed_out:
        bad('no result after %d s (hang?)' % args.timeout)
    elif rc == 2:
        if out:
            bad('exit 2 but %d bytes on stdout (half-loaded output)' % len(out))
        lines = errtext.rstrip('\n').split('\n')
        if len(lines) != 1:
            bad('expected one error line, got %d' % len(lines))
        if not lines[0].startswith('headroom-cli: '):
            bad('the error line does not start with "headroom-cli: "')
        if path not in errtext and os.path.basename(path) not in errtext:
            bad('the error does not name the file')
        if case['expect'] == 'ok':
            bad('refused a valid file')
    elif rc == 0:
        try:
            summary = json.loads(out)
            if not isinstance(summary, dict) or 'devices' not in summary:
                bad('exit 0 but the JSON summary has no devices')
        except ValueError as e:
            bad('exit 0 but stdout is not a complete JSON summary (%s)' % e)
        if case['expect'] == 'error':
            bad('loaded a file that must be refused')
        # Whatever loads must also analyse.
        arc, aout, aerr, asecs, arss, ato = run_one([cli, 'analyze', '--json', path], args.mem_mb, args.timeout,
                                                   args.asan)
        r['analyze_rc'] = arc
        r['rss_mb'] = round(max(rss, arss), 1)
        r['seconds'] = round(secs + asecs, 3)
        if ato or arc != 0:
            bad('analyze failed: exit %d%s %s' % (arc, ' (timeout)' if ato else '',
                                                 aerr.decode('utf-8', 'replace').strip()[-300:]))
    else:
        bad('exit %d (crash or abort): %s' % (rc, errtext.strip()[-600:]))
    rss_limit = args.mem_mb * (3 if args.asan else 1)  # ASan's shadow memory and quarantine
    if r['rss_mb'] > rss_limit:
        bad('peak RSS %.0f MiB over the %d MiB limit' % (r['rss_mb'], rss_limit))
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--cli', required=True)
    ap.add_argument('--out', required=True, help='folder for the generated cases')
    ap.add_argument('--source', default=os.path.join(HERE, '..', '..'))
    ap.add_argument('--real', help='the real_traces folder')
    ap.add_argument('--asan', action='store_true', help='the CLI is built with ASan (no RLIMIT_AS)')
    ap.add_argument('--mem-mb', type=int, default=1024)
    ap.add_argument('--timeout', type=float, default=30)
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--results', help='write per-case results here (JSON)')
    ap.add_argument('--only', help='run only the cases whose name contains this')
    args = ap.parse_args()

    gen = [sys.executable, os.path.join(HERE, 'make_badinputs.py'), '--out', args.out, '--source', args.source,
           '--cli', args.cli]
    if args.real:
        gen += ['--real', args.real]
    subprocess.run(gen, check=True)
    with open(os.path.join(args.out, 'cases.json')) as f:
        manifest = json.load(f)
    cases = [c for c in manifest['cases'] if not args.only or args.only in c['name']]
    marker = manifest['marker']
    if os.path.exists(marker):
        os.unlink(marker)

    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda c: check(c, args.cli, args), cases))
    wall = time.monotonic() - start
    if os.path.exists(marker):
        for r in results:
            if r['kind'] == 'malicious':
                r['problems'].append('the marker file %s exists: a pickle ran a command' % marker)

    kinds = {}
    for r in results:
        k = kinds.setdefault(r['kind'], {'cases': 0, 'refused': 0, 'loaded': 0, 'failed': 0, 'skipped': 0,
                                         'max_rss_mb': 0.0, 'max_seconds': 0.0})
        k['cases'] += 1
        k['skipped'] += bool(r.get('skipped'))
        k['refused'] += r['rc'] == 2
        k['loaded'] += r['rc'] == 0
        k['failed'] += bool(r['problems'])
        k['max_rss_mb'] = max(k['max_rss_mb'], r['rss_mb'])
        k['max_seconds'] = max(k['max_seconds'], r['seconds'])
    failed = [r for r in results if r['problems']]
    limit = ('ASan max_allocation_size_mb=%d, hard_rss_limit_mb=%d' % (args.mem_mb, 3 * args.mem_mb) if args.asan
             else 'RLIMIT_AS %d MiB' % args.mem_mb)
    print('%d bad-input cases through %s (%s, %.0f s limit each), %.1f s wall' % (len(results), args.cli, limit,
                                                                              args.timeout, wall))
    print('%-12s %6s %8s %7s %7s %8s %9s %8s' % ('kind', 'cases', 'refused', 'loaded', 'failed', 'skipped',
                                                'max RSS', 'max s'))
    for name, k in sorted(kinds.items()):
        print('%-12s %6d %8d %7d %7d %8d %5.0f MiB %8.2f' % (name, k['cases'], k['refused'], k['loaded'],
                                                            k['failed'], k['skipped'], k['max_rss_mb'],
                                                            k['max_seconds']))
    bombs = [r for r in results if r['kind'] == 'bomb']
    for r in bombs:
        if r.get('skipped'):
            continue
        print('  %s: exit %d, peak RSS %.0f MiB: %s' % (r['name'], r['rc'], r['rss_mb'], r['stderr'][:160]))
    if args.results:
        with open(args.results, 'w') as f:
            json.dump({'limit': limit, 'wall_seconds': round(wall, 1), 'kinds': kinds, 'results': results}, f,
                      indent=1, ensure_ascii=False)
    for r in failed:
        print('FAIL %s (expect %s, exit %d): %s' % (r['name'], r['expect'], r['rc'], '; '.join(r['problems'])))
        if r['stderr']:
            print('     stderr: ' + r['stderr'][:300].replace('\n', '\n             '))
    skipped = sum(bool(r.get('skipped')) for r in results)
    print('%d of %d cases passed%s' % (len(results) - len(failed) - skipped, len(results),
                                       ' (%d skipped under ASan)' % skipped if skipped else ''))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
