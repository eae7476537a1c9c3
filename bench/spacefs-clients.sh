#!/bin/bash
# SPDX-License-Identifier: MIT
#
# spacefs-clients.sh: the programs people run on a file system, on spacefs,
# ext4 and btrfs side by side, each on a fresh loop image of the same size.
#
#   bench/spacefs-clients.sh [BUILD_DIR] [--quick] [--fs "spacefs ext4 btrfs"]
#                            [--clients "stress-ng dbench ..."]
#
# Clients (one row each per file system; the file systems take turns within
# each client, so a noisy machine slows them alike):
#   stress-ng     dir, dentry, rename, link, symlink, hdd, seek, fallocate,
#                 sync-file stressors at once, --verify; metric: geometric
#                 mean of the stressors' bogo ops/s
#   dbench        2 clients, the default loadfile; MB/s
#   fsmark        fs_mark, 2 threads, 4 KiB files, fsync before close
#                 (its default); files/s
#   postmark      2000 files of 0.5-10 KB, 20000 transactions; tx/s
#   sysbench      fileio: prepare and random read/write with --validate=on,
#                 then, after a remount, a validating sequential read; MiB/s
#   sqlite        sqlite3 CLI, WAL, 1 MiB transactions until the file system
#                 is full; PRAGMA integrity_check then and after a remount;
#                 MB/s until full (a query that cannot open the WAL
#                 database on the >= 95% full file system, as on btrfs, is
#                 run again in EXCLUSIVE locking mode: no -shm file)
#   sqlite-quota  (spacefs) the same into a tenant directory with a quota:
#                 stops at the quota; integrity_check then and after remount
#   rocksdb       db_bench fillrandom,overwrite (4000-byte values, no
#                 compression) until the file system is full (at most 480
#                 s; 600 with --quick), then deleterandom,compact (at most
#                 300 s); ldb checkconsistency and db_bench verifychecksum
#                 then and after a remount; MB/s of the fill
#   git           init, add and commit a tree of 3000 files, git fsck --full
#                 then and after a remount; files/s
#   crash         fio, 2 jobs of 4 KiB random O_SYNC writes with crc32c
#                 verify state; on spacefs the daemon is killed with -9 after
#                 5 s, the file system mounted again on the same backing
#                 tree, and fio --verify_only --verify_state_load checks that
#                 every acknowledged write is there; then the pools must
#                 equal the backing usage (the check command, sfs_client
#                 usage).  ext4 and btrfs are remounted, not crashed
#
# Per row: errors (client failures while the file system was below 95%
# full), bytes stored before the first ENOSPC (the client's files' apparent
# size then), df's available bytes at the start and the ratio of the two,
# the client's metric, its ratio to ext4, integrity (the client's own check,
# and on spacefs the accounting check of every unmount).
# Last line, for spacefs:
#   summary: clients=N errors=E integrity_failures=I lost_fsynced_bytes=L
#            df_truth_min=T dbench_vs_ext4=D
# (one line), T the smallest stored/available ratio over the clients that
# reached ENOSPC.
#
# --quick: 128 MiB images and short runs (the spacefs-clients meson suite,
# spacefs only); exits 77 where root, FUSE or the client is missing, 1 if
# spacefs had an error, an integrity failure or lost bytes.
#
# Images go in SPACEFS_BENCH_DIR (default /var/tmp) after checking it has
# room for them; every mount, loop device and image is removed on any exit.
#
# Environment: SPACEFS (the binary, default BUILD_DIR/examples/spacefs/
# spacefs), SFS_CLIENT (default BUILD_DIR/tests/spacefs/sfs_client),
# SPACEFS_BENCH_DIR, KEEP=1 (keep the work directory, unmounted),
# FUSE_PASSTHROUGH (a build of libfuse's example/passthrough.c: the file
# system "passthrough" in --fs, the same FUSE path without spacefs, on an
# ext4 image like spacefs's backing tree: what FUSE itself costs).
set -u

BUILD=build
QUICK=0
FSES="spacefs ext4 btrfs"
CLIENTS="stress-ng dbench fsmark postmark sysbench sqlite sqlite-quota rocksdb git crash"
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--fs) FSES=$2; shift ;;
	--clients) CLIENTS=$2; shift ;;
	-h|--help) sed -n '3,66p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	--version)
		sed -n "s/^  version: '\\([^']*\\)',\$/spacefs-clients.sh (libspacersv) \\1/p" \
			"$(dirname "$0")/../meson.build"
		exit 0 ;;
	-*) echo "spacefs-clients: unknown option $1" >&2; exit 2 ;;
	*) BUILD=$1 ;;
	esac
	shift
done
SPACEFS=${SPACEFS:-$BUILD/examples/spacefs/spacefs}
SFS_CLIENT=${SFS_CLIENT:-$BUILD/tests/spacefs/sfs_client}
BASE=${SPACEFS_BENCH_DIR:-/var/tmp}

if [ $QUICK = 1 ]; then
	SIZE=$((128 << 20)) T=3 QUOTA=16M GIT_FILES=300 PM_FILES=500
	PM_TX=2000 FSM_FILES=200 CRASH_AFTER=3 CRASH_MB=16
	ROCKS_FILL_S=600 ROCKS_DEL_S=600
else
	SIZE=$((2 << 30)) T=15 QUOTA=128M GIT_FILES=3000 PM_FILES=2000
	PM_TX=20000 FSM_FILES=2000 CRASH_AFTER=5 CRASH_MB=64
	ROCKS_FILL_S=480 ROCKS_DEL_S=300
fi
# Time limits of RocksDB's phases (seconds): a fill that has not reached
# ENOSPC by then is stopped (SIGTERM) and its row has no stored figure;
# the database must still reopen and verify (crash recovery of its WAL).

# Missing prerequisites: a skip (77) in the quick suite, an error otherwise.
missing() {
	echo "spacefs-clients: SKIP: $*"
	[ $QUICK = 1 ] && exit 77
	exit 1
}
[ "$(id -u)" = 0 ] || missing "not root (loop devices, mounts)"
for c in losetup mkfs.ext4 mountpoint df du python3 timeout; do
	command -v $c >/dev/null || missing "no $c"
done
case " $FSES " in *" spacefs "*)
	[ -c /dev/fuse ] || missing "no /dev/fuse"
	command -v fusermount3 >/dev/null || missing "no fusermount3"
	[ -x "$SPACEFS" ] || missing "no spacefs binary at $SPACEFS"
esac
case " $FSES " in *" passthrough "*)
	[ -x "${FUSE_PASSTHROUGH:-}" ] || missing "FUSE_PASSTHROUGH is not a program"
esac
case " $FSES " in *" btrfs "*)
	command -v mkfs.btrfs >/dev/null || missing "no mkfs.btrfs"
esac
need_tool() {
	case $1 in
	stress-ng) echo stress-ng ;;
	dbench) echo dbench ;;
	fsmark) echo fs_mark ;;
	postmark) echo postmark ;;
	sysbench) echo sysbench ;;
	sqlite|sqlite-quota) echo sqlite3 ;;
	rocksdb) echo "db_bench ldb" ;;
	git) echo git ;;
	crash) echo fio ;;
	*) echo "spacefs-clients: unknown client $1" >&2; exit 2 ;;
	esac
}
for c in $CLIENTS; do
	for t in $(need_tool "$c"); do
		command -v "$t" >/dev/null || missing "no $t (client $c)"
	done
done

WORK=$(mktemp -d "$BASE/spacefs-clients.XXXXXX") || exit 1
# Room for the three images at once, plus a margin: never fill $BASE.
avail=$(df -B1 --output=avail "$WORK" | tail -n 1 | tr -d ' ')
if [ "$avail" -lt $((SIZE * 4 + (1 << 30))) ]; then
	rmdir "$WORK"
	echo "spacefs-clients: $BASE has $avail bytes free, needs $((SIZE * 4 + (1 << 30)))" >&2
	exit 1
fi
# Mount points under a short path: fs_mark takes directories of less than
# 40 bytes.
MROOT=$(mktemp -d /tmp/sfc.XXXXXX) || { rmdir "$WORK"; exit 1; }
LOOPS=
MOUNTED=
DPID=
LOG=$WORK/spacefs.log

cleanup() {
	local m l
	if [ -n "$DPID" ] && mountpoint -q "$MROOT/spacefs" 2>/dev/null; then
		timeout 120 "$SPACEFS" --unmount "$MROOT/spacefs" >/dev/null 2>&1
	fi
	for m in $MOUNTED; do
		if mountpoint -q "$m"; then
			umount "$m" 2>/dev/null || fusermount3 -u "$m" 2>/dev/null ||
				umount -l "$m" 2>/dev/null
		fi
	done
	[ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
	for l in $LOOPS; do
		losetup -d "$l" 2>/dev/null
	done
	if [ "${KEEP:-0}" = 1 ]; then
		rm -f "$WORK"/*.img
		echo "kept $WORK"
	else
		rm -rf "$WORK"
	fi
	for m in "$MROOT"/*; do
		mountpoint -q "$m" 2>/dev/null || rmdir "$m" 2>/dev/null
	done
	rmdir "$MROOT" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 1' INT TERM

log() {
	echo "$*" >&2
}

# ---- file systems ----

# mkimg NAME SIZE FSTYPE DIR: a fresh loop image with a file system, mounted.
mkimg() {
	local img=$WORK/$1.img dev
	rm -f "$img"
	truncate -s "$2" "$img" || return 1
	dev=$(losetup -f --show "$img") || return 1
	LOOPS="$LOOPS $dev"
	case $3 in
	ext4) mkfs.ext4 -q -F "$dev" >/dev/null || return 1 ;;
	btrfs) mkfs.btrfs -q -f "$dev" >/dev/null || return 1 ;;
	esac
	mkdir -p "$4"
	mount "$dev" "$4" || return 1
	MOUNTED="$4 $MOUNTED"
	eval "DEV_$1=$dev"
}

# rmimg NAME DIR
rmimg() {
	local dev
	eval "dev=\${DEV_$1:-}"
	if mountpoint -q "$2"; then
		umount "$2" || umount -l "$2"
	fi
	[ -n "$dev" ] && losetup -d "$dev"
	LOOPS=${LOOPS/ $dev/}
	rm -f "$WORK/$1.img"
}

SPACEFS_OPTS=
# spacefs_mount: the daemon (no -f: daemon mode, log=) on the backing tree.
spacefs_mount() {
	"$SPACEFS" "$MROOT/spacefs" -o "backing=$MROOT/back/tree,capacity=$SIZE,log=$LOG$SPACEFS_OPTS" ||
		return 1
	mountpoint -q "$MROOT/spacefs" || return 1
	DPID=$(awk '$1 == "pid" { print $2 }' "$MROOT/spacefs/.spacefs")
}

# spacefs_unmount: unmount, wait, and the accounting result (status).
spacefs_unmount() {
	local out
	out=$(timeout 300 "$SPACEFS" --unmount "$MROOT/spacefs" 2>&1)
	local rc=$?
	DPID=
	[ $rc = 0 ] || log "spacefs unmount: $out"
	return $rc
}

# fs_up FS: a fresh, empty file system of SIZE at $MROOT/FS.
fs_up() {
	MNT=$MROOT/$1
	case $1 in
	ext4|btrfs)
		mkimg "$1" "$SIZE" "$1" "$MNT" || return 1 ;;
	spacefs)
		# The backing tree on its own ext4 image, a quarter larger than
		# the capacity: spacefs, not the backing store, says ENOSPC.
		mkimg back $((SIZE * 5 / 4)) ext4 "$MROOT/back" || return 1
		mkdir -p "$MROOT/back/tree" "$MNT"
		MOUNTED="$MNT $MOUNTED"
		spacefs_mount || return 1 ;;
	passthrough)
		mkimg pback $((SIZE * 5 / 4)) ext4 "$MROOT/pback" || return 1
		mkdir -p "$MROOT/pback/tree" "$MNT"
		MOUNTED="$MNT $MOUNTED"
		"$FUSE_PASSTHROUGH" "$MNT" -o "modules=subdir,subdir=$MROOT/pback/tree" ||
			return 1 ;;
	esac
	mkdir -p "$MNT/w"
	sync "$MNT" 2>/dev/null
}

# fs_remount FS: unmount and mount again (spacefs: the accounting check).
fs_remount() {
	case $1 in
	ext4|btrfs)
		umount "$MNT" || return 1
		eval "mount \$DEV_$1 \"\$MNT\"" || return 1 ;;
	spacefs)
		spacefs_unmount || { R_INTEG="FAIL(accounting)"; }
		spacefs_mount || return 1 ;;
	passthrough)
		fusermount3 -u "$MNT" || return 1
		"$FUSE_PASSTHROUGH" "$MNT" -o "modules=subdir,subdir=$MROOT/pback/tree" ||
			return 1 ;;
	esac
}

# fs_down FS
fs_down() {
	case $1 in
	ext4|btrfs) rmimg "$1" "$MNT" ;;
	spacefs)
		spacefs_unmount || R_INTEG="FAIL(accounting)"
		rmimg back "$MROOT/back" ;;
	passthrough)
		fusermount3 -u "$MNT"
		sleep 1
		rmimg pback "$MROOT/pback" ;;
	esac
}

df_avail() {
	df -B1 --output=avail "$1" | tail -n 1 | tr -d ' '
}

# below95 DIR: the file system is less than 95% full.
below95() {
	df -B1 --output=used,avail "$1" | tail -n 1 |
		awk '{ exit !($1 < 0.95 * ($1 + $2)) }'
}

# stored DIR: apparent size of what the client stored.
stored() {
	du -sb --apparent-size "$1" 2>/dev/null | cut -f1
}

now() {
	date +%s.%N
}

# fail_client WHAT: a client failure; an error unless the file system is
# 95% full or more.
fail_client() {
	if below95 "$MNT"; then
		R_ERR=$((R_ERR + 1))
		log "  error: $*"
	else
		log "  (at >= 95% full: $*)"
	fi
}

integ_fail() {
	R_INTEG="FAIL($1)"
	log "  integrity: $1"
}

# ---- clients: each sets R_ERR, R_STORED, R_METRIC, R_UNIT, R_INTEG,
# R_LOST; $MNT/w is their directory ----

client_stress_ng() {
	local out rc
	out=$(timeout $((T * 4 + 120)) stress-ng --dir 1 --dentry 1 --rename 1 \
		--link 1 --symlink 1 --hdd 1 --hdd-bytes 64M --seek 1 \
		--seek-size 64M --fallocate 1 --fallocate-bytes 64M \
		--sync-file 1 --sync-file-bytes 64M --verify -t "${T}s" \
		--temp-path "$MNT/w" --metrics-brief 2>&1)
	rc=$?
	echo "$out" >"$WORK/stress-ng.$FS.log"
	[ $rc = 0 ] || fail_client "stress-ng exit $rc: $(echo "$out" | grep -iE "fail|error" | head -3)"
	if echo "$out" | grep -qiE "verif.*(fail|mismatch)|data mismatch"; then
		integ_fail "stress-ng verify"
	fi
	R_METRIC=$(echo "$out" | awk '/metrc:/ && $5 ~ /^[0-9.]+$/ && $9 ~ /^[0-9.]+$/ && $9 > 0 { s += log($9); n++ } END { if (n) printf "%.1f", exp(s / n); else print 0 }')
	R_UNIT="bogo-ops/s(gmean)"
}

client_dbench() {
	local out rc
	out=$(cd "$MNT/w" && timeout $((T + 120)) dbench -D "$MNT/w" -t "$T" 2 2>&1)
	rc=$?
	echo "$out" >"$WORK/dbench.$FS.log"
	[ $rc = 0 ] || fail_client "dbench exit $rc: $(echo "$out" | grep -iE "error|fail" | head -3)"
	R_METRIC=$(echo "$out" | awk '/^Throughput/ { print $2 }')
	R_METRIC=${R_METRIC:-0}
	R_UNIT=MB/s
}

client_fsmark() {
	local out rc
	# (in $WORK: fs_mark writes fs_log.txt into its working directory)
	out=$(cd "$WORK" && timeout $((T * 8 + 300)) fs_mark -d "$MNT/w/fsm" -s 4096 \
		-n "$FSM_FILES" -t 2 -L 3 2>&1)
	rc=$?
	echo "$out" >"$WORK/fsmark.$FS.log"
	[ $rc = 0 ] || fail_client "fs_mark exit $rc: $(echo "$out" | tail -n 3)"
	R_METRIC=$(echo "$out" | awk '$1 ~ /^[0-9]+$/ && NF == 5 { s += $4; n++ } END { if (n) printf "%.1f", s / n; else print 0 }')
	R_UNIT=files/s
}

client_postmark() {
	local out rc
	mkdir -p "$MNT/w/pm"
	out=$(printf 'set location %s\nset number %s\nset transactions %s\nset size 500 10000\nrun\nquit\n' \
		"$MNT/w/pm" "$PM_FILES" "$PM_TX" | (cd "$WORK" && timeout 600 postmark) 2>&1)
	rc=$?
	echo "$out" >"$WORK/postmark.$FS.log"
	[ $rc = 0 ] || fail_client "postmark exit $rc"
	echo "$out" | grep -qiE "error|cannot|fail" &&
		fail_client "postmark: $(echo "$out" | grep -iE "error|cannot|fail" | head -2)"
	R_METRIC=$(echo "$out" | awk '/seconds of transactions/ { gsub(/\(/, "", $5); print $5 }')
	R_METRIC=${R_METRIC:-0}
	R_UNIT=tx/s
}

client_sysbench() {
	local out rc size=$((SIZE / 8)) sb
	sb=(sysbench fileio --file-total-size=$size --file-num=16 --validate=on)
	mkdir -p "$MNT/w/sb"
	out=$(cd "$MNT/w/sb" && timeout 600 "${sb[@]}" prepare 2>&1) ||
		fail_client "sysbench prepare: $(echo "$out" | tail -n 2)"
	out=$(cd "$MNT/w/sb" && timeout $((T + 300)) "${sb[@]}" --file-test-mode=rndrw \
		--time="$T" --threads=2 run 2>&1)
	rc=$?
	echo "$out" >"$WORK/sysbench.$FS.log"
	[ $rc = 0 ] || fail_client "sysbench run exit $rc: $(echo "$out" | grep FATAL | head -2)"
	echo "$out" | grep -q "FATAL: .*[Cc]hecksum" && integ_fail "sysbench checksum"
	R_METRIC=$(echo "$out" | awk '/read, MiB\/s:/ { r = $3 } /written, MiB\/s:/ { w = $3 } END { printf "%.2f", r + w }')
	R_UNIT=MiB/s
	fs_remount "$FS" || { integ_fail remount; return; }
	out=$(cd "$MNT/w/sb" && timeout $((T + 300)) "${sb[@]}" --file-test-mode=seqrd \
		--time="$T" run 2>&1)
	rc=$?
	echo "$out" >>"$WORK/sysbench.$FS.log"
	if [ $rc != 0 ] || echo "$out" | grep -q FATAL; then
		integ_fail "sysbench seqrd after remount"
	fi
}

# sqlite_fill DIR LIMIT_MIB: 1 MiB transactions until an error; prints
# "error" (the message or none) and leaves the db in DIR.
sqlite_fill() {
	local dir=$1 n=$2 script=$WORK/fill.sql
	mkdir -p "$dir"
	{
		echo ".bail on"
		echo "PRAGMA journal_mode=WAL;"
		echo "CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, b BLOB);"
		for _ in $(seq "$n"); do
			echo "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 256) INSERT INTO t(b) SELECT randomblob(4000) FROM c;"
		done
	} >"$script"
	timeout 1800 sqlite3 "$dir/db.sqlite" <"$script" 2>&1 >/dev/null | head -n 3
}

# sq DB SQL: sqlite3's output.  Opening a WAL database (re)initialises its
# wal-index (DB-shm: truncated to 3 bytes, then a byte written at the end of
# its first page), which on a 100% full btrfs may fail with ENOSPC (copy on
# write: even that byte needs a new block; seen before and after the
# remount): "disk I/O error".  At >= 95% full that is not an error (the
# script's rule) and the query is run again in EXCLUSIVE locking mode,
# which keeps the wal-index in memory (and the "exclusive" the pragma
# prints is dropped).
sq() {
	local out rc
	out=$(timeout 600 sqlite3 "$1" "$2" 2>&1)
	rc=$?
	if [ $rc != 0 ] && ! below95 "$MNT"; then
		log "  (at >= 95% full: sqlite3 \"$2\": exit $rc: $(echo "$out" | head -n 1); again in EXCLUSIVE locking mode)"
		out=$(timeout 600 sqlite3 -cmd "PRAGMA locking_mode=EXCLUSIVE;" "$1" "$2" 2>&1)
		rc=$?
		out=$(echo "$out" | sed '1{/^exclusive$/d}')
	fi
	echo "$out"
	return $rc
}

# sqlite_check DIR WHEN: PRAGMA integrity_check must say ok.
sqlite_check() {
	local r rc t0
	t0=$(now)
	r=$(sq "$1/db.sqlite" "PRAGMA integrity_check;")
	rc=$?
	log "  sqlite integrity_check$2: exit $rc after $(awk -v a="$t0" -v z="$(now)" 'BEGIN { printf "%.1f", z - a }') s: $(echo "$r" | head -n 3 | tr '\n' ' ')"
	[ "$r" = ok ] || { integ_fail "sqlite integrity_check$2: exit $rc: $(echo "$r" | head -n 3)"; return 1; }
	return 0
}

client_sqlite() {
	local t0 t1 err rows
	t0=$(now)
	err=$(sqlite_fill "$MNT/w/sq" $((SIZE * 3 / 2 >> 20)))
	t1=$(now)
	R_STORED=$(stored "$MNT/w/sq")
	log "  sqlite: ${err:-no error}; stored $R_STORED"
	case $err in
	*"disk is full"*) R_ENOSPC=1 ;;
	*) fail_client "sqlite: ${err:-filled 1.5x the capacity without ENOSPC}" ;;
	esac
	R_METRIC=$(awk -v b="$R_STORED" -v a="$t0" -v z="$t1" 'BEGIN { printf "%.2f", b / 1e6 / (z - a) }')
	R_UNIT=MB/s
	sqlite_check "$MNT/w/sq" "" || return
	rows=$(sq "$MNT/w/sq/db.sqlite" "SELECT count(*) FROM t;")
	fs_remount "$FS" || { integ_fail remount; return; }
	sqlite_check "$MNT/w/sq" " after remount" || return
	[ "$(sq "$MNT/w/sq/db.sqlite" "SELECT count(*) FROM t;")" = "$rows" ] ||
		integ_fail "sqlite rows after remount"
	log "  sqlite rows: $rows, the same after the remount"
}

client_sqlite_quota() {
	local err
	if [ "$FS" != spacefs ]; then
		R_INTEG=-
		return
	fi
	err=$(sqlite_fill "$MNT/q" $((SIZE >> 20)))
	R_STORED=$(stored "$MNT/q")
	log "  sqlite in tenant q ($QUOTA): ${err:-no error}; stored $R_STORED"
	case $err in
	*"disk I/O error"*|*"disk is full"*) ;;
	*) R_ERR=$((R_ERR + 1)); log "  error: the quota did not stop sqlite: $err" ;;
	esac
	R_METRIC=-
	sqlite_check "$MNT/q" "" || return
	fs_remount "$FS" || { integ_fail remount; return; }
	sqlite_check "$MNT/q" " after remount"
}

client_rocksdb() {
	local t0 t1 out rc num=$((SIZE * 3 / 2 / 4016)) db=$MNT/w/rdb
	local opts=(--db="$db" --value_size=4000 --compression_type=none
		    --num="$num" --threads=1 --write_buffer_size=$((16 << 20)))
	# A ballast file of a sixteenth of the size, deleted once the
	# database has filled the rest: nothing reopens on a file system
	# with no byte left (RocksDB writes a new MANIFEST and WAL at open),
	# so after the ENOSPC the "administrator" frees some space.
	dd if=/dev/zero of="$MNT/w/ballast" bs=1M count=$((SIZE >> 24)) \
		conv=fsync status=none || { fail_client "ballast"; return; }
	AVAIL0=$(df_avail "$MNT")
	t0=$(now)
	out=$(timeout "$ROCKS_FILL_S" db_bench "${opts[@]}" --benchmarks=fillrandom,overwrite 2>&1)
	rc=$?
	t1=$(now)
	R_STORED=$(stored "$db")
	echo "$out" >"$WORK/rocksdb.$FS.log"
	log "  db_bench fill: exit $rc, $(echo "$out" | grep -iE "error|No space|Assertion" | head -n 1 | cut -c1-200); stored $R_STORED, df available then $(df_avail "$MNT")"
	if echo "$out" | grep -q "No space left on device"; then
		R_ENOSPC=1
	elif [ $rc = 124 ]; then
		log "  (db_bench fill stopped at the ${ROCKS_FILL_S} s limit without ENOSPC, $(df_avail "$MNT") bytes available)"
	elif [ $rc = 134 ] && echo "$out" | grep -q "sync_without_flush_called_" &&
	     ! below95 "$MNT"; then
		# RocksDB 7.8's own assertion on the write after a failed
		# one (WritableFileWriter): its answer to ENOSPC in this
		# build, as on btrfs.
		R_ENOSPC=1
		log "  (db_bench aborted on its assertion after a failed write, file system full)"
	else
		fail_client "db_bench fill exit $rc without ENOSPC: $(echo "$out" | grep -iE "error|Assertion" | head -n 2 | cut -c1-200)"
	fi
	rm -f "$MNT/w/ballast"
	sync "$MNT" 2>/dev/null
	R_METRIC=$(awk -v b="$R_STORED" -v a="$t0" -v z="$t1" 'BEGIN { printf "%.2f", b / 1e6 / (z - a) }')
	R_UNIT=MB/s
	# Deletes and compaction on the full file system.
	out=$(timeout "$ROCKS_DEL_S" db_bench "${opts[@]}" --use_existing_db=1 \
		--num=$((num / 2)) --benchmarks=deleterandom,compact 2>&1)
	rc=$?
	echo "$out" >>"$WORK/rocksdb.$FS.log"
	if [ $rc = 124 ]; then
		log "  deleterandom,compact: stopped at the ${ROCKS_DEL_S} s limit"
	elif [ $rc != 0 ]; then
		if echo "$out" | grep -q "No space left on device"; then
			log "  deleterandom,compact: ENOSPC on the full file system"
		else
			fail_client "deleterandom,compact exit $rc: $(echo "$out" | grep -iE "error|Assertion" | head -n 2 | cut -c1-200)"
		fi
	fi
	rocksdb_check "$db" "" || return
	fs_remount "$FS" || { integ_fail remount; return; }
	rocksdb_check "$db" " after remount"
}

rocksdb_check() {
	local out
	out=$(timeout 900 ldb --db="$1" checkconsistency 2>&1)
	[ "$out" = OK ] || { integ_fail "ldb checkconsistency$2: $(echo "$out" | head -n 2)"; return 1; }
	# Read-only: a database on a full file system must still verify.
	out=$(timeout 900 db_bench --db="$1" --use_existing_db=1 --readonly=1 \
		--benchmarks=verifychecksum 2>&1)
	if [ $? != 0 ] || echo "$out" | grep -qiE "corrupt|mismatch"; then
		integ_fail "db_bench verifychecksum$2: $(echo "$out" | grep -iE "error|corrupt|Assertion" | head -n 2 | cut -c1-160)"
		return 1
	fi
	return 0
}

GIT_SRC=
client_git() {
	local t0 t1 g=(git -c user.name=bench -c user.email=bench@localhost -c gc.auto=0)
	if [ -z "$GIT_SRC" ]; then
		GIT_SRC=$WORK/gitsrc
		python3 - "$GIT_SRC" "$GIT_FILES" <<'EOF'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(1)
for i in range(n):
    d = os.path.join(root, "d%02d" % (i % 30), "s%d" % (i % 7))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d.txt" % i), "w") as f:
        f.write("".join(rnd.choice("abcdefgh \n") for _ in range(rnd.randint(50, 4000))))
EOF
	fi
	cp -r "$GIT_SRC" "$MNT/w/repo" || { fail_client "cp of the tree"; return; }
	t0=$(now)
	(cd "$MNT/w/repo" && "${g[@]}" init -q && "${g[@]}" add -A &&
		"${g[@]}" commit -qm "a tree of $GIT_FILES files") ||
		fail_client "git init/add/commit"
	t1=$(now)
	R_METRIC=$(awk -v n="$GIT_FILES" -v a="$t0" -v z="$t1" 'BEGIN { printf "%.1f", n / (z - a) }')
	R_UNIT=files/s
	(cd "$MNT/w/repo" && timeout 600 git fsck --full --strict 2>&1) >"$WORK/git.$FS.log" ||
		{ integ_fail "git fsck"; return; }
	fs_remount "$FS" || { integ_fail remount; return; }
	(cd "$MNT/w/repo" && timeout 600 git fsck --full --strict 2>&1) >>"$WORK/git.$FS.log" ||
		integ_fail "git fsck after remount"
	[ "$(cd "$MNT/w/repo" && git status --porcelain | wc -l)" = 0 ] ||
		integ_fail "git status after remount: the tree changed"
}

client_crash() {
	local out rc bad usage data
	local job=(--name=crash --directory="$MNT/w" --rw=randwrite --bs=4k
		   --size=${CRASH_MB}m --numjobs=2 --ioengine=psync --sync=1 --fallocate=none
		   --randrepeat=1 --verify=crc32c --filename_format='crash.$jobnum'
		   --group_reporting=1)
	mkdir -p "$WORK/crash.$FS"
	# Lay the files out first (fio would write them whole before the
	# job), and commit: the crash comes in the random O_SYNC writes.
	# (dd: fio's own layout gives up when fallocate() is not supported.)
	for j in 0 1; do
		dd if=/dev/zero of="$MNT/w/crash.$j" bs=1M count=$CRASH_MB \
			conv=fsync status=none ||
			{ R_ERR=$((R_ERR + 1)); log "  error: layout"; return; }
	done
	: >"$WORK/crash.$FS.log"
	if [ "$FS" = spacefs ]; then
		(cd "$WORK/crash.$FS" && timeout 600 fio "${job[@]}" --do_verify=0 \
			--verify_state_save=1 >>"$WORK/crash.$FS.log" 2>&1) &
		local fpid=$!
		sleep "$CRASH_AFTER"
		kill -9 "$DPID"
		DPID=
		wait $fpid
		log "  killed spacefs -9 after ${CRASH_AFTER} s of fio: $(grep -E "WRITE:|err=" "$WORK/crash.$FS.log" | head -n 2 | tr -s ' ' | tr '\n' ' ')"
		# The dead mount: unmount it, mount the same backing tree.
		fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
		spacefs_mount || { integ_fail "remount after kill -9"; return; }
	else
		(cd "$WORK/crash.$FS" && timeout 600 fio "${job[@]}" --do_verify=0 \
			--verify_state_save=1 >>"$WORK/crash.$FS.log" 2>&1) ||
			fail_client "fio"
		fs_remount "$FS" || { integ_fail remount; return; }
	fi
	out=$(cd "$WORK/crash.$FS" && timeout 600 fio "${job[@]}" --verify_only \
		--verify_state_load=1 2>&1)
	rc=$?
	echo "$out" >>"$WORK/crash.$FS.log"
	bad=$(echo "$out" | grep -cE "verify: bad|verify failed|bad magic|crc32c: verify")
	R_LOST=$((bad * 4096))
	if [ $rc != 0 ] || [ "$bad" != 0 ]; then
		integ_fail "fio verify after the crash: exit $rc, $bad bad blocks"
	fi
	R_METRIC=$(echo "$out" | awk '/READ:/ { print; exit }' | sed -n 's/.*io=\([^ ]*\) .*/\1/p')
	R_METRIC=${R_METRIC:--}
	R_UNIT="verified"
	log "  acknowledged before the kill: $(grep -E "WRITE:" "$WORK/crash.$FS.log" | sed -n 's/.*io=\([^ ]*\) .*/\1/p' | head -n 1); verified after: $R_METRIC"
	if [ "$FS" = spacefs ]; then
		echo check >"$MNT/.spacefs" 2>/dev/null
		[ "$(awk '$1 == "check" { print $2 }' "$MNT/.spacefs")" = ok ] ||
			integ_fail "pools != engine after the crash"
		if [ -x "$SFS_CLIENT" ]; then
			usage=$("$SFS_CLIENT" usage "$MROOT/back/tree")
			data=${usage#data=}
			data=${data%% *}
			[ "$(awk '$1 == "data.used" { print $2 }' "$MNT/.spacefs")" = "$data" ] ||
				integ_fail "data.used != backing usage $data after the crash"
			log "  after the crash: check ok, data.used = backing usage ($data)"
		fi
	fi
}

# ---- the run ----

declare -A ROW METRIC
printf "%-13s %-8s %6s %12s %12s %7s %12s %-18s %8s  %s\n" client fs errors \
	stored_ENOSPC df_avail0 ratio metric unit vs_ext4 integrity
for client in $CLIENTS; do
	for FS in $FSES; do
		R_ERR=0 R_STORED=- R_METRIC=0 R_UNIT=- R_INTEG=ok R_LOST=- R_ENOSPC=0
		SPACEFS_OPTS=
		[ "$client" = sqlite-quota ] && SPACEFS_OPTS=",tenant=q:$QUOTA"
		if [ "$client" = sqlite-quota ] && [ "$FS" != spacefs ]; then
			ROW[$client.$FS]="- - - - - - - -"
			continue
		fi
		log "== $client on $FS"
		if ! fs_up "$FS"; then
			log "  cannot set up $FS"
			R_INTEG="FAIL(setup)"
			ROW[$client.$FS]="1 - - - 0 - - $R_INTEG"
			continue
		fi
		AVAIL0=$(df_avail "$MNT")
		"client_${client//-/_}"
		fs_down "$FS"
		[ "$R_ENOSPC" = 1 ] || R_STORED=-
		METRIC[$client.$FS]=$R_METRIC
		ROW[$client.$FS]="$R_ERR $R_STORED $AVAIL0 $R_METRIC $R_UNIT $R_LOST $R_INTEG"
		log "  $client $FS: errors=$R_ERR stored=$R_STORED avail0=$AVAIL0 metric=$R_METRIC $R_UNIT lost=$R_LOST integrity=$R_INTEG"
	done
done

ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.3f", a / b; else print "-" }'
}

echo
printf "%-13s %-8s %6s %12s %12s %7s %12s %-18s %8s  %s\n" client fs errors \
	stored_ENOSPC df_avail0 ratio metric unit vs_ext4 integrity
for FS in $FSES; do
	N=0 E=0 I=0 L=0 TMIN=- D=-
	for client in $CLIENTS; do
		read -r err st av met unit lost integ <<<"${ROW[$client.$FS]}"
		[ "$err" = - ] && continue
		r=$(ratio "$st" "$av")
		v=$(ratio "$met" "${METRIC[$client.ext4]:-}")
		printf "%-13s %-8s %6s %12s %12s %7s %12s %-18s %8s  %s\n" \
			"$client" "$FS" "$err" "$st" "$av" "$r" "$met" "$unit" "$v" "$integ"
		N=$((N + 1))
		E=$((E + err))
		[ "$integ" = ok ] || [ "$integ" = - ] || I=$((I + 1))
		[ "$lost" = - ] || L=$((L + lost))
		if [ "$r" != - ]; then
			TMIN=$(awk -v a="$TMIN" -v b="$r" 'BEGIN { print (a == "-" || b < a) ? b : a }')
		fi
		[ "$client" = dbench ] && D=$v
		[ "$client" = fsmark ] && eval "FSM_$FS=$v"
	done
	eval "SUM_$FS=\"clients=$N errors=$E integrity_failures=$I lost_fsynced_bytes=$L df_truth_min=$TMIN dbench_vs_ext4=$D\""
done
echo
for FS in $FSES; do
	[ "$FS" = spacefs ] && continue
	eval "echo \"$FS: \$SUM_$FS fsmark_vs_ext4=\${FSM_$FS:--}\""
done
case " $FSES " in *" spacefs "*)
	echo "spacefs: fsmark_vs_ext4=${FSM_spacefs:--}"
	echo "summary: $SUM_spacefs"
	if [ $QUICK = 1 ]; then
		case $SUM_spacefs in
		*" errors=0 integrity_failures=0 lost_fsynced_bytes=0 "*) exit 0 ;;
		*) exit 1 ;;
		esac
	fi
esac
exit 0
