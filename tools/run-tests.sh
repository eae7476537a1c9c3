#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Build libspacersv and run every test suite (unit, stress, abi, trace, ...;
# not "pending", the tests of bugs not fixed yet: `meson test --suite pending`).
# This is the README's test command and the first CI stage.
#
# usage: tools/run-tests.sh [--no-deps] [--builddir DIR] [-- MESON_SETUP_ARGS...]
#   --no-deps       do not check/install Debian packages (tools/install-deps.sh)
#   --builddir DIR  build directory (default: build, in the source tree)
#   --version       print the version and exit
#   MESON_SETUP_ARGS are passed to `meson setup` (e.g. -Dwerror=true)
# Environment: MESON_TEST_ARGS adds arguments to `meson test` (e.g.
# "--suite unit"); JOBS sets the build parallelism (default: nproc).
#
# Exit status: that of `meson test` (0 when every test passed).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

deps=true builddir=build
while [ $# -gt 0 ]; do
	case $1 in
	--no-deps) deps=false; shift ;;
	--builddir) builddir=$2; shift 2 ;;
	--) shift; break ;;
	-h|--help) sed -n '4,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	--version)
		sed -n "s/^  version: '\\([^']*\\)',\$/run-tests.sh (libspacersv) \\1/p" meson.build
		exit 0 ;;
	*) echo "run-tests.sh: unknown argument $1 (setup arguments go after --)" >&2
	   exit 2 ;;
	esac
done

if [ "$deps" = true ]; then
	sh "$top/tools/install-deps.sh"
fi

# Configure, or reconfigure an existing build directory (a directory left by
# another meson version is wiped and configured again).
if [ -f "$builddir/meson-private/coredata.dat" ]; then
	meson setup --reconfigure "$builddir" -Dtests=true "$@" ||
		meson setup --wipe "$builddir" -Dtests=true "$@"
else
	meson setup "$builddir" -Dtests=true "$@"
fi
meson compile -C "$builddir" -j "${JOBS:-$(nproc)}"

# shellcheck disable=SC2086 # MESON_TEST_ARGS is a list of words
exec meson test -C "$builddir" --print-errorlogs ${MESON_TEST_ARGS:-}
