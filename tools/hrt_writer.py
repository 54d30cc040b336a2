#!/usr/bin/env python3
"""Dependency-free writer of Headroom traces (.hrt), for JAX, custom allocators, C++ tools...

The format is specified in docs/native-format.md. Python's standard library has no zstd, so
this writer stores every section uncompressed (section flag bit 0 clear), which every
Headroom reader accepts; `headroom-cli convert file.hrt small.hrt` recompresses it.

    from hrt_writer import HrtWriter
    w = HrtWriter(source_format="my allocator")
    dev = w.device(0, device_type="cuda")
    dev.event("alloc", addr=0x1000, size=4096, time_us=10, stack=[("train.py", 12, "step")])
    dev.event("free", addr=0x1000, size=4096, time_us=20)
    dev.segment(address=0x1000, total_size=2 << 20)
    w.write("trace.hrt")

Actions: alloc, free_requested, free_completed, segment_alloc, segment_free, segment_map,
segment_unmap, snapshot, oom, annotate, free (a merged free). Categories (optional, per event):
parameter, optimizer_state, input, temporary, activation, gradient, autograd_detail, unknown.
"""
import json
import os
import struct
import tempfile

ACTIONS = ["alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map",
           "segment_unmap", "snapshot", "oom", "annotate", "free", "other"]
CATEGORIES = ["parameter", "optimizer_state", "input", "temporary", "activation", "gradient",
              "autograd_detail", "unknown"]
MAGIC = b"\x89HRT\r\n\x1a\n"
NO_TIME = -(1 << 63)


class _Device:
    def __init__(self, writer, device, device_type, rank):
        self.w, self.device, self.device_type, self.rank = writer, device, device_type, rank
        self.actions, self.addr, self.size, self.stream, self.time, self.stack, self.cat = ([] for _ in range(7))
        self.counts, self.ooms, self.segments, self.blocks = {}, [], [], []
        self.any_category = False

    def event(self, action, addr=0, size=0, time_us=None, stream=0, stack=None, category=None):
        if action not in ACTIONS:
            raise ValueError("unknown action %r" % action)
        self.counts[action] = self.counts.get(action, 0) + 1
        if action == "oom":
            self.ooms.append([len(self.actions), size, 0])
        self.actions.append(ACTIONS.index(action))
        self.addr.append(addr)
        self.size.append(size)
        self.stream.append(stream)
        self.time.append(NO_TIME if time_us is None else int(time_us))
        self.stack.append(self.w._stack(stack or []))
        self.any_category |= category is not None
        self.cat.append(CATEGORIES.index(category or "unknown"))

    def segment(self, address, total_size, stream=0, blocks=()):
        """blocks: (address, size, state) with state 'active_allocated', 'active_pending_free', 'inactive'."""
        states = ["active_allocated", "active_pending_free", "inactive"]
        first = len(self.blocks)
        allocated = 0
        for b_addr, b_size, state in blocks:
            self.blocks.append(struct.pack("<QqqBI", b_addr, b_size, b_size, states.index(state), 0))
            allocated += b_size if state == "active_allocated" else 0
        self.segments.append(struct.pack("<iQqqqqqBBqqIII", self.device, address, total_size, allocated, allocated,
                                         allocated, stream, 1, 0, 0, 0, 0, first, len(self.blocks) - first))

    def _payload(self):
        n = len(self.actions)
        header = {"device": self.device, "device_type": self.device_type, "source_format": self.w.source_format,
                  "source_file": "", "rank": self.rank, "relative_curve": False, "events": n,
                  "any_time": any(t != NO_TIME for t in self.time), "action_counts": self.counts, "ooms": self.ooms}
        h = json.dumps(header).encode()
        out = [struct.pack("<I", len(h)), h]

        def col(name, fmt, values):
            data = struct.pack("<%d%s" % (len(values), fmt), *values)
            out.append(name.encode() + struct.pack("<IQ", 0, len(data)) + data)

        col("actn", "B", self.actions)
        col("addr", "Q", self.addr)
        col("size", "q", self.size)
        col("strm", "q", self.stream)
        col("time", "q", self.time)
        col("stck", "I", self.stack)
        if self.any_category:
            col("catg", "B", self.cat)
        for name, records in (("segs", self.segments), ("blks", self.blocks)):
            data = b"".join(records)
            out.append(name.encode() + struct.pack("<IQ", 0, len(data)) + data)
        return b"".join(out)


class HrtWriter:
    def __init__(self, source_format="hrt_writer.py", notes=()):
        self.source_format = source_format
        self.notes = list(notes)
        self.strings, self.string_ids = [""], {"": 0}
        self.frames, self.frame_ids = [], {}
        self.stacks, self.stack_ids = [()], {(): 0}
        self.devices = []

    def device(self, device, device_type="cuda", rank=-1):
        d = _Device(self, device, device_type, rank)
        self.devices.append(d)
        return d

    def _string(self, s):
        if s not in self.string_ids:
            self.string_ids[s] = len(self.strings)
            self.strings.append(s)
        return self.string_ids[s]

    def _stack(self, frames):
        ids = []
        for filename, line, name in frames:  # innermost first
            key = (self._string(filename), self._string(name), int(line))
            if key not in self.frame_ids:
                self.frame_ids[key] = len(self.frames)
                self.frames.append(key)
            ids.append(self.frame_ids[key])
        key = tuple(ids)
        if key not in self.stack_ids:
            self.stack_ids[key] = len(self.stacks)
            self.stacks.append(key)
        return self.stack_ids[key]

    def encode(self):
        def section(sid, payload, critical=True):
            return sid.encode() + struct.pack("<IQQ", 2 if critical else 0, len(payload), len(payload)) + payload

        meta = {"writer": "hrt_writer.py", "format": self.source_format, "schema": "", "notes": self.notes,
                "allocator_settings": [], "annotations": [], "time_windows": []}
        strs = struct.pack("<I", len(self.strings)) + b"".join(
            struct.pack("<I", len(s.encode())) + s.encode() for s in self.strings)
        frms = struct.pack("<I", len(self.frames)) + b"".join(struct.pack("<IIq", f, n, l) for f, n, l in self.frames)
        offsets, flat = [0], []
        for st in self.stacks:
            flat += st
            offsets.append(len(flat))
        stks = struct.pack("<I", len(self.stacks)) + struct.pack("<%dI" % len(offsets), *offsets) + \
            struct.pack("<%dI" % len(flat), *flat)
        parts = [MAGIC, struct.pack("<HHIQ", 1, 0, 0, 0), section("META", json.dumps(meta).encode()),
                 section("STRS", strs), section("FRMS", frms), section("STKS", stks)]
        parts += [section("DEVC", d._payload()) for d in self.devices]
        parts.append(section("END ", b"", critical=False))
        return b"".join(parts)

    def write(self, path):
        """Atomic: a temporary file in the same directory, fsync, then rename."""
        data = self.encode()
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".hrt-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
