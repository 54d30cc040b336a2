"""The points of the GPU truth run (issue 52), most important first, and their CPU companions.

A spec is a JSON-able dict that point.py runs: name, lane ("gpu" or "cpu"), kind, the levers
(family, micro_batch, seq, precision, checkpointing, optimizer), dims (the builder's sizes),
step counts (warmup, recorded, timed), alloc_conf, the file name the snapshot gets in
tests/data/gpu, tier (base / lever / special: the packing's drop order), est_s and
timeout_s (the budget's guesses, seconds after the child is told to go).
"""

import copy

# GPU-sized dims, so that activations dominate the step (the CPU matrix's are tiny)
GPU_FAMILIES = {
    "decoder": {"micro_batch": 4, "seq": 512,
                "dims": {"vocab": 8192, "dim": 512, "heads": 8, "layers": 4}},
    "encoder": {"micro_batch": 4, "seq": 512,
                "dims": {"vocab": 8192, "dim": 512, "heads": 8, "layers": 4}},
    "convnet": {"micro_batch": 16, "seq": 64,  # seq is the image side: 64, 128, 256
                "dims": {"widths": [32, 64, 128], "classes": 10}},
    "lstm": {"micro_batch": 8, "seq": 256, "dims": {"vocab": 8192, "dim": 512, "layers": 2}},
}
# the dry run's: small enough that ~70 recordings fit in a few minutes on 2 cores
DRY_FAMILIES = {
    "decoder": {"micro_batch": 2, "seq": 64,
                "dims": {"vocab": 256, "dim": 64, "heads": 4, "layers": 2}},
    "encoder": {"micro_batch": 2, "seq": 64,
                "dims": {"vocab": 256, "dim": 64, "heads": 4, "layers": 2}},
    "convnet": {"micro_batch": 2, "seq": 16, "dims": {"widths": [8, 16, 32], "classes": 10}},
    "lstm": {"micro_batch": 2, "seq": 32, "dims": {"vocab": 128, "dim": 32, "layers": 2}},
}
GPU_LLAMA = {"micro_batch": 4, "seq": 512,
             "dims": {"hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
                      "intermediate_size": 1376, "vocab_size": 8192}}
DRY_LLAMA = {"micro_batch": 2, "seq": 64,
             "dims": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                      "intermediate_size": 172, "vocab_size": 256}}
# one lever at a time from the base, in the order they are worth most (the budget cuts the tail)
LEVERS = (
    ("ampbf16", {"precision": "amp-bf16"}),
    ("ckpt", {"checkpointing": "full"}),
    ("mb2x", {"mb_mult": 2}),
    ("seq2x", {"seq_mult": 2}),
    ("ampfp16", {"precision": "amp-fp16"}),
    ("sgd", {"optimizer": "sgd"}),
    ("mb4x", {"mb_mult": 4}),
    ("seq4x", {"seq_mult": 4}),
)
# per kind: (est_s, timeout_s) on the GPU machine once torch is imported (the prestart hides
# the import), and the dry run's
GPU_TIMES = {"family": (6, 60), "expandable": (6, 60), "llama": (10, 90), "oom": (6, 60),
             "compile": (60, 180), "cuda_graph": (8, 60), "lightning": (25, 120), "fsdp": (10, 90)}
DRY_TIMES = (3, 60)
# the CPU recorder's guess for a base point, scaled by cpu_cost(); and its timeout
CPU_BASE_EST_S = {True: 3.0, False: 30.0}
CPU_TIMEOUT_S = 240
# attention families' step grows faster than linearly in seq; a convnet's with the image area
SEQ_EXPONENT = {"decoder": 1.5, "encoder": 1.5, "convnet": 2.0, "lstm": 1.0}


def _steps(spec, dry):
    spec.update(warmup=1, recorded=1, timed=3 if dry else 5)
    return spec


def family_name(spec):
    return "mb%d_seq%d_%s_%s_%s.pickle.gz" % (spec["micro_batch"], spec["seq"],
                                             spec["precision"], spec["checkpointing"],
                                             spec["optimizer"])


def _family_point(family, lever, change, dry):
    base = (DRY_FAMILIES if dry else GPU_FAMILIES)[family]
    spec = {"name": "%s_%s" % (family, lever), "lane": "gpu", "kind": "family",
            "family": family, "lever": lever, "micro_batch": base["micro_batch"],
            "seq": base["seq"], "precision": "fp32", "checkpointing": "none",
            "optimizer": "adamw", "phase": "full_step", "dims": copy.deepcopy(base["dims"]),
            "alloc_conf": None, "tier": "base" if lever == "base" else "lever"}
    change = dict(change)
    spec["micro_batch"] *= change.pop("mb_mult", 1)
    spec["seq"] *= change.pop("seq_mult", 1)
    spec.update(change)
    spec["file"] = "%s/%s" % (family, family_name(spec))
    return _steps(spec, dry)


def _special(name, kind, dry, **change):
    base = (DRY_FAMILIES if dry else GPU_FAMILIES)["decoder"]
    spec = {"name": name, "lane": "gpu", "kind": kind, "family": "decoder", "lever": kind,
            "micro_batch": base["micro_batch"], "seq": base["seq"], "precision": "fp32",
            "checkpointing": "none", "optimizer": "adamw", "phase": "full_step",
            "dims": copy.deepcopy(base["dims"]), "alloc_conf": None, "tier": "special",
            "file": "special/%s.pickle.gz" % name}
    spec.update(change)
    return _steps(spec, dry)


def _llama(attn, precision, dry):
    base = DRY_LLAMA if dry else GPU_LLAMA
    suffix = "" if precision == "fp32" else "_" + precision.replace("-", "")
    name = "llama_%s%s" % (attn, suffix)
    spec = {"name": name, "lane": "gpu", "kind": "llama", "family": "llama", "lever": attn,
            "attn": attn, "micro_batch": base["micro_batch"], "seq": base["seq"],
            "precision": precision, "checkpointing": "none", "optimizer": "adamw",
            "phase": "full_step", "dims": copy.deepcopy(base["dims"]), "alloc_conf": None,
            "tier": "special",
            "file": "llama/%s_mb%d_seq%d_%s.pickle.gz" % (attn, base["micro_batch"],
                                                         base["seq"], precision)}
    return _steps(spec, dry)


def gpu_points(dry):
    """The GPU lane's points in launch order: the four families' bases, their levers (by
    lever, so a cut budget keeps every family's most useful ones), Llama, then the specials."""
    fams = ("decoder", "encoder", "convnet", "lstm")
    points = [_family_point(f, "base", {}, dry) for f in fams]
    for lever, change in LEVERS:
        points += [_family_point(f, lever, change, dry) for f in fams]
    points += [_llama("sdpa", "fp32", dry), _llama("eager", "fp32", dry),
               _llama("sdpa", "amp-bf16", dry)]
    big = {"micro_batch": 16, "seq": 2048} if not dry else {"micro_batch": 8, "seq": 256}
    points.append(_special("oom_forward", "oom", dry, phase="forward", limit_gib=3.0,
                           **big))
    points.append(_special("decoder_expandable", "expandable", dry,
                           alloc_conf="expandable_segments:True"))
    compile_ = _special("compile", "compile", dry)
    compile_["warmup"] = 2  # the first call compiles, the second may recompile
    points.append(compile_)
    graph = _special("cuda_graph", "cuda_graph", dry)
    graph["warmup"] = 2  # on a side stream, before the capture (PyTorch's docs: a few)
    points.append(graph)
    points.append(_special("lightning", "lightning", dry))
    points.append(_special("fsdp2", "fsdp", dry, fsdp=2))
    points.append(_special("fsdp1", "fsdp", dry, fsdp=1))
    for p in points:
        p["dry_run"] = dry
        est, timeout = DRY_TIMES if dry else GPU_TIMES[p["kind"]]
        p["est_s"], p["timeout_s"] = est, timeout
    return points


def cpu_cost(spec, base):
    """The CPU recorder's step cost relative to its family's base point (a guess for the
    budget: tokens, the attention's or image's growth, recompute, bf16 casts)."""
    cost = float(spec["micro_batch"]) / base["micro_batch"]
    cost *= (float(spec["seq"]) / base["seq"]) ** SEQ_EXPONENT[spec["family"]]
    if spec["checkpointing"] == "full":
        cost *= 1.35
    if spec["precision"] != "fp32":
        cost *= 1.5
    return cost


def cpu_points(gpu_specs, dry):
    """The CPU recorder's recording of each family point whose precision it can run
    (fp32, amp-bf16 with CUDA's autocast lists emulated; no fp16 autocast on the CPU): the
    bases first, then the levers cheapest first, so the time left records the most."""
    out = []
    for g in gpu_specs:
        if g["kind"] != "family" or g["precision"] == "amp-fp16":
            continue
        base = (DRY_FAMILIES if dry else GPU_FAMILIES)[g["family"]]
        spec = copy.deepcopy(g)
        spec.update(name="cpu_" + g["name"], lane="cpu", of=g["name"],
                    file="cpu/" + g["file"], timed=0, warmup=1, recorded=1,
                    cost=cpu_cost(g, base), timeout_s=CPU_TIMEOUT_S)
        spec["est_s"] = CPU_BASE_EST_S[dry] * spec["cost"]
        out.append(spec)
    out.sort(key=lambda s: (s["tier"] != "base", s["cost"]))
    return out


def select(points, only):
    """--only NAME,...: the GPU points named (unknown names are an error)."""
    if not only:
        return points
    names = [n.strip() for n in only.split(",") if n.strip()]
    known = {p["name"] for p in points}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit("unknown point(s): %s; known: %s" % (", ".join(unknown),
                                                             ", ".join(sorted(known))))
    return [p for p in points if p["name"] in names]
