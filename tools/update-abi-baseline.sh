#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Record the library's current ABI as the baseline the ABI check compares
# against (tests/abi/libspacersv.abi), after a reviewed ABI change: new
# public functions, a struct that carries its own size grown at its end, or
# an incompatible change that came with a new SONAME.
#
# usage: tools/update-abi-baseline.sh [--builddir DIR]
#   Configures DIR (default build-abi) as a plain debug build without
#   tracing (the baseline must not depend on build options), builds the
#   shared library only and writes the baseline with abidw.  Commit the
#   result with the change it records.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
builddir=$top/build-abi
while [ $# -gt 0 ]; do
	case $1 in
	--builddir) builddir=$2; shift 2 ;;
	-h|--help) sed -n '4,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	--version) echo "update-abi-baseline.sh (libspacersv)"; exit 0 ;;
	*) echo "update-abi-baseline.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
command -v abidw >/dev/null 2>&1 || {
	echo "update-abi-baseline.sh: abidw not found (Debian: abigail-tools)" >&2
	exit 1
}

opts="-Dbuildtype=debug -Dtracing=disabled -Dtests=false -Dexamples=false
-Dbenchmarks=false -Ddocs=disabled"
if [ -f "$builddir/meson-private/coredata.dat" ]; then
	# shellcheck disable=SC2086 # one word per option
	meson setup --reconfigure "$builddir" "$top" $opts >/dev/null
else
	# shellcheck disable=SC2086
	meson setup "$builddir" "$top" $opts >/dev/null
fi
meson compile -C "$builddir" spacersv:shared_library >/dev/null
lib=$(find "$builddir/lib" -maxdepth 1 -name 'libspacersv.so.*.*' -type f | head -n 1)
[ -n "$lib" ] || { echo "update-abi-baseline.sh: no libspacersv.so built" >&2; exit 1; }
out=$top/tests/abi/libspacersv.abi
abidw --headers-dir "$top/include/libspacersv" --drop-private-types \
	--no-show-locs --no-corpus-path --no-comp-dir-path \
	--out-file "$out" "$lib"
echo "update-abi-baseline.sh: wrote $out from $lib"
