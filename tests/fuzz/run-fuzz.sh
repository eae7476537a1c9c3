#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Run the libspacersv API fuzzer (tests/fuzz/fuzz_api.c) for a while.
#
#   tests/fuzz/run-fuzz.sh BUILD/tests/fuzz/fuzz_api [SECONDS] [libFuzzer args...]
#
# SECONDS defaults to $FUZZ_SECONDS, else 60.  The committed seeds
# (tests/fuzz/corpus) are copied into a scratch corpus, $FUZZ_WORK (default:
# a new directory under /tmp), so the repository is never written; new
# inputs and crash/timeout artifacts stay there.  To grow the committed
# corpus, minimise the scratch one into it by hand:
#   fuzz_api -merge=1 tests/fuzz/corpus "$FUZZ_WORK/corpus"
# Exit status: libFuzzer's (0 when nothing was found).
set -eu

case ${1:-} in
-h|--help) sed -n '3,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
--version)
	sed -n "s/^  version: '\\([^']*\\)',\$/run-fuzz.sh (libspacersv) \\1/p" \
		"$(dirname "$0")/../../meson.build"
	exit 0 ;;
-*) echo "usage: $0 FUZZ_BINARY [SECONDS] [libFuzzer args...]" >&2; exit 2 ;;
esac
if [ $# -lt 1 ]; then
	echo "usage: $0 FUZZ_BINARY [SECONDS] [libFuzzer args...]" >&2
	exit 2
fi
bin=$1
shift
secs=${FUZZ_SECONDS:-60}
if [ $# -gt 0 ]; then
	secs=$1
	shift
fi
here=$(cd "$(dirname "$0")" && pwd)
work=${FUZZ_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/srsv-fuzz.XXXXXX")}
mkdir -p "$work/corpus" "$work/artifacts"
cp "$here"/corpus/* "$work/corpus/" 2>/dev/null || true
echo "fuzz: $secs s, scratch corpus $work/corpus" >&2
# -timeout: a hang is a finding (the model says the call would not block).
# -rss_limit_mb: the harness allocates nothing per call; 2 GiB is plenty.
exec "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	-print_final_stats=1 -artifact_prefix="$work/artifacts/" \
	"$@" "$work/corpus"
