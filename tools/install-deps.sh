#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Install the Debian 12 packages libspacersv needs, only those missing.
#
# usage: tools/install-deps.sh [--demo|--minimal|--fstests] [--update]
#                              [--dry-run]
#   (default)  everything the full test suite and .ci/run use: build tools,
#              Check, LTTng-UST + tools + babeltrace2 (trace suite), valgrind,
#              gcovr, clang + its sanitizer/fuzzer runtime, liburing,
#              FUSE 3, fio and the real clients of bench/spacefs-clients.sh
#              (spacefs), spin (tests/formal)
#   --demo     only what building the library and the demo needs
#              (tools/run-demo.sh)
#   --minimal  only what building the library, examples and unit tests needs
#   --fstests  the default set and what building and running fstests needs
#              (bench/spacefs-fstests.sh; fstests itself is not a package)
#   --update   run `apt-get update` even when nothing is missing (CI does, so
#              that a stale package list cannot hide a broken install step)
#   --dry-run  print what would be installed, change nothing
#   --version  print the version and exit
#
# Before installing anything it prints every package apt-get is about to
# install (the missing ones and what they pull in).  Runs as root, or
# through sudo when not root.  Exit status 0 when every package is
# installed afterwards, 2 on bad usage.
set -eu

# Needed to configure and build the library, the examples and the unit
# tests: a C compiler, meson/ninja, pkg-config, libatomic_ops (header-only on
# x86_64) and Check.
DEMO="gcc libc6-dev meson ninja-build pkg-config libatomic-ops-dev"
MINIMAL="$DEMO check"
# Everything else the test suites and CI use.  g++ and binutils: the ABI
# suite compiles the headers as C++ and reads the library with nm/readelf;
# python3 runs its scripts; liburing for the NOWAIT example; libfuse3-dev,
# fuse3 and fio for spacefs and its suite; doxygen and man-db for the API
# reference and its man pages, help2man for the tools' pages; abigail-tools
# for the ABI check; dpkg-dev, debhelper and lintian for the Debian packages.
FULL="$MINIMAL g++ binutils python3 liblttng-ust-dev lttng-tools babeltrace2
python3-bt2 python3-matplotlib valgrind gcovr clang libclang-rt-14-dev
liburing-dev libfuse3-dev fuse3 fio doxygen man-db help2man abigail-tools
dpkg-dev debhelper lintian"
# The real clients of bench/spacefs-clients.sh and the spacefs-clients suite
# (stress-ng, dbench, fsmark's fs_mark, postmark, sysbench, sqlite3,
# rocksdb-tools' db_bench, git) and the file systems it compares with
# (btrfs-progs, e2fsprogs; losetup from util-linux).
FULL="$FULL stress-ng dbench fsmark postmark sysbench sqlite3 rocksdb-tools git
btrfs-progs e2fsprogs util-linux"
# SPIN, for the models of tests/formal (the CI stage "formal").
FULL="$FULL spin"
# fstests' build and the tools its tests call (its README), for
# bench/spacefs-fstests.sh, which CI does not run.
FSTESTS="$FULL xfslibs-dev uuid-dev libtool-bin automake make libacl1-dev
libaio-dev xfsprogs libgdbm-dev gawk attr quota acl bc libcap-dev"

set_name=full update=false dry_run=false
for arg in "$@"; do
	case $arg in
	--demo) set_name=demo ;;
	--minimal) set_name=minimal ;;
	--fstests) set_name=fstests ;;
	--update) update=true ;;
	--dry-run) dry_run=true ;;
	-h|--help) sed -n '4,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	--version)
		sed -n "s/^  version: '\\([^']*\\)',\$/install-deps.sh (libspacersv) \\1/p" \
			"$(dirname "$0")/../meson.build"
		exit 0 ;;
	*) echo "install-deps.sh: unknown argument $arg" >&2; exit 2 ;;
	esac
done
case $set_name in
demo) packages=$DEMO ;;
minimal) packages=$MINIMAL ;;
fstests) packages=$FSTESTS ;;
*) packages=$FULL ;;
esac

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "install-deps.sh: not a Debian system (no dpkg-query); install by hand:" >&2
	echo "  $packages" | tr '\n' ' ' >&2; echo >&2
	exit 1
fi

missing=
for p in $packages; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$status" = installed ] || missing="$missing $p"
done

if [ -z "$missing" ] && [ "$update" = false ]; then
	echo "install-deps.sh: all $set_name packages are installed"
	exit 0
fi
if [ "$dry_run" = true ]; then
	echo "install-deps.sh: would install:${missing:- (nothing)}"
	exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
	as_root=
elif command -v sudo >/dev/null 2>&1; then
	as_root=sudo
else
	echo "install-deps.sh: missing packages:$missing" >&2
	echo "install-deps.sh: not root and no sudo; install them as root" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
if [ -n "$missing" ]; then
	echo "install-deps.sh: missing:$missing"
	$as_root apt-get update
	# Recommends are kept: the verified recipe installs with them.  apt's
	# own plan (a simulation) says everything that will be installed.
	# shellcheck disable=SC2086 # one word per package
	plan=$(apt-get -s install $missing | sed -n 's/^Inst \([^ ]*\).*/\1/p')
	echo "install-deps.sh: apt-get will install $(echo "$plan" | wc -w) packages:"
	echo "$plan" | tr '\n' ' ' | fold -s -w 76 | sed 's/^/  /'
	echo
	# shellcheck disable=SC2086
	$as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y $missing
else
	# --update with nothing missing: refresh the lists, but an unreachable
	# mirror must not fail a machine that already has everything.
	$as_root apt-get update ||
		echo "install-deps.sh: apt-get update failed; all packages are installed, going on" >&2
	echo "install-deps.sh: all $set_name packages are installed"
fi
