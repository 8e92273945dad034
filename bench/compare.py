#!/usr/bin/env python3
"""Not slower (issue 34): runner against a baseline build of itself, in CPU seconds.

    python3 bench/compare.py --baseline OLD/release/runner [--runner .build/release/runner]
                             [--rounds 5] [--cases large,small,...] [--write BENCHMARKS.md]

(`make bench-compare BASE=a62463e` builds BASE and runs this.) Each measurement runs the two binaries
in alternating rounds, the order swapped every round (old new, new old, ...), so load from other work
on the machine hits both alike. CPU is user + sys of the process tree (wait4, workers included), as
bench.py measures it; the verdict compares the two medians: new / old at most 1.02.

- large, small, responsive: bench.py's runner job on those sets (runner only; fresh state and
  outputs every run; the responsive set takes every --responsive-every th photo of the large set);
- rerun: bookkeeping.py's up-to-date rerun of 100,000 files (each binary has its own state and
  outputs, made by an unmeasured first run);
- plan-1m: `runner plan` of a list of 1,000,000 URLs (bookkeeping.py's);
- shard-10m: `runner plan --shard 0/64` of a list of 10,000,000 URLs (bookkeeping.py's at-scale list).
"""
import argparse
import datetime
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time

import bench
import bookkeeping
from fixedcost import write_section

HEADING = "## Not slower than a62463e"
BEGIN, END = "<!-- compare:begin -->", "<!-- compare:end -->"
CASES = ["large", "small", "responsive", "rerun", "plan-1m", "shard-10m"]
LIMIT = 1.02


class Case:
    """One measurement: `command(binary, side)` gives argv (after preparing that side's folders),
    `check(side)` a problem with what the run left, or None."""

    def __init__(self, name, label, command, cwd=None, check=lambda side: None, prepare=False, reset=None):
        self.name, self.label, self.command, self.cwd, self.check = name, label, command, cwd, check
        self.prepare, self.reset = prepare, reset  # reset(side): what a failed first run clears


def image_case(name, label, files, outputs, suffixes):
    workdir = os.path.join(bench.CACHE, "runs", "compare", name)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    listfile = os.path.join(workdir, "files.txt")
    with open(listfile, "w") as handle:
        handle.writelines(f + "\n" for f in files)
    bench.warm(files)

    def command(binary, side):
        run_dir = os.path.join(workdir, side)
        shutil.rmtree(run_dir, ignore_errors=True)  # fresh state and outputs every run
        os.makedirs(os.path.join(run_dir, "out"))
        return bench.write_runner_job(binary, run_dir, listfile, outputs(os.path.join(run_dir, "out")), 2)

    def check(side):
        made = bench.count_outputs(os.path.join(workdir, side, "out"), files, suffixes)
        return None if made == len(files) * len(suffixes) else f"{made} of {len(files) * len(suffixes)} outputs"
    return Case(name, label, command, check=check)


def make_cases(names, options):
    """Each case as its turn comes (a set's files are listed and read then)."""
    for name in names:
        if name in ("large", "small", "responsive"):
            files = bench.corpus_files("large" if name == "responsive" else name)[:options.limit]
            if not files:
                sys.exit(f"compare: no files in bench/cache/corpus/{name}: run bench/make-corpus.sh all")
            if name == "responsive":
                files = files[::options.responsive_every]
                specs = bench.RESPONSIVE
                yield image_case(name, f"responsive set ({len(files)} photos, 5 outputs each)", files,
                                 lambda out: bench.responsive_outputs(out, specs),
                                 [bench.spec_suffix(spec) for spec in specs])
            else:
                yield image_case(name, f"{name} set ({len(files):,} JPEGs to 256x256)", files,
                                 bench.thumbnail_outputs, (".jpg",))
        elif name == "rerun":
            bookkeeping.make_tree(100_000)
            yield Case(name, "up-to-date rerun, 100,000 files", lambda binary, side: [
                binary, bookkeeping.write_job(f"compare-rerun-{side}", '{"path": "src100000", "recursive": true}'),
                "--quiet"], cwd=bookkeeping.WORK, prepare=True,
                reset=lambda side: bookkeeping.fresh(f"compare-rerun-{side}"))
        elif name in ("plan-1m", "shard-10m"):
            count, shard = (1_000_000, []) if name == "plan-1m" else (10_000_000, ["--shard", "0/64"])
            listing = bookkeeping.url_list(count)
            label = "plan, 1,000,000 URLs" if not shard else "plan, shard 0/64 of 10,000,000 URLs"
            yield Case(name, label, lambda binary, side, count=count, listing=listing, shard=shard: [
                binary, "plan", bookkeeping.write_job(f"compare-urls{count}-{side}", '{"list": "%s"}' % listing),
                *shard], cwd=bookkeeping.WORK)


def run(case, binary, side, logs):
    argv = case.command(binary, side)
    result = bench.measure(argv, cwd=case.cwd, stderr_path=os.path.join(logs, f"{side}.stderr"), sample_interval=1.0)
    problem = f"exit {result['code']}" if result["code"] else case.check(side)
    if problem:
        sys.exit(f"compare: {case.label}, {side}: {problem} ({shlex.join(argv)}; stderr in {logs})")
    return result


def compare(case, binaries, rounds):
    logs = os.path.join(bench.CACHE, "runs", "compare", "logs", case.name)
    os.makedirs(logs, exist_ok=True)
    if case.prepare:  # a first run each (unmeasured): what the up-to-date rerun reruns
        for side, binary in binaries.items():
            if bench.measure(case.command(binary, side), cwd=case.cwd)["code"]:
                case.reset(side)  # a state the other build wrote: start again
                first = bench.measure(case.command(binary, side), cwd=case.cwd,
                                      stderr_path=os.path.join(logs, f"{side}.first.stderr"))
                if first["code"]:
                    sys.exit(f"compare: {case.label}, {side}: the first run exited {first['code']} (stderr in {logs})")
            bench.log(f"{case.label}, {side}: first run done")
    runs = {side: [] for side in binaries}
    order = list(binaries)
    for index in range(rounds):
        for side in order if index % 2 == 0 else order[::-1]:
            result = run(case, binaries[side], side, logs)
            runs[side].append(result)
            bench.log(f"{case.label}, round {index + 1}/{rounds}, {side}: {result['cpu']:.2f} s CPU "
                      f"({result['user']:.2f} user + {result['sys']:.2f} sys), "
                      f"{result['wall']:.2f} s wall, other load {result['other']:.2f}")
    return runs


def row(label, runs):
    old, new = ([r["cpu"] for r in runs[side]] for side in ("old", "new"))
    ratio = statistics.median(new) / statistics.median(old)
    each = [n / o for n, o in zip(new, old)]
    other = statistics.median(r["other"] for side in runs for r in runs[side])
    cells = [f"{statistics.median(cpu):.2f} ({min(cpu):.2f} - {max(cpu):.2f})" for cpu in (old, new)]
    return ratio, (f"| {label} | {cells[0]} | {cells[1]} | **{ratio:.3f}** | "
                   f"{statistics.median(each):.3f} ({min(each):.2f} - {max(each):.2f}) | "
                   f"{other:.2f} | {'yes' if ratio <= LIMIT else '**no**'} |")


def commit_of(binary):
    """The commit of the checkout `binary` was built in, as bench.py names it."""
    return bench.runner_build(binary).split(" (")[0]


def report_lines(rows, slower, binaries, rounds, command, started, load, begin, end):
    """The report's block: what was run, the table (`row`'s lines) and the verdict, between `begin`
    and `end` (buckets.py --baseline writes its own with this)."""
    old, new = commit_of(binaries["old"]), commit_of(binaries["new"])
    return [begin, "",
            f"_Generated by `{command}` on {datetime.date.today()} in {(time.time() - started) / 60:.0f} minutes "
            f"(load average {load[0]:.1f} before, {os.getloadavg()[0]:.1f} after): runner {new} "
            f"({os.path.relpath(binaries['new'], bench.ROOT)}) against {old} ({os.path.relpath(binaries['old'], bench.ROOT)}), "
            f"{rounds} alternating rounds (the order swapped every round). CPU s is user + sys of the process "
            "tree, median (min - max); \"new / old\" divides the medians (the verdict), \"each round\" is the "
            "median (min - max) of the rounds' ratios, each of two runs side by side; \"other load\" the median "
            "number of cores other work kept busy meanwhile._", "",
            f"| measurement | {old} CPU s | {new} CPU s | new / old | each round | other load | within 2% |",
            "| --- | ---: | ---: | ---: | ---: | ---: | --- |", *rows, "",
            f"Slower by more than 2%: {', '.join(slower)}." if slower else "Every measurement is within 2%.", "", end]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", required=True, help="the runner binary to compare with (the old build)")
    parser.add_argument("--runner", default=os.environ.get("BENCH_RUNNER") or bench.default_runner(),
                        help="the runner binary measured (default: $BENCH_RUNNER, else .build/release/runner)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per measurement (default 5)")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated (default {','.join(CASES)})")
    parser.add_argument("--responsive-every", type=int, default=4, metavar="N",
                        help="the responsive set takes every Nth photo of the large set (default 4: 50 photos)")
    parser.add_argument("--limit", type=int, help="the first N files of the large and small sets (before --responsive-every)")
    parser.add_argument("--write", metavar="REPORT", help=f"put the table into REPORT's \"{HEADING}\"")
    options = parser.parse_args()
    unknown = set(options.cases.split(",")) - set(CASES)
    if unknown:
        sys.exit(f"compare: unknown cases {', '.join(sorted(unknown))} (have {', '.join(CASES)})")
    binaries = {"old": os.path.abspath(options.baseline), "new": os.path.abspath(options.runner)}
    for side, binary in binaries.items():
        if not os.access(binary, os.X_OK):
            sys.exit(f"compare: no runner binary at {binary}")
        if bench.runner_is_stale(binary):
            bench.log(f"warning: {binary} is older than its checkout's Sources/")
    bookkeeping.RUNNER[0] = binaries["new"]
    os.makedirs(bookkeeping.WORK, exist_ok=True)
    started, load = time.time(), os.getloadavg()
    rows, slower = [], []
    for case in make_cases(options.cases.split(","), options):
        ratio, line = row(case.label, compare(case, binaries, options.rounds))
        rows.append(line)
        slower += [case.label] if ratio > LIMIT else []
    command = "python3 bench/compare.py " + shlex.join(sys.argv[1:])
    lines = report_lines(rows, slower, binaries, options.rounds, command, started, load, BEGIN, END)
    block = "\n".join(lines)
    print(block)
    if options.write:
        write_section(options.write, block, heading=HEADING, begin=BEGIN, end=END)
    return 1 if slower else 0


if __name__ == "__main__":
    sys.exit(main())
