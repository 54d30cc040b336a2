"""A CPU recording made to look as a snapshot taken mid-run does (issue 46).

headroom_cpu.py writes the storages that existed before the capture (``model=``,
``optimizer=``) as ``alloc`` entries at the start of the trace with one frame
``<before capture>`` naming the tensor. A real snapshot recorded after the optimizer existed has
no such entries: that memory is only in ``segments`` (blocks alive at the end) or shows up as a
``free`` of an address the trace never allocated. ``as_recorded_mid_run(snap)`` rewrites a
recording to that form, in place:

* the ``<before capture>`` alloc entries leave ``device_traces[0]`` (their frees stay);
* every storage alive at the end (from before or inside the trace) becomes one segment with one
  ``active_allocated`` block, so the snapshot's totals are what the trace ends at;
* ``headroom_truth["allocations"]`` loses those rows, and ``headroom_truth["before_window"]``
  holds ``[address, bytes, category]`` for each storage from before the trace (the tensor names
  in the frames are dropped with the entries: Headroom must not read them).

Nothing here imports torch.
"""

BEFORE_CAPTURE = "<before capture>"
FREES = ("free_requested", "free_completed", "free")


def _is_pre_existing(entry):
    frames = entry.get("frames") or []
    return (entry.get("action") == "alloc" and len(frames) == 1
            and frames[0].get("filename") == BEFORE_CAPTURE)


def _alive_at_end(entries):
    """{address: (bytes, alloc entry or None)} of what no free closed, in trace order."""
    alive = {}
    for e in entries:
        a = e.get("action")
        if a == "alloc":
            alive[e["addr"]] = (e["size"], e)
        elif a in ("free_completed", "free"):
            alive.pop(e["addr"], None)
    return alive


def _segment(addr, size):
    return {"device": 0, "address": addr, "total_size": size, "allocated_size": size,
            "active_size": size, "requested_size": size, "stream": 0,
            "segment_type": "large" if size > (1 << 20) else "small",
            "blocks": [{"size": size, "requested_size": size, "state": "active_allocated",
                        "frames": []}]}


def as_recorded_mid_run(snap):
    """Rewrites ``snap`` (a plain dict from headroom_cpu.py) in place; returns it."""
    entries = snap["device_traces"][0]
    truth = snap.get("headroom_truth")
    rows = truth["allocations"] if truth else None
    allocs = [e for e in entries if e.get("action") == "alloc"]
    if rows is not None and len(rows) != len(allocs):
        raise ValueError("%d truth rows for %d alloc entries" % (len(rows), len(allocs)))
    before, kept_rows = [], []
    for i, e in enumerate(allocs):
        if _is_pre_existing(e):
            before.append([e["addr"], e["size"], rows[i][1] if rows is not None else None])
        elif rows is not None:
            kept_rows.append(rows[i])
    alive = _alive_at_end(entries)
    snap["device_traces"][0] = [e for e in entries if not _is_pre_existing(e)]
    snap["segments"] = [_segment(addr, size) for addr, (size, _e) in sorted(alive.items())]
    if truth is not None:
        truth["allocations"] = kept_rows
        truth["before_window"] = before
    return snap
