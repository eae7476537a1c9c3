#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Header hygiene (meson suite 'abi'): each public header compiles on its own.

For every header, included twice (the include guard must hold) as
<libspacersv/NAME> from a file that includes nothing else:
  c99     C99 -pedantic -Werror -Wall -Wextra -Wstrict-prototypes -Wundef
  c++11   C++11 -pedantic -Werror -Wall -Wextra -Wundef
  extern-c   a C++ object that takes the address of every function the
          header declares must reference the plain (unmangled) C names,
          i.e. the declarations sit inside extern "C"
Each failure prints the compiler's output.

Self-test mode (--selftest): every header must carry a comment
"abi-selftest: expect CHECK" and must fail exactly that check; this proves
each check can fail.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import abi_common

C_FLAGS = ["-std=c99", "-pedantic", "-Werror", "-Wall", "-Wextra",
           "-Wstrict-prototypes", "-Wundef"]
CXX_FLAGS = ["-std=c++11", "-pedantic", "-Werror", "-Wall", "-Wextra",
             "-Wundef"]


def compile_(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    return p.returncode, p.stdout


def check_header(args, tmp, header):
    """Return {check: (ok, output)} for one header."""
    name = os.path.basename(header)
    include = "#include <%s/%s>\n" % (args.subdir, name)
    results = {}

    src = os.path.join(tmp, "hdr_c.c")
    with open(src, "w") as f:
        f.write(include * 2)
        # -pedantic rejects an empty translation unit; a header made only
        # of macros would otherwise fail for the wrong reason.
        f.write("typedef int srsv_abi_translation_unit_not_empty;\n")
    rc, out = compile_(args.cc + C_FLAGS +
                       ["-I", args.include, "-fsyntax-only", src])
    results["c99"] = (rc == 0, out)

    src = os.path.join(tmp, "hdr_cxx.cc")
    with open(src, "w") as f:
        f.write(include * 2)
        f.write("typedef int srsv_abi_translation_unit_not_empty;\n")
    rc, out = compile_(args.cxx + CXX_FLAGS + ["-I", args.include,
                                               "-fsyntax-only", src])
    results["c++11"] = (rc == 0, out)

    funcs = abi_common.declared_functions(header)
    # The extern "C" check compiles the header as C++ again: when that
    # already failed, it would only repeat the same error.
    if funcs and results["c++11"][0]:
        src = os.path.join(tmp, "hdr_link.cc")
        obj = os.path.join(tmp, "hdr_link.o")
        with open(src, "w") as f:
            f.write(include)
            f.write("typedef void (*srsv_abi_fn)(void);\n")
            f.write("extern srsv_abi_fn srsv_abi_refs[];\n")
            f.write("srsv_abi_fn srsv_abi_refs[] = {\n")
            for fn in funcs:
                f.write("\treinterpret_cast<srsv_abi_fn>(&%s),\n" % fn)
            f.write("};\n")
        rc, out = compile_(args.cxx + ["-std=c++11", "-I", args.include, "-c",
                                       src, "-o", obj])
        if rc == 0:
            p = subprocess.run([args.nm, "-u", obj], stdout=subprocess.PIPE,
                               universal_newlines=True, check=True)
            undefined = set(line.split()[-1] for line in
                            p.stdout.splitlines() if line.strip())
            mangled = [fn for fn in funcs if fn not in undefined]
            if mangled:
                rc = 1
                out = ("not declared extern \"C\" (C++ references %s):\n%s"
                       % (", ".join(mangled), p.stdout))
        results["extern-c"] = (rc == 0, out)
    return results


def expected_failure(header):
    with open(header, encoding="utf-8") as f:
        m = re.search(r"abi-selftest: expect (\S+)", f.read())
    return m.group(1) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", action="version",
                    version="%(prog)s (libspacersv)")
    ap.add_argument("--cc", action="append", required=True,
                    help="C compiler command word (repeat for each word)")
    ap.add_argument("--cxx", action="append", required=True,
                    help="C++ compiler command word (repeat)")
    ap.add_argument("--nm", default="nm")
    ap.add_argument("--include", required=True,
                    help="directory that holds SUBDIR/NAME.h")
    ap.add_argument("--subdir", default="libspacersv")
    ap.add_argument("--selftest", action="store_true")
    ap.add_argument("headers", nargs="+")
    args = ap.parse_args()

    failed = 0
    tmp = tempfile.mkdtemp(prefix="srsv-hdr-")
    try:
        for header in args.headers:
            name = os.path.basename(header)
            results = check_header(args, tmp, header)
            if args.selftest:
                want = expected_failure(header)
                bad = sorted(c for c, (ok, _) in results.items() if not ok)
                if want is None or bad != [want]:
                    failed += 1
                    print("SELFTEST FAIL %s: expected only %s to fail, "
                          "failed: %s" % (name, want, bad or "none"))
                    for c, (ok, out) in sorted(results.items()):
                        if not ok:
                            print(out)
                else:
                    print("selftest ok %s: %s fails as it should"
                          % (name, want))
                continue
            for check, (ok, out) in sorted(results.items()):
                print("%-4s %s %s" % ("ok" if ok else "FAIL", name, check))
                if not ok:
                    failed += 1
                    print(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failed:
        print("FAIL: %d check(s) failed" % failed)
        return 1
    print("ok: %d header(s)" % len(args.headers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
