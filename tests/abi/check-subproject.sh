#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Subproject test (meson suite 'abi'): a consumer project that pulls
# libspacersv in as a meson subproject (dependency('libspacersv') with the
# fallback forced, answered by meson.override_dependency()), built and run.
#
# usage: check-subproject.sh --meson M --source-root DIR --consumer FILE
#        --project DIR
set -eu
case ${1:-} in
-h|--help) sed -n '3,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
--version)
	sed -n "s/^  version: '\\([^']*\\)',\$/check-subproject.sh (libspacersv) \\1/p" \
		"$(dirname "$0")/../../meson.build"
	exit 0 ;;
esac

meson=meson root='' consumer='' project=''
while [ $# -gt 0 ]; do
	case $1 in
	--meson) meson=$2; shift 2 ;;
	--source-root) root=$2; shift 2 ;;
	--consumer) consumer=$2; shift 2 ;;
	--project) project=$2; shift 2 ;;
	*) echo "check-subproject.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
for v in root consumer project; do
	eval "[ -n \"\$$v\" ]" || { echo "check-subproject.sh: --$v missing" >&2; exit 2; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/srsv-subproject.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
cp "$project/meson.build" "$consumer" "$work/"
mkdir "$work/subprojects"
ln -s "$root" "$work/subprojects/libspacersv"

# --force-fallback-for: an installed libspacersv must not be picked instead.
"$meson" setup "$work/build" "$work" --force-fallback-for=libspacersv \
	>"$work/setup.log" 2>&1 || { cat "$work/setup.log"; echo "FAIL: meson setup"; exit 1; }
"$meson" compile -C "$work/build" >"$work/compile.log" 2>&1 ||
	{ cat "$work/compile.log"; echo "FAIL: meson compile"; exit 1; }
loaded=$(ldd "$work/build/consumer" |
	 sed -n 's/^[[:space:]]*libspacersv\.so\.0 => \([^ ]*\).*/\1/p')
case $loaded in
"$work"/build/subprojects/*) ;;
*) echo "FAIL: consumer loads libspacersv.so.0 from '$loaded', not the subproject"; exit 1 ;;
esac
"$work/build/consumer" || { echo "FAIL: consumer exited $?"; exit 1; }
echo "ok   subproject consumer (loads $loaded)"
