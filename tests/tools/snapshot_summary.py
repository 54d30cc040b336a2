#!/usr/bin/env python3
"""Independent, stdlib-only reference summary of a PyTorch CUDA memory snapshot.

Usage: snapshot_summary.py FILE... [--out-dir DIR]

Loads each FILE (pickle of any protocol 2-5, gzip-compressed pickle, or a
`_memory_viz` HTML page with an embedded base64 pickle) with a restricted
Unpickler that refuses every global lookup (so nothing is ever executed),
and prints a JSON summary {"devices": [...]} per file. With --out-dir, writes
<out-dir>/<basename>.summary.json (indent=1, sort_keys=True) instead of
printing.

Semantics follow docs/formats.md ("What the readers take from each format", "How the peak is computed") (see
the module-level comments in summarize_device for the replay rules). This is
the oracle the C++ implementation is tested against, so keep it simple and
obviously correct rather than fast.
"""
import argparse
import base64
import gzip
import io
import json
import os
import pickle
import sys


class SnapshotLoadError(Exception):
    pass


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module, name):  # noqa: D401 - refuse everything
        raise SnapshotLoadError("refusing global %s.%s" % (module, name))

    def persistent_load(self, pid):
        raise SnapshotLoadError("refusing persistent id")


def _extract_html_pickle(data):
    marker = b'"base64": "'
    i = data.find(marker)
    if i < 0:
        raise SnapshotLoadError("HTML page without an embedded base64 snapshot")
    start = i + len(marker)
    end = data.find(b'"', start)
    if end < 0:
        raise SnapshotLoadError("unterminated base64 string")
    return base64.b64decode(data[start:end])


def load_bytes(data):
    """Decode raw file bytes into the snapshot Python object (dict or list)."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    stripped = data.lstrip()
    if stripped[:1] == b"<":
        data = _extract_html_pickle(stripped)
    if not data:
        raise SnapshotLoadError("empty input")
    if data[:1] != b"\x80":
        raise SnapshotLoadError("not a pickle (first byte %r)" % data[:1])
    try:
        # Unpickler stops at STOP; trailing NUL padding (HTML) is ignored.
        return _RestrictedUnpickler(io.BytesIO(data)).load()
    except SnapshotLoadError:
        raise
    except Exception as e:  # malformed pickle
        raise SnapshotLoadError("malformed pickle: %s: %s" % (type(e).__name__, e))


def load_file(path):
    with open(path, "rb") as f:
        return load_bytes(f.read())


def normalize(obj):
    if isinstance(obj, list):
        return {"segments": obj}
    if not isinstance(obj, dict):
        raise SnapshotLoadError("root is %s, not a dict or list" % type(obj).__name__)
    return obj


def block_requested_size(block):
    if "requested_size" in block:
        return block["requested_size"]
    hist = block.get("history") or []
    if hist:
        return hist[0]["real_size"]
    return block["size"]


def iter_blocks_with_address(segment):
    addr = segment.get("address", 0)
    for b in segment.get("blocks", []):
        yield (b["address"] if "address" in b else addr), b
        addr += b["size"]


FREE_ACTIONS = ("free_completed", "free")
SEG_UP = ("segment_alloc", "segment_map")
SEG_DOWN = ("segment_free", "segment_unmap")
ACTIVE_STATES = ("active_pending_free", "active_awaiting_free")


def summarize_device(dev, segments, trace):
    segs = [s for s in segments if s.get("device", 0) == dev]
    reserved = sum(s["total_size"] for s in segs)
    allocated = 0
    pending = 0
    requested = 0
    active_blocks = []  # (addr, requested_size) of active_allocated blocks
    for s in segs:
        for addr, b in iter_blocks_with_address(s):
            st = b.get("state")
            if st == "active_allocated":
                allocated += b["size"]
                rs = block_requested_size(b)
                requested += rs
                active_blocks.append((addr, rs))
            elif st in ACTIVE_STATES:
                pending += b["size"]

    actions = {}
    ooms = []
    open_allocs = {}
    initial = 0
    running = 0
    # curve value after event i (relative, without `initial`)
    rel = []
    seg_running = 0
    seg_rel = []
    for i, e in enumerate(trace):
        a = e.get("action")
        actions[a] = actions.get(a, 0) + 1
        if a == "alloc":
            addr = e["addr"]
            if addr in open_allocs:
                running -= open_allocs.pop(addr)
            open_allocs[addr] = e["size"]
            running += e["size"]
        elif a in FREE_ACTIONS:
            addr = e["addr"]
            if addr in open_allocs:
                running -= open_allocs.pop(addr)
            else:
                # allocated before the window: it was alive from the start
                initial += e["size"]
                running -= e["size"]
        elif a in SEG_UP:
            seg_running += e["size"]
        elif a in SEG_DOWN:
            seg_running -= e["size"]
        elif a == "oom":
            ooms.append({"event_index": i, "size": e.get("size", 0),
                         "device_free": e.get("device_free", 0)})
        rel.append(running)
        seg_rel.append(seg_running)

    if trace:
        open_addrs = set(open_allocs)
        for addr, rs in active_blocks:
            if addr not in open_addrs:
                initial += rs  # ghost: alive for the whole window
        peak = initial
        peak_idx = -1
        for i, r in enumerate(rel):
            v = initial + r
            if v > peak:
                peak = v
                peak_idx = i
    else:
        # the final state only: the live tensors' requested bytes, as alloc entries count them
        peak = requested
        peak_idx = -1

    res_start = reserved - seg_running
    res_peak = res_start
    for r in seg_rel:
        if res_start + r > res_peak:
            res_peak = res_start + r

    return {
        "device": dev,
        "segments": len(segs),
        "reserved_bytes": reserved,
        "allocated_bytes": allocated,
        "active_bytes": allocated + pending,
        "requested_bytes": requested,
        "trace_entries": len(trace),
        "actions": actions,
        "peak_allocated_bytes": peak,
        "peak_event_index": peak_idx,
        "oom": ooms,
        "reserved_curve_start": res_start,
        "reserved_peak_bytes": res_peak,
    }


def summarize(snapshot):
    snap = normalize(snapshot)
    segments = snap.get("segments") or []
    traces = snap.get("device_traces") or []
    devs = set(s.get("device", 0) for s in segments)
    for d, t in enumerate(traces):
        if t:
            devs.add(d)
    out = []
    for d in sorted(devs):
        trace = traces[d] if d < len(traces) and traces[d] else []
        out.append(summarize_device(d, segments, trace))
    return {"devices": out}


def check(paths, golden_dir):
    """Recompute every golden that exists for the given files or directories."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += [os.path.join(p, n) for n in sorted(os.listdir(p))]
        else:
            files.append(p)
    compared = 0
    failed = 0
    for path in files:
        golden = os.path.join(golden_dir, os.path.basename(path) + ".summary.json")
        if not os.path.exists(golden):
            continue
        with open(golden) as f:
            expected = json.load(f)
        actual = summarize(load_file(path))
        compared += 1
        if json.loads(json.dumps(actual)) != expected:
            failed += 1
            print("MISMATCH", path, file=sys.stderr)
    print("%d passed, %d failed" % (compared - failed, failed))
    return 1 if failed or compared == 0 else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--out-dir")
    ap.add_argument("--check", action="store_true",
                    help="compare with <golden-dir>/<basename>.summary.json instead of writing; "
                         "directories are expanded to the goldens they have")
    ap.add_argument("--golden-dir")
    args = ap.parse_args(argv)
    if args.check:
        return check(args.files, args.golden_dir)
    rc = 0
    for path in args.files:
        try:
            summary = summarize(load_file(path))
        except (SnapshotLoadError, OSError) as e:
            print("%s: error: %s" % (path, e), file=sys.stderr)
            rc = 1
            continue
        text = json.dumps(summary, indent=1, sort_keys=True) + "\n"
        if args.out_dir:
            os.makedirs(args.out_dir, exist_ok=True)
            outp = os.path.join(args.out_dir, os.path.basename(path) + ".summary.json")
            with open(outp, "w") as f:
                f.write(text)
            print("wrote", outp)
        else:
            if len(args.files) > 1:
                print("==>", path)
            sys.stdout.write(text)
    return rc


if __name__ == "__main__":
    sys.exit(main())
