#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-trace.sh SCENARIOS CHECKER REPORT TRACING_MD LIBDIR
#
# Record an LTTng-UST session around the SCENARIOS program, then check the
# trace with CHECKER (check_trace.py, which uses REPORT = tools/srsv-report.py
# to read it).
#
# - The program is started with the "trace from the first reservation"
#   recipe of TRACING_MD (docs/tracing.md), run as it is written there, in a
#   directory where ./my-engine execs SCENARIOS; the recipe loads the
#   provider with LIBSPACERSV_TRACE=1, found in LIBDIR (the build's lib/).
#
# - LTTNG_HOME is a private temporary directory (lttng writes its .lttngrc
#   there), removed at exit together with the trace.
# - A session daemon is started only if none runs, and only that one is
#   stopped at exit, by its pid (and not while other sessions use it).
# - Only the scenario process is recorded (lttng track --vpid).
# - The session name is unique and named on every lttng command.
# - Exit 77 (skip) only when lttng, lttng-sessiond or babeltrace2 is missing.
#
# SRSV_TRACE_KEEP=DIR copies the trace and the logs to DIR (for debugging
# and for docs/tracing.md's example report).
set -u
case ${1:-} in
-h|--help) sed -n '3,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
--version)
	sed -n "s/^  version: '\\([^']*\\)',\$/run-trace.sh (libspacersv) \\1/p" \
		"$(dirname "$0")/../../meson.build"
	exit 0 ;;
esac

scenarios=$1
checker=$2
report=$3
tracing_md=$4
libdir=$5
py=${SRSV_PYTHON:-python3}

for tool in lttng lttng-sessiond babeltrace2; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: $tool not found (install lttng-tools and babeltrace2)"
		exit 77
	fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/srsv-trace.XXXXXX") || exit 1
export LTTNG_HOME="$tmp/home"
mkdir -p "$LTTNG_HOME"
session="srsv-trace-$$-$(date +%s%N)"
out="$tmp/trace"
started_pid=""
session_created=0
child=""

# Running and not a zombie: in a container whose init does not reap
# orphans, the stopped daemon lingers as a zombie and kill -0 still works.
alive() {
	kill -0 "$1" 2>/dev/null || return 1
	if [ -r "/proc/$1/stat" ]; then
		# "pid (comm) state ...": the comm has no space here.
		[ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]
	fi
}

cleanup() {
	# The scenario process, if still held on its FIFO or running.
	if [ -n "$child" ]; then
		kill "$child" 2>/dev/null
	fi
	if [ "$session_created" = 1 ]; then
		lttng destroy "$session" >/dev/null 2>&1
	fi
	# Our session is gone by now: a session still listed belongs to
	# someone who started recording with our daemon; stopping it would
	# cut their trace short, so it is left running.
	if [ -n "$started_pid" ] &&
	   lttng list 2>/dev/null | grep -q '^Available recording sessions'; then
		echo "note: lttng-sessiond $started_pid left running (other sessions use it)" >&2
		started_pid=""
	fi
	if [ -n "$started_pid" ]; then
		kill "$started_pid" 2>/dev/null
		# Bounded wait (5 s) for it to go, so that the next run starts
		# its own cleanly.
		i=0
		while alive "$started_pid" && [ $i -lt 50 ]; do
			sleep 0.1
			i=$((i + 1))
		done
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# Where a session daemon of this user writes its pid file.
if [ "$(id -u)" = 0 ]; then
	pidfile=/var/run/lttng/lttng-sessiond.pid
else
	pidfile="$LTTNG_HOME/.lttng/lttng-sessiond.pid"
fi

# "lttng list" answers only when a session daemon does (a pgrep would also
# see a daemon that is exiting, or a zombie).
if ! lttng list >/dev/null 2>&1; then
	# --daemonize returns once the daemon accepts commands.  Another
	# test may have started one meanwhile: then the start fails and we
	# use theirs.
	if lttng-sessiond --daemonize --no-kernel >"$tmp/sessiond.log" 2>&1; then
		if [ -r "$pidfile" ]; then
			started_pid=$(cat "$pidfile")
		fi
		if [ -z "$started_pid" ]; then
			echo "warning: started lttng-sessiond but found no pid file; it will be left running" >&2
		fi
	elif ! lttng list >/dev/null 2>&1; then
		echo "FAIL: could not start lttng-sessiond:" >&2
		cat "$tmp/sessiond.log" >&2
		exit 1
	fi
fi

run() {
	if ! "$@" >>"$tmp/lttng.log" 2>&1; then
		echo "FAIL: $*" >&2
		cat "$tmp/lttng.log" >&2
		exit 1
	fi
}

run lttng create "$session" --output="$out"
session_created=1
run lttng enable-event --session="$session" --userspace 'spacersv:*'
run lttng add-context --session="$session" --userspace --type=vpid --type=vtid

# Record only the scenario process: other programs linked with libspacersv
# (tests of other suites, benchmarks) may run meanwhile and would share the
# per-user ring buffers, adding their events and making ours discarded.
# The documented recipe does it: the process is held on a FIFO until its pid
# is tracked and the session started; exec keeps the pid.
sed -n '/<!-- recipe:first-reservation/,/<!-- end recipe -->/p' "$tracing_md" |
	sed '1d;$d' >"$tmp/recipe.sh"
if [ "$(wc -l <"$tmp/recipe.sh")" -ne 5 ] ||
   ! grep -q 'LIBSPACERSV_TRACE=1 ./my-engine' "$tmp/recipe.sh"; then
	echo "FAIL: the first-reservation recipe of $tracing_md is not the 5 lines this script expects:" >&2
	cat "$tmp/recipe.sh" >&2
	exit 1
fi
mkdir "$tmp/run"
printf '#!/bin/sh\nexec "%s" >"%s" 2>"%s"\n' "$scenarios" \
	"$tmp/scenarios.out" "$tmp/scenarios.err" >"$tmp/run/my-engine"
chmod +x "$tmp/run/my-engine"
# The provider's soname (LIBSPACERSV_TRACE=1) resolves in the build tree.
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH

# Never LTTNG_UST_REGISTER_TIMEOUT=0 here: a short program would exit before
# it registers and lose every event.
(
	cd "$tmp/run" || exit 1
	S=$session
	. "$tmp/recipe.sh"
	exit "$rc"
) >>"$tmp/lttng.log" 2>&1
rc=$?
cat "$tmp/scenarios.out"
cat "$tmp/scenarios.err" >&2

# destroy stops the session and flushes the buffers to $out.
run lttng destroy "$session"
session_created=0

if [ $rc -ne 0 ]; then
	echo "FAIL: scenarios exited with $rc" >&2
	exit 1
fi

"$py" "$checker" --report "$report" --scenarios "$tmp/scenarios.out" "$out"
rc=$?

# The checker must be able to fail: against the same trace, a snapshot that
# disagrees with the preemptive dump by one byte, and a timed-out ticket
# whose size is not the one traced, must both be reported.
if [ $rc -eq 0 ]; then
	sed -e '/^SNAPSHOT preempt /s/ may_use=\([0-9]*\)/ may_use=1\1/' \
	    -e '/^SCENARIO timeout /s/ bytes=/ bytes=7/' \
	    "$tmp/scenarios.out" >"$tmp/tampered.out"
	if cmp -s "$tmp/scenarios.out" "$tmp/tampered.out"; then
		echo "FAIL: checker self-test: could not tamper with the scenario output" >&2
		rc=1
	elif "$py" "$checker" --report "$report" --scenario-checks-only \
		--scenarios "$tmp/tampered.out" "$out" >"$tmp/selftest.log" 2>&1; then
		echo "FAIL: checker self-test: a falsified snapshot passed" >&2
		rc=1
	elif [ "$(grep -c '^not ok' "$tmp/selftest.log")" -lt 2 ]; then
		echo "FAIL: checker self-test: expected 2+ failed checks:" >&2
		cat "$tmp/selftest.log" >&2
		rc=1
	else
		echo "ok - checker self-test: falsified snapshot and ticket size are caught"
		grep '^not ok' "$tmp/selftest.log" | sed 's/^/#   /'
	fi
fi

if [ -n "${SRSV_TRACE_KEEP:-}" ]; then
	mkdir -p "$SRSV_TRACE_KEEP"
	cp -r "$out" "$tmp/scenarios.out" "$SRSV_TRACE_KEEP"/
fi
exit $rc
