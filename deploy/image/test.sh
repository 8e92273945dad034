#!/usr/bin/env bash
# `make test-image`: runner run from the image's root filesystem (chroot; `podman run` cannot run
# in every sandbox) against SeaweedFS started here on 127.0.0.1 and stopped by its PID: a bucket of
# photos in, thumbnails out, then the up-to-date night; and the image's configuration as podman has it.
#
#   deploy/image/test.sh ROOTFS TAG WEED
set -euo pipefail
ROOTFS=$(readlink -m "${1:?usage: test.sh ROOTFS TAG WEED}")
TAG=${2:?}
WEED=$(readlink -f "${3:?}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export AWS_ACCESS_KEY_ID=imagetestkey AWS_SECRET_ACCESS_KEY='image+test/SECRET'
STORE=$(mktemp -d)
WEED_PID=""
cleanup() {
    local status=$?
    set +e
    [ -n "$WEED_PID" ] && { kill -9 "$WEED_PID"; wait "$WEED_PID"; } 2>/dev/null
    mountpoint -q "$ROOTFS/proc" && umount "$ROOTFS/proc"
    rm -rf "$STORE" "$ROOTFS/work/test"
    exit "$status"
}
trap cleanup EXIT
fail() { echo "test-image: $*" >&2; exit 1; }

read -r -a PORTS < <(python3 -c '
import socket
sockets = [socket.socket() for _ in range(10)]
for s in sockets: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in sockets))')
NAMES=(s3.port master.port master.port.grpc volume.port volume.port.grpc filer.port filer.port.grpc s3.port.grpc admin.port admin.port.grpc)
ARGS=()
for index in "${!NAMES[@]}"; do ARGS+=("-${NAMES[$index]}=${PORTS[$index]}"); done
"$WEED" mini -dir="$STORE" -ip=127.0.0.1 -ip.bind=127.0.0.1 -admin.ui=false -webdav=false -s3.port.iceberg=0 -s3.port.lance=0 \
    "${ARGS[@]}" >"$STORE/weed.log" 2>&1 &
WEED_PID=$!
ENDPOINT="http://127.0.0.1:${PORTS[0]}"
python3 - "$ENDPOINT" "$HERE/../../fixtures/extra" <<'PY'
import os, sys, time, boto3, botocore.config
client = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1", config=botocore.config.Config(s3={"addressing_style": "path"}))
for _ in range(240):
    try:
        client.create_bucket(Bucket="photos")
        break
    except Exception:
        time.sleep(0.5)
else:
    sys.exit("SeaweedFS did not start")
for name in ["ladybird.jpg", "yellow-flower.jpg"]:
    client.upload_file(os.path.join(sys.argv[2], name), "photos", "originals/" + name)
PY

rm -rf "$ROOTFS/work/test"
mkdir -p "$ROOTFS/work/test"
cat >"$ROOTFS/work/test/job.json" <<JOB
{"version": 1, "name": "image-test",
 "sources": [{"s3": "s3://photos/originals/", "endpoint": "$ENDPOINT"}],
 "outputs": [{"name": "thumb", "path": "out/{stem}.webp",
              "chain": [{"op": "thumbnail", "width": 128, "height": 128, "fit": "cover"}], "format": {"type": "webp"}}],
 "state": "state/image-test.sqlite"}
JOB
mount -t proc proc "$ROOTFS/proc"
run() { chroot "$ROOTFS" /usr/bin/env AWS_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" AWS_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY" \
    /usr/bin/runner /work/test/job.json 2>&1; }
first=$(run) || fail "the first run failed: $first"
grep -q "2 done, 0 failed" <<<"$first" || fail "the first run: $first"
for stem in ladybird yellow-flower; do
    head -c 12 "$ROOTFS/work/test/out/$stem.webp" | grep -q WEBP || fail "out/$stem.webp is no WebP"
done
second=$(run) || fail "the second run failed: $second"
grep -q "0 done, 0 failed, 2 up to date" <<<"$second" || fail "the second run: $second"
grep -rq "$AWS_SECRET_ACCESS_KEY" "$ROOTFS/work/test" && fail "the secret is in a file the runs wrote"
[ "$(chroot "$ROOTFS" /usr/local/bin/runner --version)" = "$(chroot "$ROOTFS" /usr/bin/runner --version)" ] \
    || fail "/usr/local/bin/runner (earlier images' path) does not run the package's runner"
config=$(podman image inspect --format '{{json .Config.Entrypoint}} {{.Config.WorkingDir}}' "$TAG")
[ "$config" = '["/usr/bin/runner"] /work' ] || fail "the image's entrypoint and folder: $config"
echo "test-image: runner from $TAG's root filesystem rendered a bucket's 2 photos and found them up to date the next night"
