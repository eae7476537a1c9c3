#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Time tools/srsv-report.py against an earlier version of it on the same
# trace: wall and CPU time (the script's and babeltrace2's, which the old
# reader runs), medians of N runs each, old and new interleaved, and check
# that both print the same report (the new one's added sections aside).
#
# usage: tools/bench-report.sh [--runs N] [--old REV] [--keep DIR]
#                              (--trace DIR | --record BUILD [--seconds S])
#   --trace DIR     an existing trace directory
#   --record BUILD  record one first: BUILD/examples/engine_demo, 4 writers,
#                   S seconds (default 2), preemptive flushing on, its data
#                   file on /dev/shm, with the provider of BUILD/lib, in a
#                   2 MiB x 16 channel (no event discarded), tracked by pid
#                   (docs/tracing.md's recipe); root only, needs lttng
#   --old REV       the version to compare with (default: 871823a, the last
#                   one that read traces through babeltrace2's text)
#   --runs N        runs of each (default 3)
#   --keep DIR      keep the recorded trace in DIR
#
# Prints one line per run and
#   summary: events=E counter=C old_wall=S new_wall=S wall_speedup=X
#            old_cpu=S new_cpu=S cpu_speedup=X same_report=yes|no
# Exit status 1 when the two reports differ, 2 on bad usage.
set -eu

runs=3 old=871823a trace= build= seconds=2 keep=
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=$2; shift 2 ;;
	--old) old=$2; shift 2 ;;
	--trace) trace=$2; shift 2 ;;
	--record) build=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--keep) keep=$2; shift 2 ;;
	-h|--help) sed -n '3,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	--version)
		sed -n "s/^  version: '\\([^']*\\)',\$/bench-report.sh (libspacersv) \\1/p" \
			"$(dirname "$0")/../meson.build"
		exit 0 ;;
	*) echo "bench-report.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
if [ -z "$trace" ] && [ -z "$build" ]; then
	echo "bench-report.sh: --trace DIR or --record BUILD" >&2
	exit 2
fi

top=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/srsv-bench-report.XXXXXX")
session=
started_pid=
cleanup() {
	if [ -n "$session" ]; then
		lttng destroy "$session" >/dev/null 2>&1 || true
	fi
	if [ -n "$started_pid" ]; then
		kill "$started_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

if [ -n "$build" ]; then
	export LTTNG_HOME="$tmp/home"
	mkdir -p "$LTTNG_HOME" "$tmp/run"
	if ! lttng list >/dev/null 2>&1; then
		lttng-sessiond --daemonize --no-kernel >/dev/null
		started_pid=$(cat /var/run/lttng/lttng-sessiond.pid 2>/dev/null || true)
	fi
	trace=$tmp/trace
	S=srsv-bench-report-$$
	lttng create "$S" --output="$trace" >/dev/null
	session=$S
	lttng enable-channel --session="$S" --userspace --subbuf-size=2M \
		--num-subbuf=16 srsv >/dev/null
	lttng enable-event --session="$S" --userspace --channel=srsv \
		'spacersv:*' >/dev/null
	lttng add-context --session="$S" --userspace --channel=srsv \
		--type=vpid --type=vtid >/dev/null
	data=$(mktemp -d /dev/shm/srsv-bench-report.XXXXXX)
	GO=$tmp/go
	mkfifo "$GO"
	LD_LIBRARY_PATH="$build/lib" sh -c 'read go <"$0"; exec "$@"' "$GO" \
		env LIBSPACERSV_TRACE=1 "$build/examples/engine_demo" \
		--threads 4 --seconds "$seconds" --dir "$data" --quiet \
		>"$tmp/demo.log" 2>&1 &
	pid=$!
	lttng track --session="$S" --userspace --vpid=$pid >/dev/null
	lttng start "$S" >/dev/null
	echo go >"$GO"
	rc=0
	wait $pid || rc=$?
	rm -rf "$data"
	lttng destroy "$S" >/dev/null
	session=
	if [ $rc -ne 0 ]; then
		cat "$tmp/demo.log" >&2
		exit 1
	fi
	if [ -n "$keep" ]; then
		rm -rf "$keep"
		cp -r "$trace" "$keep"
	fi
	echo "recorded: engine_demo --threads 4 --seconds $seconds, $(du -sm "$trace" | cut -f1) MB"
fi

git -C "$top" show "$old:tools/srsv-report.py" >"$tmp/old.py"

# time_one NAME SCRIPT: one run; appends "wall cpu" to $tmp/NAME.times.
time_one() {
	/usr/bin/time -f '%e %U %S' -o "$tmp/t" "$py" "$2" "$trace" >"$tmp/$1.out"
	awk -v n="$1" '{ printf "%s: wall %.2f s, cpu %.2f s\n", n, $1, $2 + $3;
		print $1, $2 + $3 >> "'"$tmp/$1.times"'" }' "$tmp/t"
}
i=0
while [ $i -lt "$runs" ]; do
	time_one old "$tmp/old.py"
	time_one new "$top/tools/srsv-report.py"
	i=$((i + 1))
done

median() {	# column of $tmp/NAME.times
	sort -n -k"$2" "$tmp/$1.times" | awk -v c="$2" '{ v[NR] = $c }
		END { if (NR % 2) print v[(NR + 1) / 2];
		      else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# The same report: the new one, without the sections it added.
# Blank lines are printed only before a line that is kept.
common='/^NOWAIT reservations/ { skip = 1 }
	/^Last space dump/ { skip = 0 }
	skip { next }
	/^$/ { blank++; next }
	{ while (blank) { print ""; blank-- } print }'
awk "$common" "$tmp/new.out" >"$tmp/new.common"
awk "$common" "$tmp/old.out" >"$tmp/old.common"
same=yes
if ! diff -u "$tmp/old.common" "$tmp/new.common" >"$tmp/diff"; then
	same=no
	head -n 40 "$tmp/diff"
fi
events=$(sed -n 's/^libspacersv trace report: \([0-9]*\) events.*/\1/p' "$tmp/new.out")
counter=$(sed -n 's/^events: .*counter=\([0-9]*\).*/\1/p' "$tmp/new.out")
ow=$(median old 1) nw=$(median new 1) oc=$(median old 2) nc=$(median new 2)
echo "summary: events=$events counter=${counter:-0} old_wall=$ow new_wall=$nw" \
	"wall_speedup=$(awk -v a="$ow" -v b="$nw" 'BEGIN { printf "%.1f", a / b }')" \
	"old_cpu=$oc new_cpu=$nc" \
	"cpu_speedup=$(awk -v a="$oc" -v b="$nc" 'BEGIN { printf "%.1f", a / b }')" \
	"same_report=$same"
[ "$same" = yes ]
