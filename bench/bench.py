#!/usr/bin/env python3
"""Benchmark harness: runner against a C reference and other thumbnailers (issue 5).

    python3 bench/bench.py                 # full: sets large+small, every peer, 3 rounds,
                                           # writes BENCHMARKS.md (run bench/make-corpus.sh first)
    python3 bench/bench.py --quick         # smoke: quick set, 1 round, C reference + runner only;
                                           # exits non-zero if runner fails or writes no outputs

Every peer makes the same thumbnails: fit inside 256x256, JPEG quality 80, metadata stripped,
2 workers (threads or processes) unless its name says otherwise. For each set, peers run in
interleaved rounds (A B C ... A B C ...), each run into a fresh, empty output folder. Per run:
wall time, CPU time (user+sys of the whole process tree, from wait4), the largest single-process
peak RSS (ru_maxrss from wait4), and the peak PSS summed over the process tree (sampled from
/proc). After the rounds, a sample of each peer's thumbnails is compared with a reference made
by decoding the full image and resizing it with lanczos3 to the same size (vips resize
--kernel lanczos3 --gap 0): mean absolute difference per pixel and band, 0-255.

The harness itself needs only python3 (stdlib), cc, pkg-config, libvips-dev and libvips-tools.
Peers that need more (ImageMagick, Pillow, pyvips) are installed with apt-get/pip in full mode
unless --no-install, and skipped with a note when that fails. --quick never installs anything.
"""
import argparse
import datetime
import json
import os
import platform
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import tempfile
import sys
import threading
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
CACHE = os.path.join(BENCH, "cache")
CORPUS = os.path.join(CACHE, "corpus")
SETS = {
    "large": "~200 JPEGs of 8-20 megapixels (re-encoded Debian wallpaper photos)",
    "small": "~2,000 JPEGs of 1-2 megapixels (re-encoded Debian wallpaper photos)",
    "quick": "20 synthetic JPEGs of ~1.5 megapixels (smoke test)",
}
NOISY = 0.25  # a run during which other work kept more than this many cores busy, on average, is flagged
PLACEHOLDER = "_To be filled in: a profile of runner against the C reference (see the numbers above)._"


def log(message):
    print(f"bench: {message}", file=sys.stderr, flush=True)


def run_text(argv, **kwargs):
    """Output of a small command, or '' when it cannot run."""
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=120, **kwargs)
        return (result.stdout or result.stderr).strip()
    except (OSError, subprocess.SubprocessError):
        return ""


# --- measuring ------------------------------------------------------------------------------------

class TreeSampler(threading.Thread):
    """Polls /proc for the process tree under `root` and keeps the peak of its summed PSS."""

    def __init__(self, root, interval):
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.peak_kib = 0
        self.stopping = threading.Event()

    def tree(self):
        children = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    stat = handle.read()
            except OSError:
                continue
            ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
            children.setdefault(ppid, []).append(int(entry))
        found, todo = [], [self.root]
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo.extend(children.get(pid, []))
        return found

    @staticmethod
    def pss_kib(pid):
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
                for line in handle:
                    if line.startswith(b"Pss:"):
                        return int(line.split()[1])
        except (OSError, ValueError):
            pass
        return 0

    def run(self):
        while not self.stopping.wait(self.interval):
            total = sum(self.pss_kib(pid) for pid in self.tree())
            self.peak_kib = max(self.peak_kib, total)

    def stop(self):
        self.stopping.set()
        self.join()


def busy_seconds():
    """CPU seconds the whole machine has spent busy (all cores; steal counts as busy) since boot."""
    with open("/proc/stat") as handle:
        fields = [int(x) for x in handle.readline().split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def self_cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Settler:
    """Before a run, waits (up to `per_run` seconds, `budget` in all) for other work on the machine to
    drop below NOISY cores, so fewer runs share the CPU with someone else's build."""

    def __init__(self, per_run, budget):
        self.per_run, self.budget, self.waited = per_run, budget, 0.0

    def wait(self):
        started = time.perf_counter()
        while min(self.per_run, self.budget) - (time.perf_counter() - started) > 0:
            busy, own = busy_seconds(), self_cpu()
            time.sleep(1.0)
            if (busy_seconds() - busy) - (self_cpu() - own) < NOISY:
                break
        spent = time.perf_counter() - started
        self.waited += spent
        self.budget = max(0.0, self.budget - spent)


def measure(argv, env=None, cwd=None, stderr_path=None, sample_interval=0.25):
    """Runs argv to the end. Returns wall s, CPU s of its tree, the largest single-process RSS MiB,
    the peak PSS of the tree MiB, the exit code, and `other`: the average number of cores busy with
    anything else (other users' work, the hypervisor's steal; not this harness) while it ran."""
    stderr = open(stderr_path, "wb") if stderr_path else subprocess.DEVNULL
    try:
        busy_before, self_before = busy_seconds(), self_cpu()
        started = time.perf_counter()
        # Its own process group, so an interrupted benchmark takes its xargs children down with it.
        process = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=stderr, process_group=0)
        sampler = TreeSampler(process.pid, sample_interval)
        sampler.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        except BaseException:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
        wall = time.perf_counter() - started
        busy_after = busy_seconds()
        sampler.stop()
        process.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if stderr_path:
            stderr.close()
    cpu = usage.ru_utime + usage.ru_stime
    harness = self_cpu() - self_before  # mostly the /proc sampler
    return {
        "wall": wall,
        "cpu": cpu,
        "rss": usage.ru_maxrss / 1024,  # KiB on Linux; the largest of the tree's processes
        "pss": sampler.peak_kib / 1024,
        "code": process.returncode,
        "other": max(0.0, (busy_after - busy_before - cpu - harness) / wall),
        "harness": harness,
    }


# --- peers ----------------------------------------------------------------------------------------

class Peer:
    """One contender. `command(outdir, listfile, workdir)` gives argv; `check()` gives a skip reason."""

    def __init__(self, key, label, command, check=lambda: None, env=None, quick=False):
        self.key, self.label, self.command, self.check, self.env, self.quick = key, label, command, check, env or {}, quick


def is_elf(path):
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == b"\x7fELF"
    except OSError:
        return False


def find_convert():
    """The real ImageMagick convert (Debian's), never a script standing in for it."""
    for candidate in ("/usr/bin/convert-im6.q16", "/usr/bin/convert", shutil.which("convert") or ""):
        if candidate and is_elf(os.path.realpath(candidate)) and "ImageMagick" in run_text([candidate, "-version"]):
            return candidate
    return None


def python_has(module):
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0


def ensure_apt(package, present, allowed):
    if present():
        return None
    if not allowed:
        return f"{package} is not installed (and installing is off)"
    log(f"installing {package} with apt-get")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for attempt in ([*sudo, "apt-get", "install", "-y", "-qq", package],
                    [*sudo, "apt-get", "update", "-qq"], [*sudo, "apt-get", "install", "-y", "-qq", package]):
        subprocess.run(attempt, env=env, capture_output=True)
        if present():
            return None
    return f"apt-get install {package} failed"


def ensure_pip(package, module, allowed):
    if python_has(module):
        return None
    if not allowed:
        return f"Python module {module} is missing (and installing is off)"
    log(f"installing {package} with pip")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", package], capture_output=True)
    return None if python_has(module) else f"pip install {package} failed"


def make_peers(args, reference_bin):
    runner = args.runner
    install = not args.no_install and not args.quick
    convert = {"path": None}

    def need_convert():
        reason = ensure_apt("imagemagick", lambda: find_convert() is not None, install)
        convert["path"] = find_convert()
        return reason

    def runner_command(outdir, listfile, workdir):
        job = {
            "version": 1,
            "name": "bench",
            "sources": [{"list": listfile}],
            "outputs": [{
                "name": "thumb",
                "path": os.path.join(outdir, "{stem}.jpg"),
                "chain": [{"op": "thumbnail", "width": 256, "height": 256, "fit": "inside"}],
                "format": {"type": "jpeg", "quality": 80},
            }],
            "concurrency": {"process": args.workers},
            "state": os.path.join(workdir, "state.sqlite"),  # fresh each run: workdir is emptied
        }
        path = os.path.join(workdir, "job.json")
        with open(path, "w") as handle:
            json.dump(job, handle, indent=2)
        return [runner, path, "--quiet"]

    def vipsthumbnail(per_process):
        return lambda outdir, listfile, workdir: [
            "xargs", "-d", "\\n", "-a", listfile, "-P", str(args.workers), "-n", str(per_process),
            "vipsthumbnail", "-s", "256x256", "-o", os.path.join(outdir, "%s.jpg[Q=80,strip]")]

    def imagemagick(size_hint):
        define = "-define jpeg:size=512x512 " if size_hint else ""
        def command(outdir, listfile, workdir):
            script = (f'exec {shlex.quote(convert["path"])} {define}"$1" -thumbnail 256x256 -quality 80 -strip '
                      f'"$0/$(basename "${{1%.*}}").jpg"')
            return ["xargs", "-d", "\\n", "-a", listfile, "-P", str(args.workers), "-n", "1",
                    "sh", "-c", script, outdir]
        return command

    python = sys.executable
    workers = args.workers
    peers = [
        Peer("c2", f"C reference, {workers} threads",
             lambda o, l, w: [reference_bin, str(workers), o, l], quick=True),
        Peer("c4", f"C reference, {2 * workers} threads",
             lambda o, l, w: [reference_bin, str(2 * workers), o, l]),
        Peer("runner", f"runner, {workers} worker processes", runner_command,
             check=lambda: None if os.access(runner, os.X_OK) else f"no runner binary at {runner}", quick=True),
        Peer("vt1", f"vipsthumbnail, xargs -P {workers}, 1 file/process", vipsthumbnail(1),
             check=lambda: None if shutil.which("vipsthumbnail") else "vipsthumbnail is missing",
             env={"VIPS_CONCURRENCY": "1"}),
        Peer("vt50", f"vipsthumbnail, xargs -P {workers}, 50 files/process", vipsthumbnail(50),
             check=lambda: None if shutil.which("vipsthumbnail") else "vipsthumbnail is missing",
             env={"VIPS_CONCURRENCY": "1"}),
        Peer("im", f"ImageMagick convert -thumbnail, xargs -P {workers}", imagemagick(False),
             check=need_convert, env={"MAGICK_THREAD_LIMIT": "1"}),
        Peer("imsize", f"ImageMagick convert -define jpeg:size=512x512 -thumbnail, xargs -P {workers}",
             imagemagick(True), check=need_convert, env={"MAGICK_THREAD_LIMIT": "1"}),
        Peer("pillow", f"Pillow draft+thumbnail, pool of {workers} processes",
             lambda o, l, w: [python, os.path.join(BENCH, "peers", "pillow_thumbs.py"), str(workers), o, l],
             check=lambda: ensure_pip("pillow", "PIL", install)),
        Peer("pyvips-t", f"pyvips, {workers} threads",
             lambda o, l, w: [python, os.path.join(BENCH, "peers", "pyvips_thumbs.py"), "threads", str(workers), o, l],
             check=lambda: ensure_pip("pyvips", "pyvips", install)),
        Peer("pyvips-p", f"pyvips, pool of {workers} processes",
             lambda o, l, w: [python, os.path.join(BENCH, "peers", "pyvips_thumbs.py"), "processes", str(workers), o, l],
             check=lambda: ensure_pip("pyvips", "pyvips", install)),
    ]
    if args.peers:
        wanted = args.peers.split(",")
        unknown = set(wanted) - {p.key for p in peers}
        if unknown:
            sys.exit(f"bench: unknown peers {', '.join(sorted(unknown))} (have {', '.join(p.key for p in peers)})")
        peers = [p for p in peers if p.key in wanted]
    elif args.quick:
        peers = [p for p in peers if p.quick]
    return peers


# --- quality --------------------------------------------------------------------------------------

def read_ppm(path):
    """(width, height, bands, bytes) of a binary PGM/PPM with maxval 255."""
    with open(path, "rb") as handle:
        data = handle.read()
    fields, position = [], 0
    while len(fields) < 4:
        while data[position:position + 1].isspace():
            position += 1
        if data[position:position + 1] == b"#":
            position = data.index(b"\n", position)
            continue
        end = position
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[position:end])
        position = end
    magic, width, height, maxval = fields[0], int(fields[1]), int(fields[2]), int(fields[3])
    if magic not in (b"P5", b"P6") or maxval != 255:
        raise ValueError(f"{path}: unsupported PNM {magic!r} maxval {maxval}")
    bands = 3 if magic == b"P6" else 1
    return width, height, bands, data[position + 1:position + 1 + width * height * bands]


class Quality:
    """Mean absolute difference of thumbnails against full-decode lanczos3 references (vips CLI)."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.references = {}
        os.makedirs(workdir, exist_ok=True)

    def reference(self, source, width, height):
        key = (source, width, height)
        if key not in self.references:
            source_width = int(run_text(["vipsheader", "-f", "width", source]))
            source_height = int(run_text(["vipsheader", "-f", "height", source]))
            path = os.path.join(self.workdir, f"ref{len(self.references)}.ppm")
            subprocess.run(["vips", "resize", source, path, repr(width / source_width),
                            "--vscale", repr(height / source_height), "--kernel", "lanczos3", "--gap", "0"],
                           check=True, capture_output=True)
            self.references[key] = read_ppm(path)
        return self.references[key]

    def mad(self, source, thumbnail):
        path = os.path.join(self.workdir, "thumb.ppm")
        subprocess.run(["vips", "colourspace", thumbnail, path, "srgb"], check=True, capture_output=True)
        width, height, bands, pixels = read_ppm(path)
        ref_width, ref_height, ref_bands, ref_pixels = self.reference(source, width, height)
        if (ref_width, ref_height, ref_bands) != (width, height, bands):
            raise ValueError(f"reference is {ref_width}x{ref_height}x{ref_bands}, thumbnail {width}x{height}x{bands}")
        return sum(map(abs, map(int.__sub__, pixels, ref_pixels))) / len(pixels)


# --- the run --------------------------------------------------------------------------------------

def corpus_files(name):
    folder = os.path.join(CORPUS, name)
    if not os.path.isdir(folder):
        return []
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".jpg") and ".part." not in f)


def warm(files):
    for path in files:
        with open(path, "rb") as handle:
            while handle.read(1 << 20):
                pass


def count_outputs(outdir):
    return sum(1 for f in os.listdir(outdir) if f.endswith(".jpg") and os.path.getsize(os.path.join(outdir, f)) > 0)


def startup_probe(peers, source, workdir, repeats, interval):
    """Wall time of each peer on a single image: its fixed cost (start-up, spawn, tear-down)."""
    os.makedirs(workdir, exist_ok=True)
    listfile = os.path.join(workdir, "one.txt")
    with open(listfile, "w") as handle:
        handle.write(source + "\n")
    result = {}
    for peer in peers:
        walls = []
        for _ in range(repeats):
            run_dir = os.path.join(workdir, "probe-" + peer.key)
            shutil.rmtree(run_dir, ignore_errors=True)
            outdir = os.path.join(run_dir, "out")
            os.makedirs(outdir)
            argv = peer.command(outdir, listfile, run_dir)
            walls.append(measure(argv, env=dict(os.environ, **peer.env), sample_interval=interval)["wall"])
        result[peer.key] = statistics.median(walls)
    return result


def bench_set(name, files, peers, args, settler):
    os.makedirs(os.path.join(CACHE, "runs"), exist_ok=True)
    if args.quick:  # the test suite runs this: a folder of its own, so runs cannot collide
        workdir = tempfile.mkdtemp(prefix=f"{name}-", dir=os.path.join(CACHE, "runs"))
    else:
        workdir = os.path.join(CACHE, "runs", name)
        shutil.rmtree(workdir, ignore_errors=True)
        os.makedirs(workdir)
    listfile = os.path.join(workdir, "files.txt")
    with open(listfile, "w") as handle:
        handle.writelines(f + "\n" for f in files)
    warm(files)
    results = {p.key: [] for p in peers}
    for round_index in range(args.rounds):
        for peer in peers:
            run_dir = os.path.join(workdir, peer.key)
            shutil.rmtree(run_dir, ignore_errors=True)  # fresh output folder and state every run
            outdir = os.path.join(run_dir, "out")
            os.makedirs(outdir)
            argv = peer.command(outdir, listfile, run_dir)
            if round_index == 0:
                with open(os.path.join(run_dir, "command.txt"), "w") as handle:
                    handle.write(shlex.join(argv) + "\n")
            settler.wait()
            run = measure(argv, env=dict(os.environ, **peer.env),
                          stderr_path=os.path.join(run_dir, "stderr.txt"), sample_interval=args.rss_interval)
            run["outputs"] = count_outputs(outdir)
            results[peer.key].append(run)
            log(f"{name} round {round_index + 1}/{args.rounds} {peer.key:9} {run['wall']:7.2f}s "
                f"{len(files) / run['wall']:7.1f} img/s  cpu {run['cpu']:6.1f}s  other load {run['other']:4.2f}  exit {run['code']}  "
                f"{run['outputs']}/{len(files)} outputs")
    quality = {}
    if args.samples > 0:
        step = max(1, len(files) // args.samples)
        sample = files[::step][:args.samples]
        checker = Quality(os.path.join(workdir, "quality"))
        for peer in peers:
            outdir = os.path.join(workdir, peer.key, "out")
            scores = []
            for source in sample:
                thumbnail = os.path.join(outdir, os.path.splitext(os.path.basename(source))[0] + ".jpg")
                if os.path.exists(thumbnail):
                    try:
                        scores.append(checker.mad(source, thumbnail))
                    except (ValueError, subprocess.CalledProcessError) as error:
                        log(f"quality {peer.key} {os.path.basename(source)}: {error}")
            quality[peer.key] = statistics.mean(scores) if scores else None
        log(f"{name}: quality measured on {len(sample)} images")
    if args.quick and not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    elif not args.keep:
        for peer in peers:  # the thumbnails are no longer needed; keep commands and stderr
            shutil.rmtree(os.path.join(workdir, peer.key, "out"), ignore_errors=True)
    return results, quality


def undisturbed(runs):
    """The runs no other work disturbed, or every run when none was spared."""
    return [r for r in runs if r["other"] <= NOISY] or runs


def summarise(name, files, peers, results, quality):
    """One row per peer. images/s, wall and CPU are medians over the undisturbed runs (all runs when
    every one was disturbed); min - max, memory and the outputs check cover every run."""
    rows = []
    base = results.get("c2")
    base_rate = statistics.median(len(files) / r["wall"] for r in undisturbed(base)) if base else None
    for peer in peers:
        runs = results[peer.key]
        used = undisturbed(runs)
        rates = [len(files) / r["wall"] for r in runs]
        ok = all(r["code"] == 0 and r["outputs"] == len(files) for r in runs)
        rate = statistics.median(len(files) / r["wall"] for r in used)
        cpu = statistics.median(r["cpu"] for r in used)
        rows.append({
            "key": peer.key, "label": peer.label, "rate": rate, "min": min(rates), "max": max(rates),
            "ratio": rate / base_rate if base_rate else None,
            "wall": statistics.median(r["wall"] for r in used),
            "cpu": cpu, "cpu_ms": 1000 * cpu / len(files),
            "rss": max(r["rss"] for r in runs), "pss": max(r["pss"] for r in runs),
            "mad": quality.get(peer.key), "ok": ok,
            "other": statistics.median(r["other"] for r in runs),
            "disturbed": sum(1 for r in runs if r["other"] > NOISY),
            "used": len(used),
            "outputs": min(r["outputs"] for r in runs), "codes": sorted({r["code"] for r in runs}),
            "runs": len(runs),
            "raw": [{k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()} for r in runs],
        })
    return rows


def table(rows, count):
    lines = ["| peer | images/s (median of runs used) | min - max | x C ref | wall s | CPU s | CPU ms/image "
             "| max RSS of one process MB | peak PSS of tree MB | quality MAD | outputs | other load | disturbed runs | runs used |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else "-"
        mad = f"{r['mad']:.2f}" if r["mad"] is not None else "-"
        outputs = f"{r['outputs']}/{count}" + ("" if r["ok"] else f" FAILED (exit {','.join(map(str, r['codes']))})")
        pss = f"{r['pss']:.0f}" if r["pss"] else "-"  # a run shorter than the sampling interval
        lines.append(f"| {r['label']} | {r['rate']:.1f} | {r['min']:.1f} - {r['max']:.1f} | {ratio} | {r['wall']:.2f} "
                     f"| {r['cpu']:.1f} | {r['cpu_ms']:.1f} | {r['rss']:.0f} | {pss} | {mad} | {outputs} "
                     f"| {r['other']:.2f} | {r['disturbed']}/{r['runs']} | {r['used']} |")
    return "\n".join(lines)


def compile_reference():
    source = os.path.join(BENCH, "reference.c")
    binary = os.path.join(CACHE, "bin", "reference")
    if os.path.exists(binary) and os.path.getmtime(binary) >= os.path.getmtime(source):
        return binary
    os.makedirs(os.path.dirname(binary), exist_ok=True)
    flags = run_text(["pkg-config", "--cflags", "--libs", "vips"])
    if not flags:
        sys.exit("bench: pkg-config knows no vips (apt-get install pkg-config libvips-dev)")
    partial = f"{binary}.{os.getpid()}"
    command = ["cc", "-O2", "-o", partial, source, *shlex.split(flags), "-lpthread"]
    log("compiling " + shlex.join(command))
    subprocess.run(command, check=True)
    os.replace(partial, binary)  # atomically: another harness may be starting it
    return binary


def runner_is_stale(runner):
    """True when some file under Sources/ or Package.swift is newer than the runner binary."""
    if not os.path.exists(runner):
        return False
    built = os.path.getmtime(runner)
    paths = [os.path.join(ROOT, "Package.swift")]
    for folder, _, names in os.walk(os.path.join(ROOT, "Sources")):
        paths.extend(os.path.join(folder, name) for name in names)
    return any(os.path.exists(p) and os.path.getmtime(p) > built for p in paths)


def default_runner():
    return os.path.join(ROOT, ".build", "release", "runner")


# --- report ---------------------------------------------------------------------------------------

def machine_info():
    model = "unknown"
    with open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as handle:
        mem_kib = int(handle.readline().split()[1])
    return {"nproc": os.cpu_count(), "cpu": model, "ram": f"{mem_kib / 1048576:.1f} GiB",
            "kernel": platform.release(), "os": run_text(["sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"])}


def versions(runner):
    def python_version(module, expression):
        return run_text([sys.executable, "-c", f"import {module}; print({expression})"]) or "not installed"
    commit = run_text(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]) or "unknown"
    dirty = run_text(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no", "--", "Sources", "Package.swift"])
    convert = find_convert()
    built = datetime.datetime.fromtimestamp(os.path.getmtime(runner)).strftime("%Y-%m-%d %H:%M") if os.path.exists(runner) else "missing"
    stale = runner_is_stale(runner)
    return {
        "libvips": run_text(["vips", "--version"]),
        "ImageMagick": run_text([convert, "-version"]).splitlines()[0] if convert else "not installed",
        "Pillow": python_version("PIL", "PIL.__version__"),
        "pyvips": python_version("pyvips", "pyvips.__version__ + ' (libvips ' + str(pyvips.version(0)) + '.' + str(pyvips.version(1)) + '.' + str(pyvips.version(2)) + ')'"),
        "Python": platform.python_version(),
        "cc": run_text(["cc", "--version"]).splitlines()[0] if shutil.which("cc") else "missing",
        "runner": f"{commit}" + (" with uncommitted changes to Sources/ or Package.swift" if dirty else "")
                  + f" ({os.path.relpath(runner, ROOT) if runner.startswith(ROOT) else runner}, built {built}"
                  + (", OLDER than the newest file in Sources/: it may not be this commit" if stale else "") + ")",
    }


def kept_section(path, heading):
    """The body of `heading` in an existing report, so a regeneration keeps what people wrote there.

    Kept: "## Where the time goes" (unless it is still the placeholder) and "## Notes"."""
    try:
        with open(path) as handle:
            text = handle.read()
    except OSError:
        return None
    start = text.find(heading + "\n")
    if start < 0:
        return None
    body = text[start + len(heading) + 1:]
    end = body.find("\n## ")
    body = (body if end < 0 else body[:end]).strip()
    return body if body and body != PLACEHOLDER else None


def analysis(summaries, probe, files_by_set):
    lines = []
    for name, rows in summaries.items():
        by_key = {r["key"]: r for r in rows}
        c2, runner = by_key.get("c2"), by_key.get("runner")
        if c2 and runner:
            count = len(files_by_set[name])
            extra_ms = 1000 * (runner["wall"] - c2["wall"]) / count
            lines.append(f"- **{name}**: runner makes {runner['rate']:.1f} images/s against the C reference's "
                         f"{c2['rate']:.1f} ({runner['ratio']:.2f}x); {runner['cpu_ms']:.1f} CPU ms per image against "
                         f"{c2['cpu_ms']:.1f}; {extra_ms:+.1f} ms of wall time per image over the reference.")
        for r in rows:
            if not r["ok"]:
                lines.append(f"- **{name}**: {r['label']} FAILED (exit {','.join(map(str, r['codes']))}, "
                             f"{r['outputs']}/{len(files_by_set[name])} outputs); its numbers mean nothing.")
        ranked = sorted((r for r in rows if r["ok"]), key=lambda r: -r["rate"])
        if ranked:
            lines.append(f"  Fastest: {ranked[0]['label']} ({ranked[0]['rate']:.1f} images/s); slowest: "
                         f"{ranked[-1]['label']} ({ranked[-1]['rate']:.1f} images/s).")
    if probe:
        parts = ", ".join(f"{key} {1000 * wall:.0f} ms" for key, wall in probe.items())
        lines.append(f"- Fixed cost (wall time for a run of a single image, median): {parts}.")
    return "\n".join(lines)


def write_report(path, args, info, vers, command, set_results, probe, skipped, elapsed, load, settle_waited):
    where = kept_section(path, "## Where the time goes") or PLACEHOLDER
    notes = kept_section(path, "## Notes")  # hand-written; kept across regenerations like the section above
    out = ["# Benchmarks", "",
           f"Made by `bench/bench.py` on {datetime.date.today().isoformat()} in {elapsed / 60:.1f} minutes. "
           "Regenerate with `make bench` (see bench/README.md). Thumbnails fit inside 256x256, JPEG quality 80, "
           "metadata stripped; every peer uses 2 workers unless its name says otherwise.", "",
           "## Machine", "",
           f"- {info['nproc']} cores: {info['cpu']}; {info['ram']} RAM; {info['os']}, kernel {info['kernel']}",
           f"- Load average before / after the run: {load[0]} / {load[1]}. The machine is shared with another "
           "engineer's builds, so runs may be noisy: compare peers within a table (their rounds are interleaved), "
           "and read min - max as the noise.", "",
           "## Versions", ""]
    out += [f"- {k}: {v}" for k, v in vers.items()]
    out += ["", "## Command", "", "```", command, "```", "",
            f"{args.rounds} interleaved rounds per set; images/s is files / wall time of the whole command "
            "(start-up included); CPU is user+sys of the process tree (wait4); \"max RSS of one process\" is the "
            "largest ru_maxrss in the tree; \"peak PSS of tree\" sums PSS over the live tree, sampled every "
            f"{args.rss_interval}s (short-lived processes can be missed); quality MAD is the mean absolute "
            f"difference (0-255) from a full-decode lanczos3 resize of the same image, over {args.samples} "
            "sampled images from the last round. \"x C ref\" is relative to the C reference at 2 threads. "
            "\"other load\" is the median over the rounds of how many cores, on average, were busy with "
            "anything but the peer and this harness while it ran (/proc/stat; steal included); a run with more "
            f"than {NOISY} is counted in \"disturbed runs\". images/s, wall and CPU are medians over the "
            "undisturbed runs (\"runs used\"; all runs when every one was disturbed, so read such a row with "
            "care); min - max covers every run."
            + (f" Before each run the harness waited up to {args.settle:g} s for other load to fall below {NOISY} "
               f"cores ({settle_waited:.0f} s waited in all)." if args.settle else ""), ""]
    for name, (files, rows, megapixels) in set_results.items():
        out += [f"## Results: {name}", "",
                f"{len(files)} files, {megapixels / len(files):.1f} megapixels on average ({SETS.get(name, '')}).", "",
                table(rows, len(files)), ""]
    if skipped:
        out += ["## Skipped peers", ""] + [f"- {label}: {reason}" for label, reason in skipped] + [""]
    out += ["## Analysis", "", analysis({n: r for n, (f, r, m) in set_results.items()}, probe,
                                        {n: f for n, (f, r, m) in set_results.items()}), "",
            "## Where the time goes", "", where, ""]
    if notes:
        out += ["## Notes", "", notes, ""]
    with open(path, "w") as handle:
        handle.write("\n".join(out))
    log(f"wrote {path}")


def megapixels(files):
    total = 0
    for chunk in range(0, len(files), 200):
        for line in run_text(["vipsheader", *files[chunk:chunk + 200]]).splitlines():
            size = line.rsplit(": ", 1)[-1].split()[0]
            if "x" in size:
                width, height = size.split("x")
                total += int(width) * int(height) / 1e6
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="quick set, 1 round, C reference + runner, no report; fails if runner fails")
    parser.add_argument("--sets", help="comma-separated sets (default: large,small; quick with --quick)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds per set (default 3; 1 with --quick)")
    parser.add_argument("--peers", help="comma-separated peer keys: c2,c4,runner,vt1,vt50,im,imsize,pillow,pyvips-t,pyvips-p")
    parser.add_argument("--runner", default=os.environ.get("BENCH_RUNNER") or default_runner(),
                        help="runner binary (default: $BENCH_RUNNER, else .build/release/runner)")
    parser.add_argument("--workers", type=int, default=2, help="threads/processes per peer (default 2)")
    parser.add_argument("--samples", type=int, help="images per set for the quality score (default 20; 3 with --quick)")
    parser.add_argument("--limit", type=int, help="use only the first N files of each set")
    parser.add_argument("--report", default=os.path.join(ROOT, "BENCHMARKS.md"),
                        help="where the full run writes its report (default BENCHMARKS.md)")
    parser.add_argument("--no-report", action="store_true", help="print the tables only")
    parser.add_argument("--no-install", action="store_true", help="never apt-get/pip install a peer's needs")
    parser.add_argument("--no-probe", action="store_true", help="skip the single-image start-up probe")
    parser.add_argument("--keep", action="store_true", help="keep the last round's thumbnails under bench/cache/runs")
    parser.add_argument("--settle", type=float, default=0,
                        help="before each run, wait up to this many seconds for other load on the machine to "
                             f"fall below {NOISY} cores (default 0: don't wait)")
    parser.add_argument("--settle-budget", type=float, default=300, help="total seconds --settle may wait (default 300)")
    parser.add_argument("--rss-interval", type=float, default=0.25, help="seconds between /proc samples (default 0.25)")
    args = parser.parse_args()
    args.runner = os.path.abspath(args.runner)
    sets = (args.sets or ("quick" if args.quick else "large,small")).split(",")
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.samples = args.samples if args.samples is not None else (3 if args.quick else 20)
    write = not (args.quick or args.no_report)

    started = time.time()
    load_before = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    if args.quick and "quick" in sets:
        # The quick set is synthetic and needs only the vips CLI: make (or verify) it here.
        subprocess.run([os.path.join(BENCH, "make-corpus.sh"), "quick"], check=True)
    if runner_is_stale(args.runner):
        log(f"warning: {args.runner} is older than Sources/ (rebuild it to measure the current code)")
    reference_bin = compile_reference()
    peers = make_peers(args, reference_bin)
    skipped, usable = [], []
    for peer in peers:
        reason = peer.check()
        if reason:
            log(f"skipping {peer.label}: {reason}")
            skipped.append((peer.label, reason))
        else:
            usable.append(peer)
    if not usable:
        sys.exit("bench: no peer can run")

    settler = Settler(args.settle, args.settle_budget)
    summaries, set_results, all_files = {}, {}, {}
    for name in sets:
        files = corpus_files(name)[:args.limit] if args.limit else corpus_files(name)
        if not files:
            sys.exit(f"bench: no files in {os.path.join(CORPUS, name)}: run bench/make-corpus.sh {name}")
        log(f"set {name}: {len(files)} files, {args.rounds} rounds, peers {', '.join(p.key for p in usable)}")
        results, quality = bench_set(name, files, usable, args, settler)
        rows = summarise(name, files, usable, results, quality)
        summaries[name] = rows
        all_files[name] = files
        set_results[name] = (files, rows, megapixels(files) if write else 0)
        print(f"\n{name}: {len(files)} files, {args.rounds} round(s)\n")
        print(table(rows, len(files)))
        print()

    probe = {}
    if not args.no_probe and not args.quick:
        keys = [p for p in usable if p.key in ("c2", "runner", "vt1", "pyvips-t")]
        source = all_files[sets[-1]][0]
        try:
            probe = startup_probe(keys, source, os.path.join(CACHE, "runs", "probe"), 5, args.rss_interval)
        except (OSError, subprocess.SubprocessError) as error:
            log(f"start-up probe failed: {error}")
        print("fixed cost (1 image, median of 5): " + ", ".join(f"{k} {1000 * v:.0f} ms" for k, v in probe.items()))
    if not args.quick:
        with open(os.path.join(CACHE, "runs", "results.json"), "w") as handle:
            json.dump({"sets": summaries, "probe": probe, "args": vars(args)}, handle, indent=1)
    for line in analysis(summaries, probe, all_files).splitlines():
        print(line)
    if skipped:
        print("skipped: " + "; ".join(f"{label}: {reason}" for label, reason in skipped))

    if write:
        command = "python3 bench/bench.py " + shlex.join(sys.argv[1:])
        write_report(args.report, args, machine_info(), versions(args.runner), command.strip(), set_results, probe,
                     skipped, time.time() - started, (load_before, ", ".join(f"{x:.2f}" for x in os.getloadavg())),
                     settler.waited)

    # Exit status: runner must have succeeded and written every output (what bench-quick checks).
    failed = [f"{name}/{r['label']}" for name, rows in summaries.items() for r in rows
              if not r["ok"] and (r["key"] == "runner" or args.quick)]
    if "runner" not in {p.key for p in usable} and any(p.key == "runner" for p in peers):
        failed.append("runner could not run")
    if failed:
        log("FAILED: " + ", ".join(failed))
        return 1
    return 0


def interrupted(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, interrupted)
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit("bench: interrupted")
