#!/usr/bin/env python3
"""The folder layering of core/ and ui/, checked from the includes (stdlib only).

core/'s layering is also enforced by the compiler (each folder's library sees only the
folders it links); ui/ is one library, so this check is what holds its folders to theirs.
It also checks that core/ includes nothing of Qt or ui/ (headroom-cli links core alone), and
that no file pair (x.h with x.cpp) reaches itself through the pairs it includes: such a cycle
means neither can be read, tested or moved into a library of its own without the other.

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
    "budget": ["whatif", "analysis", "replay", "model", "util"],
}
# core/whatif/'s folders, each its own library (core/CMakeLists.txt), in the same way.
WHATIF = {
    "vocabulary": [],
    "laws": ["vocabulary"],
    "terms": ["vocabulary"],
    "replay": ["laws", "terms", "vocabulary"],
    "projection": ["replay", "terms", "vocabulary"],
    "calibration": ["projection", "replay", "laws", "vocabulary"],
    "ladder": ["calibration", "projection", "replay", "laws", "terms", "vocabulary"],
    "query": ["ladder", "calibration", "projection", "replay", "laws", "terms", "vocabulary"],
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
        for rel in sources(src, f"{top}/{folder}"):
            with open(os.path.join(src, rel), encoding="utf-8") as f:
                text = f.read()
            for inc in INCLUDE.findall(text):
                if top.startswith("core") and (inc.startswith(("ui/", "Q", "qcustomplot"))):
                    bad.append(f"{rel}: includes {inc} (core/ has no Qt and no ui/)")
                if not inc.startswith(top + "/"):
                    continue
                parts = inc[len(top) + 1:].split("/")
                if len(parts) > 1 and parts[0] != folder and parts[0] not in layers[folder]:
                    bad.append(f"{rel}: includes {inc}, but {top}/{folder} may include only "
                               f"{', '.join(layers[folder]) or 'itself'}")


def sources(src, folder):
    """The .h and .cpp files under `folder` (relative to src), sub-folders included."""
    found = []
    for dirpath, _dirs, names in os.walk(os.path.join(src, folder)):
        for name in names:
            if name.endswith((".h", ".cpp")):
                found.append(os.path.relpath(os.path.join(dirpath, name), src))
    return sorted(found)


# Cycles there today; a new one fails.
KNOWN_CYCLES = {
    ("core/io/pickleparser", "core/io/picklereader"),        # the opcode loop and its containers
    ("core/native/nativeformat", "core/native/nativereader"),  # the facade and its reader
    ("ui/shell/explorer", "ui/shell/postmortem"),
    ("ui/timeline/timelinecontrols", "ui/timeline/timelineview"),
}


def pair_includes(src, top):
    """{file pair: the pairs of `top` its .h and .cpp include}."""
    pairs = {}
    for dirpath, _dirs, names in os.walk(os.path.join(src, top)):
        for name in names:
            if name.endswith((".h", ".cpp")):
                rel = os.path.relpath(os.path.join(dirpath, name), src)
                pairs.setdefault(os.path.splitext(rel)[0], []).append(rel)
    deps = {}
    for pair, files in pairs.items():
        d = set()
        for rel in files:
            with open(os.path.join(src, rel), encoding="utf-8") as f:
                for inc in INCLUDE.findall(f.read()):
                    stem = os.path.splitext(inc)[0]
                    if stem != pair and stem in pairs:
                        d.add(stem)
        deps[pair] = d
    return deps


def check_cycles(src, top, bad):
    deps = pair_includes(src, top)
    state = {}

    def visit(node, path):
        state[node] = 1
        for d in sorted(deps[node]):
            if state.get(d) == 1:
                cycle = path[path.index(d):]
                if tuple(sorted(cycle)) not in KNOWN_CYCLES:
                    bad.append("a file cycle: " + " -> ".join(cycle + [d]))
            elif d not in state:
                visit(d, path + [d])
        state[node] = 2

    for node in sorted(deps):
        if node not in state:
            visit(node, [node])


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    bad = []
    check(sys.argv[1], "core", CORE, bad)
    check(sys.argv[1], "core/whatif", WHATIF, bad)
    check(sys.argv[1], "ui", UI, bad)
    for top in ("core", "ui", "app"):
        check_cycles(sys.argv[1], top, bad)
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
