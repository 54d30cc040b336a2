"""Packing the run's snapshots into at most MAX_PARTS uncompressed tar archives
(truth_partN.tar, each at most the part limit) beside truth.json and run.log: 8 files at most
in the output folder, as the device machine's transfer allows.

The snapshots are gzipped already (point.py). When they do not all fit, snapshots are dropped
in this order, the largest of a class first, until they do:
  1. the CPU recordings of the non-base points ("cpu_lever");
  2. the snapshots of the lever points ("gpu_lever"): the timed-only extras, whose numbers
     (max allocated / reserved, step time) stay in truth.json without a file;
  3. the CPU recordings of the base points ("cpu_base");
  4. the rest (bases and special points, "gpu_base").
Each drop is listed in truth.json's "dropped" with its reason; the point's "file" (or
"cpu_file") becomes null and "dropped_file" (or "dropped_cpu_file") keeps the name.
"""

import os
import tarfile

BLOCK = 512
RECORD = 20 * BLOCK  # tarfile's record size: an archive is a multiple of it
END = 2 * BLOCK  # the two zero blocks that end an archive
MAX_PARTS = 6
DROP_ORDER = ("cpu_lever", "gpu_lever", "cpu_base", "gpu_base")


def member_bytes(size):
    """A member's bytes in a ustar archive: its header block and its data padded to blocks."""
    return BLOCK + (size + BLOCK - 1) // BLOCK * BLOCK


def archive_bytes(sizes):
    """The archive's size with these members, as tarfile writes it."""
    used = sum(member_bytes(s) for s in sizes) + END
    return (used + RECORD - 1) // RECORD * RECORD


class Item(object):
    def __init__(self, arc, src, cls, entry, key):
        self.arc, self.src, self.cls, self.entry, self.key = arc, src, cls, entry, key
        self.size = os.path.getsize(src)


def collect(entries):
    """The snapshots to pack: entry["_src"] / entry["_cpu_src"] (work paths), named by
    entry["file"] / entry["cpu_file"]."""
    items = []
    for e in entries:
        base = e.get("tier") in ("base", "special")
        if e.get("_src") and e.get("file"):
            items.append(Item(e["file"], e["_src"], "gpu_base" if base else "gpu_lever", e,
                              "file"))
        if e.get("_cpu_src") and e.get("cpu_file"):
            items.append(Item(e["cpu_file"], e["_cpu_src"], "cpu_base" if base else "cpu_lever",
                              e, "cpu_file"))
    return items


def plan_parts(items, cap, max_parts):
    """First-fit decreasing into at most max_parts archives of at most cap bytes; None when
    it does not fit."""
    bins = []
    for it in sorted(items, key=lambda i: (-i.size, i.arc)):
        for b in bins:
            if archive_bytes([i.size for i in b] + [it.size]) <= cap:
                b.append(it)
                break
        else:
            if len(bins) == max_parts or archive_bytes([it.size]) > cap:
                return None
            bins.append([it])
    return bins


def choose(items, cap, max_parts):
    """(bins, dropped items with reasons): drops in DROP_ORDER until the rest fits."""
    dropped, keep = [], []
    for it in items:  # one alone too large for a part can never be packed
        if archive_bytes([it.size]) > cap:
            dropped.append((it, "larger than one part (%d bytes)" % it.size))
        else:
            keep.append(it)
    order = sorted(keep, key=lambda i: (DROP_ORDER.index(i.cls), -i.size, i.arc))
    while True:
        bins = plan_parts(keep, cap, max_parts)
        if bins is not None:
            return bins, dropped
        victim = order.pop(0)
        keep.remove(victim)
        dropped.append((victim, "did not fit %d parts of %d bytes (%s)"
                        % (max_parts, cap, victim.cls)))


def write_parts(bins, out_dir, cap):
    """truth_part1.tar, ...: members sorted by name, plain ustar headers; checks each size."""
    parts = []
    for n, b in enumerate(bins, 1):
        name = "truth_part%d.tar" % n
        path = os.path.join(out_dir, name)
        with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tf:
            for it in sorted(b, key=lambda i: i.arc):
                info = tf.gettarinfo(it.src, arcname=it.arc)
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mode = 0o644
                with open(it.src, "rb") as f:
                    tf.addfile(info, f)
        size = os.path.getsize(path)
        if size > cap:
            raise RuntimeError("%s is %d bytes, over the %d limit" % (name, size, cap))
        parts.append({"file": name, "bytes": size, "members": sorted(i.arc for i in b)})
    return parts


def pack(entries, out_dir, cap, max_parts=MAX_PARTS):
    """Packs the entries' snapshots; updates the entries for what was dropped. Returns
    (parts, dropped) for truth.json."""
    bins, dropped = choose(collect(entries), cap, max_parts)
    out = []
    for it, reason in dropped:
        it.entry[it.key] = None
        it.entry["dropped_" + it.key] = it.arc
        out.append({"file": it.arc, "point": it.entry["name"], "class": it.cls,
                    "gz_bytes": it.size, "reason": reason})
    return write_parts(bins, out_dir, cap), out
