#!/usr/bin/env python3
"""Perceptual quality targets (issue 44): the responsive set of the large corpus (WebP at 1920, 1280,
640 and 320 px and JPEG at 1280, fit inside) at the fixed quality 80 against a SSIMULACRA2 target
per format, the target set to the score quality 80 reaches on 90% of that format's outputs.

1. Unmeasured: the set as lossless PNG (the exact pixels each encoder is given) and at quality 80;
   every quality-80 file scored against its PNG with `runner compare`, per format; the targets are
   those scores' 10th percentiles.
2. Rounds alternate the fixed job and the target job (ABBA), each from a fresh state and no outputs:
   CPU seconds of the process tree (wait4, workers included) and bytes written. Then each job's
   up-to-date rerun, alternating too.
3. Every file the target job wrote is scored again with `runner compare` against its PNG: none may be
   below its format's target.
4. Levers, one run each: what each encoder setting buys on top of the plain target.

    python3 bench/quality.py --runner .build/release/runner --rounds 3 --write BENCHMARKS.md
"""
import argparse, json, os, resource, shutil, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
WIDTHS = [1920, 1280, 640, 320]
JPEG_WIDTH = 1280
EXT = {"webp": "webp", "jpeg": "jpg", "png": "png"}


def outputs(webp, jpeg, png=False):
    """The set's five outputs; `webp` and `jpeg` are format objects (PNG instead with `png`)."""
    made = []
    for width in WIDTHS:
        made.append((f"webp{width}", width, {"type": "png", "compression": 1} if png else webp))
    made.append((f"jpeg{JPEG_WIDTH}", JPEG_WIDTH, {"type": "png", "compression": 1} if png else jpeg))
    return [{"name": name, "path": f"out/{name}/{{stem}}.{EXT[fmt['type']]}",
             "chain": [{"op": "thumbnail", "width": width, "fit": "inside"}], "format": fmt} for name, width, fmt in made]


def write_job(folder, corpus, job_outputs):
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "job.json")
    with open(path, "w") as handle:
        json.dump({"version": 1, "sources": [{"glob": os.path.join(corpus, "*.jpg")}], "outputs": job_outputs,
                   "state": "state.sqlite"}, handle)
    return path


def fresh(folder):
    for name in os.listdir(folder):
        if name != "job.json":
            target = os.path.join(folder, name)
            shutil.rmtree(target) if os.path.isdir(target) else os.unlink(target)


def measured(runner, job, *flags):
    """CPU seconds (user + sys of runner and its workers) and wall seconds of one run."""
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    subprocess.run([runner, job, "--quiet", *flags], check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), time.monotonic() - started


def files_of(folder):
    found = {}
    for root, _, names in os.walk(os.path.join(folder, "out")):
        for name in names:
            path = os.path.join(root, name)
            found[os.path.relpath(path, os.path.join(folder, "out"))] = os.path.getsize(path)
    return found


def scores(runner, reference_folder, folder):
    """Every output of `folder` scored against its PNG in `reference_folder`: {output name: [score, ...]}."""
    result = {}
    for name in sorted(os.listdir(os.path.join(folder, "out"))):
        png_folder = os.path.join(reference_folder, "out", "webp" + name.removeprefix("webp").removeprefix("jpeg"))
        for file in sorted(os.listdir(os.path.join(folder, "out", name))):
            stem = os.path.splitext(file)[0]
            answer = subprocess.run([runner, "compare", os.path.join(png_folder, stem + ".png"), os.path.join(folder, "out", name, file)],
                                    check=True, capture_output=True, text=True)
            result.setdefault(name, []).append(float(answer.stdout.split()[0]))
    return result


def reached_by_90_percent(values):
    """The highest score at least 90% of `values` reach: the floor(n / 10) + 1-th smallest."""
    return sorted(values)[len(values) // 10]


def recorded(folder):
    """The target job's own record: quality, score and target of each output."""
    import sqlite3
    with sqlite3.connect(os.path.join(folder, "state.sqlite")) as db:
        return db.execute("SELECT output_name, quality, quality_score, quality_target, quality_encodes, quality_capped, "
                          "quality_default_bytes, bytes FROM item WHERE state = 'done'").fetchall()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runner", required=True)
    parser.add_argument("--corpus", default=os.path.join(HERE, "cache", "corpus", "large"))
    parser.add_argument("--work", default=os.path.join(HERE, "cache", "quality"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--every", type=int, default=1, help="every Nth photo of the corpus (by name)")
    parser.add_argument("--no-levers", action="store_true")
    parser.add_argument("--write", help="BENCHMARKS.md: fill its quality-targets section")
    args = parser.parse_args()
    runner = os.path.abspath(args.runner)
    work = os.path.abspath(args.work)
    corpus = os.path.abspath(args.corpus)
    if args.every > 1:
        picked = os.path.join(work, f"every-{args.every}")
        os.makedirs(picked, exist_ok=True)
        for name in sorted(n for n in os.listdir(corpus) if n.endswith(".jpg"))[::args.every]:
            if not os.path.exists(os.path.join(picked, name)):
                os.symlink(os.path.join(corpus, name), os.path.join(picked, name))
        corpus = picked
    photos = len([name for name in os.listdir(corpus) if name.endswith(".jpg")])
    log = lambda text: print(f"quality: {text}", file=sys.stderr, flush=True)

    reference = os.path.join(work, "png")
    png_job = write_job(reference, corpus, outputs(None, None, png=True))
    if not os.path.isdir(os.path.join(reference, "out")):
        log(f"the set as PNG ({photos} photos)")
        subprocess.run([runner, png_job, "--quiet"], check=True, stdout=subprocess.DEVNULL)
    fixed_folder = os.path.join(work, "fixed")
    fixed_job = write_job(fixed_folder, corpus, outputs({"type": "webp", "quality": 80}, {"type": "jpeg", "quality": 80}))
    fresh(fixed_folder)
    measured(runner, fixed_job)
    log("scoring quality 80 against the PNGs")
    fixed_scores = scores(runner, reference, fixed_folder)
    webp_scores = [s for name, values in fixed_scores.items() if name.startswith("webp") for s in values]
    jpeg_scores = fixed_scores[f"jpeg{JPEG_WIDTH}"]
    targets = {"webp": reached_by_90_percent(webp_scores), "jpeg": reached_by_90_percent(jpeg_scores)}
    log(f"targets {targets}")

    def target_outputs(webp_extra=None, jpeg_extra=None):
        return outputs({"type": "webp", "quality": {"ssimulacra2": targets["webp"]}, **(webp_extra or {})},
                       {"type": "jpeg", "quality": {"ssimulacra2": targets["jpeg"]}, **(jpeg_extra or {})})

    # The target job's encoder settings: JPEG's lossless levers (same pixels, fewer bytes, no search cost).
    best_webp, best_jpeg = {}, {"optimizeCoding": True, "progressive": True}
    target_folder = os.path.join(work, "target")
    target_job = write_job(target_folder, corpus, target_outputs(best_webp, best_jpeg))
    cpu = {"fixed": [], "target": []}
    for number in range(args.rounds):
        for name in (("fixed", "target") if number % 2 == 0 else ("target", "fixed")):
            folder, job = (fixed_folder, fixed_job) if name == "fixed" else (target_folder, target_job)
            fresh(folder)
            seconds, wall = measured(runner, job)
            cpu[name].append(seconds)
            log(f"round {number + 1} {name}: {seconds:.1f} s CPU, {wall:.1f} s wall")
    rerun = {"fixed": [], "target": []}
    for number in range(args.rounds):
        for name in (("fixed", "target") if number % 2 == 0 else ("target", "fixed")):
            rerun[name].append(measured(runner, fixed_job if name == "fixed" else target_job)[0])
    fixed_bytes, target_bytes = files_of(fixed_folder), files_of(target_folder)
    log("scoring the target job's files against the PNGs")
    target_scores = scores(runner, reference, target_folder)
    below = [(name, s) for name, values in target_scores.items() for s in values
             if s < targets["jpeg" if name.startswith("jpeg") else "webp"] - 1e-9]
    rows = recorded(target_folder)

    levers = []
    if not args.no_levers:
        for label, webp_extra, jpeg_extra in [("the target alone (the quality-80 job's encoder settings)", None, None),
                                              ("+ JPEG optimizeCoding and progressive (the target job)", best_webp, best_jpeg),
                                              ("+ WebP effort 6", {"effort": 6}, best_jpeg)]:
            folder = os.path.join(work, "lever")
            job = write_job(folder, corpus, target_outputs(webp_extra, jpeg_extra))
            fresh(folder)
            seconds, _ = measured(runner, job)
            made = files_of(folder)
            levers.append({"lever": label, "bytes": sum(made.values()), "cpu": seconds})
            log(f"lever {label}: {sum(made.values())} bytes, {seconds:.1f} s CPU")

    calibration = calibrate(runner, corpus, work) if not args.no_levers else {}

    result = {
        "calibration": calibration, "every": "every photo" if args.every == 1 else f"every {args.every}th by name",
        "photos": photos, "outputs": len(target_bytes), "targets": targets,
        "q80Scores": {"webp": [min(webp_scores), max(webp_scores)], "jpeg": [min(jpeg_scores), max(jpeg_scores)]},
        "q80BelowTarget": sum(1 for s in webp_scores if s < targets["webp"]) + sum(1 for s in jpeg_scores if s < targets["jpeg"]),
        "fixedBytes": sum(fixed_bytes.values()), "targetBytes": sum(target_bytes.values()),
        "savedPercent": round(100 * (1 - sum(target_bytes.values()) / sum(fixed_bytes.values())), 2),
        "cpu": cpu, "cpuRatio": round(statistics.median(cpu["target"]) / statistics.median(cpu["fixed"]), 3),
        "rerun": rerun, "rerunRatio": round(statistics.median(rerun["target"]) / statistics.median(rerun["fixed"]), 3),
        "belowTarget": below, "minTargetScore": {name: min(values) for name, values in target_scores.items()},
        "encodesPerOutput": round(sum(row[4] for row in rows) / max(len(rows), 1), 2),
        "capped": sum(row[5] or 0 for row in rows),
        "qualities": {name: [min(r[1] for r in rows if r[0] == name), max(r[1] for r in rows if r[0] == name)]
                      for name in sorted({row[0] for row in rows})},
        "levers": levers,
    }
    print(json.dumps(result, indent=1))
    if args.write:
        write_section(args.write, result, args.rounds)


def calibrate(runner, corpus, work):
    """Which score each fixed quality gives on the set's 1280 px files: {format: {quality: (median, 90% reach)}}.
    Each job writes its own PNG beside: the same decode, so the same pixels (the set's 1280 px PNG is
    scaled from its 1920 px frame and may differ by a row)."""
    table = {}
    for fmt in ("webp", "jpeg"):
        for quality in (50, 60, 70, 75, 80, 85, 90):
            folder = os.path.join(work, f"calibrate-{fmt}-{quality}")
            chain = [{"op": "thumbnail", "width": 1280, "fit": "inside"}]
            job = write_job(folder, corpus, [{"name": "encoded", "path": f"out/encoded/{{stem}}.{EXT[fmt]}", "chain": chain,
                                              "format": {"type": fmt, "quality": quality}},
                                             {"name": "exact", "path": "out/exact/{stem}.png", "chain": chain,
                                              "format": {"type": "png", "compression": 1}}])
            fresh(folder)
            subprocess.run([runner, job, "--quiet"], check=True, stdout=subprocess.DEVNULL)
            values = []
            for file in sorted(os.listdir(os.path.join(folder, "out", "encoded"))):
                exact = os.path.join(folder, "out", "exact", os.path.splitext(file)[0] + ".png")
                answer = subprocess.run([runner, "compare", exact, os.path.join(folder, "out", "encoded", file)],
                                        check=True, capture_output=True, text=True)
                values.append(float(answer.stdout.split()[0]))
            table.setdefault(fmt, {})[quality] = (round(statistics.median(values), 1), round(reached_by_90_percent(values), 1))
    return table


def write_section(path, result, rounds):
    fixed, target = statistics.median(result["cpu"]["fixed"]), statistics.median(result["cpu"]["target"])
    lines = [
        f"{result['photos']} photos of the large corpus ({result['every']}), {result['outputs']} files: WebP at 1920, 1280, 640 and 320 px and JPEG at "
        f"1280 px (fit inside). Targets (SSIMULACRA2, the score quality 80 reaches on 90% of the format's files): "
        f"WebP {result['targets']['webp']}, JPEG {result['targets']['jpeg']}. Quality 80 scores "
        f"{result['q80Scores']['webp'][0]:.1f}-{result['q80Scores']['webp'][1]:.1f} (WebP) and "
        f"{result['q80Scores']['jpeg'][0]:.1f}-{result['q80Scores']['jpeg'][1]:.1f} (JPEG); {result['q80BelowTarget']} of its files are below them.",
        "",
        "| | quality 80 | target | target / q80 |",
        "| --- | ---: | ---: | ---: |",
        f"| bytes | {result['fixedBytes']:,} | {result['targetBytes']:,} | {result['targetBytes'] / result['fixedBytes']:.3f} "
        f"({result['savedPercent']:.1f}% fewer) |",
        f"| CPU, first run (median of {rounds}, s) | {fixed:.1f} | {target:.1f} | {result['cpuRatio']:.2f}x |",
        f"| CPU, up-to-date rerun (median of {rounds}, s) | {statistics.median(result['rerun']['fixed']):.2f} | "
        f"{statistics.median(result['rerun']['target']):.2f} | {result['rerunRatio']:.2f}x |",
        "",
        f"Every target file scored again with `runner compare`: {len(result['belowTarget'])} below its target; lowest per output: "
        + ", ".join(f"{name} {score:.2f}" for name, score in sorted(result["minTargetScore"].items())) + ". "
        f"{result['encodesPerOutput']} encodes per output (the quality-80 job makes 1), {result['capped']} stopped at maxEncodes. "
        "Qualities chosen: " + ", ".join(f"{name} q{low}-q{high}" for name, (low, high) in result["qualities"].items()) + ".",
    ]
    if result["calibration"]:
        qualities = sorted(result["calibration"]["webp"])
        lines += ["", "Which SSIMULACRA2 score a fixed quality gives on the set's 1280 px files (median; the score 90% of them reach):", "",
                  "| format | " + " | ".join(f"q{q}" for q in qualities) + " |", "| --- |" + " ---: |" * len(qualities)]
        lines += [f"| {fmt} | " + " | ".join(f"{median} ({p10})" for median, p10 in (result["calibration"][fmt][q] for q in qualities)) + " |"
                  for fmt in ("webp", "jpeg")]
    if result["levers"]:
        lines += ["", "| lever (one run each) | bytes | against q80 | CPU s |", "| --- | ---: | ---: | ---: |"]
        lines += [f"| {lever['lever']} | {lever['bytes']:,} | {100 * (lever['bytes'] / result['fixedBytes'] - 1):+.1f}% | {lever['cpu']:.1f} |"
                  for lever in result["levers"]]
    text = open(path).read()
    begin, end = "<!-- quality:begin -->", "<!-- quality:end -->"
    block = begin + "\n" + "\n".join(lines) + "\n" + end
    if begin in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n## Perceptual quality targets\n\n" + block + "\n"
    open(path, "w").write(text)


if __name__ == "__main__":
    main()
