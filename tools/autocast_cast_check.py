#!/usr/bin/python3
"""Forward passes under bf16 autocast whose weights' casts are alive at the peak: project the
sequence from a file without shapes (as a GPU snapshot has none) and compare.

Usage: /usr/bin/python3 tools/autocast_cast_check.py --cli build/release/app/headroom-cli [--out DIR]

Records, with python/headroom_cpu.py (Debian 12's PyTorch 1.13 on the CPU, shapes=False: no
headroom_tensor, so no shapes and no op graph), no_grad forwards under CPU bf16 autocast of fp32
models whose weights outweigh their activations (micro-batch 1 or 2, short sequences), at a base
sequence and at 4 and 16 times it, and prints `headroom-cli whatif BASE --seq S --verify FILE`'s
error and band (docs/whatif-model.md, "Laws", stage 7). The decoder rows are the ones the rule
was written from; the llama and encoder rows were not looked at before. About a minute on 2
cores. Exit 77 without torch; exit 1 when a projection is off by more than 10% or a band misses.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import verify_check  # noqa: E402  (beside this file)

# tag: (family, builder keywords, micro-batch, base sequence, multiples)
VARIANTS = [
    ("decoder-256", "decoder", dict(dim=256, heads=4, layers=4), 1, 16, (4, 16)),
    ("decoder-512", "decoder", dict(dim=512, heads=8, layers=4), 1, 128, (4,)),
    ("llama-256", "llama", dict(dim=256, heads=4, kv_heads=2, hidden=704, layers=4), 1, 16, (4, 16)),
    ("llama-512", "llama", dict(dim=512, heads=8, kv_heads=8, hidden=1376, layers=2), 2, 32, (4,)),
    ("encoder-384", "encoder", dict(dim=384, heads=6, layers=3), 1, 32, (4, 8)),
]


def record(path, family, kw, mb, seq):
    import cpu_models, headroom_cpu
    levers = dict(micro_batch=mb, seq=seq, precision="amp-bf16", checkpoint="none", accum=1, devices=1,
                  iterations=2, optimizer="none", model=family, family=family, mode="inference")
    with headroom_cpu.capture(path, oracle=False, shapes=False, **levers) as cap:
        model, make_batch, _ = cpu_models.BUILDERS[family](mb, seq, "fp32", "none", 0, **kw)
        cpu_models.infer(model, make_batch, "amp-bf16", 2, cap)


def main():
    got = verify_check.setup(__doc__.split("\n")[0], "casts-")
    if got is None:
        return 77
    args, out = got
    print("| model | micro-batch | sequence | measured MiB | projected MiB | band MiB | error | band holds |")
    print("|---|---:|---|---:|---:|---|---:|---|")
    errors, held = [], 0
    for tag, family, kw, mb, seq, mults in VARIANTS:
        base = os.path.join(out, "%s_x1.pickle" % tag)
        record(base, family, kw, mb, seq)
        for m in mults:
            after = os.path.join(out, "%s_x%d.pickle" % (tag, m))
            record(after, family, kw, mb, seq * m)
            v = verify_check.verify(args.cli, base, ["--seq", str(seq * m)], after)
            errors.append(abs(v["error"]))
            held += v["holds"]
            print("| %s | %d | %d -> %d | %s | %s | %s .. %s | %+.1f%% | %s |"
                  % (tag, mb, seq, seq * m, v["measured"], v["projected"], v["low"], v["high"], v["error"],
                     "yes" if v["holds"] else "no"))
    errors.sort()
    print("\n%d projections: median |error| %.1f%%, worst %.1f%%, band holds %d of %d"
          % (len(errors), errors[len(errors) // 2], errors[-1], held, len(errors)))
    return 0 if errors[-1] <= 10 and held == len(errors) else 1


if __name__ == "__main__":
    sys.exit(main())
