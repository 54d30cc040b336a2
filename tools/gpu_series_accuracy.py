#!/usr/bin/env python3
"""The what-if against real GPU runs kept outside the repository.

Projects each calibration file of ../shared/real_traces/gpu_series (the niu 4-layer LM, the
CS336 small model forward and inference series) to the other runs of its series and prints
a markdown row per pair, then the median and worst error and how often the band held: the
measured peak allocated
(`headroom-cli summary --json`), the projection (`whatif --json`'s
`peak_allocated_bytes`), the error and whether the band holds the measurement. These files
carry no configuration, so the measured values are stated.

    tools/gpu_series_accuracy.py --cli build/release/app/headroom-cli [--dir ../shared/real_traces/gpu_series]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

# Each series as its repository's scripts run it (../shared/real_traces/MANIFEST.md): the
# stated micro-batch and precision, and the pairs (calibrated on, its sequence, projected to,
# the levers that move, label).
SERIES = [
    ("niu 4-layer LM, forward + backward + AdamW, batch 10", ["--measured-micro-batch", "10", "--measured-precision", "fp32"], [
        ("niu_fwdbwd_ctx100.pickle", 100, "niu_fwdbwd_ctx150.pickle", ["--seq", "150"], "ctx100 -> ctx150"),
        ("niu_fwdbwd_ctx100.pickle", 100, "niu_fwdbwd_ctx200.pickle", ["--seq", "200"], "ctx100 -> ctx200"),
        ("niu_fwdbwd_ctx150.pickle", 150, "niu_fwdbwd_ctx200.pickle", ["--seq", "200"], "ctx150 -> ctx200"),
        ("niu_fwdbwd_ctx200.pickle", 200, "niu_fwdbwd_ctx100.pickle", ["--seq", "100"], "ctx200 -> ctx100"),
        ("niu_fwdbwd_ctx200.pickle", 200, "niu_fwdbwd_ctx200_mixed_precision.pickle", ["--precision", "amp-bf16"],
         "ctx200 fp32 -> ctx200 autocast"),
        ("niu_fwdbwd_ctx100.pickle", 100, "niu_fwdbwd_ctx200_mixed_precision.pickle", ["--seq", "200", "--precision", "amp-bf16"],
         "ctx100 fp32 -> ctx200 autocast"),
    ]),
    ("niu 4-layer LM, forward only, batch 10", ["--measured-micro-batch", "10", "--measured-precision", "fp32"], [
        ("niu_fwd_ctx100.pickle", 100, "niu_fwd_ctx150.pickle", ["--seq", "150"], "ctx100 -> ctx150"),
        ("niu_fwd_ctx100.pickle", 100, "niu_fwd_ctx200.pickle", ["--seq", "200"], "ctx100 -> ctx200"),
        ("niu_fwd_ctx200.pickle", 200, "niu_fwd_ctx100.pickle", ["--seq", "100"], "ctx200 -> ctx100"),
        ("niu_fwd_ctx200.pickle", 200, "niu_fwd_ctx200_mixed_precision.pickle", ["--precision", "amp-bf16"],
         "ctx200 fp32 -> ctx200 autocast"),
    ]),
    ("CS336 small, forward, batch 8 (histories cut at 10,000 entries)", ["--measured-micro-batch", "8", "--measured-precision", "fp32"], [
        ("cn_memory_nvtx_small_128_forward.pickle", 128, "cn_memory_nvtx_small_256_forward.pickle", ["--seq", "256"], "seq 128 -> 256"),
        ("cn_memory_nvtx_small_128_forward.pickle", 128, "cn_memory_nvtx_small_512_forward.pickle", ["--seq", "512"], "seq 128 -> 512"),
        ("cn_memory_nvtx_small_128_forward.pickle", 128, "cn_memory_nvtx_small_1024_forward.pickle", ["--seq", "1024"], "seq 128 -> 1024"),
        ("cn_memory_nvtx_small_512_forward.pickle", 512, "cn_memory_nvtx_small_1024_forward.pickle", ["--seq", "1024"], "seq 512 -> 1024"),
        ("cn_memory_nvtx_small_1024_forward.pickle", 1024, "cn_memory_nvtx_small_256_forward.pickle", ["--seq", "256"], "seq 1024 -> 256"),
    ]),
    ("CS336 small, inference, batch 32", ["--measured-micro-batch", "32", "--measured-precision", "fp32"], [
        ("hf_small_fp32_seq128_inference.pickle", 128, "hf_small_fp32_seq512_inference.pickle", ["--seq", "512"], "seq 128 -> 512"),
        ("hf_small_fp32_seq512_inference.pickle", 512, "hf_small_fp32_seq128_inference.pickle", ["--seq", "128"], "seq 512 -> 128"),
    ]),
]


# The bundled sample (sample_traces/pt27_kk_memory_ctx128_fullstep.pickle.gz): Stanford CS336's
# LM at d 2560, 32 heads, ffn 10240, vocabulary 10,000, micro-batch 4, sequence 128, fp32, one
# full step. No run at another sequence length exists, but its architecture says how every
# tensor grows: b*h*s^2 scores (8 MiB in fp32, 2 MiB as a bool mask) are quadratic, the
# parameter-shaped tensors (weights, gradients, AdamW state) constant, every other multiple of
# b*s linear, the rest constant. Replaying the file with those laws is the truth the what-if is
# compared with; it uses sizes and the architecture, not the stacks the what-if reads.
KK = dict(file="pt27_kk_memory_ctx128_fullstep.pickle.gz", b=4, s=128, d=2560, heads=32, ffn=10240, vocab=10000)


def kk_truth(path, seq):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "tools"))
    import snapshot_summary  # the restricted unpickler: nothing in the file is executed
    snap = snapshot_summary.normalize(snapshot_summary.load_file(path))
    b, s0, d, h, f, v = KK["b"], KK["s"], KK["d"], KK["heads"], KK["ffn"], KK["vocab"]
    rs = seq / s0
    quadratic = {b * h * s0 * s0 * e for e in (1, 4)}
    constant = {4 * x for x in (d, d * d, d * f, v * d)}

    def grown(size):
        if size in quadratic:
            return size * rs * rs
        if size in constant:
            return size
        return size * rs if size % (b * s0) == 0 else size

    trace = snap["device_traces"][0]
    live, initial, running, rel = {}, 0, 0, []
    for e in trace:
        a = e.get("action")
        if a == "alloc":
            live[e["addr"]] = grown(e["size"])
            running += live[e["addr"]]
        elif a in snapshot_summary.FREE_ACTIONS:
            if e["addr"] in live:
                running -= live.pop(e["addr"])
            else:
                initial += grown(e["size"])
                running -= grown(e["size"])
        rel.append(running)
    open_addrs = set(live)
    for seg in snap["segments"]:  # ghosts: alive for the whole window, as the summary counts them
        for addr, blk in snapshot_summary.iter_blocks_with_address(seg):
            if blk.get("state") == "active_allocated" and addr not in open_addrs:
                initial += grown(snapshot_summary.block_requested_size(blk))
    return max([initial] + [initial + r for r in rel])


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def needed_share(proj, lo, hi, measured):
    """The share of its band (each side scaled about the projection) a pair needs to hold."""
    if measured == proj:
        return 0.0
    side = proj - lo if measured < proj else hi - proj
    return abs(measured - proj) / side if side > 0 else float("inf")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--dir", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "real_traces", "gpu_series"))
    args = ap.parse_args()
    if not os.path.isdir(args.dir):
        print(f"gpu_series_accuracy: {args.dir} is not there (the series is kept outside the repository)", file=sys.stderr)
        return 77
    errors, held, needs = [], 0, []
    print("| series | calibrated on -> projected to | measured MiB | projected MiB | band MiB | error | band holds |")
    print("|---|---|---:|---:|---|---:|---|")
    for title, stated, pairs in SERIES:
        for base, seq, target, levers, label in pairs:
            b, t = os.path.join(args.dir, base), os.path.join(args.dir, target)
            measured = max(d["peak_allocated_bytes"] for d in run_json([args.cli, "summary", "--json", t])["devices"])
            p = run_json([args.cli, "whatif", b, *stated, "--measured-devices", "1", "--measured-seq", str(seq), *levers, "--json"])
            proj, lo, hi = p["peak_allocated_bytes"], p["peak_allocated_low_bytes"], p["peak_allocated_high_bytes"]
            err = (proj - measured) / measured * 100
            holds = lo <= measured <= hi
            errors.append(abs(err))
            held += holds
            needs.append(needed_share(proj, lo, hi, measured))
            print(f"| {title} | {label} | {measured / 2**20:.1f} | {proj / 2**20:.1f} | {lo / 2**20:.1f} .. {hi / 2**20:.1f} | "
                  f"{err:+.1f}% | {'yes' if holds else 'no'} |")
    sample = os.path.join(os.path.dirname(__file__), "..", "sample_traces", KK["file"])
    for seq in (256, 512):
        truth = kk_truth(sample, seq)
        p = run_json([args.cli, "whatif", sample, "--measured-micro-batch", "4", "--measured-seq", "128",
                      "--measured-precision", "fp32", "--measured-devices", "1", "--seq", str(seq), "--json"])
        proj, lo, hi = p["peak_allocated_bytes"], p["peak_allocated_low_bytes"], p["peak_allocated_high_bytes"]
        err = (proj - truth) / truth * 100
        holds = lo <= truth <= hi
        errors.append(abs(err))
        held += holds
        needs.append(needed_share(proj, lo, hi, truth))
        print(f"| bundled sample (truth from its architecture) | seq 128 -> {seq} | {truth / 2**20:.1f} | "
              f"{proj / 2**20:.1f} | {lo / 2**20:.1f} .. {hi / 2**20:.1f} | {err:+.1f}% | {'yes' if holds else 'no'} |")
    needs.sort()
    share90 = needs[max(0, -(-9 * len(needs) // 10) - 1)]
    print(f"\n{len(errors)} pairs: median |error| {statistics.median(errors):.1f}%, worst {max(errors):.1f}%, "
          f"band holds {held} of {len(errors)}; {share90:.2f} of each band (scaled about the projection) "
          f"would still hold 90%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
