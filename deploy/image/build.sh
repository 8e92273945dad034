#!/usr/bin/env bash
# Builds runner's OCI image with no registry and no Docker engine (`make image`):
#
#   deploy/image/build.sh RUNNER ROOTFS TAG
#
# 1. ROOTFS: a fresh copy of Debian 12 minbase (`debootstrap --variant=minbase bookworm` into
#    ROOTFS.base, made once), so nothing of an earlier build stays.
# 2. The Debian packages that own the shared libraries runner, its libvips and libvips' modules
#    load (found with ldd and dpkg -S on this machine, which built them), and ca-certificates (an
#    https store or origin): nothing else is installed, and no recommends.
# 3. The libraries that are no Debian package's (the Swift runtime, libvips 8.16) in /usr/local/lib,
#    found through ld.so.cache (the RUNPATH names this machine's build folder, which the image does
#    not have), libvips' modules in /usr/local/lib/vips-modules-*, where libvips looks beside the
#    binary's prefix, and runner as /usr/local/bin/runner.
# 4. `tar | podman import` with runner as the entrypoint and /work as the working folder (a volume
#    mounted there shadows nothing runner needs).
#
# Needs root (debootstrap, chroot), debootstrap and podman (`make image` installs them).
set -euo pipefail
RUNNER=$(readlink -f "${1:?usage: build.sh RUNNER ROOTFS TAG}")
ROOTFS=$(readlink -m "${2:?}")
TAG=${3:?}
log() { printf 'image: %s\n' "$*" >&2; }

if [ ! -x "$ROOTFS.base/usr/bin/apt-get" ]; then
    log "debootstrap minbase bookworm into $ROOTFS.base (a few minutes, once)"
    rm -rf "$ROOTFS.base"
    debootstrap --variant=minbase bookworm "$ROOTFS.base" http://deb.debian.org/debian >/dev/null
fi
mountpoint -q "$ROOTFS/proc" && umount "$ROOTFS/proc"
rm -rf "$ROOTFS"
cp -a "$ROOTFS.base" "$ROOTFS"

# Every library the binary and libvips' modules load, resolved as on this machine.
VIPS_LIB=$(ldd "$RUNNER" | awk '$1 ~ /^libvips\.so/ {print $3}')
VIPS_PREFIX_LIB=$(dirname "$VIPS_LIB")
MODULES=$(find "$VIPS_PREFIX_LIB" -maxdepth 1 -type d -name 'vips-modules-*')
mapfile -t LIBRARIES < <({ ldd "$RUNNER"; for module in "$MODULES"/*.so; do ldd "$module"; done; } \
    | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u)
PACKAGES=(ca-certificates)
COPIED=()
for library in "${LIBRARIES[@]}"; do
    owner=""
    for candidate in "$library" "$(readlink -f "$library")" "/usr$library" "/usr$(readlink -f "$library")"; do
        owner=$(dpkg -S "$candidate" 2>/dev/null | head -1 | cut -d: -f1) && [ -n "$owner" ] && break
    done
    if [ -n "$owner" ]; then PACKAGES+=("$owner"); else COPIED+=("$library"); fi
done
mapfile -t PACKAGES < <(printf '%s\n' "${PACKAGES[@]}" | sort -u)
log "installing ${#PACKAGES[@]} Debian packages: ${PACKAGES[*]}"
cp /etc/resolv.conf "$ROOTFS/etc/resolv.conf"
chroot "$ROOTFS" apt-get update -qq
DEBIAN_FRONTEND=noninteractive chroot "$ROOTFS" apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null
chroot "$ROOTFS" apt-get clean
rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS/etc/resolv.conf"

log "copying ${#COPIED[@]} libraries no package owns, libvips' modules, and runner"
mkdir -p "$ROOTFS/usr/local/lib/$(basename "$MODULES")"
for library in "${COPIED[@]}"; do
    # A module's RUNPATH may name libvips where it was built rather than the prefix runner links: one copy.
    cp -L "$library" "$ROOTFS/usr/local/lib/$(basename "$library")"
done
cp -L "$MODULES"/*.so "$ROOTFS/usr/local/lib/$(basename "$MODULES")/"
chroot "$ROOTFS" ldconfig
install -D -m 0755 "$RUNNER" "$ROOTFS/usr/local/bin/runner"
mkdir -p "$ROOTFS/work"
# Foundation reads a process's arguments from /proc, as every container has it: mounted for the check
# alone, and unmounted before the root filesystem is archived.
mount -t proc proc "$ROOTFS/proc"
trap 'umount "$ROOTFS/proc"' EXIT
log "runs: $(chroot "$ROOTFS" /usr/local/bin/runner --version)"
# Every module libvips was built with loads from its new folder (AVIF is libheif's).
chroot "$ROOTFS" /usr/local/bin/runner formats | grep -q '^AVIF  *yes  *yes' \
    || { echo "image: libvips' modules do not load from /usr/local/lib" >&2; exit 1; }
umount "$ROOTFS/proc"
trap - EXIT

# Never archive a /proc a stopped test-image left mounted.
mountpoint -q "$ROOTFS/proc" && umount "$ROOTFS/proc"
log "podman import as $TAG"
tar -C "$ROOTFS" -c . | podman import --change 'ENTRYPOINT ["/usr/local/bin/runner"]' --change 'WORKDIR /work' - "$TAG" >/dev/null
podman image inspect --format '{{.Id}} {{.Size}} bytes' "$TAG"
