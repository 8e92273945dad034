#!/usr/bin/env python3
"""The site manifest at scale (issue 23): `runner manifest` over a state of --items items.

    python3 bench/manifest.py [--runner .build/release/runner] [--items 1000000] [--shards 16]

Builds a state database as a run records it, written directly (no image is decoded): runner's
schema and run row from a one-item probe run, then --items done items with their output facts
(`v9: output facts`), every 100th failed. Then times `runner manifest JOB --jsonl` and the JSON
document, each to a file, and the same state split over --shards shard databases merged by
`runner manifest`, with peak RSS (VmHWM sampled from /proc, as bookkeeping.py does). Works under
bench/cache/manifest (gitignored), reused between runs.
"""
import argparse
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import time

from bookkeeping import measure

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORK = os.path.join(HERE, "cache", "manifest")


def job(name, runner):
    """A job over `in/*.png` with one output, and its state database made by a probe run of one image."""
    os.makedirs(os.path.join(WORK, "in"), exist_ok=True)
    seed = os.path.join(WORK, "in", "probe.png")
    if not os.path.exists(seed):
        subprocess.run(["vips", "black", seed, "16", "16", "--bands", "3"], check=True)
    path = os.path.join(WORK, f"{name}.json")
    with open(path, "w") as handle:
        handle.write('{"version": 1, "name": "%s", "sources": [{"glob": "in/*.png"}],\n'
                     ' "outputs": [{"name": "t", "path": "out/{dir}/{stem}.webp",\n'
                     '   "chain": [{"op": "thumbnail", "width": 8, "height": 8}], "format": {"type": "webp"}}],\n'
                     ' "state": "state-%s/%s.sqlite"}\n' % (name, name, name))
    return path


def probe_state(runner):
    """runner's own schema and run row: a one-image run's database."""
    probe = job("probe", runner)
    shutil.rmtree(os.path.join(WORK, "state-probe"), ignore_errors=True)
    subprocess.run([runner, probe, "--quiet"], cwd=WORK, check=True, stdout=subprocess.DEVNULL)
    return os.path.join(WORK, "state-probe", "probe.sqlite")


def fill(path, probe, keys):
    """A copy of `probe` holding the items of `keys` (index, source key) instead of its own."""
    shutil.copyfile(probe, path + ".part")
    database = sqlite3.connect(path + ".part")
    fingerprint, run_id = database.execute("SELECT fingerprint, run_id FROM item").fetchone()
    database.execute("PRAGMA journal_mode = OFF")
    database.execute("PRAGMA synchronous = OFF")
    database.execute("DELETE FROM item")
    now = time.time()

    def rows():
        for index, source in keys:
            failed = index % 100 == 7
            output = f"{WORK}/out/d{index // 1000:05d}/f{index:08d}.webp"
            facts = (None,) * 9 if failed else (320, 213, 4000 + index % 5000, "image/webp", f"{index * 2654435761 % 2**64:016x}",
                                               4000, 2667, "jpeg", f"{index * 40503 % 2**64:016x}")
            yield (source + "@t", source, "t", "failed" if failed else "done", 1, fingerprint, output,
                   "decode" if failed else None, "not an image (synthetic)" if failed else None, 0.01, run_id, now) + facts
    database.executemany("""INSERT INTO item (key, source_key, output_name, state, attempts, fingerprint, output_path,
                            error_kind, error_message, duration, run_id, updated_at, width, height, bytes, media_type,
                            content_hash, source_width, source_height, source_format, source_hash)
                            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""", rows())
    database.commit()
    database.execute("PRAGMA journal_mode = WAL")
    database.close()
    os.rename(path + ".part", path)


def source_key(index):
    return f"{WORK}/in/d{index // 1000:05d}/f{index:08d}.jpg"


def shard_of(key, count):
    """Shard.index(of:count:): FNV-1a 64 of the key, splitmix64's finalizer, modulo."""
    value = 0xcbf29ce484222325
    for byte in key.encode() + b"\xff":
        value = ((value ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    value = ((value ^ (value >> 30)) * 0xbf58476d1ce4e5b9) & 0xFFFFFFFFFFFFFFFF
    value = ((value ^ (value >> 27)) * 0x94d049bb133111eb) & 0xFFFFFFFFFFFFFFFF
    value ^= value >> 31
    return value % count


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runner", default=os.path.join(ROOT, ".build/release/runner"))
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--shards", type=int, default=16)
    options = parser.parse_args()
    runner = os.path.abspath(options.runner)
    os.makedirs(WORK, exist_ok=True)
    probe = probe_state(runner)
    whole, sharded = job(f"whole{options.items}", runner), job(f"sharded{options.items}", runner)
    state = os.path.join(WORK, f"state-whole{options.items}", f"whole{options.items}.sqlite")
    if not os.path.exists(state):
        os.makedirs(os.path.dirname(state), exist_ok=True)
        fill(state, probe, ((index, source_key(index)) for index in range(options.items)))
    folder = os.path.join(WORK, f"state-sharded{options.items}")
    if not os.path.exists(os.path.join(folder, "done")):
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        keys = [[] for _ in range(options.shards)]
        for index in range(options.items):
            keys[shard_of(source_key(index), options.shards)].append((index, source_key(index)))
        for shard in range(options.shards):
            fill(os.path.join(folder, f"sharded{options.items}.shard-{shard}-of-{options.shards}.sqlite"), probe, keys[shard])
        open(os.path.join(folder, "done"), "w").close()
    print(f"| measurement ({options.items:,} items) | wall s | CPU s | peak RSS MB | file |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, jobfile, arguments, out in (
        ("JSON Lines, one database", whole, ["--jsonl"], "whole.jsonl"),
        ("JSON, one database", whole, [], "whole.json"),
        (f"JSON Lines, {options.shards} shard databases merged", sharded, ["--jsonl"], "sharded.jsonl"),
    ):
        target = os.path.join(WORK, out)
        if os.path.exists(target):
            os.unlink(target)
        seconds, cpu, peak, _ = timed([runner, "manifest", jobfile, "--out", target] + arguments)
        print(f"| {label} | {seconds:.2f} | {cpu:.2f} | {peak:.1f} | {os.path.getsize(target) / 2**20:,.0f} MiB |")
    seconds, cpu, peak, line = timed([runner, "manifest", whole, "--out", os.path.join(WORK, "whole.jsonl"), "--jsonl"])
    print(f"| JSON Lines again, unchanged (compared, not rewritten: {line.endswith('(unchanged)')}) | {seconds:.2f} | {cpu:.2f} | {peak:.1f} | |")


def timed(args):
    """`measure`, with the CPU seconds (user and system) the child took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds, peak, line = measure(args, WORK)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return seconds, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, peak, line


if __name__ == "__main__":
    sys.exit(main())
