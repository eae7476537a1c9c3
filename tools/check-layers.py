#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check that lib/ is a stack: every file calls and includes only files below it.

The order is the one docs/design.md writes in its section "The layers", in
two fenced blocks:

    ```layers
    ctx.c                      <- the top row
    delalloc.c
    ...
    util.h                     <- the bottom row
    ```

one row per line, top first, each naming the files of one layer (a module's
header belongs to its .c file's row; header-only modules have rows of their
own), and

    ```upcalls
    pace.c -> preempt.c srsv__maybe_clamp_preempt
    ```

the direct upward calls the design keeps and names (every other call up goes
through a hook table, which a function pointer hides from the linker).

Calls are read from the built objects of libspacersv.so: file A calls file B
when A's object leaves a symbol undefined that B's object defines (nm).
Includes are read from the sources: a file may include the headers of its own
row and of the rows below (and an upward header only with a named upcall).

Fails, naming each offender, when a call or an include goes up without being
named, when a named upcall no longer exists, or when a file of lib/ is in no
row.  The last line is

    summary: files=N edges=E upward=U largest_circle=C

(edges: file pairs with a call; upward: upward calls, named or not; C: the
largest set of files that all reach each other through calls).

--expect-fail inverts the result (the self-test: a spec whose order is
reversed must fail).
"""

import argparse
import glob
import os
import re
import subprocess
import sys


def parse_spec(text):
    rows, upcalls = [], {}
    for block, body in re.findall(r"```(layers|upcalls)\n(.*?)```", text, re.S):
        for line in body.splitlines():
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if block == "layers":
                rows.append(line.split())
            else:
                m = re.match(r"(\S+)\s*->\s*(\S+)\s+(\S+)$", line)
                if not m:
                    sys.exit("check-layers: bad upcall line: %r" % line)
                upcalls[(m.group(1), m.group(2), m.group(3))] = False
    if not rows:
        sys.exit("check-layers: no ```layers block in the spec")
    # Top row first in the text: the bottom row gets rank 0.
    rank = {}
    for i, row in enumerate(reversed(rows)):
        for f in row:
            rank[f] = i
    return rank, upcalls


def module_of(name):
    """The row entry a file belongs to: x.h belongs to x.c when it exists."""
    return name


def nm_all(objs):
    """{file: (defined, undefined)} from one nm run over every object."""
    paths = {o: f for f, o in objs.items()}
    out = subprocess.run(["nm", "-A", "-g"] + sorted(paths), check=True,
                         capture_output=True, text=True).stdout
    syms = {f: (set(), set()) for f in objs}
    for line in out.splitlines():
        path, _, rest = line.partition(":")
        parts = rest.split()
        f = paths.get(path)
        if f is None or not parts:
            continue
        if len(parts) >= 3 and parts[1] in "TDBRCVW":
            syms[f][0].add(parts[2])
        elif parts[0] == "U":
            syms[f][1].add(parts[1])
    return syms


def find_objects(build):
    dirs = [d for d in glob.glob(os.path.join(build, "lib", "libspacersv.so*.p"))
            if os.path.isdir(d)]
    if not dirs:
        sys.exit("check-layers: no lib/libspacersv.so*.p in %s (build first)" % build)
    objs = {}
    for o in glob.glob(os.path.join(dirs[0], "*.o")):
        base = os.path.basename(o)
        if base.endswith(".c.o"):
            objs[base[:-2]] = o          # "space.c"
    return objs


def largest_scc(nodes, edges):
    index, low, on, stack, best = {}, {}, set(), [], [0]
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            size = 0
            while True:
                w = stack.pop()
                on.discard(w)
                size += 1
                if w == v:
                    break
            best[0] = max(best[0], size)

    for v in nodes:
        if v not in index:
            visit(v)
    return best[0]


def header_row(rank, header, lib_files):
    """Row of a header: its own, or its .c file's."""
    if header in rank:
        return rank[header]
    c = header[:-2] + ".c"
    if c in rank:
        return rank[c]
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="meson build directory")
    ap.add_argument("--source", required=True, help="source tree (for lib/)")
    ap.add_argument("--spec", help="file with the layers (default docs/design.md)")
    ap.add_argument("--expect-fail", action="store_true")
    a = ap.parse_args()

    spec = a.spec or os.path.join(a.source, "docs", "design.md")
    rank, upcalls = parse_spec(open(spec).read())
    libdir = os.path.join(a.source, "lib")
    problems = []

    lib_files = sorted(f for f in os.listdir(libdir)
                       if f.endswith((".c", ".h")) and not f.startswith("trace-"))
    for f in lib_files:
        if header_row(rank, f, lib_files) is None and f != "trace.c":
            problems.append("%s is in no row of the layers" % f)

    # Calls, from the objects.
    objs = find_objects(a.build)
    syms = nm_all(objs)
    owner = {}
    for f, (defined, _u) in syms.items():
        for s in defined:
            owner.setdefault(s, f)
    edges, upward = {}, 0
    pairs = set()
    for f in sorted(objs):
        for sym in sorted(syms[f][1]):
            g = owner.get(sym)
            if not g or g == f:
                continue
            pairs.add((f, g))
            edges.setdefault(f, set()).add(g)
            rf, rg = rank.get(f), rank.get(g)
            if rf is None or rg is None:
                continue
            if rg >= rf:
                upward += 1
                key = (f, g, sym)
                if key in upcalls:
                    upcalls[key] = True
                else:
                    problems.append("call up: %s -> %s (%s)" % (f, g, sym))

    # Includes, from the sources (trace-lttng.h belongs to trace.h).
    named_up = {(f, g) for (f, g, _s) in upcalls}
    for f in lib_files + ["trace-lttng.h"]:
        rf = header_row(rank, "trace.h" if f == "trace-lttng.h" else f, lib_files)
        if rf is None:
            continue
        for inc in re.findall(r'^#include "([^"]+)"', open(os.path.join(libdir, f)).read(), re.M):
            if inc in ("config.h", "version-config.h", "spacersv_tp.h") or \
               not os.path.exists(os.path.join(libdir, inc)):
                continue
            ri = header_row(rank, inc, lib_files)
            if ri is None:
                continue
            fc = f[:-2] + ".c" if f.endswith(".h") else f
            ic = inc[:-2] + ".c"
            if ri > rf and (fc, ic) not in named_up:
                problems.append("include up: %s includes %s" % (f, inc))

    for key, seen in upcalls.items():
        if not seen:
            problems.append("named upcall not found (remove it from the spec): "
                            "%s -> %s %s" % key)

    nodes = sorted(objs)
    circle = largest_scc(nodes, edges)
    for p in problems:
        print("check-layers: " + p)
    print("summary: files=%d edges=%d upward=%d largest_circle=%d"
          % (len(nodes), len(pairs), upward, circle))
    failed = bool(problems)
    if a.expect_fail:
        return 0 if failed else 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
