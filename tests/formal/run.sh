#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Check the Promela models of tests/formal/ with SPIN: every correct model
# must pass every property, every mutant must be refuted.
#
# usage: tests/formal/run.sh [--long] [--keep DIR] [FILTER]
#   --long     also the larger searches (more processes and rounds; minutes
#              and gigabytes, see README.md), not run by CI
#   --keep DIR build and keep pan, trails and logs in DIR (default: a
#              temporary directory, removed at exit)
#   FILTER     only the checks whose name contains this string
# Environment: FORMAL_JOBS (searches at once, default 2), FORMAL_MEMLIM
# (MB per search, default 1500), FORMAL_TIMEOUT (s per search, 600).
#
# Each check prints one line: PASS/FAIL, its name, what SPIN reported
# (errors, states, depth) and its time.  The last line is
#   summary: models=N passed=P mutants=M caught=C
# and the exit status is 0 exactly when P = N and C = M.  A mutant counts
# as caught only when SPIN reports an error (a failed assertion, an invalid
# end state or a non-progress cycle), not when the search ran out of memory
# or time.
set -eu
case ${1:-} in
-h|--help) sed -n '3,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
--version)
	sed -n "s/^  version: '\\([^']*\\)',\$/run.sh (libspacersv) \\1/p" \
		"$(dirname "$0")/../../meson.build"
	exit 0 ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
long=false keep= filter=
while [ $# -gt 0 ]; do
	case $1 in
	--long) long=true ;;
	--keep) keep=$2; shift ;;
	-h|--help) sed -n '4,22p' "$0"; exit 0 ;;
	-*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	*) filter=$1 ;;
	esac
	shift
done

for tool in spin gcc; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "run.sh: $tool not found (tools/install-deps.sh installs spin)" >&2
		exit 2
	fi
done

if [ -n "$keep" ]; then
	work=$keep
	mkdir -p "$work"
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/srsv-formal.XXXXXX")
	trap 'rm -rf "$work"' EXIT INT TERM
fi

# Memory for one search (MB), and its time (s): the CI budget is 5 minutes.
MEMLIM=${FORMAL_MEMLIM:-1500}
TIMEOUT=${FORMAL_TIMEOUT:-600}

models=0 passed=0 mutants=0 caught=0

# Searches run FORMAL_JOBS at a time (default 2: the CI machine's cores).
JOBS=${FORMAL_JOBS:-2}
order=
running=0

# run_one NAME MODEL SEARCH "SPIN DEFINES": build and run one search in
# $work/NAME; writes rc, secs and pan.log there.
run_one() {
	name=$1 model=$2 search=$3 defs=$4
	dir=$work/$name
	case $search in
	safety) cflags="-DSAFETY -DCOLLAPSE" runflags="" ;;
	progress) cflags="-DNP -DCOLLAPSE" runflags="-l" ;;
	esac
	start=$(date +%s.%N)
	rc=0
	# shellcheck disable=SC2086 # defines and flags are words
	(cd "$dir" && spin $defs -a "$model" >spin.log 2>&1 &&
		gcc -O1 -w $cflags -DMEMLIM="$MEMLIM" -o pan pan.c \
			>gcc.log 2>&1 &&
		timeout "$TIMEOUT" ./pan -m2000000 $runflags >pan.log 2>&1) ||
		rc=$?
	echo "$rc" >"$dir/rc"
	awk -v a="$start" -v b="$(date +%s.%N)" \
		'BEGIN { printf "%.1f\n", b - a }' >"$dir/secs"
}

# check KIND NAME MODEL SEARCH "SPIN DEFINES"
#   KIND    model (must pass) or mutant (must be refuted)
#   SEARCH  safety (assertions, invalid end states) or progress
#           (non-progress cycles: pan -l)
check() {
	kind=$1 name=$2 model=$3 search=$4 defs=$5
	case $name in *"$filter"*) ;; *) return 0 ;; esac
	case $search in
	safety|progress) ;;
	*) echo "run.sh: bad search $search" >&2; exit 2 ;;
	esac
	dir=$work/$name
	rm -rf "$dir"
	mkdir -p "$dir"
	cp "$here/$model" "$dir/"
	echo "$kind $search $model $defs" >"$dir/what"
	order="$order $name"
	run_one "$name" "$model" "$search" "$defs" &
	running=$((running + 1))
	if [ "$running" -ge "$JOBS" ]; then
		wait
		running=0
	fi
}

# report NAME: judge one finished search, print its line.
report() {
	name=$1 dir=$work/$1
	read -r kind search model defs <"$dir/what" || true
	rc=$(cat "$dir/rc") secs=$(cat "$dir/secs")
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$dir/pan.log" 2>/dev/null | tail -1)
	states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$dir/pan.log" 2>/dev/null | tail -1)
	depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' "$dir/pan.log" 2>/dev/null | tail -1)
	what=$(grep -m1 -E '^pan:[0-9]*: .*(assertion violated|invalid end state|non-progress cycle|acceptance cycle)' \
		"$dir/pan.log" 2>/dev/null | sed 's/^pan:[0-9]*: *//' | cut -c1-90 || true)
	complete=true
	if grep -q -E 'out of memory|Search not completed|max search depth too small' \
		"$dir/pan.log" 2>/dev/null && [ "${errors:-0}" = 0 ]; then
		complete=false
	fi
	verdict=FAIL
	if [ "$kind" = model ]; then
		models=$((models + 1))
		if [ "$rc" -eq 0 ] && [ "${errors:-x}" = 0 ] && [ "$complete" = true ]; then
			verdict=PASS
			passed=$((passed + 1))
		fi
	else
		mutants=$((mutants + 1))
		# pan exits 0 with errors > 0; a timeout (124) or a build
		# failure is not a catch.
		if [ "$rc" -eq 0 ] && [ -n "$errors" ] && [ "$errors" -gt 0 ]; then
			verdict=PASS
			caught=$((caught + 1))
		fi
	fi
	printf '%s %-6s %-32s %-8s errors=%s states=%s depth=%s %ss%s%s\n' \
		"$verdict" "$kind" "$name" "$search" "${errors:-?}" \
		"${states:-?}" "${depth:-?}" "$secs" \
		"$([ "$complete" = true ] || echo ' INCOMPLETE')" "${what:+  ($what)}"
	if [ "$verdict" = FAIL ] && [ "$rc" -ne 0 ]; then
		echo "    exit status $rc; see $dir (--keep DIR keeps it)" >&2
		tail -3 "$dir/spin.log" "$dir/gcc.log" "$dir/pan.log" 2>/dev/null >&2 || true
	fi
}

# --- may_use.pml: the admission word --------------------------------------------
M=may_use.pml
check model  may_use-2x2            $M safety   "-DNPROC=2 -DROUNDS=2"
check model  may_use-3x1            $M safety   "-DNPROC=3 -DROUNDS=1"
check model  may_use-2x2-progress   $M progress "-DNPROC=2 -DROUNDS=2"
check mutant may_use-no-recheck     $M safety   "-DNPROC=2 -DMUTANT_NO_RECHECK"
check mutant may_use-sub-no-check   $M safety   "-DNPROC=2 -DMUTANT_SUB_NO_CHECK"
check mutant may_use-charge-no-cas  $M safety   "-DNPROC=2 -DMUTANT_CHARGE_NO_CAS"
check mutant may_use-xadd-undo      $M safety   "-DNPROC=2 -DXADD_UNDO"
check mutant may_use-xadd-undo-einval $M safety "-DNPROC=2 -DXADD_UNDO -DNOWAIT_UNCHECKED -DXADD_RECHECK"
check mutant may_use-xadd-no-undo   $M safety   "-DNPROC=2 -DXADD_UNDO -DMUTANT_NO_UNDO"
if [ "$long" = true ]; then
	check model may_use-3x2          $M safety  "-DNPROC=3 -DROUNDS=2"
	check model may_use-4x1          $M safety  "-DNPROC=4 -DROUNDS=1"
fi
# Capacity changes (set_readonly, clear_readonly, grow, shrink, a group's
# removal, a zone's addition) racing lock-free admission: the fixed
# protocol (a capacity sequence word) passes with either order of shrink's
# stores; today's code and each weaker design are refuted.
CAP="-DCAPACITY -DBASE=1"
check model  may_use-cap-1x2        $M safety   "$CAP -DNPROC=1 -DROUNDS=2 -DCAPOPS=3"
check model  may_use-cap-1x2-shrink-claimed-first $M safety "$CAP -DNPROC=1 -DROUNDS=2 -DCAPOPS=3 -DMUTANT_SHRINK_CLAIMED_FIRST"
check model  may_use-cap-2x1        $M safety   "$CAP -DNPROC=2 -DROUNDS=1 -DCAPOPS=1"
check model  may_use-cap-1x2-progress $M progress "$CAP -DNPROC=1 -DROUNDS=2 -DCAPOPS=2"
check mutant may_use-cap-today      $M safety   "$CAP -DNPROC=1 -DROUNDS=2 -DCAPOPS=3 -DMUTANT_TODAY"
check mutant may_use-cap-total-recheck $M safety "$CAP -DNPROC=1 -DROUNDS=2 -DCAPOPS=3 -DMUTANT_TOTAL_RECHECK"
check mutant may_use-cap-cache-today $M safety  "$CAP -DNPROC=1 -DROUNDS=2 -DCAPOPS=3 -DMUTANT_CACHE_TODAY"
check mutant may_use-cap-seq-not-rechecked $M safety "$CAP -DNPROC=1 -DROUNDS=2 -DCAPOPS=3 -DMUTANT_SEQ_NOT_RECHECKED"
check mutant may_use-cap-seq-odd-ignored $M safety "$CAP -DNPROC=1 -DROUNDS=2 -DCAPOPS=3 -DMUTANT_SEQ_ODD_IGNORED -DMUTANT_SHRINK_CLAIMED_FIRST"
if [ "$long" = true ]; then
	check model may_use-cap-1x2x4    $M safety  "$CAP -DNPROC=1 -DROUNDS=2 -DCAPOPS=4"
	check model may_use-cap-1x3-t4   $M safety  "$CAP -DNPROC=1 -DROUNDS=3 -DCAPOPS=3 -DTOTAL=4 -DMAXTOTAL=6"
	check model may_use-cap-2x1x2    $M safety  "-DCAPACITY -DNPROC=2 -DROUNDS=1 -DCAPOPS=2"
fi

# --- cache.pml: the per-CPU caches' credit ---------------------------------------
C=cache.pml
check model  cache-1x2                $C safety   "-DUSERS=1 -DROUNDS=2"
check model  cache-2x1                $C safety   "-DUSERS=2 -DROUNDS=1"
check model  cache-2x1-closed         $C safety   "-DUSERS=2 -DROUNDS=1 -DBIG=11 -DSTART_CLOSED"
check model  cache-nowait-1x1         $C safety   "-DUSERS=1 -DROUNDS=1 -DNOWAITER"
check model  cache-1x2-progress       $C progress "-DUSERS=1 -DROUNDS=2"
check mutant cache-no-settle          $C safety   "-DUSERS=1 -DMUTANT_NO_SETTLE"
check mutant cache-refill-unannounced $C safety   "-DUSERS=1 -DMUTANT_REFILL_UNANNOUNCED"
check mutant cache-put-no-recheck     $C safety   "-DUSERS=2 -DROUNDS=1 -DBIG=11 -DSTART_CLOSED -DMUTANT_PUT_NO_RECHECK"
if [ "$long" = true ]; then
	check model cache-2x2            $C safety  "-DUSERS=2 -DROUNDS=2"
	check model cache-nowait-2x1     $C safety  "-DUSERS=2 -DROUNDS=1 -DNOWAITER"
fi

# --- ticket_end.pml: a ticket's end racing grant, cancel, timeout, shutdown -------
T=ticket_end.pml
check model  ticket-2                 $T safety   ""
check model  ticket-shutdown          $T safety   "-DSHUTDOWN"
check model  ticket-nowait            $T safety   "-DNOWAITER"
check model  ticket-api-cancel        $T safety   "-DTICKET_API -DCANCEL"
check model  ticket-api-cancel-shutdown $T safety "-DTICKET_API -DCANCEL -DSHUTDOWN"
check model  ticket-shutdown-nowait   $T safety   "-DSHUTDOWN -DNOWAITER"
check model  ticket-shutdown-progress $T progress "-DSHUTDOWN"
check mutant ticket-timeout-no-recheck $T safety  "-DMUTANT_TIMEOUT_NO_RECHECK"
check mutant ticket-cancel-no-check   $T safety   "-DTICKET_API -DCANCEL -DMUTANT_CANCEL_NO_CHECK"
check mutant ticket-no-grant-after-queue $T safety "-DMUTANT_NO_GRANT_AFTER_QUEUE"
check mutant ticket-release-no-grant  $T safety   "-DMUTANT_RELEASE_NO_GRANT"
check mutant ticket-shutdown-no-wait  $T safety   "-DSHUTDOWN -DMUTANT_SHUTDOWN_NO_WAIT"
check mutant ticket-active-late       $T safety   "-DSHUTDOWN -DMUTANT_ACTIVE_LATE"
if [ "$long" = true ]; then
	check model ticket-all         $T safety  "-DTICKET_API -DCANCEL -DSHUTDOWN -DNOWAITER"
	check model ticket-all-progress $T progress "-DTICKET_API -DCANCEL -DSHUTDOWN -DNOWAITER"
fi

wait
for name in $order; do
	report "$name"
done
echo "summary: models=$models passed=$passed mutants=$mutants caught=$caught"
[ "$passed" -eq "$models" ] && [ "$caught" -eq "$mutants" ]
