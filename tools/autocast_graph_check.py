#!/usr/bin/env python3
"""Does the CPU recorder's op graph determine an autocast run? A check of the evidence.

From an fp32 recording whose entries carry ``headroom_tensor``'s ``op``, ``inputs`` and
``saves`` (docs/formats.md), this replays the run as PyTorch 1.13's CPU bf16 autocast would
make it and compares the peak with a recording of that autocast run. It is the same replay as the projection's
(core/whatif/replay/autocastplan.cpp; docs/whatif-model.md, "Autocast from the op graph"), written
again in stdlib Python as an independent check: the two print the same peaks.

The replay, per allocation in trace order, inside each autocast region (a ``## forward ##``
window until the next ``## backward ##`` starts, or, in a loop without one, its last
forward or loss window ends):
* an op autocast runs in bf16 (``LOWER``: mm, addmm, bmm, convolution, ...) makes a bf16
  output and a bf16 copy of each fp32 input: a parameter's once per region (autocast's cache,
  freed where the region ends, or, where an op saved it, after the last backward op that takes
  the weight in the fp32 trace), an activation's per use (kept until the input's own recorded
  free where the op saved it, else freed after the op). An input whose every save was by such
  an op is freed after its last use in the forward: autograd keeps the copy instead;
* an op autocast runs in fp32 (``FP32``, and the ops under ``F.cross_entropy`` and the other
  losses of the list, which autocast casts as a whole: their frames in torch/nn/functional.py)
  makes an fp32 output and an fp32 copy of each bf16 input, freed after it;
* any other op takes its first floating-point input's dtype, or the widest of them for the
  ops that promote (``PROMOTE``: pointwise binary ops, cat, where ...; a 0-dim input does not
  promote); in the backward an input autocast copied counts as its bf16 copy, and a
  ``LOWER`` op with a bf16 input is bf16 (the gradient reaching it was cast back);
* a parameter's gradient stays fp32, with a bf16 temporary where the op that made it took
  bf16 inputs.
* an input taken through a cast that was a no-op in fp32 (``casts``: ``x.to(torch.float32)``,
  ``cos.to(x.dtype)``) is read at the dtype the cast asks for, with a copy where that differs
  (of the slice cast); an op under a ``dtype=`` argument (``dtype_arg``) makes that dtype and
  copies its other inputs to it.
The policy is the one PyTorch 1.13.1 applies on the CPU (probed op by op), or with ``--lists
cuda`` CUDA's (aten/src/ATen/autocast_mode.h, PyTorch 2.x), which runs more ops in fp32
(``CUDA_FP32``: layer_norm, pow, exp, rsqrt, the losses ...) and makes softmax, log_softmax and
the reductions of a bf16 input fp32 (``CUDA_SET_OPT_DTYPE``; softmax and log_softmax from an
fp32 copy of it). An fp32 op that saves its input keeps the input's fp32 copy as long as the
input would have lived, and its backward reads the copy.

    tools/autocast_graph_check.py --matrix build/cpu-matrix/matrix.json
    tools/autocast_graph_check.py [--lists cuda] BASE.pickle AMP.pickle
"""

import argparse
import collections
import json
import os
import pickle
import sys

LOWER = {"aten::" + n for n in
         "mm addmm bmm baddbmm addbmm convolution _convolution prelu conv_tbc matmul linear".split()}
FP32 = {"aten::" + n for n in
        "nll_loss_forward nll_loss2d_forward mse_loss binary_cross_entropy kl_div l1_loss "
        "smooth_l1_loss huber_loss multilabel_margin_loss_forward soft_margin_loss "
        "multi_margin_loss ctc_loss".split()}
FP32_FUNCTIONS = {"cross_entropy", "nll_loss", "mse_loss", "binary_cross_entropy", "kl_div",
                  "l1_loss", "smooth_l1_loss", "huber_loss"}
PROMOTE = {"aten::" + n for n in
           "add sub rsub mul div true_divide floor_divide remainder fmod pow float_power maximum "
           "minimum clamp where lerp addcmul addcdiv atan2 hypot xlogy copysign cat stack eq ne "
           "lt le gt ge threshold_backward gelu_backward silu_backward sigmoid_backward "
           "tanh_backward hardswish_backward leaky_relu_backward elu_backward mish_backward "
           "softplus_backward hardtanh_backward".split()}
CUDA_LOWER = LOWER | {"aten::" + n for n in
                      "mv addmv addr einsum chain_matmul linalg_multi_dot scaled_dot_product_attention "
                      "_scaled_dot_product_flash_attention".split()}
CUDA_FP32 = {"aten::" + n for n in
             "acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow softplus "
             "layer_norm native_layer_norm group_norm native_group_norm frobenius_norm nuclear_norm "
             "cosine_similarity poisson_nll_loss cosine_embedding_loss nll_loss_forward nll_loss2d_forward "
             "hinge_embedding_loss kl_div l1_loss smooth_l1_loss huber_loss mse_loss margin_ranking_loss "
             "multilabel_margin_loss_forward soft_margin_loss triplet_margin_loss multi_margin_loss "
             "binary_cross_entropy_with_logits dist _pdist_forward _cdist_forward renorm logsumexp".split()}
CUDA_SET_OPT_DTYPE = {"aten::" + n for n in
                      "_softmax softmax _log_softmax log_softmax prod cumprod cumsum sum linalg_vector_norm "
                      "linalg_matrix_norm".split()}
CONVERTS_INPUT = {"aten::_softmax", "aten::softmax", "aten::_log_softmax", "aten::log_softmax"}
LISTS = {"cpu": (LOWER, FP32, set()), "cuda": (CUDA_LOWER, CUDA_FP32, CUDA_SET_OPT_DTYPE)}
WIDTH = {"float32": 4, "bfloat16": 2, "float16": 2, "float64": 8}


def round_size(n):
    return 512 if n <= 512 else (n + 511) // 512 * 512


class Trace(object):
    def __init__(self, path):
        with open(path, "rb") as f:
            self.snap = pickle.load(f)
        self.events = self.snap["device_traces"][0]
        self.allocs, self.free_at, live = {}, {}, {}
        for k, e in enumerate(self.events):
            if e["action"] == "alloc":
                live[e["addr"]] = k
                self.allocs[k] = e
            elif e["action"] == "free_completed" and e["addr"] in live:
                self.free_at[live.pop(e["addr"])] = k

    def tensor(self, k):
        return self.allocs[k].get("headroom_tensor") or {}

    def regions(self):
        """(first, last) event of each autocast region."""
        ann = self.snap.get("external_annotations", [])
        times = collections.defaultdict(list)
        for a in ann:
            times[(a["name"], a["stage"])].append(a["time_us"])
        ends = times[("## backward ##", "START")] or \
            times[("## loss ##", "END")] + times[("## forward ##", "END")]
        out = []
        for start in times[("## forward ##", "START")]:
            end = min([t for t in ends if t > start], default=None)
            out.append((self.event_at(start), self.event_at(end)))
        return out

    def event_at(self, t_us):
        if t_us is None:
            return len(self.events)
        for k, e in enumerate(self.events):
            if e.get("time_us", 0) >= t_us:
                return k
        return len(self.events)

    def raw_bytes(self, k):
        """The tensor's own bytes where its shape covers the storage, else the storage's."""
        t, size = self.tensor(k), self.allocs[k]["size"]
        if t.get("dtype") not in WIDTH or t.get("shape") is None:
            return size
        n = WIDTH[t["dtype"]]
        for d in t["shape"]:
            n *= d
        return n if round_size(n) == size else size


def measured_peak(trace):
    cur = best = 0
    live = {}
    for e in trace.events:
        if e["action"] == "alloc":
            live[e["addr"]] = e["size"]
            cur += e["size"]
            best = max(best, cur)
        elif e["action"] == "free_completed" and e["addr"] in live:
            cur -= live.pop(e["addr"])
    return best


def in_loss_function(entry):
    return any(f["filename"].endswith(os.path.join("torch", "nn", "functional.py")) and
               f["name"] in FP32_FUNCTIONS for f in entry.get("frames", []))


class AutocastReplay(object):
    """The fp32 trace as the autocast run: each allocation's dtype, its copies, its frees."""

    def __init__(self, trace, lists="cpu"):
        self.tr = trace
        self.lower, self.fp32, self.set_opt_dtype = LISTS[lists]
        self.dtype, self.size = {}, {}
        self.copies = []  # (made before event, bytes, freed at event)
        self.freed_early = {}
        self.copied = {}  # input -> the dtype of the copy autograd keeps of it
        self.saved_by = collections.defaultdict(list)
        self.last_forward_use = {}
        self.backward_uses = {}  # tensor -> the backward's allocations that take it
        for k in trace.allocs:
            t = trace.tensor(k)
            for b in t.get("saves", []):
                self.saved_by[k - b].append(k)
            if t.get("phase") == "backward":
                for b in t.get("inputs", []):
                    self.backward_uses.setdefault(k - b, []).append(k)
            elif t.get("kind") != "gradient":
                for b in t.get("inputs", []):
                    self.last_forward_use[k - b] = k
        self.regions = trace.regions()
        self.cached = {}  # (weight, region) -> index of its copy
        self.cast_copies = {}  # (tensor, dtype) -> index of a no-op cast's copy
        self.over = {}  # the current op's inputs read through a cast: tensor -> dtype
        self.holders = {}  # tensor -> the ops that saved it and took it through a copy
        for k in sorted(trace.allocs):
            self.visit(k)
        self.free_early()

    def free_early(self):
        """A tensor every op saving it took through a copy (autograd holds the copies) is
        freed after its last use in the forward, where the recorded run freed it at all (a
        buffer or a parameter lives on for its module)."""
        for j, holders in self.holders.items():
            savers = set(self.saved_by[j])
            last = self.last_forward_use.get(j)
            held = self.tr.tensor(j).get("kind") in ("parameter", "buffer")
            if savers and savers <= holders and last is not None and not held and \
                    j in self.tr.free_at and last + 0.5 < self.tr.free_at[j]:
                self.freed_early[j] = last + 0.5

    def region_of(self, k):
        return next((r for r in self.regions if r[0] <= k < r[1]), None)

    def floats(self, ins):
        return [j for j in ins if self.tr.tensor(j).get("dtype") in WIDTH]

    def visit(self, k):
        t = self.tr.tensor(k)
        dt, op = t.get("dtype"), t.get("op")
        out = dt
        self.over = {}
        if dt in WIDTH and op:
            ins = self.floats([k - b for b in t.get("inputs", [])])
            self.read_casts(k, t)
            region = self.region_of(k)
            pin = self.target_of(k, t["dtype_arg"]) if "dtype_arg" in t else None
            if region and op in self.lower:
                out = "bfloat16"
                for j in ins:
                    if self.dt_in(j) == "float32":
                        self.copy_for_lower(k, j, region)
            elif pin or (region and (op in self.fp32 or in_loss_function(self.tr.allocs[k]))):
                out = pin or "float32"  # a dtype= argument, or an op autocast runs in fp32
                for j in ins:
                    if self.dt_in(j) not in (out, "float64"):
                        self.copy_for_op(k, j, out)
            elif region and op in self.set_opt_dtype and ins and self.dt_in(ins[0]) == "bfloat16":
                out = "float32"  # CUDA's softmax of a bf16 input: fp32, from an fp32 copy of it
                if op in CONVERTS_INPUT:
                    self.copies.append((k, round_size(self.tr.raw_bytes(ins[0])), k + 0.5))
            else:
                out = self.follow(k, t, op, ins, dt)
        self.dtype[k] = out
        if dt in WIDTH and out in WIDTH:
            self.size[k] = round_size(self.tr.raw_bytes(k) * WIDTH[out] // WIDTH[dt])
        else:
            self.size[k] = self.tr.allocs[k]["size"]

    def target_of(self, k, spec):
        """A cast's or a dtype= argument's dtype at the target: a literal, or the target
        dtype of the entry it follows."""
        return spec if isinstance(spec, str) else self.dtype.get(k - spec)

    def dt_in(self, j):
        return self.over.get(j, self.dtype.get(j))

    def read_casts(self, k, t):
        """The no-op casts op k took its inputs through: a copy where the target makes them
        real, from its first such use to after its last (to the input's free where saved)."""
        for cast in t.get("casts", []):
            j, to = k - cast[0], self.target_of(k, cast[1])
            if j not in self.tr.allocs or to not in WIDTH or self.dtype.get(j) not in WIDTH:
                continue
            self.over[j] = to
            if to == self.dtype[j] or "float64" in (to, self.dtype[j]):
                continue
            part = cast[2] if len(cast) > 2 else self.tr.raw_bytes(j)
            key = (j, to)
            if key not in self.cast_copies:
                self.cast_copies[key] = len(self.copies)
                self.copies.append([k, round_size(part * WIDTH[to] // 4), k + 0.5])
            c = self.copies[self.cast_copies[key]]
            end = self.tr.free_at.get(j, len(self.tr.events)) if k in self.saved_by[j] else k + 0.5
            c[2] = max(c[2], end)
            if k in self.saved_by[j]:
                self.holders.setdefault(j, set()).add(k)

    def copy_for_lower(self, k, j, region):
        half = round_size(self.tr.raw_bytes(j) // 2)
        saved = k in self.saved_by[j]
        if self.tr.tensor(j).get("kind") == "parameter":
            if (j, region) not in self.cached:
                self.cached[(j, region)] = len(self.copies)
                self.copies.append([k, half, region[1]])
                self.copied[j] = "bfloat16"
            if saved:  # autograd holds the cached copy to this op's backward
                c = self.copies[self.cached[(j, region)]]
                c[2] = max(c[2], self.last_backward_use(j, region))
            return
        self.copy_for_op(k, j, "bfloat16")

    def copy_for_op(self, k, j, to):
        """Input j cast to ``to`` for op k: freed after it, or held as long as j where k saved it."""
        size = round_size(self.tr.raw_bytes(j) * WIDTH[to] // 4)
        if k in self.saved_by[j]:
            self.copies.append((k, size, self.tr.free_at.get(j, len(self.tr.events))))
            self.copied[j] = to
            self.holders.setdefault(j, set()).add(k)
        else:
            self.copies.append((k, size, k + 0.5))

    def last_backward_use(self, j, region):
        """Where a weight's cached copy goes after ``region``: after the last backward op
        before the next region that takes the weight; the region's end where none does."""
        nxt = min([r[0] for r in self.regions if r[0] >= region[1]], default=len(self.tr.events))
        uses = [k for k in self.backward_uses.get(j, []) if region[1] <= k < nxt]
        return max(uses) + 0.5 if uses else region[1]

    def follow(self, k, t, op, ins, dt):
        seen = []
        for j in ins:
            d = self.dt_in(j)
            if t.get("phase") == "backward" and j in self.copied:
                d = self.copied[j]
            if self.tr.tensor(j).get("shape") == [] and len(ins) > 1:
                continue  # a 0-dim tensor does not promote a dimensioned one
            seen.append(d)
        out = dt
        if seen:
            out = max(seen, key=lambda d: WIDTH.get(d, 0)) if op in PROMOTE else seen[0]
        if t.get("phase") == "backward" and op in self.lower and "bfloat16" in seen:
            out = "bfloat16"  # a matmul takes one dtype: its gradient input was cast back too
        if t.get("kind") == "gradient":  # a parameter's .grad keeps the parameter's dtype
            if out != dt and out in WIDTH:
                self.copies.append((k, round_size(self.tr.raw_bytes(k) * WIDTH[out] // WIDTH[dt]),
                                    k + 0.5))
            out = dt
        return out

    def peak(self):
        bounds = []
        for k in self.tr.allocs:
            bounds.append((k, 0, self.size[k]))
            end = self.freed_early.get(k, self.tr.free_at.get(k))
            if end is not None:
                bounds.append((end, 1, -self.size[k]))
        for at, size, end in self.copies:
            bounds.append((at - 0.25, 0, size))
            bounds.append((end, 1, -size))
        bounds.sort(key=lambda b: (b[0], b[1]))
        cur = best = 0
        for _, _, d in bounds:
            cur += d
            best = max(best, cur)
        return best


def check(base_path, amp_path, lists="cpu"):
    base, amp = Trace(base_path), Trace(amp_path)
    if not any("op" in base.tensor(k) for k in base.allocs):
        raise SystemExit("%s: no headroom_tensor op graph (record it with python/headroom_cpu.py)"
                         % base_path)
    return measured_peak(base), measured_peak(amp), AutocastReplay(base, lists).peak()


def pairs_of(matrix_path):
    with open(matrix_path) as f:
        rows = json.load(f)["points"]
    root = os.path.dirname(os.path.abspath(matrix_path))
    by = {(r["family"], r["name"]): os.path.join(root, r["file"]) for r in rows}
    return [(fam, by[(fam, "base")], by[(fam, "amp-bf16")])
            for fam, name in sorted(by) if name == "base" and (fam, "amp-bf16") in by]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", help="BASE.pickle AMP.pickle")
    ap.add_argument("--matrix", help="tools/cpu_matrix.py's matrix.json: every family's base and amp-bf16")
    ap.add_argument("--lists", choices=sorted(LISTS), default="cpu", help="whose autocast op lists (default: cpu)")
    args = ap.parse_args(argv)
    if args.matrix:
        pairs = pairs_of(args.matrix)
    elif len(args.files) == 2:
        pairs = [(os.path.basename(args.files[0]), args.files[0], args.files[1])]
    else:
        ap.error("give --matrix or BASE AMP")
    print("| family | fp32 peak | autocast peak | replayed from the op graph | error |")
    print("|---|---:|---:|---:|---:|")
    worst = 0.0
    for name, base, amp in pairs:
        b, m, sim = check(base, amp, args.lists)
        err = (sim - m) / m
        worst = max(worst, abs(err))
        print("| %s | %d | %d | %d | %+.1f%% |" % (name, b, m, sim, 100 * err))
    print("\nworst %.1f%% over %d pairs" % (100 * worst, len(pairs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
