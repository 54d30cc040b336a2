#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Packaging tests (issue 10).

  check_package.py install --build DIR --cmake CMAKE --version V [--gui ON|OFF]
      `cmake --install DIR` into a temporary prefix; every file is where it belongs, the
      .desktop file passes desktop-file-validate, the MIME types agree with it, the man
      pages format without warnings, the installed programs print their version.
  check_package.py deb --build DIR --cpack CPACK --version V [--gui ON|OFF]
      `cpack -G DEB` into a temporary directory; Depends names runtime packages only (no
      -dev), the package unpacks to the same files under /usr, and the unpacked
      headroom-cli runs (--version, summary of the installed sample trace).

Everything is written under a temporary directory (removed afterwards; --keep keeps it),
never into the source or build tree (cmake --install writes its install_manifest.txt in
the build directory, as it always does).
"""
import argparse
import gzip
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

ICON_SIZES = [16, 24, 32, 48, 64, 128, 256]
DESKTOP_ID = "io.github.headroom.Headroom.desktop"
SAMPLES = ["pt27_kk_memory_ctx128_fullstep.pickle.gz", "pt27_silmont_mem_snapshot.pickle"]
MIME_NS = "{http://www.freedesktop.org/standards/shared-mime-info}"

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def run(cmd, env=None, timeout=120):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def find_man(prefix, page):
    for name in (page + ".gz", page):
        p = os.path.join(prefix, "share/man/man1", name)
        if os.path.isfile(p):
            return p
    return None


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def check_tree(prefix, gui, version):
    """The installed files under prefix (a --prefix, or <root>/usr of an unpacked .deb)."""
    def need(rel, executable=False):
        p = os.path.join(prefix, rel)
        if not os.path.isfile(p):
            fail("missing: " + rel)
            return None
        if executable and not os.access(p, os.X_OK):
            fail("not executable: " + rel)
        if os.path.getsize(p) == 0:
            fail("empty: " + rel)
        return p

    need("bin/headroom-cli", executable=True)
    for doc in ("LICENSE", "THIRD-PARTY-LICENSES.md", "README.md"):
        need("share/doc/headroom/" + doc)
    for s in SAMPLES:
        need("share/headroom/sample_traces/" + s)
    if not find_man(prefix, "headroom-cli.1"):
        fail("missing: share/man/man1/headroom-cli.1[.gz]")
    lic = need("share/doc/headroom/LICENSE")
    if lic and "MIT License" not in open(lic, encoding="utf-8").read():
        fail("share/doc/headroom/LICENSE is not the MIT licence")
    if not gui:
        for rel in ("bin/headroom", "share/applications/" + DESKTOP_ID):
            if os.path.exists(os.path.join(prefix, rel)):
                fail(rel + " installed although the GUI is not built")
        return

    need("bin/headroom", executable=True)
    if not find_man(prefix, "headroom.1"):
        fail("missing: share/man/man1/headroom.1[.gz]")
    svg = need("share/icons/hicolor/scalable/apps/headroom.svg")
    if svg:
        try:
            root = ET.parse(svg).getroot()
            if not root.tag.endswith("svg"):
                fail("headroom.svg: the root element is not <svg>")
        except ET.ParseError as e:
            fail("headroom.svg: not XML: %s" % e)
    for n in ICON_SIZES:
        p = need("share/icons/hicolor/%dx%d/apps/headroom.png" % (n, n))
        if p and png_size(p) != (n, n):
            fail("%s: expected a %dx%d PNG, got %s" % (p, n, n, png_size(p)))

    desktop = need("share/applications/" + DESKTOP_ID)
    mime = need("share/mime/packages/headroom.xml")
    if not desktop or not mime:
        return
    entry = {}
    for line in open(desktop, encoding="utf-8"):
        if "=" in line and not line.startswith("#"):
            k, v = line.rstrip("\n").split("=", 1)
            entry[k] = v
    for k, want in (("Name", "Headroom"), ("Icon", "headroom"), ("Terminal", "false"), ("Type", "Application")):
        if entry.get(k) != want:
            fail("%s: %s=%r, expected %r" % (DESKTOP_ID, k, entry.get(k), want))
    if not entry.get("Exec", "").startswith("headroom "):
        fail("%s: Exec=%r does not run headroom" % (DESKTOP_ID, entry.get("Exec")))
    desktop_types = {t for t in entry.get("MimeType", "").split(";") if t}
    try:
        xml_types = {m.get("type") for m in ET.parse(mime).getroot().iter(MIME_NS + "mime-type")}
    except ET.ParseError as e:
        fail("headroom.xml: not XML: %s" % e)
        xml_types = set()
    if "application/x-headroom-trace" not in xml_types:
        fail("headroom.xml does not define application/x-headroom-trace")
    if desktop_types != xml_types:
        fail("MimeType= of the .desktop file %s differs from the types headroom.xml defines %s"
             % (sorted(desktop_types), sorted(xml_types)))

    tool = shutil.which("desktop-file-validate")
    if not tool:
        fail("desktop-file-validate not found: install desktop-file-utils (scripts/install-deps.sh lists it)")
    else:
        rc, out, err = run([tool, desktop])
        print("desktop-file-validate %s: rc %d %s" % (DESKTOP_ID, rc, (out + err).strip() or "(no output)"))
        if rc != 0 or (out + err).strip():
            fail("desktop-file-validate: " + (out + err).strip())
    xmllint = shutil.which("xmllint")
    if xmllint:
        rc, out, err = run([xmllint, "--noout", mime])
        if rc != 0:
            fail("xmllint headroom.xml: " + err.strip())


def check_man(prefix, gui):
    pages = ["headroom-cli.1"] + (["headroom.1"] if gui else [])
    man, groff = shutil.which("man"), shutil.which("groff")
    if not man and not groff:
        print("SKIP man page check: neither man nor groff is installed")
        return
    for page in pages:
        path = find_man(prefix, page)
        if not path:
            continue
        if man:
            env = dict(os.environ, MANWIDTH="80", MANPAGER="cat", PAGER="cat", LC_ALL="C.UTF-8")
            rc, out, err = run([man, "--warnings", "-E", "UTF-8", "-l", path], env=env)
            how = "man --warnings -l"
        else:
            src = gzip.open(path, "rb").read() if path.endswith(".gz") else open(path, "rb").read()
            r = subprocess.run([groff, "-man", "-ww", "-z"], input=src, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60)
            rc, out, err = r.returncode, "", r.stderr.decode(errors="replace")
            how = "groff -man -ww -z"
        print("%s %s: rc %d, %d warnings" % (how, page, rc, len(err.strip().splitlines())))
        if rc != 0 or err.strip():
            fail("%s %s: %s" % (how, page, err.strip()))
        if man and "headroom" not in out:
            fail("%s %s: the formatted page does not mention headroom" % (how, page))


def check_versions(bindir, gui, version):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    rc, out, err = run([os.path.join(bindir, "headroom-cli"), "--version"], env=env)
    print("headroom-cli --version: " + out.strip())
    if rc != 0 or not re.match(r"headroom-cli %s \(commit [0-9a-f]+(-dirty)?|headroom-cli %s \(commit unknown"
                               % (re.escape(version), re.escape(version)), out):
        fail("headroom-cli --version: rc %d, %r %r" % (rc, out, err))
    if gui:
        if "the GUI is built with Qt 6." not in out:
            fail("headroom-cli --version does not name the GUI's Qt version: %r" % out)
        rc, out, err = run([os.path.join(bindir, "headroom"), "--version"], env=env)
        print("headroom --version: " + out.strip())
        if rc != 0 or not out.startswith("headroom %s (Qt 6." % version) or "commit " not in out:
            fail("headroom --version: rc %d, %r %r" % (rc, out, err))


def cmd_install(a, tmp):
    prefix = os.path.join(tmp, "prefix")
    rc, out, err = run([a.cmake, "--install", a.build, "--prefix", prefix], timeout=300)
    if rc != 0:
        fail("cmake --install failed (rc %d):\n%s%s" % (rc, out, err))
        return
    files = sorted(os.path.relpath(os.path.join(d, f), prefix) for d, _, fs in os.walk(prefix) for f in fs)
    print("installed %d files:\n  %s" % (len(files), "\n  ".join(files)))
    check_tree(prefix, a.gui, a.version)
    check_man(prefix, a.gui)
    check_versions(os.path.join(prefix, "bin"), a.gui, a.version)


def cmd_deb(a, tmp):
    out_dir = os.path.join(tmp, "cpack")
    config = os.path.join(a.build, "CPackConfig.cmake")
    rc, out, err = run([a.cpack, "-G", "DEB", "--config", config, "-B", out_dir], timeout=600)
    if rc != 0:
        fail("cpack -G DEB failed (rc %d):\n%s%s" % (rc, out, err))
        return
    debs = [f for f in os.listdir(out_dir) if f.endswith(".deb")]
    if len(debs) != 1:
        fail("expected one .deb in %s, found %s" % (out_dir, debs))
        return
    deb = os.path.join(out_dir, debs[0])
    print("built " + debs[0])
    if not debs[0].startswith("headroom_%s" % a.version):
        fail("%s is not named headroom_%s_<arch>.deb" % (debs[0], a.version))
    fields = {}
    for f in ("Package", "Version", "Section", "Maintainer", "Depends"):
        rc, out, err = run(["dpkg-deb", "-f", deb, f])
        fields[f] = out.strip()
        print("%s: %s" % (f, fields[f]))
    if fields["Package"] != "headroom":
        fail("Package is %r, not headroom" % fields["Package"])
    if fields["Version"] != a.version:
        fail("Version is %r, not %s" % (fields["Version"], a.version))
    if fields["Section"] != "devel":
        fail("Section is %r, not devel" % fields["Section"])
    deps = [re.sub(r"\s*\(.*\)", "", d).strip()
            for alt in fields["Depends"].split(",") for d in alt.split("|") if d.strip()]
    dev = [d for d in deps if d.endswith("-dev") or ":" in d and d.split(":")[0].endswith("-dev")]
    if dev:
        fail("Depends names development packages: %s" % ", ".join(dev))
    want = ["libc6", "libstdc++6", "libzstd1", "zlib1g"]
    if a.gui:
        want += ["libqt6core6", "libqt6widgets6", "libqt6gui6", "libqt6svg6", "libqcustomplot2.1-qt6"]
    missing = [w for w in want if w not in deps]
    if missing:
        fail("Depends lacks %s (did dpkg-shlibdeps run?): %s" % (", ".join(missing), fields["Depends"]))

    root = os.path.join(tmp, "root")
    rc, out, err = run(["dpkg", "-x", deb, root])
    if rc != 0:
        fail("dpkg -x failed: " + err)
        return
    usr = os.path.join(root, "usr")
    check_tree(usr, a.gui, a.version)
    check_versions(os.path.join(usr, "bin"), a.gui, a.version)
    sample = os.path.join(usr, "share/headroom/sample_traces", SAMPLES[1])
    rc, out, err = run([os.path.join(usr, "bin/headroom-cli"), "summary", sample])
    print("headroom-cli summary %s: rc %d, %d lines" % (SAMPLES[1], rc, len(out.splitlines())))
    if rc != 0 or "peak" not in out.lower():
        fail("headroom-cli summary on the installed sample: rc %d\n%s%s" % (rc, out, err))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["install", "deb"])
    p.add_argument("--build", required=True)
    p.add_argument("--version", required=True)
    p.add_argument("--gui", default="ON")
    p.add_argument("--cmake", default="cmake")
    p.add_argument("--cpack", default="cpack")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory")
    a = p.parse_args()
    a.gui = a.gui.upper() in ("ON", "1", "TRUE", "YES")
    a.build = os.path.abspath(a.build)
    tmp = tempfile.mkdtemp(prefix="headroom-%s-" % a.mode)
    try:
        (cmd_install if a.mode == "install" else cmd_deb)(a, tmp)
    finally:
        if a.keep:
            print("kept " + tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("\n%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
