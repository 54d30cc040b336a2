#!/usr/bin/env python3
"""Write a small snapshot with the keys PyTorch 2.9-2.11 and its 2026 main add (issue 30).

Usage:
  python3 tools/gen_modern_snapshot.py OUT.pickle [--features all|none|a,b,...] [--protocol N]
  python3 tools/gen_modern_snapshot.py --all-combinations DIR [--protocol N]

Features (each optional, in any combination):
  user_metadata   `user_metadata` on trace entries: the module's qualified name, as PyTorch's
                  component tracker sets it through `_set_memory_metadata`
  forward_frames  `forward_frames` (a list of pre-formatted traceback strings) on the entries
                  the backward makes for a tensor saved in the forward
  fx              frames of torch.compile's generated code with `fx_node_op`, `fx_node_name`,
                  `fx_node_target` and `fx_original_trace` (augment_with_fx_traces=True), and
                  `compile_context` on their entries
  pools           two CUDA-graph private pools: `pool_id` on every trace entry (the default
                  pool (0, 0) included) and `segment_pool_id` on the segments

The run: one step of a two-layer model on device 0 (forward, backward, optimizer step), then
two graph replays whose memory lives in pools (1, 0) and (2, 0). A miniature of the caching
allocator places the blocks and the final segments list what is still alive, so that a replay
of the trace agrees with the recording. No PyTorch is needed: the keys' shapes follow PyTorch's memory.py TypedDicts and its
viewer (docs/formats.md, "The newest keys").

--all-combinations writes DIR/<features>.pickle for each of the 16 subsets ("none.pickle",
"user_metadata+fx.pickle", ...).
"""
import argparse
import itertools
import os
import pickle
import sys

FEATURES = ("user_metadata", "forward_frames", "fx", "pools")
MiB = 1 << 20
SEGMENT = 20 * MiB
MODEL = "/home/user/project/model.py"
TRAIN = "/home/user/project/train.py"
GENERATED = "/tmp/torchinductor_user/k7/ck7abc.py"
TORCH = "/usr/lib/python3/dist-packages/torch/"


def frame(filename, line, name, **extra):
    f = {"filename": filename, "line": line, "name": name}
    f.update(extra)
    return f


def fx_frame(node, target, line, source_line, source_code):
    trace = ('  File "%s", line 40, in train_step\n    loss = model(x).sum()\n'
             '  File "%s", line %d, in forward\n    %s\n' % (TRAIN, MODEL, source_line, source_code))
    return frame(GENERATED, line, "call", fx_node_op="call_function", fx_node_name=node,
                 fx_node_target=target, fx_original_trace=trace)


class Recorder:
    """The caching allocator's large pool in miniature (best fit by size then address, a block
    split when more than 1 MiB is left, neighbours merged on free, 20 MiB segments), writing
    the trace as PyTorch would, so that Headroom's replay of the file agrees with it."""

    def __init__(self, features):
        self.f = set(features)
        self.trace = []
        self.segments = []  # [{address, pool, blocks: {addr: (size, frames)}, holes: {addr: size}}]
        self.live = {}  # addr -> segment
        self.time = 1_790_000_000_000_000
        self.next_address = 0x7F0000000000

    def entry(self, action, addr, size, frames=(), pool=(0, 0), **extra):
        self.time += 37
        e = {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": self.time,
             "frames": list(frames)}
        if "pools" in self.f:
            e["pool_id"] = pool
        for k, v in extra.items():
            if v is not None:
                e[k] = v
        self.trace.append(e)

    def segment(self, pool):
        seg = {"address": self.next_address, "pool": pool, "blocks": {}, "holes": {self.next_address: SEGMENT}}
        self.next_address += SEGMENT * 2
        self.segments.append(seg)
        self.entry("segment_alloc", seg["address"], SEGMENT, [frame(TRAIN, 40, "train_step")], pool)
        return seg

    def best_fit(self, size, pool):
        fits = [(hs, ha, seg) for seg in self.segments if seg["pool"] == pool
                for ha, hs in seg["holes"].items() if hs >= size]
        return min(fits, key=lambda t: (t[0], t[1])) if fits else None

    def alloc(self, size, frames, pool=(0, 0), module=None, forward=None, compiled=False):
        size = (size + 511) // 512 * 512
        fit = self.best_fit(size, pool)
        if fit is None:
            seg = self.segment(pool)
            fit = (SEGMENT, seg["address"], seg)
        hole_size, addr, seg = fit
        del seg["holes"][addr]
        if hole_size - size > MiB:
            seg["holes"][addr + size] = hole_size - size
        else:
            size = hole_size
        seg["blocks"][addr] = (size, list(frames))
        self.live[addr] = seg
        extra = {}
        if module is not None and "user_metadata" in self.f:
            extra["user_metadata"] = module
        if forward is not None and "forward_frames" in self.f:
            extra["forward_frames"] = forward
        if compiled and "fx" in self.f:
            extra["compile_context"] = "Torch-Compiled Region: 0/0"
        self.entry("alloc", addr, size, frames, pool, **extra)
        return addr

    def free(self, addr, frames):
        """`frames`: where the tensor was released (PyTorch records the freeing stack)."""
        seg = self.live.pop(addr)
        size, _ = seg["blocks"].pop(addr)
        self.entry("free_requested", addr, size, frames, seg["pool"])
        self.entry("free_completed", addr, size, frames, seg["pool"])
        holes = seg["holes"]
        start, end = addr, addr + size
        for ha, hs in list(holes.items()):
            if ha + hs == start:
                start = ha
                del holes[ha]
            elif ha == end:
                end = ha + hs
                del holes[ha]
        holes[start] = end - start

    def snapshot(self):
        segments = []
        for seg in self.segments:
            blocks = [{"address": a, "size": s, "requested_size": s, "state": "active_allocated", "frames": f}
                      for a, (s, f) in seg["blocks"].items()]
            blocks += [{"address": a, "size": s, "requested_size": 0, "state": "inactive", "frames": []}
                       for a, s in seg["holes"].items()]
            blocks.sort(key=lambda b: b["address"])
            allocated = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
            s = {"device": 0, "address": seg["address"], "total_size": SEGMENT, "allocated_size": allocated,
                 "active_size": allocated, "requested_size": allocated, "stream": 0, "segment_type": "large",
                 "is_expandable": False, "frames": [frame(TRAIN, 40, "train_step")], "blocks": blocks}
            if "pools" in self.f:
                s["segment_pool_id"] = seg["pool"]
            segments.append(s)
        return {"segments": segments, "device_traces": [self.trace],
                "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1},
                "external_annotations": []}


def layer_frames(layer, line, code_line, compiled, node, target, gen_line):
    """The stack of an allocation in layer `layer`'s forward: eager frames, or the compiled
    graph's generated kernel when `compiled`."""
    outer = [frame(TORCH + "nn/modules/module.py", 1750, "_call_impl"),
             frame(TORCH + "nn/modules/module.py", 1739, "_wrapped_call_impl"),
             frame(TRAIN, 40, "train_step"), frame(TRAIN, 60, "<module>")]
    if compiled:  # model(x) runs the graph through dynamo's frame hook
        return [fx_frame(node, target, gen_line, line, code_line),
                frame(TORCH + "_inductor/output_code.py", 460, "__call__"),
                frame(TORCH + "_dynamo/eval_frame.py", 655, "_fn")] + outer
    return [frame(MODEL, line, "forward")] + outer


def record(features):
    r = Recorder(features)
    fx = "fx" in r.f
    params = [r.alloc(4 * MiB, [frame(TRAIN, 20, "build_model")]) for _ in range(4)]
    saved = []
    # Forward: each layer's linear and activation, compiled as one graph when fx is on.
    for layer in range(2):
        module = "layers.%d" % layer
        a = r.alloc(3 * MiB, layer_frames(layer, 21, "a = self.net1(x)", fx, "addmm", "aten.addmm.default", 45),
                    module=module, compiled=fx)
        b = r.alloc(3 * MiB, layer_frames(layer, 22, "b = self.relu(a)", fx, "relu", "aten.relu.default", 52),
                    module=module, compiled=fx)
        saved.append((module, a, b))
    # Backward: the gradient of each saved activation, made for the forward line that saved it.
    backward = [frame("??", 0, "torch::autograd::Engine::thread_main")]
    grads = []
    for module, a, b in reversed(saved):
        forward = ['  File "%s", line 40, in train_step\n    loss = model(x).sum()\n' % TRAIN,
                   '  File "%s", line 22, in forward\n    b = self.relu(a)\n' % MODEL]
        g = r.alloc(3 * MiB, backward, module=module + ".backward", forward=forward)
        r.free(b, backward)
        r.free(a, backward)
        grads.append(g)
    for g in grads:
        r.free(g, [frame(TORCH + "optim/optimizer.py", 980, "zero_grad"), frame(TRAIN, 46, "train_step")])
    # Optimizer state, outside any module.
    for _ in params:
        r.alloc(4 * MiB, [frame(TORCH + "optim/adam.py", 110, "_init_group"), frame(TORCH + "optim/adam.py", 220, "step"),
                          frame(TRAIN, 45, "train_step")], module="optimizer")
    # Two CUDA graphs replayed: their static buffers live in private pools (or in the default
    # pool without the feature, where they are plain allocations).
    for graph in (1, 2):
        pool = (graph, 0) if "pools" in r.f else (0, 0)
        for k in range(2):
            r.alloc((2 + k) * MiB, [frame(TRAIN, 70 + graph, "replay_graph_%d" % graph)], pool=pool,
                    module="graph%d" % graph)
    return r.snapshot()


def write(path, features, protocol):
    with open(path, "wb") as f:
        pickle.dump(record(features), f, protocol=protocol)


def parse_features(text):
    if text == "all":
        return list(FEATURES)
    if text in ("", "none"):
        return []
    out = [t.strip() for t in text.split(",") if t.strip()]
    for t in out:
        if t not in FEATURES:
            sys.exit("unknown feature %r; expected some of %s" % (t, ", ".join(FEATURES)))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--features", default="all")
    ap.add_argument("--protocol", type=int, default=4)
    ap.add_argument("--all-combinations", metavar="DIR")
    args = ap.parse_args(argv)
    if args.all_combinations:
        os.makedirs(args.all_combinations, exist_ok=True)
        for n in range(len(FEATURES) + 1):
            for combo in itertools.combinations(FEATURES, n):
                name = "+".join(combo) if combo else "none"
                write(os.path.join(args.all_combinations, name + ".pickle"), combo, args.protocol)
        return 0
    if not args.out:
        ap.error("OUT or --all-combinations DIR is required")
    write(args.out, parse_features(args.features), args.protocol)
    return 0


if __name__ == "__main__":
    sys.exit(main())
