#!/usr/bin/env bash
# Builds runner's OCI image with no registry and no Docker engine (`make image`) from runner's
# Debian package (`make deb`), so the image and the package are one packaging path:
#
#   deploy/image/build.sh DEB ROOTFS TAG
#
# 1. ROOTFS: a fresh copy of Debian 12 minbase (deploy/rootfs.sh: `debootstrap --variant=minbase
#    bookworm` into ROOTFS.base, made once and shared with `make test-deb`), so nothing of an
#    earlier build stays.
# 2. `apt-get install --no-install-recommends ./runner_VERSION_amd64.deb ca-certificates` in it: the
#    Debian packages the package depends on come from Debian's archive, runner is /usr/bin/runner,
#    its libvips 8.16 and modules are in /usr/lib/runner (/usr/local/bin/runner, where earlier
#    images had it, is a link to it); ca-certificates for an https store or origin; no recommends.
#    apt's lists and caches are removed.
# 3. `tar | podman import` with runner as the entrypoint and /work as the working folder (a volume
#    mounted there shadows nothing runner needs).
#
# Needs root (debootstrap, chroot), debootstrap and podman (`make image` installs them).
set -euo pipefail
DEB=$(readlink -f "${1:?usage: build.sh DEB ROOTFS TAG}")
ROOTFS=$(readlink -m "${2:?}")
TAG=${3:?}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
log() { printf 'image: %s\n' "$*" >&2; }

"$HERE/../rootfs.sh" "$ROOTFS.base" "$ROOTFS"
log "installing $(basename "$DEB") and the Debian packages it depends on"
cp "$DEB" "$ROOTFS/tmp/"
cp /etc/resolv.conf "$ROOTFS/etc/resolv.conf"
chroot "$ROOTFS" apt-get update -qq
DEBIAN_FRONTEND=noninteractive chroot "$ROOTFS" sh -c "cd /tmp && apt-get install -y -qq --no-install-recommends ./$(basename "$DEB") ca-certificates" >/dev/null
chroot "$ROOTFS" apt-get clean
rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS/etc/resolv.conf" "$ROOTFS/tmp/$(basename "$DEB")"
mkdir -p "$ROOTFS/work"
# Images before the package put runner in /usr/local/bin: a pod spec that names that path still works.
ln -s /usr/bin/runner "$ROOTFS/usr/local/bin/runner"
# Foundation reads a process's arguments from /proc, as every container has it: mounted for the check
# alone, and unmounted before the root filesystem is archived.
mount -t proc proc "$ROOTFS/proc"
trap 'umount "$ROOTFS/proc"' EXIT
log "runs: $(chroot "$ROOTFS" /usr/bin/runner --version)"
# Every module libvips was built with loads from the package's folder (AVIF is libheif's).
chroot "$ROOTFS" /usr/bin/runner formats | grep -q '^AVIF  *yes  *yes' \
    || { echo "image: libvips' modules do not load from /usr/lib/runner" >&2; exit 1; }
umount "$ROOTFS/proc"
trap - EXIT

log "podman import as $TAG"
tar -C "$ROOTFS" -c . | podman import --change 'ENTRYPOINT ["/usr/bin/runner"]' --change 'WORKDIR /work' - "$TAG" >/dev/null
podman image inspect --format '{{.Id}} {{.Size}} bytes' "$TAG"
