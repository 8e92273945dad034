#!/usr/bin/env python3
"""runner's SSIMULACRA2 against the reference implementations, in time (issue 44).

Two sets of pairs:
- the table's: fixtures/ssimulacra2/reference.tsv (179 pairs of 8 px to 320 px images);
- large: each of the first N photos of the large corpus fit inside 1920 px as a PNG, against its
  WebP at quality 80 (made once under bench/cache/ssimulacra2-speed).

Measured as a user would run each: `runner compare ORIGINAL FILE...` (one process per original,
every file of it after; it decodes WebP, AVIF and JPEG itself), libjxl's `ssimulacra2 ORIGINAL
DISTORTED` (one process per pair, its only form; PNGs decoded beforehand by the vips CLI, which is
not timed), PyPI's port (one Python process over every pair, PNGs). Wall seconds and CPU seconds
(user + sys of the children, wait4), best of --rounds.

    python3 bench/ssimulacra2-speed.py --runner .build/release/runner --write BENCHMARKS.md
"""
import argparse, os, resource, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TABLE = os.path.join(ROOT, "fixtures", "ssimulacra2")
VIPS_BIN = os.path.join(ROOT, ".build", "libvips-8.16", "bin")
PYPI_CALL = """
import sys
from scipy import ndimage
plain = ndimage.gaussian_filter
def with_axes(input, sigma, axes=None, **options):
    if axes is not None:
        sigma = [sigma if axis in axes else 0.0 for axis in range(input.ndim)]
    return plain(input, sigma, **options)
ndimage.gaussian_filter = with_axes
import ssimulacra2
pairs = [line.split("\\t") for line in sys.stdin.read().splitlines()]
for reference, distorted in pairs:
    ssimulacra2.compute_ssimulacra2_with_alpha(reference, distorted)
"""


def timed(commands, stdin=None):
    """Runs `commands` one after another: (wall, CPU) seconds."""
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    for command in commands:
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, input=stdin, text=stdin is not None)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.monotonic() - started, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def vips(*arguments):
    subprocess.run([os.path.join(VIPS_BIN, "vips"), *arguments], check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "LD_LIBRARY_PATH": os.path.join(ROOT, ".build", "libvips-8.16", "lib", "x86_64-linux-gnu")})


def as_png(path, folder):
    """`path` decoded to a PNG by the vips CLI (a PNG as it is)."""
    if path.endswith(".png"):
        return path
    target = os.path.join(folder, os.path.basename(path) + ".png")
    if not os.path.exists(target):
        vips("copy", path, target)
    return target


def table_pairs():
    lines = open(os.path.join(TABLE, "reference.tsv")).read().splitlines()[1:]
    return [(os.path.join(TABLE, a), os.path.join(TABLE, b)) for a, b, *_ in (line.split("\t") for line in lines)]


def large_pairs(count, folder):
    corpus = os.path.join(HERE, "cache", "corpus", "large")
    photos = sorted(name for name in os.listdir(corpus) if name.endswith(".jpg"))[:count]
    pairs = []
    for name in photos:
        reference, distorted = os.path.join(folder, name + ".png"), os.path.join(folder, name + ".webp")
        if not os.path.exists(distorted):
            vips("thumbnail", os.path.join(corpus, name), reference, "1920")
            vips("copy", reference, distorted + "[Q=80]")
        pairs.append((reference, distorted))
    return pairs


def measure(name, pairs, args, folder):
    by_reference = {}
    for reference, distorted in pairs:
        by_reference.setdefault(reference, []).append(distorted)
    pngs = [(reference, as_png(distorted, folder)) for reference, distorted in pairs]
    runs = {
        "runner compare": lambda: timed([[args.runner, "compare", reference, *files] for reference, files in by_reference.items()]),
        "libjxl ssimulacra2": lambda: timed([[args.ssimulacra2, reference, png] for reference, png in pngs]),
        "PyPI ssimulacra2": lambda: timed([["/usr/bin/python3", "-c", PYPI_CALL]], stdin="\n".join(f"{a}\t{b}" for a, b in pngs)),
    }
    results = {}
    for tool, run in runs.items():
        if tool.startswith("PyPI"):
            os.environ["PYTHONPATH"] = os.path.join(ROOT, ".build", "python-references")
        best = min((run() for _ in range(args.rounds)), key=lambda measured: measured[1])
        results[tool] = best
        print(f"ssimulacra2-speed: {name}: {tool}: {best[0]:.2f} s wall, {best[1]:.2f} s CPU", file=sys.stderr, flush=True)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runner", required=True)
    parser.add_argument("--ssimulacra2", default=os.path.join(ROOT, ".build", "ssimulacra2-ref", "bin", "ssimulacra2"))
    parser.add_argument("--large", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write")
    args = parser.parse_args()
    args.runner = os.path.abspath(args.runner)
    folder = os.path.join(HERE, "cache", "ssimulacra2-speed")
    os.makedirs(folder, exist_ok=True)
    sets = {f"the table's {len(table_pairs())} pairs (8-320 px)": table_pairs(),
            f"{args.large} photos at 1920 px against WebP q80": large_pairs(args.large, folder)}
    results = {name: measure(name, pairs, args, folder) for name, pairs in sets.items()}
    lines = ["| pairs | tool | wall s | CPU s | CPU / runner's |", "| --- | --- | ---: | ---: | ---: |"]
    for name, tools in results.items():
        ours = tools["runner compare"][1]
        lines += [f"| {name} | {tool} | {wall:.2f} | {cpu:.2f} | {cpu / ours:.2f}x |" for tool, (wall, cpu) in tools.items()]
    print("\n".join(lines))
    if args.write:
        text = open(args.write).read()
        begin, end = "<!-- ssimulacra2-speed:begin -->", "<!-- ssimulacra2-speed:end -->"
        block = begin + "\n" + "\n".join(lines) + "\n" + end
        if begin in text:
            text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
        else:
            text = text.rstrip("\n") + "\n\n### SSIMULACRA2 against the reference implementations\n\n" + block + "\n"
        open(args.write, "w").write(text)


if __name__ == "__main__":
    main()
