#!/usr/bin/env python3
"""Benchmark peer: Pillow thumbnails in a multiprocessing pool.

    pillow_thumbs.py PROCESSES OUTDIR LISTFILE

Each image: Image.open, draft('RGB', (512, 512)) (JPEG DCT scaling: decode at 1/2, 1/4 or 1/8 size,
never below 512x512), thumbnail((256, 256)) (fit inside, Pillow's default filter and reducing_gap),
save as JPEG quality 80 (Pillow writes no metadata unless asked). Exits 1 if any image failed.
"""
import multiprocessing
import os
import sys

from PIL import Image


def make(job):
    source, output = job
    try:
        with Image.open(source) as image:
            image.draft("RGB", (512, 512))
            image = image.convert("RGB")
            image.thumbnail((256, 256))
            image.save(output, "JPEG", quality=80)
        return None
    except Exception as error:  # report and go on, like the other peers
        return f"{source}: {error}"


def main():
    processes, outdir, listfile = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    with open(listfile) as handle:
        sources = [line.rstrip("\n") for line in handle if line.strip()]
    jobs = [(s, os.path.join(outdir, os.path.splitext(os.path.basename(s))[0] + ".jpg")) for s in sources]
    failures = 0
    with multiprocessing.Pool(processes) as pool:
        for error in pool.imap_unordered(make, jobs, chunksize=4):
            if error:
                failures += 1
                print(f"pillow: {error}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
