#!/usr/bin/env python3
"""Benchmark peer: pyvips thumbnails, in threads or in processes.

    pyvips_thumbs.py threads|processes N OUTDIR LISTFILE

Each image: pyvips.Image.thumbnail(file, 256, height=256) (fit inside, shrink-on-load), then
jpegsave(Q=80, strip=True); libvips with one worker thread per image (VIPS_CONCURRENCY=1) and the
operation cache off, as in reference.c. `threads`: one process, N Python threads (pyvips lets go of
the GIL inside libvips calls). `processes`: a multiprocessing pool of N. Exits 1 if any image failed.
"""
import os
import sys

os.environ["VIPS_CONCURRENCY"] = "1"  # read by libvips when it starts, so before the import
import pyvips  # noqa: E402

pyvips.cache_set_max(0)


def make(job):
    source, output = job
    try:
        pyvips.Image.thumbnail(source, 256, height=256).jpegsave(output, Q=80, strip=True)
        return None
    except Exception as error:
        return f"{source}: {error}"


def main():
    mode, count, outdir, listfile = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    with open(listfile) as handle:
        sources = [line.rstrip("\n") for line in handle if line.strip()]
    jobs = [(s, os.path.join(outdir, os.path.splitext(os.path.basename(s))[0] + ".jpg")) for s in sources]
    if mode == "threads":
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(count) as pool:
            errors = list(pool.map(make, jobs))
    elif mode == "processes":
        import multiprocessing
        with multiprocessing.Pool(count) as pool:
            errors = list(pool.imap_unordered(make, jobs, chunksize=4))
    else:
        print("usage: pyvips_thumbs.py threads|processes N OUTDIR LISTFILE", file=sys.stderr)
        return 2
    errors = [e for e in errors if e]
    for error in errors:
        print(f"pyvips: {error}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
