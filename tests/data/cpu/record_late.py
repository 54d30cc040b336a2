#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the fixtures of the same name into the current directory (run with /usr/bin/python3:
# Debian's PyTorch 1.13 for the CPU); see README.md here.
import os, sys, pickle
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import torch, loop_styles, mid_run, snapshot_summary
torch.set_num_threads(1)


def write(snap, path):
    snap.pop("external_annotations", None)  # the stacks alone, as tools/category_truth.py scores
    with open(path, "wb") as f:
        pickle.dump(snap, f, protocol=4)


for style in ("late_adamw", "late_keep"):
    raw = "%s.raw.pickle" % style
    loop_styles.run_style(raw, "decoder", style)
    snap = mid_run.as_recorded_mid_run(snapshot_summary.load_file(raw))
    os.unlink(raw)
    write(snap, "decoder_%s_mid.pickle" % style)
    if style == "late_adamw":
        # Cut at the first backward: no gradient born, no optimizer step, nothing says whether
        # the copies beyond the weights are optimizer state or kept gradients.
        entries = snap["device_traces"][0]
        first_backward = next(i for i, e in enumerate(entries)
                              if any("autograd" in (f.get("filename") or "") for f in e.get("frames") or []))
        snap["device_traces"][0] = entries[:first_backward]
        live = mid_run._alive_at_end(snap["device_traces"][0])
        pre = {a for a, _b, _c in snap["headroom_truth"]["before_window"]}
        freed = {e["addr"] for e in entries[first_backward:] if e.get("action") in mid_run.FREES}
        kept = {a: s for a, (s, _e) in live.items()}
        for a, b, _c in snap["headroom_truth"]["before_window"]:
            kept.setdefault(a, b)
        snap["segments"] = [mid_run._segment(a, s) for a, s in sorted(kept.items())]
        snap.pop("headroom_truth", None)
        write(snap, "decoder_late_forward_only.pickle")
