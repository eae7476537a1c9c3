#!/bin/bash
# SPDX-License-Identifier: MIT
#
# spacefs mount tests (suite 'spacefs').
#
#   run-spacefs.sh SPACEFS SFS_CLIENT SCENARIO
#
# SCENARIO is one of:
#   integrity  fio (4 jobs, verify=crc32c) and sfs_client (4 threads, blocks
#              straddling pages, 3 passes) write concurrently with a cache
#              smaller than the data; verify through the mount; unmount (the
#              daemon's own accounting check is its exit status); verify the
#              backing files directly; remount; verify again (fio
#              --verify_only and sfs_client); the pools at rest equal the
#              backing tree's usage before and after the remount.
#   fill       1 MiB sequential writes until ENOSPC; delete; write again
#              until ENOSPC: as much fits again; no space leaked.
#   quota      tenant a stops at its limit with EDQUOT while tenant b keeps
#              writing; deleting in a frees its quota; rename across
#              tenants is EXDEV.
#   nowait     NOWAIT writes (RWF_NOWAIT where the kernel forwards it, the
#              O_NONBLOCK descriptor where it does not) get EAGAIN, never
#              ENOSPC or EDQUOT, when the cache is full, when the file system
#              is full and when the tenant is over its quota; the same
#              write blocking succeeds or gets the real error.
#
# SPACEFS_WRAP wraps the daemon (valgrind, gdb -batch ...); KEEP=1 keeps the
# work directory.  Exit 77 (skip) without root, /dev/fuse or fusermount3 (and fio for the
# integrity scenario).  Every mount is unmounted on any exit (trap), and
# every wait is bounded.
set -u

SPACEFS=$1
CLIENT=$2
SCENARIO=$3

skip() {
	echo "SKIP: $*"
	exit 77
}

[ "$(id -u)" = 0 ] || skip "not root"
[ -c /dev/fuse ] || skip "no /dev/fuse"
command -v fusermount3 >/dev/null || skip "no fusermount3"
command -v mountpoint >/dev/null || skip "no mountpoint(1)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/spacefs-test.XXXXXX") || exit 1
MNT=$WORK/mnt
BACK=$WORK/back
LOG=$WORK/spacefs.log
PID=
mkdir -p "$MNT" "$BACK"

# Bounded commands: a hung file system must fail the test, not hang it.
T=120

cleanup() {
	if mountpoint -q "$MNT"; then
		fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
	fi
	if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
		for _ in $(seq 50); do
			kill -0 "$PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$PID" 2>/dev/null
	fi
	if [ "${KEEP:-0}" = 1 ]; then
		echo "kept $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
	echo "FAIL: $*"
	echo "--- spacefs log"
	tail -n 50 "$LOG" 2>/dev/null
	if mountpoint -q "$MNT"; then
		echo "--- control file"
		timeout 10 cat "$MNT/.spacefs" 2>/dev/null
	fi
	exit 1
}

# mount_fs OPTIONS: start the daemon in the foreground, wait (10 s at most)
# for the mount.
mount_fs() {
	# SPACEFS_WRAP: e.g. "valgrind --error-exitcode=9" (word-split).
	${SPACEFS_WRAP:-} "$SPACEFS" "$MNT" -f -o "backing=$BACK,$1" >>"$LOG" 2>&1 &
	PID=$!
	for _ in $(seq 100); do
		mountpoint -q "$MNT" && return 0
		kill -0 "$PID" 2>/dev/null || fail "spacefs exited before mounting"
		sleep 0.1
	done
	fail "no mount after 10 s"
}

# umount_fs: unmount and wait (60 s at most) for the daemon; its exit
# status is the accounting check it runs after writing everything back.
umount_fs() {
	local status
	fusermount3 -u "$MNT" || fail "fusermount3 -u"
	for _ in $(seq 600); do
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$PID" 2>/dev/null && fail "spacefs still running 60 s after unmount"
	wait "$PID"
	status=$?
	PID=
	[ "$status" = 0 ] || fail "spacefs exited with $status (accounting check)"
	grep -q "accounting OK" "$LOG" || fail "no accounting report"
}

# ctl KEY: a value from the control file.
ctl() {
	timeout 10 cat "$MNT/.spacefs" | awk -v k="$1" '$1 == k { print $2 }'
}

# control CMD: write a command to the control file.
control() {
	echo "$1" | timeout $T tee "$MNT/.spacefs" >/dev/null || fail "control $1"
}

# check_at_rest: sync, the engine's check, and the pools against the backing
# tree: data used = the files' data pages, metadata used = one 16 KiB leaf
# per inode, nothing pinned, reserved or promised.
check_at_rest() {
	local usage data inodes
	control check
	[ "$(ctl check)" = ok ] || fail "engine accounting check failed"
	usage=$(timeout $T "$CLIENT" usage "$BACK") || fail "usage"
	data=${usage#data=}
	data=${data%% *}
	inodes=${usage##*inodes=}
	[ "$(ctl data.used)" = "$data" ] ||
		fail "data.used $(ctl data.used) != backing data $data"
	[ "$(ctl meta.used)" = $((inodes * 16384)) ] ||
		fail "meta.used $(ctl meta.used) != $inodes inodes x 16 KiB"
	for k in data.pinned data.reserved data.may_use meta.pinned \
		 meta.reserved dirty_bytes; do
		[ "$(ctl $k)" = 0 ] || fail "$k is $(ctl $k) at rest"
	done
	echo "at rest: data.used $data = backing data, meta.used = $inodes leaves"
}

run() {
	echo "+ $*" >&2
	timeout $T "$@"
}

# value KEY LINE: "written=N errno=E" -> N for KEY=written
value() {
	echo "$2" | tr ' ' '\n' | awk -F= -v k="$1" '$1 == k { print $2 }'
}

scenario_integrity() {
	local fio_job manifest=$WORK/manifest used
	command -v fio >/dev/null || skip "no fio"
	fio_job=(--name=integrity --directory="$MNT" --rw=randwrite --bs=4k
		 --size=16m --numjobs=4 --ioengine=psync --thread
		 --filename_format='fio.$jobnum' --randrepeat=1
		 --verify=crc32c --verify_fatal=1 --group_reporting=1)
	# A 4 MiB cache for 4 x 16 MiB of fio and 2 x 8 MiB of ours: writers
	# throttle and the flushers write back all the time; commits every
	# second on top.
	mount_fs "capacity=512M,meta=16M,cache=4M,commit=1"
	run fio "${fio_job[@]}" --output="$WORK/fio1.txt" &
	local fio_pid=$!
	run "$CLIENT" write "$MNT" 2 4 8M 3000 3 7 "$manifest" ||
		fail "sfs_client write"
	wait $fio_pid || { cat "$WORK/fio1.txt"; fail "fio write+verify"; }
	grep -E "err=|WRITE:|READ:" "$WORK/fio1.txt"
	run "$CLIENT" verify "$MNT" 2 8M 3000 3 7 "$manifest" ||
		fail "verify through the mount"
	check_at_rest
	used=$(ctl data.used)
	echo "commits $(ctl commits), tickets $(ctl meta.tickets) metadata /" \
	     "$(ctl data.tickets) data, throttles $(ctl throttles)"
	umount_fs
	run "$CLIENT" verify "$BACK" 2 8M 3000 3 7 "$manifest" ||
		fail "verify of the backing files"

	mount_fs "capacity=512M,meta=16M,cache=4M,commit=1"
	[ "$(ctl data.used)" = "$used" ] ||
		fail "data.used after remount $(ctl data.used) != $used"
	run fio "${fio_job[@]}" --verify_only --output="$WORK/fio2.txt" ||
		{ cat "$WORK/fio2.txt"; fail "fio verify_only after remount"; }
	grep -E "err=|READ:" "$WORK/fio2.txt"
	run "$CLIENT" verify "$MNT" 2 8M 3000 3 7 "$manifest" ||
		fail "verify after remount"
	check_at_rest
	umount_fs
	echo "PASS: integrity"
}

scenario_fill() {
	local cap=$((256 << 20)) out w1 w2 avail
	mount_fs "capacity=256M,meta=8M,cache=16M"
	out=$(run "$CLIENT" fill "$MNT/fill1" 1M) || fail "fill1"
	echo "fill1: $out"
	[ "$(value errno "$out")" = ENOSPC ] || fail "fill1 did not end in ENOSPC"
	w1=$(value written "$out")
	# Data may take everything but the metadata pool and a last partial
	# megabyte; a tenth more is lost only to a bug.
	[ "$w1" -ge $((cap * 9 / 10)) ] || fail "only $w1 of $cap bytes fit"
	avail=$(df -B1 --output=avail "$MNT" | tail -n 1)
	[ "$avail" -lt $((2 << 20)) ] || fail "statfs says $avail bytes free when full"
	echo "fill ratio $(awk -v w="$w1" -v c="$cap" 'BEGIN { printf "%.4f", w / c }')," \
	     "statfs available $avail"
	timeout $T rm "$MNT/fill1" || fail "delete on a full file system"
	out=$(run "$CLIENT" fill "$MNT/fill2" 1M) || fail "fill2"
	echo "fill2: $out"
	[ "$(value errno "$out")" = ENOSPC ] || fail "fill2 did not end in ENOSPC"
	w2=$(value written "$out")
	[ "$w2" -ge $((w1 - (1 << 20))) ] ||
		fail "after the delete only $w2 bytes fit (first time $w1): space leaked"
	check_at_rest
	timeout $T rm "$MNT/fill2" || fail "delete"
	check_at_rest
	[ "$(ctl data.used)" = 0 ] || fail "data.used $(ctl data.used) with no file"
	umount_fs
	echo "PASS: fill"
}

scenario_quota() {
	local out a b la=$((32 << 20))
	mount_fs "capacity=512M,meta=16M,cache=16M,tenant=a:32M,tenant=b:128M"
	# a runs into its limit while b writes 64 MiB at the same time.
	run "$CLIENT" fill "$MNT/b/f" 1M 64M >"$WORK/b.txt" &
	local bpid=$!
	out=$(run "$CLIENT" fill "$MNT/a/f" 1M) || fail "fill a"
	wait $bpid || fail "fill b"
	b=$(cat "$WORK/b.txt")
	echo "a: $out"
	echo "b: $b"
	[ "$(value errno "$out")" = EDQUOT ] || fail "tenant a did not stop with EDQUOT"
	a=$(value written "$out")
	# The limit counts data and the metadata reserved ahead of each write:
	# a stops within a few writes of it, never above.
	[ "$a" -le "$la" ] || fail "tenant a wrote $a bytes, over its $la limit"
	[ "$a" -ge $((la - (4 << 20))) ] || fail "tenant a stopped early at $a"
	[ "$(value errno "$b")" = 0 ] || fail "tenant b failed while a was at its limit"
	[ "$(value written "$b")" = $((64 << 20)) ] || fail "tenant b wrote too little"
	grep "^tenant" <(timeout 10 cat "$MNT/.spacefs")
	timeout $T rm "$MNT/a/f" || fail "delete in a"
	out=$(run "$CLIENT" fill "$MNT/a/g" 1M 16M) || fail "fill a again"
	[ "$(value errno "$out")" = 0 ] || fail "tenant a cannot write after the delete: $out"
	out=$(timeout 10 "$CLIENT" rename "$MNT/a/g" "$MNT/b/g")
	[ "$out" = errno=EXDEV ] || fail "rename across tenants: $out"
	out=$(timeout 10 "$CLIENT" rename "$MNT/a/g" "$MNT/a/h")
	[ "$out" = errno=0 ] || fail "rename within a tenant: $out"
	check_at_rest
	umount_fs
	echo "PASS: quota"
}

# nowait FILE OFFSET LEN -> prints "rwf_nowait=... result=N|errno=E"
nowait() {
	timeout $T "$CLIENT" nowait "$@" || fail "sfs_client nowait"
}

expect_eagain() {
	local what=$1 out=$2
	echo "$what: $out"
	[ "$(value errno "$out")" = EAGAIN ] || fail "$what: expected EAGAIN"
}

scenario_nowait() {
	local out
	# No background writeback (no preemptive flushing, no periodic
	# commit) and a metadata pool far larger than the cache's needs: only
	# the cache and the space decide.
	mount_fs "capacity=128M,meta=32M,cache=4M,preempt=0,commit=0,tenant=q:8M"
	control sync
	out=$(nowait "$MNT/n" 0 4M)
	echo "empty cache, NOWAIT 4 MiB: $out"
	[ "$(value result "$out")" = $((4 << 20)) ] || fail "NOWAIT write into an empty cache"
	case "$(value rwf_nowait "$out")" in
	EOPNOTSUPP) echo "this kernel does not forward RWF_NOWAIT to FUSE: O_NONBLOCK used";;
	supported) echo "RWF_NOWAIT forwarded";;
	*) fail "nowait: $out";;
	esac
	[ "$(ctl dirty_bytes)" = $((4 << 20)) ] || fail "cache not full: $(ctl dirty_bytes)"
	expect_eagain "full cache, NOWAIT 4 KiB" "$(nowait "$MNT/n" 4M 4k)"
	out=$(run "$CLIENT" fill "$MNT/m" 1M 8M) || fail "blocking write"
	[ "$(value errno "$out")" = 0 ] || fail "blocking write with a full cache: $out"

	# Full file system: blocking writes say ENOSPC, NOWAIT ones EAGAIN.
	out=$(run "$CLIENT" fill "$MNT/full" 1M) || fail "fill"
	echo "fill: $out"
	[ "$(value errno "$out")" = ENOSPC ] || fail "fill did not end in ENOSPC"
	control sync
	[ "$(ctl dirty_bytes)" = 0 ] || fail "cache not empty after sync"
	for i in 1 2 3; do
		expect_eagain "full file system, empty cache, NOWAIT 1 MiB #$i" \
			"$(nowait "$MNT/n" $((16 + i))M 1M)"
	done

	# Tenant over its quota: EDQUOT blocking, EAGAIN NOWAIT.
	timeout $T rm "$MNT/full" "$MNT/m" || fail "delete"
	out=$(run "$CLIENT" fill "$MNT/q/f" 1M) || fail "fill q"
	echo "tenant q: $out"
	[ "$(value errno "$out")" = EDQUOT ] || fail "tenant q did not stop with EDQUOT"
	control sync
	expect_eagain "tenant over quota, NOWAIT 1 MiB" "$(nowait "$MNT/q/f" 64M 1M)"
	[ "$(ctl enospc)" -ge 1 ] || fail "no ENOSPC counted"
	[ "$(ctl eagain)" -ge 5 ] || fail "EAGAIN count $(ctl eagain)"
	check_at_rest
	umount_fs
	echo "PASS: nowait"
}

case "$SCENARIO" in
integrity|fill|quota|nowait) "scenario_$SCENARIO" ;;
*) echo "unknown scenario $SCENARIO"; exit 2 ;;
esac
