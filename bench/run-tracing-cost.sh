#!/bin/sh
# SPDX-License-Identifier: MIT
#
# What tracing costs a process that does not trace: bench_fastpath
# --overhead (the traced static library against a copy built with
# SRSV_TRACING 0, in one process, reserve+release pairs on a pool with
# room) run twice:
#
#   absent: the provider package is not loaded (no LIBSPACERSV_TRACE, no
#           LD_PRELOAD): the tracepoints are registered through
#           liblttng-ust-tracepoint only, no lttng-ust thread runs;
#   loaded: LIBSPACERSV_TRACE=<build>/lib/libspacersv-tp.so.0, so the first
#           srsv_ctx_create() loads the provider and liblttng-ust starts
#           its threads, with no session enabling any event.
#
# Each ratio is traced ns/pair over untraced ns/pair, 1 thread, ratio of
# medians of wall time (the line before the summary gives the CPU-time
# ratios, which a loaded machine disturbs less; docs/results.md).  Needs a tracing build in release mode:
#
#   meson setup build-bench-trace -Dtracing=enabled -Dbuildtype=release
#   ninja -C build-bench-trace -j2
#   bench/run-tracing-cost.sh build-bench-trace [--runs K] [--ops N]
#
# Last line: summary: provider_absent_ratio=A provider_loaded_ratio=L
set -eu

case ${1:-} in
-h|--help) sed -n '3,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
--version)
	sed -n "s/^  version: '\\([^']*\\)',\$/run-tracing-cost.sh (libspacersv) \\1/p" \
		"$(dirname "$0")/../meson.build"
	exit 0 ;;
-*) echo "usage: $0 BUILD_DIR [bench_fastpath options...]" >&2; exit 2 ;;
esac
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [bench_fastpath options...]" >&2; exit 2; }
build=${1:?usage: $0 BUILD_DIR [bench_fastpath options...]}
shift
bench="$build/bench/bench_fastpath"
provider="$build/lib/libspacersv-tp.so.0"
[ -x "$bench" ] || { echo "$0: $bench not built" >&2; exit 1; }
[ -f "$provider" ] || { echo "$0: $provider not built (tracing disabled?)" >&2; exit 1; }

ratio() {
	sed -n 's/^summary: disabled_overhead=\([0-9.]*\)$/\1/p'
}
cpu_ratio() {
	sed -n 's/^1 thread, CPU time: ratio of medians \([0-9.]*\)$/\1/p'
}

echo "== $(uname -sr), $(nproc) CPUs; $(uptime)"
echo "== provider absent"
out=$(env -u LIBSPACERSV_TRACE -u LD_PRELOAD "$bench" --overhead "$@")
echo "$out"
absent=$(echo "$out" | ratio)
absent_cpu=$(echo "$out" | cpu_ratio)
echo "== provider loaded, no session"
out=$(env -u LD_PRELOAD LIBSPACERSV_TRACE="$provider" "$bench" --overhead "$@")
echo "$out"
loaded=$(echo "$out" | ratio)
loaded_cpu=$(echo "$out" | cpu_ratio)
[ -n "$absent" ] && [ -n "$loaded" ] || { echo "$0: no summary from bench_fastpath" >&2; exit 1; }
# On a loaded machine the wall-time ratios measure the scheduler; the
# threads' CPU time still measures the code.
echo "cpu time: provider_absent_ratio=$absent_cpu provider_loaded_ratio=$loaded_cpu"
echo "summary: provider_absent_ratio=$absent provider_loaded_ratio=$loaded"
