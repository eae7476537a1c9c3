#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Runs examples/nowait_uring briefly and checks what it reports:
# the file verified (headers, CRC-32C, pools and quota matching the file),
# every write counted once as inline or punted, and each path taken where
# the configuration forces it.  Exit 77 (skip) when io_uring is unavailable.
#
# Usage: test_nowait_uring.sh path/to/nowait_uring
set -u
case ${1:-} in
-h|--help) sed -n '3,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
--version)
	sed -n "s/^  version: '\\([^']*\\)',\$/test_nowait_uring.sh (libspacersv) \\1/p" \
		"$(dirname "$0")/../meson.build"
	exit 0 ;;
esac

exe=${1:?usage: $0 path/to/nowait_uring}
out=$(mktemp "${TMPDIR:-/tmp}/test_nowait_uring.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT INT TERM
fails=0

# field NAME: the number after "NAME: " on the "writes:" line.
field() {
	sed -n "s/^writes:.*[ (]$1: \([0-9][0-9]*\).*/\1/p" "$out" | head -n 1
}

# run LABEL ARGS...: runs the example; exits 77 on skip; returns 1 if it
# failed or did not verify.
run() {
	label=$1
	shift
	"$exe" "$@" >"$out" 2>&1
	rc=$?
	if [ "$rc" -eq 77 ]; then
		cat "$out"
		echo "SKIP: io_uring unavailable"
		exit 77
	fi
	if [ "$rc" -ne 0 ] || ! grep -q '^verify: ok' "$out"; then
		echo "FAIL [$label]: exit $rc, file not verified"
		cat "$out"
		return 1
	fi
	writes=$(sed -n 's/^writes: \([0-9][0-9]*\) .*/\1/p' "$out")
	inl=$(field inline)
	punted=$(field punted)
	forced=$(field forced)
	if [ -z "$writes" ] || [ -z "$inl" ] || [ -z "$punted" ] ||
	   [ $((inl + punted)) -ne "$writes" ]; then
		echo "FAIL [$label]: inline + punted != writes"
		cat "$out"
		return 1
	fi
	# Every write's reservation ends exactly once: finished by
	# writeback, or released because a newer version superseded it.
	wb=$(sed -n 's/^writeback: \([0-9][0-9]*\) writes finished.*/\1/p' "$out")
	sup=$(sed -n 's/^writeback:.* \([0-9][0-9]*\) superseded.*/\1/p' "$out")
	commits=$(sed -n 's/^writeback:.*commits: \([0-9][0-9]*\).*/\1/p' "$out")
	if [ -z "$wb" ] || [ -z "$sup" ] || [ -z "$commits" ] ||
	   [ $((wb + sup)) -ne "$writes" ]; then
		echo "FAIL [$label]: finished + superseded != writes"
		cat "$out"
		return 1
	fi
	echo "ok [$label]: writes=$writes inline=$inl punted=$punted" \
	     "forced=$forced finished=$wb superseded=$sup commits=$commits"
	return 0
}

# 1. Without preemptive flushing nothing is written back until a punted
#    write waits on a ticket, so once the 4 MiB metadata pool holds 16
#    writes' reservations (256 KiB each) the next NOWAIT reservation must
#    be -EAGAIN: punts are certain, and the first writes are inline.
if run no-preempt --blocks 1024 --no-preempt; then
	if [ "$inl" -lt 1 ] || [ "$(field 'library -EAGAIN')" -lt 1 ]; then
		echo "FAIL [no-preempt]: expected inline writes and library -EAGAIN punts"
		cat "$out"
		fails=$((fails + 1))
	fi
else
	fails=$((fails + 1))
fi

# 2. Default flushing, 4 writes in flight, 40 passes over 64 blocks: each
#    overwrite pins the old version until a commit, and the DATA pool has
#    4 MiB (1024 blocks) beyond the file, so the 2496 overwrites cannot
#    all be pinned at once: at least two commits during the run, plus the
#    final one.
if run overwrite --blocks 64 --passes 40 --qd 4; then
	if [ "$commits" -lt 3 ]; then
		echo "FAIL [overwrite]: expected at least 3 commits"
		cat "$out"
		fails=$((fails + 1))
	fi
else
	fails=$((fails + 1))
fi

# 3. 16 blocks rewritten 100 times with 8 writes in flight: versions are
#    superseded while dirty (their reservations released, not finished).
run rewrite --blocks 16 --passes 100 --qd 8 --meta-mib 8 ||
	fails=$((fails + 1))

# 4. Every write punted (io_uring before NOWAIT support): no inline write.
if run punt-all --blocks 256 --punt-all; then
	if [ "$inl" -ne 0 ] || [ "$forced" -ne "$writes" ]; then
		echo "FAIL [punt-all]: expected every write forced to the worker"
		cat "$out"
		fails=$((fails + 1))
	fi
else
	fails=$((fails + 1))
fi

# 5. psync: inline writes with pwrite() in the submitter.
run psync --blocks 256 --psync || fails=$((fails + 1))

# 6. --async without preemptive flushing: reservations must wait, and
#    they wait on the library's completion queue in the ring (POLL_ADD),
#    not in the worker thread: most writes are never punted.
if run async --blocks 1024 --no-preempt --async --qd 4; then
	waits=$(sed -n 's/^asynchronous reservations: \([0-9][0-9]*\) waited.*/\1/p' "$out")
	if [ -z "$waits" ] || [ "$waits" -lt 1 ] || [ "$punted" -ge "$waits" ]; then
		echo "FAIL [async]: expected reservations waited for in the ring"
		cat "$out"
		fails=$((fails + 1))
	fi
else
	fails=$((fails + 1))
fi

# 7. --blocking: the submitter itself waits; nothing punted.
if run blocking --blocks 1024 --no-preempt --blocking; then
	if [ "$punted" -ne 0 ]; then
		echo "FAIL [blocking]: expected no punt"
		cat "$out"
		fails=$((fails + 1))
	fi
else
	fails=$((fails + 1))
fi

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed"
	exit 1
fi
exit 0
