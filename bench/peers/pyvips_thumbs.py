#!/usr/bin/env python3
"""Benchmark peer: pyvips thumbnails, in threads or in processes.

    pyvips_thumbs.py threads|processes N OUTDIR LISTFILE [WIDTH:FORMAT:Q ...]

Each image: pyvips.Image.thumbnail(file, 256, height=256) (fit inside, shrink-on-load), then
jpegsave(Q=80, strip=True); libvips with one worker thread per image (VIPS_CONCURRENCY=1) and the
operation cache off, as in reference.c. `threads`: one process, N Python threads (pyvips lets go of
the GIL inside libvips calls). `processes`: a multiprocessing pool of N. Exits 1 if any image failed.

With output specs (the responsive set, e.g. 1920:webp:80 1280:webp:80 1280:jpeg:82 640:webp:80
320:webp:80) each image is decoded once, as reference.c does: thumbnail(file, WIDEST,
height=10000000, size="down") rendered to memory (copy_memory), every narrower width
thumbnail_image of that (in memory too when two formats share it), saved as OUTDIR/<stem>-WIDTH.webp
(webpsave Q, strip) or OUTDIR/<stem>-WIDTH.jpg (jpegsave Q, strip).
"""
import os
import sys

os.environ["VIPS_CONCURRENCY"] = "1"  # read by libvips when it starts, so before the import
import pyvips  # noqa: E402

pyvips.cache_set_max(0)
UNBOUNDED = 10000000  # VIPS_MAX_COORD: no height limit


def stem_of(source):
    return os.path.splitext(os.path.basename(source))[0]


def make(job):
    source, outdir, specs = job
    try:
        if not specs:
            pyvips.Image.thumbnail(source, 256, height=256).jpegsave(
                os.path.join(outdir, stem_of(source) + ".jpg"), Q=80, strip=True)
            return None
        widest = max(width for width, _, _ in specs)
        big = pyvips.Image.thumbnail(source, widest, height=UNBOUNDED, size="down")
        if len(specs) > 1:
            big = big.copy_memory()
        made = {}
        for width, kind, quality in specs:
            if width not in made:
                image = big if width == widest else big.thumbnail_image(width, height=UNBOUNDED, size="down")
                if width != widest and sum(1 for w, _, _ in specs if w == width) > 1:
                    image = image.copy_memory()
                made[width] = image
            path = os.path.join(outdir, f"{stem_of(source)}-{width}.{'webp' if kind == 'webp' else 'jpg'}")
            if kind == "webp":
                made[width].webpsave(path, Q=quality, strip=True)
            else:
                made[width].jpegsave(path, Q=quality, strip=True)
        return None
    except Exception as error:
        return f"{source}: {error}"


def main():
    mode, count, outdir, listfile = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    specs = []
    for text in sys.argv[5:]:
        width, kind, quality = text.split(":")
        if kind not in ("webp", "jpeg"):
            print(f"pyvips: bad output spec {text!r} (WIDTH:webp|jpeg:Q)", file=sys.stderr)
            return 2
        specs.append((int(width), kind, int(quality)))
    with open(listfile) as handle:
        sources = [line.rstrip("\n") for line in handle if line.strip()]
    jobs = [(s, outdir, specs) for s in sources]
    if mode == "threads":
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(count) as pool:
            errors = list(pool.map(make, jobs))
    elif mode == "processes":
        import multiprocessing
        with multiprocessing.Pool(count) as pool:
            errors = list(pool.imap_unordered(make, jobs, chunksize=1 if specs and max(w for w, _, _ in specs) > 256 else 4))
    else:
        print("usage: pyvips_thumbs.py threads|processes N OUTDIR LISTFILE [WIDTH:FORMAT:Q ...]", file=sys.stderr)
        return 2
    errors = [e for e in errors if e]
    for error in errors:
        print(f"pyvips: {error}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
