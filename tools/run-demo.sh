#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Build libspacersv and run the main demo: examples/engine_demo (writer
# threads over a delalloc-like dirty pool, flush callbacks that do real work
# on a file; it prints what the pools did).  Falls back to examples/minimal
# when engine_demo is not part of the tree.  This is the README's demo
# command.
#
# usage: tools/run-demo.sh [--no-deps] [--builddir DIR] [-- DEMO_ARGS...]
#   --no-deps       do not check/install Debian packages
#   --builddir DIR  build directory (default: build, in the source tree)
#   DEMO_ARGS are passed to the demo program.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

deps=true builddir=build
while [ $# -gt 0 ]; do
	case $1 in
	--no-deps) deps=false; shift ;;
	--builddir) builddir=$2; shift 2 ;;
	--) shift; break ;;
	-h|--help) sed -n '4,14p' "$0"; exit 0 ;;
	*) echo "run-demo.sh: unknown argument $1 (demo arguments go after --)" >&2
	   exit 2 ;;
	esac
done

if [ "$deps" = true ]; then
	sh "$top/tools/install-deps.sh" --minimal
fi

if [ -f "$builddir/meson-private/coredata.dat" ]; then
	meson setup --reconfigure "$builddir" -Dexamples=true ||
		meson setup --wipe "$builddir" -Dexamples=true
else
	meson setup "$builddir" -Dexamples=true
fi
meson compile -C "$builddir" -j "${JOBS:-$(nproc)}"

for demo in engine_demo minimal; do
	if [ -x "$builddir/examples/$demo" ]; then
		echo "run-demo.sh: running $builddir/examples/$demo $*"
		exec "$builddir/examples/$demo" "$@"
	fi
done
echo "run-demo.sh: no demo was built (examples/engine_demo.c, examples/minimal.c)" >&2
exit 1
