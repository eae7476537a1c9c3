#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The logstore command line, twice on one directory: a run with writers,
# quotas, NOWAIT puts and the background cleaner, verified; then a second
# run that opens what the first left (the restart recipe), writes more and
# verifies again; then a third that only opens and verifies.  The store is
# an 8 MiB budget in a temporary directory, removed on any exit.
#
# usage: run-cli.sh PATH-TO-logstore
set -eu
exe=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/logstore-cli.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM

"$exe" "$dir/s" --seconds 1 --capacity 8M --quota 2M --bg-cleaner \
	--nowait-pct 20 --quiet --verify
out=$("$exe" "$dir/s" --seconds 1 --capacity 8M --delete-pct 20 --quiet \
	--verify)
echo "$out"
# The second run found the first one's segments.
echo "$out" | grep -q 'logstore: .*: [1-9][0-9]* segments ([1-9][0-9]* records'
out=$("$exe" "$dir/s" --seconds 0 --capacity 8M --verify)
echo "$out"
echo "$out" | grep -q '^verify: OK'
