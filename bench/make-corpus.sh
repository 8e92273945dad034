#!/usr/bin/env bash
# Builds the benchmark corpus under bench/cache/corpus/, deterministically, with the vips CLI.
#
#   bench/make-corpus.sh [quick|small|large|tiny|all]...     (default: all: quick, large, small)
#
# Sets:
#   large  LARGE_COUNT (200) JPEGs of 8-20 megapixels
#   small  SMALL_COUNT (2000) JPEGs of 1-2 megapixels
#   quick  QUICK_COUNT (20) JPEGs of ~1.5 megapixels, synthetic (made from seeded vips noise, so it
#          needs nothing but libvips-tools: `bench.py --quick` and the test suite use it)
#   tiny   TINY_COUNT (500) JPEGs of 64x64, synthetic like quick: what a run costs per image when
#          there are almost no pixels (bench/fixedcost.py; not part of `all`)
#
# large and small are re-encodings of the real photographs (and a few renders) that Debian ships
# in lomiri-wallpapers-16.04, lomiri-wallpapers-20.04, plasma-workspace-wallpapers and
# mate-backgrounds (installed with apt-get when missing). Each output is its own crop, scale
# step, rotation and JPEG quality of a source, picked by a fixed pseudo-random sequence, so the
# files are distinct and the same on every run of the same script, package versions and libvips.
#
# Each set's folder holds RECIPE (what made it: CORPUS_VERSION, the sources' hashes, the
# libvips version, the count) and SHA256SUMS (every file, RECIPE included). A set whose RECIPE is
# unchanged and whose SHA256SUMS checks is left as it is; otherwise it is rebuilt from scratch.
#
# Environment: CORPUS_DIR (default bench/cache/corpus), JOBS (default nproc),
# LARGE_COUNT, SMALL_COUNT, QUICK_COUNT, TINY_COUNT.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CORPUS_DIR=${CORPUS_DIR:-$HERE/cache/corpus}
JOBS=${JOBS:-$(nproc)}
LARGE_COUNT=${LARGE_COUNT:-200}
SMALL_COUNT=${SMALL_COUNT:-2000}
QUICK_COUNT=${QUICK_COUNT:-20}
TINY_COUNT=${TINY_COUNT:-500}
PACKAGES=(lomiri-wallpapers-16.04 lomiri-wallpapers-20.04 plasma-workspace-wallpapers mate-backgrounds)
# Bump when a change to this script changes what it makes: a set made by another version is rebuilt.
CORPUS_VERSION=1

log() { printf 'make-corpus: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

command -v vips >/dev/null && command -v vipsheader >/dev/null \
    || die "the vips CLI is missing (apt-get install libvips-tools)"
VIPS_VERSION=$(vips --version)
export VIPS_WARNING=0   # some sources carry EXIF the loader warns about; nothing to act on

# --- sources ----------------------------------------------------------------------------------

install_packages() {
    local missing=() p
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 || {
        $sudo apt-get update -qq && $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
    } || die "cannot install ${missing[*]}"
}

# Prints "width height path" for each image file named on stdin (one a line) that is 8-bit,
# 3-band and at least MIN_MP megapixels, in input order. One vipsheader for all of them.
image_sizes() {
    xargs -r -d '\n' vipsheader 2>/dev/null | awk -v min="$1" '
        match($0, /: [0-9]+x[0-9]+ [a-z]+, [0-9]+ bands?,/) {
            path = substr($0, 1, RSTART - 1)
            split(substr($0, RSTART + 2), f, /[x, ]+/)          # width height format bands ...
            if (f[3] == "uchar" && f[4] == 3 && f[1] * f[2] >= min * 1000000) print f[1], f[2], path
        }'
}

# Prints "width height path" for every usable source photo (regular JPEG files of the packages,
# 8-bit sRGB, at least MIN_MP megapixels, no preview screenshots), sorted by path.
list_sources() {
    local p f
    for p in "${PACKAGES[@]}"; do dpkg -L "$p"; done | grep -iE '\.jpe?g$' | grep -v '/screenshot' | LC_ALL=C sort -u |
        while read -r f; do if [ -f "$f" ] && [ ! -L "$f" ]; then printf '%s\n' "$f"; fi; done |
        image_sizes "$1"
}

# --- checks -----------------------------------------------------------------------------------

# True when $dir holds a set made by the recipe $recipe, every file matching SHA256SUMS.
set_is_current() {
    local dir=$1 recipe=$2 count=$3
    [ -f "$dir/RECIPE" ] && [ -f "$dir/SHA256SUMS" ] || return 1
    [ "$(cat "$dir/RECIPE")" = "$recipe" ] || return 1
    [ "$(find "$dir" -maxdepth 1 -name '*.jpg' | wc -l)" -eq "$count" ] || return 1
    (cd "$dir" && sha256sum --quiet --strict -c SHA256SUMS >/dev/null 2>&1)
}

seal_set() {
    local dir=$1 recipe=$2
    printf '%s\n' "$recipe" >"$dir/RECIPE"
    (cd "$dir" && find . -maxdepth 1 -type f \( -name '*.jpg' -o -name RECIPE \) -printf '%P\n' | LC_ALL=C sort |
        xargs -r sha256sum >SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS)
}

# --- one variant ------------------------------------------------------------------------------

# make_variant OUT SRC LEFT TOP WIDTH HEIGHT SCALE ANGLE QUALITY
# crop -> resize (lanczos3) -> rotate -> JPEG (optimised Huffman tables off, metadata stripped).
make_variant() {
    local out=$1 src=$2 left=$3 top=$4 width=$5 height=$6 scale=$7 angle=$8 q=$9
    local tmp="${out%.jpg}.tmp"
    vips extract_area "$src" "$tmp.a.v" "$left" "$top" "$width" "$height" &&
        vips resize "$tmp.a.v" "$tmp.b.v" "$scale" --kernel lanczos3 &&
        rm -f "$tmp.a.v" &&
        vips rot "$tmp.b.v" "$out.part.jpg[Q=$q,strip]" "$angle" &&
        rm -f "$tmp.b.v" &&
        mv "$out.part.jpg" "$out"
}
export -f make_variant

# plan SET COUNT MIN_MP MAX_MP SEED < "width height path" lines
# Prints one "out src left top width height scale angle quality" line per output file. The
# choices come from a fixed linear congruential generator, so the plan is the same every run.
plan() {
    awk -v set="$1" -v count="$2" -v minmp="$3" -v maxmp="$4" -v seed="$5" '
        BEGIN { n = 0 }
        function rnd() { state = (state * 1103515245 + 12345) % 2147483648; return state / 2147483648 }
        { w[n] = $1; h[n] = $2; $1 = ""; $2 = ""; sub(/^  /, ""); p[n] = $0; n++ }
        END {
            if (n == 0) { print "no sources" > "/dev/stderr"; exit 1 }
            split("d0 d90 d180 d270", angles, " ")
            split("70 75 80 85 90 95", qualities, " ")
            state = seed
            for (i = 0; i < count; i++) {
                s = i % n                                # every source in turn
                fx = 0.55 + 0.45 * rnd(); fy = 0.55 + 0.45 * rnd()
                cw = int(w[s] * fx); ch = int(h[s] * fy)
                left = int((w[s] - cw) * rnd()); top = int((h[s] - ch) * rnd())
                mp = minmp + (maxmp - minmp) * rnd()     # target megapixels
                scale = sqrt(mp * 1000000 / (cw * ch))
                angle = angles[1 + int(4 * rnd())]
                q = qualities[1 + int(6 * rnd())]
                printf "%s/%s%04d.jpg\t%s\t%d\t%d\t%d\t%d\t%.6f\t%s\t%s\n", set, substr(set, 1, 1), i, p[s], left, top, cw, ch, scale, angle, q
            }
        }'
}

run_plan() {   # reads plan lines, runs them JOBS at a time
    tr '\t\n' '\0\0' | xargs -0 -r -n 9 -P "$JOBS" bash -ec 'make_variant "$@"' make_variant
}

# --- sets -------------------------------------------------------------------------------------

build_photo_set() {   # build_photo_set NAME COUNT MIN_MP MAX_MP SOURCE_MIN_MP STAGE_LONG_EDGE SEED
    local name=$1 count=$2 minmp=$3 maxmp=$4 srcmin=$5 stage=$6 seed=$7
    local dir=$CORPUS_DIR/$name
    install_packages
    local sources
    sources=$(list_sources "$srcmin")
    [ -n "$sources" ] || die "no source photos found in ${PACKAGES[*]}"
    local source_hash
    source_hash=$(printf '%s\n' "$sources" | cut -d' ' -f3- | xargs -d '\n' sha256sum | sha256sum | cut -c1-16)
    local recipe="set=$name count=$count mp=$minmp-$maxmp srcmin=$srcmin stage=$stage seed=$seed version=$CORPUS_VERSION sources=$source_hash($(printf '%s\n' "$sources" | wc -l)) $VIPS_VERSION"
    if set_is_current "$dir" "$recipe" "$count"; then
        log "$name: up to date ($count files, checksums match)"
        return 0
    fi
    log "$name: building $count files from $(printf '%s\n' "$sources" | wc -l) sources with $JOBS jobs"
    rm -rf "$dir" "$CORPUS_DIR/.stage-$name"
    mkdir -p "$dir"
    local started=$SECONDS
    if [ "$stage" -gt 0 ]; then
        # Decode each source once, to an uncompressed .v of at most STAGE px on the long edge, and
        # cut the many small variants from those (mmap-ed) instead of re-decoding the big JPEGs.
        local stagedir=$CORPUS_DIR/.stage-$name
        mkdir -p "$stagedir"
        printf '%s\n' "$sources" | awk -v d="$stagedir" '{ w=$1; h=$2; $1=""; $2=""; sub(/^  /, ""); printf "%s\t%s/%03d.v\n", $0, d, NR }' |
            tr '\t\n' '\0\0' | xargs -0 -r -n 2 -P "$JOBS" sh -c 'vips thumbnail "$0" "$1" '"$stage"' --height '"$stage"' --size down'
        sources=$(printf '%s\n' "$stagedir"/*.v | image_sizes 0)
    fi
    (cd "$CORPUS_DIR" && printf '%s\n' "$sources" | plan "$name" "$count" "$minmp" "$maxmp" "$seed" | run_plan)
    rm -rf "$CORPUS_DIR/.stage-$name"
    local made
    made=$(find "$dir" -maxdepth 1 -name '*.jpg' | wc -l)
    [ "$made" -eq "$count" ] || die "$name: made $made files, expected $count"
    seal_set "$dir" "$recipe"
    log "$name: done in $((SECONDS - started))s ($(du -sh "$dir" | cut -f1))"
}

# make_master PREFIX SCALE SEED GRAIN_SEED: PREFIX.v, an sRGB master of smooth colour blobs (80x60
# seeded noise per band, upscaled SCALE times with lanczos3) plus fine grain, to cut crops from.
make_master() {
    local t=$1 scale=$2 seed=$3 grain_seed=$4 b
    for b in 0 1 2; do
        vips gaussnoise "$t.n$b.v" 80 60 --sigma 55 --mean 128 --seed $((b + seed))
    done
    vips bandjoin "$t.n0.v $t.n1.v $t.n2.v" "$t.j.v"
    vips resize "$t.j.v" "$t.r.v" "$scale" --kernel lanczos3
    vips gaussnoise "$t.g.v" $((80 * scale)) $((60 * scale)) --sigma 10 --mean 0 --seed "$grain_seed"
    vips add "$t.r.v" "$t.g.v" "$t.s.v"
    vips cast "$t.s.v" "$t.u.v" uchar
    vips copy "$t.u.v" "$t.v" --interpretation srgb
}

# Synthetic, package-free: one 2400x1800 master (seeded low-frequency colour noise, upscaled with
# lanczos3 x30 into smooth blobs and edges, plus fine grain), cut into QUICK_COUNT overlapping crops of
# ~1.2-1.6 megapixels at several JPEG qualities. Not photographs: a smoke-test set.
build_quick_set() {
    local count=$QUICK_COUNT dir=$CORPUS_DIR/quick
    local recipe="set=quick count=$count version=$CORPUS_VERSION $VIPS_VERSION"
    if set_is_current "$dir" "$recipe" "$count"; then
        log "quick: up to date ($count files, checksums match)"
        return 0
    fi
    log "quick: building $count synthetic files"
    rm -rf "$dir"
    mkdir -p "$dir/tmp"
    local t=$dir/tmp/m i
    make_master "$t" 30 1 4
    for ((i = 0; i < count; i++)); do
        local w=$((1280 + (i % 4) * 96)) h=$((960 + (i % 3) * 80)) q=$((70 + (i % 6) * 5))
        local left=$(((i * 397) % (2400 - w))) top=$(((i * 211) % (1800 - h)))
        vips extract_area "$t.v" "$dir/q$(printf '%03d' "$i").jpg[Q=$q,strip]" "$left" "$top" "$w" "$h"
    done
    rm -rf "$dir/tmp"
    seal_set "$dir" "$recipe"
}

# Synthetic like quick: a 1600x1200 master of smooth seeded colour blobs and grain, cut into
# TINY_COUNT 64x64 crops (a grid walk, so no two are alike) at JPEG qualities 70-95.
build_tiny_set() {
    local count=$TINY_COUNT dir=$CORPUS_DIR/tiny
    local recipe="set=tiny count=$count version=$CORPUS_VERSION $VIPS_VERSION"
    if set_is_current "$dir" "$recipe" "$count"; then
        log "tiny: up to date ($count files, checksums match)"
        return 0
    fi
    log "tiny: building $count synthetic 64x64 files"
    rm -rf "$dir"
    mkdir -p "$dir/tmp"
    local t=$dir/tmp/m
    make_master "$t" 20 11 14
    awk -v count="$count" -v master="$t.v" -v dir="$dir" 'BEGIN {
        for (i = 0; i < count; i++) {
            left = (i * 61) % (1600 - 64); top = (int(i / 24) * 47 + i * 13) % (1200 - 64)
            printf "%s\t%s/t%04d.jpg[Q=%d,strip]\t%d\t%d\n", master, dir, i, 70 + (i % 6) * 5, left, top
        } }' | tr '\t\n' '\0\0' | xargs -0 -r -n 4 -P "$JOBS" sh -c 'vips extract_area "$0" "$1" "$2" "$3" 64 64'
    rm -rf "$dir/tmp"
    seal_set "$dir" "$recipe"
}

mkdir -p "$CORPUS_DIR"
[ $# -gt 0 ] || set -- all
for target in "$@"; do
    case $target in
        quick) build_quick_set ;;
        #                         name  count          MP     source>=MP  stage  seed
        large) build_photo_set large "$LARGE_COUNT"  8 20  6           0      1 ;;
        small) build_photo_set small "$SMALL_COUNT"  1 2   2           2400   2 ;;
        tiny) build_tiny_set ;;
        all) build_quick_set
             build_photo_set large "$LARGE_COUNT" 8 20 6 0 1
             build_photo_set small "$SMALL_COUNT" 1 2 2 2400 2 ;;
        *) die "unknown set '$target' (quick, small, large, tiny, all)" ;;
    esac
done
