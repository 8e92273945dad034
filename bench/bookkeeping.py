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
import sqlite3
import subprocess
import sys
import time

from fixedcost import write_section

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORK = os.path.join(HERE, "cache", "bookkeeping")
BEGIN, END = "<!-- bookkeeping:begin -->", "<!-- bookkeeping:end -->"
RUNNER = [""]  # the binary measured, set by main


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


# ---- At scale (issue 24): 1M and 10M sources, one shard of --shards, a large sparse state ----

class Rows:
    """The table's rows, each printed as it is measured."""
    def __init__(self, rows):
        self.rows = rows

    def append(self, row):
        self.rows.append(row)
        print(f"{row[0]}: {row[1]:.2f} s, {row[2]:.1f} MB: {row[3]}", file=sys.stderr, flush=True)


def timed(args, cwd):
    """Runs `args` under /usr/bin/time -v; returns (seconds, peak RSS MB, exit code, stdout). Peak
    RSS is that of the largest process waited for: runner itself, for plan, status and failed."""
    started = time.monotonic()
    result = subprocess.run(["/usr/bin/time", "-v"] + args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seconds = time.monotonic() - started
    errors = result.stderr.decode(errors="replace")
    peak = next((int(line.split(":")[1]) for line in errors.splitlines() if "Maximum resident set size" in line), 0)
    # runner's own stderr (a run's summary) comes before time's report
    own = errors[:errors.rfind("\tCommand being timed")] if "\tCommand being timed" in errors else errors
    return seconds, peak / 1024, result.returncode, result.stdout.decode(errors="replace") + own


def checked(args, cwd, allowed=(0,)):
    seconds, peak, code, output = timed(args, cwd)
    if code not in allowed:
        sys.exit(f"{' '.join(args)} exited {code}: {output[-800:]}")
    return seconds, peak, output


def url_list(count):
    """`count` distinct URLs, one a line (~75 bytes each), made once."""
    path = os.path.join(WORK, f"scale-urls{count}.txt")
    if not os.path.exists(path):
        with open(path + ".part", "w") as listing:
            for index in range(count):
                listing.write(f"https://images.example.com/catalog/{index % 997}/product-{index:08d}.jpg?v=3\n")
        os.rename(path + ".part", path)
    return os.path.basename(path)


SEED_TIME = 1_700_000_000 * 10**9  # every seed's mtime: all sources share one identity, so one fingerprint


def link_tree(name, count, extension, make_seed):
    """`count` hard links `name/dNNNNN/fNNNNNNNN.EXT`, 1,000 a folder, to seeds of 50,000 links
    each (ext4 allows 65,000 a file): directory entries only, no inode per file. Made once."""
    root = os.path.join(WORK, name)
    if os.path.exists(root + ".done"):
        return
    for index in range(0, count, 1000):
        folder = os.path.join(root, f"d{index // 1000:05d}")
        os.makedirs(folder, exist_ok=True)
        seed = os.path.join(WORK, f"seed-{name}-{index // 50_000}.{extension}")
        if not os.path.exists(seed):
            make_seed(seed)
            os.utime(seed, ns=(SEED_TIME, SEED_TIME))
        for number in range(index, min(index + 1000, count)):
            try:
                os.link(seed, os.path.join(folder, f"f{number:08d}.{extension}"))
            except FileExistsError:
                pass
    open(root + ".done", "w").close()


def sparse_state(count, state, keys):
    """A state database of `count` items as a run records them, written directly (no image is
    decoded): runner's own schema and run row from a one-item probe run, then `keys` (index,
    source key, output path) as items, every 100th failed (`decode`, a known failure), every
    1,000th done with a warning, the rest done. Returns the fingerprint probe's output."""
    probe = write_job("probe", '{"path": "tree%d/d00000/f00000000.png"}' % count)
    fresh("probe")
    checked([RUNNER[0], probe, "--quiet"], WORK, allowed=(0, 1))  # an empty file fails to decode: exit 1
    shutil.copyfile(os.path.join(WORK, "state-probe.sqlite"), state + ".part")
    database = sqlite3.connect(state + ".part")
    fingerprint, run_id = database.execute("SELECT fingerprint, run_id FROM item").fetchone()
    database.execute("PRAGMA journal_mode = OFF")
    database.execute("PRAGMA synchronous = OFF")
    database.execute("DELETE FROM item")
    now = time.time() - count / 1000

    def rows():
        for index, source, output in keys:
            failed = index % 100 == 7
            yield (source + "@t", source, "t", "failed" if failed else "done", 1, fingerprint, output,
                   "decode" if failed else None, "not an image (synthetic)" if failed else None,
                   "ignored an unusable ICC profile (synthetic)" if index % 1000 == 3 else None,
                   0.01, run_id, now + index / 1000)
    database.executemany("""INSERT INTO item (key, source_key, output_name, state, attempts, fingerprint, output_path,
                            error_kind, error_message, warning, duration, run_id, updated_at)
                            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""", rows())
    add_facts(database, fingerprint)
    database.commit()
    database.execute("PRAGMA journal_mode = WAL")
    database.execute("VACUUM")
    database.close()
    os.rename(state + ".part", state)


def add_facts(database, fingerprint):
    """What a run records of each done item's output (v9) and of its source: on the item before v10,
    in one `source` row per source since (every source has one output here, so the row's cost is
    not shared), so the state's bytes per item compare across that change."""
    database.execute("""UPDATE item SET width = 8, height = 8, bytes = 160, media_type = 'image/jpeg',
                        content_hash = substr(printf('%016x', abs(random())), 1, 16) WHERE state = 'done'""")
    columns = {row[1] for row in database.execute("PRAGMA table_info(item)")}
    if "source_format" in columns:
        database.execute("""UPDATE item SET source_width = 16, source_height = 16, source_format = 'png',
                            source_hash = substr(printf('%016x', abs(random())), 1, 16) WHERE state = 'done'""")
    else:
        database.execute("""INSERT INTO source (key, location, fingerprint, bytes, width, height, format, content_hash, updated_at)
                            SELECT source_key, NULL, ?, 24000, 16, 16, 'png', substr(printf('%016x', abs(random())), 1, 16),
                                   updated_at FROM item WHERE state = 'done'""", (fingerprint[:16],))


def glob_keys(count):
    for index in range(count):
        relative = f"d{index // 1000:05d}/f{index:08d}"
        yield index, f"{WORK}/tree{count}/{relative}.png", f"{WORK}/out-glob{count}/{relative}.jpg"


def shard_keys(job, shard, count):
    """The (index, key, output) of one shard's items, as `runner plan --list` names them."""
    _, _, listing = checked([RUNNER[0], "plan", job, "--shard", f"{shard}/{count}", "--list"], WORK)
    for line in listing.splitlines():
        if line.count("\t") != 2:
            continue  # the counts
        _, key, output = line.split("\t")
        source = key[:-len("@t")]
        yield int(source[-12:-4]), source, output


def scale(count, shards, found):
    rows = Rows(found)
    """Every issue-24 figure at `count` sources: plans of a URL list and of a glob (one shard of
    `shards`, and unsharded), then on a sparse state of `count` done items the up-to-date rerun
    (whole job, and one shard with its own database), bytes per item, status, failed, report."""
    link_tree(f"tree{count}", count, "png", lambda seed: open(seed, "w").close())
    urls = write_job(f"urls{count}", '{"list": "%s"}' % url_list(count))
    # plans read no state: the glob's is a job of its own, without the sparse state below
    glob_plan = write_job(f"globplan{count}", '{"glob": "tree%d/d*/*.png"}' % count)
    glob = write_job(f"glob{count}", '{"glob": "tree%d/d*/*.png"}' % count)
    for label, job in (("URL list", urls), ("glob", glob_plan)):
        for args, what in (([ "--shard", f"0/{shards}"], f"one shard of {shards}"), ([], "unsharded")):
            seconds, peak, output = checked([RUNNER[0], "plan", job] + args, WORK)
            rows.append((f"plan {count:,}, {label}, {what}", seconds, peak, output.strip().splitlines()[-1]))
    state = os.path.join(WORK, f"state-glob{count}.sqlite")
    shard_state = os.path.join(WORK, f"state-glob{count}.shard-0-of-{shards}.sqlite")
    if not os.path.exists(state):
        link_tree(f"out-glob{count}", count, "jpg", lambda seed: subprocess.run(
            ["vips", "black", seed + "[Q=80]", "8", "8", "--bands", "3"], check=True))
        sparse_state(count, state, glob_keys(count))
    if not os.path.exists(shard_state):
        sparse_state(count, shard_state, shard_keys(glob, 0, shards))
    size = os.path.getsize(state)
    rows.append((f"state database, {count:,} items", 0, 0, f"{size / 2**20:,.0f} MiB, {size / count:.0f} bytes per item"))
    rerun(glob, [], f"up-to-date rerun {count:,}, whole job", rows)
    # Before the shard's run: reports answer for the layout that ran last.
    for command in (["status"], ["failed"], ["report", "--out", os.path.join(WORK, f"report{count}/report.html")]):
        seconds, peak, output = checked([RUNNER[0]] + command + [glob], WORK)
        lines = output.strip().splitlines()
        rows.append((f"{command[0]} {count:,} items", seconds, peak, f"{len(lines):,} lines; " + (lines[-1][:90] if lines else "")))
    rerun(glob, ["--shard", f"0/{shards}"], f"up-to-date rerun {count:,}, one shard of {shards}", rows)


def rerun(job, args, label, rows):
    seconds, peak, output = checked([RUNNER[0], job, "--quiet"] + args, WORK)
    rows.append((label, seconds, peak, output.strip().splitlines()[-1]))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runner", default=os.environ.get("BENCH_RUNNER", os.path.join(ROOT, ".build/release/runner")))
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--scale", default="1000000,10000000",
                        help="source counts of the at-scale part, comma-separated ('' skips it; default 1000000,10000000)")
    parser.add_argument("--shards", type=int, default=64, help="the shard count of the at-scale part (default 64)")
    parser.add_argument("--scale-only", action="store_true", help="only the at-scale part")
    parser.add_argument("--write", metavar="REPORT", help="put the tables into REPORT's \"## Bookkeeping at scale\"")
    options = parser.parse_args()
    runner = os.path.abspath(options.runner)
    RUNNER[0] = runner
    os.makedirs(WORK, exist_ok=True)
    lines = [BEGIN, ""]
    if not options.scale_only:
        lines += small_part(runner, options)
    counts = [int(text) for text in options.scale.split(",") if text]
    if counts:
        rows = []
        for count in counts:
            scale(count, options.shards, rows)
        lines += scale_part(rows, counts, options.shards)
    lines.append(END)
    block = "\n".join(lines)
    print(block)
    if options.write:
        section = block
        if options.scale_only or not counts:
            section = keep_other_part(options.write, block, scale_only=options.scale_only)
        write_section(options.write, section, heading="## Bookkeeping at scale", begin=BEGIN, end=END)


def small_part(runner, options):
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

    job = write_job("urls", '{"list": "%s"}' % url_list(options.urls))
    seconds, peak, summary = measure([runner, "plan", job], WORK)
    rows.append((f"plan {options.urls:,} URLs", seconds, peak, summary))

    ratio = peaks[options.items] / peaks[1000]
    rerun = rows[2][1]
    plan_peak = rows[3][2]
    lines = [f"_Generated by `python3 bench/bookkeeping.py` on {datetime.date.today()} (items {options.items:,}, "
             f"URLs {options.urls:,}); runner {os.path.relpath(runner, ROOT)}._", "",
             "| measurement | wall s | supervisor peak RSS MB | runner's summary |", "| --- | ---: | ---: | --- |"]
    lines += [f"| {label} | {seconds:.2f} | {peak:.1f} | {summary} |" for label, seconds, peak, summary in rows]
    lines += ["",
              f"- Flat memory: peak RSS for {options.items:,} items / 1,000 items: {ratio:.2f}x (target at most 1.20x: "
              f"{'met' if ratio <= 1.20 else 'NOT met'}).",
              f"- Up-to-date rerun of {options.items:,} items: {rerun:.2f} s (target under 2 s: "
              f"{'met' if rerun < 2 else 'NOT met'}).",
              f"- Planning {options.urls:,} URLs: peak RSS {plan_peak:.0f} MB (target under 200 MB: "
              f"{'met' if plan_peak < 200 else 'NOT met'}).", ""]
    return [SMALL_BEGIN] + lines + [SMALL_END, ""]


SMALL_BEGIN, SMALL_END = "<!-- bookkeeping-small:begin -->", "<!-- bookkeeping-small:end -->"
SCALE_BEGIN, SCALE_END = "<!-- bookkeeping-scale:begin -->", "<!-- bookkeeping-scale:end -->"


def keep_other_part(report, block, scale_only):
    """`block` with the part this command did not measure carried over from `report`."""
    try:
        with open(report) as handle:
            text = handle.read()
    except OSError:
        return block
    begin, end = (SMALL_BEGIN, SMALL_END) if scale_only else (SCALE_BEGIN, SCALE_END)
    if begin not in text or end not in text:
        return block
    kept = text[text.index(begin):text.index(end) + len(end)]
    return block.replace(BEGIN + "\n", BEGIN + "\n\n" + kept + "\n", 1) if scale_only else block.replace("\n" + END, "\n" + kept + "\n\n" + END)


def scale_part(rows, counts, shards):
    lines = [SCALE_BEGIN, "",
             f"_At scale, generated by `python3 bench/bookkeeping.py` on {datetime.date.today()} (sources "
             f"{', '.join(f'{count:,}' for count in counts)}; one shard of {shards}); runner {os.path.relpath(RUNNER[0], ROOT)}. "
             "Peak RSS from `/usr/bin/time -v` (the runner process)._", "",
             "| measurement | wall s | peak RSS MB | runner's output |", "| --- | ---: | ---: | --- |"]
    lines += [f"| {label} | {seconds:.2f} | {peak:.1f} | {summary.replace('|', '/')} |" for label, seconds, peak, summary in rows]
    return lines + ["", SCALE_END, ""]


if __name__ == "__main__":
    main()
