#!/usr/bin/env python3
"""What `derive` costs a run: CPU seconds of runner (supervisor and workers) making the responsive
set (WebP 80 at 320, 640, 1280, 1920 px and JPEG 82 at 1280, fit inside) from every photo of a
folder, with and without all six derived values, in interleaved rounds that swap which runs first
(`--force`, so each round renders and derives everything again; derived values and content hashes
included). Prints the median CPU of each and the difference.

    python3 bench/derive-cost.py --runner .build/release/runner --photos fixtures/photos --rounds 5
"""
import argparse, json, os, resource, statistics, subprocess, tempfile

OUTPUTS = [(320, "webp", 80), (640, "webp", 80), (1280, "webp", 80), (1920, "webp", 80), (1280, "jpeg", 82)]
DERIVE = ["thumbhash", "blurhash", "dhash", "phash", "dominant", "focal"]


def job(folder, photos, derive):
    outputs = [{"name": f"{fmt}{width}", "path": f"out/{fmt}{width}/{{stem}}.{'jpg' if fmt == 'jpeg' else fmt}",
                "chain": [{"op": "thumbnail", "width": width, "fit": "inside"}], "format": {"type": fmt, "quality": quality}}
               for width, fmt, quality in OUTPUTS]
    text = {"version": 1, "sources": [{"path": os.path.abspath(photos), "recursive": True}], "outputs": outputs,
            "derive": DERIVE if derive else [], "state": "state.sqlite", "concurrency": {"process": 1}}
    path = os.path.join(folder, "job.json")
    with open(path, "w") as handle:
        json.dump(text, handle)
    return path


def cpu_seconds(runner, path):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([runner, path, "--force", "--quiet"], check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--photos", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    runner = os.path.abspath(args.runner)
    times = {False: [], True: []}
    with tempfile.TemporaryDirectory() as plain, tempfile.TemporaryDirectory() as deriving:
        jobs = {False: job(plain, args.photos, False), True: job(deriving, args.photos, True)}
        for derive in (False, True):  # a first run of each creates its state and outputs
            cpu_seconds(runner, jobs[derive])
        # Each round swaps which goes first (ABBA): run second, a job was measured up to 8% slower
        # than first on this machine whichever it was, more than the difference looked for.
        for number in range(args.rounds):
            for derive in ((True, False) if number % 2 else (False, True)):
                times[derive].append(cpu_seconds(runner, jobs[derive]))
    without, with_ = statistics.median(times[False]), statistics.median(times[True])
    print(json.dumps({"without": times[False], "with": times[True], "medianWithout": without, "medianWith": with_,
                      "extraPercent": round((with_ / without - 1) * 100, 2)}))


if __name__ == "__main__":
    main()
