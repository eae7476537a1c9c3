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
#   usability  what ordinary tools expect: du and st_blocks count dirty
#              data, df counts a deleted file's pinned blocks as free, an
#              fsync of a directory ("sync MOUNTPOINT") commits, df -i shows
#              spacefs's inodes, the control file is not listed and cp -a
#              of the mount root round-trips, and in daemon mode the
#              unmount result lands in the log and "spacefs --unmount"
#              returns only after writeback.
#   fallocate  fallocate(1) through the mount: preallocated space shows in
#              du, st_blocks and df at once; writes into it on a full file
#              system succeed; more than df shows fails with ENOSPC and
#              changes nothing; a tenant's quota says EDQUOT; a punched
#              hole comes back in df and, after the commit, in the pools;
#              other modes are EOPNOTSUPP; the pools equal the backing
#              usage before and after a remount.
#   semantics  what fstests found wrong, checked without fstests: open with
#              O_TRUNC truncates; a write at 4 TiB leaves the daemon's
#              memory alone, one at the largest file size is EFBIG, as is a
#              truncate past it; a RENAME_WHITEOUT whiteout and its source
#              deleted leave the accounting exact; a write moves ctime at
#              once, a truncate moves mtime; after a chmod through one name
#              of a hard-linked file another user cannot read it through
#              the other name; buffered reads after asynchronous O_DIRECT
#              writes see the new data; fallocate and a hole punch by
#              another user drop setuid and setgid, root's keep them.
#   descriptors the daemon under a 256-descriptor limit, two cp -r of 300
#              files each within the mount: no EMFILE, equal copies.
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
case ${1:-} in
-h|--help) sed -n '3,57p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
--version)
	sed -n "s/^  version: '\\([^']*\\)',\$/run-spacefs.sh (libspacersv) \\1/p" \
		"$(dirname "$0")/../../meson.build"
	exit 0 ;;
esac

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
# for the mount.  PRE: a command the daemon runs under (prlimit ...).
mount_fs() {
	# SPACEFS_WRAP: e.g. "valgrind --error-exitcode=9" (word-split).
	${PRE:-} ${SPACEFS_WRAP:-} "$SPACEFS" "$MNT" -f -o "backing=$BACK,$1" >>"$LOG" 2>&1 &
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
# per 32 consecutive inode numbers in use, nothing pinned, reserved or
# promised.
check_at_rest() {
	local usage data inodes leaves
	control check
	[ "$(ctl check)" = ok ] || fail "engine accounting check failed"
	usage=$(timeout $T "$CLIENT" usage "$BACK") || fail "usage"
	data=${usage#data=}
	data=${data%% *}
	leaves=${usage##*leaves=}
	inodes=${usage##*inodes=}
	inodes=${inodes%% *}
	[ "$(ctl data.used)" = "$data" ] ||
		fail "data.used $(ctl data.used) != backing data $data"
	[ "$(ctl meta.used)" = $((leaves * 16384)) ] ||
		fail "meta.used $(ctl meta.used) != $leaves leaves x 16 KiB"
	[ "$(ctl engine.inodes)" = "$inodes" ] ||
		fail "engine.inodes $(ctl engine.inodes) != $inodes inodes"
	for k in data.pinned data.reserved data.may_use meta.pinned \
		 meta.reserved dirty_bytes; do
		[ "$(ctl $k)" = 0 ] || fail "$k is $(ctl $k) at rest"
	done
	echo "at rest: data.used $data = backing data, meta.used = $leaves leaves of $inodes inodes"
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
	mount_fs "capacity=128M,meta=32M,cache=4M,preempt=0,data_preempt=0,commit=0,tenant=q:8M"
	[ "$(ctl data_preempt)" = 0 ] || fail "data_preempt=0 not taken"
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
	# Into another file: opening n again may revalidate its attributes
	# (attr_timeout=1), and a getattr of a file with dirty pages writes
	# them back first, which would empty the cache under a slow machine.
	expect_eagain "full cache, NOWAIT 4 KiB" "$(nowait "$MNT/n2" 0 4k)"
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

# alive PID: running (a zombie whose parent has not reaped it yet is not).
alive() {
	local state
	state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# df_avail: available bytes as df shows them.
df_avail() {
	df -B1 --output=avail "$MNT" | tail -n 1 | tr -d ' '
}

scenario_usability() {
	local blocks du avail0 avail1 iused ifree copy=$WORK/copy src=$WORK/src
	local dpid out
	# No periodic commit: only what the tools do commits.
	mount_fs "capacity=256M,meta=8M,cache=64M,commit=0,preempt=0"
	control sync

	# Delayed allocation counts in st_blocks and du, as on ext4 and btrfs.
	run dd if=/dev/urandom of="$MNT/dirty" bs=1M count=8 status=none ||
		fail "dd"
	[ "$(ctl dirty_bytes)" -ge $((8 << 20)) ] || fail "the data is not dirty"
	blocks=$(stat -c %b "$MNT/dirty")
	[ "$blocks" -ge $((8 << 20 >> 9)) ] ||
		fail "st_blocks $blocks of a file with 8 MiB dirty"
	du=$(du -B1 "$MNT/dirty" | cut -f1)
	[ "$du" -ge $((8 << 20)) ] || fail "du says $du of 8 MiB dirty"
	echo "dirty 8 MiB: st_blocks $blocks, du $du"

	# rm frees at once in df (pinned until the commit, but a write that
	# needs it commits); "sync MOUNTPOINT" commits.
	run sync "$MNT/dirty" || fail "sync FILE"
	[ "$(ctl dirty_bytes)" = 0 ] || fail "dirty after fsync"
	avail0=$(df_avail)
	run rm "$MNT/dirty" || fail "rm"
	avail1=$(df_avail)
	[ "$(ctl data.pinned)" = $((8 << 20)) ] || fail "data.pinned $(ctl data.pinned) after rm"
	[ "$avail1" -ge $((avail0 + (8 << 20))) ] ||
		fail "df available $avail0 -> $avail1 after deleting 8 MiB"
	echo "rm of 8 MiB: df available $avail0 -> $avail1 (pinned $(ctl data.pinned))"
	run sync -f "$MNT" || fail "sync -f"
	echo "after syncfs (sync -f): data.pinned $(ctl data.pinned)" \
	     "(the kernel does not send FUSE_SYNCFS to /dev/fuse servers)"
	local c0
	c0=$(ctl commits)
	run sync "$MNT" || fail "sync MOUNTPOINT"
	[ "$(ctl data.pinned)" = 0 ] || fail "data.pinned $(ctl data.pinned) after sync MOUNTPOINT"
	[ "$(ctl commits)" -gt "$c0" ] || fail "sync MOUNTPOINT did not commit"
	mkdir "$MNT/d" || fail mkdir
	run dd if=/dev/urandom of="$MNT/d/f" bs=1M count=2 conv=fsync status=none ||
		fail "dd d/f"
	run rm "$MNT/d/f" || fail "rm d/f"
	[ "$(ctl data.pinned)" = $((2 << 20)) ] || fail "data.pinned $(ctl data.pinned) after rm d/f"
	run sync "$MNT/d" || fail "sync DIR"
	[ "$(ctl data.pinned)" = 0 ] || fail "fsync of a directory did not commit"

	# df -i: spacefs's inodes (512 bytes of a shared leaf each), not the
	# backing file system's.
	for i in $(seq 100); do echo "$i" >"$MNT/d/small.$i"; done
	run sync "$MNT" || fail "sync"
	read -r iused ifree <<<"$(df --output=iused,iavail "$MNT" | tail -n 1)"
	[ "$iused" = "$(ctl engine.inodes)" ] ||
		fail "df -i used $iused, engine inodes $(ctl engine.inodes)"
	[ "$iused" -ge 102 ] || fail "df -i used $iused with 102 inodes"
	[ "$ifree" -le $(((256 << 20) / 512)) ] ||
		fail "df -i free $ifree is more than the capacity holds"
	echo "df -i: used $iused, free $ifree"

	# The control file is not listed, is openable by name, and cp -a of
	# the mount root round-trips.
	ls -a "$MNT" | grep -qx .spacefs && fail ".spacefs is listed"
	[ -n "$(ctl capacity)" ] || fail "control file not readable by name"
	ln -s d/small.1 "$MNT/link" || fail symlink
	run cp -a "$MNT/." "$copy" || fail "cp -a out of the mount"
	[ -e "$copy/.spacefs" ] && fail "cp -a copied the control file"
	run rm -rf "$MNT/d" "$MNT/link" || fail "rm -rf"
	run cp -a "$copy/." "$MNT/" || fail "cp -a back into the mount root"
	run diff -r --no-dereference "$copy" "$MNT" || fail "round trip differs"
	echo "cp -a round trip of the mount root: ok"
	check_at_rest
	umount_fs

	# Daemon mode: the result goes to log=, and "spacefs --unmount" waits
	# for writeback, commit and check.
	run dd if=/dev/urandom of="$src" bs=1M count=24 status=none || fail "dd src"
	${SPACEFS_WRAP:-} "$SPACEFS" "$MNT" -o "backing=$BACK,capacity=256M,cache=64M,commit=0,log=$WORK/daemon.log" ||
		fail "daemon mount"
	mountpoint -q "$MNT" || fail "daemon did not mount"
	dpid=$(ctl pid)
	[ "$(ctl log)" = "$WORK/daemon.log" ] || fail "control file log: $(ctl log)"
	run cp "$src" "$MNT/big" || fail "cp into the daemon mount"
	[ "$(ctl dirty_bytes)" -gt 0 ] || fail "nothing dirty before unmount"
	out=$(timeout $T "$SPACEFS" --unmount "$MNT") || fail "spacefs --unmount: $out"
	echo "spacefs --unmount: $out"
	case "$out" in *"accounting OK"*) ;; *) fail "no accounting result";; esac
	mountpoint -q "$MNT" && fail "still mounted"
	alive "$dpid" && fail "daemon still running after --unmount"
	cmp "$src" "$BACK/big" || fail "backing file incomplete after --unmount"

	# Plain fusermount3 -u: the result still reaches the log.
	${SPACEFS_WRAP:-} "$SPACEFS" "$MNT" -o "backing=$BACK,capacity=256M,cache=64M,commit=0,log=$WORK/daemon.log" ||
		fail "daemon mount 2"
	dpid=$(ctl pid)
	run cp "$src" "$MNT/big2" || fail "cp 2"
	fusermount3 -u "$MNT" || fail "fusermount3 -u"
	for _ in $(seq 600); do
		alive "$dpid" || break
		sleep 0.1
	done
	alive "$dpid" && fail "daemon running 60 s after unmount"
	[ "$(grep -c "accounting OK" "$WORK/daemon.log")" = 2 ] ||
		{ cat "$WORK/daemon.log"; fail "unmount result not in the log"; }
	cmp "$src" "$BACK/big2" || fail "backing file incomplete"
	echo "PASS: usability"
}

scenario_fallocate() {
	local avail0 avail1 used0 used1 out
	command -v fallocate >/dev/null || skip "no fallocate(1)"
	mount_fs "capacity=256M,meta=8M,cache=16M,commit=0,preempt=0,tenant=q:16M"
	control sync
	avail0=$(df_avail)
	used0=$(ctl data.used)
	run fallocate -l 64M "$MNT/pre" || fail "fallocate 64M"
	avail1=$(df_avail)
	[ "$(ctl data.used)" = $((used0 + (64 << 20))) ] ||
		fail "data.used $used0 -> $(ctl data.used) after fallocate of 64 MiB"
	[ "$avail1" = $((avail0 - (64 << 20))) ] ||
		fail "df available $avail0 -> $avail1 after fallocate of 64 MiB"
	[ "$(du -B1 "$MNT/pre" | cut -f1)" = $((64 << 20)) ] || fail "du of pre"
	[ "$(stat -c %b "$MNT/pre")" = $((64 << 20 >> 9)) ] || fail "st_blocks of pre"
	[ "$(stat -c %s "$MNT/pre")" = $((64 << 20)) ] || fail "size of pre"
	echo "fallocate 64 MiB: df available $avail0 -> $avail1, du = st_blocks = 64 MiB"
	# KEEP_SIZE: blocks past EOF.
	: >"$MNT/keep"
	run fallocate -n -l 1M "$MNT/keep" || fail "fallocate -n"
	[ "$(stat -c %s "$MNT/keep")" = 0 ] || fail "KEEP_SIZE changed the size"
	[ "$(stat -c %b "$MNT/keep")" = 2048 ] || fail "st_blocks of keep"
	# More than df shows: ENOSPC, nothing changed.
	avail1=$(df_avail)
	used1=$(ctl data.used)
	out=$(fallocate -l $((avail1 + (1 << 20))) "$MNT/toobig" 2>&1) &&
		fail "fallocate past df's available succeeded"
	case $out in *"No space left"*) ;; *) fail "fallocate too big: $out" ;; esac
	[ "$(df_avail)" = "$avail1" ] || fail "df changed by a failed fallocate"
	[ "$(ctl data.used)" = "$used1" ] || fail "data.used changed by a failed fallocate"
	[ "$(ctl data.may_use)" = 0 ] || fail "data.may_use $(ctl data.may_use) after a failed fallocate"
	[ "$(stat -c %b "$MNT/toobig")" = 0 ] || fail "blocks left by a failed fallocate"
	echo "fallocate of df's available + 1 MiB: $out; df, data.used unchanged"
	# The tenant's quota.
	out=$(fallocate -l 32M "$MNT/q/f" 2>&1) && fail "fallocate past the quota succeeded"
	case $out in *"quota"*) ;; *) fail "fallocate past the quota: $out" ;; esac
	run fallocate -l 8M "$MNT/q/f" || fail "fallocate within the quota"
	echo "tenant q (16 MiB): 32 MiB $out; 8 MiB ok"
	# Other modes.
	out=$(fallocate -z -l 1M "$MNT/pre" 2>&1) && fail "zero range succeeded"
	case $out in *"not supported"*) ;; *) fail "zero range: $out" ;; esac
	# Fill the rest, then write the whole preallocated range.
	out=$(run "$CLIENT" fill "$MNT/fill" 1M) || fail "fill"
	[ "$(value errno "$out")" = ENOSPC ] || fail "fill: $out"
	run dd if=/dev/urandom of="$MNT/pre" bs=1M count=64 conv=notrunc,fsync 		status=none || fail "write into the preallocated range on a full file system"
	run dd if=/dev/urandom of="$MNT/q/f" bs=1M count=8 conv=notrunc,fsync 		status=none || fail "write into the tenant's preallocated range"
	echo "full file system ($out): 64 MiB written into the preallocated range"
	# Punch: back in df at once, in the pools at the commit.
	run rm "$MNT/fill" || fail "rm fill"
	run sync "$MNT" || fail sync
	avail0=$(df_avail)
	used0=$(ctl data.used)
	# (python: fallocate(1) fsyncs at close, which commits at once.)
	run python3 -c 'import ctypes, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
# FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
if libc.fallocate(fd, 3, 4 << 20, 16 << 20):
    sys.exit(os.strerror(ctypes.get_errno()))
os.close(fd)' "$MNT/pre" || fail "punch"
	[ "$(ctl data.pinned)" = $((16 << 20)) ] || fail "data.pinned $(ctl data.pinned) after the punch"
	[ "$(df_avail)" = $((avail0 + (16 << 20))) ] || fail "df after the punch"
	run sync "$MNT" || fail sync
	[ "$(ctl data.used)" = $((used0 - (16 << 20))) ] || fail "data.used after the punch's commit"
	[ "$(stat -c %b "$MNT/pre")" = $((48 << 20 >> 9)) ] || fail "st_blocks after the punch"
	[ "$(stat -c %s "$MNT/pre")" = $((64 << 20)) ] || fail "the punch changed the size"
	echo "punch of 16 MiB: df $avail0 -> $(df_avail), data.used $used0 -> $(ctl data.used)"
	check_at_rest
	umount_fs
	mount_fs "capacity=256M,meta=8M,cache=16M,commit=0,preempt=0,tenant=q:16M"
	check_at_rest
	umount_fs
	echo "PASS: fallocate"
}

# as_nobody CMD...: run as nobody:nogroup with no supplementary group (not
# the owner of root's files, not in their group).
as_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}

# rss_kb PID: the resident set of a process.
rss_kb() {
	awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status"
}

scenario_semantics() {
	local max rss0 rss1 out mode f=$MNT/f
	command -v python3 >/dev/null || skip "no python3"
	command -v setpriv >/dev/null || skip "no setpriv(1)"
	command -v fallocate >/dev/null || skip "no fallocate(1)"
	# allow_other: the other user of the permission tests (who must be
	# able to reach the mount point, too).
	chmod 0711 "$WORK"
	mount_fs "capacity=256M,meta=8M,cache=16M,commit=0,allow_other"
	chmod 0777 "$MNT"

	# open(O_TRUNC) truncates: libfuse passes the flag on, the kernel
	# does not truncate itself.
	seq 1 5 >"$f"
	echo x >"$f"
	[ "$(cat "$f")" = x ] || fail "O_TRUNC: the file holds $(tr '\n' ' ' <"$f")"
	run sync "$f" || fail "sync FILE"
	seq 1 5 >"$f"
	run sync "$f" || fail "sync FILE"
	echo y >"$f"
	if [ "$(cat "$f")" != y ] || [ "$(stat -c %s "$f")" != 2 ]; then
		fail "O_TRUNC over written-back data: $(tr '\n' ' ' <"$f")"
	fi
	echo "O_TRUNC: 'seq 1 5 > f; echo x > f' leaves x"

	# Huge offsets: refused up front past the largest file, and no
	# memory that grows with the offset.
	max=$(ctl max_file_bytes)
	[ "${max:-0}" -ge $((1 << 40)) ] || fail "max_file_bytes '$max'"
	rss0=$(rss_kb "$PID")
	out=$(run python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
print(os.pwrite(fd, b"a", 4 << 40))
try:
    os.pwrite(fd, b"b", int(sys.argv[2]))
    print("written")
except OSError as e:
    print(os.strerror(e.errno))' "$MNT/sparse" "$max") || fail "pwrite at 4 TiB"
	rss1=$(rss_kb "$PID")
	[ "$(echo "$out" | head -n 1)" = 1 ] || fail "pwrite at 4 TiB: $out"
	[ "$(echo "$out" | tail -n 1)" = "File too large" ] ||
		fail "pwrite at max_file_bytes $max: $out"
	# The dense bitmaps took 64 MiB of daemon memory per TiB of offset.
	[ $((rss1 - rss0)) -lt $((16 << 10)) ] ||
		fail "a write at 4 TiB grew the daemon from $rss0 to $rss1 kB"
	out=$(truncate -s $((max + 1)) "$MNT/sparse" 2>&1) && fail "truncate past $max"
	case $out in *"File too large"*) ;; *) fail "truncate past the limit: $out" ;; esac
	run sync "$MNT/sparse" || fail "fsync after a write at 4 TiB"
	[ "$(ctl writeback_errors)" = 0 ] || fail "writeback errors"
	run rm "$MNT/sparse" || fail "rm sparse"
	echo "huge offsets: 1 byte at 4 TiB: daemon $rss0 -> $rss1 kB; at $max: EFBIG"

	# RENAME_WHITEOUT: the whiteout is accounted, its deletion too.
	echo data >"$MNT/w"
	out=$(run python3 -c 'import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
# renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_WHITEOUT)
r = libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 4)
print("ok" if r == 0 else os.strerror(ctypes.get_errno()))' "$MNT/w" "$MNT/w2") ||
		fail "renameat2"
	[ "$out" = ok ] || fail "renameat2(RENAME_WHITEOUT): $out"
	[ "$(stat -c %F "$MNT/w")" = "character special file" ] || fail "no whiteout"
	check_at_rest
	run rm "$MNT/w" "$MNT/w2" || fail "rm whiteout"
	check_at_rest
	echo "RENAME_WHITEOUT: whiteout and source deleted, accounting exact"

	# Times: a write moves ctime at once, a truncate moves mtime.
	local c0 c1 m0 m1
	echo 0123456789 >"$f"
	run sync "$f" || fail sync
	c0=$(stat -c %Z "$f")
	sleep 1.1
	echo z >>"$f"
	c1=$(stat -c %Z "$f")
	[ "$c1" -gt "$c0" ] || fail "a write did not move ctime ($c0 -> $c1)"
	m0=$(stat -c %Y "$f")
	sleep 1.1
	truncate -s 4 "$f" || fail truncate
	m1=$(stat -c %Y "$f")
	[ "$m1" -gt "$m0" ] || fail "a truncate did not move mtime ($m0 -> $m1)"
	echo "times: write moves ctime ($c0 -> $c1), truncate mtime ($m0 -> $m1)"
	# ... and neither moves again by itself: the times a write showed are
	# those after the remount (getattr writes the file back first).
	local t0 t1
	echo written >"$MNT/times"
	t0=$(stat -c '%y %z' "$MNT/times")

	# The kernel's caches.  A hard link's attributes are not stale after a
	# chmod through the other name (attr_timeout=0).
	echo secret >"$MNT/h"
	chmod 0644 "$MNT/h"
	ln "$MNT/h" "$MNT/hl" || fail "ln"
	as_nobody cat "$MNT/hl" >/dev/null || fail "nobody cannot read a 0644 file"
	chmod a-r "$MNT/h"
	as_nobody cat "$MNT/hl" >/dev/null 2>&1 &&
		fail "nobody read the hard link of a file made unreadable"
	# Buffered reads after asynchronous O_DIRECT writes (no kernel_cache).
	out=$(run "$CLIENT" dio-cycle "$MNT/dio" 640k 5) || fail "dio-cycle"
	echo "dio-cycle: $out"
	[ "$(value stale "$out")" = 0 ] || fail "stale buffered reads after O_DIRECT writes"
	[ "$(value cycles "$out")" -gt 10 ] || fail "dio-cycle ran $out"
	echo "caches: hard link refused after chmod; O_DIRECT then buffered: $out"

	# setuid and setgid: fallocate and a punch by a user who is not in the
	# file's group drop both; root's keep them.
	for op in "-l 128k" "-p -o 0 -l 64k" "-n -o 1M -l 64k"; do
		rm -f "$f"
		head -c 192k /dev/zero >"$f"
		chmod 6666 "$f"
		# shellcheck disable=SC2086 # $op is a list of options
		as_nobody fallocate $op "$f" || fail "fallocate $op as nobody"
		mode=$(stat -c %a "$f")
		[ "$mode" = 666 ] || fail "fallocate $op by nobody left mode $mode"
		chmod 6666 "$f"
		# shellcheck disable=SC2086
		fallocate $op "$f" || fail "fallocate $op as root"
		mode=$(stat -c %a "$f")
		[ "$mode" = 6666 ] || fail "fallocate $op by root left mode $mode"
	done
	echo "setuid/setgid: dropped by another user's fallocate and punch, kept by root's"
	run rm -f "$MNT/h" "$MNT/hl" "$MNT/dio" || fail rm
	check_at_rest
	umount_fs
	mount_fs "capacity=256M,meta=8M,cache=16M,commit=0"
	t1=$(stat -c '%y %z' "$MNT/times")
	[ "$t1" = "$t0" ] || fail "times of a written file: '$t0' before the remount, '$t1' after"
	echo "times after a remount: $t1, as before"
	umount_fs
	echo "PASS: semantics"
}

scenario_descriptors() {
	local src=$WORK/src errs
	command -v prlimit >/dev/null || skip "no prlimit(1)"
	mkdir -p "$src"
	for i in $(seq 300); do
		head -c $((i * 37 % 20000 + 1)) /dev/urandom >"$src/f$i"
	done
	PRE="prlimit --nofile=256" mount_fs "capacity=256M,meta=16M,cache=16M"
	run cp -r "$src" "$MNT/s" || fail "cp into the mount"
	# Two copiers within the mount: each file is a source and a
	# destination descriptor, far more than 256 over the run.
	timeout $T cp -r "$MNT/s" "$MNT/c1" 2>"$WORK/cp1.err" &
	local p1=$!
	timeout $T cp -r "$MNT/s" "$MNT/c2" 2>"$WORK/cp2.err" &
	local p2=$!
	wait $p1
	wait $p2
	errs=$(cat "$WORK/cp1.err" "$WORK/cp2.err" | wc -l)
	head -n 3 "$WORK/cp1.err" "$WORK/cp2.err"
	[ "$errs" = 0 ] || fail "$errs errors from the copiers"
	run diff -r "$src" "$MNT/c1" || fail "copy 1 differs"
	run diff -r "$src" "$MNT/c2" || fail "copy 2 differs"
	[ "$(ctl fd_reclaims)" -ge 1 ] || fail "the descriptor budget was never crossed"
	echo "2 x cp -r of 300 files under 256 descriptors: 0 errors;" \
	     "fd_reclaims $(ctl fd_reclaims), EMFILE retried $(ctl fd_emfile)"
	check_at_rest
	umount_fs
	echo "PASS: descriptors"
}

case "$SCENARIO" in
integrity|fill|quota|nowait|usability|fallocate|semantics|descriptors)
	"scenario_$SCENARIO" ;;
*) echo "unknown scenario $SCENARIO"; exit 2 ;;
esac
