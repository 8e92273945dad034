#!/usr/bin/env bash
# Builds libjxl's `ssimulacra2` tool (the reference SSIMULACRA2 implementation) from Debian 13
# (trixie)'s jpeg-xl 0.11 source package, against Debian 12's -dev packages, into PREFIX/bin.
#
#   deps/build-ssimulacra2.sh PREFIX      (e.g. .build/ssimulacra2-ref; gives PREFIX/bin/ssimulacra2)
#
# Only the tests' reference table needs it (fixtures/ssimulacra2/make-reference.sh): runner
# itself never links libjxl's tool. Debian 12's libjxl-devtools (0.7) has no ssimulacra2 (only
# ssimulacra_main, the first SSIMULACRA); Debian 13's libjxl-devtools (0.11) ships it, but that is a
# trixie binary package, which a Debian 12 machine must not install.
#
# Both source packages come from Debian's own archive (`apt-get source`, through the `deb-src` line
# for trixie that deps/build-libvips.sh adds, added here too if missing: sources only). Debian's
# patches are applied by dpkg-source. Debian strips libjxl's bundled third_party/ copies from its
# orig tarball, so nothing is bundled: Highway is Debian 13's 1.2.0 (libjxl 0.11 wants 1.0.7 or
# later; Debian 12 has 1.0.3), built static into the work folder; brotli, lcms2, libpng and libjpeg
# are Debian 12's shared libraries. libjxl is built static (BUILD_SHARED_LIBS=OFF) with the
# developer tools on and tests, docs, man pages, benchmark, examples, Java, plugins, jpegli, sjpeg,
# OpenEXR, skcms and tcmalloc off, and only the `ssimulacra2` target is built. The tool reads PNG,
# JPEG, PNM, PFM, PGX and JXL (not WebP or AVIF).
#
# Cached: PREFIX/RECIPE records what made the prefix (this script's hash and the source package
# versions); when it matches this script, nothing is done and nothing is fetched. The stamp is
# written last, so an interrupted build is redone from scratch.
#
# Environment: JOBS (default nproc).
set -euo pipefail

PREFIX=${1:?usage: deps/build-ssimulacra2.sh PREFIX}
case $PREFIX in /*) ;; *) PREFIX=$PWD/$PREFIX ;; esac
JOBS=${JOBS:-$(nproc)}
SCRIPT_HASH=$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-16)
# The versions known to build here, fetched straight from Debian's pool (checked against these
# hashes, from their .dsc files; a "~" in a name is sent as %7e) when apt's index names a version the mirror no longer or not yet has.
PINNED_JXL=0.11.2-0.1~deb13u2
PINNED_HWY=1.2.0-2
declare -A PINNED_SHA256=(
    [jpeg-xl_0.11.2.orig.tar.gz]=ab38928f7f6248e2a98cc184956021acb927b16a0dee71b4d260dc040a4320ea
    [jpeg-xl_0.11.2-0.1~deb13u2.debian.tar.xz]=54192375c3ff271f395b815a8ea111a5f632f5db8966baeda9dabedbc86ea2d4
    [highway_1.2.0.orig.tar.gz]=7e0be78b8318e8bdbf6fa545d2ecb4c90f947df03f7aadc42c1967f019e63343
    [highway_1.2.0-2.debian.tar.xz]=0f112418716ca1000b19ed86d0c49c8b9edf384ccf966e458790dcea660fec96
)
BUILD_PACKAGES=(dpkg-dev cmake ninja-build g++ pkg-config libbrotli-dev liblcms2-dev libpng-dev libjpeg-dev)
SOURCES_LIST=/etc/apt/sources.list.d/runner-trixie-src.sources

log() { printf 'build-ssimulacra2: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo

if [ -f "$PREFIX/RECIPE" ] && grep -qx "script $SCRIPT_HASH" "$PREFIX/RECIPE" && [ -x "$PREFIX/bin/ssimulacra2" ]; then
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
    if ! apt-cache showsrc jpeg-xl 2>/dev/null | grep -q '^Version: 0\.11' && [ ! -f "$SOURCES_LIST" ]; then
        log "adding $SOURCES_LIST (Debian 13 source packages only)"
        printf '%s\n' 'Types: deb-src' 'URIs: http://deb.debian.org/debian' 'Suites: trixie' 'Components: main' \
            'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' | $SUDO tee "$SOURCES_LIST" >/dev/null
    fi
    $SUDO apt-get update -qq
    apt-cache showsrc jpeg-xl | grep -q '^Version: 0\.11' || die "apt knows no source package of jpeg-xl 0.11"
}

# Fetches source package $1 (pinned version $2) into the current folder and prints its .dsc's name.
fetch_source() {
    local package=$1 pinned=$2 dsc
    if apt-get source --download-only -qq "$package" >/dev/null 2>&1; then
        dsc=$(ls -t "${package}"_*.dsc | head -1)
    else
        log "the mirror lacks the $package version apt's index names; fetching the pinned $pinned"
        local base=http://deb.debian.org/debian/pool/main/${package:0:1}/$package file
        curl -fsSo "${package}_${pinned}.dsc" "$base/${package}_${pinned//\~/%7e}.dsc" || die "cannot fetch ${package}_${pinned}.dsc"
        dsc=${package}_${pinned}.dsc
        for file in $(awk '/^Checksums-Sha256:/ {on=1; next} /^[^ ]/ {on=0} on {print $3}' "$dsc"); do
            curl -fsSo "$file" "$base/${file//\~/%7e}" || die "cannot fetch $file"
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

# Static, into the work folder: only the tool's link needs it.
build_highway() {
    cmake -S "$1" -B highway-build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$WORK/highway" \
        -DCMAKE_INSTALL_LIBDIR=lib -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
        -DBUILD_TESTING=OFF -DHWY_ENABLE_TESTS=OFF -DHWY_ENABLE_EXAMPLES=OFF -DHWY_ENABLE_CONTRIB=OFF \
        -DCMAKE_CXX_FLAGS=-DHWY_BROKEN_EMU128=0 >highway-configure.log
    ninja -C highway-build -j "$JOBS" install >highway-build.log
}

build_ssimulacra2() {
    cmake -S "$1" -B jxl-build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$WORK/highway" \
        -DBUILD_SHARED_LIBS=OFF -DBUILD_TESTING=OFF \
        -DJPEGXL_ENABLE_DEVTOOLS=ON -DJPEGXL_ENABLE_TOOLS=ON -DJPEGXL_ENABLE_BENCHMARK=OFF \
        -DJPEGXL_ENABLE_DOXYGEN=OFF -DJPEGXL_ENABLE_MANPAGES=OFF -DJPEGXL_ENABLE_EXAMPLES=OFF \
        -DJPEGXL_ENABLE_JNI=OFF -DJPEGXL_ENABLE_PLUGINS=OFF -DJPEGXL_ENABLE_JPEGLI=OFF \
        -DJPEGXL_ENABLE_SJPEG=OFF -DJPEGXL_ENABLE_OPENEXR=OFF -DJPEGXL_ENABLE_SKCMS=OFF \
        -DJPEGXL_ENABLE_TCMALLOC=OFF -DJPEGXL_ENABLE_FUZZERS=OFF -DJPEGXL_BUNDLE_LIBPNG=OFF \
        -DJPEGXL_FORCE_SYSTEM_BROTLI=ON -DJPEGXL_FORCE_SYSTEM_LCMS2=ON -DJPEGXL_FORCE_SYSTEM_HWY=ON \
        -DJPEGXL_FORCE_SYSTEM_GTEST=ON >jxl-configure.log
    ninja -C jxl-build -j "$JOBS" ssimulacra2 >jxl-build.log
}

main() {
    install_build_packages
    add_source_line
    mkdir -p "${PREFIX%/*}"
    WORK=$(mktemp -d "${PREFIX%/*}/ssimulacra2-work.XXXXXX")
    trap 'rm -rf "$WORK"' EXIT
    cd "$WORK"
    local jxl_dsc hwy_dsc
    jxl_dsc=$(fetch_source jpeg-xl "$PINNED_JXL")
    hwy_dsc=$(fetch_source highway "$PINNED_HWY")
    # The .dsc files were checked against apt's signed index or the pinned hashes; dpkg-source only
    # lacks the uploaders' keys (debian-keyring) to say so again.
    unpack "$jxl_dsc" jxl-source
    unpack "$hwy_dsc" highway-source
    rm -rf "$PREFIX"
    log "building ssimulacra2 of ${jxl_dsc%.dsc} (with ${hwy_dsc%.dsc}) into $PREFIX with $JOBS jobs (a few minutes)"
    local start=$SECONDS
    build_highway highway-source || die "highway failed to build (logs were in $WORK)"
    build_ssimulacra2 jxl-source || { tail -30 jxl-build.log >&2; die "ssimulacra2 failed to build"; }
    install -D -m 755 jxl-build/tools/ssimulacra2 "$PREFIX/bin/ssimulacra2"
    strip "$PREFIX/bin/ssimulacra2"
    printf 'script %s\nsource %s\nsource %s\nbuilt in %ss\n' "$SCRIPT_HASH" "${jxl_dsc%.dsc}" "${hwy_dsc%.dsc}" \
        $((SECONDS - start)) >"$PREFIX/RECIPE"
    log "built in $((SECONDS - start)) s: $PREFIX/bin/ssimulacra2"
}

main
