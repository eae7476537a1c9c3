#!/bin/bash
# SPDX-License-Identifier: MIT
#
# spacefs-cache.sh: what spacefs's kernel cache settings cost, old and new
# side by side.
#
#   bench/spacefs-cache.sh [BUILD_DIR]        (default: ./build)
#
# spacefs used to mount with attr_timeout=1 and kernel_cache
# (FOPEN_KEEP_CACHE on every open): buffered reads after asynchronous
# O_DIRECT writes were stale (fstests generic/451), and a hard link's
# cached mode outlived a chmod through the other name (generic/378).  It
# keeps the pages only of files with one link that never saw O_DIRECT now,
# and invalidates the other names of a hard-linked file when one changes
# its attributes (examples/spacefs/links.c).  libfuse's passthrough example
# avoids both by caching neither pages nor attributes.  Four settings, all
# mount options:
#   before   -o kernel_cache: the old one
#   attr0    -o attr_timeout=0,keep_cache=0: the passthrough example's
#   nokeep   -o keep_cache=0: attributes cached, pages dropped at each open
#   after    the defaults
#
# Workloads, on one tree in spacefs's backing directory (an ext4 loop
# image), each with a warm-up pass before the measured ones:
#   stat     os.walk() and lstat() of 4,000 files in 40 directories, 3
#            passes: files/s (what ls -lR, find, du and make do)
#   git      `git status` in a repository of 2,000 committed files, 5
#            times: calls/s
#   reread   open, read and close 64 files of 1 MiB, 4 passes: MB/s (a
#            file read again after it was closed)
#   dbench   dbench, 2 clients, 10 s: MB/s (mixed)
#
# RUNS rounds (default 5); in each round every setting runs every
# workload, in an order that is reversed every other round: medians of the
# rounds.  Last line:
#   summary: stat_ratio=A git_ratio=B reread_ratio=C dbench_ratio=D
# each the median throughput after over before (1.00: no cost).
#
# Environment: SPACEFS (default BUILD_DIR/examples/spacefs/spacefs),
# SPACEFS_BENCH_DIR (where the 1 GiB image goes, default /var/tmp), RUNS.
# Needs root, /dev/fuse, python3, git, dbench.  The mount, the loop device
# and the image are removed on any exit.
set -u

case ${1:-} in
-h|--help) sed -n '3,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
--version)
	sed -n "s/^  version: '\\([^']*\\)',\$/spacefs-cache.sh (libspacersv) \\1/p" \
		"$(dirname "$0")/../meson.build"
	exit 0 ;;
-*) echo "usage: $0 [BUILD_DIR]" >&2; exit 2 ;;
esac
BUILD=${1:-build}
SPACEFS=${SPACEFS:-$BUILD/examples/spacefs/spacefs}
BASE=${SPACEFS_BENCH_DIR:-/var/tmp}
RUNS=${RUNS:-5}

die() {
	echo "spacefs-cache: $*" >&2
	exit 1
}
[ "$(id -u)" = 0 ] || die "not root"
[ -c /dev/fuse ] || die "no /dev/fuse"
[ -x "$SPACEFS" ] || die "no spacefs at $SPACEFS"
for c in python3 git dbench losetup mkfs.ext4 mountpoint fusermount3; do
	command -v $c >/dev/null || die "no $c"
done

WORK=$(mktemp -d "$BASE/spacefs-cache.XXXXXX") || exit 1
MNT=$WORK/mnt BACK=$WORK/back DEV='' PID=''
mkdir -p "$MNT" "$BACK"

cleanup() {
	if mountpoint -q "$MNT"; then
		fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
	fi
	[ -n "$PID" ] && { sleep 1; kill -9 "$PID" 2>/dev/null; }
	if mountpoint -q "$BACK"; then
		umount "$BACK" 2>/dev/null || umount -l "$BACK"
	fi
	[ -n "$DEV" ] && losetup -d "$DEV" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

truncate -s 1G "$WORK/back.img" || die "image"
DEV=$(losetup -f --show "$WORK/back.img") || die "losetup"
mkfs.ext4 -q -F "$DEV" >/dev/null 2>&1 || die "mkfs"
mount "$DEV" "$BACK" || die "mount image"
mkdir -p "$BACK/tree"

mount_fs() {
	local extra=$1
	"$SPACEFS" "$MNT" -f -o "backing=$BACK/tree,capacity=768M,commit=0$extra" \
		>>"$WORK/spacefs.log" 2>&1 &
	PID=$!
	for _ in $(seq 100); do
		mountpoint -q "$MNT" && return 0
		sleep 0.1
	done
	die "no mount"
}

umount_fs() {
	fusermount3 -u "$MNT" || die "unmount"
	for _ in $(seq 600); do
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	wait "$PID" || die "spacefs exited with $? (accounting check): $(tail -n 3 "$WORK/spacefs.log")"
	PID=
}

# The trees, made once through spacefs.
mount_fs ""
python3 - "$MNT" <<'EOF' || die "making the trees"
import os, sys
root = sys.argv[1]
for d in range(40):
    os.makedirs(f"{root}/stat/d{d}")
    for f in range(100):
        with open(f"{root}/stat/d{d}/f{f}", "w") as fh:
            fh.write("x" * (f * 37 % 3000))
os.makedirs(f"{root}/reread")
block = os.urandom(1 << 20)
for f in range(64):
    with open(f"{root}/reread/f{f}", "wb") as fh:
        fh.write(block)
os.makedirs(f"{root}/git")
for f in range(2000):
    d = f"{root}/git/d{f % 20}"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/f{f}", "w") as fh:
        fh.write(f"file {f}\n")
EOF
(cd "$MNT/git" && git init -q && git add -A && git -c user.name=b -c user.email=b@b commit -q -m tree) ||
	die "git"
umount_fs

# run_workload NAME: prints its throughput.
run_workload() {
	case $1 in
	stat)
		python3 - "$MNT/stat" <<'EOF'
import os, sys, time
def walk():
    n = 0
    for d, _, files in os.walk(sys.argv[1]):
        for f in files:
            os.lstat(os.path.join(d, f))
            n += 1
    return n
walk()
t = time.monotonic(); n = sum(walk() for _ in range(3))
print(f"{n / (time.monotonic() - t):.0f}")
EOF
		;;
	git)
		python3 - "$MNT/git" <<'EOF'
import subprocess, sys, time
run = lambda: subprocess.run(["git", "-C", sys.argv[1], "status", "--porcelain"],
                             check=True, stdout=subprocess.DEVNULL)
run()
t = time.monotonic()
for _ in range(5):
    run()
print(f"{5 / (time.monotonic() - t):.2f}")
EOF
		;;
	reread)
		python3 - "$MNT/reread" <<'EOF'
import os, sys, time
def once():
    n = 0
    for f in range(64):
        with open(f"{sys.argv[1]}/f{f}", "rb") as fh:
            n += len(fh.read())
    return n
once()
t = time.monotonic(); n = sum(once() for _ in range(4))
print(f"{n / (time.monotonic() - t) / 1e6:.1f}")
EOF
		;;
	dbench)
		mkdir -p "$MNT/dbench"
		(cd "$MNT/dbench" && timeout 120 dbench -D "$MNT/dbench" -t 10 2 2>/dev/null) |
			awk '/^Throughput/ { print $2 }'
		rm -rf "$MNT/dbench"
		;;
	esac
}

WORKLOADS="stat git reread dbench"
declare -A VALS
echo "spacefs-cache: $RUNS rounds, load average $(cut -d' ' -f1-3 /proc/loadavg) at start" >&2
MODES="before attr0 nokeep after"
for r in $(seq "$RUNS"); do
	if [ $((r % 2)) = 1 ]; then order=$MODES; else order="after nokeep attr0 before"; fi
	for mode in $order; do
		case $mode in
		before) mount_fs ",kernel_cache" ;;
		attr0) mount_fs ",attr_timeout=0,keep_cache=0" ;;
		nokeep) mount_fs ",keep_cache=0" ;;
		after) mount_fs "" ;;
		esac
		for w in $WORKLOADS; do
			v=$(run_workload "$w")
			[ -n "$v" ] || die "$w gave no figure"
			VALS[$mode,$w]="${VALS[$mode,$w]:-} $v"
			echo "round $r $mode $w $v" >&2
		done
		umount_fs
	done
done
echo "spacefs-cache: load average $(cut -d' ' -f1-3 /proc/loadavg) at the end" >&2

median() {
	echo "$@" | tr ' ' '\n' | grep . | sort -g |
		awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

printf '| workload | unit | before | attr0 | nokeep | after | attr0 / before | nokeep / before | after / before |\n'
printf '|---|---|---:|---:|---:|---:|---:|---:|---:|\n'
summary="summary:"
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'
}
for w in $WORKLOADS; do
	case $w in
	stat) unit="files/s" ;;
	git) unit="calls/s" ;;
	*) unit="MB/s" ;;
	esac
	# shellcheck disable=SC2086 # the runs are a list of words
	{
		b=$(median ${VALS[before,$w]})
		z=$(median ${VALS[attr0,$w]})
		n=$(median ${VALS[nokeep,$w]})
		a=$(median ${VALS[after,$w]})
	}
	printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$w" "$unit" \
		"$b" "$z" "$n" "$a" "$(ratio "$z" "$b")" "$(ratio "$n" "$b")" \
		"$(ratio "$a" "$b")"
	summary="$summary ${w}_ratio=$(ratio "$a" "$b")"
done
echo
echo "runs (in round order):"
for w in $WORKLOADS; do
	for mode in $MODES; do
		echo "  $w $mode:${VALS[$mode,$w]}"
	done
done
echo "$summary"
