#!/usr/bin/env python3
"""The read commands over a sharded job (issue 34): `runner status`, `failed` and `report` of a job
run as 64 shards, at 15,000 and at 150,000 items a shard (960,000 and 9,600,000 items), so their
peak RSS shows whether memory stays flat in the number of items.

    python3 bench/sharded-reads.py [--runner .build/release/runner] [--shards 64] [--items 15000,150000]
                                   [--rounds 1] [--write BENCHMARKS.md]

The shard databases are real runner databases: a probe job (a 16x16 PNG and an empty file, which
fails to decode) runs once with `--shard 0/N`, and its database (schema, migrations, run row) is
copied for every shard; its items are then replaced by rows made in SQL from the probe's own done
and failed rows (every column as the runner wrote it, but for the keys, paths and times): every
100th item failed (`decode`, as the probe's empty file), every 1,000th done with a warning, a
`source` row per done source, times in batches of 50 items 0.2 s apart (the recorder's commits).
Each command is timed under `/usr/bin/time -v` (peak RSS of the runner process). Outputs are not
on disk, so the report's tiles say "output missing" and no preview is made: what is measured is
reading the state, not rendering previews. Works under bench/cache/sharded-reads (gitignored);
the databases are made once per size. --write puts the table between its markers in the
report's "## Bookkeeping at scale" (a section bench.py keeps).
"""
import argparse
import datetime
import os
import shutil
import sqlite3
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor

from bookkeeping import checked
from fixedcost import write_section

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORK = os.path.join(HERE, "cache", "sharded-reads")
BEGIN, END = "<!-- sharded-reads:begin -->", "<!-- sharded-reads:end -->"
BATCH = 50  # items a recorder commit holds, all with one updated_at


def write_job(name, state):
    """A job over the probe's folder; `state` names its state database (the shards' sit beside it)."""
    path = os.path.join(WORK, f"{name}.json")
    with open(path, "w") as job:
        job.write('{"version": 1, "name": "%s", "sources": [{"path": "probe-in"}],\n'
                  ' "outputs": [{"name": "t", "path": "out/{stem}.jpg",\n'
                  '   "chain": [{"op": "thumbnail", "width": 8, "height": 8}], "format": {"type": "jpeg"}}],\n'
                  ' "state": "%s"}\n' % (name, state))
    return path


def probe(runner, shards):
    """The database of one real shard run: a done item, a failed one, their run and source rows."""
    folder = os.path.join(WORK, "probe-in")
    shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(os.path.join(WORK, "state-probe"), ignore_errors=True)
    os.makedirs(folder)
    # Candidates under 400 names each, then one of each kind that shard 0 plans (`plan --list` says which).
    seed = os.path.join(WORK, "seed.png")
    subprocess.run(["vips", "black", seed, "16", "16", "--bands", "3"], check=True)
    for number in range(400):
        os.link(seed, os.path.join(folder, f"a{number}.png"))
        open(os.path.join(folder, f"b{number}.png"), "w").close()
    job = write_job("probe", "state-probe/job.sqlite")
    _, _, listing = checked([runner, "plan", job, "--shard", f"0/{shards}", "--list"], WORK)
    planned = {os.path.basename(line.split("\t")[1].rsplit("@", 1)[0]) for line in listing.splitlines() if line.count("\t") == 2}
    kept = [min(name for name in planned if name.startswith(kind)) for kind in "ab"]
    for name in os.listdir(folder):
        if name not in kept:
            os.unlink(os.path.join(folder, name))
    checked([runner, job, "--quiet", "--shard", f"0/{shards}"], WORK, allowed=(1,))  # b.png fails: exit 1
    return os.path.join(WORK, f"state-probe/job.shard-0-of-{shards}.sqlite")


def shard_database(args):
    """Shard `index`'s database of `items` items, from the probe's (see the module's docstring)."""
    template, path, index, shards, items = args
    shutil.copyfile(template, path + ".part")
    db = sqlite3.connect(path + ".part")
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    db.executescript("""
        CREATE TEMP TABLE done AS SELECT * FROM item WHERE state = 'done';
        CREATE TEMP TABLE failed AS SELECT * FROM item WHERE state = 'failed';
        CREATE TEMP TABLE facts AS SELECT * FROM main.source;
        DELETE FROM item; DELETE FROM main.source;
        """)
    started = db.execute("SELECT started_at FROM run").fetchone()[0]
    # Each item's global number g: shard `index` of `shards` holds g = i * shards + index.
    numbers = f"WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {items - 1}) "
    source = f"printf('%s/src/d%05d/f%08d.png', '{WORK}', (i * {shards} + {index}) / 1000, i * {shards} + {index})"
    own = {
        "key": f"{source} || substr(d.key, length(d.source_key) + 1)",
        "source_key": source,
        "output_path": f"printf('%s/out/d%05d/f%08d.jpg', '{WORK}', (i * {shards} + {index}) / 1000, i * {shards} + {index})",
        "updated_at": f"{started} + (i / {BATCH}) * 0.2",
        "failed_since": f"CASE WHEN i % 100 = 7 THEN {started} + (i / {BATCH}) * 0.2 END",
        "warning": "CASE WHEN i % 1000 = 3 THEN 'ignored an unusable ICC profile (synthetic)' END",
        "content_hash": "CASE WHEN i % 100 = 7 THEN NULL ELSE printf('%016x', (i * 2654435761 + " + str(index) + ") % 9223372036854775807) END",
    }
    columns = [row[1] for row in db.execute("PRAGMA table_info(item)")]
    values = [own.get(column, f"CASE WHEN i % 100 = 7 THEN f.{column} ELSE d.{column} END") for column in columns]
    db.execute(f"INSERT INTO item ({', '.join(columns)}) {numbers} SELECT {', '.join(values)} FROM n, done AS d, failed AS f")
    facts = [row[1] for row in db.execute("PRAGMA table_info(source)")]
    own_facts = {"key": "item.source_key", "updated_at": "item.updated_at",
                 "content_hash": "printf('%016x', item.rowid * 40503 % 9223372036854775807)"}
    db.execute(f"INSERT INTO main.source ({', '.join(facts)}) SELECT {', '.join(own_facts.get(c, 'facts.' + c) for c in facts)} "
               "FROM item, facts WHERE item.state = 'done'")
    db.commit()
    db.execute("PRAGMA journal_mode = WAL")
    db.close()
    os.rename(path + ".part", path)


def databases(template, shards, items):
    """The job of `items` items a shard, its shard databases made once."""
    folder = os.path.join(WORK, f"state-{items}")
    job = write_job(f"sharded-{items}", f"state-{items}/job.sqlite")
    paths = [os.path.join(folder, f"job.shard-{index}-of-{shards}.sqlite") for index in range(shards)]
    missing = [(template, path, index, shards, items) for index, path in enumerate(paths) if not os.path.exists(path)]
    if missing:
        os.makedirs(folder, exist_ok=True)
        print(f"making {len(missing)} shard databases of {items:,} items", file=sys.stderr, flush=True)
        with ProcessPoolExecutor(max_workers=os.cpu_count()) as pool:
            list(pool.map(shard_database, missing))
    return job


def measure(runner, jobs, rounds):
    """(items a shard, command) -> [(seconds, peak MB)], the sizes' rounds interleaved."""
    results = {}
    for _ in range(rounds):
        for items, job in jobs:
            for command in ("status", "failed", "report"):
                extra = ["--out", os.path.join(WORK, f"report-{items}", "report.html")] if command == "report" else []
                seconds, peak, _ = checked([runner, command, job] + extra, WORK)
                results.setdefault((items, command), []).append((seconds, peak))
                print(f"{command} {items:,}/shard: {seconds:.2f} s, {peak:.1f} MB", file=sys.stderr, flush=True)
    return results


def table(results, runner, sizes, shards, rounds):
    def median(values):
        return sorted(values)[len(values) // 2]
    lines = [BEGIN, "",
             f"_Generated by `python3 bench/sharded-reads.py` on {datetime.date.today()}: {shards} shards, "
             f"{', '.join(f'{n:,}' for n in sizes)} items a shard, median of {rounds} round{'s' if rounds != 1 else ''}; "
             f"runner {os.path.relpath(runner, ROOT)}; peak RSS of the runner process (`/usr/bin/time -v`)._", "",
             "| command | " + " | ".join(f"{shards} x {n:,}: wall s, peak RSS MB" for n in sizes) + f" | peak RSS {sizes[-1]:,} / {sizes[0]:,} |",
             "| --- | " + " | ".join("---:" for _ in sizes) + " | ---: |"]
    for command in ("status", "failed", "report"):
        peaks = [median([r[1] for r in results[(items, command)]]) for items in sizes]
        cells = [f"{median([r[0] for r in results[(items, command)]]):.2f} s, {peak:.0f} MB" for items, peak in zip(sizes, peaks)]
        lines.append(f"| {command} | " + " | ".join(cells) + f" | {peaks[-1] / peaks[0]:.2f}x |")
    return lines + ["", END]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runner", default=os.environ.get("BENCH_RUNNER", os.path.join(ROOT, ".build/release/runner")))
    parser.add_argument("--shards", type=int, default=64)
    parser.add_argument("--items", default="15000,150000", help="items a shard, comma-separated (default 15000,150000)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--write", metavar="REPORT", help="put the table into REPORT's \"## Bookkeeping at scale\"")
    options = parser.parse_args()
    runner = os.path.abspath(options.runner)
    os.makedirs(WORK, exist_ok=True)
    template = probe(runner, options.shards)
    sizes = [int(text) for text in options.items.split(",")]
    jobs = [(items, databases(template, options.shards, items)) for items in sizes]
    block = "\n".join(table(measure(runner, jobs, options.rounds), runner, sizes, options.shards, options.rounds))
    print(block)
    if options.write:
        write_section(options.write, block, heading="## Bookkeeping at scale", begin=BEGIN, end=END)


if __name__ == "__main__":
    main()
