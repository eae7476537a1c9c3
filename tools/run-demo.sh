#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Build libspacersv and run the main demo: examples/engine_demo (writer
# threads over a delalloc-like dirty pool, flush callbacks that do real work
# on a file; it prints what the pools did).  This is the README's demo
# command.  It configures its own build directory without the tests, the
# benchmarks and the documentation, and builds only the library and the
# demo (a few seconds on 2 cores).
#
# usage: tools/run-demo.sh [--no-deps] [--builddir DIR] [-- DEMO_ARGS...]
#   --no-deps       do not check/install Debian packages
#   --builddir DIR  build directory (default: build-demo, in the source tree)
#   --version       print the version and exit
#   DEMO_ARGS are passed to the demo program.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

deps=true builddir=build-demo
while [ $# -gt 0 ]; do
	case $1 in
	--no-deps) deps=false; shift ;;
	--builddir) builddir=$2; shift 2 ;;
	--) shift; break ;;
	-h|--help) sed -n '4,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	--version)
		sed -n "s/^  version: '\\([^']*\\)',\$/run-demo.sh (libspacersv) \\1/p" meson.build
		exit 0 ;;
	*) echo "run-demo.sh: unknown argument $1 (demo arguments go after --)" >&2
	   exit 2 ;;
	esac
done

if [ "$deps" = true ]; then
	sh "$top/tools/install-deps.sh" --demo
fi

opts="-Dexamples=true -Dtests=false -Dbenchmarks=false -Ddocs=disabled"
if [ -f "$builddir/meson-private/coredata.dat" ]; then
	# shellcheck disable=SC2086 # one word per option
	meson setup --reconfigure "$builddir" $opts >/dev/null ||
		meson setup --wipe "$builddir" $opts >/dev/null
else
	# shellcheck disable=SC2086
	meson setup "$builddir" $opts >/dev/null
fi
# Only what runs: the library and the demo.
meson compile -C "$builddir" -j "${JOBS:-$(nproc)}" examples/engine_demo
echo "run-demo.sh: running $builddir/examples/engine_demo $*"
exec "$builddir/examples/engine_demo" "$@"
