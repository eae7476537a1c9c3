#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Self-test of check-abi.sh (meson suite 'abi'): a fixture library
# (selftest/abi/) is built as version 1, its ABI recorded with abidw, and
# check-abi.sh must accept an added function and an incompatible change
# that comes with a new SONAME, and refuse a grown struct and a removed
# function under the same SONAME.
#
# usage: check-abi-selftest.sh --check check-abi.sh --fixture DIR
#        [--abidw P] [--abidiff P] -- CC [CC args...]
set -eu
case ${1:-} in
-h|--help) sed -n '3,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
--version)
	sed -n "s/^  version: '\\([^']*\\)',\$/check-abi-selftest.sh (libspacersv) \\1/p" \
		"$(dirname "$0")/../../meson.build"
	exit 0 ;;
esac

check='' fixture='' abidw=abidw abidiff=abidiff
while [ $# -gt 0 ]; do
	case $1 in
	--check) check=$2; shift 2 ;;
	--fixture) fixture=$2; shift 2 ;;
	--abidw) abidw=$2; shift 2 ;;
	--abidiff) abidiff=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "check-abi-selftest.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
[ -n "$check" ] && [ -n "$fixture" ] && [ $# -gt 0 ] ||
	{ echo "check-abi-selftest.sh: --check, --fixture and a compiler needed" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/srsv-abi-selftest.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

# build NAME SOVERSION [CFLAGS...]
build() {
	name=$1 so=$2
	shift 2
	"$CC_CMD" $CC_ARGS -shared -fPIC -g -O0 -I"$fixture" "$@" \
		-Wl,-soname,libabifx.so."$so" -o "$work/$name.so" "$fixture/abifx.c"
}
CC_CMD=$1
shift
CC_ARGS="$*"

build v1 0
"$abidw" --headers-dir "$fixture" --drop-private-types --no-show-locs \
	--no-corpus-path --no-comp-dir-path --out-file "$work/v1.abi" "$work/v1.so"
build added 0 -DABIFX_ADD
build grown 0 -DABIFX_GROW
build removed 0 -DABIFX_REMOVE
build bumped 1 -DABIFX_GROW -DABIFX_REMOVE

failed=0
# expect NAME STATUS
expect() {
	rc=0
	sh "$check" --abidw "$abidw" --abidiff "$abidiff" --baseline "$work/v1.abi" \
		--headers "$fixture" --lib "$work/$1.so" >"$work/$1.log" 2>&1 || rc=$?
	if [ "$rc" -eq "$2" ]; then
		echo "ok   $1: exit $rc"
	else
		echo "FAIL: $1: exit $rc, expected $2"
		sed 's/^/     /' "$work/$1.log"
		failed=1
	fi
}
expect v1 0
expect added 0
expect grown 1
expect removed 1
expect bumped 0
[ "$failed" -eq 0 ]
