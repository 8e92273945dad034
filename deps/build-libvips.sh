#!/usr/bin/env bash
# Builds Debian 13 (trixie)'s libvips 8.16 into a prefix, against Debian 12's -dev packages, with
# Debian 13's Highway (Debian 12's libhwy 1.0.3 is below the 1.0.5 libvips needs for its SIMD paths).
#
#   deps/build-libvips.sh PREFIX          (the Makefile passes .build/libvips-8.16)
#
# Both come from Debian's own archive as source packages (`apt-get source`, through a `deb-src`
# line for trixie that this script adds if missing: sources only, so no trixie binary package can
# be installed by it). Debian's patches (security fixes) are applied by dpkg-source.
# Highway is linked into libvips.so statically with its symbols hidden: Debian 12's libjxl loads
# its own libhwy.so.1 (1.0.3) into the same process, and the two must not bind to each other.
# GLib and every codec are Debian 12's shared libraries, so a process has one copy of each.
#
# Cached: PREFIX/RECIPE records what made the prefix (this script's hash and the source package
# versions); when it matches this script, nothing is done and nothing is fetched. The stamp is
# written last, so an interrupted build is redone from scratch.
#
# Environment: JOBS (default nproc).
set -euo pipefail

PREFIX=${1:?usage: deps/build-libvips.sh PREFIX}
case $PREFIX in /*) ;; *) PREFIX=$PWD/$PREFIX ;; esac
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
JOBS=${JOBS:-$(nproc)}
SCRIPT_HASH=$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-16)
# The versions known to build here, fetched straight from Debian's pool (checked against these
# hashes, from their .dsc files) when apt's index names a version the mirror no longer or not yet has.
PINNED_VIPS=8.16.1-1+deb13u1
PINNED_HWY=1.2.0-2
declare -A PINNED_SHA256=(
    [vips_8.16.1.orig.tar.gz]=df960c3df02da8ae16ee19e79c9428e955d178242a8f06064e07e0c417238e6e
    [vips_8.16.1-1+deb13u1.debian.tar.xz]=2acd86c435b8ca9fe537c65d21c5f326814c9b10d244cafad5689e60bdb1dc37
    [highway_1.2.0.orig.tar.gz]=7e0be78b8318e8bdbf6fa545d2ecb4c90f947df03f7aadc42c1967f019e63343
    [highway_1.2.0-2.debian.tar.xz]=0f112418716ca1000b19ed86d0c49c8b9edf384ccf966e458790dcea660fec96
)
# Tools and the -dev packages Debian 12's libvips-dev does not already pull in.
BUILD_PACKAGES=(dpkg-dev meson ninja-build cmake libarchive-dev libexif-dev)
SOURCES_LIST=/etc/apt/sources.list.d/runner-trixie-src.sources

log() { printf 'build-libvips: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo

if [ -f "$PREFIX/RECIPE" ] && grep -qx "script $SCRIPT_HASH" "$PREFIX/RECIPE" && [ -f "$PREFIX/lib/pkgconfig/vips.pc" ]; then
    exit 0
fi

install_build_packages() {
    local missing=() p
    for p in "${BUILD_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
}

# apt's index of trixie's source packages, from a line of our own unless the machine has one.
add_source_line() {
    if ! apt-cache showsrc vips 2>/dev/null | grep -q '^Version: 8\.1[6-9]' && [ ! -f "$SOURCES_LIST" ]; then
        log "adding $SOURCES_LIST (Debian 13 source packages only)"
        printf '%s\n' 'Types: deb-src' 'URIs: http://deb.debian.org/debian' 'Suites: trixie' 'Components: main' \
            'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' | $SUDO tee "$SOURCES_LIST" >/dev/null
    fi
    $SUDO apt-get update -qq
    apt-cache showsrc vips | grep -q '^Version: 8\.1[6-9]' || die "apt knows no source package of libvips 8.16 or later"
}

# Fetches source package $1 (pinned version $2) into the current folder and prints its .dsc's name.
fetch_source() {
    local package=$1 pinned=$2 dsc
    if apt-get source --download-only -qq "$package" >/dev/null 2>&1; then
        dsc=$(ls -t "${package}"_*.dsc | head -1)
    else
        log "the mirror lacks the $package version apt's index names; fetching the pinned $pinned"
        local base=http://deb.debian.org/debian/pool/main/${package:0:1}/$package file
        curl -fsSO "$base/${package}_${pinned}.dsc" || die "cannot fetch ${package}_${pinned}.dsc"
        dsc=${package}_${pinned}.dsc
        for file in $(awk '/^Checksums-Sha256:/ {on=1; next} /^[^ ]/ {on=0} on {print $3}' "$dsc"); do
            curl -fsSO "$base/$file" || die "cannot fetch $file"
            [ -n "${PINNED_SHA256[$file]:-}" ] || die "$file is not pinned"
            echo "${PINNED_SHA256[$file]}  $file" | sha256sum -c --quiet - || die "$file does not match its pinned hash"
        done
    fi
    echo "$dsc"
}

unpack() {
    { dpkg-source -x "$1" "$2" 2>&1 >/dev/null | grep -v '^gpgv: \|cannot verify inline signature' >&2; } || true
    [ -d "$2" ] || die "dpkg-source could not unpack $1"
}

build_highway() {
    local source=$1
    cmake -S "$source" -B highway-build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PREFIX" \
        -DCMAKE_INSTALL_LIBDIR=lib -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
        -DBUILD_TESTING=OFF -DHWY_ENABLE_TESTS=OFF -DHWY_ENABLE_EXAMPLES=OFF -DHWY_ENABLE_CONTRIB=OFF \
        -DCMAKE_CXX_FLAGS=-DHWY_BROKEN_EMU128=0 >highway-configure.log
    ninja -C highway-build -j "$JOBS" install >highway-build.log
}

# Debian's own meson options, less what runner never uses (C++ API, docs, introspection), and PNG
# through libpng as in Debian 12's build, not libspng: 8.16's spng loader fails "end of stream" when
# a source that thumbnail_source has read is decoded again (runner shares one VipsSource per file).
# The RUNPATH makes the prefix's vips CLI and modules find its libvips.so.42, not Debian's 8.14.
build_vips() {
    local source=$1
    PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig LDFLAGS="-Wl,--exclude-libs,libhwy.a -Wl,-rpath,$PREFIX/lib" \
        meson setup vips-build "$source" --prefix="$PREFIX" --libdir=lib --buildtype=release \
        -Dmodules=enabled -Dhighway=enabled -Dintrospection=disabled -Dcplusplus=false -Dexamples=false \
        -Ddoxygen=false -Dgtk_doc=false -Dvapi=false -Dpdfium=disabled -Dnifti=disabled -Dspng=disabled >vips-configure.log
    ninja -C vips-build -j "$JOBS" install >vips-build.log
}

main() {
    command -v pkg-config >/dev/null && pkg-config --exists vips || die "Debian's libvips-dev is missing (make deps installs it)"
    install_build_packages
    add_source_line
    mkdir -p "${PREFIX%/*}"
    WORK=$(mktemp -d "${PREFIX%/*}/libvips-work.XXXXXX")
    trap 'rm -rf "$WORK"' EXIT
    cd "$WORK"
    local vips_dsc hwy_dsc
    vips_dsc=$(fetch_source vips "$PINNED_VIPS")
    hwy_dsc=$(fetch_source highway "$PINNED_HWY")
    # The .dsc files were checked against apt's signed index or the pinned hashes; dpkg-source only
    # lacks the uploaders' keys (debian-keyring) to say so again.
    unpack "$vips_dsc" vips-source
    unpack "$hwy_dsc" highway-source
    rm -rf "$PREFIX"
    log "building ${hwy_dsc%.dsc} and ${vips_dsc%.dsc} into $PREFIX with $JOBS jobs (a few minutes)"
    local start=$SECONDS
    build_highway highway-source
    build_vips vips-source
    printf 'script %s\nsource %s\nsource %s\nbuilt in %ss\n' "$SCRIPT_HASH" "${vips_dsc%.dsc}" "${hwy_dsc%.dsc}" \
        $((SECONDS - start)) >"$PREFIX/RECIPE"
    log "built in $((SECONDS - start)) s: $("$PREFIX/bin/vips" --version)"
}

main
