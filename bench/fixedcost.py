#!/usr/bin/env python3
"""Fixed cost per image (issue 15): what each tool spends on an image that has almost no pixels.

    python3 bench/fixedcost.py [--runner .build/release/runner] [--counts 100,500] [--repeats 5]
                               [--tools runner,c2,pyvips-t,pillow] [--no-callgrind] [--no-strace]
                               [--write BENCHMARKS.md]

Every tool makes the same output from each of the tiny set's 64x64 JPEGs (bench/make-corpus.sh
tiny): fit inside 32 px wide (so every tool shrinks, none enlarges), JPEG quality 80, metadata
stripped, with 2 workers (threads or processes) as in the other sets.

Each tool runs on the first N files for each N of --counts (default 100 and 500). The cost per
image is the slope, (cost(500) - cost(100)) / 400, so start-up (process starts, dynamic loading,
vips_init, Python imports) drops out; the start-up is what is left at N = 100 after 100 slopes.

- wall, task-clock, page faults, context switches: `perf stat` (software events; they follow
  children), --repeats interleaved rounds, median per (tool, N).
- instructions: `valgrind --tool=callgrind --trace-children=yes` (every process of the tree:
  runner's supervisor and its workers, Python's pool processes), summed; instruction counts do not
  depend on other load on the machine. One run per (tool, N): they repeat within ~0.1%.
- runner's breakdown: `callgrind_annotate --inclusive=yes` per process, supervisor and workers
  apart, the inclusive cost of chosen functions as a slope per image.
- syscalls: `strace -f -c`, calls per image (slope), by syscall.

Results go to bench/cache/runs/fixedcost.json; --write replaces the generated block (between
`<!-- fixedcost:begin -->` and `<!-- fixedcost:end -->`) of "## Fixed cost per image" in the report,
leaving what is written around it alone.
"""
import argparse
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
CACHE = os.path.join(BENCH, "cache")
SPEC = "32:jpeg:80"
BEGIN, END = "<!-- fixedcost:begin -->", "<!-- fixedcost:end -->"

# runner's per-image costs worth naming: (label, role, regex over the demangled function name).
# The first entry of a name that matches (callgrind_annotate lists them by inclusive cost) counts;
# recursion levels (name'2) are skipped, so a function's cost is counted once.
RUNNER_FUNCTIONS = [
    ("worker: everything per image", "worker", None),
    ("ImagePipeline.render (one source, every output)", "worker", r"ImagePipeline\.render\(sourcePath"),
    ("  open: stat + access + VipsSource + header (ImagePipeline.open)", "worker", r"ImagePipeline\.open\("),
    ("    vips_source_new_from_file", "worker", r"^vips_source_new_from_file$"),
    ("vips_image_new_from_source (3 calls: runner's header open, 2 inside vips_thumbnail_source)", "worker",
     r"^vips_image_new_from_source$"),
    ("vips_foreign_find_load_source (the sniff: 4 calls)", "worker", r"^vips_foreign_find_load_source$"),
    ("  openslide_detect_vendor (OpenSlide's part of the sniff, SQLite open)", "worker", r"^openslide_detect_vendor$"),
    ("  vips_thumbnail_source (sniff, header, load at the shrink, build the resize)", "worker",
     r"^vips_thumbnail_source$"),
    ("    vips_resize", "worker", r"^vips_resize$"),
    ("      orc compiling the reduce program (vips_vector_compile)", "worker", r"^vips_vector_compile$"),
    ("  render to memory (VipsImageHandle.copiedToMemory)", "worker", r"copiedToMemory\(\)"),
    ("  finish (colourspace, copy, metadata removal)", "worker", r"ImagePipeline\.finish\("),
    ("  encode (JPEGEncoder.encode)", "worker", r"JPEGEncoder\.encode\("),
    ("    vips_jpegsave_buffer", "worker", r"^vips_jpegsave_buffer$"),
    ("  stage the output (AtomicFile.stage: temp file, write, close)", "worker", r"AtomicFile\.stage\("),
    ("libvips: jpeg_read_header (libjpeg, every header load)", "worker", r"^jpeg_read_header$"),
    ("libvips: operations built (vips_cache_operation_buildp, top level)", "worker", r"^vips_cache_operation_buildp$"),
    ("libvips: g_object_unref (top level)", "worker", r"^g_object_unref$"),
    ("libvips: thread pools (vips_threadpool_run)", "worker", r"^vips_threadpool_run$"),
    ("libvips: new threads (vips_g_thread_new)", "worker", r"^vips_g_thread_new$"),
    ("libvips: sink_disc (the saver's pipeline)", "worker", r"^vips_sink_disc$"),
    ("worker: pipe messages in (LineChannel.receive)", "worker", r"LineChannel\.receive"),
    ("worker: pipe messages out (LineChannel.send)", "worker", r"LineChannel\.send"),
    ("supervisor: everything per image", "supervisor", None),
    ("supervisor: SQLite (sqlite3_step)", "supervisor", r"^sqlite3_step$"),
    ("supervisor: GRDB writes (DatabaseQueue.writeWithoutTransaction, all threads)", "supervisor",
     r"writeWithoutTransaction<A>\(_:\) in conformance DatabaseQueue"),
    ("supervisor: JSON encoding (JSONEncoder.encode: the tasks it sends)", "supervisor", r"JSONEncoder\.encode"),
    ("supervisor: pipe messages in (LineChannel.receive: the replies)", "supervisor", r"LineChannel\.receive"),
    ("supervisor: publish (AtomicFile: syncfs, renames)", "supervisor", r"AtomicFile\.publish"),
    ("supervisor: Recorder", "supervisor", r"Recorder\."),
    ("supervisor: planning (Planner)", "supervisor", r"Planner\."),
]


def log(message):
    print(f"fixedcost: {message}", file=sys.stderr, flush=True)


def tiny_files():
    folder = os.path.join(CACHE, "corpus", "tiny")
    if not os.path.isdir(folder):
        subprocess.run([os.path.join(BENCH, "make-corpus.sh"), "tiny"], check=True)
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".jpg"))


def compile_reference():
    sys.path.insert(0, BENCH)
    import bench  # noqa: E402  (the harness compiles and caches it)
    return bench.compile_reference()


def tools(args, reference):
    python = sys.executable
    width, kind, quality = SPEC.split(":")

    def runner(outdir, listfile, workdir):
        job = {"version": 1, "name": "fixedcost", "sources": [{"list": listfile}],
               "outputs": [{"name": "t", "path": os.path.join(outdir, "{stem}-32.jpg"),
                            "chain": [{"op": "thumbnail", "width": int(width), "fit": "inside"}],
                            "format": {"type": kind, "quality": int(quality)}}],
               "concurrency": {"process": 2}, "state": os.path.join(workdir, "state.sqlite")}
        path = os.path.join(workdir, "job.json")
        with open(path, "w") as handle:
            json.dump(job, handle)
        return [args.runner, path, "--quiet"]

    return {
        "runner": ("runner, 2 worker processes", runner, {}),
        "c2": ("C reference, 2 threads", lambda o, l, w: [reference, "2", o, l, SPEC], {}),
        "pyvips-t": ("pyvips, 2 threads", lambda o, l, w: [python, os.path.join(BENCH, "peers", "pyvips_thumbs.py"),
                                                          "threads", "2", o, l, SPEC], {}),
        "pyvips-p": ("pyvips, pool of 2 processes",
                     lambda o, l, w: [python, os.path.join(BENCH, "peers", "pyvips_thumbs.py"), "processes", "2", o, l,
                                      SPEC], {}),
        "pillow": ("Pillow, pool of 2 processes", lambda o, l, w: [python, os.path.join(BENCH, "peers", "pillow_thumbs.py"),
                                                                  "2", o, l, SPEC], {}),
        "vt50": ("vipsthumbnail, xargs -P 2, 50 files/process",
                 lambda o, l, w: ["xargs", "-d", "\n", "-a", l, "-P", "2", "-n", "50", "vipsthumbnail", "-s", "32x>",
                                  "-o", os.path.join(o, "%s-32.jpg[Q=80,strip]")], {"VIPS_CONCURRENCY": "1"}),
    }


def prepare(workroot, key, count, files):
    """A fresh work folder for one run: the list of the first `count` files and an empty output folder."""
    workdir = os.path.join(workroot, f"{key}-{count}")
    shutil.rmtree(workdir, ignore_errors=True)
    outdir = os.path.join(workdir, "out")
    os.makedirs(outdir)
    listfile = os.path.join(workdir, "files.txt")
    with open(listfile, "w") as handle:
        handle.writelines(f + "\n" for f in files[:count])
    return workdir, outdir, listfile


def outputs_made(outdir):
    return sum(1 for f in os.listdir(outdir) if f.endswith("-32.jpg") and os.path.getsize(os.path.join(outdir, f)) > 0)


def perf_run(argv, env, statfile):
    import bench  # noqa: E402  (busy_seconds: the machine's busy CPU time, for other load)
    busy = bench.busy_seconds()
    started = time.perf_counter()
    result = subprocess.run(["perf", "stat", "-x", ",", "-e", "task-clock,page-faults,context-switches,cpu-migrations",
                             "-o", statfile, "--", *argv], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - started
    busy = bench.busy_seconds() - busy
    values = {}
    with open(statfile) as handle:
        for line in handle:
            parts = line.strip().split(",")
            if len(parts) > 2 and parts[0] and not line.startswith("#"):
                try:
                    values[parts[2]] = float(parts[0])
                except ValueError:
                    pass
    task = values.get("task-clock") or 0.0
    return {"wall": wall, "task_ms": values.get("task-clock"), "faults": values.get("page-faults"),
            "switches": values.get("context-switches"), "code": result.returncode,
            "other": max(0.0, (busy - task / 1000) / wall)}


def callgrind_run(argv, env, folder):
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    # --smc-check=all: orc (libvips 8.14's SIMD) writes new machine code where old code was, through a
    # second (file-backed) mapping; without it valgrind runs stale translations and the threaded
    # peers crash (all-non-file is not enough).
    result = subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes", "--smc-check=all",
                             f"--callgrind-out-file={folder}/cg.%p", *argv], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    processes = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        total, command = 0, ""
        with open(path, errors="replace") as handle:
            for line in handle:
                if line.startswith("cmd:"):
                    command = line[4:].strip()
                elif line.startswith(("summary:", "totals:")):
                    total = int(line.split()[1])
                    break
        processes.append({"file": path, "cmd": command, "ir": total})
    return {"code": result.returncode, "processes": processes}


def strace_run(argv, env, path):
    result = subprocess.run(["strace", "-f", "-c", "-S", "calls", "-o", path, *argv], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    calls = {}
    with open(path) as handle:
        for line in handle:
            fields = line.split()
            # % time, seconds, usecs/call, calls, [errors,] syscall
            if len(fields) >= 5 and re.match(r"^[0-9.]+$", fields[0]) and fields[-1] != "total":
                calls[fields[-1]] = int(fields[3])
    return {"code": result.returncode, "calls": calls}


def demangle(names):
    """Swift symbols ($s...) demangled in the simplified form; other names as they are."""
    tool = shutil.which("swift-demangle") or "/opt/swift/usr/bin/swift-demangle"
    if not os.path.exists(tool):
        return names
    text = subprocess.run([tool, "--simplified"], input="\n".join(names), capture_output=True, text=True).stdout
    out = text.split("\n")
    return out[:len(names)] if len(out) >= len(names) else names


def inclusive(path):
    """{function: inclusive Ir} of one callgrind file, first (outermost) level of recursion only."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                          capture_output=True, text=True).stdout
    rows = []
    for line in text.splitlines():
        match = re.match(r"^\s*([\d,]+)\s+\([\s\d.]+%\)\s+(.*?):(.*?)(?: \[(.*)\])?$", line)
        if not match:
            continue
        cost, function = int(match.group(1).replace(",", "")), match.group(3)
        if re.search(r"'\d+$", function):
            continue  # a deeper level of a recursion: its cost is inside the outer level's
        rows.append((function, cost))
    names = demangle([name for name, _ in rows])
    table = {}
    for name, (_, cost) in zip(names, rows):
        table[name] = max(table.get(name, 0), cost)
    return table


def role_of(command):
    return "worker" if command.split()[1:2] == ["worker"] else "supervisor"


def runner_breakdown_from(by_count, counts, row):
    """runner_breakdown over kept callgrind files, with the totals per role taken from `row`."""
    for count in counts:
        kept = row["instructions"]["by_count"][str(count)]
        for process, saved in zip(by_count[count]["processes"], kept):
            process["ir"] = saved["ir"]
    return runner_breakdown(by_count, counts)


def runner_breakdown(cg_by_count, counts):
    """Per-image inclusive Ir of RUNNER_FUNCTIONS: the slope between the two counts, summed over the
    processes of each role."""
    low, high = counts[0], counts[-1]
    sums = {}
    for count in (low, high):
        per_role = {"worker": collections.Counter(), "supervisor": collections.Counter()}
        totals = collections.Counter()
        for process in cg_by_count[count]["processes"]:
            role = role_of(process["cmd"])
            totals[role] += process["ir"]
            for name, cost in inclusive(process["file"]).items():
                per_role[role][name] += cost
        sums[count] = (per_role, totals)
    rows = []
    for label, role, pattern in RUNNER_FUNCTIONS:
        values = []
        for count in (low, high):
            per_role, totals = sums[count]
            if pattern is None:
                values.append(totals[role])
                continue
            matches = [(cost, name) for name, cost in per_role[role].items() if re.search(pattern, name)]
            values.append(max(matches)[0] if matches else 0)
        name = None
        if pattern:
            matches = [(cost, name) for name, cost in sums[high][0][role].items() if re.search(pattern, name)]
            name = max(matches)[1] if matches else None
        rows.append({"label": label, "role": role, "function": name,
                     "per_image": (values[1] - values[0]) / (high - low), "at": dict(zip((low, high), values))})
    return rows


def top_functions(cg_by_count, counts, role, limit=40):
    """The functions of runner's processes of `role` with the largest inclusive slope per image."""
    low, high = counts[0], counts[-1]
    tables = {}
    for count in (low, high):
        table = collections.Counter()
        for process in cg_by_count[count]["processes"]:
            if role_of(process["cmd"]) == role:
                for name, cost in inclusive(process["file"]).items():
                    table[name] += cost
        tables[count] = table
    slopes = {name: (tables[high][name] - tables[low].get(name, 0)) / (high - low) for name in tables[high]}
    return sorted(slopes.items(), key=lambda item: -item[1])[:limit]


def slope(low, high, counts):
    return (high - low) / (counts[-1] - counts[0])


def render(results, counts):
    low, high = counts[0], counts[-1]
    lines = [BEGIN, "",
             f"_Generated by `python3 bench/fixedcost.py` on {results['date']} ({results['command']}); "
             f"runner {results['runner']}; load average before / after: {results['load']}._", "",
             f"Each tool makes a 32 px wide JPEG (q80) of each of the tiny set's 64x64 JPEGs (`bench/make-corpus.sh tiny`), "
             f"2 workers. Per image = (cost of {high} images - cost of {low}) / {high - low}, so process start-up drops "
             f"out; start-up = cost of {low} - {low} x per image. Wall, task-clock, faults and switches: median of "
             f"{results['repeats']} interleaved `perf stat` rounds; task-clock (CPU time) holds up under other load, "
             "wall time does not: read wall only when \"other load\" is near 0. Instructions: callgrind over every process of the "
             "tree (`--trace-children=yes`; Python's pool processes are forks, followed too). Syscalls: `strace -f -c`.", "",
             "| tool | wall ms/image | task-clock ms/image | instructions/image | start-up wall ms | start-up task-clock ms "
             "| start-up instructions | syscalls/image | page faults/image | context switches/image | outputs "
             "| other load (median of the perf runs) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for key, row in results["tools"].items():
        t = row.get("timing", {})
        ir = row.get("instructions")
        sc = row.get("syscalls")

        def fmt(value, spec):
            return format(value, spec) if value is not None else "-"
        lines.append(
            f"| {row['label']} | {fmt(t.get('wall_per'), '.2f')} | {fmt(t.get('task_per'), '.2f')} "
            f"| {fmt(ir and ir['per_image'] / 1e6, '.2f')} M | {fmt(t.get('wall_start'), '.0f')} "
            f"| {fmt(t.get('task_start'), '.0f')} | {fmt(ir and ir['start'] / 1e6, '.0f')} M "
            f"| {fmt(sc and sc['per_image_total'], '.1f')} | {fmt(t.get('faults_per'), '.1f')} "
            f"| {fmt(t.get('switches_per'), '.1f')} | {row.get('outputs', '-')} | {fmt(t.get('other'), '.2f')} |")
    lines.append("")
    breakdown = results["tools"].get("runner", {}).get("breakdown")
    if breakdown:
        total = {r["role"]: r["per_image"] for r in breakdown if r["label"].endswith("everything per image")}
        whole = sum(total.values()) or 1
        lines += ["**runner, instructions per image by function** (callgrind inclusive cost, slope between "
                  f"{low} and {high} images; worker rows summed over both workers; % of runner's whole per-image "
                  "count, supervisor + workers; nested rows are inside the row above them):", "",
                  "| where | instructions/image | % of runner's per image | function |", "|---|---:|---:|---|"]
        for r in breakdown:
            label = r["label"].replace("  ", "&nbsp;&nbsp;")
            function = f"`{r['function'][:90]}`" if r["function"] else "-"
            lines.append(f"| {label} | {r['per_image'] / 1e3:,.0f} k | {100 * r['per_image'] / whole:.1f} | {function} |")
        lines.append("")
    tops = results["tools"].get("runner", {}).get("top", {})
    if tops.get("worker"):
        lines += ["**runner's worker, the 25 functions with the largest inclusive instructions per image** "
                  "(nested: each includes what it calls):", "",
                  "| function | instructions/image |", "|---|---:|"]
        for name, value in tops["worker"][:25]:
            lines.append(f"| `{name[:110]}` | {value / 1e3:,.0f} k |")
        lines.append("")
    sys_rows = {k: r["syscalls"] for k, r in results["tools"].items() if r.get("syscalls")}
    if sys_rows:
        names = collections.Counter()
        for row in sys_rows.values():
            for name, value in row["per_image"].items():
                names[name] += value
        chosen = [name for name, _ in names.most_common(16)]
        lines += ["**Syscalls per image** (`strace -f -c`, slope; the 16 most frequent over all tools):", "",
                  "| syscall | " + " | ".join(results["tools"][k]["label"] for k in sys_rows) + " |",
                  "|---|" + "---:|" * len(sys_rows)]
        for name in chosen:
            lines.append(f"| {name} | " + " | ".join(f"{sys_rows[k]['per_image'].get(name, 0):.2f}" for k in sys_rows) + " |")
        lines.append("")
    lines.append(END)
    return "\n".join(lines)


def write_section(report, block, heading="## Fixed cost per image", begin=BEGIN, end=END):
    """Puts `block` (which starts with `begin` and ends with `end`) under `heading` in the report:
    in place of the block written before, else right after the heading, else before "## Notes"."""
    try:
        with open(report) as handle:
            text = handle.read()
    except OSError:
        text = "# Benchmarks\n"
    if begin in text and end in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    elif heading in text:
        start = text.index(heading) + len(heading)
        text = text[:start] + "\n\n" + block + text[start:]
    else:
        notes = text.find("\n## Notes")
        section = f"\n{heading}\n\n{block}\n"
        text = text + section if notes < 0 else text[:notes] + "\n" + section + text[notes:]
    with open(report, "w") as handle:
        handle.write(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runner", default=os.environ.get("BENCH_RUNNER") or os.path.join(ROOT, ".build", "release", "runner"))
    parser.add_argument("--counts", default="100,500", help="two image counts; per image is the slope (default 100,500)")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved perf stat rounds (default 5)")
    parser.add_argument("--tools", default="runner,c2,pyvips-t,pillow",
                        help="runner,c2,pyvips-t,pyvips-p,pillow,vt50 (default runner,c2,pyvips-t,pillow)")
    parser.add_argument("--settle", type=float, default=10,
                        help="before each perf run, wait up to this many seconds for other load to fall below "
                             "0.25 cores (default 10; 300 s in all)")
    parser.add_argument("--no-callgrind", action="store_true")
    parser.add_argument("--no-strace", action="store_true")
    parser.add_argument("--no-perf", action="store_true")
    parser.add_argument("--write", metavar="REPORT", help="put the tables into REPORT's \"## Fixed cost per image\"")
    parser.add_argument("--merge", action="store_true",
                        help="keep bench/cache/runs/fixedcost.json's other results: replace only what this run measures")
    args = parser.parse_args()
    args.runner = os.path.abspath(args.runner)
    counts = sorted(int(c) for c in args.counts.split(","))
    files = tiny_files()
    if len(files) < counts[-1]:
        sys.exit(f"fixedcost: {len(files)} tiny files, fewer than {counts[-1]}")
    reference = compile_reference()
    available = tools(args, reference)
    chosen = args.tools.split(",")
    unknown = set(chosen) - set(available)
    if unknown:
        sys.exit(f"fixedcost: unknown tools {', '.join(sorted(unknown))}")
    workroot = os.path.join(CACHE, "runs", "fixedcost")
    os.makedirs(workroot, exist_ok=True)
    for path in files[:counts[-1]]:  # page cache
        with open(path, "rb") as handle:
            handle.read()
    load_before = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    results = {"date": time.strftime("%Y-%m-%d"), "command": "python3 bench/fixedcost.py " + " ".join(sys.argv[1:]),
               "counts": counts, "repeats": args.repeats, "tools": {}}
    sys.path.insert(0, BENCH)
    import bench  # noqa: E402
    results["runner"] = bench.versions(args.runner)["runner"]
    path = os.path.join(CACHE, "runs", "fixedcost.json")
    measuring = not (args.no_perf and args.no_callgrind and args.no_strace)
    if args.merge and os.path.exists(path):
        with open(path) as handle:
            kept = json.load(handle)
        if kept.get("counts") == counts:
            results["tools"] = kept.get("tools", {})
            if measuring:
                results["command"] = kept.get("command", "") + "; " + results["command"]
            else:  # only rendering (--write): everything as it was measured
                results.update({k: kept[k] for k in ("date", "command", "runner", "load") if k in kept})
    for key in chosen:
        results["tools"].setdefault(key, {})["label"] = available[key][0]

    if not args.no_perf:
        settler = bench.Settler(args.settle, 300)
        runs = collections.defaultdict(list)
        for round_index in range(args.repeats):
            for count in counts:
                for key in chosen:
                    label, command, extra = available[key]
                    workdir, outdir, listfile = prepare(workroot, key, count, files)
                    settler.wait()
                    run = perf_run(command(outdir, listfile, workdir), dict(os.environ, **extra),
                                   os.path.join(workdir, "perf.txt"))
                    run["outputs"] = outputs_made(outdir)
                    runs[(key, count)].append(run)
                    log(f"perf round {round_index + 1}/{args.repeats} {key:9} n={count:4} wall {run['wall']:6.2f}s "
                        f"task {run['task_ms']:8.0f} ms  other load {run['other']:4.2f}  exit {run['code']}  "
                        f"{run['outputs']}/{count}")
        for key in chosen:
            med = {count: {m: statistics.median(r[m] for r in runs[(key, count)])
                           for m in ("wall", "task_ms", "faults", "switches")} for count in counts}
            lo, hi = med[counts[0]], med[counts[-1]]
            timing = {"wall_per": 1000 * slope(lo["wall"], hi["wall"], counts),
                      "task_per": slope(lo["task_ms"], hi["task_ms"], counts),
                      "faults_per": slope(lo["faults"], hi["faults"], counts),
                      "switches_per": slope(lo["switches"], hi["switches"], counts), "medians": med,
                      "raw": {str(c): runs[(key, c)] for c in counts}}
            timing["wall_start"] = 1000 * lo["wall"] - counts[0] * timing["wall_per"]
            timing["task_start"] = lo["task_ms"] - counts[0] * timing["task_per"]
            timing["other"] = statistics.median(r["other"] for c in counts for r in runs[(key, c)])
            results["tools"][key]["timing"] = timing
            results["tools"][key]["outputs"] = f"{min(r['outputs'] for r in runs[(key, counts[-1])])}/{counts[-1]}"

    if not args.no_callgrind:
        for key in chosen:
            label, command, extra = available[key]
            by_count = {}
            for count in counts:
                workdir, outdir, listfile = prepare(workroot, key, count, files)
                started = time.perf_counter()
                by_count[count] = callgrind_run(command(outdir, listfile, workdir), dict(os.environ, **extra),
                                                os.path.join(workroot, f"callgrind-{key}-{count}"))
                log(f"callgrind {key:9} n={count:4} {sum(p['ir'] for p in by_count[count]['processes']) / 1e9:7.2f} G "
                    f"instructions in {len(by_count[count]['processes'])} processes ({time.perf_counter() - started:.0f} s, "
                    f"{outputs_made(outdir)}/{count} outputs, exit {by_count[count]['code']})")
            low, high = (sum(p["ir"] for p in by_count[c]["processes"]) for c in (counts[0], counts[-1]))
            per = slope(low, high, counts)
            results["tools"][key]["instructions"] = {
                "per_image": per, "start": low - counts[0] * per,
                "by_count": {str(c): [{"cmd": p["cmd"][:200], "ir": p["ir"]} for p in by_count[c]["processes"]]
                             for c in counts}}
            if key == "runner":
                results["tools"][key]["callgrind_dirs"] = {str(c): os.path.join(workroot, f"callgrind-{key}-{c}")
                                                           for c in counts}
                results["tools"][key]["breakdown"] = runner_breakdown(by_count, counts)
                results["tools"][key]["top"] = {role: top_functions(by_count, counts, role)
                                                for role in ("worker", "supervisor")}

    runner_row = results["tools"].get("runner", {})
    if args.no_callgrind and runner_row.get("callgrind_dirs"):
        # Recompute runner's breakdown (RUNNER_FUNCTIONS may have changed) from the kept files.
        by_count = {}
        for count in counts:
            folder = runner_row["callgrind_dirs"][str(count)]
            if not os.path.isdir(folder):
                by_count = None
                break
            processes = []
            for name in sorted(os.listdir(folder)):
                with open(os.path.join(folder, name), errors="replace") as handle:
                    command = next((line[4:].strip() for line in handle if line.startswith("cmd:")), "")
                processes.append({"file": os.path.join(folder, name), "cmd": command})
            by_count[count] = {"processes": processes}
        if by_count:
            runner_row["breakdown"] = runner_breakdown_from(by_count, counts, runner_row)

    if not args.no_strace:
        for key in chosen:
            label, command, extra = available[key]
            by_count = {}
            for count in counts:
                workdir, outdir, listfile = prepare(workroot, key, count, files)
                by_count[count] = strace_run(command(outdir, listfile, workdir), dict(os.environ, **extra),
                                             os.path.join(workdir, "strace.txt"))
            lo, hi = by_count[counts[0]]["calls"], by_count[counts[-1]]["calls"]
            per_image = {name: slope(lo.get(name, 0), hi[name], counts) for name in hi}
            results["tools"][key]["syscalls"] = {
                "per_image": dict(sorted(per_image.items(), key=lambda item: -item[1])),
                "per_image_total": slope(sum(lo.values()), sum(hi.values()), counts),
                "by_count": {str(c): by_count[c]["calls"] for c in counts}}
            log(f"strace {key:9} {results['tools'][key]['syscalls']['per_image_total']:.1f} syscalls per image")

    if measuring or "load" not in results:
        results["load"] = f"{load_before} / " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
    with open(path, "w") as handle:
        json.dump(results, handle, indent=1)
    block = render(results, counts)
    print(block)
    if args.write:
        write_section(args.write, block)
        log(f"wrote the tables into {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
