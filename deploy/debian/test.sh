#!/usr/bin/env bash
# `make test-deb`: the package installed and run where nothing was built.
#
#   deploy/debian/test.sh DEB BASE ROOT
#
# ROOT becomes a fresh copy of BASE (Debian 12 minbase, deploy/rootfs.sh: the base `make image`
# uses), which has no Swift and no -dev package. `apt-get install ./runner_VERSION_amd64.deb`
# resolves Depends from Debian; then, as the package's `runner` user, a real job: local photos, a
# URL served from this machine's 127.0.0.1 (the chroot shares the network; Tests/http-server,
# stopped by its PID) and a manifest, then the up-to-date night; `systemd-analyze verify` of the
# installed units; lintian on the package (no error); and `apt-get purge runner`, which must leave
# no file of the package, nor its user. Needs root, network access to deb.debian.org, lintian.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
DEB=$(readlink -f "${1:?usage: test.sh DEB BASE ROOT}")
BASE=$(readlink -m "${2:?}")
ROOT=$(readlink -m "${3:?}")
SERVER_PID=""
PORT_FILE=$(mktemp)
cleanup() {
    local status=$?
    set +e
    [ -n "$SERVER_PID" ] && { kill "$SERVER_PID"; wait "$SERVER_PID"; } 2>/dev/null
    mountpoint -q "$ROOT/proc" && umount "$ROOT/proc"
    rm -f "$PORT_FILE"
    [ "$status" = 0 ] && rm -rf "$ROOT"
    exit "$status"
}
trap cleanup EXIT
fail() { echo "test-deb: $*" >&2; echo "test-deb: the root is kept at $ROOT" >&2; exit 1; }
log() { echo "test-deb: $*" >&2; }
in_root() { chroot "$ROOT" "$@"; }

"$TOP/deploy/rootfs.sh" "$BASE" "$ROOT"
in_root sh -c 'command -v swift swiftc' && fail "the root has a Swift toolchain"
dev=$(in_root dpkg-query -W -f='${Package}\n' | grep -- '-dev$' || true)
[ -z "$dev" ] || fail "the root has -dev packages: $dev"

# 1. apt-get install ./runner_…deb, Depends from Debian's archive.
cp "$DEB" "$ROOT/tmp/"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
in_root apt-get update -qq
before=$(in_root dpkg-query -W | wc -l)
log "apt-get install ./$(basename "$DEB") (Depends from deb.debian.org)"
DEBIAN_FRONTEND=noninteractive chroot "$ROOT" sh -c "cd /tmp && apt-get install -y -qq ./$(basename "$DEB")" \
    >"$ROOT.apt.log" 2>&1 || { tail -20 "$ROOT.apt.log" >&2; fail "apt-get install failed ($ROOT.apt.log)"; }
rm "$ROOT/tmp/$(basename "$DEB")"
log "apt installed $(($(in_root dpkg-query -W | wc -l) - before)) packages: runner and what it depends on, with their recommends"
dev=$(in_root dpkg-query -W -f='${Package}\n' | grep -- '-dev$' || true)
[ -z "$dev" ] || fail "installing the package pulled -dev packages: $dev"
in_root getent passwd runner >/dev/null || fail "postinst made no user runner"
mount -t proc proc "$ROOT/proc"
version=$(in_root runner --version) || fail "runner does not start in the root"
log "runs: $version"
packaged=$(dpkg-deb -f "$DEB" Version)
[ "${version%% *}" = "$packaged" ] || fail "runner --version says $version, the package is version $packaged"
in_root runner formats | grep -q '^AVIF  *yes  *yes' || fail "libvips' modules do not load from /usr/lib/runner"
for path in $(patchelf --print-rpath "$ROOT/usr/bin/runner" | tr : ' '); do
    case $path in '$ORIGIN/../lib/runner') ;; *) fail "runner's RUNPATH has $path" ;; esac
done

# 2. A night: two local photos and one URL from 127.0.0.1, three outputs each and the manifest.
python3 "$TOP/Tests/http-server/server.py" --image "$TOP/fixtures/extra/ladybird.jpg" --port-file "$PORT_FILE" >/dev/null 2>&1 &
SERVER_PID=$!
for _ in $(seq 200); do [ -s "$PORT_FILE" ] && break; sleep 0.1; done
PORT=$(cat "$PORT_FILE")
[ -n "$PORT" ] || fail "the test HTTP server did not start"
mkdir -p "$ROOT/srv/photos/trip"
cp "$TOP/fixtures/photos/aitzgorri.jpg" "$TOP/fixtures/photos/fig-bowl.jpg" "$ROOT/srv/photos/trip/"
echo "http://127.0.0.1:$PORT/img/ladybird.jpg" >"$ROOT/srv/photos/urls.txt"
in_root install -d -o runner -g runner /srv/runner /var/lib/runner /var/cache/runner
cat >"$ROOT/etc/runner/nightly.json" <<'JOB'
{"version": 1, "name": "nightly",
 "sources": [{"path": "/srv/photos", "recursive": true}, {"list": "/srv/photos/urls.txt"}],
 "outputs": [{"name": "thumb", "path": "/srv/runner/img/{dir}/{stem}-thumb.webp",
              "chain": [{"op": "thumbnail", "width": 256, "height": 256, "fit": "cover"}], "format": {"type": "webp"}},
             {"name": "w640", "path": "/srv/runner/img/{dir}/{stem}-640.avif",
              "chain": [{"op": "thumbnail", "width": 640, "fit": "inside"}], "format": {"type": "avif"}}],
 "manifest": {"path": "/srv/runner/img/images.json"},
 "state": "/var/lib/runner/nightly.sqlite", "cache": "/var/cache/runner/nightly"}
JOB
night() { chroot --userspec=runner:runner "$ROOT" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/var/lib/runner \
    runner --quiet --max-duration 1h /etc/runner/nightly.json 2>&1; }
first=$(night) || fail "the first night failed: $first"
grep -q "6 done, 0 failed" <<<"$first" || fail "the first night: $first"
thumbs=$(find "$ROOT/srv/runner/img" -name '*-thumb.webp' | wc -l)
avifs=$(find "$ROOT/srv/runner/img" -name '*-640.avif' | wc -l)
[ "$thumbs" = 3 ] && [ "$avifs" = 3 ] || fail "the night wrote $thumbs thumbnails and $avifs AVIFs, not 3 and 3"
for file in $(find "$ROOT/srv/runner/img" -name '*.webp'); do head -c 12 "$file" | grep -q WEBP || fail "$file is no WebP"; done
for file in $(find "$ROOT/srv/runner/img" -name '*.avif'); do head -c 12 "$file" | grep -q ftypavif || fail "$file is no AVIF"; done
python3 - "$ROOT/srv/runner/img/images.json" <<'PY' || fail "the manifest"
import json, sys
manifest = json.load(open(sys.argv[1]))
text = json.dumps(manifest)
assert "ladybird" in text and "aitzgorri" in text and "fig-bowl" in text, text[:400]
PY
second=$(night) || fail "the second night failed: $second"
grep -q "0 done, 0 failed, 6 up to date" <<<"$second" || fail "the second night: $second"
log "a night in the root: 3 photos (one a URL from 127.0.0.1) into 6 outputs and the manifest, then up to date"

# 3. The units, as the package installed them, verified by the root's own systemd (installed now,
# after the night: minbase has none), which loads them from /lib/systemd/system.
DEBIAN_FRONTEND=noninteractive in_root apt-get install -y -qq --no-install-recommends systemd >>"$ROOT.apt.log" 2>&1 \
    || fail "apt-get install systemd failed ($ROOT.apt.log)"
verify=$(in_root systemd-analyze verify --man=no runner@nightly.service runner@nightly.timer 2>&1) \
    || fail "systemd-analyze verify: $verify"
[ -z "$verify" ] || fail "systemd-analyze verify says: $verify"
log "systemd-analyze verify runner@nightly.service runner@nightly.timer: nothing to say"

# 4. lintian: no error (the warnings left are overridden, each with its reason, deploy/debian/lintian-overrides).
lint=$(lintian --allow-root --tag-display-limit 0 "$DEB" 2>&1) || true
if grep -q '^E:' <<<"$lint"; then fail "lintian: $lint"; fi
if grep -q '^W:' <<<"$lint"; then fail "lintian warns (override it with a reason, or fix it): $lint"; fi

# 5. Purge: no file of the package stays, nor its user; the jobs' data (state, outputs, the job file) does.
umount "$ROOT/proc"
in_root dpkg-query -L runner | sort >"$ROOT.files"
DEBIAN_FRONTEND=noninteractive in_root apt-get purge -y -qq runner >>"$ROOT.apt.log" 2>&1 || fail "apt-get purge failed ($ROOT.apt.log)"
while read -r path; do
    [ -d "$ROOT$path" ] && continue   # a folder others share (or /lib, a link to one)
    [ -e "$ROOT$path" ] || [ -L "$ROOT$path" ] && fail "purge left $path"
done <"$ROOT.files"
for folder in /usr/lib/runner /usr/share/doc/runner; do [ ! -e "$ROOT$folder" ] || fail "purge left $folder"; done
in_root getent passwd runner >/dev/null && fail "purge left the user runner"
in_root getent group runner >/dev/null && fail "purge left the group runner"
left=$(cd "$ROOT" && find . -xdev -name '*runner*' ! -path './srv/*' ! -path './var/lib/runner*' ! -path './var/cache/runner*' \
    ! -path './etc/runner*' ! -path './var/lib/apt/*' ! -path './var/cache/apt/*' ! -path './var/log/*' | sort)
[ -z "$left" ] || fail "purge left: $left"
[ -f "$ROOT/var/lib/runner/nightly.sqlite" ] || fail "purge removed the job's state database"
rm -f "$ROOT.files" "$ROOT.apt.log"
echo "test-deb: $(basename "$DEB") installed in a Debian 12 minbase root without Swift, ran a night and its rerun, its units verify, lintian has no error or warning, and purge left nothing of it"
