#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ABI check (meson suite 'abi', and the CI's deb stage on the installed
# library): compare a built libspacersv.so against the stored baseline
# tests/abi/libspacersv.abi with libabigail's abidiff.
#
#   - Functions or variables added: compatible, not reported.
#   - Any other change abidiff sees (a function removed or with another
#     signature, a public struct or enum of another size or layout, ...)
#     fails, unless the library's SONAME differs from the baseline's: an
#     incompatible change is allowed only with a new SONAME (lib_soversion in
#     meson.build).
#   - A compatible-by-design change abidiff cannot tell from a break (a
#     struct that carries its own size grown at its end) also fails: review
#     it, then record the new ABI with `tools/update-abi-baseline.sh`.
#
# usage: check-abi.sh [--abidw P] [--abidiff P] [--readelf P]
#        [--debug-info-dir DIR] --baseline FILE --headers DIR --lib LIBSO
#   --debug-info-dir  where the library's separate debug info lives (an
#                     installed, stripped copy: /usr/lib/debug)
# Exit status: 0 compatible, 1 incompatible, 2 bad usage, 77 (skipped) when
# the library has no debug information (a build without -g).
set -eu

usage() {
	sed -n '4,24p' "$0" | sed 's/^# \{0,1\}//'
}
abidw=abidw abidiff=abidiff readelf=readelf baseline='' headers='' lib='' debugdir=''
while [ $# -gt 0 ]; do
	case $1 in
	--abidw) abidw=$2; shift 2 ;;
	--abidiff) abidiff=$2; shift 2 ;;
	--readelf) readelf=$2; shift 2 ;;
	--baseline) baseline=$2; shift 2 ;;
	--headers) headers=$2; shift 2 ;;
	--lib) lib=$2; shift 2 ;;
	--debug-info-dir) debugdir=$2; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	--version) echo "check-abi.sh (libspacersv)"; exit 0 ;;
	*) echo "check-abi.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
	esac
done
for v in baseline headers lib; do
	eval "[ -n \"\$$v\" ]" || { echo "check-abi.sh: --$v missing" >&2; exit 2; }
done
[ -f "$baseline" ] || { echo "check-abi.sh: no baseline $baseline" >&2; exit 2; }

if [ -z "$debugdir" ] && ! "$readelf" -S "$lib" | grep -q '\.debug_info'; then
	echo "SKIP: $lib has no debug information (build with -g)"
	exit 77
fi

old=$(sed -n "1s/.* soname='\([^']*\)'.*/\1/p" "$baseline")
new=$("$readelf" -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
if [ "$old" != "$new" ]; then
	echo "ok   SONAME $old -> $new: incompatible changes are allowed;"
	echo "     record the new ABI with tools/update-abi-baseline.sh"
	exit 0
fi

# The library's ABI is written the way the baseline was (abidw, private
# types dropped: the opaque structs' insides are not ABI) and the two are
# compared; abidiff's own --headers-dir2 filtering hides real changes in
# libabigail 2.2.  --harmless: libabigail files a member appended to a
# struct as harmless; for a struct the caller allocates (a ticket, an rsv)
# it is not.
work=$(mktemp -d "${TMPDIR:-/tmp}/srsv-abi.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
set -- --headers-dir "$headers" --drop-private-types --no-show-locs \
	--no-corpus-path --no-comp-dir-path --out-file "$work/lib.abi"
[ -z "$debugdir" ] || set -- "$@" --debug-info-dir "$debugdir"
"$abidw" "$@" "$lib" || { echo "FAIL: abidw $lib"; exit 1; }
# Without debug information abidw still writes the symbols, and the
# comparison would see no types at all.
grep -q '<function-decl ' "$work/lib.abi" || {
	echo "FAIL: abidw found no debug information for $lib${debugdir:+ (in $debugdir)}"
	exit 1
}
rc=0
"$abidiff" --harmless --no-added-syms "$baseline" "$work/lib.abi" || rc=$?
# abidiff's status is a bit mask: 1 error, 2 usage, 4 ABI change,
# 8 incompatible ABI change.
if [ "$rc" -eq 0 ]; then
	echo "ok   $lib: ABI of $new unchanged from $baseline (additions aside)"
	exit 0
fi
if [ $((rc & 3)) -ne 0 ]; then
	echo "FAIL: abidiff could not compare (status $rc)"
	exit 1
fi
if [ $((rc & 8)) -ne 0 ]; then
	echo "FAIL: incompatible ABI change with the same SONAME $new: bump"
	echo "      lib_soversion in meson.build, or undo the change"
else
	echo "FAIL: ABI change with the same SONAME $new (see above).  If it is"
	echo "      compatible by design, record it: tools/update-abi-baseline.sh"
fi
exit 1
