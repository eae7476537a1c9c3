#!/bin/bash
# SPDX-License-Identifier: MIT
#
# spacefs-reuse.sh: does space come back?  The "df says free, ENOSPC"
# sequence on a 2 GiB spacefs, and the same on 2 GiB btrfs and ext4 loop
# images in the same run:
#
#   cycle: fill one file with 1 MiB writes until ENOSPC (df's free share is
#          read at that moment), delete it, commit (sync), create N small
#          files (4 KiB each, one write), delete them, commit.
#
# Cycle 1 is the sequence of the original report (fill, delete, commit,
# small files); CYCLES cycles in all.  Per file system and cycle it prints
# the bytes the fill wrote, df's free percentage at its ENOSPC, the small
# files that failed, the first one that did and df's free percentage then
# (-1: none failed).  Last line, for spacefs:
#   summary: failures=N cycles=C max_df_free_pct_at_enospc=P
# (failures: small files that failed over all cycles; P: the largest free
# share df reported when a fill hit ENOSPC.)
#
#   bench/spacefs-reuse.sh [BUILD_DIR]        (default: ./build)
#
# Environment: SPACEFS (default BUILD_DIR/examples/spacefs/spacefs),
# SPACEFS_OPTS (more -o options, e.g. meta=1M: a smaller first metadata
# pool, which must grow sooner), CYCLES (5), FILES (20000), SIZE_MIB
# (2048), FS ("spacefs btrfs ext4"),
# BENCH_DIR (/tmp: where the images go; each is a sparse file the script
# creates, mounts, and removes on exit).
#
# Needs root (loop devices, FUSE), mkfs.btrfs, mkfs.ext4, fusermount3,
# python3.
set -u
case ${1:-} in
-h|--help) sed -n '3,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
--version)
	sed -n "s/^  version: '\\([^']*\\)',\$/spacefs-reuse.sh (libspacersv) \\1/p" \
		"$(dirname "$0")/../meson.build"
	exit 0 ;;
esac

BUILD=${1:-build}
SPACEFS=${SPACEFS:-$BUILD/examples/spacefs/spacefs}
CYCLES=${CYCLES:-5}
FILES=${FILES:-20000}
SIZE_MIB=${SIZE_MIB:-2048}
FSLIST=${FS:-spacefs btrfs ext4}
SPACEFS_OPTS=${SPACEFS_OPTS:-}
BASE=${BENCH_DIR:-/tmp}

die() {
	echo "spacefs-reuse: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || die "needs root (loop devices, FUSE)"
for t in mkfs.btrfs mkfs.ext4 losetup python3 fusermount3; do
	command -v $t >/dev/null || die "no $t"
done
[ -x "$SPACEFS" ] || die "no spacefs binary at $SPACEFS"

WORK=$(mktemp -d "$BASE/spacefs-reuse.XXXXXX") || die "mktemp"
MNT=$WORK/mnt
HOLD=$WORK/hold		# ext4 image that holds spacefs's backing files
PID=
DEV=
LOOPS=()
mkdir -p "$MNT" "$HOLD"

cleanup() {
	if mountpoint -q "$MNT"; then
		fusermount3 -u "$MNT" 2>/dev/null || umount "$MNT" 2>/dev/null ||
			umount -l "$MNT" 2>/dev/null
	fi
	if [ -n "$PID" ]; then
		for _ in $(seq 600); do
			kill -0 "$PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$PID" 2>/dev/null
	fi
	mountpoint -q "$HOLD" && umount "$HOLD"
	for l in "${LOOPS[@]}"; do
		losetup -d "$l" 2>/dev/null
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# loop_image NAME MIB: a new sparse image on a loop device, in $DEV (not
# a command substitution: LOOPS must be this shell's, for the cleanup)
loop_image() {
	local img=$WORK/$1.img
	truncate -s "${2}M" "$img" || die "truncate $img"
	DEV=$(losetup -f --show "$img") || die "losetup $img"
	LOOPS+=("$DEV")
}

# The cycle's steps, run inside the mount (python: 20,000 files without a
# fork per file).
step() {
	python3 - "$MNT" "$@" <<'EOF'
import errno, os, shutil, sys
mnt, what = sys.argv[1], sys.argv[2]
def free_pct():
    st = os.statvfs(mnt)
    return 100.0 * st.f_bavail / st.f_blocks if st.f_blocks else 0.0
if what == "fill":
    buf = b"\xa5" * (1 << 20)
    done, pct = 0, -1.0
    fd = os.open(os.path.join(mnt, "big"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        while True:
            done += os.write(fd, buf)
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        pct = free_pct()
    try:
        os.fsync(fd)
    except OSError:
        pass
    os.close(fd)
    print("%d %.2f" % (done, pct))
elif what == "small":
    n = int(sys.argv[3])
    d = os.path.join(mnt, "small")
    os.makedirs(d, exist_ok=True)
    page = b"s" * 4096
    failed, first, pct = 0, -1, -1.0
    for i in range(n):
        try:
            fd = os.open(os.path.join(d, "f%d" % i),
                         os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                if os.write(fd, page) != len(page):
                    raise OSError(errno.EIO, "short write")
            finally:
                os.close(fd)
        except OSError:
            failed += 1
            if first < 0:
                first, pct = i, free_pct()
    print("%d %d %.2f" % (failed, first, pct))
elif what == "rm":
    p = os.path.join(mnt, sys.argv[3])
    if os.path.isdir(p):
        shutil.rmtree(p, ignore_errors=True)
    elif os.path.exists(p):
        os.unlink(p)
EOF
}

commit() {
	# coreutils' sync with an argument fsync()s it: spacefs commits on
	# fsync of its root (FUSE never sees syncfs); -f is syncfs for the
	# kernel file systems.  btrfs returns emptied block groups from its
	# cleaner after the commit: give it a moment.
	sync "$MNT" 2>/dev/null
	sync -f "$MNT" 2>/dev/null
	sleep 2
}

mount_one() {
	case $1 in
	spacefs)
		loop_image hold $((SIZE_MIB + SIZE_MIB / 2))
		mkfs.ext4 -q "$DEV" || die "mkfs.ext4 (hold)"
		mount "$DEV" "$HOLD" || die "mount hold"
		mkdir -p "$HOLD/backing"
		"$SPACEFS" "$MNT" -f -o "backing=$HOLD/backing,capacity=${SIZE_MIB}M,commit=5${SPACEFS_OPTS:+,$SPACEFS_OPTS}" \
			>>"$WORK/spacefs.log" 2>&1 &
		PID=$!
		for _ in $(seq 100); do
			mountpoint -q "$MNT" && return 0
			kill -0 "$PID" 2>/dev/null ||
				die "spacefs exited: $(tail -n 3 "$WORK/spacefs.log")"
			sleep 0.1
		done
		die "no spacefs mount after 10 s"
		;;
	btrfs|ext4)
		loop_image "$1" "$SIZE_MIB"
		if [ "$1" = btrfs ]; then
			mkfs.btrfs -q -f "$DEV" >/dev/null || die "mkfs.btrfs"
		else
			mkfs.ext4 -q "$DEV" || die "mkfs.ext4"
		fi
		mount "$DEV" "$MNT" || die "mount $1"
		;;
	esac
}

umount_one() {
	case $1 in
	spacefs)
		local status
		fusermount3 -u "$MNT" || die "fusermount3 -u"
		for _ in $(seq 1200); do
			kill -0 "$PID" 2>/dev/null || break
			sleep 0.1
		done
		wait "$PID"
		status=$?
		PID=
		[ "$status" = 0 ] ||
			echo "spacefs-reuse: spacefs exited with $status (accounting check)" >&2
		umount "$HOLD"
		;;
	*)
		umount "$MNT" || die "umount $1"
		;;
	esac
}

ctl() {
	[ -e "$MNT/.spacefs" ] || { echo -; return; }
	timeout 10 cat "$MNT/.spacefs" | awk -v k="$1" '$1 == k { print $2 }'
}

SUMMARY=
for fs in $FSLIST; do
	mount_one "$fs"
	total_failed=0
	max_pct=0
	for c in $(seq "$CYCLES"); do
		read -r filled pct < <(step fill) || die "fill"
		step rm big
		commit
		read -r failed first fail_pct < <(step small "$FILES") || die "small"
		step rm small
		commit
		total_failed=$((total_failed + failed))
		max_pct=$(python3 -c "print('%.2f' % max($max_pct, $pct))")
		printf '%s cycle=%d fill_mib=%d df_free_pct_at_enospc=%s small_failed=%d first_failed=%d df_free_pct_at_first_failure=%s chunks_returned=%s\n' \
			"$fs" "$c" $((filled >> 20)) "$pct" "$failed" "$first" \
			"$fail_pct" "$(ctl chunks_returned)"
	done
	echo "$fs: failures=$total_failed cycles=$CYCLES max_df_free_pct_at_enospc=$max_pct"
	[ "$fs" = spacefs ] &&
		SUMMARY="summary: failures=$total_failed cycles=$CYCLES max_df_free_pct_at_enospc=$max_pct"
	umount_one "$fs"
done
[ -n "$SUMMARY" ] && echo "$SUMMARY"
exit 0
