#!/usr/bin/env python3
"""The folder layering of core/ and ui/, checked from the includes (stdlib only).

core/'s layering is also enforced by the compiler (each folder's library sees only the
folders it links); ui/ is one library, so this check is what holds its folders to theirs.
It also checks that core/ includes nothing of Qt or ui/ (headroom-cli links core alone).

    check_layers.py SOURCE_DIR      exit 0, or 1 with every include against the layering
"""
import os
import re
import sys

# A folder and the folders it may include (docs/development.md's layout table).
CORE = {
    "util": [],
    "model": ["util"],
    "native": ["model", "util"],
    "replay": ["model", "util"],
    "io": ["native", "replay", "model", "util"],
    "analysis": ["replay", "model", "util"],
    "whatif": ["analysis", "replay", "model", "util"],
    "report": ["whatif", "analysis", "replay", "model", "util"],
}
UI = {
    "plot": [],
    "explorer": ["plot"],
    "views": ["explorer", "plot"],
    "timeline": ["views", "explorer", "plot"],
    "whatif": ["explorer", "plot"],
    "shell": ["timeline", "views", "whatif", "explorer", "plot"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+[<"]([^>"]+)[>"]', re.M)


def check(src, top, layers, bad):
    base = os.path.join(src, top)
    present = sorted(d for d in os.listdir(base) if os.path.isdir(os.path.join(base, d)))
    for folder in present:
        if folder not in layers:
            bad.append(f"{top}/{folder}/: a folder the layering does not name (add it to {sys.argv[0]})")
    for folder in layers:
        path = os.path.join(base, folder)
        if not os.path.isdir(path):
            bad.append(f"{top}/{folder}/: named in the layering but missing")
            continue
        for name in sorted(os.listdir(path)):
            if not name.endswith((".h", ".cpp")):
                continue
            rel = f"{top}/{folder}/{name}"
            with open(os.path.join(path, name), encoding="utf-8") as f:
                text = f.read()
            for inc in INCLUDE.findall(text):
                parts = inc.split("/")
                if top == "core" and (parts[0] == "ui" or inc.startswith("Q") or inc.startswith("qcustomplot")):
                    bad.append(f"{rel}: includes {inc} (core/ has no Qt and no ui/)")
                if parts[0] == top and len(parts) > 2:
                    dep = parts[1]
                    if dep != folder and dep not in layers[folder]:
                        bad.append(f"{rel}: includes {inc}, but {top}/{folder} may include only "
                                   f"{', '.join(layers[folder]) or 'itself'}")


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    bad = []
    check(sys.argv[1], "core", CORE, bad)
    check(sys.argv[1], "ui", UI, bad)
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
