#!/usr/bin/env python3
"""Crash harness for runner: SIGKILL the runner at random instants in every phase, resume after
each kill, and check after every kill and every completed run that nothing was lost or half-written.

    python3 Tests/crash/crash_test.py --kills 200 --items 2000 --seed 1 --runner .build/release/runner

What it does (standard library only, plus the `vips` CLI to make the synthetic images):

1. Makes a corpus in a temporary folder, deterministic by --seed: local JPEG/PNG/WebP sources of
   mixed sizes (mostly small, a few up to 2400 px), a few damaged ones (they fail `decode`), and URL
   sources served by Tests/http-server/server.py on 127.0.0.1 (slow `/busy/` ones so downloads
   take a while, plain ones, and a 404 that is blacklisted). Two outputs per source.
2. Runs the job once, uninterrupted, in a reference workspace: its outputs (each distinct one
   decoded in full by `vips copy FILE[fail_on=error]`) and final item states are the truth.
3. In the crash workspace, starts the runner again and again and SIGKILLs it at an instant chosen
   for one of five phases (round robin in a seeded order): planning (before the plan event),
   downloading (URL sources not yet all reported), processing (a worker on the CPU), publishing
   (the supervisor in syncfs or rename), recording (the supervisor writing the state database).
   Runs resume without options until nine tenths of the items are done; the next start then
   uses --force, so there is always work to interrupt. Every twentieth start is left to finish.
4. After each kill (`check_after_kill`): PRAGMA integrity_check is ok; every file under a final
   name is byte for byte the reference output (so complete and decodable); every item `done` has
   its output, no item `failed`/`blocked` has one; the workers died with the supervisor and
   nothing was written after the kill; no item done at the previous check was done again (same
   row, same output inode and mtime); and the redone work is bounded (below). After each run that
   finishes (`check_completed`): also no temporary file anywhere, the exit code follows the rule
   (1 exactly when the run recorded a new failure), and items and outputs equal the reference.
5. Kills workers: a fresh workspace runs the job while the harness sends SIGKILL or SIGSEGV to
   random `runner worker` children, and kills again half of the sources it sees retried (the
   worker holding the file open); RUNNER_TEST_CRASH_ON makes two sources crash every time. Each
   affected source is retried once; a second death records it `crashed` (attempts 2). The run
   finishes, exits 1, leaves nothing temporary; the next run redoes the crashed items.

Redone work per kill, from the state database and the folders (read after the kill, before the resume):
  R = items in state `running` with the killed run's id: tasks a worker had turned to (a slot
      marks only the task its worker is on, so |R| <= slots x outputs, checked).
  L = renders finished but never recorded: a staged `.NAME.runner-tmp-PID-HOST` of the killed PID, or
      an output under its final name written during the killed run whose item is not `done`
      (published, not yet recorded). That is the last unflushed batch.
  redone = |R u L|, the figure printed: the items the next run does again although finished or
      begun work had gone into them. (A render cut short before its start was committed leaves
      no trace; it is at most one task per worker.)
  Why the bound is sound: the recorder takes everything handed to it, publishes it and commits
  it, then sleeps 200 ms. So a render can be lost only if it was handed over after the last
  committed batch was taken, which is after the commit before it: the check is that every
  render in L has mtime >= (the killed run's second-to-last commit time, from the rows'
  updated_at) - 0.5 s of slack, and that nothing committed is ever redone (above).

Deterministic by seed: the corpus, the job, the order of target phases and the delays are drawn
from one seeded generator. Where a kill lands still depends on timing, so the figures vary a
little between runs of the same seed.
"""
import argparse
import datetime
import hashlib
import json
import os
import platform
import random
import re
import resource
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PHASES = ["planning", "downloading", "processing", "publishing", "recording"]
TEMP_MARKER = ".runner-tmp-"
OUTPUTS = 2
SLOTS = 2
# A render reaches the recorder a moment after its file is written (the reply through the pipe, the
# slot thread): a lost render may predate the commit before the last one by this much.
LOST_SLACK = 0.5

# Syscall numbers, for telling from /proc/PID/task/TID/syscall what a supervisor thread is doing.
SYSCALLS = {
    "x86_64": {"syncfs": {306},
               "publish": {306, 82, 264, 316},               # syncfs, rename, renameat, renameat2
               "record": {0, 1, 17, 18, 72, 74, 75, 8}},     # read, write, pread64, pwrite64, fcntl, fsync, fdatasync, lseek
    "aarch64": {"syncfs": {267},
                "publish": {267, 38, 276},
                "record": {63, 64, 67, 68, 25, 82, 83, 62}},
}.get(platform.machine(), {"syncfs": {-1}, "publish": set(), "record": set()})

T0 = time.monotonic()
STARTED = set()          # pids of processes this harness started (stopped by pid on exit)


class Failure(Exception):
    pass


def log(message):
    print("[crash %6.1fs] %s" % (time.monotonic() - T0, message), flush=True)


def check(condition, message):
    if not condition:
        raise Failure(message)


# ----------------------------------------------------------------------------------------------
# Processes

def proc_stat(pid):
    """(state, ppid) of a process, or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def alive(pid):
    stat = proc_stat(pid)
    return stat is not None and stat[0] != "Z"


def children(pid):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = proc_stat(int(entry))
            if stat and stat[1] == pid:
                found.append(int(entry))
    return found


def stop(pid):
    """SIGKILL a process this harness started, and reap it if it is our child."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    STARTED.discard(pid)


class Runner:
    """One `runner run JOB --log-format json` process, its output in files."""

    def __init__(self, binary, workspace, args, env, tag):
        self.workspace = workspace
        self.stdout_path = os.path.join(workspace, "logs", tag + ".out")
        self.stderr_path = os.path.join(workspace, "logs", tag + ".err")
        os.makedirs(os.path.dirname(self.stdout_path), exist_ok=True)
        self.args = args
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.wall_start = time.time()
            self.start = time.monotonic()
            self.process = subprocess.Popen([binary, "run", "job.json", "--log-format", "json",
                                             "--progress-interval", "3600"] + args,
                                            cwd=workspace, stdout=out, stderr=err, env=env,
                                            start_new_session=True)
        self.pid = self.process.pid
        STARTED.add(self.pid)
        self.offset = 0
        self.buffer = b""
        self.events = []
        self.plan_at = None
        self.http_reported = set()   # URL sources with an item event in this run

    def read_events(self):
        with open(self.stdout_path, "rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        self.offset += len(data)
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            if not line.strip():
                continue
            event = json.loads(line)
            self.events.append(event)
            if event.get("event") == "plan" and self.plan_at is None:
                # Seconds from the start to the plan event, by the event's own time stamp.
                stamp = datetime.datetime.strptime(event["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
                self.plan_at = stamp.replace(tzinfo=datetime.timezone.utc).timestamp() - self.wall_start
            elif event.get("event") == "item" and event.get("key", "").startswith("http"):
                self.http_reported.add(event["key"].rsplit("@", 1)[0])
        return self.events

    def poll(self):
        code = self.process.poll()
        if code is not None:
            STARTED.discard(self.pid)
        return code

    def wait(self, timeout):
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop(self.pid)
            raise Failure("runner %d did not finish within %d s (a hang); stderr: %s"
                          % (self.pid, timeout, self.stderr()[-2000:]))
        STARTED.discard(self.pid)
        self.read_events()
        return code

    def stderr(self):
        with open(self.stderr_path, errors="replace") as handle:
            return handle.read()

    def summary(self):
        for event in reversed(self.events):
            if event.get("event") == "summary":
                return event
        return None


# ----------------------------------------------------------------------------------------------
# What a run is doing right now

class Sampler:
    """Tells which phases a running runner is in, from its JSON events and from /proc.

    Only the supervisor calls syncfs, from its recorder thread, which then renames the batch and
    commits it to the state database. The first thread seen in syncfs is taken to be the recorder;
    after that, `recorder_phase` reads that one thread only, so short commits are caught too."""

    def __init__(self, runner, remote_sources, state_files):
        self.runner = runner
        self.remote_sources = remote_sources
        self.state_files = state_files
        self.workers = []
        self.workers_at = 0.0
        self.recorder = None          # /proc path of the recorder thread's syscall file
        self.recorder_last = None     # its previous phase: "publishing", "recording" or None

    def refresh_workers(self, force=False):
        now = time.monotonic()
        if force or now - self.workers_at > 0.1:
            self.workers = children(self.runner.pid)
            self.workers_at = now
        return self.workers

    def thread_phase(self, path, recorder):
        """publishing, recording or None for one thread, from its current system call."""
        try:
            with open(path) as handle:
                fields = handle.read().split()
        except OSError:
            return None
        if not fields:
            return None
        if fields[0] == "running":
            # Between the renames and the commit the recorder computes: still on its way to record.
            return "recording" if recorder and self.recorder_last in ("publishing", "recording") else None
        number = int(fields[0])
        if number in SYSCALLS["publish"]:
            return "publishing"
        if number in SYSCALLS["record"] and len(fields) > 1:
            try:
                target = os.readlink("/proc/%d/fd/%d" % (self.runner.pid, int(fields[1], 16)))
            except (OSError, ValueError):
                return None
            if target in self.state_files:
                return "recording"
        return None

    def recorder_phase(self):
        """The recorder thread's phase (fast: one file read), once that thread is known."""
        if self.recorder is None:
            return None
        phase = self.thread_phase(self.recorder, recorder=True)
        self.recorder_last = phase
        return phase

    def phases(self):
        runner = self.runner
        runner.read_events()
        workers = self.refresh_workers()
        if runner.plan_at is None:
            return {"planning"}
        found = set()
        if not self.remote_sources <= runner.http_reported:
            found.add("downloading")
        task_folder = "/proc/%d/task" % runner.pid
        try:
            tasks = os.listdir(task_folder)
        except OSError:
            return found
        for tid in tasks:
            path = "%s/%s/syscall" % (task_folder, tid)
            phase = self.thread_phase(path, recorder=path == self.recorder)
            if phase:
                found.add(phase)
            if phase == "publishing" and self.recorder is None:
                try:
                    with open(path) as handle:
                        fields = handle.read().split()
                    if fields and fields[0] == str(next(iter(SYSCALLS["syncfs"]))):
                        self.recorder = path
                except OSError:
                    pass
            if path == self.recorder:
                self.recorder_last = phase
        for worker in workers:
            stat = proc_stat(worker)
            if stat and stat[0] in ("R", "D"):
                found.add("processing")
                break
        return found


# ----------------------------------------------------------------------------------------------
# Corpus, job and workspaces

def vips(*args):
    subprocess.run(["vips"] + [str(a) for a in args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


def write_png(path, width, height, rng):
    """An RGB PNG of diagonal gradients with a little seeded noise, written with zlib alone."""
    import struct
    import zlib
    period = 3 * 256
    ramp = bytes(range(256)) * ((3 * width) // 256 + 4)
    noise = rng.randbytes(3 * width + period)
    rows = []
    for y in range(height):
        shift = (y * 3) % period
        row = bytearray(ramp[shift:shift + 3 * width])
        offset = (y * 7) % period
        # Every 16th byte takes a noise value, so encoders have something to do.
        row[::16] = noise[offset:offset + 3 * width][::16]
        rows.append(b"\0" + bytes(row))
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    with open(path, "wb") as handle:
        handle.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
                     + chunk(b"IDAT", zlib.compress(b"".join(rows), 1)) + chunk(b"IEND", b""))


def make_corpus(root, items, rng):
    """Local sources under root/src; returns (number of local sources, damaged names, crash names)."""
    bases = os.path.join(root, "bases")
    os.makedirs(bases)
    # Mixed sizes, mostly small so a run is fast; a few large ones make renders take a while.
    sizes = [(24, 24), (40, 30), (64, 48), (96, 128), (160, 120), (240, 180), (320, 240), (480, 360),
             (800, 600), (1200, 900), (1600, 1000), (2400, 1600)]
    weights = [8, 10, 10, 10, 10, 8, 8, 6, 4, 2, 1, 1]
    by_size = {}
    for index, (width, height) in enumerate(sizes):
        png = os.path.join(bases, "b%d.png" % index)
        write_png(png, width, height, rng)
        # PNG for every size, JPEG and WebP (made by libvips) for most.
        variants = [("png", png)]
        for fmt in (["jpg", "webp"] if index % 3 == 0 else ["jpg"]):
            out = os.path.join(bases, "b%d.%s" % (index, fmt))
            vips("copy", png, out)
            variants.append((fmt, out))
        by_size[index] = variants

    local = max(items // OUTPUTS, 20)
    src = os.path.join(root, "src")
    folders = ["d%02d" % n for n in range(max(4, min(40, local // 50)))]
    for folder in folders:
        os.makedirs(os.path.join(src, folder, "sub"))
    for number in range(local):
        index = rng.choices(range(len(sizes)), weights)[0]
        fmt, path = rng.choice(by_size[index])
        folder = rng.choice(folders) + ("/sub" if rng.random() < 0.2 else "")
        os.link(path, os.path.join(src, folder, "img%05d.%s" % (number, fmt)))
    # Sources whose content fails (`decode`): a truncated JPEG, text named .png, an empty JPEG.
    jpeg = by_size[7][1][1]
    with open(jpeg, "rb") as handle:
        data = handle.read()
    damaged = {"broken-truncated.jpg": data[: len(data) // 2], "broken-text.png": b"not an image\n" * 20,
               "broken-empty.jpg": b""}
    for name, content in damaged.items():
        with open(os.path.join(src, folders[1], name), "wb") as handle:
            handle.write(content)
    # Sources a worker dies on whenever RUNNER_TEST_CRASH_ON=crashme- (the worker-kill phase only).
    crash = ["crashme-1.jpg", "crashme-2.png"]
    shutil.copy(by_size[2][1][1], os.path.join(src, folders[0], crash[0]))
    shutil.copy(by_size[3][0][1], os.path.join(src, folders[-1], crash[1]))
    return local + len(damaged) + len(crash), set(damaged), set(crash)


def write_urls(root, port, count):
    """URL sources: slow ones (0.3 s each, so downloads take a while), plain ones and a 404."""
    busy = max(3, count * 4 // 5)
    lines = ["# served by Tests/http-server/server.py"]
    lines += ["http://127.0.0.1:%d/busy/b%03d.jpg" % (port, n) for n in range(busy)]
    lines += ["http://127.0.0.1:%d/img/i%03d.jpg" % (port, n) for n in range(count - busy)]
    gone = "http://127.0.0.1:%d/status/404/gone.jpg" % port
    os.makedirs(os.path.join(root, "urls"))
    with open(os.path.join(root, "urls", "urls.txt"), "w") as handle:
        handle.write("\n".join(lines + [gone]) + "\n")
    return set(lines[1:]), gone


JOB = {
    "version": 1,
    "name": "crash",
    "sources": [{"path": "../src", "recursive": True}, {"list": "../urls/urls.txt"}],
    "outputs": [
        {"name": "thumb", "path": "out/thumb/{dir}/{stem}.webp",
         "chain": [{"op": "thumbnail", "width": 48, "height": 48, "fit": "cover"}],
         "format": {"type": "webp", "quality": 60}},
        {"name": "small", "path": "out/small/{dir}/{stem}.jpg",
         "chain": [{"op": "thumbnail", "width": 96, "height": 96, "fit": "inside"}],
         "format": {"type": "jpeg", "quality": 75}},
    ],
    "concurrency": {"process": SLOTS, "download": 16, "perHost": 6},
    "http": {"timeout": 60, "connectTimeout": 10, "lowSpeedTime": 30},
    "retry": {"attempts": 3, "initialDelay": 0.2, "maxDelay": 1},
    "state": "state/crash.sqlite",
}


def make_workspace(root, name):
    workspace = os.path.join(root, name)
    os.makedirs(workspace)
    with open(os.path.join(workspace, "job.json"), "w") as handle:
        json.dump(JOB, handle, indent=1)
    return workspace


def state_path(workspace):
    return os.path.join(workspace, "state", "crash.sqlite")


# ----------------------------------------------------------------------------------------------
# Reading what is on disk

class Item:
    __slots__ = ("key", "state", "attempts", "path", "kind", "run_id", "updated_at")

    def __init__(self, row, workspace):
        self.key, self.state, self.attempts, path, self.kind, self.run_id, self.updated_at = row
        self.path = os.path.relpath(path, workspace)


def original_files(workspace):
    """URL source key -> the cached original a worker opens for it."""
    connection = sqlite3.connect("file:%s?mode=ro" % urllib.parse.quote(state_path(workspace)), uri=True, timeout=30)
    try:
        return dict(connection.execute("SELECT source_key, file FROM original"))
    finally:
        connection.close()


def read_state(workspace):
    """(integrity, runs by id, items by key, blacklist) from a read-only connection."""
    path = state_path(workspace)
    if not os.path.exists(path):
        return "ok", {}, {}, set()
    connection = sqlite3.connect("file:%s?mode=ro" % urllib.parse.quote(path), uri=True, timeout=30)
    copy = None
    try:
        connection.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError:
        # A killed writer's WAL needs recovery, which a read-only connection cannot do ("attempt to
        # write a readonly database"): read a copy, so the next run finds the state as the kill left it.
        connection.close()
        copy = tempfile.mkdtemp(prefix="crash-state-")
        for suffix in ("", "-wal"):
            if os.path.exists(path + suffix):
                shutil.copyfile(path + suffix, os.path.join(copy, "state.sqlite" + suffix))
        connection = sqlite3.connect(os.path.join(copy, "state.sqlite"), timeout=30)
    try:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"run", "item", "blacklist"} <= tables:
            # Killed before its migrations were committed: nothing recorded yet.
            integrity = "; ".join(row[0] for row in connection.execute("PRAGMA integrity_check"))
            return integrity, {}, {}, set()
        integrity = "; ".join(row[0] for row in connection.execute("PRAGMA integrity_check"))
        runs = {row[0]: row for row in connection.execute(
            "SELECT id, pid, started_at, ended_at, outcome, exit_code FROM run")}
        items = {}
        for row in connection.execute("SELECT key, state, attempts, output_path, error_kind, run_id, updated_at FROM item"):
            item = Item(row, workspace)
            items[item.key] = item
        blacklist = {row[0] for row in connection.execute("SELECT url FROM blacklist")}
    finally:
        connection.close()
        if copy:
            shutil.rmtree(copy, ignore_errors=True)
    return integrity, runs, items, blacklist


class Files:
    """Final outputs and temporary files below a workspace's out/ and state/ folders."""

    def __init__(self, workspace):
        self.final = {}        # relative path -> os.stat_result
        self.temporary = []    # (relative path of the final name, owner pid, stat)
        for top in ("out", "state"):
            for folder, _, names in os.walk(os.path.join(workspace, top)):
                for name in names:
                    full = os.path.join(folder, name)
                    relative = os.path.relpath(full, workspace)
                    marker = name.rfind(TEMP_MARKER)
                    if name.startswith(".") and marker > 0:
                        owner = name[marker + len(TEMP_MARKER):].split("-")[0]  # PID-HOST
                        final = os.path.relpath(os.path.join(folder, name[1:marker]), workspace)
                        try:
                            self.temporary.append((final, int(owner) if owner.isdigit() else -1, os.stat(full)))
                        except FileNotFoundError:
                            pass
                    elif top == "out":
                        try:
                            self.final[relative] = os.stat(full)
                        except FileNotFoundError:
                            pass


class Hashes:
    """sha256 of files, cached by (path, inode, size, mtime)."""

    def __init__(self):
        self.cache = {}

    def of(self, path, stat):
        key = (path, stat.st_ino, stat.st_size, stat.st_mtime_ns)
        if key not in self.cache:
            with open(path, "rb") as handle:
                self.cache[key] = hashlib.sha256(handle.read()).hexdigest()
        return self.cache[key]


# ----------------------------------------------------------------------------------------------
# The checks

class Reference:
    """The uninterrupted run's outputs and item states."""

    def __init__(self, workspace, items, hashes):
        files = Files(workspace)
        check(not files.temporary, "reference run left temporary files: %s" % files.temporary[:3])
        self.outputs = {path: hashes.of(os.path.join(workspace, path), stat) for path, stat in files.final.items()}
        self.done = {key for key, item in items.items() if item.state == "done"}
        self.failed = {key: item.kind or item.state for key, item in items.items() if item.state in ("failed", "blocked")}
        check(all(item.state in ("done", "failed", "blocked") for item in items.values()),
              "reference run ended with unfinished items")
        check({items[key].path for key in self.done} == set(self.outputs),
              "reference outputs differ from the items recorded done")


def decode_all(workspace, reference):
    """Every distinct reference output decodes in full with libvips' fail_on=error."""
    seen = {}
    for path, digest in sorted(reference.outputs.items()):
        seen.setdefault(digest, path)
    scratch = os.path.join(workspace, "decoded.v")
    for digest, path in sorted(seen.items()):
        result = subprocess.run(["vips", "copy", os.path.join(workspace, path) + "[fail_on=error]", scratch],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        check(result.returncode == 0, "reference output %s does not decode: %s" % (path, result.stderr[-300:]))
    os.unlink(scratch)
    return len(seen)


def check_outputs(workspace, items, files, reference, hashes, context):
    """Invariants that hold at every instant, killed or not."""
    # Every file under a final name is complete: byte for byte the reference output.
    for path, stat in files.final.items():
        check(path in reference.outputs, "%s: unexpected output %s" % (context, path))
        check(hashes.of(os.path.join(workspace, path), stat) == reference.outputs[path],
              "%s: %s is not the complete output (differs from the reference)" % (context, path))
    for item in items.values():
        if item.state == "done":
            check(item.path in files.final, "%s: %s recorded done without its output %s" % (context, item.key, item.path))
        elif item.state in ("failed", "blocked"):
            check(item.path not in files.final,
                  "%s: %s recorded %s (%s) but %s is on disk" % (context, item.key, item.state, item.kind, item.path))


def check_not_redone(items, files, previous, context):
    """Items done at the previous check still are, with the same row and the same output file."""
    for key, (state_row, output) in (previous or {}).items():
        item = items.get(key)
        # A URL's items are planned again every run (revalidate "always"): pending until the
        # server confirms the content, then done again without decoding. Their outputs stay.
        remote = key.startswith("http")
        check(item is not None and (item.state == "done" or remote and item.state in ("pending", "running")),
              "%s: %s was done and is now %s" % (context, key, item.state if item else "missing"))
        stat = files.final.get(item.path)
        check(stat is not None and (stat.st_ino, stat.st_mtime_ns) == output,
              "%s: the output of %s, done before, was written again" % (context, key))
        if not remote:
            check((item.run_id, item.updated_at) == state_row,
                  "%s: %s, done before, was recorded again" % (context, key))


def check_after_kill(workspace, runner, killed_at, workers_gone_after, reference, hashes, previous, forced):
    """Checks one kill; returns (redone items, facts) where facts describe what the kill hit."""
    integrity, runs, items, _ = read_state(workspace)
    context = "kill of runner %d" % runner.pid
    check(integrity == "ok", "%s: PRAGMA integrity_check: %s" % (context, integrity))
    files = Files(workspace)
    check_outputs(workspace, items, files, reference, hashes, context)
    for final, owner, _ in files.temporary:
        check(owner > 0 and not alive(owner), "%s: temporary file for %s names live process %d" % (context, final, owner))
    # Nothing gets a final name once the supervisor is dead (only it renames), and nothing is staged
    # once its workers are gone: they die with it, but only after the kernel has torn the supervisor
    # down, so a worker in the middle of staging may finish that write (64 ms after the kill, once,
    # on a loaded machine). The staged file is temporary and removed at the next start.
    for path, stat in files.final.items():
        check(stat.st_mtime <= killed_at + 0.05, "%s: %s was written %.3f s after the supervisor was killed"
              % (context, path, stat.st_mtime - killed_at))
    for final, _, stat in files.temporary:
        check(stat.st_mtime <= killed_at + workers_gone_after + 0.05,
              "%s: %s (staged) was written %.3f s after the supervisor was killed, when its workers were gone %.3f s after it"
              % (context, final, stat.st_mtime - killed_at, workers_gone_after))

    # Work committed before this kill is never done again: rows and output files untouched.
    if not forced:
        check_not_redone(items, files, previous, context)

    run = None
    for row in runs.values():
        if row[1] == runner.pid and row[2] >= runner.wall_start - 2:
            run = row
    facts = {"planCommitted": run is not None}
    redone = set()
    if run is not None:
        run_id, started_at = run[0], run[2]
        running = {key for key, item in items.items() if item.state == "running" and item.run_id == run_id}
        check(len(running) <= SLOTS * OUTPUTS, "%s: %d items running, more than %d slots x %d outputs"
              % (context, len(running), SLOTS, OUTPUTS))
        by_path = {item.path: key for key, item in items.items()}
        lost = {}
        for final, owner, stat in files.temporary:
            if owner == runner.pid and final in by_path:
                key = by_path[final]
                # Done by this run yet still staged would mean recorded before published. A row done
                # by an earlier run keeps its record until a worker starts the item again, so a
                # --force run killed between staging and its "started" commit leaves it done.
                check(not (items[key].state == "done" and items[key].run_id == run_id),
                      "%s: %s is done but still has a staged file" % (context, key))
                lost[key] = stat.st_mtime
        for path, stat in files.final.items():
            key = by_path.get(path)
            if key and items[key].state != "done" and stat.st_mtime >= started_at:
                lost[key] = stat.st_mtime
        commits = sorted({item.updated_at for item in items.values() if item.run_id == run_id}, reverse=True)
        previous_commit = commits[1] if len(commits) > 1 else started_at
        for key, mtime in lost.items():
            check(mtime >= previous_commit - LOST_SLACK,
                  "%s: %s was rendered %.3f s before the killed run's second-to-last commit and never recorded"
                  % (context, key, previous_commit - mtime))
        redone = running | set(lost)
        facts.update(running=len(running), staged=sum(1 for f in files.temporary if f[1] == runner.pid),
                     lostAge=round(max((killed_at - mtime for mtime in lost.values()), default=0.0), 3),
                     beforeCommit=round(max((previous_commit - mtime for mtime in lost.values()), default=-1.0), 3))
    snapshot = {}
    for key, item in items.items():
        if item.state == "done":
            stat = files.final[item.path]
            snapshot[key] = ((item.run_id, item.updated_at), (stat.st_ino, stat.st_mtime_ns))
    return redone, facts, snapshot


def check_completed(workspace, runner, code, reference, hashes, crashed=frozenset(), previous=None):
    """A run that finished: exit code by the rule, nothing temporary left, the reference reached."""
    summary = runner.summary()
    context = "completed run %d" % runner.pid
    check(summary is not None, "%s: no summary event (exit %d); stderr: %s" % (context, code, runner.stderr()[-1500:]))
    check(code in (0, 1), "%s: exit code %d; stderr: %s" % (context, code, runner.stderr()[-1500:]))
    check(code == (1 if summary["failed"] > 0 else 0),
          "%s: exit %d with %d new failures" % (context, code, summary["failed"]))
    integrity, _, items, _ = read_state(workspace)
    check(integrity == "ok", "%s: PRAGMA integrity_check: %s" % (context, integrity))
    files = Files(workspace)
    check(not files.temporary, "%s: temporary files left: %s" % (context, [t[0] for t in files.temporary][:5]))
    check_outputs(workspace, items, files, reference, hashes, context)
    check_not_redone(items, files, previous, context)
    unfinished = [key for key, item in items.items() if item.state not in ("done", "failed", "blocked")]
    check(not unfinished, "%s: items left %s" % (context, unfinished[:5]))
    done = {key for key, item in items.items() if item.state == "done"}
    expected_done = reference.done - crashed
    check(done == expected_done, "%s: done items differ from the reference: missing %s, extra %s"
          % (context, sorted(expected_done - done)[:5], sorted(done - expected_done)[:5]))
    # A blocked item (its URL blacklisted) has no failure kind: "blocked" stands in for one.
    failed = {key: item.kind or item.state for key, item in items.items() if item.state in ("failed", "blocked")}
    expected_failed = dict(reference.failed)
    expected_failed.update({key: "crashed" for key in crashed})
    check(set(failed) == set(expected_failed), "%s: failed items differ from the reference: %s vs %s"
          % (context, sorted(failed)[:5], sorted(expected_failed)[:5]))
    for key, kind in failed.items():
        want = expected_failed[key]
        check(kind == want or {kind, want} <= {"download", "blocked"},
              "%s: %s failed as %s, expected %s" % (context, key, kind, want))
    check(len(files.final) == len(expected_done), "%s: %d outputs for %d done items"
          % (context, len(files.final), len(expected_done)))
    return summary


def wait_for_exit(pids, timeout):
    """Waits until every pid is gone; returns the seconds it took."""
    began = time.monotonic()
    while any(alive(pid) for pid in pids):
        if time.monotonic() - began > timeout:
            return None
        time.sleep(0.005)
    return time.monotonic() - began


# ----------------------------------------------------------------------------------------------
# Phases of the harness

class Harness:
    def __init__(self, options):
        self.options = options
        self.rng = random.Random(options.seed)
        self.binary = os.path.abspath(options.runner)
        self.root = tempfile.mkdtemp(prefix="runner-crash-", dir=options.workdir)
        self.server = None
        self.hashes = Hashes()
        self.deadline = T0 + options.time_limit
        env = dict(os.environ)
        env.pop("RUNNER_TEST_CRASH_ON", None)
        self.env = env
        self.before_commit = -1.0

    def time_left(self):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise Failure("time limit of %d s reached" % self.options.time_limit)
        return left

    def start_server(self):
        port_file = os.path.join(self.root, "port")
        image = os.path.join(REPO, "fixtures", "extra", "ladybird.jpg")
        process = subprocess.Popen([sys.executable, os.path.join(REPO, "Tests", "http-server", "server.py"),
                                    "--image", image, "--port-file", port_file],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        STARTED.add(process.pid)
        self.server = process
        for _ in range(3000):
            if os.path.exists(port_file):
                with open(port_file) as handle:
                    return int(handle.read())
            check(process.poll() is None, "the HTTP server exited")
            time.sleep(0.01)
        raise Failure("the HTTP server did not start")

    def run_to_end(self, workspace, args, tag, env=None):
        runner = Runner(self.binary, workspace, args, env or self.env, tag)
        code = runner.wait(timeout=min(self.time_left(), self.options.run_timeout))
        return runner, code

    def setup(self):
        options = self.options
        log("corpus in %s (seed %d)" % (self.root, options.seed))
        local, self.damaged, self.crash_names = make_corpus(self.root, options.items, self.rng)
        port = self.start_server()
        url_count = max(4, options.items // 60)
        self.remote_sources, self.gone = write_urls(self.root, port, url_count)
        self.items_total = (local + len(self.remote_sources) + 1) * OUTPUTS
        log("%d sources (%d local, %d URLs + a 404), %d items; HTTP server pid %d on port %d"
            % (local + url_count + 1, local, url_count, self.items_total, self.server.pid, port))

        reference_workspace = make_workspace(self.root, "reference")
        began = time.monotonic()
        runner, code = self.run_to_end(reference_workspace, [], "reference")
        check(code == 1, "the reference run should exit 1 (new failures), got %d: %s" % (code, runner.stderr()[-1500:]))
        integrity, _, items, _ = read_state(reference_workspace)
        check(integrity == "ok", "reference integrity: %s" % integrity)
        check(len(items) == self.items_total, "reference has %d items, expected %d" % (len(items), self.items_total))
        self.reference = Reference(reference_workspace, items, self.hashes)
        distinct = decode_all(reference_workspace, self.reference)
        self.plan_seconds = runner.plan_at or 0.5
        log("reference run: %d done, %d failed in %.1f s (planning %.2f s); %d distinct outputs decode in full"
            % (len(self.reference.done), len(self.reference.failed), time.monotonic() - began,
               self.plan_seconds, distinct))
        self.crash_workspace = make_workspace(self.root, "crash")
        base = os.path.realpath(state_path(self.crash_workspace))
        self.state_files = {base, base + "-wal", base + "-shm"}

    def kill_runs(self):
        """SIGKILL the runner `kills` times, resuming after each; returns the figures."""
        options = self.options
        workspace = self.crash_workspace
        order = []
        redone = []
        hits = {phase: 0 for phase in PHASES}
        targeted = {phase: 0 for phase in PHASES}
        orphan_seconds = []
        completed = 0
        force = False
        previous = None
        attempt = 0
        while len(redone) < options.kills:
            self.time_left()
            if not order:
                order = list(PHASES)
                self.rng.shuffle(order)
            target = order.pop()
            delay = self.rng.uniform(0, 0.8 * self.plan_seconds) if target == "planning" else self.rng.uniform(0, 0.8)
            patience = self.rng.uniform(3, 8)
            # Every twentieth start is left to finish: a resume after a string of kills must complete the job.
            spare = attempt % 20 == 19
            attempt += 1
            args = ["--force"] if force else []
            runner = Runner(self.binary, workspace, args, self.env, "k%04d" % attempt)
            sampler = Sampler(runner, self.remote_sources, self.state_files)
            busy = target in ("publishing", "recording")
            phases = set()
            killed_at = None
            sampled_at = 0.0
            while True:
                if spare:
                    code = runner.wait(timeout=min(self.time_left(), options.run_timeout))
                    break
                code = runner.poll()
                if code is not None:
                    break
                elapsed = time.monotonic() - runner.start
                if elapsed >= delay and not spare:
                    # Aiming at the recorder, read its thread alone between full samples (every 20 ms).
                    fast = sampler.recorder_phase() if busy else None
                    if fast == target:
                        phases = {fast}
                    elif sampler.recorder is None or not busy or time.monotonic() - sampled_at > 0.02:
                        phases = sampler.phases()
                        sampled_at = time.monotonic()
                    if target == "planning" or target in phases or elapsed >= delay + patience:
                        workers = list(sampler.workers)
                        os.kill(runner.pid, signal.SIGKILL)
                        killed_at = time.time()
                        break
                if not busy:
                    time.sleep(0.002)
            if killed_at is None:
                runner.wait(timeout=60)
                if runner.plan_at:
                    self.plan_seconds = runner.plan_at
                check_completed(workspace, runner, code, self.reference, self.hashes,
                                previous=None if args else previous)
                completed += 1
                log("run %d %s (exit %d); checked; next start uses --force"
                    % (runner.pid, "left to finish" if spare else "completed before its %s kill" % target, code))
                force = True
                previous = None
                continue
            runner.wait(timeout=30)
            lingered = wait_for_exit(workers, 60)
            workers_gone_after = time.time() - killed_at
            # How long they take to go is the machine's load; that they go with it (PR_SET_PDEATHSIG,
            # even when held) is SupervisorDeathTests'. The bound here only stops a hang.
            check(lingered is not None, "workers %s outlived their supervisor by a minute" % workers)
            orphan_seconds.append(lingered)
            targeted[target] += 1
            for phase in phases:
                hits[phase] += 1
            lost, facts, snapshot = check_after_kill(workspace, runner, killed_at, workers_gone_after, self.reference, self.hashes,
                                                     previous, forced=bool(args))
            redone.append(len(lost))
            self.before_commit = max(self.before_commit, facts.get("beforeCommit", -1.0))
            previous = snapshot
            if runner.plan_at:
                self.plan_seconds = runner.plan_at
            # Keep work to interrupt: once nine tenths are done, the next start redoes everything.
            force = len(snapshot) >= 0.9 * len(self.reference.done)
            if len(redone) % 10 == 0 or options.verbose:
                log("kill %d/%d at %.2f s aiming at %s, in %s: %s redone %d (done so far %d)"
                    % (len(redone), options.kills, killed_at - runner.wall_start, target,
                       "+".join(sorted(phases)) or "-", json.dumps(facts, sort_keys=True), len(lost), len(snapshot)))
        # The last resume runs to the end.
        runner, code = self.run_to_end(workspace, [], "final")
        check_completed(workspace, runner, code, self.reference, self.hashes)
        return redone, hits, targeted, completed, orphan_seconds

    def kill_workers(self):
        """SIGKILL / SIGSEGV random workers; returns (kills, retried sources, crashed sources)."""
        options = self.options
        env = dict(self.env)
        env["RUNNER_TEST_CRASH_ON"] = "crashme-"
        # An external SIGSEGV must kill the worker the way a decoder fault does. Swift's backtracer
        # would catch it, print a backtrace (~2 s) and return, and the worker would carry on.
        env["SWIFT_BACKTRACE"] = "enable=no"
        kills = 0
        retried_total = 0
        crashed_total = 0
        round_number = 0
        while kills < options.worker_kills or round_number == 0:
            round_number += 1
            workspace = make_workspace(self.root, "workers%d" % round_number)
            runner = Runner(self.binary, workspace, [], env, "w%d" % round_number)
            sent = []
            # Sources whose retry the harness tries to kill too (half of those it saw retried):
            # found by the worker holding the source file open, killed once, then recorded crashed.
            hunted = {}          # source -> when its retry notice was seen
            killed_twice = set()
            seen_notices = 0
            current, workers_at = [], 0.0
            next_kill = time.monotonic() + self.rng.uniform(0.3, 1.0)
            while runner.poll() is None:
                self.time_left()
                now = time.monotonic()
                if kills < options.worker_kills and now >= next_kill:
                    workers = sorted(children(runner.pid))
                    choice = self.rng.random()
                    how = signal.SIGKILL if self.rng.random() < 0.5 else signal.SIGSEGV
                    if workers:
                        victim = workers[int(choice * len(workers))]
                        try:
                            os.kill(victim, how)
                            sent.append((victim, how))
                            kills += 1
                        except ProcessLookupError:
                            pass
                    next_kill = now + self.rng.uniform(0.05, 0.6)
                notices = [e["message"] for e in runner.read_events() if e.get("event") == "notice"]
                for message in notices[seen_notices:]:
                    match = re.match(r"worker (\d+) (.*) on (.*); retrying it once$", message)
                    if match and self.rng.random() < 0.5 and "crashme-" not in match.group(3):
                        hunted[match.group(3)] = now
                seen_notices = len(notices)
                if hunted and now - workers_at > 0.02:
                    current, workers_at = children(runner.pid), now
                for source, since in list(hunted.items()):
                    if now - since > 3:
                        del hunted[source]
                        continue
                    for worker in current:
                        try:
                            holds = any(os.readlink("/proc/%d/fd/%s" % (worker, fd)) == source
                                        for fd in os.listdir("/proc/%d/fd" % worker))
                        except OSError:
                            continue
                        if holds:
                            os.kill(worker, signal.SIGKILL)
                            sent.append((worker, signal.SIGKILL))
                            killed_twice.add(source)
                            del hunted[source]
                            break
                if not hunted:
                    time.sleep(0.005)
            code = runner.wait(timeout=60)
            notices = [e["message"] for e in runner.events if e.get("event") == "notice"]
            retried = {}
            for message in notices:
                match = re.match(r"worker (\d+) (.*) on (.*); retrying it once$", message)
                if match:
                    source = match.group(3)
                    check(source not in retried, "source %s was retried twice" % source)
                    retried[source] = int(match.group(1))
            _, _, items, _ = read_state(workspace)
            crashed = {key for key, item in items.items() if item.state == "failed" and item.kind == "crashed"}
            # Workers open a URL source's cached original: notices name that file.
            originals = original_files(workspace)
            crashed_sources = {originals.get(key.rsplit("@", 1)[0], key.rsplit("@", 1)[0]) for key in crashed}
            for source in crashed_sources:
                check(source in retried, "%s recorded crashed without a retry" % source)
            for key in crashed:
                check(items[key].attempts == 2, "%s crashed after %d attempts, expected 2" % (key, items[key].attempts))
            crash_sources = {key.rsplit("@", 1)[0] for key in self.reference.done
                             if os.path.basename(key.rsplit("@", 1)[0]) in self.crash_names}
            missing = sorted(crash_sources - crashed_sources)
            check(not missing, "sources the worker always crashes on were not recorded crashed: %s (their items: %s; "
                  "run exit %s; last notices: %s)" % (missing, [(key, items[key].state, items[key].kind, items[key].attempts)
                  for key in items if key.rsplit("@", 1)[0] in missing], code, notices[-3:]))
            check(killed_twice <= crashed_sources, "killed on their retry too, yet not recorded crashed: %s"
                  % sorted(killed_twice - crashed_sources))
            check(code == 1, "worker-kill run exited %d, expected 1 (crashed items)" % code)
            check_completed(workspace, runner, code, self.reference, self.hashes, crashed=frozenset(crashed))
            killed_pids = {pid for pid, _ in sent}
            by_harness = sum(1 for pid in retried.values() if pid in killed_pids)
            log("worker round %d: %d workers killed (%d SIGSEGV), %d sources retried (%d after a harness kill), "
                "%d crashed (%d injected, %d killed again on their retry); exit %d"
                % (round_number, len(sent), sum(1 for _, how in sent if how == signal.SIGSEGV), len(retried),
                   by_harness, len(crashed_sources), len(crash_sources), len(killed_twice), code))
            # Crashed items run again next time, and then everything equals the reference.
            resumed, code = self.run_to_end(workspace, [], "w%d-resume" % round_number)
            check_completed(workspace, resumed, code, self.reference, self.hashes)
            retried_total += len(retried)
            crashed_total += len(crashed_sources)
            shutil.rmtree(workspace)
        return kills, retried_total, crashed_total

    def cleanup(self):
        for pid in list(STARTED):
            stop(pid)
        if not self.options.keep:
            shutil.rmtree(self.root, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=200, help="SIGKILLs of the runner (default 200)")
    parser.add_argument("--items", type=int, default=2000, help="items in the job, at least (default 2000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--worker-kills", type=int, default=20, help="SIGKILL/SIGSEGV of workers (default 20)")
    parser.add_argument("--runner", default=os.path.join(REPO, ".build", "release", "runner"))
    parser.add_argument("--workdir", default=None, help="where the temporary folder goes (default: TMPDIR)")
    parser.add_argument("--time-limit", type=float, default=1800, help="seconds for everything (default 1800)")
    parser.add_argument("--run-timeout", type=float, default=300, help="seconds for one uninterrupted run")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--verbose", action="store_true", help="a line per kill")
    options = parser.parse_args()
    check_tools = shutil.which("vips")
    if not check_tools or not os.access(options.runner, os.X_OK):
        print("crash_test: needs the vips CLI and a built runner (%s)" % options.runner, file=sys.stderr)
        return 2
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))   # workers killed by SIGSEGV write no core files
    harness = Harness(options)

    def interrupted(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)
    try:
        harness.setup()
        redone, hits, targeted, completed, orphans = harness.kill_runs()
        worker_kills, retried, crashed = harness.kill_workers() if options.worker_kills > 0 else (0, 0, 0)
    except Failure as failure:
        log("FAILED: %s" % failure)
        if options.keep:
            log("workspace kept in %s" % harness.root)
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    finally:
        harness.cleanup()
    wall = time.monotonic() - T0
    print("crash test passed (seed %d, %d items)" % (options.seed, harness.items_total))
    print("  runner kills: %d, %d runs completed in between (checked like the last one)" % (len(redone), completed))
    print("  kills aimed at: %s" % ", ".join("%s %d" % (p, targeted[p]) for p in PHASES))
    print("  phases seen at the kill: %s" % ", ".join("%s %d" % (p, hits[p]) for p in PHASES))
    print("  redone items per kill: median %g, max %d (total %d)"
          % (statistics.median(redone), max(redone), sum(redone)))
    print("  lost renders: handed over at most %.3f s before the commit before the last (allowed %.1f s)"
          % (harness.before_commit, LOST_SLACK))
    print("  workers outliving their killed supervisor: max %.3f s" % max(orphans or [0]))
    print("  worker kills at random: %d; sources retried %d, recorded crashed %d (2 by injected crashes per round,"
          " the others killed again on their retry)" % (worker_kills, retried, crashed))
    print("  wall time: %.0f s" % wall)
    return 0


if __name__ == "__main__":
    sys.exit(main())
