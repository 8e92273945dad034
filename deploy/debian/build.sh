#!/usr/bin/env bash
# Builds runner's Debian 12 package (`make deb`):
#
#   deploy/debian/build.sh BINARY MANUAL OUTDIR      -> OUTDIR/runner_VERSION_amd64.deb (its path on stdout)
#
# BINARY is the release build (`make build`: the Swift runtime linked statically). The package tree
# is laid out by deploy/stage.sh, as `make install` lays out a prefix: /usr/bin/runner with RUNPATH
# $ORIGIN/../lib/runner, libvips 8.16 (Highway linked in) and its modules privately in /usr/lib/runner,
# the manual and the completions; then this folder's systemd units (installed, not enabled), the
# maintainer scripts (the `runner` system user), the changelog, copyright, README.Debian, an example
# job and lintian's overrides. Depends is what dpkg-shlibdeps finds the shipped objects link, plus
# adduser (postinst). VERSION is runner's own (Sources/Support/Version.swift, what `runner --version`
# prints); the changelog's first entry must name it. Needs dpkg-dev and patchelf (`make deb` installs
# them when missing).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
BINARY=$(readlink -f "${1:?usage: build.sh BINARY MANUAL OUTDIR}")
MANUAL=$(readlink -f "${2:?}")
OUTDIR=$(readlink -m "${3:?}")
die() { echo "deb: $*" >&2; exit 1; }

VERSION=$(sed -n 's/.*static let string = "\([^"]*\)".*/\1/p' "$TOP/Sources/Support/Version.swift")
[ -n "$VERSION" ] || die "no version in Sources/Support/Version.swift"
logged=$(sed -n '1s/^runner (\([^)]*\)).*/\1/p' "$HERE/changelog")
[ "$logged" = "$VERSION" ] || die "deploy/debian/changelog's first entry is $logged; runner is $VERSION: add an entry for it"

umask 022
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
PKG=$WORK/debian/runner
"$TOP/deploy/stage.sh" --strip "$BINARY" "$PKG" /usr "$MANUAL"
# The tree's runner runs from where it was put, on its own libvips and modules (not the build's).
said=$(env -u VIPSHOME "$PKG/usr/bin/runner" --version)
[ "${said%% *}" = "$VERSION" ] || die "the packaged runner says $said, not $VERSION"
env -u VIPSHOME "$PKG/usr/bin/runner" formats | grep -q '^AVIF  *yes  *yes' || die "libvips' modules do not load from $PKG/usr/lib/runner"
gzip -9n "$PKG/usr/share/man/man1/runner.1"
install -D -m 644 "$HERE/runner@.service" "$PKG/lib/systemd/system/runner@.service"
install -D -m 644 "$HERE/runner@.timer" "$PKG/lib/systemd/system/runner@.timer"
DOC=$PKG/usr/share/doc/runner
install -D -m 644 "$HERE/copyright" "$DOC/copyright"
install -D -m 644 "$HERE/README.Debian" "$DOC/README.Debian"
install -D -m 644 "$HERE/nightly.json" "$DOC/examples/nightly.json"
gzip -9n -c "$HERE/changelog" >"$DOC/changelog.gz"
install -D -m 644 "$HERE/lintian-overrides" "$PKG/usr/share/lintian/overrides/runner"
install -d -m 755 "$PKG/etc/runner"

# Depends: the Debian packages (and versions) of the libraries the shipped objects link, read from
# their shlibs/symbols files by dpkg-shlibdeps, which wants a debian/control beside the tree. The
# private libraries are the package's own (found through their $ORIGIN RUNPATHs, which it resolves
# only once the tree has its DEBIAN folder; before, it took Debian's libvips42 for libvips.so.42);
# what they link counts. Any warning of its fails the build.
install -d -m 755 "$PKG/DEBIAN"
printf 'Source: runner\n\nPackage: runner\nArchitecture: amd64\n' >"$WORK/debian/control"
mapfile -t OBJECTS < <(cd "$WORK" && { echo debian/runner/usr/bin/runner; find debian/runner/usr/lib/runner -name '*.so*' -type f | sort; })
depends=$(cd "$WORK" && dpkg-shlibdeps -O "${OBJECTS[@]/#/-e}" 2>"$WORK/shlibdeps.log") \
    || { cat "$WORK/shlibdeps.log" >&2; die "dpkg-shlibdeps failed"; }
[ ! -s "$WORK/shlibdeps.log" ] || { cat "$WORK/shlibdeps.log" >&2; die "dpkg-shlibdeps warned"; }
depends=${depends#shlibs:Depends=}
[ -n "$depends" ] || die "dpkg-shlibdeps found no dependency"

install -m 755 "$HERE/postinst" "$HERE/postrm" "$PKG/DEBIAN/"
(cd "$PKG" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) >"$PKG/DEBIAN/md5sums"
chmod 644 "$PKG/DEBIAN/md5sums"
size=$(du -sk --exclude=DEBIAN "$PKG" | cut -f1)
sed -e "s/@VERSION@/$VERSION/" -e "s/@INSTALLED_SIZE@/$size/" -e "s/@DEPENDS@/$depends/" "$HERE/control.in" >"$PKG/DEBIAN/control"
mkdir -p "$OUTDIR"
DEB=$OUTDIR/runner_${VERSION}_amd64.deb
dpkg-deb --root-owner-group -Zxz --build "$PKG" "$DEB" >/dev/null
echo "$DEB"
