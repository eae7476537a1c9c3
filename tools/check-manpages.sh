#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Check that every function a libspacersv shared library exports has a
# section-3 man page of its own, as a user reads it: `man 3 NAME` finds a
# page, and the top of that page (its first 20 lines: NAME and SYNOPSIS) shows
# the function's prototype, not the page of a whole header.
#
# usage: tools/check-manpages.sh [--only 'NAME...'] LIBRARY [MANDIR]
#   LIBRARY  the shared library (e.g. build/lib/libspacersv.so.0 or
#            /usr/lib/x86_64-linux-gnu/libspacersv.so.0); its exported
#            functions are read with nm -D (the version script exports
#            every srsv_* symbol: lib/libspacersv.sym)
#   MANDIR   a directory holding man3/ (a build's docs/); default: the
#            system's man path (the installed packages)
#   --only   check only these of the exported functions (the self-test)
#
# Prints one line per failing function and a summary; exit status 0 when
# every function has its page, 1 otherwise, 2 on bad usage.  CI's docs
# stage runs it on the build, and on a copy with one page removed, which
# must fail; its deb stage runs it on the installed packages.
set -eu

case ${1:-} in
-h|--help) sed -n '3,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
--version)
	sed -n "s/^  version: '\\([^']*\\)',\$/check-manpages.sh (libspacersv) \\1/p" \
		"$(dirname "$0")/../meson.build"
	exit 0 ;;
'') echo "usage: $0 [--only 'NAME...'] LIBRARY [MANDIR]" >&2; exit 2 ;;
esac
only=
if [ "$1" = --only ]; then
	only=$2
	shift 2
fi
lib=$1
if [ ! -r "$lib" ]; then
	echo "check-manpages: cannot read $lib" >&2
	exit 2
fi
if [ $# -ge 2 ]; then
	MANPATH=$(cd "$2" && pwd)
	export MANPATH
fi

funcs=$(nm -D --defined-only "$lib" |
	awk '$2 == "T" && $3 ~ /^srsv_/ { sub(/@.*/, "", $3); print $3 }' | sort -u)
if [ -n "$only" ]; then
	funcs=$(printf '%s\n' "$funcs" | grep -x -F "$(printf '%s\n' $only)" || true)
fi
if [ -z "$funcs" ]; then
	echo "check-manpages: $lib exports no srsv_ function" >&2
	exit 1
fi

# One function: print a line and fail when it has no page of its own.
# Pages are checked 8 at a time: man spends most of its time waiting.
check_one='
	f=$1
	if ! page=$(MANWIDTH=80 man -P cat 3 "$f" 2>/dev/null); then
		echo "check-manpages: $f: no man page (man 3 $f)"
		exit 1
	fi
	# The prototype: "int srsv_x(" or "const char *srsv_x(".
	top=$(printf "%s\\n" "$page" | head -n 20)
	if ! printf "%s\n" "$top" | grep -q "[ *]$f("; then
		echo "check-manpages: $f: its page does not open on its synopsis:"
		printf "%s\n" "$top" | head -n 8 | sed "s/^/    /"
		exit 1
	fi'
n=$(printf '%s\n' "$funcs" | wc -l)
out=$(printf '%s\n' "$funcs" | xargs -P 8 -n 1 sh -c "$check_one" sh) || true
bad=$(printf '%s\n' "$out" | grep -c '^check-manpages: ' || true)
if [ -n "$out" ]; then
	printf '%s\n' "$out"
fi
if [ "$bad" -ne 0 ]; then
	echo "check-manpages: $bad of $n exported functions without a page of their own"
	exit 1
fi
echo "check-manpages: all $n exported functions of $(basename "$lib") have their page"
