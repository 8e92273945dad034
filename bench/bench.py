#!/usr/bin/env python3
"""Benchmark harness: runner against a C reference and other thumbnailers (issue 5).

    python3 bench/bench.py                 # full: sets downloads+large+small, every peer, 3 rounds,
                                           # writes BENCHMARKS.md (run bench/make-corpus.sh first)
    python3 bench/bench.py --quick         # smoke: quick set, 1 round, C reference + runner only, and
                                           # a 20-file downloads set; exits non-zero if runner fails
                                           # or writes no outputs
    python3 bench/bench.py --sets downloads  # one set; the report keeps the other sets' last results

Every peer makes the same thumbnails: fit inside 256x256, JPEG quality 80, metadata stripped,
2 workers (threads or processes) unless its name says otherwise. For each set, peers run in
interleaved rounds (A B C ... A B C ...), each run into a fresh, empty output folder. Per run:
wall time, CPU time (user+sys of the whole process tree, from wait4), the largest single-process
peak RSS (ru_maxrss from wait4), and the peak PSS summed over the process tree (sampled from
/proc). After the rounds, a sample of each peer's thumbnails is compared with a reference made
by decoding the full image and resizing it with lanczos3 to the same size (vips resize
--kernel lanczos3 --gap 0): mean absolute difference per pixel and band, 0-255.

The downloads set (issue 5) serves the small set's first 2,000 files from nginx on 127.0.0.1 and
compares `runner run --download-only` with one `curl --parallel --parallel-max 16` process, and
runner's download-and-thumbnail run with curl followed by the C reference (see bench/README.md).

The C reference and the pyvips peers run on the libvips the runner binary loads (the reference is
compiled against it; pyvips in a venv under bench/cache/venv is built against it), pyvips-wheel on
the libvips of PyPI's pyvips-binary wheel (8.18), and runner-sys is --runner-system, runner built
on the other libvips; every label says which (bench/README.md, "Which libvips each peer runs on").

The harness itself needs only python3 (stdlib), cc, pkg-config, libvips-dev and libvips-tools.
Peers that need more (ImageMagick, Pillow, pyvips, curl, nginx) are installed with apt-get/pip in
full mode unless --no-install, and skipped with a note when that fails (without nginx, the
downloads set is served by bench/serve.py instead). --quick never installs anything.
"""
import argparse
import collections
import datetime
import filecmp
import glob
import grp
import json
import os
import platform
import pwd
import re
import resource
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import sys
import threading
import time
import urllib.parse

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
CACHE = os.path.join(BENCH, "cache")
CORPUS = os.path.join(CACHE, "corpus")
SETS = {
    "large": "~200 JPEGs of 8-20 megapixels (re-encoded Debian wallpaper photos)",
    "small": "~2,000 JPEGs of 1-2 megapixels (re-encoded Debian wallpaper photos)",
    "responsive": "every photo of the large set to five outputs: WebP quality 80 at widths 320, 640, 1280 and 1920, "
                  "and JPEG quality 82 at 1280 (with --quick: the quick set at widths 80, 160, 320, 480 and JPEG at 320)",
    "quick": "20 synthetic JPEGs of ~1.5 megapixels (smoke test)",
    "downloads": "the first 2,000 JPEGs of the small set, fetched from nginx on 127.0.0.1 (20 of the quick set with --quick)",
}
# The responsive set (issue 15): (width, format, quality) of each output, fit inside the width, never
# enlarged. Every peer makes all of them from one source; quick mode scales the widths down.
RESPONSIVE = [(320, "webp", 80), (640, "webp", 80), (1280, "webp", 80), (1920, "webp", 80), (1280, "jpeg", 82)]
QUICK_RESPONSIVE = [(80, "webp", 80), (160, "webp", 80), (320, "webp", 80), (480, "webp", 80), (320, "jpeg", 82)]
QUICK_RESPONSIVE_FILES = 4  # --quick runs the responsive set on the first 4 files of the quick set


def spec_text(spec):
    """WIDTH:FORMAT:Q, as reference.c and the Python peers take it."""
    return f"{spec[0]}:{spec[1]}:{spec[2]}"


def spec_suffix(spec):
    """What an output's file name adds to the source's stem: -WIDTH.webp or -WIDTH.jpg."""
    return f"-{spec[0]}.{'webp' if spec[1] == 'webp' else 'jpg'}"


def spec_label(spec):
    return f"{spec[0]} {spec[1]} q{spec[2]}"


def widest(specs):
    """The spec of the largest output (the first of the widest width)."""
    return max(specs, key=lambda spec: spec[0])


NOISY = 0.25  # a run during which other work kept more than this many cores busy, on average, is flagged
PLACEHOLDER = "_To be filled in: a profile of runner against the C reference (see the numbers above)._"


def split_runnable(peers, reason_not_to_run):
    """(peers that can run, [(label, why not)] for the others), logging each one skipped."""
    usable, skipped = [], []
    for peer in peers:
        reason = reason_not_to_run(peer)
        if reason:
            log(f"skipping {peer.label}: {reason}")
            skipped.append((peer.label, reason))
        else:
            usable.append(peer)
    return usable, skipped


def log(message):
    print(f"bench: {message}", file=sys.stderr, flush=True)


def run_text(argv, **kwargs):
    """Output of a small command, or '' when it cannot run."""
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=120, **kwargs)
        return (result.stdout or result.stderr).strip()
    except (OSError, subprocess.SubprocessError):
        return ""


# --- which libvips each peer runs on --------------------------------------------------------------

PYVIPS = "3.2.0"           # the pyvips peers' binding, pinned
PYVIPS_BINARY = "8.18.7"   # pyvips-binary: PyPI's prebuilt libvips, what `pip install pyvips pyvips-binary` gives
LIBVIPS_SONAME = "libvips.so.42"


def libvips_of(binary, env=None):
    """The libvips `binary` loads (ldd, with `env`'s LD_LIBRARY_PATH): {"lib": its real path, "libdir",
    "version": "8.16.1", "pkgconfig": a folder whose vips.pc builds against it, or None}. None when
    the binary loads no libvips."""
    found = re.search(rf"{re.escape(LIBVIPS_SONAME)} => (\S+)", run_text(["ldd", binary], env=env))
    if not found or not os.path.exists(found.group(1)):
        return None
    lib = os.path.realpath(found.group(1))
    # vips_version() needs no vips_init; asked in a child, so the harness never loads a libvips itself.
    version = run_text([sys.executable, "-c", "import ctypes, sys; v = ctypes.CDLL(sys.argv[1]).vips_version; "
                        "print('.'.join(str(v(i)) for i in range(3)))", lib])
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        sys.exit(f"bench: cannot read the version of {lib}: {version}")
    libdir = os.path.dirname(lib)
    return {"lib": lib, "libdir": libdir, "version": version, "pkgconfig": libvips_pkgconfig(libdir, version)}


def libvips_pkgconfig(libdir, version):
    """A pkg-config folder whose vips.pc gives `libdir`'s libvips, or None (no vips.pc of that
    version beside it). A prefix copied from elsewhere (a worktree's .build/libvips-8.16 made in
    another checkout) keeps the old prefix in its .pc files: then a copy under bench/cache/pkgconfig
    with the prefix set to where it is now."""
    folder = os.path.join(libdir, "pkgconfig")
    if not os.path.exists(os.path.join(folder, "vips.pc")):
        return None
    def ask(where, *what):
        return run_text(["pkg-config", *what, "vips"], env=dict(os.environ, PKG_CONFIG_PATH=where))
    if ask(folder, "--modversion") != version:
        return None
    if os.path.realpath(ask(folder, "--variable=libdir")) == libdir:
        return folder
    copy = os.path.join(CACHE, "pkgconfig", version)
    os.makedirs(copy, exist_ok=True)
    prefix = os.path.dirname(libdir)
    for name in os.listdir(folder):
        if name.endswith(".pc"):
            with open(os.path.join(folder, name)) as handle:
                text = re.sub(r"(?m)^prefix=.*$", f"prefix={prefix}", handle.read())
            with open(os.path.join(copy, name), "w") as handle:
                handle.write(text)
    if os.path.realpath(ask(copy, "--variable=libdir")) != libdir:
        sys.exit(f"bench: {folder}/vips.pc does not lead to {libdir}, even with prefix={prefix}")
    return copy


def libvips_env(libvips):
    """What a program built against `libvips` needs to load it: its folder first on LD_LIBRARY_PATH
    (pyvips in API mode links -lvips without a RUNPATH)."""
    return {"LD_LIBRARY_PATH": libvips["libdir"]}


class PythonEnv:
    """A venv under bench/cache/venv with pyvips on one libvips, made once (python3 -m venv; Debian's
    Python takes no pip installs of its own). `binary`: PyPI's pyvips-binary wheel, whose
    _libvips.abi3.so replaces the one pyvips' sdist built; else pyvips in API mode, compiled against
    `libvips` (PKG_CONFIG_PATH to its vips.pc) and run with LD_LIBRARY_PATH to it. `check()` makes it
    (when installing is allowed) and exits when its pyvips reports another libvips than expected."""

    def __init__(self, name, libvips, binary, install):
        self.libvips, self.binary, self.install = libvips, binary, install
        self.folder = os.path.join(CACHE, "venv", name)
        self.python = os.path.join(self.folder, "bin", "python")
        self.expected = PYVIPS_BINARY if binary else libvips["version"]
        # The wheel brings its own libvips (RUNPATH into the wheel); nothing of ours may come first.
        self.env = {"LD_LIBRARY_PATH": ""} if binary else libvips_env(libvips)
        self.reason, self.facts = None, None

    def pip(self, *argv, env=None):
        command = [self.python, "-m", "pip", "install", "--quiet", "--no-cache-dir", *argv]
        log("in " + os.path.relpath(self.folder, ROOT) + ": " + shlex.join(command[1:]))
        result = subprocess.run(command, env=dict(os.environ, **(env or {})), capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"{shlex.join(argv)} failed: {result.stderr.strip()[-400:]}")

    def create(self):
        shutil.rmtree(self.folder, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", self.folder], check=True, capture_output=True)
        # --no-cache-dir: pip would otherwise reuse an API-mode wheel it built against another libvips.
        if self.binary:
            self.pip(f"pyvips=={PYVIPS}")
            self.pip("--force-reinstall", "--no-deps", f"pyvips-binary=={PYVIPS_BINARY}")
        else:
            if not self.libvips["pkgconfig"]:
                raise RuntimeError(f"no vips.pc for {self.libvips['lib']} to compile pyvips' API mode against")
            self.pip(f"pyvips=={PYVIPS}", env={"PKG_CONFIG_PATH": self.libvips["pkgconfig"]})

    def probe(self):
        script = ("import json, pyvips; print(json.dumps({'pyvips': pyvips.__version__, 'api': pyvips.API_mode, "
                  "'libvips': '.'.join(str(pyvips.version(i)) for i in range(3))}))")
        text = run_text([self.python, "-c", script], env=dict(os.environ, **self.env))
        try:
            return json.loads(text.splitlines()[-1])
        except (ValueError, IndexError):
            return None

    def check(self):
        if self.facts or self.reason:
            return self.reason
        facts = self.probe() if os.path.exists(self.python) else None
        if facts is None or facts["pyvips"] != PYVIPS:
            if not self.install:
                self.reason = f"no {os.path.relpath(self.folder, ROOT)} with pyvips {PYVIPS} (and installing is off)"
                return self.reason
            try:
                self.create()
            except (RuntimeError, subprocess.CalledProcessError) as error:
                self.reason = f"cannot make {os.path.relpath(self.folder, ROOT)}: {error}"
                return self.reason
            facts = self.probe()
        if not facts or facts["libvips"] != self.expected or facts["pyvips"] != PYVIPS:
            sys.exit(f"bench: {self.python} has {facts}, not pyvips {PYVIPS} on libvips {self.expected}; "
                     f"remove {self.folder} to make it again")
        self.facts = facts
        return None

    def describe(self):
        if not self.facts:
            return self.reason or "not used"
        what = f"pyvips {self.facts['pyvips']}" + (f" + pyvips-binary {PYVIPS_BINARY}" if self.binary else "")
        mode = "API mode" if self.facts["api"] else "ABI mode"
        built = "the wheel's libvips" if self.binary else f"compiled against {self.libvips['lib']}"
        return f"{what}, {mode}, libvips {self.facts['libvips']} ({built}; {os.path.relpath(self.folder, ROOT)})"


# --- measuring ------------------------------------------------------------------------------------

def process_tree(root):
    """`root` and every live descendant of it, from /proc."""
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
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def tree_cpu_seconds(root):
    """User + system CPU seconds the live processes of `root`'s tree have used so far."""
    total = 0
    for pid in process_tree(root):
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2:].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / os.sysconf("SC_CLK_TCK")


class TreeSampler(threading.Thread):
    """Polls /proc for the process tree under `root` and keeps the peak of its summed PSS."""

    def __init__(self, root, interval):
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.peak_kib = 0
        self.stopping = threading.Event()

    def tree(self):
        return process_tree(self.root)

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


def measure(argv, env=None, cwd=None, stderr_path=None, sample_interval=0.25, server=None):
    """Runs argv to the end. Returns wall s, CPU s of its tree, the largest single-process RSS MiB,
    the peak PSS of the tree MiB, the exit code, and `other`: the average number of cores busy with
    anything else (other users' work, the hypervisor's steal; not this harness) while it ran.
    `server`, a function giving the CPU seconds a server the command talks to has used so far: its
    share is reported as `server` and not counted as other load."""
    stderr = open(stderr_path, "wb") if stderr_path else subprocess.DEVNULL
    try:
        server_before = server() if server else 0.0
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
        served = (server() - server_before) if server else 0.0
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
        "user": usage.ru_utime,
        "sys": usage.ru_stime,
        "rss": usage.ru_maxrss / 1024,  # KiB on Linux; the largest of the tree's processes
        "pss": sampler.peak_kib / 1024,
        "code": process.returncode,
        "other": max(0.0, (busy_after - busy_before - cpu - harness - served) / wall),
        "harness": harness,
        "server": served,
    }


# --- peers ----------------------------------------------------------------------------------------

class Peer:
    """One contender. `command(outdir, listfile, workdir)` gives argv; `check()` gives a skip reason.
    `suffixes`: what each output's name adds to its source's stem (one output per source: ".jpg").
    A peer with `default` false runs only when --peers names it."""

    def __init__(self, key, label, command, check=lambda: None, env=None, quick=False, suffixes=(".jpg",),
                 default=True):
        self.key, self.label, self.command, self.check, self.env, self.quick = key, label, command, check, env or {}, quick
        self.suffixes, self.default = tuple(suffixes), default


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


def on(libvips):
    """A label's note of the libvips a peer runs on."""
    return f" (libvips {libvips['version']})" if libvips else ""


def runner_check(runner):
    return lambda: None if os.access(runner, os.X_OK) else f"no runner binary at {runner}"


def make_peers(args, setup):
    runner, reference_bin = args.runner, setup.reference
    convert = {"path": None}
    install = not args.no_install and not args.quick

    def need_convert():
        reason = ensure_apt("imagemagick", lambda: find_convert() is not None, install)
        convert["path"] = find_convert()
        return reason

    def runner_command(processes, binary=runner):
        return lambda outdir, listfile, workdir: write_runner_job(binary, workdir, listfile,
                                                                  thumbnail_outputs(outdir), processes)

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
    workers, lv, cli = args.workers, on(setup.libvips), on(setup.cli_libvips)
    peers = [
        Peer("c2", f"C reference, {workers} threads{lv}",
             lambda o, l, w: [reference_bin, str(workers), o, l], quick=True),
        Peer("c4", f"C reference, {2 * workers} threads{lv}",
             lambda o, l, w: [reference_bin, str(2 * workers), o, l]),
        Peer("runner", f"runner, {workers} worker processes{lv}", runner_command(workers),
             check=runner_check(runner), quick=True),
        # More worker processes than cores (issue 15, section 3): only when --peers names them.
        *[Peer(f"runner-p{n}", f"runner, {n} worker processes{lv}", runner_command(n), default=False,
               check=runner_check(runner))
          for n in (workers + 1, 2 * workers)],
        # The same runner built on the other libvips (--runner-system): only when given.
        *([Peer("runner-sys", f"runner, {workers} worker processes{on(setup.system_libvips)}",
                runner_command(workers, args.runner_system), check=runner_check(args.runner_system))]
          if args.runner_system else []),
        Peer("vt1", f"vipsthumbnail, xargs -P {workers}, 1 file/process{cli}", vipsthumbnail(1),
             check=lambda: None if shutil.which("vipsthumbnail") else "vipsthumbnail is missing",
             env={"VIPS_CONCURRENCY": "1"}),
        Peer("vt50", f"vipsthumbnail, xargs -P {workers}, 50 files/process{cli}", vipsthumbnail(50),
             check=lambda: None if shutil.which("vipsthumbnail") else "vipsthumbnail is missing",
             env={"VIPS_CONCURRENCY": "1"}),
        Peer("im", f"ImageMagick convert -thumbnail, xargs -P {workers}", imagemagick(False),
             check=need_convert, env={"MAGICK_THREAD_LIMIT": "1"}),
        Peer("imsize", f"ImageMagick convert -define jpeg:size=512x512 -thumbnail, xargs -P {workers}",
             imagemagick(True), check=need_convert, env={"MAGICK_THREAD_LIMIT": "1"}),
        Peer("pillow", f"Pillow draft+thumbnail, pool of {workers} processes",
             lambda o, l, w: [python, os.path.join(BENCH, "peers", "pillow_thumbs.py"), str(workers), o, l],
             check=lambda: ensure_pip("pillow", "PIL", install)),
        *pyvips_peers(setup, workers, []),
    ]
    return select_peers(peers, args)


def select_peers(peers, args):
    """The peers --peers names (keys another set has are left to it), the quick ones with --quick,
    else the default ones; every one with args.everyone (to check --peers)."""
    if getattr(args, "everyone", False):
        return peers
    if args.peers:
        return [p for p in peers if p.key in args.peers.split(",")]
    return [p for p in peers if (p.quick if args.quick else p.default)]


def write_runner_job(runner, workdir, listfile, outputs, processes):
    """argv of runner over a fresh job file in `workdir`: `listfile`'s sources, these outputs."""
    job = {
        "version": 1,
        "name": "bench",
        "sources": [{"list": listfile}],
        "outputs": outputs,
        "concurrency": {"process": processes},
        "state": os.path.join(workdir, "state.sqlite"),  # fresh each run: workdir is emptied
    }
    path = os.path.join(workdir, "job.json")
    with open(path, "w") as handle:
        json.dump(job, handle, indent=2)
    return [runner, path, "--quiet"]


def thumbnail_outputs(outdir):
    """runner's output of the large and small sets: fit inside 256x256, JPEG quality 80."""
    return [{"name": "thumb", "path": os.path.join(outdir, "{stem}.jpg"),
             "chain": [{"op": "thumbnail", "width": 256, "height": 256, "fit": "inside"}],
             "format": {"type": "jpeg", "quality": 80}}]


def responsive_outputs(outdir, specs, effort=None):
    """runner's outputs of the responsive set, one per spec. `effort`: the WebP effort of every WebP
    output narrower than the widest (docs/JOB-FILE.md's tuning table), else libvips' default (4)."""
    largest = widest(specs)
    return [{
        "name": f"w{spec[0]}-{spec[1]}",
        "path": os.path.join(outdir, "{stem}" + spec_suffix(spec)),
        "chain": [{"op": "thumbnail", "width": spec[0], "fit": "inside"}],
        "format": {"type": spec[1], "quality": spec[2],
                   **({"effort": effort} if effort is not None and spec[1] == "webp" and spec != largest else {})},
    } for spec in specs]


def pyvips_peers(setup, workers, specs):
    """pyvips on runner's libvips (pyvips-t, pyvips-p), and on the pyvips-binary wheel's
    (pyvips-wheel): bench/peers/pyvips_thumbs.py in the venv of each (PythonEnv)."""
    script = os.path.join(BENCH, "peers", "pyvips_thumbs.py")
    texts = [spec_text(spec) for spec in specs]
    once = ", decode once" if specs else ""
    def peer(key, venv, mode, label, default=True):
        return Peer(key, label, lambda o, l, w: [venv.python, script, mode, str(workers), o, l, *texts],
                    check=venv.check, env=venv.env, default=default,
                    suffixes=[spec_suffix(spec) for spec in specs] or (".jpg",))
    same = on(setup.libvips)
    wheel = f" (libvips {PYVIPS_BINARY}, pyvips-binary wheel)"
    return [peer("pyvips-t", setup.pyvips, "threads", f"pyvips{once}, {workers} threads{same}", default=not texts),
            peer("pyvips-p", setup.pyvips, "processes", f"pyvips{once}, pool of {workers} processes{same}"),
            peer("pyvips-wheel", setup.wheel, "processes", f"pyvips{once}, pool of {workers} processes{wheel}")]


def make_responsive_peers(args, setup, specs):
    """The responsive set's peers: every output of `specs` from each source. Those marked "decode
    once" decode at the widest output and derive the narrower ones from that decode."""
    runner, python, workers, reference_bin = args.runner, sys.executable, args.workers, setup.reference
    lv = on(setup.libvips)
    install = not args.no_install and not args.quick
    largest = widest(specs)
    texts = [spec_text(spec) for spec in specs]
    suffixes = [spec_suffix(spec) for spec in specs]
    runner_ok = runner_check(runner)

    def vipsthumbnail(outdir, listfile, workdir):
        # One xargs per output, one after the other: each vipsthumbnail decodes every source again.
        # "WIDTHx>": fit the width, any height, never enlarge.
        script = " && ".join(
            f"xargs -d '\\n' -a \"$0\" -P {workers} -n 50 vipsthumbnail -s '{w}x>' "
            f"-o \"$1/%s{spec_suffix((w, kind, q))}[Q={q},strip]\"" for w, kind, q in specs)
        return ["sh", "-c", script, listfile, outdir]

    peers = [
        Peer("c2", f"C reference, {workers} threads, decode once{lv}", quick=True, suffixes=suffixes,
             command=lambda o, l, w: [reference_bin, str(workers), o, l, *texts]),
        Peer("c4", f"C reference, {2 * workers} threads, decode once{lv}", suffixes=suffixes, default=False,
             command=lambda o, l, w: [reference_bin, str(2 * workers), o, l, *texts]),
        Peer("c2-widest", f"C reference, {workers} threads, {spec_label(largest)} only{lv}",
             suffixes=[spec_suffix(largest)],
             command=lambda o, l, w: [reference_bin, str(workers), o, l, spec_text(largest)]),
        Peer("runner", f"runner, {workers} worker processes, one job with {len(specs)} outputs{lv}", quick=True,
             suffixes=suffixes, check=runner_ok,
             command=lambda o, l, w: write_runner_job(runner, w, l, responsive_outputs(o, specs), workers)),
        Peer("runner-widest", f"runner, {workers} worker processes, {spec_label(largest)} only{lv}", quick=True,
             suffixes=[spec_suffix(largest)], check=runner_ok,
             command=lambda o, l, w: write_runner_job(runner, w, l, responsive_outputs(o, [largest]), workers)),
        # What a lower WebP effort on the narrower outputs buys (docs/JOB-FILE.md, "Tuning"): only when named.
        *[Peer(f"runner-e{effort}", f"runner, {workers} worker processes, the narrower WebPs at effort {effort}{lv}",
               suffixes=suffixes, check=runner_ok, default=False,
               command=lambda o, l, w, effort=effort: write_runner_job(runner, w, l, responsive_outputs(o, specs, effort),
                                                                       workers))
          for effort in (2, 0)],
        *([Peer("runner-sys", f"runner, {workers} worker processes, one job with {len(specs)} outputs"
                f"{on(setup.system_libvips)}", suffixes=suffixes, check=runner_check(args.runner_system),
                command=lambda o, l, w: write_runner_job(args.runner_system, w, l, responsive_outputs(o, specs), workers))]
          if args.runner_system else []),
        Peer("vt50", f"vipsthumbnail once per output, xargs -P {workers}, 50 files/process{on(setup.cli_libvips)}",
             suffixes=suffixes,
             command=vipsthumbnail, env={"VIPS_CONCURRENCY": "1"},
             check=lambda: None if shutil.which("vipsthumbnail") else "vipsthumbnail is missing"),
        Peer("pillow", f"Pillow, decode once (draft), pool of {workers} processes", suffixes=suffixes,
             command=lambda o, l, w: [python, os.path.join(BENCH, "peers", "pillow_thumbs.py"), str(workers), o, l, *texts],
             check=lambda: ensure_pip("pillow", "PIL", install)),
        *pyvips_peers(setup, workers, specs),
    ]
    return select_peers(peers, args)


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


def count_outputs(outdir, files=None, suffixes=(".jpg",)):
    """Non-empty outputs in `outdir`: every .jpg, or with `files`, each source's stem + each suffix."""
    if files is None:
        return sum(1 for f in os.listdir(outdir) if f.endswith(".jpg") and os.path.getsize(os.path.join(outdir, f)) > 0)
    present = {f for f in os.listdir(outdir) if os.path.getsize(os.path.join(outdir, f)) > 0}
    return sum(1 for source in files for suffix in suffixes
               if os.path.splitext(os.path.basename(source))[0] + suffix in present)


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
            run["outputs"] = count_outputs(outdir, files, peer.suffixes)
            run["expected"] = len(files) * len(peer.suffixes)
            results[peer.key].append(run)
            log(f"{name} round {round_index + 1}/{args.rounds} {peer.key:12} {run['wall']:7.2f}s "
                f"{len(files) / run['wall']:7.1f} img/s  cpu {run['cpu']:6.1f}s  other load {run['other']:4.2f}  exit {run['code']}  "
                f"{run['outputs']}/{run['expected']} outputs")
    # Quality: one score per peer, or per output (suffix) for peers that make several, then over half
    # as many images (a 1920-wide comparison takes a while in pure Python).
    quality = {}
    samples = args.samples if all(p.suffixes == (".jpg",) for p in peers) else min(args.samples, max(1, len(files) // 20))
    if samples > 0:
        step = max(1, len(files) // samples)
        sample = files[::step][:samples]
        checker = Quality(os.path.join(workdir, "quality"))
        for peer in peers:
            if args.quick and len(peer.suffixes) > 1 and peer.key != "runner":
                continue  # --quick: runner's outputs show the check works; seconds count
            outdir = os.path.join(workdir, peer.key, "out")
            by_suffix = {}
            for suffix in peer.suffixes:
                scores = []
                for source in sample:
                    thumbnail = os.path.join(outdir, os.path.splitext(os.path.basename(source))[0] + suffix)
                    if os.path.exists(thumbnail):
                        try:
                            scores.append(checker.mad(source, thumbnail))
                        except (ValueError, subprocess.CalledProcessError) as error:
                            log(f"quality {peer.key} {os.path.basename(thumbnail)}: {error}")
                by_suffix[suffix] = statistics.mean(scores) if scores else None
            quality[peer.key] = by_suffix[".jpg"] if peer.suffixes == (".jpg",) else by_suffix
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
        expected = runs[0].get("expected", len(files))
        ok = all(r["code"] == 0 and r["outputs"] == expected for r in runs)
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
            "outputs": min(r["outputs"] for r in runs), "expected": expected, "codes": sorted({r["code"] for r in runs}),
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
        outputs = f"{r['outputs']}/{r.get('expected', count)}" + ("" if r["ok"] else f" FAILED (exit {','.join(map(str, r['codes']))})")
        pss = f"{r['pss']:.0f}" if r["pss"] else "-"  # a run shorter than the sampling interval
        lines.append(f"| {r['label']} | {r['rate']:.1f} | {r['min']:.1f} - {r['max']:.1f} | {ratio} | {r['wall']:.2f} "
                     f"| {r['cpu']:.1f} | {r['cpu_ms']:.1f} | {r['rss']:.0f} | {pss} | {mad} | {outputs} "
                     f"| {r['other']:.2f} | {r['disturbed']}/{r['runs']} | {r['used']} |")
    return "\n".join(lines)


def responsive_table(rows, count):
    """The responsive set's table: a quality score per output, and outputs out of sources x outputs."""
    suffixes = []
    for r in rows:
        for suffix in (r["mad"] or {}) if isinstance(r["mad"], dict) else []:
            if suffix not in suffixes:
                suffixes.append(suffix)
    specs = sorted(suffixes, key=lambda x: (x.endswith(".jpg"), int(x[1:].split(".")[0])))
    names = [f"MAD {x[1:].split('.')[0]} {'webp' if x.endswith('.webp') else 'jpeg'}" for x in specs]
    lines = ["| peer | images/s (median of runs used) | min - max | x C ref | wall s | CPU s | CPU ms/image "
             "| max RSS of one process MB | peak PSS of tree MB | " + " | ".join(names) + " | outputs | other load "
             "| disturbed runs | runs used |",
             "|---|" + "---:|" * (13 + len(names))]
    for r in rows:
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else "-"
        mads = r["mad"] if isinstance(r["mad"], dict) else {}
        cells = " | ".join(f"{mads[x]:.2f}" if mads.get(x) is not None else "-" for x in specs)
        outputs = f"{r['outputs']}/{r.get('expected', count)}" + ("" if r["ok"] else f" FAILED (exit {','.join(map(str, r['codes']))})")
        pss = f"{r['pss']:.0f}" if r["pss"] else "-"
        lines.append(f"| {r['label']} | {r['rate']:.1f} | {r['min']:.1f} - {r['max']:.1f} | {ratio} | {r['wall']:.2f} "
                     f"| {r['cpu']:.1f} | {r['cpu_ms']:.1f} | {r['rss']:.0f} | {pss} | {cells} | {outputs} "
                     f"| {r['other']:.2f} | {r['disturbed']}/{r['runs']} | {r['used']} |")
    return "\n".join(lines)


def whole_over_widest(rows, whole_key, widest_key):
    """(median, min, max) over the rounds of whole_key's wall / widest_key's wall in the same round,
    and the same for CPU; None when either is missing."""
    by_key = {r["key"]: r for r in rows}
    if whole_key not in by_key or widest_key not in by_key:
        return None
    pairs = list(zip(by_key[whole_key]["raw"], by_key[widest_key]["raw"]))
    walls = [a["wall"] / b["wall"] for a, b in pairs]
    cpus = [a["cpu"] / b["cpu"] for a, b in pairs if b["cpu"] > 0]
    return {"wall": statistics.median(walls), "min": min(walls), "max": max(walls),
            "cpu": statistics.median(cpus) if cpus else None, "rounds": len(pairs)}


def compile_reference(libvips):
    """bench/cache/bin/reference-VERSION: reference.c built against `libvips` (the one runner loads),
    through its vips.pc and with a RUNPATH to its folder; Debian's pkg-config `vips` when `libvips` has
    no vips.pc (then it must be that one). Exits when the binary would load another libvips."""
    source = os.path.join(BENCH, "reference.c")
    binary = os.path.join(CACHE, "bin", f"reference-{libvips['version']}")
    def loads_it():
        found = libvips_of(binary)
        return found is not None and found["lib"] == libvips["lib"]
    if os.path.exists(binary) and os.path.getmtime(binary) >= os.path.getmtime(source) and loads_it():
        return binary
    os.makedirs(os.path.dirname(binary), exist_ok=True)
    env = dict(os.environ, PKG_CONFIG_PATH=libvips["pkgconfig"]) if libvips["pkgconfig"] else None
    flags = run_text(["pkg-config", "--cflags", "--libs", "vips"], env=env)
    if not flags or "-lvips" not in flags:
        sys.exit(f"bench: pkg-config knows no vips for {libvips['lib']} (apt-get install pkg-config libvips-dev)")
    partial = f"{binary}.{os.getpid()}"
    command = ["cc", "-O2", "-o", partial, source, *shlex.split(flags), f"-Wl,-rpath,{libvips['libdir']}", "-lpthread"]
    log("compiling " + shlex.join(command))
    subprocess.run(command, check=True)
    os.replace(partial, binary)  # atomically: another harness may be starting it
    if not loads_it():
        sys.exit(f"bench: {binary} loads {libvips_of(binary)}, not {libvips['lib']}")
    return binary


def runner_is_stale(runner):
    """True when some file under Sources/ or Package.swift of its checkout is newer than the runner binary."""
    if not os.path.exists(runner):
        return False
    built, root = os.path.getmtime(runner), checkout_of(runner)
    paths = [os.path.join(root, "Package.swift")]
    for folder, _, names in os.walk(os.path.join(root, "Sources")):
        paths.extend(os.path.join(folder, name) for name in names)
    return any(os.path.exists(p) and os.path.getmtime(p) > built for p in paths)


def default_runner():
    return os.path.join(ROOT, ".build", "release", "runner")


# --- downloads ----------------------------------------------------------------------------------

DOWNLOADS_PARALLEL = 16  # curl --parallel-max, runner's concurrency.download and concurrency.perHost


def find_nginx():
    for candidate in (shutil.which("nginx"), "/usr/sbin/nginx"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class StaticServer:
    """Serves the files of `root` on 127.0.0.1 over HTTP/1.1 keep-alive, so the clients are what is
    measured: nginx with a generated minimal config (its own pid, log and temp paths in `workdir`,
    run as the current user, no root needed) when nginx is installed, else bench/serve.py (Python's
    ThreadingHTTPServer, slower). `cpu_seconds()` is what the server has used so far."""

    def __init__(self, root, workdir, allow_nginx=True):
        self.root, self.workdir, self.allow_nginx = root, workdir, allow_nginx
        self.process, self.port, self.description, self.fallback_reason = None, None, "", None

    def start(self):
        nginx = find_nginx() if self.allow_nginx else None
        if nginx:
            try:
                self.start_nginx(nginx)
                return self
            except (OSError, RuntimeError) as error:
                self.fallback_reason = f"nginx did not start ({error})"
                log(f"{self.fallback_reason}; serving with Python instead")
                self.stop()
        else:
            self.fallback_reason = "nginx is not installed" if self.allow_nginx else "nginx not allowed"
        self.start_python()
        return self

    def start_nginx(self, nginx):
        folder = os.path.join(self.workdir, "nginx")
        os.makedirs(folder, exist_ok=True)
        user = ""
        if os.geteuid() == 0:  # workers would switch to nobody, who may not read the corpus
            info = os.stat(self.root)
            user = f"user {pwd.getpwuid(info.st_uid).pw_name} {grp.getgrgid(info.st_gid).gr_name};"
        for attempt in range(3):
            self.port = free_port()
            config = os.path.join(folder, "nginx.conf")
            with open(config, "w") as handle:
                handle.write(f"""# Generated by bench/bench.py for the downloads benchmark.
daemon off;
master_process on;
worker_processes 2;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
{user}
events {{ worker_connections 1024; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 60s;
    keepalive_requests 100000;
    open_file_cache max=10000 inactive=60s;
    client_body_temp_path {folder}/client_body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    types {{ image/jpeg jpg jpeg; }}
    default_type application/octet-stream;
    server {{
        listen 127.0.0.1:{self.port};
        root {self.root};
    }}
}}
""")
            log_path = os.path.join(folder, "error.log")
            self.process = subprocess.Popen([nginx, "-p", folder, "-c", config, "-e", log_path],
                                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            stderr=open(os.path.join(folder, "stderr.txt"), "wb"), process_group=0)
            if self.wait_ready():
                version = run_text([nginx, "-v"]).replace("nginx version: ", "")
                self.description = (f"{version} on 127.0.0.1 (generated config: 2 worker processes, sendfile, "
                                    "keep-alive up to 100,000 requests per connection, open_file_cache, no access log)")
                return
            self.stop()
            try:
                with open(log_path) as handle:
                    detail = handle.read().strip().splitlines()[-1:]
            except OSError:
                detail = []
            if attempt == 2:
                raise RuntimeError("; ".join(detail) or "it exited")

    def start_python(self):
        self.process = subprocess.Popen([sys.executable, os.path.join(BENCH, "serve.py"), self.root],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        process_group=0)
        self.port = int(self.process.stdout.readline())
        if not self.wait_ready():
            raise RuntimeError("bench/serve.py did not start")
        self.description = (f"Python {platform.python_version()} ThreadingHTTPServer (bench/serve.py) on 127.0.0.1, "
                            f"because {self.fallback_reason}: it may be slower than the clients")

    def wait_ready(self, seconds=5.0):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return True
            except OSError:
                time.sleep(0.05)
        return False

    def url(self, name):
        return f"http://127.0.0.1:{self.port}/{urllib.parse.quote(name)}"

    def cpu_seconds(self):
        return tree_cpu_seconds(self.process.pid) if self.process else 0.0

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()  # nginx: fast shutdown of master and workers
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None


class DownloadPeer:
    """A contender of the downloads set. `command(run_dir)` gives argv; `check(run_dir)` counts the
    files it got right; `group` is "fetch" (download only) or "thumbs" (download + thumbnail)."""

    def __init__(self, key, label, group, command, check, available=lambda: None):
        self.key, self.label, self.group = key, label, group
        self.command, self.check, self.available = command, check, available


def make_download_peers(args, reference_bin, server, files):
    names = [os.path.basename(f) for f in files]
    sizes = {os.path.basename(f): os.path.getsize(f) for f in files}
    workers = args.workers
    install = not args.no_install and not args.quick

    def curl_config(run_dir, folder):
        """A curl config naming each URL and the file it goes to; curl writes nothing else."""
        path = os.path.join(run_dir, "curl.cfg")
        with open(path, "w") as handle:
            for name in names:
                handle.write(f'url = "{server.url(name)}"\noutput = "{os.path.join(folder, name)}"\n')
        return path

    def curl_argv(config):
        # --no-progress-meter: curl 7.88 draws its --parallel meter even with --silent
        return ["curl", "--silent", "--show-error", "--no-progress-meter", "--fail", "--parallel",
                "--parallel-max", str(DOWNLOADS_PARALLEL), "-K", config]

    def runner_job(run_dir, download_only):
        with open(os.path.join(run_dir, "urls.txt"), "w") as handle:
            handle.writelines(server.url(name) + "\n" for name in names)
        job = {
            "version": 1,
            "name": "bench-downloads",
            "sources": [{"list": "urls.txt"}],
            "outputs": [{
                "name": "thumb",
                "path": "out/{stem}.jpg",
                "chain": [{"op": "thumbnail", "width": 256, "height": 256, "fit": "inside"}],
                "format": {"type": "jpeg", "quality": 80},
            }],
            "concurrency": {"process": workers, "download": DOWNLOADS_PARALLEL, "perHost": DOWNLOADS_PARALLEL},
            "state": "state.sqlite",  # fresh each run, like the originals cache
            "cache": "cache",
        }
        path = os.path.join(run_dir, "job.json")
        with open(path, "w") as handle:
            json.dump(job, handle, indent=2)
        return [args.runner, "run", path, "--quiet"] + (["--download-only"] if download_only else [])

    def copies(folder):
        """Files in `folder` with the size of their source; every 50th is compared byte for byte."""
        good = 0
        for index, name in enumerate(names):
            path = os.path.join(folder, name)
            if os.path.exists(path) and os.path.getsize(path) == sizes[name]:
                if index % 50 == 0 and not filecmp.cmp(path, files[index], shallow=False):
                    continue
                good += 1
        return good

    def cached(folder):
        """Originals in runner's cache (named by key hash): as many as their sizes match the sources'.
        A temporary file left behind counts against it."""
        if not os.path.isdir(folder):
            return 0
        entries = os.listdir(folder)
        if any(e.startswith(".") for e in entries):
            return 0
        found = collections.Counter(os.path.getsize(os.path.join(folder, e)) for e in entries)
        return sum((found & collections.Counter(sizes.values())).values())

    def need_curl():
        return ensure_apt("curl", lambda: shutil.which("curl") is not None, install)

    def curl_fetch(run_dir):
        folder = os.path.join(run_dir, "files")
        os.makedirs(folder, exist_ok=True)
        return curl_argv(curl_config(run_dir, folder))

    def curl_then_sync(run_dir):
        folder = os.path.join(run_dir, "files")
        os.makedirs(folder, exist_ok=True)
        return ["sh", "-c", 'curl "$@" && exec sync -f "$0"', folder, *curl_argv(curl_config(run_dir, folder))[1:]]

    def curl_then_reference(run_dir):
        folder, out = os.path.join(run_dir, "files"), os.path.join(run_dir, "out")
        os.makedirs(folder, exist_ok=True)
        os.makedirs(out, exist_ok=True)
        listfile = os.path.join(run_dir, "files.txt")
        with open(listfile, "w") as handle:
            handle.writelines(os.path.join(folder, name) + "\n" for name in names)
        return ["sh", "-c", 'curl "$@" && exec "$0" ' + f"{workers} {shlex.quote(out)} {shlex.quote(listfile)}",
                reference_bin, *curl_argv(curl_config(run_dir, folder))[1:]]

    def runner_ok():
        return None if os.access(args.runner, os.X_OK) else f"no runner binary at {args.runner}"

    return [
        DownloadPeer("curl", f"curl --parallel --parallel-max {DOWNLOADS_PARALLEL} (one process)", "fetch", curl_fetch,
                     lambda d: copies(os.path.join(d, "files")), need_curl),
        DownloadPeer("curl+sync", "curl --parallel, then sync -f (its files on disk, like runner's)", "fetch",
                     curl_then_sync, lambda d: copies(os.path.join(d, "files")), need_curl),
        DownloadPeer("runner-dl", f"runner run --download-only (concurrency.download {DOWNLOADS_PARALLEL})", "fetch",
                     lambda d: runner_job(d, True), lambda d: cached(os.path.join(d, "cache")), runner_ok),
        DownloadPeer("curl+c2", f"curl --parallel, then the C reference at {workers} threads", "thumbs",
                     curl_then_reference, lambda d: count_outputs(os.path.join(d, "out")), need_curl),
        DownloadPeer("runner-e2e", f"runner run ({workers} worker processes, downloads overlapping)", "thumbs",
                     lambda d: runner_job(d, False), lambda d: count_outputs(os.path.join(d, "out")), runner_ok),
    ]


def bench_downloads(files, args, settler, reference_bin, cleanup):
    """The downloads set: every peer fetches `files` from a local server, in interleaved rounds.
    Returns (rows, skipped, server description). Folders are not deleted between runs (see README):
    `cleanup` gets the work folder to remove once every set has run."""
    runs = os.path.join(CACHE, "runs")
    os.makedirs(runs, exist_ok=True)
    if args.quick:
        workdir = tempfile.mkdtemp(prefix="downloads-", dir=runs)
    else:
        workdir = os.path.join(runs, "downloads")
        if os.path.exists(workdir):  # an earlier run's: removed at the end, not now (see README)
            stale = tempfile.mkdtemp(prefix="downloads.old-", dir=runs)
            os.rename(workdir, os.path.join(stale, "downloads"))
            cleanup.append(stale)
        os.makedirs(workdir)
    root = os.path.dirname(files[0])
    server = StaticServer(root, workdir, allow_nginx=True)
    if not args.quick and not args.no_install:
        reason = ensure_apt("nginx", lambda: find_nginx() is not None, True)
        if reason:
            log(f"nginx: {reason}")
    peers = make_download_peers(args, reference_bin, server, files)
    usable, skipped = split_runnable(peers, lambda peer: peer.available())
    total_bytes = sum(os.path.getsize(f) for f in files)
    need = (args.rounds * len(usable) + 1) * total_bytes  # every run's files, and the warm-up's
    keep_all = shutil.disk_usage(workdir).free > 1.5 * need + (2 << 30)
    if not keep_all:
        log(f"downloads: {need / 2**30:.1f} GiB for every round's files does not fit; each run's files are "
            "deleted right after it (creating files soon after deleting many is slower on some filesystems)")
    warm(files)
    results = {p.key: [] for p in usable}
    server.start()
    log(f"downloads: serving {len(files)} files ({total_bytes / 2**20:.0f} MiB) with {server.description}")
    try:
        if not args.quick and usable:
            # One unmeasured fetch first: the first run after many files were deleted (an earlier
            # run's clean-up) writes into pages the VM has just freed, and was up to 2x faster.
            warmup = os.path.join(workdir, "warmup", usable[0].key)
            os.makedirs(warmup)
            os.sync()
            subprocess.run(usable[0].command(warmup), cwd=warmup, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for round_index in range(args.rounds):
            for peer in usable:
                run_dir = os.path.join(workdir, f"round{round_index + 1}", peer.key)
                os.makedirs(run_dir)
                argv = peer.command(run_dir)
                with open(os.path.join(run_dir, "command.txt"), "w") as handle:
                    handle.write(shlex.join(argv) + "\n")
                # Flush what earlier runs left unwritten, so it is not written back while this run
                # fsyncs (runner does, per original; curl does not): each run pays for its own data.
                os.sync()
                settler.wait()
                run = measure(argv, cwd=run_dir, stderr_path=os.path.join(run_dir, "stderr.txt"),
                              sample_interval=args.rss_interval, server=server.cpu_seconds)
                run["outputs"] = peer.check(run_dir)
                results[peer.key].append(run)
                log(f"downloads round {round_index + 1}/{args.rounds} {peer.key:10} {run['wall']:6.2f}s "
                    f"{len(files) / run['wall']:7.1f} files/s  cpu {run['cpu']:5.1f}s  server {run['server']:4.2f}s  "
                    f"other load {run['other']:4.2f}  exit {run['code']}  {run['outputs']}/{len(files)} right")
                if not keep_all:
                    for data in ("files", "cache", "out"):
                        shutil.rmtree(os.path.join(run_dir, data), ignore_errors=True)
    finally:
        server.stop()
    last = os.path.join(workdir, f"round{args.rounds}")
    if args.quick and not args.keep:
        cleanup.append(workdir)
    elif not args.keep:
        cleanup.append(lambda: [shutil.rmtree(os.path.join(folder, peer, data), ignore_errors=True)
                                for folder in glob.glob(os.path.join(workdir, "round*")) + [os.path.join(workdir, "warmup")]
                                if os.path.isdir(folder)
                                for peer in os.listdir(folder) for data in ("files", "cache", "out")])
    else:  # --keep: the last round's files stay
        cleanup.append(lambda: [shutil.rmtree(os.path.join(folder, peer, data), ignore_errors=True)
                                for folder in glob.glob(os.path.join(workdir, "round*")) + [os.path.join(workdir, "warmup")]
                                if folder != last and os.path.isdir(folder)
                                for peer in os.listdir(folder) for data in ("files", "cache", "out")])
    rows = summarise_downloads(files, usable, results)
    return rows, skipped, server.description


def summarise_downloads(files, peers, results):
    """One row per peer, like `summarise`; each peer's ratio is to its group's curl peer."""
    count = len(files)
    base_rate = {}
    for peer in peers:
        if peer.key in ("curl", "curl+c2"):
            base_rate[peer.group] = statistics.median(count / r["wall"] for r in undisturbed(results[peer.key]))
    rows = []
    for peer in peers:
        runs = results[peer.key]
        used = undisturbed(runs)
        rate = statistics.median(count / r["wall"] for r in used)
        cpu = statistics.median(r["cpu"] for r in used)
        rows.append({
            "key": peer.key, "label": peer.label, "group": peer.group, "rate": rate,
            "min": min(count / r["wall"] for r in runs), "max": max(count / r["wall"] for r in runs),
            "ratio": rate / base_rate[peer.group] if peer.group in base_rate else None,
            "ratio_min": (min(count / r["wall"] for r in runs) / base_rate[peer.group]) if peer.group in base_rate else None,
            "ratio_max": (max(count / r["wall"] for r in runs) / base_rate[peer.group]) if peer.group in base_rate else None,
            "wall": statistics.median(r["wall"] for r in used), "cpu": cpu, "cpu_ms": 1000 * cpu / count,
            "server": statistics.median(r["server"] for r in used),
            "rss": max(r["rss"] for r in runs), "pss": max(r["pss"] for r in runs),
            "ok": all(r["code"] == 0 and r["outputs"] == count for r in runs),
            "other": statistics.median(r["other"] for r in runs),
            "disturbed": sum(1 for r in runs if r["other"] > NOISY), "used": len(used),
            "outputs": min(r["outputs"] for r in runs), "codes": sorted({r["code"] for r in runs}), "runs": len(runs),
            "raw": [{k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()} for r in runs],
        })
    return rows


DOWNLOAD_GROUPS = {
    "fetch": ("Download only", "x curl", "files/s"),
    "thumbs": ("Download + thumbnail (256x256 inside, JPEG q80)", "x curl + C ref", "images/s"),
}


def downloads_table(rows, count):
    out = []
    for group, (title, ratio_name, unit) in DOWNLOAD_GROUPS.items():
        members = [r for r in rows if r.get("group") == group]
        if not members:
            continue
        out += [f"**{title}**", "",
                f"| peer | {unit} (median of runs used) | min - max | {ratio_name} (min - max) | wall s | CPU s "
                "| CPU ms/file | max RSS of one process MB | peak PSS of tree MB | server CPU s | right | other load "
                "| disturbed runs | runs used |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in members:
            ratio = (f"{r['ratio']:.2f} ({r['ratio_min']:.2f} - {r['ratio_max']:.2f})"
                     if r.get("ratio") is not None else "-")
            right = f"{r['outputs']}/{count}" + ("" if r["ok"] else f" FAILED (exit {','.join(map(str, r['codes']))})")
            pss = f"{r['pss']:.0f}" if r["pss"] else "-"
            out.append(f"| {r['label']} | {r['rate']:.1f} | {r['min']:.1f} - {r['max']:.1f} | {ratio} | {r['wall']:.2f} "
                       f"| {r['cpu']:.1f} | {r['cpu_ms']:.2f} | {r['rss']:.0f} | {pss} | {r['server']:.2f} | {right} "
                       f"| {r['other']:.2f} | {r['disturbed']}/{r['runs']} | {r['used']} |")
        out.append("")
    return "\n".join(out).rstrip()


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


def checkout_of(runner):
    """The checkout a runner binary was built in (its build folder is inside it), else this one."""
    found = subprocess.run(["git", "-C", os.path.dirname(runner), "rev-parse", "--show-toplevel"],
                           capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else ROOT


def runner_build(runner):
    """runner's commit and binary, warning when the binary is older than Sources/."""
    root = checkout_of(runner)
    commit = run_text(["git", "-C", root, "rev-parse", "--short", "HEAD"]) or "unknown"
    dirty = run_text(["git", "-C", root, "status", "--porcelain", "--untracked-files=no", "--", "Sources", "Package.swift"])
    built = datetime.datetime.fromtimestamp(os.path.getmtime(runner)).strftime("%Y-%m-%d %H:%M") if os.path.exists(runner) else "missing"
    stale = runner_is_stale(runner)
    return (f"{commit}" + (" with uncommitted changes to Sources/ or Package.swift" if dirty else "")
            + f" ({os.path.relpath(runner, ROOT) if runner.startswith(ROOT) else runner}, built {built}"
            + (", OLDER than the newest file in Sources/: it may not be this commit" if stale else "") + ")")


def versions(args, setup):
    def python_version(module, expression):
        found = subprocess.run([sys.executable, "-c", f"import {module}; print({expression})"], capture_output=True, text=True)
        return found.stdout.strip() if found.returncode == 0 else "not installed"
    def where(libvips):
        return f"libvips {libvips['version']} ({libvips['lib']})" if libvips else "none"
    convert = find_convert()
    result = {
        "runner": runner_build(args.runner) + f", on {where(setup.libvips)}",
    }
    if args.runner_system:
        result["runner-sys"] = runner_build(args.runner_system) + f", on {where(setup.system_libvips)}"
    result.update({
        "C reference": f"{os.path.relpath(setup.reference, ROOT)}, on {where(setup.libvips)}",
        "pyvips (pyvips-p, pyvips-t)": setup.pyvips.describe(),
        "pyvips (pyvips-wheel)": setup.wheel.describe(),
        "vipsthumbnail (vt1, vt50)": where(setup.cli_libvips),
        "ImageMagick": run_text([convert, "-version"]).splitlines()[0] if convert else "not installed",
        "Pillow": python_version("PIL", "PIL.__version__"),
        "Python": platform.python_version(),
        "cc": run_text(["cc", "--version"]).splitlines()[0] if shutil.which("cc") else "missing",
    })
    return result


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


def analysis(records, probe):
    lines = []
    for name, record in records.items():
        rows, count = record["rows"], record["count"]
        by_key = {r["key"]: r for r in rows}
        if name == "downloads":
            curl, fetch, durable = by_key.get("curl"), by_key.get("runner-dl"), by_key.get("curl+sync")
            both, e2e = by_key.get("curl+c2"), by_key.get("runner-e2e")
            if curl and fetch:
                lines.append(f"- **downloads**: `runner run --download-only` fetches {fetch['rate']:.0f} files/s against "
                             f"{curl['rate']:.0f} for one `curl --parallel` process: {fetch['ratio']:.2f}x (rounds: "
                             f"{fetch['ratio_min']:.2f} - {fetch['ratio_max']:.2f}; issue 5 asks for at least 0.9x). "
                             f"CPU {fetch['cpu']:.1f} s against {curl['cpu']:.1f} s; the server used "
                             f"{fetch['server']:.2f} and {curl['server']:.2f} s.")
                if durable:
                    lines.append(f"  runner fsyncs every original before recording it; curl followed by `sync -f` (its files "
                                 f"on disk too) makes {durable['rate']:.0f} files/s, and runner "
                                 f"{fetch['rate'] / durable['rate']:.2f}x that.")
            if count < 200:
                lines.append(f"  ({count} files: start-up and tear-down weigh more than the transfers; the ratio says little.)")
            if both and e2e:
                lines.append(f"  End to end (download and a thumbnail of each): runner {e2e['rate']:.1f} images/s against "
                             f"{both['rate']:.1f} for curl followed by the C reference ({e2e['ratio']:.2f}x).")
        c2, runner = by_key.get("c2"), by_key.get("runner")
        if name == "responsive":
            if c2 and runner:
                lines.append(f"- **responsive**: runner makes the five outputs of {runner['rate']:.2f} sources/s against "
                             f"{c2['rate']:.2f} for the C reference decoding once ({runner['ratio']:.2f}x); "
                             f"{runner['cpu_ms']:.0f} CPU ms per source against {c2['cpu_ms']:.0f}.")
            for whole, alone, who in (("runner", "runner-widest", "runner"), ("c2", "c2-widest", "the C reference")):
                ratio = whole_over_widest(rows, whole, alone)
                if ratio:
                    cpu = f"; CPU {ratio['cpu']:.2f}x" if ratio["cpu"] else ""
                    lines.append(f"  Whole set / largest single output alone, {who}: {ratio['wall']:.2f}x wall "
                                 f"(median of {ratio['rounds']} interleaved rounds' ratios, {ratio['min']:.2f} - "
                                 f"{ratio['max']:.2f}){cpu}.")
            c2, runner = None, None  # the thumbnail line below is not this set's
        if c2 and runner:
            extra_ms = 1000 * (runner["wall"] - c2["wall"]) / count
            lines.append(f"- **{name}**: runner makes {runner['rate']:.1f} images/s against the C reference's "
                         f"{c2['rate']:.1f} ({runner['ratio']:.2f}x); {runner['cpu_ms']:.1f} CPU ms per image against "
                         f"{c2['cpu_ms']:.1f}; {extra_ms:+.1f} ms of wall time per image over the reference.")
        for r in rows:
            if not r["ok"]:
                lines.append(f"- **{name}**: {r['label']} FAILED (exit {','.join(map(str, r['codes']))}, "
                             f"{r['outputs']}/{count} outputs); its numbers mean nothing.")
        ranked = sorted((r for r in rows if r["ok"]), key=lambda r: -r["rate"])
        if ranked and name != "downloads":
            lines.append(f"  Fastest: {ranked[0]['label']} ({ranked[0]['rate']:.1f} images/s); slowest: "
                         f"{ranked[-1]['label']} ({ranked[-1]['rate']:.1f} images/s).")
        if record.get("carried"):
            lines.append(f"  ({name}: measured on {record['carried']['date']}, not by this command.)")
    if probe:
        parts = ", ".join(f"{key} {1000 * wall:.0f} ms" for key, wall in probe.items() if key != "carried")
        when = f"; measured on {probe['carried']}, not by this command" if probe.get("carried") else ""
        lines.append(f"- Fixed cost (wall time for a run of a single image, median{when}): {parts}.")
    targets = target_lines(records)
    if targets:
        lines += ["", "**Targets (issue 27)**: runner's images/s over the peer's, the median of the interleaved "
                  "rounds' ratios:", ""] + targets
    return "\n".join(lines)


def round_ratios(rows, key, other, measure="wall"):
    """(median, min, max, rounds used) over the rounds of `other`'s wall (or CPU) / `key`'s in the same
    round: how many times faster (or cheaper) `key` was. Only the rounds where neither run was
    disturbed, or every round when none was spared (rounds used 0). None when either is missing."""
    by_key = {r["key"]: r for r in rows}
    if key not in by_key or other not in by_key:
        return None
    pairs = [(a, b) for a, b in zip(by_key[key]["raw"], by_key[other]["raw"]) if a[measure] > 0]
    quiet = [(a, b) for a, b in pairs if a["other"] <= NOISY and b["other"] <= NOISY]
    ratios = [b[measure] / a[measure] for a, b in quiet or pairs]
    return (statistics.median(ratios), min(ratios), max(ratios), len(quiet)) if ratios else None


# Issue 27's targets: (set, peer, at least this many times its images/s, what it says).
TARGETS = [
    (name, peer, bar, text) for name in ("large", "small", "responsive")
    for peer, bar, text in (("pyvips-p", 1.05, "at least 1.05x pyvips on the same libvips"),
                            ("pyvips-wheel", 1.00, "at least level with pyvips on the pyvips-binary wheel's libvips"))
] + [("large", "c4", 1.0, "ahead of the C reference with 4 threads"),
     ("responsive", "c2", 1 / 1.05, "within 1.05x of the floor, the C reference decoding once (>= 0.952x)")]


def rounds_used(ratio):
    return f"{ratio[3]} undisturbed rounds" if ratio[3] else "every round disturbed, all used:"


def target_lines(records):
    """Each of issue 27's targets the measured sets cover: runner's ratio (median of the interleaved
    rounds' ratios, and their range), met or not; and on the responsive set, whether runner is ahead
    of every peer making the same outputs."""
    lines = []
    for name, peer, bar, text in TARGETS:
        ratio = round_ratios(records[name]["rows"], "runner", peer) if name in records else None
        if ratio:
            # CPU too: on a shared machine it moves less with other work than wall time does.
            cpu = round_ratios(records[name]["rows"], "runner", peer, "cpu")
            cpu = f"; {peer}'s CPU / runner's {cpu[0]:.2f}x" if cpu else ""
            verdict = "met" if ratio[0] >= bar else "NOT met"
            lines.append(f"- {name}: runner / {peer} {ratio[0]:.2f}x ({rounds_used(ratio)} {ratio[1]:.2f} - "
                         f"{ratio[2]:.2f}{cpu}): {text}: "
                         + (verdict if ratio[3] else f"{verdict} by wall time, but every round was disturbed"))
    rows = records["responsive"]["rows"] if "responsive" in records else []
    if any(r["key"] == "runner" for r in rows):
        # Peers making the same five outputs at the same settings (not runner's own variants).
        others = [r["key"] for r in rows if not r["key"].startswith("runner") and not r["key"].endswith("-widest")]
        behind = [(k, round_ratios(rows, "runner", k)[0]) for k in others]
        slower = [f"{k} {x:.2f}x" for k, x in behind if x < 1.0]
        lines.append("- responsive: runner ahead of every peer making the five outputs: "
                     + ("met" if not slower else "NOT met (runner / " + ", ".join(slower) + ")"))
    for name in ("large", "small", "responsive"):
        ratio = round_ratios(records[name]["rows"], "runner", "runner-sys") if name in records else None
        if ratio:
            cpu = round_ratios(records[name]["rows"], "runner", "runner-sys", "cpu")
            lines.append(f"- {name}: runner / runner-sys (the same runner on the other libvips) {ratio[0]:.2f}x "
                         f"({rounds_used(ratio)} {ratio[1]:.2f} - {ratio[2]:.2f}; CPU {cpu[0]:.2f}x)")
    return lines


def previous_facts(report_path):
    """What an existing report says about the run that made it: date, command, runner, rounds (for
    sets whose results are carried over from results.json written before it kept them per set)."""
    facts = {"date": "an earlier run", "command": "", "runner": "", "rounds": None}
    try:
        with open(report_path) as handle:
            text = handle.read()
    except OSError:
        return facts
    made = re.search(r"Made by `bench/bench.py` on (\S+)", text)
    command = re.search(r"## Command\n\n```\n(.*?)\n```", text, re.S)
    runner = re.search(r"^- runner: (.*)$", text, re.M)
    rounds = re.search(r"^(\d+) interleaved rounds per set", text, re.M)
    if made:
        facts["date"] = made.group(1)
    if command:
        facts["command"] = command.group(1).strip()
    if runner:
        facts["runner"] = runner.group(1).strip()
    if rounds:
        facts["rounds"] = int(rounds.group(1))
    return facts


SET_ORDER = ["large", "small", "responsive", "downloads", "quick"]
# Sections written by hand or by the other scripts (fixedcost.py, bookkeeping.py, compare.py fill their tables), kept
# across regenerations between "## Where the time goes" and "## Notes".
HAND_WRITTEN = ["## Fixed cost per image", "## Idle cores and worker processes", "## Bookkeeping at scale",
                "## Derived values", "## Duplicates at scale", "## Site manifest at scale", "## Not slower than a62463e",
                "## Bucket sources", "## Bucket outputs", "## Not slower than 73c6d83 (issue 42)"]


def write_report(path, args, info, vers, command, records, probe, skipped, elapsed, load, settle_waited):
    where = kept_section(path, "## Where the time goes") or PLACEHOLDER
    notes = kept_section(path, "## Notes")  # hand-written; kept across regenerations like the section above
    kept = {heading: kept_section(path, heading) for heading in HAND_WRITTEN}
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
    for name, record in records.items():
        out += [f"## Results: {name}", ""]
        carried = record.get("carried")
        if carried:
            out += [f"_Carried over from the run of {carried['date']}"
                    + (f" (`{carried['command']}`" + (f", {carried['rounds']} rounds" if carried.get("rounds") else "")
                       + ")" if carried.get("command") else "")
                    + (f", runner {carried['runner']}" if carried.get("runner") else "")
                    + "; not measured by the command above._", ""]
        count = record["count"]
        if name == "downloads":
            out += [f"{count} files, {record['megapixels'] / count:.1f} megapixels and "
                    f"{record['bytes'] / count / 1024:.0f} KiB on average (the first {count} JPEGs of the small set), "
                    f"served by {record['server']}. Each run writes into fresh folders and, for runner, a fresh state "
                    "database and originals cache; folders are removed only after the last set (see bench/README.md). "
                    f"files/s is {count} / wall time of the whole command; \"x curl\" divides by the median of one "
                    f"`curl --parallel --parallel-max {DOWNLOADS_PARALLEL}` process; \"right\" counts files whose size "
                    "matches the source (curl's: every 50th compared byte for byte; runner's: originals in its cache, "
                    "none left under a temporary name) or thumbnails written; \"server CPU s\" is the server's, not "
                    "counted in CPU s or other load.", "", downloads_table(record["rows"], count), ""]
        else:
            mp = f", {record['megapixels'] / count:.1f} megapixels on average" if record.get("megapixels") else ""
            render = responsive_table if name == "responsive" else table
            out += [f"{count} files{mp} ({record.get('description') or SETS.get(name, '')}).", "",
                    render(record["rows"], count), ""]
    if skipped:
        out += ["## Skipped peers", ""] + [f"- {label}: {reason}" for label, reason in skipped] + [""]
    out += ["## Analysis", "", analysis(records, probe), "",
            "## Where the time goes", "", where, ""]
    for heading in HAND_WRITTEN:
        if kept[heading]:
            out += [heading, "", kept[heading], ""]
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


def make_setup(args):
    """What the peers run on: the libvips runner loads (and the C reference, compiled against it, and
    pyvips in a venv on it), the one --runner-system loads, the vips CLI's, and the pyvips-binary
    wheel's venv."""
    cli = shutil.which("vipsthumbnail")
    cli_libvips = libvips_of(cli) if cli else None
    libvips = libvips_of(args.runner) if os.path.exists(args.runner) else None
    if libvips is None:
        log(f"no libvips found for {args.runner}; the C reference and pyvips use the vips CLI's")
        libvips = cli_libvips or sys.exit("bench: no libvips found (apt-get install libvips-tools)")
    system_libvips = libvips_of(args.runner_system) if args.runner_system and os.path.exists(args.runner_system) else None
    if args.runner_system and system_libvips is None:
        sys.exit(f"bench: {args.runner_system} is missing or loads no libvips")
    install = not args.no_install and not args.quick
    return argparse.Namespace(
        libvips=libvips, system_libvips=system_libvips, cli_libvips=cli_libvips,
        reference=compile_reference(libvips),
        pyvips=PythonEnv(f"pyvips-{PYVIPS}-libvips-{libvips['version']}", libvips, False, install),
        wheel=PythonEnv(f"pyvips-{PYVIPS}-binary-{PYVIPS_BINARY}", libvips, True, install))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="quick set, 1 round, C reference + runner, no report; fails if runner fails")
    parser.add_argument("--sets", help="comma-separated sets: downloads, large, small, responsive, quick (default: "
                                       "downloads,large,small,responsive; quick,responsive,downloads with --quick)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds per set (default 3; 1 with --quick)")
    parser.add_argument("--peers", help="comma-separated peer keys: c2,c4,runner,runner-sys (with --runner-system),vt1,"
                                        "vt50,im,imsize,pillow,pyvips-t,pyvips-p,pyvips-wheel; runner-p3,runner-p4 "
                                        "(more worker processes than cores, not run by default); responsive set: c2,"
                                        "c2-widest,runner,runner-widest,runner-sys,vt50,pillow,pyvips-p,pyvips-wheel, "
                                        "and c4,pyvips-t,runner-e2,runner-e0 (not by default)")
    parser.add_argument("--runner", default=os.environ.get("BENCH_RUNNER") or default_runner(),
                        help="runner binary (default: $BENCH_RUNNER, else .build/release/runner)")
    parser.add_argument("--runner-system", metavar="PATH",
                        help="runner built on the other libvips (LIBVIPS=system swift build -c release --scratch-path "
                             ".build-system: .build-system/release/runner), measured beside --runner as runner-sys")
    parser.add_argument("--workers", type=int, default=2, help="threads/processes per peer (default 2)")
    parser.add_argument("--responsive-every", type=int, default=1, metavar="N",
                        help="the responsive set takes every Nth photo of the large set (default 1: all 200; "
                             "a source costs 1-2 CPU s there, so 4 makes a 5-round series fit in ~15 minutes)")
    parser.add_argument("--samples", type=int, help="images per set for the quality score (default 20; 3 with --quick)")
    parser.add_argument("--limit", type=int, help="use only the first N files of each set (downloads: of its 2,000)")
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
    args.runner_system = os.path.abspath(args.runner_system) if args.runner_system else None
    sets = (args.sets or ("quick,responsive,downloads" if args.quick else "downloads,large,small,responsive")).split(",")
    unknown = set(sets) - set(SETS)
    if unknown:
        sys.exit(f"bench: unknown sets {', '.join(sorted(unknown))} (have {', '.join(SETS)})")
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.samples = args.samples if args.samples is not None else (3 if args.quick else 20)
    write = not (args.quick or args.no_report)
    image_sets = [name for name in sets if name != "downloads"]
    thumbnail_sets = [name for name in image_sets if name != "responsive"]
    specs = QUICK_RESPONSIVE if args.quick else RESPONSIVE

    started = time.time()
    load_before = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    if args.quick and ("quick" in sets or "downloads" in sets):
        # The quick set is synthetic and needs only the vips CLI: make (or verify) it here.
        subprocess.run([os.path.join(BENCH, "make-corpus.sh"), "quick"], check=True)
    if runner_is_stale(args.runner):
        log(f"warning: {args.runner} is older than Sources/ (rebuild it to measure the current code)")
    setup = make_setup(args)
    reference_bin = setup.reference
    if args.peers:
        everyone = argparse.Namespace(**dict(vars(args), everyone=True))
        known = [p.key for p in make_peers(everyone, setup) + make_responsive_peers(everyone, setup, specs)]
        unknown = set(args.peers.split(",")) - set(known)
        if unknown:
            sys.exit(f"bench: unknown peers {', '.join(sorted(unknown))} (have {', '.join(dict.fromkeys(known))})")
    skipped, usable, peers = [], [], []
    responsive_usable, responsive_peers = [], []
    if thumbnail_sets:
        peers = make_peers(args, setup)
        usable, skipped = split_runnable(peers, lambda peer: peer.check())
        if not usable:
            sys.exit("bench: no peer can run")
    if "responsive" in image_sets:
        responsive_peers = make_responsive_peers(args, setup, specs)
        responsive_usable, responsive_skipped = split_runnable(responsive_peers, lambda peer: peer.check())
        skipped += [(f"{label} (responsive)", reason) for label, reason in responsive_skipped]
        if not responsive_usable:
            sys.exit("bench: no peer of the responsive set can run")

    settler = Settler(args.settle, args.settle_budget)
    records = {}
    cleanup = []  # folders (or functions) to remove once every set has run
    try:
        for name in sets:
            if name == "downloads":
                # The small set's first files (the quick set's with --quick), fetched from a local server.
                corpus = corpus_files("quick" if args.quick else "small")
                files = corpus[:args.limit or (len(corpus) if args.quick else 2000)]
            else:
                folder = ("quick" if args.quick else "large") if name == "responsive" else name
                files = corpus_files(folder)[:args.limit] if args.limit else corpus_files(folder)
                if args.quick and name == "responsive":
                    files = files[:QUICK_RESPONSIVE_FILES]  # it checks the set works; seconds count
                elif name == "responsive":
                    files = files[::args.responsive_every]
            if not files:
                source = ("quick" if args.quick else "small" if name == "downloads" else
                          ("quick" if args.quick else "large") if name == "responsive" else name)
                sys.exit(f"bench: no files in {os.path.join(CORPUS, source)}: run bench/make-corpus.sh {source}")
            record = {"count": len(files), "megapixels": megapixels(files) if write else 0,
                      "description": SETS.get(name, ""), "date": datetime.date.today().isoformat()}
            if name == "downloads":
                log(f"set downloads: {len(files)} files, {args.rounds} rounds")
                rows, dl_skipped, server = bench_downloads(files, args, settler, reference_bin, cleanup)
                skipped += dl_skipped
                record.update(rows=rows, server=server, bytes=sum(os.path.getsize(f) for f in files))
                rendered = downloads_table(rows, len(files))
            else:
                members = responsive_usable if name == "responsive" else usable
                if name == "responsive":
                    record["description"] = (("every" if args.responsive_every == 1 or args.quick else
                                              f"every {args.responsive_every}th")
                                             + f" file of the {'quick' if args.quick else 'large'} set to "
                                             + ", ".join(spec_label(spec) for spec in specs)
                                             + ", each fit inside its width and never enlarged")
                log(f"set {name}: {len(files)} files, {args.rounds} rounds, peers {', '.join(p.key for p in members)}")
                results, quality = bench_set(name, files, members, args, settler)
                record["rows"] = summarise(name, files, members, results, quality)
                rendered = (responsive_table if name == "responsive" else table)(record["rows"], len(files))
            records[name] = record
            print(f"\n{name}: {len(files)} files, {args.rounds} round(s)\n")
            print(rendered)
            print()
    finally:
        for item in cleanup:
            item() if callable(item) else shutil.rmtree(item, ignore_errors=True)

    probe = {}
    if not args.no_probe and not args.quick and thumbnail_sets:
        keys = [p for p in usable if p.key in ("c2", "runner", "vt1", "pyvips-t")]
        source = corpus_files(thumbnail_sets[-1])[0]
        try:
            probe = startup_probe(keys, source, os.path.join(CACHE, "runs", "probe"), 5, args.rss_interval)
        except (OSError, subprocess.SubprocessError) as error:
            log(f"start-up probe failed: {error}")
        print("fixed cost (1 image, median of 5): " + ", ".join(f"{k} {1000 * v:.0f} ms" for k, v in probe.items()))
    command = ("python3 bench/bench.py " + shlex.join(sys.argv[1:])).strip()
    report_records = dict(records)
    if not args.quick and not write:
        # A run that writes no report (exploring with --no-report) leaves results.json, what the
        # report is made of, alone.
        with open(os.path.join(CACHE, "runs", "results-no-report.json"), "w") as handle:
            json.dump({"sets": {n: r["rows"] for n, r in records.items()}, "probe": probe, "args": vars(args)},
                      handle, indent=1)
    if write:
        # results.json keeps every set's latest results, so a run of some sets does not lose the others'.
        path = os.path.join(CACHE, "runs", "results.json")
        try:
            with open(path) as handle:
                previous = json.load(handle)
        except (OSError, ValueError):
            previous = {}
        facts = previous_facts(args.report)
        kept_sets, kept_meta = previous.get("sets", {}), previous.get("meta", {})
        merged_sets, merged_meta = {}, {}
        for name in sorted(set(kept_sets) | set(records), key=lambda n: (SET_ORDER + [n]).index(n)):
            if name in records:
                merged_sets[name] = records[name]["rows"]
                merged_meta[name] = {k: v for k, v in records[name].items() if k != "rows"}
                merged_meta[name].update(command=command, rounds=args.rounds, runner=versions(args, setup)["runner"])
            else:
                merged_sets[name] = kept_sets[name]
                meta = kept_meta.get(name) or {
                    "count": max(r["outputs"] for r in kept_sets[name]), "description": SETS.get(name, ""),
                    "date": facts["date"], "command": facts["command"], "runner": facts["runner"],
                    "rounds": facts["rounds"]}
                if "megapixels" not in meta and write:
                    meta["megapixels"] = megapixels(corpus_files(name)[:meta["count"]])
                merged_meta[name] = meta
                report_records[name] = dict(meta, rows=kept_sets[name], carried=meta)
        probe_date, carried_probe = datetime.date.today().isoformat(), False
        if not probe and previous.get("probe"):
            probe, probe_date, carried_probe = previous["probe"], previous.get("probe_date") or facts["date"], True
        with open(path, "w") as handle:
            json.dump({"sets": merged_sets, "meta": merged_meta, "probe": probe, "probe_date": probe_date,
                       "args": vars(args)}, handle, indent=1)
        if carried_probe:
            probe = dict(probe, carried=probe_date)
        report_records = {n: report_records[n] for n in merged_sets}
    for line in analysis(records, probe).splitlines():
        print(line)
    if skipped:
        print("skipped: " + "; ".join(f"{label}: {reason}" for label, reason in skipped))

    if write:
        write_report(args.report, args, machine_info(), versions(args, setup), command, report_records, probe,
                     skipped, time.time() - started, (load_before, ", ".join(f"{x:.2f}" for x in os.getloadavg())),
                     settler.waited)

    # Exit status: runner must have succeeded and written every output (what bench-quick checks).
    failed = [f"{name}/{r['label']}" for name, record in records.items() for r in record["rows"]
              if not r["ok"] and (r["key"].startswith("runner") or args.quick)]
    if "runner" not in {p.key for p in usable} and any(p.key == "runner" for p in peers):
        failed.append("runner could not run")
    if "downloads" in records and not any(r["key"].startswith("runner") for r in records["downloads"]["rows"]):
        failed.append("runner could not run the downloads set")
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
