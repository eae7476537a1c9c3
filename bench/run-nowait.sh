#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Runs bench_nowait the way docs/results-nowait.md records it:
# the whole bench in $TMPDIR (or /tmp), then, with --btrfs, part (b) again
# on a scratch btrfs file system (a sparse 2 GiB image on a loop device),
# the file system the async buffered-write series measured: there the kernel writes inline with
# RWF_NOWAIT, where ext4 and tmpfs refuse buffered NOWAIT writes.
#
# The bench needs a build with -Ddebug_locks=true for "blocked" (without
# it the bench reports blocked=n/a):
#
#   meson setup build-nowait -Dtracing=disabled -Ddebug_locks=true \
#         -Dbuildtype=release
#   ninja -C build-nowait -j2
#   bench/run-nowait.sh build-nowait [--btrfs] [bench options...]
#
# --btrfs needs root, mkfs.btrfs (btrfs-progs) and a kernel with btrfs; the
# script detaches only the loop device it attached and removes its image.
set -eu

case ${1:-} in
-h|--help) sed -n '3,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
--version)
	sed -n "s/^  version: '\\([^']*\\)',\$/run-nowait.sh (libspacersv) \\1/p" \
		"$(dirname "$0")/../meson.build"
	exit 0 ;;
-*) echo "usage: $0 BUILD_DIR [--btrfs] [bench options...]" >&2; exit 2 ;;
esac
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [--btrfs] [bench options...]" >&2; exit 2; }
build=${1:?usage: $0 BUILD_DIR [--btrfs] [bench options...]}
shift
btrfs=0
if [ "${1:-}" = "--btrfs" ]; then
	btrfs=1
	shift
fi
bench="$build/bench/bench_nowait"
[ -x "$bench" ] || { echo "$0: $bench not built" >&2; exit 1; }

echo "== $(uname -sr), $(nproc) CPUs; $(uptime)"
"$bench" "$@"

[ "$btrfs" -eq 1 ] || exit 0

tmp=$(mktemp -d "${TMPDIR:-/tmp}/srsv-btrfs.XXXXXX")
loop=
cleanup() {
	mountpoint -q "$tmp/mnt" 2>/dev/null && umount "$tmp/mnt"
	[ -n "$loop" ] && losetup -d "$loop"
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
truncate -s 2G "$tmp/img"
loop=$(losetup -f --show "$tmp/img")
mkfs.btrfs -q -f "$loop" >/dev/null
mkdir "$tmp/mnt"
mount -t btrfs "$loop" "$tmp/mnt"
echo
echo "== part (b) on btrfs ($loop); $(uptime)"
"$bench" --part b --dir "$tmp/mnt" "$@"
