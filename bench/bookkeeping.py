#!/usr/bin/env python3
"""Bookkeeping at scale (issue 5): runner's own memory and overhead, with image work made tiny.

    python3 bench/bookkeeping.py [--runner .build/release/runner] [--items 100000] [--urls 1000000]
                                 [--write BENCHMARKS.md]

- flat memory: the supervisor's peak RSS (VmHWM, sampled from /proc) for a first run of 1,000
  items and of --items items (hard links to three 16x16 PNGs in folders of 1,000, one thumbnail
  output each), and the ratio between them (target: within 20%);
- an up-to-date rerun of the large job: wall time (target: under 2 s for 100,000 items);
- planning a list of --urls URLs (`runner plan`): wall time and peak RSS (target: under 200 MB).

Workers are excluded on purpose: they are recycled every `recycleAfter` sources and measured
by bench.py. Works under bench/cache/bookkeeping (gitignored), reused between runs. --write puts
the table into the report's "## Bookkeeping at scale" (between its markers), which bench.py keeps.
"""
import argparse
import datetime
import os
import shutil
import subprocess
import sys
import time

from fixedcost import write_section

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORK = os.path.join(HERE, "cache", "bookkeeping")
BEGIN, END = "<!-- bookkeeping:begin -->", "<!-- bookkeeping:end -->"


def measure(args, cwd):
    """Runs `args`; returns (seconds, peak RSS of that process in MB, last output line)."""
    started = time.monotonic()
    process = subprocess.Popen(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    peak = 0
    while process.poll() is None:
        try:
            with open(f"/proc/{process.pid}/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.02)
    seconds = time.monotonic() - started
    output = process.stdout.read().decode().strip().splitlines()
    if process.returncode != 0:
        sys.exit(f"{' '.join(args)} exited {process.returncode}: {output[-5:]}")
    return seconds, peak / 1024, output[-1] if output else ""


def make_tree(count):
    """`count` hard links to tiny PNGs (ext4 allows 65,000 links per file: one file per 50,000)."""
    tree = os.path.join(WORK, f"src{count}")
    if os.path.isdir(tree) and sum(len(files) for _, _, files in os.walk(tree)) == count:
        return
    shutil.rmtree(tree, ignore_errors=True)
    for index in range(count):
        seed = os.path.join(WORK, f"tiny{index // 50_000}.png")
        if not os.path.exists(seed):
            subprocess.run(["vips", "black", seed, "16", "16", "--bands", "3"], check=True)
        folder = os.path.join(tree, f"d{index // 1000:04d}")
        os.makedirs(folder, exist_ok=True)
        os.link(seed, os.path.join(folder, f"f{index:07d}.png"))


def write_job(name, sources):
    path = os.path.join(WORK, f"{name}.json")
    with open(path, "w") as job:
        job.write('{"version": 1, "name": "%s", "sources": [%s],\n'
                  ' "outputs": [{"name": "t", "path": "out-%s/{dir}/{stem}.jpg",\n'
                  '   "chain": [{"op": "thumbnail", "width": 8, "height": 8}], "format": {"type": "jpeg"}}],\n'
                  ' "state": "state-%s.sqlite"}\n' % (name, sources, name, name))
    return path


def fresh(name):
    shutil.rmtree(os.path.join(WORK, f"out-{name}"), ignore_errors=True)
    for suffix in ("", "-wal", "-shm", ".lock"):
        path = os.path.join(WORK, f"state-{name}.sqlite{suffix}")
        if os.path.exists(path):
            os.unlink(path)
    shutil.rmtree(os.path.join(WORK, f"state-{name}.cache"), ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runner", default=os.environ.get("BENCH_RUNNER", os.path.join(ROOT, ".build/release/runner")))
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--write", metavar="REPORT", help="put the table into REPORT's \"## Bookkeeping at scale\"")
    options = parser.parse_args()
    runner = os.path.abspath(options.runner)
    os.makedirs(WORK, exist_ok=True)

    rows = []
    peaks = {}
    for count in (1000, options.items):
        make_tree(count)
        name = f"files{count}"
        job = write_job(name, '{"path": "src%d", "recursive": true}' % count)
        fresh(name)
        seconds, peak, summary = measure([runner, job, "--quiet"], WORK)
        peaks[count] = peak
        rows.append((f"first run, {count:,} items", seconds, peak, summary))
    seconds, peak, summary = measure([runner, write_job(f"files{options.items}", '{"path": "src%d", "recursive": true}' % options.items), "--quiet"], WORK)
    rows.append((f"up-to-date rerun, {options.items:,} items", seconds, peak, summary))

    urls = os.path.join(WORK, f"urls{options.urls}.txt")
    if not os.path.exists(urls):
        with open(urls, "w") as listing:
            for index in range(options.urls):
                listing.write(f"https://images.example.com/catalog/{index % 997}/product-{index:07d}.jpg?v=3\n")
    job = write_job("urls", '{"list": "%s"}' % os.path.basename(urls))
    seconds, peak, summary = measure([runner, "plan", job], WORK)
    rows.append((f"plan {options.urls:,} URLs", seconds, peak, summary))

    ratio = peaks[options.items] / peaks[1000]
    rerun = rows[2][1]
    plan_peak = rows[3][2]
    lines = [BEGIN, "",
             f"_Generated by `python3 bench/bookkeeping.py` on {datetime.date.today()} (items {options.items:,}, "
             f"URLs {options.urls:,}); runner {os.path.relpath(runner, ROOT)}._", "",
             "| measurement | wall s | supervisor peak RSS MB | runner's summary |", "| --- | ---: | ---: | --- |"]
    lines += [f"| {label} | {seconds:.2f} | {peak:.1f} | {summary} |" for label, seconds, peak, summary in rows]
    lines += ["",
              f"- Flat memory: peak RSS for {options.items:,} items / 1,000 items: {ratio:.2f}x (target at most 1.20x: "
              f"{'met' if ratio <= 1.20 else 'NOT met'}).",
              f"- Up-to-date rerun of {options.items:,} items: {rerun:.2f} s (target under 2 s: "
              f"{'met' if rerun < 2 else 'NOT met'}).",
              f"- Planning {options.urls:,} URLs: peak RSS {plan_peak:.0f} MB (target under 200 MB: "
              f"{'met' if plan_peak < 200 else 'NOT met'}).", "", END]
    block = "\n".join(lines)
    print(block)
    if options.write:
        write_section(options.write, block, heading="## Bookkeeping at scale", begin=BEGIN, end=END)


if __name__ == "__main__":
    main()
