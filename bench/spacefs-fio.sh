#!/bin/bash
# SPDX-License-Identifier: MIT
#
# spacefs-fio.sh: the upstream patches' fio jobs against spacefs, preemptive flushing
# off and on, medians of 3.  Scaled to a 2-core machine: the
# whole script takes 3.5 to 4 minutes.
#
#   bench/spacefs-fio.sh [BUILD_DIR]        (default: ./build)
#
# Environment:
#   SPACEFS            the spacefs binary (default BUILD_DIR/examples/spacefs/spacefs)
#   SPACEFS_BENCH_DIR  where the backing directories go (default /tmp: a
#                      disk-backed file system, the "device" behind spacefs)
#   RUNS               repetitions per job and mode (default 3)
#   PACE               randwrite also runs a third mode, preemptive flushing
#                      on and the library's pacing of metadata reservations
#                      from PACE% of the pool's room (mount option pace=PACE;
#                      default 80; 0: no such mode)
#   DATA               1 (default): randwrite and randrw also run a mode
#                      with preemptive flushing on but the data pool's
#                      reclaim by debt off (data_preempt=0,
#                      SRSV_CTX_NO_DATA_PREEMPT: btrfs's data behaviour);
#                      0: no such mode
#
# Jobs (fio, unchanged but for sizes and run times):
#   randwrite   the preemptive-flushing series' job: 4 jobs, 4 KiB random writes, sync engine, buffered,
#               ramp 2 s + 10 s; 4 x 128 MiB files (laid out once, 1 MiB
#               writes) through a 16 MiB cache: the cache is 1/32 of the
#               working set, as the series' job is twice the RAM
#   randrw      the nowait direct-I/O series' job: randrw with its bssplit, io_uring, iodepth 64,
#               4 jobs on one 256 MiB file, buffered here (direct=0), 5 s
#   seq-psync   the async buffered-write series' job: sequential 4 KiB writes, psync, iodepth 1, 4 s
#   seq-uring   the same series: the same with io_uring
#   fill        1 MiB sequential writes until ENOSPC (fio fill_device) on a
#               2 GiB spacefs: bytes written / capacity
#
# Per job and mode it prints the medians of: write bandwidth (and read
# bandwidth for randrw), write completion latency p99, tickets (metadata +
# data tickets the writers waited on, from the control file) and commits.
# The modes of one repetition run one after the other, so the ratios are
# of runs made side by side.  Last line: "summary:
# randwrite_preempt_ratio=R fill_ratio=F randwrite_pace_bw=B
# randwrite_pace_p99=P randwrite_data_bw=D randwrite_data_p99=Q" where R
# is the randwrite median bandwidth with preemptive flushing over
# without, B and P randwrite's median bandwidth and p99 with pacing over
# without (preemptive flushing on in both), D and Q with the data pool's
# reclaim by debt over without (preemptive flushing on in both).
set -u

case ${1:-} in
-h|--help) sed -n '3,45p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
--version)
	sed -n "s/^  version: '\\([^']*\\)',\$/spacefs-fio.sh (libspacersv) \\1/p" \
		"$(dirname "$0")/../meson.build"
	exit 0 ;;
-*) echo "usage: $0 [BUILD_DIR]" >&2; exit 2 ;;
esac
BUILD=${1:-build}
SPACEFS=${SPACEFS:-$BUILD/examples/spacefs/spacefs}
BASE=${SPACEFS_BENCH_DIR:-/tmp}
RUNS=${RUNS:-3}
PACE=${PACE:-80}
DATA=${DATA:-1}

die() {
	echo "spacefs-fio: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || die "needs root (FUSE mounts)"
[ -c /dev/fuse ] || die "no /dev/fuse"
command -v fio >/dev/null || die "no fio"
command -v fusermount3 >/dev/null || die "no fusermount3"
command -v python3 >/dev/null || die "no python3 (parses fio's JSON)"
[ -x "$SPACEFS" ] || die "no spacefs binary at $SPACEFS (build with libfuse3-dev)"

WORK=$(mktemp -d "$BASE/spacefs-bench.XXXXXX") || die "mktemp"
MNT=$WORK/mnt
PID=
mkdir -p "$MNT"

cleanup() {
	if mountpoint -q "$MNT"; then
		fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
	fi
	if [ -n "$PID" ]; then
		for _ in $(seq 100); do
			kill -0 "$PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$PID" 2>/dev/null
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# mount_fs BACKING OPTIONS
mount_fs() {
	mkdir -p "$1"
	"$SPACEFS" "$MNT" -f -o "backing=$1,$2" >>"$WORK/spacefs.log" 2>&1 &
	PID=$!
	for _ in $(seq 100); do
		mountpoint -q "$MNT" && return 0
		kill -0 "$PID" 2>/dev/null || die "spacefs exited: $(tail -n 3 "$WORK/spacefs.log")"
		sleep 0.1
	done
	die "no mount after 10 s"
}

umount_fs() {
	local status
	fusermount3 -u "$MNT" || die "fusermount3 -u"
	for _ in $(seq 1200); do
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$PID" 2>/dev/null && die "spacefs still running 120 s after unmount"
	wait "$PID"
	status=$?
	PID=
	[ "$status" = 0 ] || die "spacefs exited with $status: accounting check failed"
}

ctl() {
	timeout 10 cat "$MNT/.spacefs" | awk -v k="$1" '$1 == k { print $2 }'
}

# fio_json FILE -> "write_MiBps read_MiBps write_p99_us write_io_bytes"
fio_json() {
	python3 - "$1" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
# fio may print notes before the JSON document
j = json.loads(text[text.index('{'):])
job = j['jobs'][0]
w, r = job['write'], job['read']
p99 = w.get('clat_ns', {}).get('percentile', {}).get('99.000000', 0) / 1000
print("%.1f %.1f %.0f %d" % (w['bw'] / 1024, r['bw'] / 1024, p99, w['io_bytes']))
EOF
}

RESULTS=$WORK/results
: >"$RESULTS"

# run_job NAME MODE REP BACKING MOUNTOPTS FIOARGS...: MODE 0 preemptive
# flushing off, 1 on, p on with pacing from $PACE%, b on with the data
# pool's reclaim by debt off
run_job() {
	local name=$1 mode=$2 rep=$3 back=$4 opts=$5 out tickets commits
	shift 5
	case $mode in
	p) mount_fs "$back" "$opts,preempt=1,pace=$PACE" ;;
	b) mount_fs "$back" "$opts,preempt=1,data_preempt=0" ;;
	*) mount_fs "$back" "$opts,preempt=$mode" ;;
	esac
	out=$WORK/$name-$mode-$rep.json
	( cd "$MNT" && timeout 300 fio --directory="$MNT" "$@" \
		--output-format=json --output="$out" ) >/dev/null 2>&1 ||
		die "fio $name failed: $(tail -n 5 "$out" 2>/dev/null)"
	tickets=$(( $(ctl meta.tickets) + $(ctl data.tickets) ))
	commits=$(ctl commits)
	umount_fs
	echo "$name $mode $rep $(fio_json "$out") $tickets $commits" >>"$RESULTS"
	printf '  %-10s preempt=%s run %s: %s\n' "$name" "$mode" "$rep" \
		"$(tail -n 1 "$RESULTS" | cut -d' ' -f4-)" >&2
}

# layout BACKING OPTS FIOARGS...: create the jobs' files with 1 MiB writes
# (fio would lay them out with the job's 4 KiB writes, ten times slower).
layout() {
	local back=$1 opts=$2
	shift 2
	mount_fs "$back" "$opts"
	( cd "$MNT" && timeout 300 fio --directory="$MNT" "$@" ) >/dev/null 2>&1 ||
		die "layout failed"
	umount_fs
}

# Mount options: 2 GiB, the default 16 MiB metadata pool, a 16 MiB cache,
# no periodic commit inside a run (btrfs commits every 30 s; runs are
# shorter than that, so it would only add noise).
OPTS="capacity=2G,meta=16M,cache=16M,commit=0"

RW_BACK=$WORK/back-randwrite
RW_FILES=(--filename_format='FioWorkloads.$jobnum' --numjobs=4 --size=128m)
RW_JOB=(--direct=0 --ioengine=sync --thread --invalidate=1
	--group_reporting=1 --runtime=10 --fallocate=none --ramp_time=2
	--name=RandomWrites-async-64512-4k-4 --new_group --rw=randwrite
	--bs=4k --fsync_on_close=0 --end_fsync=0 "${RW_FILES[@]}")

RR_BACK=$WORK/back-randrw
RR_JOB=(--name=io_uring_rw --rw=randrw --fsync=0 --fallocate=posix
	--group_reporting=1 --direct=0 --ioengine=io_uring --iodepth=64
	--bssplit=4k/20:8k/20:16k/20:32k/10:64k/10:128k/5:256k/5:512k/5:1m/5
	--filesize=256m --runtime=5 --time_based --filename=foobar
	--numjobs=4 --thread)

SEQ_BACK=$WORK/back-seq
seq_job() {
	echo --name=seq-writers --ioengine="$1" --iodepth=1 --rw=write --bs=4k \
		--direct=0 --size=768m --time_based --runtime=4 --numjobs=1 \
		--filename=seqfile
}

echo "spacefs-fio: $SPACEFS, backing in $BASE, $RUNS runs per job and mode, randwrite also paced from ${PACE}%" >&2
echo "laying out the random-write files..." >&2
layout "$RW_BACK" "$OPTS" --name=layout --rw=write --bs=1m \
	--ioengine=psync "${RW_FILES[@]}"
layout "$RR_BACK" "$OPTS" --name=layout --rw=write --bs=1m \
	--ioengine=psync --filename=foobar --size=256m

for rep in $(seq "$RUNS"); do
	for mode in 0 1 p b; do
		[ "$mode" = p ] && [ "$PACE" = 0 ] && continue
		[ "$mode" = b ] && [ "$DATA" = 0 ] && continue
		run_job randwrite $mode "$rep" "$RW_BACK" "$OPTS" "${RW_JOB[@]}"
		[ "$mode" = p ] && continue
		run_job randrw $mode "$rep" "$RR_BACK" "$OPTS" "${RR_JOB[@]}"
		[ "$mode" = b ] && continue
		for eng in psync io_uring; do
			case $eng in
			psync) name=seq-psync ;;
			*) name=seq-uring ;;
			esac
			# Every sequential run starts from an empty file system.
			rm -rf "$SEQ_BACK"
			# shellcheck disable=SC2046
			run_job "$name" $mode "$rep" "$SEQ_BACK" "$OPTS" \
				$(seq_job "$eng")
		done
	done
done

echo "fill: 1 MiB sequential writes until ENOSPC..." >&2
FILL_BACK=$WORK/back-fill
mount_fs "$FILL_BACK" "$OPTS"
( cd "$MNT" && timeout 300 fio --directory="$MNT" --name=fill --rw=write \
	--bs=1m --ioengine=psync --fill_device=1 --filename=fillfile \
	--output-format=json --output="$WORK/fill.json" ) >/dev/null 2>&1
FILL_BYTES=$(fio_json "$WORK/fill.json" | awk '{ print $4 }')
FILL_ENOSPC=$(ctl enospc)
umount_fs
CAPACITY=$((2 << 30))

python3 - "$RESULTS" "$FILL_BYTES" "$CAPACITY" "$FILL_ENOSPC" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
fill_bytes, capacity, enospc = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
jobs = []
for r in rows:
    if r[0] not in jobs:
        jobs.append(r[0])
med = {}
print("%-10s %-7s %10s %10s %10s %9s %8s   %s" % ("job", "preempt", "write MiB/s",
      "read MiB/s", "p99 us", "tickets", "commits", "write MiB/s per run"))
for job in jobs:
    for mode in ("0", "1", "p", "b"):
        rs = [r for r in rows if r[0] == job and r[1] == mode]
        if not rs:
            continue
        m = [statistics.median(float(r[i]) for r in rs) for i in (3, 4, 5, 7, 8)]
        med[(job, mode)] = m
        print("%-10s %-7s %10.1f %10.1f %10.0f %9.0f %8.0f   %s" % (job,
              {"0": "off", "1": "on", "p": "on+pace", "b": "on-data"}[mode], m[0], m[1],
              m[2], m[3], m[4],
              " ".join(r[3] for r in rs)))
for job in jobs:
    if (job, "0") in med and (job, "1") in med and med[(job, "0")][0] > 0:
        print("%-10s preemptive on/off bandwidth: %.2f" % (job,
              med[(job, "1")][0] / med[(job, "0")][0]))
ratio = med[("randwrite", "1")][0] / med[("randwrite", "0")][0]
fill = fill_bytes / capacity
pace = ""
if ("randwrite", "p") in med:
    on, paced = med[("randwrite", "1")], med[("randwrite", "p")]
    per = lambda i: [float(p[i]) / float(o[i]) if float(o[i]) else float("nan")
                     for o, p in zip([r for r in rows if r[:2] == ["randwrite", "1"]],
                                     [r for r in rows if r[:2] == ["randwrite", "p"]])]
    print("randwrite  pacing on/off (preemptive on): bandwidth %.2f (per run %s), "
          "p99 %.2f (per run %s)" % (paced[0] / on[0],
          " ".join("%.2f" % x for x in per(3)), paced[2] / on[2],
          " ".join("%.2f" % x for x in per(5))))
    pace = " randwrite_pace_bw=%.2f randwrite_pace_p99=%.2f" % (
        paced[0] / on[0], paced[2] / on[2])
data = ""
for job in jobs:
    if (job, "b") in med and (job, "1") in med and med[(job, "b")][0] > 0:
        on, off = med[(job, "1")], med[(job, "b")]
        print("%-10s data pool's reclaim by debt on/off (preemptive on): "
              "bandwidth %.2f, p99 %.2f, tickets %.0f vs %.0f" % (job,
              on[0] / off[0], on[2] / off[2] if off[2] else float("nan"),
              on[3], off[3]))
        if job == "randwrite":
            data = " randwrite_data_bw=%.2f randwrite_data_p99=%.2f" % (
                on[0] / off[0], on[2] / off[2] if off[2] else float("nan"))
print("fill: %d bytes written before ENOSPC on a %d-byte spacefs (%s ENOSPC)"
      % (fill_bytes, capacity, enospc))
print("summary: randwrite_preempt_ratio=%.2f fill_ratio=%.4f%s%s" % (ratio, fill, pace, data))
EOF
