#!/usr/bin/python3
"""Grouped-query llamas whose model width equals the sequence: project x4 and compare.

Usage: /usr/bin/python3 tools/gqa_coincidence_check.py --cli build/release/app/headroom-cli [--out DIR]

Records, with python/headroom_cpu.py (Debian 12's PyTorch 1.13 on the CPU), the llama family of
python/cpu_models_more.py at nine sizes where d_model or the kv projections' width equals the
sequence (docs/whatif-model.md, "Laws", a width of the marks' size), each at its base sequence
and at four times it, and prints `headroom-cli whatif BASE --seq 4*S --verify SEQ4`'s error and
band. The first row is tests/data/cpu/record_gqa4d.py's (the rule was written from it); the
other eight were not looked at before. About 30 s on 2 cores. Exit 77 without torch.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import verify_check  # noqa: E402  (beside this file)

# tag: (d_model, query heads, kv heads, ffn, micro-batch, base sequence)
VARIANTS = [("a", 64, 4, 1, 176, 2, 64), ("b", 256, 16, 4, 704, 1, 64), ("c", 128, 8, 2, 352, 1, 64),
            ("d", 64, 4, 2, 176, 1, 64), ("e", 128, 4, 1, 352, 2, 128), ("f", 64, 4, 1, 176, 1, 64),
            ("g", 128, 4, 1, 352, 1, 128), ("h", 256, 4, 1, 704, 1, 256), ("i", 128, 4, 2, 352, 2, 128)]


def record(path, dim, heads, kv, hidden, mb, seq):
    import cpu_models, cpu_models_more, headroom_cpu
    levers = dict(micro_batch=mb, seq=seq, precision="fp32", checkpoint="none", accum=1, devices=1,
                  iterations=2, optimizer="adamw", model="gqa", family="gqa")
    with headroom_cpu.capture(path, oracle=False, **levers) as cap:
        model, make_batch, loss_fn = cpu_models_more.build_llama(
            mb, seq, "fp32", "none", 0, vocab=256, dim=dim, heads=heads, kv_heads=kv, hidden=hidden, layers=2)
        opt = cpu_models.make_optimizer("adamw", model.parameters())
        cpu_models.train(model, opt, make_batch, loss_fn, "fp32", 1, 2, cap)


def main():
    got = verify_check.setup(__doc__.split("\n")[0], "gqa-")
    if got is None:
        return 77
    args, out = got
    print("| variant | d_model | heads (kv) | micro-batch | sequence | error | band holds |")
    print("|---|---:|---|---:|---|---:|---|")
    worst, held = 0.0, 0
    for tag, dim, heads, kv, hidden, mb, seq in VARIANTS:
        base, seq4 = (os.path.join(out, "%s_%s.pickle" % (tag, n)) for n in ("base", "seq4"))
        record(base, dim, heads, kv, hidden, mb, seq)
        record(seq4, dim, heads, kv, hidden, mb, 4 * seq)
        v = verify_check.verify(args.cli, base, ["--seq", str(4 * seq)], seq4)
        worst, held = max(worst, abs(v["error"])), held + v["holds"]
        print("| %s | %d | %d (%d) | %d | %d -> %d | %+.1f%% | %s |"
              % (tag, dim, heads, kv, mb, seq, 4 * seq, v["error"], "yes" if v["holds"] else "no"))
    print("\n%d variants: worst |error| %.1f%%, band holds %d of %d" % (len(VARIANTS), worst, held, len(VARIANTS)))
    return 0 if worst <= 10 and held == len(VARIANTS) else 1


if __name__ == "__main__":
    sys.exit(main())
