#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Build libspacersv's API reference: HTML and section-3 man pages.

Runs doxygen on the configured Doxyfile (docs/Doxyfile.in), fails when it
printed any warning, and keeps from its man output the pages a reader asks
for: one page per public header (renamed libspacersv_<header>.3, since
names like types.h.3 would clash with other packages), the pages of the
public structs, and one link per function, macro and enum, so that
`man srsv_space_reserve` opens the page of <libspacersv/space.h>.  Pages
doxygen makes for struct members (size.3, open.3, ...) are dropped.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", action="version",
                    version="%(prog)s (libspacersv)")
    ap.add_argument("--doxygen", required=True, help="the doxygen program")
    ap.add_argument("--doxyfile", required=True, help="the configured Doxyfile")
    ap.add_argument("--outdir", required=True,
                    help="where html/ and man3/ are written")
    args = ap.parse_args()

    work = os.path.join(args.outdir, "doxygen")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    log = os.path.join(work, "warnings.log")
    with open(args.doxyfile, encoding="utf-8") as f:
        config = f.read()
    config += "\nOUTPUT_DIRECTORY = %s\nWARN_LOGFILE = %s\n" % (work, log)
    run = subprocess.run([args.doxygen, "-"], input=config.encode(),
                         check=False)
    warnings = ""
    if os.path.exists(log):
        with open(log, encoding="utf-8", errors="replace") as f:
            warnings = f.read().strip()
    if warnings:
        print(warnings, file=sys.stderr)
        n = len(warnings.splitlines())
        print("gen-apidocs: doxygen printed %d warning line(s); the reference "
              "must build without any" % n, file=sys.stderr)
        return 1
    if run.returncode != 0:
        print("gen-apidocs: doxygen exited %d" % run.returncode,
              file=sys.stderr)
        return 1

    html = os.path.join(args.outdir, "html")
    shutil.rmtree(html, ignore_errors=True)
    shutil.move(os.path.join(work, "html"), html)

    src = os.path.join(work, "man", "man3")
    man3 = os.path.join(args.outdir, "man3")
    shutil.rmtree(man3, ignore_errors=True)
    os.makedirs(man3)
    headers = {n for n in os.listdir(src) if n.endswith(".h.3")}
    kept = 0
    for name in sorted(os.listdir(src)):
        with open(os.path.join(src, name), encoding="utf-8") as f:
            text = f.read()
        if name in headers:
            out = "libspacersv_" + name
            text = re.sub(r'^\.TH "libspacersv/', '.TH "libspacersv_', text,
                          count=1)
        elif re.match(r"(srsv|SRSV)_", name):
            out = name
            m = re.fullmatch(r"\.so man3/(\S+)\s*", text)
            if m and m.group(1) in headers:
                text = ".so man3/libspacersv_%s\n" % m.group(1)
        else:
            continue
        # A text line that starts with ' (doxygen's quotes) would be read
        # as a roff control line.
        text = re.sub(r"^'", r"\\&'", text, flags=re.M)
        with open(os.path.join(man3, out), "w", encoding="utf-8") as f:
            f.write(text)
        kept += 1
    if not os.path.exists(os.path.join(man3, "srsv_space_reserve.3")):
        print("gen-apidocs: no srsv_space_reserve.3 among the man pages",
              file=sys.stderr)
        return 1
    print("gen-apidocs: %d man pages, 0 warnings" % kept)
    return 0

if __name__ == "__main__":
    sys.exit(main())
