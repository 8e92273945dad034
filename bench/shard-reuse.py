#!/usr/bin/env python3
"""A shard's up-to-date rerun over a list of local paths, or with --glob over a glob of the same
files (issue 24: a shard reuses its last plan).

URL items cannot be up to date without cached originals, so the list names files: every file of
bookkeeping.py's cached glob tree (`tree/dNNNNN/fNNNNNNNN.png`, hard links to empty seeds),
read only through symlinks in bench/cache/shard-reuse, whose outputs `out/{dir}/{stem}.jpg` land on
bookkeeping.py's cached `out-glob` files. Shard 0's state database is written directly, as
bookkeeping.py writes its sparse state: runner's schema, run row and fingerprint from a one-item
probe run, then every item of the shard done (every 100th a known failure). Then, per binary and
round: a fresh copy of that state, the first run (plans the whole job; a binary that reuses plans
records its sources), then reruns and `runner plan` of the shard, each under /usr/bin/time -v.

With --glob the job is `{"glob": "tree/d*/*.png"}`, its outputs `out/tree/{dir}/{stem}.jpg`: the
same source keys (so the same shard), output paths and seeded items as the list's.

    python3 bench/shard-reuse.py --count 1000000 --runner /tmp/before --runner /tmp/after
    python3 bench/shard-reuse.py --count 10000000 --glob --runner /tmp/before --runner /tmp/after
"""
import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.path.join(HERE, "cache", "shard-reuse")


def timed(args):
    """(user + sys CPU s, wall s, peak RSS MB, exit code, stdout + stderr before time's report)."""
    started = time.monotonic()
    result = subprocess.run(["/usr/bin/time", "-v"] + args, cwd=WORK, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wall = time.monotonic() - started
    errors = result.stderr.decode(errors="replace")
    fields = {}
    for line in errors[errors.rfind("\tCommand being timed"):].splitlines():
        name, _, value = line.strip().partition(": ")
        fields[name] = value
    cpu = float(fields.get("User time (seconds)", 0)) + float(fields.get("System time (seconds)", 0))
    peak = int(fields.get("Maximum resident set size (kbytes)", 0)) / 1024
    own = errors[:errors.rfind("\tCommand being timed")]
    return cpu, wall, peak, result.returncode, result.stdout.decode(errors="replace") + own


def write_job(name, source, count, folder=""):
    """A job over `source` whose outputs are `out<count>/<folder>{dir}/{stem}.jpg`."""
    path = os.path.join(WORK, f"{name}.json")
    with open(path, "w") as job:
        job.write('{"version": 1, "name": "%s", "sources": [%s],\n' % (name, source)
                  + ' "outputs": [{"name": "t", "path": "out%d/%s{dir}/{stem}.jpg",\n' % (count, folder)
                  + '   "chain": [{"op": "thumbnail", "width": 8, "height": 8}], "format": {"type": "jpeg"}}],\n'
                  + ' "state": "state-%s.sqlite"}\n' % name)
    return path


def prepare(count, cache, runner, shards, kind):
    """The list (or glob), the symlinks, the job and shard 0's state (made once); returns the job's path."""
    os.makedirs(os.path.join(WORK, f"out{count}"), exist_ok=True)
    for link, target in ((f"tree{count}", f"tree{count}"), (f"out{count}/tree{count}", f"out-glob{count}")):
        if not os.path.islink(os.path.join(WORK, link)):
            os.symlink(os.path.join(cache, target), os.path.join(WORK, link))
    listing = os.path.join(WORK, f"paths{count}.txt")
    if kind == "glob":
        job = write_job(f"glob{count}", '{"glob": "tree%d/d*/*.png"}' % count, count, folder=f"tree{count}/")
    elif not os.path.exists(listing):
        with open(listing + ".part", "w") as out:
            for index in range(count):
                out.write(f"tree{count}/d{index // 1000:05d}/f{index:08d}.png\n")
        os.rename(listing + ".part", listing)
    if kind == "paths":
        job = write_job(f"paths{count}", '{"list": "paths%d.txt"}' % count, count)
    state = os.path.join(WORK, f"seed-{kind}{count}.shard-0-of-{shards}.sqlite")
    if os.path.exists(state):
        return job
    probe = write_job(f"probe{count}", '{"path": "tree%d/d00000/f00000000.png"}' % count, count)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(os.path.join(WORK, f"state-probe{count}.sqlite{suffix}")):
            os.remove(os.path.join(WORK, f"state-probe{count}.sqlite{suffix}"))
    timed([runner, probe, "--quiet"])  # an empty file fails to decode: exit 1, and the item has the fingerprint
    _, _, _, code, listed = timed([runner, "plan", job, "--shard", f"0/{shards}", "--list"])
    if code != 0:
        sys.exit(listed[-800:])
    shutil.copyfile(os.path.join(WORK, f"state-probe{count}.sqlite"), state + ".part")
    database = sqlite3.connect(state + ".part")
    fingerprint, run_id = database.execute("SELECT fingerprint, run_id FROM item").fetchone()
    database.execute("DELETE FROM item")
    now = time.time() - 1000

    def rows():
        for index, line in enumerate(line for line in listed.splitlines() if line.count("\t") == 2):
            _, key, output = line.split("\t")
            source = key[:-len("@t")]
            failed = index % 100 == 7
            yield (key, source, "t", "failed" if failed else "done", 1, fingerprint, output,
                   "decode" if failed else None, "not an image (synthetic)" if failed else None, 0.01, run_id, now)
    database.executemany("""INSERT INTO item (key, source_key, output_name, state, attempts, fingerprint, output_path,
                            error_kind, error_message, duration, run_id, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""", rows())
    database.commit()
    database.execute("VACUUM")
    database.close()
    os.rename(state + ".part", state)
    return job


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--shards", type=int, default=64)
    parser.add_argument("--runner", action="append", required=True,
                        help="a binary to measure (repeat to interleave; the first makes the seed state, so name a binary without v11 first)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--reruns", type=int, default=2)
    parser.add_argument("--cache", default=os.path.join(HERE, "cache", "bookkeeping"),
                        help="bookkeeping.py's cache (tree and out-glob of --count), read only")
    parser.add_argument("--glob", action="store_true", help="a glob over the tree instead of a list of its files")
    options = parser.parse_args()
    os.makedirs(WORK, exist_ok=True)
    kind = "glob" if options.glob else "paths"
    job = prepare(options.count, options.cache, options.runner[0], options.shards, kind)
    shard = ["--shard", f"0/{options.shards}"]
    state = os.path.join(WORK, f"state-{kind}{options.count}.shard-0-of-{options.shards}.sqlite")
    for round_ in range(options.rounds):
        for runner in options.runner:
            for suffix in ("-wal", "-shm"):
                if os.path.exists(state + suffix):
                    os.remove(state + suffix)
            shutil.copyfile(os.path.join(WORK, f"seed-{kind}{options.count}.shard-0-of-{options.shards}.sqlite"), state)
            steps = [("first run", [runner, job, "--quiet"] + shard)]
            steps += [(f"rerun {n + 1}", [runner, job] + shard) for n in range(options.reruns)]
            steps += [("plan", [runner, "plan", job] + shard)]
            for label, args in steps:
                cpu, wall, peak, code, output = timed(args)
                last = output.strip().splitlines()[-1] if output.strip() else ""
                reused = ", plan reused" if "sources as the last plan found them" in output else ""
                print(f"{options.count:,} round {round_ + 1} {os.path.basename(runner)} {label}: {cpu:.2f} s CPU, {wall:.2f} s wall, "
                      f"{peak:.0f} MB, exit {code}{reused}: {last[:160]}", flush=True)


if __name__ == "__main__":
    main()
