#!/usr/bin/python3
"""Issue 52's device script, dry-run on the CPU (tools/gpu_truth/README.md): two decoder points
through run.py --dry-run, unpacked by unpack.py, and one snapshot opened by Headroom, whose
peak must be the point's max_allocated_bytes.

    gpu_truth_smoke.py HEADROOM_CLI

Exit 77 when torch cannot be imported (the dry run needs the CPU recorder)."""
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(cli):
    try:
        import torch  # noqa: F401
    except ImportError:
        print("gpu_truth_smoke: torch cannot be imported; skipped")
        return 77
    tmp = tempfile.mkdtemp(prefix="gpu_truth_smoke_")
    try:
        out, unpacked = os.path.join(tmp, "out"), os.path.join(tmp, "gpu")
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gpu_truth", "run.py"), "--dry-run",
                        "--only", "decoder_base,decoder_mb2x", "--budget-s", "60", "--out", out], check=True)
        files = sorted(os.listdir(out))
        assert len(files) <= 8 and "truth.json" in files and "run.log" in files, files
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gpu_truth", "unpack.py"), out, unpacked],
                       check=True)
        truth = json.load(open(os.path.join(unpacked, "truth.json")))
        points = [p for p in truth["points"] if p["status"] == "ok"]
        assert [p["name"] for p in points] == ["decoder_base", "decoder_mb2x"], truth["points"]
        for p in points:
            path = os.path.join(unpacked, p["file"])
            raw = os.path.join(tmp, os.path.basename(path)[:-3])
            with gzip.open(path) as src, open(raw, "wb") as dst:
                shutil.copyfileobj(src, dst)
            summary = json.loads(subprocess.run([cli, "summary", raw, "--json"], check=True,
                                                capture_output=True, text=True).stdout)
            peak = summary["devices"][0]["peak_allocated_bytes"]
            assert peak == p["max_allocated_bytes"], (p["name"], peak, p["max_allocated_bytes"])
            print("gpu_truth_smoke: %s opens, peak %d = max_allocated_bytes" % (p["name"], peak))
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
