"""What tools/gqa_coincidence_check.py and tools/autocast_cast_check.py share: their command
line (--cli, --out), the torch check, and one `headroom-cli whatif BASE LEVERS --verify AFTER`
read back as numbers."""
import argparse
import pickle
import re
import subprocess
import tempfile

_VERIFIED = re.compile(r"Verified against the run that followed: projected peak allocated ([0-9.]+ \w+) "
                       r"\(band ([0-9.]+ \w+) \.\. ([0-9.]+ \w+)\), measured ([0-9.]+ \w+): error "
                       r"([+-][0-9.]+)%, (the band holds it|outside the band)")


def setup(description, prefix):
    """(args, out directory), or None without torch (the caller exits 77)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--out", default=None, help="where the recordings go (default: a temp dir)")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("SKIP: no torch")
        return None
    torch.set_num_threads(1)
    return args, args.out or tempfile.mkdtemp(prefix=prefix)


def verify(cli, base, levers, after):
    """{projected, low, high, measured (texts), error (%), holds} of one --verify."""
    text = " ".join(subprocess.run([cli, "whatif", base] + levers + ["--verify", after],
                                   capture_output=True, text=True, check=True).stdout.split())
    v = _VERIFIED.search(text)
    return {"projected": v.group(1), "low": v.group(2), "high": v.group(3), "measured": v.group(4),
            "error": float(v.group(5)), "holds": v.group(6) == "the band holds it"}


def without_recorder_keys(src, dst):
    """`src` without what a Headroom recorder adds to each alloc entry (shapes, the op graph:
    recorder_shapes_check.strip_keys), as a GPU snapshot of the same run would be; the run's
    headroom_config stays. Returns dst."""
    from recorder_shapes_check import strip_keys  # beside this file
    with open(src, "rb") as f:
        snap = pickle.load(f)
    with open(dst, "wb") as f:
        pickle.dump(strip_keys(snap), f, protocol=4)
    return dst
