#!/bin/bash
# SPDX-License-Identifier: MIT
#
# spacefs-fstests.sh: fstests (the Linux file-system community's suite,
# kdave/xfstests) on spacefs, libfuse's passthrough example and ext4, side
# by side, one test at a time.
#
#   bench/spacefs-fstests.sh [options] FSTESTS_DIR [TEST...]
#
# FSTESTS_DIR is a built fstests checkout (make); it is never downloaded by
# this script and never written to: the run uses a copy in its work
# directory, with one change to common/rc (below).  TEST: test names
# (generic/001) or a group (-g quick); the union of both, in order.
#
# Options:
#   -g GROUP          add the tests of GROUP in generic/ and shared/
#                     (their group.list): quick, enospc, ... (repeatable)
#   -x TEST           leave TEST out (repeatable)
#   --fs "LIST"       file systems, in order (default "spacefs passthrough
#                     ext4")
#   --spacefs PATH    the spacefs binary (default build/examples/spacefs/
#                     spacefs, or $SPACEFS)
#   --passthrough P   libfuse's passthrough: a program built from libfuse's
#                     example/passthrough.c, or a libfuse checkout (its
#                     example/passthrough.c is compiled into the work
#                     directory with `pkg-config fuse3`)
#   --size SIZE       size of every TEST and SCRATCH file system (default
#                     8G): ext4's loop images; spacefs's capacity (its
#                     backing trees on ext4 images a quarter larger, so that
#                     spacefs, not the backing store, says ENOSPC);
#                     passthrough's backing ext4 images
#   --timeout SECS    per test and file system (default 3600): a test that
#                     runs longer is killed and counted as failed (timeout)
#   --results FILE    also write the markdown table there
#   --keep            keep the work directory (unmounted, images removed)
#
# FUSE in fstests (README.fuse): FSTYP=fuse, FUSE_SUBTYP=.SUBTYPE, and a
# mount helper mount.fuse.SUBTYPE that mount(8) runs for `mount -t
# fuse.SUBTYPE DEV DIR -o source=BACKING,...`.  This script installs its
# own helpers in /sbin for the run, named after the file system and the
# run (mount.fuse.spacefs-RUN), and removes them on exit.  The helper (this
# script, --mount-helper) maps TEST and SCRATCH onto their backing
# directories, waits for the previous daemon of the same backing directory
# to exit (the kernel does not wait for a /dev/fuse daemon at unmount:
# spacefs may still be writing back and checking its accounting), runs the
# daemon with default_permissions and allow_other, and records its pid and
# log.
#
# Stock fstests has no sized mkfs for FUSE (_scratch_mkfs_sized says "not
# run"), so the copy's _try_scratch_mkfs_sized gets a "fuse" case: it
# empties the scratch backing directory (this script, --mkfs-sized) and
# adds capacity=SIZE to the scratch mount options: spacefs's capacity, and
# for passthrough a fresh ext4 backing image of that size.
#
# After each test: the scratch file system is unmounted, every daemon that
# lost its mount must have exited within 120 s, and its unmount accounting
# check (spacefs: the log lines of its unmount, and any refused library
# call) must be OK; the TEST spacefs runs its check at rest (the control
# file's "check" command).  A failed check fails the test on spacefs.
#
# Needs: root, /dev/fuse, losetup, mkfs.ext4, python3, fusermount3, and
# fstests' own requirements (xfsprogs, attr, acl, quota, the fsgqa users:
# tests that need them are "not run" without them).  Every mount, loop
# device, image and helper is removed on any exit (trap EXIT INT TERM).
#
# Output: one line per test as it runs, then a markdown table (test, result
# per file system, class of a spacefs failure), per file system counts, and
# last:
#   summary: ran=N passed=P failed=F spacefs_only_failures=S
# for spacefs: N tests ran (not "not run"), P passed, F failed, S of the
# failures passed on passthrough.  Exit 0 if S = 0 and no accounting check
# failed, 1 otherwise.
#
# Environment: SPACEFS, SPACEFS_BENCH_DIR (work directory parent, default
# /var/tmp).
#
# Internal modes (run by the mount helpers and the patched fstests):
#   spacefs-fstests.sh --mount-helper FS WORK DEV DIR [-o OPTIONS]...
#   spacefs-fstests.sh --mkfs-sized FS WORK SIZE
set -u

# ---- shared by the main script and its helper modes ----

# Options mount(8) hands to a helper that are the kernel's mount flags or
# fstab's, not the daemon's.
is_mount_flag() {
	case $1 in
	rw|defaults|auto|noauto|user|nouser|users|_netdev|nofail|relatime|\
	norelatime|strictatime|noatime|atime|nodiratime|diratime|lazytime|\
	nolazytime|dev|nodev|suid|nosuid|exec|noexec|async|sync|dirsync|\
	loud|silent|mand|nomand|iversion|noiversion|context=*|fscontext=*|\
	defcontext=*|rootcontext=*|seclabel) return 0 ;;
	esac
	return 1
}

# proc_start PID: when the process started (clock ticks after boot), the
# other half of its identity: pids are reused within a run.
proc_start() {
	awk '{ print $22 }' "/proc/$1/stat" 2>/dev/null
}

# alive PID START: that process, not a later one with its pid, runs (a
# zombie is gone for our purposes).
alive() {
	local st
	st=$(awk '{ print $3, $22 }' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "${st#* }" = "$2" ] && [ "${st% *}" != Z ]
}

# wait_gone PIDFILE: wait (120 s at most) for the daemon it names ("PID
# START") to exit.
wait_gone() {
	local pid start
	[ -f "$1" ] || return 0
	read -r pid start <"$1"
	for _ in $(seq 1200); do
		alive "$pid" "$start" || break
		sleep 0.1
	done
	if alive "$pid" "$start"; then
		echo "spacefs-fstests: daemon $pid still running 120 s after its unmount" >&2
		return 1
	fi
	rm -f "$1"
}

# key_of DIR: a file name for a backing directory.
key_of() {
	echo "$1" | tr '/' '_'
}

# image_mount IMG SIZE DIR: a fresh ext4 image of SIZE bytes mounted on DIR
# (an image already mounted there is unmounted and detached first).
image_mount() {
	local img=$1 size=$2 dir=$3 dev
	if mountpoint -q "$dir"; then
		dev=$(findmnt -n -o SOURCE --target "$dir")
		umount "$dir" || return 1
		case $dev in /dev/loop*) losetup -d "$dev" 2>/dev/null ;; esac
	fi
	rm -f "$img"
	truncate -s "$size" "$img" || return 1
	dev=$(losetup -f --show "$img") || return 1
	mkfs.ext4 -q -F -E nodiscard "$dev" >/dev/null 2>&1 || { losetup -d "$dev"; return 1; }
	mkdir -p "$dir"
	mount "$dev" "$dir" || { losetup -d "$dev"; return 1; }
	# A tree below the file system's root: lost+found is not the tests'.
	mkdir -p "$dir/tree"
}

# image_size DIR: the size of the image mounted on DIR (0 if none).
image_size() {
	local dev
	mountpoint -q "$1" || { echo 0; return; }
	dev=$(findmnt -n -o SOURCE --target "$1")
	blockdev --getsize64 "$dev" 2>/dev/null || echo 0
}

mount_helper() {
	local fs=$1 dev=$3 dir=$4 opt back="" cap="" rest="" pid start log key off
	WORK=$2
	shift 4
	# shellcheck source=/dev/null
	. "$WORK/helper.env" || exit 1
	while [ $# -gt 0 ]; do
		case $1 in
		-o) opt=$2; shift 2 ;;
		-o*) opt=${1#-o}; shift ;;
		*) shift; continue ;;	# -n, -s, -v: mount(8)'s
		esac
		local IFS=,
		for o in $opt; do
			case $o in
			source=*) back=${o#source=} ;;
			capacity=*) cap=${o#capacity=} ;;
			*) is_mount_flag "$o" || rest="$rest,$o" ;;
			esac
		done
		unset IFS
	done
	[ -n "$back" ] || { echo "mount.fuse.$fs: no source=DIR" >&2; exit 1; }
	[ -d "$back" ] || { echo "mount.fuse.$fs: $back is not a directory" >&2; exit 1; }
	key=$(key_of "$back")
	wait_gone "$WORK/state/$key.pid" || exit 1
	log=$WORK/logs/$fs.$(basename "$dev").log
	# Where this daemon's lines start: the previous one's have ended.
	off=$(stat -c %s "$log" 2>/dev/null || echo 0)
	case $fs in
	spacefs)
		setsid "$SPACEFS" "$dir" -f -o "backing=$back,capacity=${cap:-$SIZE},fsname=$dev,log=$log$rest" \
			</dev/null >>"$log" 2>&1 &
		pid=$! ;;
	passthrough)
		setsid "$PASSTHROUGH" "$dir" -f -o "modules=subdir,subdir=$back,fsname=$dev$rest" \
			</dev/null >>"$log" 2>&1 &
		pid=$! ;;
	*) echo "mount.fuse.$fs: unknown file system" >&2; exit 1 ;;
	esac
	start=$(proc_start "$pid")
	echo "$pid $start" >"$WORK/state/$key.pid"
	echo "$pid $start $fs $dev $log $off" >>"$WORK/state/daemons"
	for _ in $(seq 200); do
		mountpoint -q "$dir" && exit 0
		alive "$pid" "$start" || break
		sleep 0.1
	done
	echo "mount.fuse.$fs: $dev did not mount on $dir (see $log)" >&2
	kill "$pid" 2>/dev/null
	# A daemon that never mounted has no unmount check to run (a mount
	# option it refuses, fstests' dax): once it is gone it is not one of
	# the daemons whose check counts; one that stays is.
	for _ in $(seq 50); do
		alive "$pid" "$start" || break
		sleep 0.1
	done
	if ! alive "$pid" "$start"; then
		grep -v "^$pid $start " "$WORK/state/daemons" >"$WORK/state/daemons.new"
		mv "$WORK/state/daemons.new" "$WORK/state/daemons"
	fi
	exit 1
}

# --mkfs-sized FS WORK SIZE: a fresh, empty scratch backing tree that holds
# SIZE bytes (the patched _try_scratch_mkfs_sized calls it, scratch
# unmounted).
mkfs_sized() {
	local fs=$1 size=$3 back
	WORK=$2
	# shellcheck source=/dev/null
	. "$WORK/helper.env" || exit 1
	back=$SCRATCH_BACK
	wait_gone "$WORK/state/$(key_of "$back/tree").pid" || exit 1
	case $fs in
	spacefs)
		# spacefs says ENOSPC at the capacity; its backing store must
		# hold more.
		if [ "$(image_size "$back")" -lt $((size * 5 / 4 + (64 << 20))) ]; then
			image_mount "$WORK/img/scratch-back.img" \
				$((size * 5 / 4 + (64 << 20))) "$back" || exit 1
		else
			find "$back/tree" -mindepth 1 -delete || exit 1
		fi ;;
	passthrough)
		# passthrough's size is its backing file system's.
		image_mount "$WORK/img/scratch-back.img" "$size" "$back" || exit 1
		echo "$size" >"$WORK/state/scratch-resized" ;;
	*) exit 1 ;;
	esac
	exit 0
}

case ${1:-} in
--mount-helper) shift; mount_helper "$@" ;;
--mkfs-sized) shift; mkfs_sized "$@" ;;
esac

# ---- the main script ----

ME=$(readlink -f "$0")
TOP=$(cd "$(dirname "$ME")/.." && pwd)
FSES="spacefs passthrough ext4"
SPACEFS=${SPACEFS:-$TOP/build/examples/spacefs/spacefs}
PASSTHROUGH_ARG=
SIZE_ARG=8G
TEST_TIMEOUT=3600
RESULTS_OUT=
KEEP=0
FSTESTS=
TESTS=()
GROUPS_WANTED=()
EXCLUDE=" "

usage() {
	sed -n '3,/^set -u/p' "$ME" | sed '$d; s/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
	case $1 in
	-g) GROUPS_WANTED+=("$2"); shift ;;
	-x) EXCLUDE="$EXCLUDE$2 "; shift ;;
	--fs) FSES=$2; shift ;;
	--spacefs) SPACEFS=$2; shift ;;
	--passthrough) PASSTHROUGH_ARG=$2; shift ;;
	--size) SIZE_ARG=$2; shift ;;
	--timeout) TEST_TIMEOUT=$2; shift ;;
	--results) RESULTS_OUT=$2; shift ;;
	--keep) KEEP=1 ;;
	-h|--help) usage; exit 0 ;;
	--version)
		sed -n "s/^  version: '\\([^']*\\)',\$/spacefs-fstests.sh (libspacersv) \\1/p" \
			"$TOP/meson.build"
		exit 0 ;;
	-*) echo "spacefs-fstests: unknown option $1" >&2; exit 2 ;;
	*) if [ -z "$FSTESTS" ]; then FSTESTS=$1; else TESTS+=("$1"); fi ;;
	esac
	shift
done

die() {
	echo "spacefs-fstests: $*" >&2
	exit 1
}

[ -n "$FSTESTS" ] || { usage >&2; exit 2; }
FSTESTS=$(readlink -f "$FSTESTS")
if [ ! -x "$FSTESTS/check" ] || [ ! -x "$FSTESTS/ltp/fsstress" ]; then
	die "$FSTESTS is not a built fstests checkout (check, ltp/fsstress)"
fi
[ "$(id -u)" = 0 ] || die "not root (loop devices, mounts, mount helpers)"
for c in losetup mkfs.ext4 mountpoint findmnt blockdev python3 timeout setsid; do
	command -v $c >/dev/null || die "no $c"
done
SIZE=$(numfmt --from=iec "$SIZE_ARG") || die "bad --size $SIZE_ARG"

case " $FSES " in *" spacefs "*|*" passthrough "*)
	[ -c /dev/fuse ] || die "no /dev/fuse"
	command -v fusermount3 >/dev/null || die "no fusermount3"
esac
case " $FSES " in *" spacefs "*)
	SPACEFS=$(readlink -f "$SPACEFS")
	[ -x "$SPACEFS" ] || die "no spacefs binary at $SPACEFS (--spacefs)"
esac
for u in fsgqa fsgqa2 123456-fsgqa; do
	id "$u" >/dev/null 2>&1 ||
		echo "spacefs-fstests: note: no user $u: tests that need it will not run" \
		     "(fstests README: useradd -m fsgqa; useradd -g fsgqa fsgqa2;" \
		     "useradd 123456-fsgqa)" >&2
done

# The tests: names, then groups from the group lists of generic/ and
# shared/ (the tests every file system runs: ./check -g takes those and
# its FSTYP's own directory), minus -x.
for g in "${GROUPS_WANTED[@]}"; do
	for list in "$FSTESTS"/tests/generic/group.list "$FSTESTS"/tests/shared/group.list; do
		[ -f "$list" ] || continue
		d=$(basename "$(dirname "$list")")
		while read -r name groups; do
			case " $groups " in *" $g "*) TESTS+=("$d/$name") ;; esac
		done < <(grep -v '^#' "$list")
	done
done
declare -A SEEN
LIST=()
for t in "${TESTS[@]}"; do
	[ -n "${SEEN[$t]:-}" ] && continue
	SEEN[$t]=1
	case $EXCLUDE in *" $t "*) continue ;; esac
	[ -f "$FSTESTS/tests/$t" ] || die "no test $t in $FSTESTS/tests"
	LIST+=("$t")
done
[ ${#LIST[@]} -gt 0 ] || die "no test chosen (TEST... or -g GROUP)"

BASE=${SPACEFS_BENCH_DIR:-/var/tmp}
WORK=$(mktemp -d "$BASE/spacefs-fstests.XXXXXX") || exit 1
# The helpers' subtypes carry it: runs at once do not meet.
RUNID=${WORK##*.}
# The images of one file system at a time (TEST, SCRATCH, sized scratch
# up to twice the size), plus a margin: never fill $BASE.
avail=$(df -B1 --output=avail "$WORK" | tail -n 1 | tr -d ' ')
if [ "$avail" -lt $((SIZE * 4 + (2 << 30))) ]; then
	rmdir "$WORK"
	die "$BASE has $avail bytes free, needs $((SIZE * 4 + (2 << 30))) (SPACEFS_BENCH_DIR)"
fi
mkdir -p "$WORK/img" "$WORK/state" "$WORK/logs" "$WORK/out" "$WORK/mnt"
# The tests' other users (fsgqa) must reach the mount points: mktemp made
# the directory 0700.
chmod 0755 "$WORK" "$WORK/mnt"
: >"$WORK/state/daemons"
HELPERS=
FSTESTS_RUN=$WORK/fstests
# The running test (timeout's process group), killed on a signal.
CHECK_PID=

cleanup() {
	local m pid start l
	# A second signal must not cut the cleanup short (a loop device
	# or a helper left behind): ignored from here on.
	trap - EXIT
	trap '' INT TERM
	[ -n "$CHECK_PID" ] && kill -KILL -- "-$CHECK_PID" 2>/dev/null
	# The daemons' mounts first, then the backing file systems, then
	# the loop devices: deepest mount points first.
	for m in $(findmnt -rn -o TARGET | grep "^$WORK/" | sort -r); do
		umount "$m" 2>/dev/null || fusermount3 -u "$m" 2>/dev/null ||
			umount -l "$m" 2>/dev/null
	done
	if [ -s "$WORK/state/daemons" ]; then
		while read -r pid start _; do
			for _ in $(seq 100); do
				alive "$pid" "$start" || break
				sleep 0.1
			done
			alive "$pid" "$start" && kill -9 "$pid" 2>/dev/null
		done <"$WORK/state/daemons"
	fi
	for l in $(losetup -n -O NAME,BACK-FILE | awk -v w="$WORK/" 'index($2, w) == 1 { print $1 }'); do
		losetup -d "$l" 2>/dev/null
	done
	for h in $HELPERS; do
		grep -q "spacefs-fstests.sh" "$h" 2>/dev/null && rm -f "$h"
	done
	if [ "$KEEP" = 1 ]; then
		rm -rf "$WORK/img" "$FSTESTS_RUN"
		echo "kept $WORK" >&2
	else
		rm -rf "$WORK"
	fi
}
interrupted() {
	trap '' INT TERM
	if [ -n "$CHECK_PID" ]; then
		kill -TERM -- "-$CHECK_PID" 2>/dev/null
		for _ in $(seq 100); do
			kill -0 "$CHECK_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL -- "-$CHECK_PID" 2>/dev/null
	fi
	exit 130
}
trap cleanup EXIT
trap interrupted INT TERM

# ---- libfuse's passthrough ----

PASSTHROUGH=
case " $FSES " in *" passthrough "*)
	[ -n "$PASSTHROUGH_ARG" ] || die "passthrough needs --passthrough PROGRAM|LIBFUSE_CHECKOUT"
	if [ -d "$PASSTHROUGH_ARG" ]; then
		src=$PASSTHROUGH_ARG/example/passthrough.c
		[ -f "$src" ] || die "no example/passthrough.c in $PASSTHROUGH_ARG"
		# What libfuse's own build (meson.build's test_funcs) defines
		# on Linux with glibc: without them passthrough.c has no
		# utimens, fallocate, xattrs or copy_file_range.
		# shellcheck disable=SC2046 # pkg-config prints several words
		gcc -O2 -Wall -DHAVE_UTIMENSAT -DHAVE_POSIX_FALLOCATE \
			-DHAVE_SETXATTR -DHAVE_COPY_FILE_RANGE -I"$PASSTHROUGH_ARG/example" \
			"$src" -o "$WORK/passthrough" $(pkg-config --cflags --libs fuse3) ||
			die "compiling $src failed"
		PASSTHROUGH=$WORK/passthrough
	else
		PASSTHROUGH=$(readlink -f "$PASSTHROUGH_ARG")
		[ -x "$PASSTHROUGH" ] || die "$PASSTHROUGH_ARG is not a program"
	fi
esac

# ---- the fstests copy ----

mkdir -p "$FSTESTS_RUN"
tar -C "$FSTESTS" --exclude=.git --exclude=results -cf - . | tar -C "$FSTESTS_RUN" -xf - ||
	die "copying $FSTESTS"
python3 - "$FSTESTS_RUN/common/rc" <<'EOF' || die "cannot patch this fstests' _try_scratch_mkfs_sized (common/rc)"
import sys
path = sys.argv[1]
text = open(path).read()
needle = '\t*)\n\t\t_notrun "Filesystem $FSTYP not supported in _scratch_mkfs_sized"\n'
if text.count(needle) != 1:
    sys.exit(1)
fuse = ('\tfuse)\n'
        '\t\t# spacefs-fstests.sh: the size becomes the FUSE file\n'
        '\t\t# system\'s capacity, on an emptied backing tree.\n'
        '\t\t_scratch_unmount 2>/dev/null\n'
        '\t\t$FUSE_MKFS_SIZED "$fssize" || return 1\n'
        '\t\texport MOUNT_OPTIONS="$MOUNT_OPTIONS,capacity=$fssize"\n'
        '\t\t;;\n')
open(path, 'w').write(text.replace(needle, fuse + needle))
EOF

# ---- mount helpers ----

install_helper() {
	local h=/sbin/mount.fuse.$1-$RUNID
	if [ -e "$h" ] && ! grep -q "spacefs-fstests.sh" "$h"; then
		die "$h exists and is not this script's helper: not replacing it"
	fi
	HELPERS="$HELPERS $h"
	printf '#!/bin/sh\n# Installed by spacefs-fstests.sh for one run; removed at its end.\nexec "%s" --mount-helper %s "%s" "$@"\n' \
		"$ME" "$1" "$WORK" >"$h" || die "cannot write $h"
	chmod 755 "$h"
}

# ---- per file system ----

# fs_setup FS: images, backing trees and the fstests config of FS.
fs_setup() {
	local fs=$1 cfg=$WORK/$1.config
	TEST_MNT=$WORK/mnt/$fs-test
	SCRATCH_MNT=$WORK/mnt/$fs-scratch
	mkdir -p "$TEST_MNT" "$SCRATCH_MNT" "$WORK/results/$fs"
	case $fs in
	ext4)
		local td sd
		truncate -s "$SIZE" "$WORK/img/test.img" "$WORK/img/scratch.img" || return 1
		td=$(losetup -f --show "$WORK/img/test.img") || return 1
		sd=$(losetup -f --show "$WORK/img/scratch.img") || return 1
		mkfs.ext4 -q -F "$td" >/dev/null 2>&1 || return 1
		cat >"$cfg" <<EOF
export FSTYP=ext4
export TEST_DEV=$td
export TEST_DIR=$TEST_MNT
export SCRATCH_DEV=$sd
export SCRATCH_MNT=$SCRATCH_MNT
export RESULT_BASE=$WORK/results/$fs
EOF
		;;
	spacefs|passthrough)
		local tb=$WORK/back/$fs-test sb=$WORK/back/$fs-scratch bsize
		# spacefs's backing store holds more than its capacity;
		# passthrough's is the file system.
		if [ "$fs" = spacefs ]; then
			bsize=$((SIZE * 5 / 4 + (64 << 20)))
		else
			bsize=$SIZE
		fi
		image_mount "$WORK/img/test-back.img" "$bsize" "$tb" || return 1
		image_mount "$WORK/img/scratch-back.img" "$bsize" "$sb" || return 1
		SCRATCH_DEFAULT_BYTES=$bsize
		install_helper "$fs"
		cat >"$WORK/helper.env" <<EOF
SPACEFS=$SPACEFS
PASSTHROUGH=$PASSTHROUGH
SIZE=$SIZE
SCRATCH_BACK=$sb
EOF
		cat >"$cfg" <<EOF
export FSTYP=fuse
export FUSE_SUBTYP=.$fs-$RUNID
export TEST_DEV=$fs-test-$RUNID
export TEST_DIR=$TEST_MNT
export SCRATCH_DEV=$fs-scratch-$RUNID
export SCRATCH_MNT=$SCRATCH_MNT
export TEST_FS_MOUNT_OPTS="-o source=$tb/tree,allow_other,default_permissions"
export MOUNT_OPTIONS="-o source=$sb/tree,allow_other,default_permissions"
export FUSE_MKFS_SIZED="$ME --mkfs-sized $fs $WORK"
export RESULT_BASE=$WORK/results/$fs
EOF
		;;
	*) die "unknown file system $fs" ;;
	esac
}

# unmount_fs DIR: unmount if mounted (bounded).
unmount_fs() {
	mountpoint -q "$1" || return 0
	timeout 120 umount "$1" 2>/dev/null || timeout 60 fusermount3 -u "$1" 2>/dev/null ||
		umount -l "$1"
}

# daemons_settle FS: every daemon of FS whose mount is gone has exited;
# writes to $PROBLEMS the accounting failures of the spacefs daemons that
# ended since the last call (one line each) and "still running" ones.  A
# daemon is its pid and start time; the latest one of a device that is
# mounted still serves it.
DAEMONS_DONE=" "
PROBLEMS=$WORK/state/problems
daemons_settle() {
	local fs=$1 pid start dfs dev log off
	declare -A latest=()
	: >"$PROBLEMS"
	while read -r pid start dfs dev log off; do
		latest[$dev]="$pid:$start"
	done <"$WORK/state/daemons"
	while read -r pid start dfs dev log off; do
		[ "$dfs" = "$fs" ] || continue
		case $DAEMONS_DONE in *" $pid:$start "*) continue ;; esac
		if [ "${latest[$dev]}" = "$pid:$start" ] && alive "$pid" "$start" &&
		   findmnt -rn -S "$dev" >/dev/null; then
			continue
		fi
		for _ in $(seq 1200); do
			alive "$pid" "$start" || break
			sleep 0.1
		done
		if alive "$pid" "$start"; then
			echo "$dev: daemon $pid still running 120 s after its unmount" >>"$PROBLEMS"
			continue
		fi
		DAEMONS_DONE="$DAEMONS_DONE$pid:$start "
		[ "$fs" = spacefs ] || continue
		# This daemon's lines (from where it started): its unmount's
		# accounting lines, and refused library calls (spacefs:
		# FILE:LINE: call = -ERRNO) before its end.
		tail -c +$((off + 1)) "$log" | awk -v p="$pid" -v dev="$dev" '
			done { next }
			$0 ~ "^spacefs: unmount of pid " p ": writing back" { seen = 1; next }
			$0 ~ "^spacefs: unmount of pid " p ": done, status" { done = 1; status = $NF; next }
			seen && /^spacefs: accounting:/ { print dev ": " $0 }
			/^spacefs: [a-z_]+\.c:[0-9]+: / { print dev ": " $0 }
			END {
				if (!done) print dev ": daemon " p " ended without its unmount check"
				else if (status != 0) print dev ": daemon " p " unmount check status " status
			}' >>"$PROBLEMS"
	done <"$WORK/state/daemons"
}

# check_test_at_rest: spacefs's TEST file system, mounted, checks its
# accounting at rest (sync, then the pools against the engine's view);
# appends a line to $PROBLEMS if it failed.
check_test_at_rest() {
	local out
	mountpoint -q "$TEST_MNT" || return 0
	echo check | timeout 300 tee "$TEST_MNT/.spacefs" >/dev/null 2>&1
	out=$(timeout 30 awk '$1 == "check" { print $2 }' "$TEST_MNT/.spacefs" 2>/dev/null)
	[ "$out" = ok ] || echo "spacefs-test: check at rest: ${out:-no answer}" >>"$PROBLEMS"
}

declare -A RESULT DETAIL

# run_test FS TEST: one test; sets RESULT[FS,TEST].
run_test() {
	local fs=$1 t=$2 out=$WORK/out/$1.${2//\//_} rc res="" problems=""
	# A scratch file system left as the last test sized it would change
	# the next test's.
	if [ "$fs" = passthrough ] && [ -f "$WORK/state/scratch-resized" ]; then
		unmount_fs "$SCRATCH_MNT"
		wait_gone "$WORK/state/$(key_of "$WORK/back/$fs-scratch/tree").pid"
		image_mount "$WORK/img/scratch-back.img" "$SCRATCH_DEFAULT_BYTES" \
			"$WORK/back/$fs-scratch" || die "restoring the scratch backing image"
		rm -f "$WORK/state/scratch-resized"
	fi
	# In the background, so that a signal reaches the trap at once
	# (bash runs it only after a foreground command), and in timeout's
	# own process group, which the trap kills.
	(cd "$FSTESTS_RUN" && HOST_OPTIONS=$WORK/$fs.config \
		exec timeout --kill-after=60 "$TEST_TIMEOUT" ./check "$t") >"$out" 2>&1 &
	CHECK_PID=$!
	wait "$CHECK_PID"
	rc=$?
	CHECK_PID=
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		res=timeout
	elif grep -q "^Not run: *$t\$" "$out"; then
		res=notrun
		DETAIL[$fs,$t]=$(head -c 200 "$WORK/results/$fs/$t.notrun" 2>/dev/null | tr '\n|' '  ')
	elif grep -q "^Passed all 1 tests" "$out"; then
		res=pass
	elif grep -q "^Failures: *$t\$" "$out"; then
		res=fail
	else
		res=error
		DETAIL[$fs,$t]="check: $(grep -v '^$' "$out" | tail -n 1 | head -c 150 | tr '|' ' ')"
	fi
	unmount_fs "$SCRATCH_MNT"
	if [ "$fs" = spacefs ] || [ "$fs" = passthrough ]; then
		daemons_settle "$fs"
		[ "$fs" = spacefs ] && check_test_at_rest
		problems=$(cat "$PROBLEMS")
	fi
	if [ -n "$problems" ]; then
		echo "$problems" >"$out.accounting"
		DETAIL[$fs,$t]="${DETAIL[$fs,$t]:-} $(echo "$problems" | head -n 2 | tr '\n|' '  ')"
		[ "$fs" = spacefs ] && ACCOUNTING_FAILURES=$((ACCOUNTING_FAILURES + 1))
		[ "$res" = notrun ] || res=fail
	fi
	RESULT[$fs,$t]=$res
}

ACCOUNTING_FAILURES=0
START=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
echo "spacefs-fstests: ${#LIST[@]} tests on $FSES, $SIZE_ARG each, fstests $FSTESTS" \
     "($(git -C "$FSTESTS" log -1 --format=%h 2>/dev/null || echo "not a git checkout")), work $WORK" >&2

for fs in $FSES; do
	fs_setup "$fs" || die "setting up $fs"
	n=0
	for t in "${LIST[@]}"; do
		n=$((n + 1))
		t0=$(date +%s)
		run_test "$fs" "$t"
		printf '%s %s %s (%d s) [%d/%d] %s\n' "$fs" "$t" "${RESULT[$fs,$t]}" \
			$(($(date +%s) - t0)) "$n" "${#LIST[@]}" "${DETAIL[$fs,$t]:-}" >&2
	done
	# TEST's daemon: its unmount check.
	unmount_fs "$TEST_MNT"
	unmount_fs "$SCRATCH_MNT"
	if [ "$fs" = spacefs ] || [ "$fs" = passthrough ]; then
		daemons_settle "$fs"
		problems=$(cat "$PROBLEMS")
		if [ -n "$problems" ]; then
			echo "$fs: at the final unmount: $problems" >&2
			[ "$fs" = spacefs ] && ACCOUNTING_FAILURES=$((ACCOUNTING_FAILURES + 1))
		fi
	fi
	# Free the images before the next file system's.
	for m in $(findmnt -rn -o TARGET | grep "^$WORK/" | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
	for l in $(losetup -n -O NAME,BACK-FILE | awk -v w="$WORK/" 'index($2, w) == 1 { print $1 }'); do
		losetup -d "$l"
	done
	rm -f "$WORK"/img/*.img
	rm -f "$WORK/state/"*.pid "$WORK/state/scratch-resized"
done
END=$(date -u '+%Y-%m-%d %H:%M:%S UTC')

# ---- report ----

cell() {
	local r=${RESULT[$1,$2]:-}
	case $r in
	pass) echo pass ;;
	notrun) echo "not run" ;;
	"") echo "" ;;
	*) echo "**$r**" ;;
	esac
}

has() {
	case " $FSES " in *" $1 "*) return 0 ;; esac
	return 1
}

TABLE=$WORK/results.md
{
	echo "| test | ${FSES// / | } | class of a spacefs failure |"
	echo "|---$(echo "$FSES" | sed 's/[^ ]*/|---/g; s/ //g')|---|"
	for t in "${LIST[@]}"; do
		ran=0
		for fs in $FSES; do
			case ${RESULT[$fs,$t]:-} in notrun|"") ;; *) ran=1 ;; esac
		done
		[ $ran = 1 ] || continue
		row="| $t"
		for fs in $FSES; do
			row="$row | $(cell "$fs" "$t")"
		done
		class=""
		if has spacefs; then
			case ${RESULT[spacefs,$t]:-} in
			pass|notrun|"") ;;
			*)
				case ${RESULT[passthrough,$t]:-} in
				pass) class="spacefs only" ;;
				notrun) class="spacefs (passthrough: not run)" ;;
				"") class="spacefs (passthrough not tested)" ;;
				*) class="FUSE (fails on passthrough too)" ;;
				esac ;;
			esac
		fi
		echo "$row | $class |"
	done
} >"$TABLE"
cat "$TABLE"
[ -n "$RESULTS_OUT" ] && cp "$TABLE" "$RESULTS_OUT"
echo
echo "fstests run from $START to $END, ${#LIST[@]} tests, $SIZE_ARG file systems"
for fs in $FSES; do
	p=0 f=0 nr=0
	for t in "${LIST[@]}"; do
		case ${RESULT[$fs,$t]:-} in
		pass) p=$((p + 1)) ;;
		notrun) nr=$((nr + 1)) ;;
		*) f=$((f + 1)) ;;
		esac
	done
	echo "$fs: ran=$((p + f)) passed=$p failed=$f not_run=$nr"
done
S=0
if has spacefs; then
	p=0 f=0
	for t in "${LIST[@]}"; do
		case ${RESULT[spacefs,$t]:-} in
		pass) p=$((p + 1)) ;;
		notrun) ;;
		*)
			f=$((f + 1))
			[ "${RESULT[passthrough,$t]:-}" = pass ] && S=$((S + 1)) ;;
		esac
	done
	echo "spacefs accounting check failures: $ACCOUNTING_FAILURES"
	echo "summary: ran=$((p + f)) passed=$p failed=$f spacefs_only_failures=$S"
fi
[ "$S" = 0 ] && [ "$ACCOUNTING_FAILURES" = 0 ]
