#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check what the shared library exports (meson suite 'abi').

Fails, naming each offender, when:
  - the SONAME is not the expected one;
  - a defined dynamic symbol does not start with the public prefix (srsv_),
    or starts with the internal prefix (srsv__): -fvisibility=hidden or the
    version script has a hole;
  - an exported srsv_ symbol is not bound to the version node;
  - a function or object declared in a public header is not exported (a
    consumer would fail to link), or an srsv_ symbol is exported that no
    public header declares (an undocumented ABI).
With --static, also every global symbol defined in the static archive must
start with srsv_ (public or internal), so that a static consumer's own names
cannot collide with ours; the LTTng-UST provider's generated symbols are the
only exception (their names are fixed by lttng-ust).

--expect-offenders turns the check upside down for the self-test: it passes
only when exactly the listed offenders are found, proving the check can fail.
"""

import argparse
import re
import subprocess
import sys

import abi_common

# Globals the LTTng-UST 2.13 provider macros define in spacersv_tp.o (and the
# instrumented objects).  The version script hides them in the shared
# library, but a static archive keeps them global; their names are made by
# lttng-ust from the provider name, not by us.  The weak ones
# (lttng_ust_tracepoint_dlopen, ...) are shared on purpose by every
# instrumented object of a process.
def lttng_generated(provider):
    p = re.escape(provider)
    strong = re.compile(
        r"^(lttng_ust_tracepoint_provider_%s|lttng_ust__probe_desc___%s|"
        r"__enum_values__%s_\w+|lttng_ust_tracepoint_%s___\w+)$"
        % (p, p, p, p))
    weak = re.compile(r"^lttng_ust_tracepoint_\w+$")
    return lambda name, typ: bool(strong.match(name) or
                                  (typ in "VvWw" and weak.match(name)))


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        sys.stderr.write("%s failed (%d):\n%s" % (" ".join(cmd), p.returncode,
                                                 p.stderr))
        sys.exit(2)
    return p.stdout


def soname(readelf, lib):
    for line in run([readelf, "-d", "-W", lib]).splitlines():
        m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", line)
        if m:
            return m.group(1)
    return None


def version_nodes(readelf, lib):
    """Version definitions other than the file's base one (its soname)."""
    nodes = set()
    in_defs = False
    for line in run([readelf, "-V", "-W", lib]).splitlines():
        if line.startswith("Version definition section"):
            in_defs = True
            continue
        if in_defs and line.startswith("Version "):
            break
        m = re.search(r"Flags: (\S+).*Name: (\S+)", line)
        if in_defs and m and m.group(1) != "BASE":
            nodes.add(m.group(2))
    return nodes


def dynamic_symbols(nm, lib):
    """(name, version, type) of each defined dynamic symbol."""
    syms = []
    for line in run([nm, "-D", "--defined-only", lib]).splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        typ, full = parts[-2], parts[-1]
        name, _, version = full.partition("@")
        syms.append((name, version.lstrip("@"), typ))
    return syms


def archive_globals(nm, archive):
    """(name, type) of each global symbol the archive's objects define."""
    syms = set()
    out = run([nm, "--defined-only", "--extern-only", archive])
    for line in out.splitlines():
        parts = line.split()
        # "file.o:" headers and blank lines have fewer fields.
        if len(parts) >= 2 and not line.endswith(":"):
            syms.add((parts[-1], parts[-2]))
    return sorted(syms)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nm", default="nm")
    ap.add_argument("--readelf", default="readelf")
    ap.add_argument("--lib", required=True, help="the shared library")
    ap.add_argument("--static", help="the static archive (optional)")
    ap.add_argument("--soname", required=True)
    ap.add_argument("--prefix", default="srsv_")
    ap.add_argument("--version-node", required=True)
    ap.add_argument("--lttng-provider", default="spacersv",
                    help="LTTng-UST provider whose generated globals the "
                    "static archive may hold")
    ap.add_argument("--expect-offenders", default=None,
                    help="self-test mode: comma-separated NAME/TAG pairs that "
                    "must be exactly the offenders found (tags: soname prefix "
                    "internal version unexported undeclared static)")
    ap.add_argument("headers", nargs="*",
                    help="public headers: everything they declare must be "
                    "exported, and nothing else with the prefix")
    args = ap.parse_args()

    internal = args.prefix + "_"
    offenders = []		# (name, tag, reason)

    def offend(name, tag, reason):
        offenders.append((name, tag, reason))

    so = soname(args.readelf, args.lib)
    if so != args.soname:
        offend("SONAME", "soname", "is %r, expected %r" % (so, args.soname))

    nodes = version_nodes(args.readelf, args.lib)
    exported = set()
    for name, version, typ in dynamic_symbols(args.nm, args.lib):
        if typ == "A" and name in nodes:
            continue	# the version node's own marker symbol
        if not name.startswith(args.prefix):
            offend(name, "prefix", "exported without the %s prefix (type %s)"
                   % (args.prefix, typ))
        elif name.startswith(internal):
            offend(name, "internal", "internal %s name exported" % internal)
        else:
            exported.add(name)
            if version != args.version_node:
                offend(name, "version", "bound to version %r, expected %r"
                       % (version, args.version_node))

    declared = {}
    for h in args.headers:
        for name in abi_common.declared_functions(h) + \
                abi_common.declared_objects(h):
            declared.setdefault(name, h)
    for name in sorted(set(declared) - exported):
        offend(name, "unexported", "declared in %s but not exported"
               % declared[name])
    if args.headers:
        for name in sorted(exported - set(declared)):
            offend(name, "undeclared", "exported but declared in no public "
                   "header")

    allowed_static = []
    if args.static:
        is_lttng = lttng_generated(args.lttng_provider)
        for name, typ in archive_globals(args.nm, args.static):
            if name.startswith(args.prefix):
                continue
            if is_lttng(name, typ):
                allowed_static.append(name)
                continue
            offend(name, "static", "global in the static archive without "
                   "the %s prefix (type %s)" % (args.prefix, typ))

    print("%s: soname %s, %d exported %s symbols, %d declared in %d headers"
          % (args.lib, so, len(exported), args.prefix, len(declared),
             len(args.headers)))
    if allowed_static:
        print("static archive: %d LTTng-UST provider globals allowed (%s...)"
              % (len(allowed_static), allowed_static[0]))
    for name, tag, reason in offenders:
        print("OFFENDER %s [%s]: %s" % (name, tag, reason))

    if args.expect_offenders is not None:
        want = set(x for x in args.expect_offenders.split(",") if x)
        got = set("%s/%s" % (name, tag) for name, tag, _ in offenders)
        if want != got:
            print("self-test FAILED: expected offenders %s, found %s"
                  % (sorted(want), sorted(got)))
            return 1
        print("self-test ok: the check reported exactly %s" % sorted(want))
        return 0

    if offenders:
        print("FAIL: %d offender(s)" % len(offenders))
        return 1
    if not exported:
        print("FAIL: nothing exported (wrong library?)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
