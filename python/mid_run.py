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

``as_wrapped(snap)`` makes a recording look as one whose ring buffer wrapped mid-epoch
(``record_memory_history(max_entries=N)``): the trace keeps only its entries from the middle of
the last iteration's forward on; what was allocated before that point and is still alive there
(the weights, the optimizer state, the first half of the forward's activations) has no
``alloc`` entry, only its ``free`` or a segment, and its truth goes to ``before_window``.

``as_out_of_memory(snap, phase)`` makes it look as a run whose last iteration ran out of memory
in its ``phase`` ("forward" or "backward"): the request halfway through that phase becomes an
``oom`` entry (its size, its frames, the device free being what a capacity of the bytes then
alive allows) and nothing after it is kept, as a CUDA OOM ends the step. What is alive at the OOM
stays in ``segments``; the truth keeps the rows before it.

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


def _with_truth(snap):
    """The trace, the truth, its rows and each row's entry index (rows and alloc entries pair up)."""
    entries = snap["device_traces"][0]
    truth = snap["headroom_truth"]
    rows = truth["allocations"]
    alloc_at = [k for k, e in enumerate(entries) if e.get("action") == "alloc"]
    if len(rows) != len(alloc_at):
        raise ValueError("%d truth rows for %d alloc entries" % (len(rows), len(alloc_at)))
    return entries, truth, rows, alloc_at


def _middle_of(rows, phase="forward"):
    """Index of the truth row halfway through the last iteration's ``phase`` (the rows after
    the last "optimizer" row before its last backward)."""
    phases = [r[2] for r in rows]
    last_backward = max(i for i, p in enumerate(phases) if p == "backward")
    start = last_backward
    while start > 0 and phases[start - 1] != "optimizer":
        start -= 1
    end = last_backward + 1
    while phase == "backward" and end < len(phases) and phases[end] == "backward":
        end += 1
    picked = [i for i in range(start, end) if phases[i] == phase]
    if len(picked) < 2:
        raise ValueError("no %s in the last iteration" % phase)
    return picked[len(picked) // 2]


def _wrap_point(allocs, rows):
    """Index into ``allocs`` of the middle of the last iteration's forward."""
    return _middle_of(rows, "forward")


def as_wrapped(snap):
    """Rewrites ``snap`` (a plain dict from headroom_cpu.py, with its truth) in place as a
    recording whose ring buffer wrapped in the last iteration's forward; returns it."""
    entries, truth, rows, alloc_at = _with_truth(snap)
    cut_alloc = _wrap_point([entries[k] for k in alloc_at], rows)
    cut = alloc_at[cut_alloc]
    alive = _alive_at_end(entries[:cut])
    row_of = {alloc_at[i]: rows[i] for i in range(len(rows))}
    index_of = {id(e): k for k, e in enumerate(entries)}
    before = [[addr, size, row_of[index_of[id(e)]][1]] for addr, (size, e) in sorted(alive.items())]
    snap["device_traces"][0] = entries[cut:]
    snap["segments"] = [_segment(addr, size) for addr, (size, _e) in sorted(_alive_at_end(entries).items())]
    truth["allocations"] = rows[cut_alloc:]
    truth["before_window"] = before
    return snap


def as_out_of_memory(snap, phase):
    """Rewrites ``snap`` (a plain dict from headroom_cpu.py, with its truth) in place as a run
    that ran out of memory halfway through its last iteration's ``phase``; returns it."""
    entries, truth, rows, alloc_at = _with_truth(snap)
    cut_alloc = _middle_of(rows, phase)
    cut = alloc_at[cut_alloc]
    request = entries[cut]
    alive = _alive_at_end(entries[:cut])
    live = sum(size for size, _e in alive.values())
    oom = {"action": "oom", "addr": 0, "size": request["size"], "stream": request.get("stream", 0),
           "time_us": request.get("time_us", 0), "frames": request.get("frames", []),
           "device_free": request["size"] // 2}  # the capacity: what was alive and half the request
    snap["device_traces"][0] = entries[:cut] + [oom]
    snap["segments"] = [_segment(addr, size) for addr, (size, _e) in sorted(alive.items())]
    truth["allocations"] = rows[:cut_alloc]
    snap.setdefault("headroom_config", {})["oom_capacity_bytes"] = live + request["size"] // 2
    return snap
