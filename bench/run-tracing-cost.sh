#!/bin/sh
# SPDX-License-Identifier: MIT
#
# What tracing costs a process that does not trace.  Three builds of the
# fast path (reserve+release pairs on a pool with room, 1 thread):
#
#   untraced: the library built with SRSV_TRACING 0 (bench_fastpath links
#             it as a second static copy, symbols renamed srsvu_*);
#   absent:   tracing compiled in, the provider package not loaded (no
#             LIBSPACERSV_TRACE, no LD_PRELOAD): no lttng-ust thread runs;
#   loaded:   tracing compiled in, LIBSPACERSV_TRACE=<build>/lib/
#             libspacersv-tp.so.0, so the first srsv_ctx_create() loads the
#             provider and liblttng-ust starts its threads; no session.
#
# Each round runs `bench_fastpath --overhead --runs 4` twice, the provider
# absent and loaded, in alternating order, pinned to one CPU (taskset);
# each process times the traced copy and the untraced one back to back,
# in both orders (4 short runs each), and keeps each copy's fastest run.
# Many short rounds, then estimators that a loaded machine disturbs least:
#
#   min:    the fastest round of each build over the fastest untraced
#           round (what a loaded machine adds is only ever extra time, so
#           the fastest round is the one it disturbed least);
#   paired: per round, traced over untraced of the same process; the
#           trimmed median (middle 60 %) of the rounds and their spread
#           (min / quartiles / max), which shows how loaded the machine was.
#
# Both for wall time and for the thread's CPU time.  Then instructions per
# pair, which load does not change: valgrind --tool=callgrind on a short
# run, the inclusive instruction counts of srsv_space_reserve and
# srsv_space_release against srsvu_space_reserve and srsvu_space_release
# (the two copies live in one process, so per-function counts are needed:
# perf stat counts the whole process and cannot separate them).
#
#   meson setup build-bench-trace -Dtracing=enabled -Dbuildtype=release
#   ninja -C build-bench-trace bench/bench_fastpath lib/libspacersv-tp.so.0.1.0
#   bench/run-tracing-cost.sh build-bench-trace [--rounds R] [--ops N]
#                             [--cpu C] [--no-callgrind]
#
# Defaults: 31 rounds of 100000 pairs a run, the last CPU, callgrind if
# found.  Last line: summary: provider_absent_ratio=A provider_loaded_ratio=L
# (the min estimator of wall time).
set -eu

usage() {
	echo "usage: $0 BUILD_DIR [--rounds R] [--ops N] [--cpu C] [--no-callgrind]" >&2
	exit 2
}

case ${1:-} in
-h|--help) sed -n '3,41p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
--version)
	sed -n "s/^  version: '\\([^']*\\)',\$/run-tracing-cost.sh (libspacersv) \\1/p" \
		"$(dirname "$0")/../meson.build"
	exit 0 ;;
-*|'') usage ;;
esac
build=$1
shift
rounds=31
ops=100000
cpu=$(($(nproc) - 1))
callgrind=yes
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) [ $# -ge 2 ] || usage; rounds=$2; shift 2 ;;
	--ops) [ $# -ge 2 ] || usage; ops=$2; shift 2 ;;
	--cpu) [ $# -ge 2 ] || usage; cpu=$2; shift 2 ;;
	--no-callgrind) callgrind=no; shift ;;
	*) usage ;;
	esac
done
case $rounds$ops$cpu in *[!0-9]*) usage ;; esac
[ "$rounds" -ge 5 ] || { echo "$0: --rounds must be at least 5" >&2; exit 2; }

bench="$build/bench/bench_fastpath"
provider="$build/lib/libspacersv-tp.so.0"
[ -x "$bench" ] || { echo "$0: $bench not built" >&2; exit 1; }
[ -f "$provider" ] || { echo "$0: $provider not built (tracing disabled?)" >&2; exit 1; }
command -v taskset >/dev/null 2>&1 || { echo "$0: taskset not found (util-linux)" >&2; exit 1; }
case $provider in /*) ;; *) provider=$PWD/$provider ;; esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# One process: "traced_wall untraced_wall traced_cpu untraced_cpu" of the
# 1-thread rows: the fastest run's wall time, the median CPU time (columns
# from the end: the variant names hold spaces).
run_one() {
	if [ "$1" = loaded ]; then
		env -u LD_PRELOAD LIBSPACERSV_TRACE="$provider" \
			taskset -c "$cpu" "$bench" --overhead --ops "$ops" --runs 4
	else
		env -u LIBSPACERSV_TRACE -u LD_PRELOAD \
			taskset -c "$cpu" "$bench" --overhead --ops "$ops" --runs 4
	fi | awk '
		$1 == 1 && /tracing compiled in/ { tw = $(NF - 3); tc = $NF }
		$1 == 1 && /tracing disabled/ { uw = $(NF - 3); uc = $NF }
		END {
			if (tw == "" || uw == "") exit 1
			print tw, uw, tc, uc
		}'
}

echo "== $(uname -sr), $(nproc) CPUs, pinned to CPU $cpu; $rounds rounds of $ops pairs"
echo "== load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
r=0
while [ "$r" -lt "$rounds" ]; do
	if [ $((r % 2)) -eq 0 ]; then order="absent loaded"; else order="loaded absent"; fi
	for which in $order; do
		run_one "$which" >> "$tmp/$which" ||
			{ echo "$0: no 1-thread figures from bench_fastpath" >&2; exit 1; }
	done
	r=$((r + 1))
done
echo "== load at end: $(cut -d' ' -f1-3 /proc/loadavg)"

# min(column) of a file
colmin() {
	awk -v c="$2" 'NR == 1 || $c < m { m = $c } END { printf "%.4f", m }' "$1"
}
# The paired ratios $2/$3 of each line: trimmed median and the spread.
paired() {
	awk -v a="$2" -v b="$3" '{ print $a / $b }' "$1" | sort -g | awk '
		{ v[NR] = $1 }
		END {
			lo = int(NR * 0.2) + 1; hi = NR - int(NR * 0.2)
			n = hi - lo + 1
			if (n % 2) med = v[lo + (n - 1) / 2]
			else med = (v[lo + n / 2 - 1] + v[lo + n / 2]) / 2
			printf "%.3f (min %.3f, q1 %.3f, median %.3f, q3 %.3f, max %.3f)",
			       med, v[1], v[int((NR + 3) / 4)],
			       v[int((NR + 1) / 2)], v[int((3 * NR + 1) / 4)], v[NR]
		}'
}
ratio() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.3f", x / y }'; }

cat "$tmp/absent" "$tmp/loaded" > "$tmp/both"
for m in wall cpu; do
	if [ $m = wall ]; then t=1; u=2; else t=3; u=4; fi
	umin=$(colmin "$tmp/both" $u)
	amin=$(colmin "$tmp/absent" $t)
	lmin=$(colmin "$tmp/loaded" $t)
	echo "$m ns/pair, fastest round: untraced $umin, absent $amin, loaded $lmin"
	echo "$m min: provider_absent_ratio=$(ratio "$amin" "$umin") provider_loaded_ratio=$(ratio "$lmin" "$umin") loaded_vs_absent=$(ratio "$lmin" "$amin")"
	pa=$(paired "$tmp/absent" $t $u)
	pl=$(paired "$tmp/loaded" $t $u)
	echo "$m paired, trimmed median: provider_absent_ratio=$pa"
	echo "$m paired, trimmed median: provider_loaded_ratio=$pl"
	if [ $m = wall ]; then
		A=$(ratio "$amin" "$umin")
		L=$(ratio "$lmin" "$umin")
	fi
done

if [ "$callgrind" = yes ] && command -v valgrind >/dev/null 2>&1 &&
   command -v callgrind_annotate >/dev/null 2>&1; then
	cg_ops=20000
	# reserve and release, inclusive, for one prefix (srsv or srsvu)
	cg_sum() {
		callgrind_annotate --inclusive=yes "$1" 2>/dev/null | awk -v p="$2" '
			{ gsub(",", "", $1) }
			$0 ~ (" [^ ]*:" p "_space_(reserve|release) ") ||
			$0 ~ (" " p "_space_(reserve|release) ") { s += $1 }
			END { print s + 0 }'
	}
	for which in absent loaded; do
		if [ $which = loaded ]; then
			set -- env -u LD_PRELOAD LIBSPACERSV_TRACE="$provider"
		else
			set -- env -u LIBSPACERSV_TRACE -u LD_PRELOAD
		fi
		"$@" taskset -c "$cpu" valgrind --tool=callgrind \
			--callgrind-out-file="$tmp/cg.$which" \
			"$bench" --overhead --ops $cg_ops --runs 1 >/dev/null 2>&1 ||
			{ echo "$0: callgrind run failed" >&2; exit 1; }
	done
	# Pairs per copy: the warm-up (ops / 10 + 1), then 1 and 2 threads.
	pairs=$((cg_ops / 10 + 1 + 3 * cg_ops))
	ta=$(cg_sum "$tmp/cg.absent" srsv)
	ua=$(cg_sum "$tmp/cg.absent" srsvu)
	tl=$(cg_sum "$tmp/cg.loaded" srsv)
	ul=$(cg_sum "$tmp/cg.loaded" srsvu)
	if [ "$ua" -eq 0 ] || [ "$ul" -eq 0 ]; then
		echo "$0: no srsvu_space_* in the callgrind profile" >&2
		exit 1
	fi
	echo "instructions per pair (callgrind, $pairs pairs per copy): untraced $(ratio "$ua" $pairs), absent $(ratio "$ta" $pairs), loaded $(ratio "$tl" $pairs)"
	echo "instructions: provider_absent_ratio=$(ratio "$ta" "$ua") provider_loaded_ratio=$(ratio "$tl" "$ul") loaded_vs_absent=$(ratio "$tl" "$ta")"
else
	echo "instructions: not measured (valgrind not found, or --no-callgrind)"
fi
echo "summary: provider_absent_ratio=$A provider_loaded_ratio=$L"
