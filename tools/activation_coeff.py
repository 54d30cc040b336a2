#!/usr/bin/env python3
"""Saved activations per token, layer and hidden unit of the CPU matrix's eager transformers: the
analytic mode's high reading of what the dimensions do not tell (docs/whatif-accuracy.md,
"Analytic from dimensions").

    tools/activation_coeff.py --matrix build/cpu-matrix/matrix.json

For each dense transformer family's base point (fp32, micro-batch 2, two iterations, recorded
with headroom_tensor's `kind`), the bytes of kind `activation` alive where the second
iteration's backward starts, less the attention scores the analytic mode prices on their own
(5 * heads * s^2 * b per layer, Korthikanti et al.) and the logits (8 bytes per b * s * V), over
layers * s * b * hidden, in the
analytic mode's 16-bit units (fp32 stores 1.8x: activationFactor). Megatron's fused GPT layer
saves 34; the eager implementations here save more (their layer norms, dropouts' masks, GELU and
SwiGLU inputs, rotary tables). Stdlib only.
"""
import argparse
import json
import os
import pickle
import sys

# family: (layers, hidden, heads, tokens, micro-batch, vocabulary or classes) of its base point
# (python/cpu_models*.py; the encoder-decoder's four layers are two of each)
DENSE = {"decoder": (2, 64, 4, 128, 2, 256), "encoder": (2, 64, 4, 128, 2, 256), "gpt2fused": (2, 64, 4, 128, 2, 256),
         "llama": (2, 128, 2, 64, 2, 256), "encdec": (4, 64, 4, 64, 2, 256), "vit": (2, 64, 4, 65, 2, 10)}
FP32 = 1.8  # core/whatif/vocabulary/whatifmodel.cpp, activationFactor(fp32)
LOGITS_BYTES = 8  # WhatIfConstants::logitsBytes: the logits term per b*s*V element


def activations_at_last_backward(path):
    with open(path, "rb") as f:
        snap = pickle.load(f)
    starts = sorted(a["time_us"] for a in snap.get("external_annotations", [])
                    if a["name"] == "## backward ##" and a["stage"] == "START")
    live = {}
    for e in snap["device_traces"][0]:
        if e.get("time_us", 0) >= starts[-1]:
            break
        if e["action"] == "alloc":
            live[e["addr"]] = e
        elif e["action"] == "free_completed":
            live.pop(e["addr"], None)
    return sum(e["size"] for e in live.values() if (e.get("headroom_tensor") or {}).get("kind") == "activation")


def coefficient(activation_bytes, layers, hidden, heads, tokens, batch, vocab):
    scores = 5.0 * heads * tokens * tokens * batch * layers * FP32
    logits = LOGITS_BYTES * batch * tokens * vocab
    return (activation_bytes - scores - logits) / (layers * tokens * batch * hidden * FP32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--matrix", required=True, help="tools/cpu_matrix.py's matrix.json")
    args = ap.parse_args()
    with open(args.matrix) as f:
        points = json.load(f)["points"]
    root = os.path.dirname(os.path.abspath(args.matrix))
    files = {p["family"]: os.path.join(root, p["file"]) for p in points if p["name"] == "base"}
    print("| family | activations at the backward's start | coefficient (16-bit bytes per s*b*h per layer) |")
    print("|---|---:|---:|")
    found = []
    for family, dims in DENSE.items():
        if family not in files:
            continue
        a = activations_at_last_backward(files[family])
        c = coefficient(a, *dims)
        found.append(c)
        print("| %s | %d | %.1f |" % (family, a, c))
    if not found:
        print("no dense family in %s" % args.matrix)
        return 1
    print("\n%d families: %.1f to %.1f (Megatron's fused layer: 34)" % (len(found), min(found), max(found)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
