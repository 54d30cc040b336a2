#!/usr/bin/env python3
"""Generates the bad-input corpus (issue 7) into a folder; nothing it writes is committed.

    make_badinputs.py --out DIR [--source REPO] [--real REAL_TRACES] [--cli headroom-cli]

Writes DIR/<case files> and DIR/cases.json, a list of
    {"name": ..., "path": ..., "expect": "error" | "ok" | "any", "kind": ...}
where "error" means the CLI must refuse the input (exit 2, one line naming the file),
"ok" means it must load, and "any" means either (a flipped byte or a wrong type in an
optional field may leave a valid file) -- but never a crash, a hang, memory past the
limit, or partial output. run_badinputs.py runs every case through headroom-cli.

Kinds: truncated (every fixture and real file cut at many points), flipped (bytes
flipped at seeded random places), wrongtype (every field of a snapshot's segment,
block, trace entry and frame, and of the JSON formats, given a value of the wrong
type), absurd (negative, 2^63, 2^64 sizes; lengths larger than the file in pickle
opcodes, .hrt sections and counts), nesting (100,000-deep JSON and pickles), huge
(strings of 32 MiB), bomb (gzip and zstd streams that inflate to 16 GiB), malicious
(pickles that would run a shell command through GLOBAL/STACK_GLOBAL/INST/OBJ + REDUCE,
BUILD, NEWOBJ; the test checks the command never ran), fs (empty file, a directory, an
empty directory, an unreadable file, a FIFO, a dangling symlink, a missing file, names
with spaces and non-ASCII characters).
"""
import argparse
import copy
import gzip
import io
import json
import os
import pickle
import random
import shutil
import struct
import subprocess
import sys
import zlib

PWNED = 'headroom-badinput-pwned'  # the marker file a malicious pickle would create


class SafeUnpickler(pickle.Unpickler):
    """Our own fixtures hold only dicts, lists and scalars; anything else is refused."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError('refusing %s.%s' % (module, name))


def safe_load(data):
    return SafeUnpickler(io.BytesIO(data)).load()


class Corpus:
    def __init__(self, out):
        self.out = out
        self.cases = []
        self.names = set()

    def add(self, name, data, expect, kind, note=''):
        assert name not in self.names, name
        self.names.add(name)
        path = os.path.join(self.out, name)
        if data is not None:
            with open(path, 'wb') as f:
                f.write(data)
        self.cases.append({'name': name, 'path': path, 'expect': expect, 'kind': kind, 'note': note})
        return path


def read(p):
    with open(p, 'rb') as f:
        return f.read()


# ---------------------------------------------------------------- truncation and flips
def truncations(c, base, data, is_html, many=True):
    n = len(data)
    body = len(data.rstrip(b' \r\n\t\x00'))
    cuts = [1, 2, 5, 17, n // 10, n // 4, n // 3, n // 2, 2 * n // 3, 9 * n // 10, body - 1] if many else \
        [3, n // 3, 2 * n // 3, body - 1]
    cuts = sorted(set(cuts))
    for cut in cuts:
        if 0 < cut < body:
            # A _memory_viz page cut after its base64 block still holds the whole snapshot.
            expect = 'any' if is_html else 'error'
            c.add('trunc-%s-at%d' % (base, cut), data[:cut], expect, 'truncated')


def flips(c, base, data, rng, counts=(1, 4, 32)):
    for count in counts:
        b = bytearray(data)
        for _ in range(count):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        c.add('flip%d-%s' % (count, base), bytes(b), 'any', 'flipped')


# ---------------------------------------------------------------- wrong types
WRONG = [('str', 'not a number'), ('list', [1, 2, 3]), ('dict', {'x': 1}), ('none', None),
         ('float', 0.5), ('neg', -7), ('bool', True)]


def wrong_types_pickle(c, snap):
    seg = snap['segments'][0]
    targets = [('segment', lambda s: s['segments'][0], list(seg.keys())),
               ('block', lambda s: s['segments'][0]['blocks'][0], list(seg['blocks'][0].keys())),
               ('entry', lambda s: s['device_traces'][0][0], list(snap['device_traces'][0][0].keys())),
               ('frame', lambda s: s['device_traces'][0][0]['frames'][0],
                list(snap['device_traces'][0][0]['frames'][0].keys()))]
    k = 0
    for where, get, keys in targets:
        for key in keys:
            # Two wrong values per field, rotating through the kinds of wrong.
            for j in range(2):
                tag, value = WRONG[(k + j) % len(WRONG)]
                s = copy.deepcopy(snap)
                get(s)[key] = value
                c.add('wrongtype-pickle-%s-%s-%s.pickle' % (where, key, tag), pickle.dumps(s, protocol=4),
                      'any', 'wrongtype')
            k += 1
    for top in ('segments', 'device_traces'):
        s = copy.deepcopy(snap)
        s[top] = 'a string'
        c.add('wrongtype-pickle-top-%s.pickle' % top, pickle.dumps(s, protocol=4), 'error', 'wrongtype')
    c.add('wrongtype-pickle-root-int.pickle', pickle.dumps(42, protocol=4), 'error', 'wrongtype')
    c.add('wrongtype-pickle-root-str.pickle', pickle.dumps('segments', protocol=4), 'error', 'wrongtype')


def wrong_types_json(c, name, doc):
    """Each distinct key path of the first element of each list (up to 40), wrong-typed."""
    paths = []

    def walk(v, path):
        if len(paths) >= 40:
            return
        if isinstance(v, dict):
            for k, x in v.items():
                paths.append(path + [k])
                walk(x, path + [k])
        elif isinstance(v, list) and v:
            paths.append(path + [0])
            walk(v[0], path + [0])

    walk(doc, [])
    for i, p in enumerate(paths):
        tag, value = WRONG[i % len(WRONG)]
        d = copy.deepcopy(doc)
        t = d
        for k in p[:-1]:
            t = t[k]
        t[p[-1]] = value
        label = '.'.join(str(x) for x in p).replace('/', '_').replace(' ', '_')[:60]
        c.add('wrongtype-json-%s-%s-%s.json' % (name, label, tag), json.dumps(d).encode(), 'any', 'wrongtype')


# ---------------------------------------------------------------- absurd sizes
def absurd_pickle(c, snap):
    for field, value, expect in (('size', -1, 'any'), ('size', 2 ** 63 - 1, 'error'), ('size', 2 ** 63, 'error'),
                                 ('size', 2 ** 64, 'any'), ('size', -2 ** 63, 'error'), ('addr', 2 ** 64 - 1, 'any'),
                                 ('time_us', 2 ** 63 - 1, 'error'), ('time_us', -2 ** 63 + 1, 'error'),
                                 ('size', 10 ** 30, 'any')):
        s = copy.deepcopy(snap)
        s['device_traces'][0][0][field] = value
        c.add('absurd-entry-%s-%d.pickle' % (field, value), pickle.dumps(s, protocol=4), expect, 'absurd')
    for field, value, expect in (('total_size', -(2 ** 62), 'error'), ('total_size', 2 ** 63 - 1, 'error'),
                                 ('allocated_size', 2 ** 62, 'error'), ('device', 2 ** 40, 'any'),
                                 ('device', -5, 'any'), ('address', 2 ** 64 - 1, 'any')):
        s = copy.deepcopy(snap)
        s['segments'][0][field] = value
        c.add('absurd-segment-%s-%d.pickle' % (field, value), pickle.dumps(s, protocol=4), expect, 'absurd')
    s = copy.deepcopy(snap)
    s['segments'][0]['blocks'][0]['size'] = 2 ** 63 - 1
    c.add('absurd-block-size.pickle', pickle.dumps(s, protocol=4), 'error', 'absurd')
    # Opcode lengths larger than the file.
    P4 = b'\x80\x04'
    for name, body in (
            ('binunicode-4g', b'X' + struct.pack('<I', 0xFFFFFFF0) + b'abc'),
            ('binunicode8-2p63', b'\x8d' + struct.pack('<Q', 2 ** 63) + b'abc'),
            ('binunicode8-2p64m1', b'\x8d' + struct.pack('<Q', 2 ** 64 - 1) + b'abc'),
            ('binbytes8-huge', b'\x8e' + struct.pack('<Q', 2 ** 62) + b'abc'),
            ('bytearray8-huge', b'\x96' + struct.pack('<Q', 2 ** 40) + b'abc'),
            ('frame-2p63', b'\x95' + struct.pack('<Q', 2 ** 63) + b'}.'),
            ('long4-huge', b'\x8b' + struct.pack('<I', 0x7FFFFFFF) + b'\x01'),
            ('long4-negative', b'\x8b' + struct.pack('<i', -5) + b'\x01'),
            ('long1-255', b'\x8a\xff' + b'\x01' * 10),
            ('short-binunicode-past-end', b'\x8c\xff' + b'ab'),
            ('binget-unset', b'h\x07.'),
            ('long-binget-huge', b'j' + struct.pack('<I', 0xFFFFFFFF) + b'.'),
            ('binput-huge', b'}r' + struct.pack('<I', 0xFFFFFFFF) + b'.'),
            ('stack-underflow', b'e.'),
            ('setitems-no-mark', b'}u.'),
            ('pop-empty', b'0.'),
            ('stop-empty', b'.'),
            ('no-stop', b'}'),
            ('binfloat-short', b'G\x00\x00'),
    ):
        c.add('absurd-opcode-%s.pickle' % name, P4 + body, 'error', 'absurd')
    # A length-prefixed string claiming more than the file: 0x80 0x02 proto 2.
    c.add('absurd-opcode-proto99.pickle', b'\x80\x63}.', 'error', 'absurd')


def absurd_json(c):
    big = [('neg', -1, 'any'), ('2p63', 2 ** 63, 'error'), ('2p64', 2 ** 64, 'error'),
           ('1e308', 1e308, 'error'), ('2p63m1', 2 ** 63 - 1, 'error')]
    for tag, v, expect in big:
        rows = [[1000, 1, 4096, 1], [2000, 1, v, 2], [3000, 2, 4096, 1]]
        c.add('absurd-json-rawtimeline-%s.json' % tag, json.dumps(rows).encode(), expect, 'absurd')
        chrome = {'traceEvents': [
            {'ph': 'i', 'name': '[memory]', 'pid': 1, 'tid': 1, 'ts': 10,
             'args': {'Device Type': 1, 'Device Id': 0, 'Addr': 4096, 'Bytes': v,
                      'Total Allocated': 4096, 'Total Reserved': 8192}}]}
        c.add('absurd-json-chrome-%s.json' % tag, json.dumps(chrome).encode(), expect, 'absurd')
        snap = {'segments': [{'device': 0, 'address': 4096, 'total_size': v, 'allocated_size': 0,
                              'active_size': 0, 'stream': 0, 'segment_type': 'large', 'blocks': []}],
                'device_traces': [[]]}
        c.add('absurd-json-snapshot-%s.json' % tag, json.dumps(snap).encode(), expect, 'absurd')
    ts = [[0, 1, 2], [[1, 2, 3]] * 8]
    ts[1][0] = [1, 2 ** 70, 3]
    c.add('absurd-json-times-sizes-2p70.json', json.dumps(ts).encode(), 'any', 'absurd')
    c.add('absurd-json-ts-inf.json', b'{"traceEvents": [{"ph": "i", "name": "[memory]", "ts": 1e400, '
          b'"args": {"Device Id": 0, "Bytes": 10, "Addr": 1}}]}', 'any', 'absurd')


def absurd_hrt(c, tag, hrt):
    """Corrupt length fields of a real .hrt: section sizes, raw sizes, counts."""
    # Section headers start at byte 24: id(4) flags(4) stored(8) raw(8).
    pos, k = 24, 0
    while pos + 24 <= len(hrt) and k < 12:
        sid = hrt[pos:pos + 4].decode('latin-1')
        stored = struct.unpack_from('<Q', hrt, pos + 8)[0]
        for field, off, value in (('stored', 8, 2 ** 63), ('stored', 8, len(hrt)), ('raw', 16, 2 ** 35),
                                  ('raw', 16, stored * 3 + 1)):
            b = bytearray(hrt)
            struct.pack_into('<Q', b, pos + off, value)
            label = sid.strip().lower() or 'sec'
            c.add('absurd-hrt-%s-%s%d-%s-%d.hrt' % (tag, label, k, field, value), bytes(b), 'any', 'absurd')
        pos += 24 + stored
        k += 1
    c.add('absurd-hrt-%s-version-99.hrt' % tag, hrt[:8] + struct.pack('<H', 99) + hrt[10:], 'error', 'absurd')
    c.add('absurd-hrt-%s-header-only.hrt' % tag, hrt[:24], 'error', 'absurd')


# ---------------------------------------------------------------- nesting, huge strings
def nesting(c):
    n = 100000
    c.add('nest-json-arrays-closed.json', b'[' * n + b']' * n, 'error', 'nesting')
    c.add('nest-json-arrays-open.json', b'[' * n, 'error', 'nesting')
    c.add('nest-json-objects.json', b'{"a":' * n + b'1' + b'}' * n, 'error', 'nesting')
    c.add('nest-json-in-segments.json', b'{"segments": ' + b'[' * n + b']' * n + b', "device_traces": []}',
          'error', 'nesting')
    c.add('nest-json-1m-arrays.json', b'[' * 1000000 + b']' * 1000000, 'error', 'nesting')
    P4 = b'\x80\x04'
    # 100,000 nested lists: EMPTY_LIST then (EMPTY_LIST APPEND-into-previous) via MARK/LIST.
    c.add('nest-pickle-marks.pickle', P4 + b'(' * n + b'l' * n + b'.', 'error', 'nesting')
    c.add('nest-pickle-lists.pickle', P4 + b']' * n + b'a' * (n - 1) + b'.', 'error', 'nesting')
    c.add('nest-pickle-tuples.pickle', P4 + b')' + b'\x85' * n + b'.', 'error', 'nesting')
    c.add('nest-pickle-dicts.pickle', P4 + b'}' + (b'}' + b'\x8c\x01k' + b'\x8c\x01v' + b's') * 1 +
          b'N' * 10 + b'.', 'error', 'nesting')
    d = {'segments': [], 'device_traces': [[]]}
    inner = d['device_traces'][0]
    for _ in range(400):  # Python's pickler recursion limit: about as deep as it can write
        nxt = []
        inner.append(nxt)
        inner = nxt
    c.add('nest-pickle-deep-trace.pickle', pickle.dumps(d, protocol=4), 'error', 'nesting')


def huge(c, snap):
    size = 32 << 20
    s = copy.deepcopy(snap)
    s['device_traces'][0][0]['frames'][0]['filename'] = 'A' * size
    c.add('huge-pickle-frame-filename.pickle', pickle.dumps(s, protocol=4), 'any', 'huge')
    s = copy.deepcopy(snap)
    s['allocator_settings'] = {'x' * size: 1}
    c.add('huge-pickle-settings-key.pickle', pickle.dumps(s, protocol=4), 'any', 'huge')
    c.add('huge-json-string.json', b'{"segments": [], "device_traces": [], "x": "' + b'B' * size + b'"}', 'any',
          'huge')
    c.add('huge-json-unterminated-string.json', b'{"traceEvents": "' + b'C' * size, 'error', 'huge')
    c.add('huge-json-key.json', b'{"' + b'k' * size + b'": 1}', 'error', 'huge')
    c.add('huge-whitespace.json', b' ' * size, 'error', 'huge')
    c.add('huge-html-base64-garbage.html', b'<html>"base64": "' + b'!' * (1 << 20) + b'"', 'error', 'huge')


# ---------------------------------------------------------------- bombs
def _pack_bits(bits):
    out = bytearray((len(bits) + 7) // 8)
    for i, b in enumerate(bits):
        if b:
            out[i >> 3] |= 1 << (i & 7)
    return bytes(out)


def _code(value, nbits):
    """A Huffman code: written most significant bit first into deflate's LSB-first stream."""
    return [(value >> (nbits - 1 - i)) & 1 for i in range(nbits)]


def deflate_bomb(nbytes):
    """One fixed-Huffman deflate block: a literal 0 then <length 258, distance 1> matches.
    Eight matches take 104 bits = 13 bytes, so the stream is a 13-byte period (built in
    milliseconds, unlike zlib, which would have to read every output byte)."""
    matches = (nbytes - 1) // 258
    matches -= matches % 8
    head = [1, 1, 0] + _code(0b00110000, 8)          # BFINAL, BTYPE=01 (fixed), literal 0
    match = _code(0b11000101, 8) + _code(0, 5)       # length code 285 (258), distance code 0 (1)
    period = match * 8                                 # 104 bits
    rotated = period[5:] + period[:5]                  # head + 5 bits = 16 bits: byte aligned
    tail = period[5:] + _code(0, 7)                    # the last period, then end-of-block
    body = _pack_bits(head + period[:5]) + _pack_bits(rotated) * (matches // 8 - 1) + _pack_bits(tail)
    size = 1 + matches * 258
    # Wrong CRC on purpose: computing it would mean inflating; a reader must refuse the
    # stream long before its trailer.
    return b'\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff' + body + struct.pack('<II', 0, size & 0xFFFFFFFF)


def zstd_rle_frame(nblocks):
    """A zstd frame of RLE blocks of 128 KiB zeros, no content size: 4 bytes per block."""
    block = (((128 << 10) << 3) | (1 << 1) | 0).to_bytes(3, 'little') + b'\x00'
    last = (((128 << 10) << 3) | (1 << 1) | 1).to_bytes(3, 'little') + b'\x00'
    return b'\x28\xb5\x2f\xfd' + b'\x00' + b'\x58' + block * (nblocks - 1) + last


def bombs(c):
    member = gzip.compress(bytes(64 << 20), compresslevel=9, mtime=0)  # 65 KB (zlib's 1030:1)
    # 256 concatenated gzip members of 64 MiB of zeros: 16 GiB inflated from 16 MiB.
    c.add('bomb-gzip-16GiB.gz', member * 256, 'error', 'bomb', 'inflates to 16 GiB')
    c.add('bomb-gzip-single-2GiB.gz', deflate_bomb(2 << 30), 'error', 'bomb', 'one member, inflates to 2 GiB')
    frame = zstd_rle_frame(8192)  # 1 GiB
    c.add('bomb-zstd-16GiB.zst', frame * 16, 'error', 'bomb', 'inflates to 16 GiB')
    c.add('bomb-zstd-single-8GiB.zst', zstd_rle_frame(8192 * 8), 'error', 'bomb', 'one frame, 8 GiB')
    # A bomb whose content starts as a pickle (a reader starting before inflation ends would see it).
    c.add('bomb-gzip-pickle-prefix.gz', gzip.compress(b'\x80\x04]' + b'(' * (1 << 20), mtime=0) + member * 64,
          'error', 'bomb')


# ---------------------------------------------------------------- malicious pickles
def malicious(c, marker):
    cmd = ('touch ' + marker).encode()
    sh = b'\x8c' + bytes([len(cmd)]) + cmd
    P2, P4 = b'\x80\x02', b'\x80\x04'
    variants = {
        'global-os-system-reduce': P2 + b'cos\nsystem\n' + b'(' + sh + b'tR.',
        'global-posix-system-reduce': P2 + b'cposix\nsystem\n' + b'(' + sh + b'tR.',
        'stack-global-reduce': P4 + b'\x8c\x02os\x8c\x06system\x93' + sh + b'\x85R.',
        'subprocess-popen-newobj': P2 + b'csubprocess\nPopen\n' + b'(' + b']' + b'\x8c\x02sh' + b'a' + b'\x8c\x02-c' +
        b'a' + sh + b'a' + b't\x81.',
        'inst-opcode': P2 + b'(' + sh + b'ios\nsystem\n.',
        'obj-opcode': P2 + b'(cos\nsystem\n' + sh + b'o.',
        'builtins-eval': P4 + b'\x8c\x08builtins\x8c\x04eval\x93\x8c\x16__import__("os").system' + b'\x85R.',
        'build-setstate': P2 + b'cos\nsystem\n)\x81}b.',
        'newobj-ex': P4 + b'\x8c\x02os\x8c\x06system\x93)}\x92.',
        'persid': P2 + b'P' + cmd + b'\n.',
        'binpersid': P2 + sh + b'Q.',
        'ext1': P2 + b'\x82\x01.',
        'in-snapshot-dict': P4 + b'}(\x8c\x08segments](\x8c\x02os\x8c\x06system\x93' + sh + b'\x85Rae'
        + b'\x8c\x0ddevice_traces]u.',
        'reduce-in-trace-entry': P4 + b'}(\x8c\x08segments]\x8c\x0ddevice_traces]](}(\x8c\x06action\x8c\x05alloc'
        + b'\x8c\x04size\x8c\x02os\x8c\x06system\x93' + sh + b'\x85Rueau.',
    }
    for name, data in variants.items():
        c.add('malicious-%s.pickle' % name, data, 'error', 'malicious', 'would run: touch ' + marker)
    # The same, gzip- and zstd-wrapped, and inside a _memory_viz HTML page.
    import base64
    evil = variants['global-os-system-reduce']
    c.add('malicious-gzipped.pickle.gz', gzip.compress(evil, mtime=0), 'error', 'malicious')
    c.add('malicious-in-html.html', b'<html><script>local_files = [{"name": "x", "base64": "' +
          base64.b64encode(evil) + b'"}]</script></html>', 'error', 'malicious')


# ---------------------------------------------------------------- file-system cases
def filesystem(c, good):
    c.add('fs-empty-file.pickle', b'', 'error', 'fs')
    c.add('fs-one-byte', b'\x80', 'error', 'fs')
    c.add('fs-whitespace-only.json', b'  \n\t\n', 'error', 'fs')
    c.add('fs-gzip-empty.gz', gzip.compress(b'', mtime=0), 'error', 'fs')
    c.add('fs-html-no-data.html', b'<html><body>nothing</body></html>', 'error', 'fs')
    c.add('fs-text-file.txt', b'hello, this is not a trace\n', 'error', 'fs')
    c.add('fs-elf-binary', read(sys.executable)[:4096], 'error', 'fs')
    d = os.path.join(c.out, 'fs-directory-with-bad-file')
    os.makedirs(d)
    with open(os.path.join(d, 'bad.pickle'), 'wb') as f:
        f.write(b'\x80\x04garbage')
    c.add('fs-directory-with-bad-file', None, 'error', 'fs', 'a directory is a multi-rank summary')
    os.makedirs(os.path.join(c.out, 'fs-empty-directory'))
    c.add('fs-empty-directory', None, 'error', 'fs')
    p = c.add('fs-unreadable.pickle', good, 'error' if os.geteuid() != 0 else 'any', 'fs',
              'mode 000 (root reads it anyway)')
    os.chmod(p, 0)
    fifo = os.path.join(c.out, 'fs-fifo.pickle')
    os.mkfifo(fifo)
    c.add('fs-fifo.pickle', None, 'error', 'fs')
    os.symlink(os.path.join(c.out, 'does-not-exist'), os.path.join(c.out, 'fs-dangling-symlink.pickle'))
    c.add('fs-dangling-symlink.pickle', None, 'error', 'fs')
    c.add('fs-missing-file.pickle', None, 'error', 'fs')
    c.add('fs-name with spaces.pickle', good, 'ok', 'fs')
    c.add('fs-nön-ascii 名前 ✓.pickle', good, 'ok', 'fs')
    c.add('fs-bad name with spaces.pickle', good[:len(good) // 2], 'error', 'fs')
    c.add('fs-bäd nön-ascii ファイル.pickle', good[:len(good) // 2], 'error', 'fs')
    c.add('fs-leading-dash -x.pickle', good[:100], 'error', 'fs')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--out', required=True)
    ap.add_argument('--source', default=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
    ap.add_argument('--real', help='the real_traces folder (optional)')
    ap.add_argument('--cli', help='headroom-cli, to make .hrt inputs (optional)')
    ap.add_argument('--marker', default=None, help='file a malicious pickle would create')
    a = ap.parse_args()
    out = os.path.abspath(a.out)
    if os.path.isdir(out):
        for root, dirs, files in os.walk(out):
            for x in dirs + files:
                try:
                    os.chmod(os.path.join(root, x), 0o700, follow_symlinks=False)
                except (OSError, NotImplementedError):
                    pass
        shutil.rmtree(out)
    os.makedirs(out)
    c = Corpus(out)
    rng = random.Random(7)
    src = os.path.abspath(a.source)
    fixtures = os.path.join(src, 'tests', 'fixtures')

    inputs = []
    for name in sorted(os.listdir(fixtures)):
        p = os.path.join(fixtures, name)
        if os.path.isfile(p) and not name.endswith('.md') and not name.startswith('malicious') \
                and name not in ('empty.pickle', 'not_a_pickle.bin'):
            inputs.append(p)
    for name in sorted(os.listdir(os.path.join(fixtures, 'json'))):
        inputs.append(os.path.join(fixtures, 'json', name))
    if a.real and os.path.isdir(a.real):
        for name in sorted(os.listdir(a.real)):
            if name.endswith('.pickle') or name.endswith('.json.gz'):
                inputs.append(os.path.join(a.real, name))
    hrts = []
    if a.cli:
        for p in inputs:
            if os.path.getsize(p) < 300000:
                o = os.path.join(out, '.src-%s.hrt' % os.path.basename(p))
                if subprocess.run([a.cli, 'convert', p, o], capture_output=True).returncode == 0:
                    hrts.append(o)
    for p in inputs + hrts:
        base = os.path.basename(p).lstrip('.').replace('src-', '')
        data = read(p)
        small = len(data) < 300000 and p not in hrts
        truncations(c, base, data, base.endswith('.html'), many=small)
        if base.endswith('.json.gz') or base.endswith('.gz') and len(data) > 100000:
            # Cut the inflated JSON too (the gzip cuts above stop in the decoder).
            raw = gzip.decompress(data)
            body = len(raw.rstrip())
            for frac in (0.01, 0.5, 0.99) if len(raw) < (8 << 20) else (0.01,):
                cut = int(body * frac)
                c.add('trunc-inflated-%s-at%d.json' % (base[:-3], cut), raw[:cut], 'error', 'truncated')
        flips(c, base, data, rng, (1, 4, 32) if small else (8,))
    for p in hrts:
        os.unlink(p)

    snap = safe_load(read(os.path.join(fixtures, 'proto5.pickle')))
    wrong_types_pickle(c, snap)
    legacy = safe_load(read(os.path.join(fixtures, 'legacy_list.pickle')))
    for i, key in enumerate(sorted(legacy[0].keys())):
        s = copy.deepcopy(legacy)
        s[0][key] = WRONG[i % len(WRONG)][1]
        c.add('wrongtype-legacy-%s.pickle' % key, pickle.dumps(s, protocol=3), 'any', 'wrongtype')
    for name in ('legacy_list_snapshot.json', 'timeline_times_sizes.json', 'chrome_2x_oom.pt.trace.json'):
        wrong_types_json(c, name.split('.')[0], json.loads(read(os.path.join(fixtures, 'json', name))))
    wrong_types_json(c, 'silmont_snapshot',
                     json.loads(gzip.decompress(read(os.path.join(fixtures, 'json', 'silmont_snapshot.json.gz')))))

    absurd_pickle(c, snap)
    absurd_json(c)
    if a.cli:
        o = os.path.join(out, '.abs.hrt')
        subprocess.run([a.cli, 'convert', os.path.join(fixtures, 'proto5.pickle'), o, '--uncompressed'],
                       capture_output=True, check=True)
        absurd_hrt(c, 'proto5-stored', read(o))
        subprocess.run([a.cli, 'convert', os.path.join(fixtures, 'multi_device.pickle'), o],
                       capture_output=True, check=True)
        absurd_hrt(c, 'multi-device', read(o))
        os.unlink(o)
    nesting(c)
    huge(c, snap)
    bombs(c)
    marker = a.marker or os.path.join(out, PWNED)
    malicious(c, marker)
    filesystem(c, read(os.path.join(fixtures, 'proto5.pickle')))

    with open(os.path.join(out, 'cases.json'), 'w') as f:
        json.dump({'marker': marker, 'cases': c.cases}, f, indent=1, ensure_ascii=False)
    kinds = {}
    for case in c.cases:
        kinds[case['kind']] = kinds.get(case['kind'], 0) + 1
    print('%d bad-input cases in %s: %s' % (len(c.cases), out,
                                             ', '.join('%s %d' % kv for kv in sorted(kinds.items()))))


if __name__ == '__main__':
    main()
