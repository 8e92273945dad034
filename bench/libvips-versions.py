#!/usr/bin/env python3
"""CPU seconds of the same work on different libvips builds, in interleaved rounds.

    python3 bench/libvips-versions.py --photos DIR --rounds 3 \
        --libvips 8.14=/usr/bin \
        --libvips 8.16=.build/libvips-8.16/bin \
        --runner 8.14=.build-system/release/runner --runner 8.16=.build/release/runner

For each `--libvips NAME=BIN` it times `BIN/vipsthumbnail` decoding and scaling every photo to
1920 px (output in libvips' own format on a tmpfs-backed folder, so almost no encoding), one
process, VIPS_CONCURRENCY=1. For each `--runner NAME=PATH[:LD_LIBRARY_PATH]` it times a runner
job making a 1920 px JPEG (quality 82) of every photo with one worker and one libvips thread
(--force, so every round does the work). CPU is user + system of the process and the children it
waited for (runner's workers), from wait4's rusage. Prints the median of the rounds per entry.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile


def cpu_seconds(argv, env=None, cwd=None):
    process = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    stderr = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[0]} failed ({status}): {stderr[-400:]}")
    return usage.ru_utime + usage.ru_stime


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--photos", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--libvips", action="append", default=[], help="NAME=BIN folder holding vipsthumbnail")
    parser.add_argument("--runner", action="append", default=[], help="NAME=PATH[:LD_LIBRARY_PATH]")
    args = parser.parse_args()
    photos = sorted(os.path.join(args.photos, name) for name in os.listdir(args.photos) if name.lower().endswith(".jpg"))
    work = tempfile.mkdtemp(prefix="libvips-versions-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    env = dict(os.environ, VIPS_CONCURRENCY="1")
    job = os.path.join(work, "job.json")
    with open(job, "w") as handle:
        json.dump({"version": 1, "sources": [{"path": os.path.abspath(args.photos), "include": ["*.jpg"]}],
                   "outputs": [{"name": "large", "path": os.path.join(work, "runner", "{stem}.jpg"),
                                "chain": [{"op": "thumbnail", "width": 1920, "height": 1920, "fit": "inside"}],
                                "format": {"type": "jpeg", "quality": 82}}],
                   "concurrency": {"process": 1, "threadsPerImage": 1},
                   "state": os.path.join(work, "state.sqlite")}, handle)
    entries = []
    for spec in args.libvips:
        name, folder = spec.split("=", 1)
        out = os.path.join(work, "thumbs")
        os.makedirs(out, exist_ok=True)
        entries.append((f"vipsthumbnail {name}", [os.path.join(folder, "vipsthumbnail"), "-s", "1920",
                                                  "-o", os.path.join(out, "%s.v")] + photos, env))
    for spec in args.runner:
        name, rest = spec.split("=", 1)
        path, _, libraries = rest.partition(":")
        runner_env = dict(env, LD_LIBRARY_PATH=libraries) if libraries else env
        entries.append((f"runner {name}", [os.path.abspath(path), job, "--force", "--quiet"], runner_env))
    times = {label: [] for label, _, _ in entries}
    for _ in range(args.rounds):
        for label, argv, entry_env in entries:
            times[label].append(cpu_seconds(argv, env=entry_env))
    print(f"{len(photos)} photos, {args.rounds} interleaved rounds, CPU seconds (median; all rounds)")
    for label, values in times.items():
        print(f"{label:28} {statistics.median(values):7.2f}   {' '.join(f'{v:.2f}' for v in values)}")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
