#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Install + pkg-config test (meson suite 'abi').
#
# Installs the build into a temporary DESTDIR with `meson install --destdir`,
# checks the installed layout, then builds tests/abi/consumer.c the way a
# user would, with the flags pkg-config gives for the *installed* copy:
#   - shared: `pkg-config --cflags --libs`, run with LD_LIBRARY_PATH pointing
#     into the DESTDIR (and checked to really load that copy);
#   - static: `pkg-config --static --libs`, with -lspacersv replaced by
#     -l:libspacersv.a so the linker cannot pick the .so; the binary must not
#     need libspacersv.so at run time.
#
# The .pc file holds the real prefix (/usr/local/...), not the DESTDIR, so
# pkg-config is pointed at the installed .pc with PKG_CONFIG_LIBDIR (nothing
# else is searched, so a system-wide copy cannot be picked up by mistake) and
# PKG_CONFIG_SYSROOT_DIR=DESTDIR, which pkgconf 1.8 prepends to the -I and
# -L paths.  (--define-prefix would not do: it derives the prefix from a
# .pc living in PREFIX/lib/pkgconfig, and Debian's libdir is multiarch.)
#
# usage: install-consumer.sh --meson M --build DIR --pkg-config P
#        --source consumer.c --prefix P --libdir L --includedir I
#        --version V [--sanitize S] [--coverage true|false]
#        [--header NAME]... -- CC [CC args...]
set -eu

meson=meson pkgconfig=pkg-config build='' source='' prefix='' libdir=''
includedir='' version='' sanitize=none coverage=false headers=''
while [ $# -gt 0 ]; do
	case $1 in
	--meson) meson=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	--pkg-config) pkgconfig=$2; shift 2 ;;
	--source) source=$2; shift 2 ;;
	--prefix) prefix=$2; shift 2 ;;
	--libdir) libdir=$2; shift 2 ;;
	--includedir) includedir=$2; shift 2 ;;
	--version) version=$2; shift 2 ;;
	--sanitize) sanitize=$2; shift 2 ;;
	--coverage) coverage=$2; shift 2 ;;
	--header) headers="$headers $2"; shift 2 ;;
	--) shift; break ;;
	*) echo "install-consumer.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
[ $# -gt 0 ] || { echo "install-consumer.sh: no compiler given" >&2; exit 2; }
for v in build source prefix libdir includedir version; do
	eval "[ -n \"\$$v\" ]" || { echo "install-consumer.sh: --$v missing" >&2; exit 2; }
done

# meson gives libdir/includedir relative to the prefix or absolute.
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac
case $includedir in /*) ;; *) includedir=$prefix/$includedir ;; esac

fail() {
	echo "FAIL: $*"
	exit 1
}

dest=$(mktemp -d "${TMPDIR:-/tmp}/srsv-install.XXXXXX")
trap 'rm -rf "$dest"' EXIT INT TERM

echo "# meson install --destdir $dest"
"$meson" install -C "$build" --no-rebuild --quiet --destdir "$dest" ||
	fail "meson install"

# Installed layout.
inc=$dest$includedir/libspacersv
lib=$dest$libdir
for h in $headers; do
	[ -f "$inc/$h" ] || fail "header $h not installed in $inc"
done
[ -f "$inc/spacersv.h" ] || fail "spacersv.h not installed in $inc"
[ -L "$lib/libspacersv.so" ] || fail "$lib/libspacersv.so (dev symlink) missing"
[ -e "$lib/libspacersv.so.0" ] || fail "$lib/libspacersv.so.0 (SONAME link) missing"
[ -f "$lib/libspacersv.a" ] || fail "$lib/libspacersv.a missing"
[ -f "$lib/pkgconfig/libspacersv.pc" ] || fail "libspacersv.pc not installed in $lib/pkgconfig"
# Internal headers must not leak into the installed tree.
for h in internal.h lock.h trace.h config.h; do
	[ ! -e "$inc/$h" ] || fail "internal header $h installed"
done
echo "ok   installed layout ($(echo "$headers" | wc -w) headers, .so, .so.0, .a, .pc)"

pc() {
	PKG_CONFIG_LIBDIR=$lib/pkgconfig PKG_CONFIG_PATH='' \
		PKG_CONFIG_SYSROOT_DIR=$dest "$pkgconfig" "$@" libspacersv
}
got=$(pc --modversion) || fail "pkg-config --modversion"
[ "$got" = "$version" ] || fail "pkg-config version $got, project version $version"
cflags=$(pc --cflags) || fail "pkg-config --cflags"
libs=$(pc --libs) || fail "pkg-config --libs"
slibs=$(pc --static --libs) || fail "pkg-config --static --libs"
echo "ok   pkg-config $version: cflags '$cflags' libs '$libs' static '$slibs'"
# The -I/-L paths must point into the DESTDIR copy (unless the prefix is a
# system directory that pkg-config rightly omits).
case " $cflags $libs " in
*"$dest"*) ;;
*) case $prefix in /usr) ;; *) fail "pkg-config flags do not point into $dest" ;; esac ;;
esac

# A consumer is compiled as strict C99: the public API must be usable from
# it.  Sanitized or coverage builds of the library need the same runtime.
extra=
[ "$sanitize" = none ] || extra="-fsanitize=$sanitize"
[ "$coverage" != true ] || extra="$extra --coverage"
work=$dest/consumer
mkdir -p "$work"

# shellcheck disable=SC2086 # pkg-config output is a list of words
"$@" -std=c99 -pedantic -Wall -Wextra -Werror $extra $cflags "$source" \
	-o "$work/consumer-shared" $libs || fail "building the shared consumer"
loaded=$(LD_LIBRARY_PATH=$lib ldd "$work/consumer-shared" |
	 sed -n 's/^[[:space:]]*libspacersv\.so\.0 => \([^ ]*\).*/\1/p')
case $loaded in
"$lib"/*) ;;
*) fail "shared consumer resolves libspacersv.so.0 to '$loaded', not the installed copy" ;;
esac
LD_LIBRARY_PATH=$lib "$work/consumer-shared" || fail "shared consumer exited $?"
echo "ok   shared consumer (loads $loaded)"

slibs=$(echo " $slibs " | sed 's/ -lspacersv / -l:libspacersv.a /')
case $slibs in *-l:libspacersv.a*) ;; *) fail "no -lspacersv in '$slibs'" ;; esac
# shellcheck disable=SC2086
"$@" -std=c99 -pedantic -Wall -Wextra -Werror $extra $cflags "$source" \
	-o "$work/consumer-static" $slibs || fail "building the static consumer"
if readelf -d "$work/consumer-static" | grep -q 'NEEDED.*libspacersv'; then
	fail "static consumer still needs libspacersv.so"
fi
"$work/consumer-static" || fail "static consumer exited $?"
echo "ok   static consumer (no libspacersv.so needed)"
echo "ok"
