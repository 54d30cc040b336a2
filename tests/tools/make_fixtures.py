#!/usr/bin/env python3
"""Deterministic generator of small synthetic snapshot fixtures (stdlib only).

Usage: make_fixtures.py [--out-dir tests/fixtures]

Every fixture is produced by a tiny simulation of the CUDA caching allocator
(first-fit block splitting, free-block merging, 2 MiB small / >=20 MiB large
segments, optional expandable segments), so that segments, blocks and trace
entries are mutually consistent exactly like a real `_snapshot()`. The
simulation also tracks the true live (requested) bytes after every event, and
the generator asserts that the independent reference implementation
(snapshot_summary.py) reproduces the same peak -- a cross-check of both.

The malicious fixtures are written byte by byte and are NEVER loaded here.
Output is byte-for-byte reproducible (no randomness without a fixed seed, no
wall-clock, gzip mtime fixed to 0).
"""
import argparse
import base64
import gzip
import io
import json
import os
import pickle
import random
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import snapshot_summary  # noqa: E402

KiB = 1024
MiB = 1024 * 1024
SMALL_SEG = 2 * MiB
LARGE_SEG = 20 * MiB
T0 = 1748730219596671  # time_us base (2025-05-31, like real file #5)


def round_up(n, m):
    return (n + m - 1) // m * m


# --------------------------------------------------------------------------
# Frames: built once and shared by reference (like ivalue_symbolize / pybind)
# --------------------------------------------------------------------------
def F(filename, line, name):
    return {"filename": filename, "line": line, "name": name}


CPP_UNWIND = F("??", 0, "torch::unwind::unwind()")
CPP_GATHER = F("??", 0, "torch::CapturedTraceback::gather(bool, bool, bool)")
CPP_MALLOC = F("CUDACachingAllocator.cpp", 0,
               "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)")
CPP_EMPTY = F("??", 0, "at::native::empty_cuda(c10::ArrayRef<long>, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)")
CPP_ENGINE = F("??", 0, "torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)")
CPP_MMBWD = F("??", 0, "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)")
CPP_START = F("??", 0, "_start")
PY_MODULE = F("/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", 1750, "_call_impl")
PY_LINEAR = F("/usr/lib/python3.11/site-packages/torch/nn/modules/linear.py", 125, "forward")
PY_MODEL = F("/home/user/proj/model.py", 88, "forward")
PY_TRAIN = F("/home/user/proj/train.py", 41, "train_step")
PY_LOSS = F("/home/user/proj/train.py", 44, "train_step")
PY_ADAMW = F("/usr/lib/python3.11/site-packages/torch/optim/adamw.py", 211, "_init_group")
PY_MAIN = F("/home/user/proj/train.py", 120, "<module>")

TB_FWD = [CPP_UNWIND, CPP_GATHER, CPP_MALLOC, CPP_EMPTY, PY_LINEAR, PY_MODULE, PY_MODEL, PY_MODULE, PY_TRAIN, PY_MAIN, CPP_START]
TB_LOSS = [CPP_UNWIND, CPP_GATHER, CPP_MALLOC, CPP_EMPTY, PY_LOSS, PY_MAIN, CPP_START]
TB_BWD = [CPP_UNWIND, CPP_GATHER, CPP_MALLOC, CPP_EMPTY, CPP_MMBWD, CPP_ENGINE, CPP_START]
TB_OPT = [CPP_UNWIND, CPP_GATHER, CPP_MALLOC, CPP_EMPTY, PY_ADAMW, PY_TRAIN, PY_MAIN, CPP_START]
TB_FREE = [CPP_UNWIND, CPP_GATHER, PY_TRAIN, PY_MAIN, CPP_START]

# legacy (1.13/2.0) history frames: Python only, no C++
LEG_A = [PY_LINEAR, PY_MODULE, PY_MODEL, PY_MAIN]
LEG_B = [PY_ADAMW, PY_TRAIN, PY_MAIN]


# --------------------------------------------------------------------------
# Allocator simulation
# --------------------------------------------------------------------------
class Seg:
    def __init__(self, device, address, size, stream, pool, large, expandable, frames):
        self.device = device
        self.address = address
        self.stream = stream
        self.pool = pool
        self.large = large
        self.expandable = expandable
        self.frames = frames
        # block: dict(size, state, req, frames)
        self.blocks = [dict(size=size, state="inactive", req=0, frames=[])]

    @property
    def total(self):
        return sum(b["size"] for b in self.blocks)

    def addr_of(self, idx):
        return self.address + sum(b["size"] for b in self.blocks[:idx])


class Sim:
    def __init__(self, ndev=1, time_step=37, record_time=True, capacity=None,
                 expandable=False):
        self.segs = []
        self.traces = [[] for _ in range(ndev)]
        self.recording = [True] * ndev
        self.live = {}  # name -> (seg, addr, req)
        self.live_bytes = [0] * ndev
        self.curve = [[] for _ in range(ndev)]  # true live bytes after each event
        self.t = T0
        self.time_step = time_step
        self.record_time = record_time
        self.capacity = capacity
        self.expandable = expandable
        self.next_base = [0x7F3A00000000 + d * 0x10000000000 for d in range(ndev)]
        self.addr_to_name = {}
        self.annotations = []

    # -- helpers
    def _emit(self, dev, entry, frames=None, extra=None):
        self.t += self.time_step
        if not self.recording[dev]:
            return
        if extra:
            entry.update(extra)
        if self.record_time:
            entry["time_us"] = self.t
        if frames is not None:
            entry["frames"] = frames
        self.traces[dev].append(entry)
        self.curve[dev].append(self.live_bytes[dev])

    def annotate(self, name, stage, dev=0):
        self.t += self.time_step
        self.annotations.append({"name": name, "stage": stage, "device": dev, "time_us": self.t})

    def reserved(self, dev):
        return sum(s.total for s in self.segs if s.device == dev)

    def _new_base(self, dev, size):
        a = self.next_base[dev]
        self.next_base[dev] += round_up(size, SMALL_SEG) + (1 << 32 if self.expandable else 0)
        return a

    def _find(self, dev, stream, pool, large, rounded):
        for s in sorted(self.segs, key=lambda s: s.address):
            if (s.device, s.stream, s.pool, s.large) != (dev, stream, pool, large):
                continue
            for i, b in enumerate(s.blocks):
                if b["state"] == "inactive" and b["size"] >= rounded:
                    return s, i
        return None

    def alloc(self, name, req, frames=TB_FWD, dev=0, stream=0, pool=(0, 0), extra=None):
        rounded = round_up(max(req, 1), 512)
        large = rounded > MiB
        hit = self._find(dev, stream, pool, large, rounded)
        if hit is None:
            exp = [s for s in self.segs if s.expandable and
                   (s.device, s.stream, s.pool, s.large) == (dev, stream, pool, large)]
            if self.expandable and exp:
                s = exp[0]
                last = s.blocks[-1]
                have = last["size"] if last["state"] == "inactive" else 0
                chunk = round_up(rounded - have, SMALL_SEG)
                self._emit(dev, {"action": "segment_map", "addr": s.address + s.total,
                                 "size": chunk, "stream": stream}, frames, extra)
                if last["state"] == "inactive":
                    last["size"] += chunk
                else:
                    s.blocks.append(dict(size=chunk, state="inactive", req=0, frames=[]))
                hit = (s, len(s.blocks) - 1)
            else:
                if self.expandable:
                    size = round_up(rounded, SMALL_SEG)
                elif not large:
                    size = SMALL_SEG
                elif rounded < 10 * MiB:
                    size = LARGE_SEG
                else:
                    size = round_up(rounded, SMALL_SEG)
                base = self._new_base(dev, size)
                s = Seg(dev, base, size, stream, pool, large, self.expandable, frames)
                self.segs.append(s)
                act = "segment_map" if self.expandable else "segment_alloc"
                self._emit(dev, {"action": act, "addr": base, "size": size, "stream": stream},
                           frames, extra)
                hit = (s, 0)
        s, i = hit
        b = s.blocks[i]
        if b["size"] > rounded:
            s.blocks.insert(i + 1, dict(size=b["size"] - rounded, state="inactive", req=0, frames=[]))
            b["size"] = rounded
        b.update(state="active_allocated", req=req, frames=frames)
        addr = s.addr_of(i)
        self.live[name] = (s, addr, req)
        self.live_bytes[dev] += req
        self._emit(dev, {"action": "alloc", "addr": addr, "size": req, "stream": stream},
                   frames, extra)
        return addr

    def _block(self, name):
        s, addr, req = self.live[name]
        for i in range(len(s.blocks)):
            if s.addr_of(i) == addr:
                return s, i
        raise KeyError(name)

    def free_requested(self, name, frames=TB_FREE, extra=None):
        s, addr, req = self.live[name]
        s2, i = self._block(name)
        s.blocks[i]["state"] = "active_pending_free"
        self._emit(s.device, {"action": "free_requested", "addr": addr, "size": req,
                              "stream": s.stream}, frames, extra)

    def free_completed(self, name, frames=TB_FREE, extra=None):
        s, addr, req = self.live.pop(name)
        for i in range(len(s.blocks)):
            if s.addr_of(i) == addr:
                break
        b = s.blocks[i]
        b["state"] = "inactive"
        # merge with neighbours (keeps the stale requested_size/frames of the
        # lower block, as real snapshots do)
        if i + 1 < len(s.blocks) and s.blocks[i + 1]["state"] == "inactive":
            b["size"] += s.blocks.pop(i + 1)["size"]
        if i > 0 and s.blocks[i - 1]["state"] == "inactive":
            s.blocks[i - 1]["size"] += s.blocks.pop(i)["size"]
        self.live_bytes[s.device] -= req
        self._emit(s.device, {"action": "free_completed", "addr": addr, "size": req,
                              "stream": s.stream}, frames, extra)

    def free(self, name, frames=TB_FREE, extra=None):
        self.free_requested(name, frames, extra)
        self.free_completed(name, frames, extra)

    def empty_cache(self, dev=0, frames=TB_FREE):
        for s in sorted(list(self.segs), key=lambda s: s.address):
            if s.device != dev:
                continue
            if not s.expandable:
                if len(s.blocks) == 1 and s.blocks[0]["state"] == "inactive":
                    self.segs.remove(s)
                    self._emit(dev, {"action": "segment_free", "addr": s.address,
                                     "size": s.total, "stream": s.stream}, frames)
            else:
                last = s.blocks[-1]
                if last["state"] == "inactive":
                    cut = last["size"] // SMALL_SEG * SMALL_SEG
                    if cut:
                        last["size"] -= cut
                        if last["size"] == 0:
                            s.blocks.pop()
                        self._emit(dev, {"action": "segment_unmap", "addr": s.address + s.total,
                                         "size": cut, "stream": s.stream}, frames)
                        if not s.blocks:
                            self.segs.remove(s)

    def oom(self, req, dev=0, stream=0, frames=TB_FWD):
        free = self.capacity - self.reserved(dev) if self.capacity else 0
        self._emit(dev, {"action": "oom", "device_free": free, "size": req, "stream": stream}, frames)

    def snapshot_marker(self, dev=0):
        active = sum(b["size"] for s in self.segs if s.device == dev for b in s.blocks
                     if b["state"] != "inactive")
        self._emit(dev, {"action": "snapshot", "addr": 0, "size": active, "stream": 0})

    # -- output
    def segments(self, style="py27"):
        out = []
        empty = []
        for s in sorted(self.segs, key=lambda s: (s.device, s.address)):
            blocks = []
            addr = s.address
            for b in s.blocks:
                if style == "legacy20":
                    bd = {"size": b["size"], "requested_size": b["req"], "state": b["state"]}
                    if b["state"] != "inactive" or b["req"]:
                        bd["history"] = [{"addr": addr, "real_size": b["req"],
                                          "frames": LEG_A if b["size"] > MiB else LEG_B}]
                elif style == "list":
                    bd = {"size": b["size"], "state": b["state"]}
                else:
                    bd = {"address": addr, "size": b["size"], "requested_size": b["req"],
                          "state": b["state"]}
                    if style == "cpp":
                        bd["frames"] = b["frames"] if b["frames"] else empty
                    else:
                        bd["frames"] = b["frames"] if b["state"] != "inactive" else []
                blocks.append(bd)
                addr += b["size"]
            alloc = sum(b["size"] for b in s.blocks if b["state"] == "active_allocated")
            active = sum(b["size"] for b in s.blocks if b["state"] != "inactive")
            reqs = sum(b["req"] for b in s.blocks if b["state"] == "active_allocated")
            sd = {"device": s.device, "address": s.address, "total_size": s.total,
                  "allocated_size": alloc, "active_size": active}
            if style != "list":
                sd["requested_size"] = reqs
            sd["stream"] = s.stream
            sd["segment_type"] = "large" if s.large else "small"
            if style in ("py27", "cpp"):
                sd["segment_pool_id"] = (s.pool[0], s.pool[1])  # a new tuple per segment, as in pybind/C++
                sd["is_expandable"] = s.expandable
            if style == "cpp":
                sd["frames"] = s.frames if s.frames else empty
                # C++ path: ctx frames are inserted last, empty ones before blocks
                if s.frames:
                    del sd["frames"]
                    sd["blocks"] = blocks
                    sd["frames"] = s.frames
                else:
                    sd["blocks"] = blocks
            else:
                sd["blocks"] = blocks
                if style == "py27":
                    sd["frames"] = s.frames
            out.append(sd)
        return out

    def true_peak(self, dev, start=0):
        """Peak of live requested bytes over trace[start:] (value before the first
        kept event included); index relative to the kept window, -1 = start."""
        c = self.curve[dev]
        base = c[start - 1] if start > 0 else 0
        # live bytes just before event `start`: curve value after event start-1
        peak, idx = base, -1
        for j, v in enumerate(c[start:]):
            if v > peak:
                peak, idx = v, j
        return peak, idx


def settings_27(expandable=False, conf=""):
    return {
        "PYTORCH_CUDA_ALLOC_CONF": conf,
        "max_split_size": -1,
        "garbage_collection_threshold": 0.0,
        "expandable_segments": expandable,
        "pinned_num_register_threads": 1,
        "release_lock_on_cudamalloc": False,
        "pinned_use_cuda_host_register": False,
        "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)},
    }


def full_snapshot(sim, settings=None, style="py27"):
    d = {"segments": sim.segments(style), "device_traces": sim.traces}
    d["allocator_settings"] = settings if settings is not None else settings_27()
    d["external_annotations"] = sim.annotations
    return d


# --------------------------------------------------------------------------
# Scenarios
# --------------------------------------------------------------------------
def training_step(sim, extra_fn=None, layers=3):
    """A small forward / backward / AdamW step. extra_fn(i) -> dict of extra keys."""
    ex = extra_fn or (lambda: None)
    sim.alloc("w0", 4 * MiB, TB_FWD, extra=ex())
    sim.alloc("w1", 4 * MiB, TB_FWD, extra=ex())
    sim.alloc("b0", 4096, TB_FWD, extra=ex())
    sim.alloc("x", 393216, TB_FWD, extra=ex())
    acts = []
    for i in range(layers):
        n = "act%d" % i
        sim.alloc(n, 3 * MiB + 1000 * i, TB_FWD, extra=ex())
        acts.append(n)
        sim.alloc("tmp%d" % i, 200000 + 333 * i, TB_FWD, extra=ex())
        sim.free("tmp%d" % i, extra=ex())
    sim.alloc("loss", 4, TB_LOSS, extra=ex())
    for i in reversed(range(layers)):
        sim.alloc("g%d" % i, 3 * MiB + 1000 * i, TB_BWD, extra=ex())
        sim.free(acts[i], extra=ex())
        sim.free("g%d" % i, extra=ex())
    sim.alloc("gw0", 4 * MiB, TB_BWD, extra=ex())
    sim.alloc("gw1", 4 * MiB, TB_BWD, extra=ex())
    sim.free("loss", extra=ex())
    sim.annotate("Optimizer.step#AdamW.step", "START")
    sim.alloc("exp_avg0", 4 * MiB, TB_OPT, extra=ex())
    sim.alloc("exp_avg_sq0", 4 * MiB, TB_OPT, extra=ex())
    sim.alloc("step_tmp", 12345, TB_OPT, extra=ex())
    sim.free("step_tmp", extra=ex())
    sim.annotate("Optimizer.step#AdamW.step", "END")
    sim.annotate("Optimizer.zero_grad#AdamW.zero_grad", "START")
    sim.free("gw0", extra=ex())
    sim.free("gw1", extra=ex())
    sim.annotate("Optimizer.zero_grad#AdamW.zero_grad", "END")


def scen_base():
    sim = Sim()
    training_step(sim)
    return sim, full_snapshot(sim)


def scen_cpp():
    # C++ pickler flavour: compile_context/user_metadata on every entry, frees
    # recorded without context (no 'frames' key), graph_capture key in settings.
    sim = Sim()
    counter = [0]

    def ex():
        counter[0] += 1
        cc = "Torch-Compiled Region: 0/0" if 8 <= counter[0] < 16 else ""
        um = "step=1" if counter[0] % 5 == 0 else ""
        return {"compile_context": cc, "user_metadata": um}
    training_step(sim, ex)
    # C++ key order: action, addr, size, stream, compile_context, user_metadata,
    # time_us, frames (inserted last, only when recorded)
    for tr in sim.traces:
        for i, e in enumerate(tr):
            keys = ["action", "addr", "device_free", "size", "stream",
                    "compile_context", "user_metadata", "time_us"]
            ne = {k: e[k] for k in keys if k in e}
            if e["action"] not in ("free_requested", "free_completed") and "frames" in e:
                ne["frames"] = e["frames"]
            tr[i] = ne
    st = settings_27()
    items = list(st.items())
    st = dict(items[:7] + [("graph_capture_record_stream_reuse", False)] + items[7:])
    d = {"segments": sim.segments("cpp"), "device_traces": sim.traces,
         "allocator_settings": st,
         "external_annotations": [{"stage": a["stage"], "name": a["name"],
                                   "device": a["device"], "time_us": a["time_us"]}
                                  for a in sim.annotations]}
    return sim, d


def scen_oom():
    sim = Sim(capacity=64 * MiB)
    sim.alloc("a", 8 * MiB, TB_FWD)
    sim.alloc("b", 6 * MiB, TB_FWD)
    sim.alloc("c", 5 * MiB, TB_FWD)
    sim.alloc("d", 30000, TB_FWD)
    sim.alloc("e", 18 * MiB, TB_FWD)
    sim.free("b")
    sim.alloc("f", 12 * MiB, TB_FWD)
    sim.free("f")
    # the allocator frees cached segments and retries before raising
    sim.empty_cache()
    sim.oom(48 * MiB, frames=TB_FWD)
    return sim, full_snapshot(sim)


def scen_expandable():
    sim = Sim(expandable=True)
    sim.alloc("a", 3 * MiB, TB_FWD)
    sim.alloc("b", 5 * MiB + 100, TB_FWD)
    sim.alloc("s1", 65536, TB_FWD)
    sim.alloc("c", 7 * MiB, TB_FWD)
    sim.free("b")
    sim.alloc("d", 9 * MiB, TB_BWD)
    sim.free("d")
    sim.free("c")
    sim.empty_cache()  # unmaps the free tail
    sim.alloc("e", 2 * MiB, TB_OPT)
    d = full_snapshot(sim, settings_27(True, "expandable_segments:True"))
    return sim, d


def scen_multi():
    sim = Sim(ndev=3)
    # device 1: memory allocated while history recording was off for it
    sim.recording[1] = False
    sim.alloc("d1a", 6 * MiB, TB_FWD, dev=1)
    sim.alloc("d1b", 100000, TB_FWD, dev=1)
    sim.alloc("d1c", 2 * MiB, TB_FWD, dev=1)
    sim.free("d1c")
    # device 0: normal
    sim.alloc("a", 3 * MiB, TB_FWD, dev=0)
    sim.alloc("b", 70000, TB_FWD, dev=0)
    sim.alloc("c", 11 * MiB, TB_FWD, dev=0)
    sim.free("a")
    sim.alloc("d", 1 * MiB + 512, TB_BWD, dev=0)
    # device 2: everything freed and the cache emptied -> trace but no segments
    sim.alloc("x", 4 * MiB, TB_FWD, dev=2)
    sim.alloc("y", 512, TB_FWD, dev=2)
    sim.free("x")
    sim.alloc("z", 9 * MiB, TB_FWD, dev=2)
    sim.free("y")
    sim.free("z")
    sim.empty_cache(dev=2)
    return sim, full_snapshot(sim)


def scen_private_pool():
    sim = Sim()
    sim.alloc("p", 5 * MiB, TB_FWD)
    sim.alloc("g_in", 2 * MiB, TB_FWD, pool=(1, 2))
    sim.alloc("g_out", 3 * MiB, TB_FWD, pool=(1, 2))
    sim.alloc("g_small", 8192, TB_FWD, pool=(1, 2))
    sim.alloc("g_tmp", 1 * MiB + 4096, TB_FWD, pool=(1, 2))
    sim.free("g_tmp")
    sim.alloc("q", 700000, TB_BWD)
    sim.free("p")
    return sim, full_snapshot(sim)


def scen_ring():
    sim = Sim()
    # --- history that will be evicted from the ring buffer
    sim.alloc("ghost1", 2 * MiB, TB_FWD)
    sim.alloc("ghost2", 300000, TB_FWD)
    sim.alloc("old1", 4 * MiB, TB_FWD)
    sim.alloc("old2", 1 * MiB + 2048, TB_FWD)
    sim.alloc("ghost3", 6 * MiB, TB_FWD)
    cut = len(sim.traces[0])
    # --- kept window: starts with frees of evicted allocations
    sim.free("old1")
    sim.free("old2")
    sim.alloc("n1", 5 * MiB, TB_BWD)
    sim.alloc("n2", 9000, TB_BWD)
    sim.alloc("n3", 3 * MiB, TB_BWD)
    sim.free("n1")
    sim.alloc("n4", 512 * KiB, TB_BWD)
    sim.free_requested("n3")  # still pending at snapshot time (record_stream)
    sim.traces[0] = sim.traces[0][cut:]
    snap = full_snapshot(sim)
    snap["allocator_settings"]["trace_alloc_max_entries"] = len(sim.traces[0])
    snap["allocator_settings"]["trace_alloc_overflowed"] = True
    return sim, snap, cut


def scen_legacy20():
    sim = Sim(record_time=False)
    sim.alloc("a", 3 * MiB, TB_FWD)
    sim.alloc("m1", 8 * MiB, TB_FWD)
    sim.alloc("m2", 8 * MiB, TB_FWD)
    sim.alloc("b", 4 * MiB + 300, TB_FWD)
    sim.alloc("s", 1000, TB_FWD)
    sim.alloc("t", 4096, TB_FWD)
    sim.free("t")
    sim.free("m1")
    sim.free("m2")
    segs = sim.segments("legacy20")
    # the merged inactive block keeps the history of both former sub-allocations
    for s in segs:
        for b in s["blocks"]:
            if b["state"] == "inactive" and b["size"] >= 16 * MiB:
                h = b["history"][0]
                b["history"] = [h, {"addr": h["addr"] + 8 * MiB, "real_size": 8 * MiB,
                                    "frames": LEG_A}]
    active = sum(b["size"] for s in segs for b in s["blocks"] if b["state"] != "inactive")
    d = {"segments": segs,
         "device_traces": [[{"action": "snapshot", "addr": 0, "size": active, "stream": 0}]]}
    return sim, d


def scen_legacy_list():
    sim = Sim()
    sim.alloc("a", 3 * MiB, TB_FWD)
    sim.alloc("b", 100000, TB_FWD)
    sim.alloc("c", 25 * MiB, TB_FWD)
    sim.alloc("d", 2048, TB_FWD)
    sim.free("b")
    sim.free_requested("d")  # active_pending_free
    return sim, sim.segments("list")


def scen_bigint():
    sim = Sim()
    big_stream = (1 << 63) + 0x5A3C10  # needs a 9-byte LONG1
    neg_stream = -0x7F12345678  # negative LONG1
    sim.alloc("a", 3 * MiB, TB_FWD, stream=big_stream)
    sim.alloc("b", 4096, TB_FWD, stream=neg_stream)
    sim.alloc("c", 6 * MiB, TB_FWD)
    sim.free("a")
    st = settings_27()
    st["max_split_size"] = (1 << 64) - 1  # SIZE_MAX not cast to int64: 9-byte LONG1
    st["pinned_num_register_threads"] = -3  # negative BININT
    st["garbage_collection_threshold"] = -0.5
    return sim, full_snapshot(sim, st)


# --------------------------------------------------------------------------
# Hand-written TorchScript C++ Pickler imitation (docs/formats.md, "Pickle subset")
# --------------------------------------------------------------------------
class CppPickler:
    def __init__(self, memo_containers):
        self.out = io.BytesIO()
        self.memo_id = 0
        self.strings = {}
        self.ptrs = {}
        self.memo_containers = memo_containers  # ids of containers with use_count > 1

    def w(self, b):
        self.out.write(b)

    def next_binput(self):
        i = self.memo_id
        self.memo_id += 1
        if i <= 255:
            self.w(b"q" + struct.pack("<B", i))
        else:
            self.w(b"r" + struct.pack("<I", i))
        return i

    def binget(self, i):
        if i <= 255:
            self.w(b"h" + struct.pack("<B", i))
        else:
            self.w(b"j" + struct.pack("<I", i))

    def dump(self, obj):
        self.w(b"\x80\x02")
        self.push(obj)
        self.w(b".")
        return self.out.getvalue()

    def push(self, v):
        ptr_memo = isinstance(v, (dict, list, tuple)) and id(v) in self.memo_containers
        if ptr_memo and id(v) in self.ptrs:
            self.binget(self.ptrs[id(v)])
            return
        self.push_impl(v)
        if ptr_memo:
            self.ptrs[id(v)] = self.next_binput()

    def push_impl(self, v):
        if isinstance(v, bool):
            self.w(b"\x88" if v else b"\x89")
        elif v is None:
            self.w(b"N")
        elif isinstance(v, int):
            if 0 <= v <= 255:
                self.w(b"K" + struct.pack("<B", v))
            elif 0 <= v <= 65535:
                self.w(b"M" + struct.pack("<H", v))
            elif -(1 << 31) <= v < (1 << 31):
                self.w(b"J" + struct.pack("<i", v))
            else:
                self.w(b"\x8a\x08" + struct.pack("<q", v))
        elif isinstance(v, float):
            self.w(b"G" + struct.pack(">d", v))
        elif isinstance(v, str):
            if v in self.strings:
                self.binget(self.strings[v])
            else:
                data = v.encode("utf-8")
                self.w(b"X" + struct.pack("<I", len(data)) + data)
                self.strings[v] = self.next_binput()
        elif isinstance(v, dict):
            self.w(b"}(")
            for k, x in v.items():
                self.push(k)
                self.push(x)
            self.w(b"u")
        elif isinstance(v, list):
            self.w(b"](")
            for x in v:
                self.push(x)
            self.w(b"e")
        elif isinstance(v, tuple):
            if len(v) == 0:
                self.w(b")")
            elif len(v) <= 3:
                for x in v:
                    self.push(x)
                self.w({1: b"\x85", 2: b"\x86", 3: b"\x87"}[len(v)])
            else:
                self.w(b"(")
                for x in v:
                    self.push(x)
                self.w(b"t")
        else:
            raise TypeError(type(v))


def cpp_memo_set(snap):
    """Containers that would have IValue use_count > 1 in memory_snapshot.cpp:
    anything referenced twice in the graph, every frames list returned by
    ivalue_symbolize, and every dict that received such a frames list (it is
    also held by the frame_dict vector)."""
    counts = {}
    objs = {}

    def walk(v):
        if isinstance(v, (dict, list, tuple)):
            counts[id(v)] = counts.get(id(v), 0) + 1
            objs[id(v)] = v
            if counts[id(v)] > 1:
                return
            for x in (v.values() if isinstance(v, dict) else v):
                walk(x)
    walk(snap)
    memo = {i for i, c in counts.items() if c > 1}
    for v in objs.values():
        if isinstance(v, dict) and isinstance(v.get("frames"), list) and v["frames"]:
            memo.add(id(v))
            memo.add(id(v["frames"]))
    return memo


# --------------------------------------------------------------------------
# Hand-written malicious pickles (never loaded)
# --------------------------------------------------------------------------
CMD = b"echo pwned > /tmp/headroom_pwned"


def mal_reduce():
    # protocol 2: GLOBAL 'posix system' ; MARK? no: args tuple via TUPLE1 ; REDUCE
    return (b"\x80\x02" + b"cposix\nsystem\n" + b"X" + struct.pack("<I", len(CMD)) + CMD
            + b"\x85" + b"R" + b".")


def mal_stack_global():
    frame = (b"\x8c\x05posix" + b"\x94" + b"\x8c\x06system" + b"\x94" + b"\x93" + b"\x94"
             + b"\x8c" + bytes([len(CMD)]) + CMD + b"\x94" + b"\x85" + b"\x94" + b"R" + b"\x94" + b".")
    return b"\x80\x04\x95" + struct.pack("<Q", len(frame)) + frame


def mal_build():
    # A dict snapshot whose 'segments' value is an object created with NEWOBJ
    # and populated with BUILD; __setstate__-style payload via a REDUCE'd
    # os.system in the state (a reader must refuse at GLOBAL/NEWOBJ/BUILD).
    return (b"\x80\x02" + b"}q\x00(" + b"X\x08\x00\x00\x00segments" + b"q\x01"
            + b"csubprocess\nPopen\n" + b"q\x02"
            + b"X\x02\x00\x00\x00sh" + b"X\x02\x00\x00\x00-c"
            + b"X" + struct.pack("<I", len(CMD)) + CMD + b"\x87" + b"\x85"
            + b"\x81" + b"q\x03"
            + b"}q\x04X\x06\x00\x00\x00blocksq\x05]q\x06sb"
            + b"u" + b".")


# --------------------------------------------------------------------------
def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def html_page(pickled):
    padded = pickled + b"\x00" * (3 - len(pickled) % 3)
    b64 = base64.b64encode(padded).decode("ascii")
    return ("""<!DOCTYPE html>
<html>
<head>
</head>
<body>
<script type="module">
import {add_local_files} from "https://cdn.jsdelivr.net/gh/pytorch/pytorch@main/torch/utils/viz/MemoryViz.js"
const local_files = [{"name": "snapshot.pickle", "base64": "%s"}]
add_local_files(local_files, 'Active Memory Timeline')
</script>
</body>
""" % b64).encode("ascii")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out-dir", default=os.path.join(HERE, "..", "fixtures"))
    args = ap.parse_args(argv)
    out = os.path.normpath(args.out_dir)
    os.makedirs(out, exist_ok=True)
    readme_rows = []
    checks = []  # (file, {dev: (peak, idx)})

    def emit(name, data, covers, expect=None):
        p = os.path.join(out, name)
        write(p, data)
        readme_rows.append((name, len(data), covers))
        if expect is not None:
            checks.append((name, expect))

    def peaks(sim, devs=None, start=0):
        devs = devs if devs is not None else range(len(sim.traces))
        return {d: sim.true_peak(d, start) for d in devs if sim.traces[d]}

    sim, base = scen_base()
    p5 = pickle.dumps(base, protocol=5)
    emit("proto5.pickle", p5, "2.7-style snapshot (time_us, allocator_settings, external_annotations "
         "with Optimizer.step#AdamW.step START/END), pickle protocol 5 (Python 3.14 default)", peaks(sim))
    emit("proto2.pickle", pickle.dumps(base, protocol=2), "same content, protocol 2 (BINPUT memo, no FRAME)", peaks(sim))
    emit("proto3.pickle", pickle.dumps(base, protocol=3), "same content, protocol 3 (BINPUT memo, no FRAME)", peaks(sim))
    emit("gzipped.pickle.gz", gzip.compress(pickle.dumps(base, protocol=4), mtime=0),
         "proto-4 pickle of the base snapshot, gzip-compressed (magic 1f 8b)", peaks(sim))
    emit("snapshot_page.html", html_page(pickle.dumps(base, protocol=4)),
         "_memory_viz HTML page embedding the base snapshot (base64, NUL padding)", peaks(sim))

    sim, snap = scen_cpp()
    data = CppPickler(cpp_memo_set(snap)).dump(snap)
    assert pickle.loads(data) == snap, "cpp pickler round trip"
    emit("cpp_pickler.pickle", data, "TorchScript C++ Pickler imitation: PROTO 2, no FRAME/MEMOIZE, "
         "BINUNICODE+BINPUT, strings memoized by value, EMPTY_DICT MARK..SETITEMS always, LONG1 8 bytes, "
         "compile_context/user_metadata on every entry, frames key last, frees without frames", peaks(sim))

    sim, snap = scen_oom()
    assert snap["device_traces"][0][-1]["action"] == "oom"
    emit("oom.pickle", pickle.dumps(snap, protocol=4),
         "trace ending with segment_free (cache flush) + an 'oom' entry (device_free, no addr)", peaks(sim))

    sim, snap = scen_expandable()
    emit("expandable.pickle", pickle.dumps(snap, protocol=4),
         "is_expandable segments grown with segment_map, shrunk with segment_unmap", peaks(sim))

    sim, snap = scen_multi()
    assert [bool(t) for t in snap["device_traces"]] == [True, False, True]
    assert sorted({s["device"] for s in snap["segments"]}) == [0, 1]
    emit("multi_device.pickle", pickle.dumps(snap, protocol=4),
         "3 devices: 0 segments+trace, 1 segments+empty trace, 2 trace but no segments", peaks(sim))

    sim, snap = scen_private_pool()
    emit("private_pool.pickle", pickle.dumps(snap, protocol=4),
         "segments with segment_pool_id (1, 2) besides (0, 0)", peaks(sim))

    sim, snap, cut = scen_ring()
    emit("ring_wrapped.pickle", pickle.dumps(snap, protocol=4),
         "ring buffer wrapped: window starts with frees of evicted allocs, ghost active blocks, "
         "trailing lone free_requested (active_pending_free block)", peaks(sim, start=cut))

    sim, snap = scen_legacy20()
    emit("legacy_20.pickle", pickle.dumps(snap, protocol=4),
         "2.0 era: no block address/frames, requested_size + history, merged block with 2 history "
         "entries, single 'snapshot' trace entry", None)

    sim, snap = scen_legacy_list()
    emit("legacy_list.pickle", pickle.dumps(snap, protocol=3),
         "<=1.12 bare list of segments, blocks with only size/state (one active_pending_free), protocol 3", None)

    sim, snap = scen_bigint()
    bdata = pickle.dumps(snap, protocol=4)
    assert b"\x8a\x09" in bdata
    emit("bigint.pickle", bdata, "9-byte LONG1 (allocator_settings.max_split_size = 2^64-1, a stream "
         "handle >= 2^63), negative LONG1/BININT, negative float", peaks(sim))

    emit("malicious_reduce.pickle", mal_reduce(), "GLOBAL posix.system + REDUCE (must be refused; never load)")
    emit("malicious_stack_global.pickle", mal_stack_global(),
         "protocol 4 STACK_GLOBAL + REDUCE (must be refused; never load)")
    emit("malicious_build.pickle", mal_build(), "GLOBAL subprocess.Popen + NEWOBJ + BUILD inside a "
         "snapshot-shaped dict (must be refused; never load)")
    rng = random.Random(1234)
    emit("not_a_pickle.bin", b"\x80\x04" + bytes(rng.randrange(256) for _ in range(254)),
         "0x80 0x04 then random junk (must fail cleanly)")
    emit("empty.pickle", b"", "0 bytes (must fail cleanly)")

    # ---- cross-check the reference summary against the simulation
    peak_text = {}
    for name, expect in checks:
        summ = snapshot_summary.summarize(snapshot_summary.load_file(os.path.join(out, name)))
        got = {d["device"]: (d["peak_allocated_bytes"], d["peak_event_index"])
               for d in summ["devices"] if d["trace_entries"]}
        assert got == expect, (name, got, expect)
    for name, size, covers in readme_rows:
        if name.startswith(("malicious", "not_a", "empty")):
            peak_text[name] = "load error"
            continue
        summ = snapshot_summary.summarize(snapshot_summary.load_file(os.path.join(out, name)))
        peak_text[name] = "; ".join("dev %d: %d @ %d" % (d["device"], d["peak_allocated_bytes"],
                                                         d["peak_event_index"]) for d in summ["devices"])
    for name, size, covers in readme_rows:
        assert size < 50 * 1024, (name, size)

    lines = [
        "# Synthetic snapshot fixtures",
        "",
        "Generated by `tests/tools/make_fixtures.py` (deterministic; regenerate with",
        "`tests/tools/regen_goldens.sh`). They cover what no real file in `shared/real_traces` covers.",
        "Expected per-device summaries are in `tests/golden/<name>.summary.json` (produced by",
        "`tests/tools/snapshot_summary.py`). Peak = `peak_allocated_bytes @ peak_event_index`",
        "(-1 = the value before the first event; replay rules in snapshot_summary.py). For fixtures with",
        "a trace, make_fixtures.py asserts the peak equals the simulated allocator's true live bytes.",
        "",
        "**Never load the `malicious_*` files with an unrestricted unpickler.**",
        "",
        "| file | bytes | covers | expected peak |",
        "|---|---|---|---|",
    ]
    for name, size, covers in readme_rows:
        lines.append("| `%s` | %d | %s | %s |" % (name, size, covers, peak_text[name]))
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %d fixtures to %s" % (len(readme_rows), out))


if __name__ == "__main__":
    main()
