#!/usr/bin/env bash
# A fresh Debian 12 root for the image (deploy/image/build.sh) and the package's test
# (deploy/debian/test.sh), so both share one debootstrap:
#
#   deploy/rootfs.sh BASE ROOT
#
# BASE is `debootstrap --variant=minbase bookworm`, made once (a few minutes); ROOT becomes a fresh
# copy of it (anything an earlier build or test left is removed first, /proc unmounted). Needs root.
set -euo pipefail
BASE=$(readlink -m "${1:?usage: rootfs.sh BASE ROOT}")
ROOT=$(readlink -m "${2:?}")
if [ ! -x "$BASE/usr/bin/apt-get" ]; then
    echo "rootfs: debootstrap minbase bookworm into $BASE (a few minutes, once)" >&2
    rm -rf "$BASE"
    command -v debootstrap >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
    debootstrap --variant=minbase bookworm "$BASE" http://deb.debian.org/debian >"$BASE.log" 2>&1 \
        || { tail -5 "$BASE.log" >&2; echo "rootfs: debootstrap failed ($BASE.log)" >&2; exit 1; }
fi
if mountpoint -q "$ROOT/proc"; then umount "$ROOT/proc"; fi
rm -rf "$ROOT"
cp -a "$BASE" "$ROOT"
