#!/usr/bin/env python3
"""Benchmark peer: Pillow thumbnails in a multiprocessing pool.

    pillow_thumbs.py PROCESSES OUTDIR LISTFILE [WIDTH:FORMAT:Q ...]

Each image: Image.open, draft('RGB', (512, 512)) (JPEG DCT scaling: decode at 1/2, 1/4 or 1/8 size,
never below 512x512), thumbnail((256, 256)) (fit inside, Pillow's default filter and reducing_gap),
save as JPEG quality 80 (Pillow writes no metadata unless asked). Exits 1 if any image failed.

With output specs (the responsive set, e.g. 1920:webp:80 1280:webp:80 1280:jpeg:82 640:webp:80
320:webp:80) each image is decoded once: draft('RGB', (2 * WIDEST, 1)) (the same 2x margin
thumbnail's reducing_gap keeps, so at 1920 wide most photos decode at full size, as libvips'
shrink-on-load does), then every width is resized from that decode the way thumbnail() resizes
(BICUBIC, reducing_gap=2.0; never enlarged) and saved once per format as OUTDIR/<stem>-WIDTH.webp
(quality Q, method 4: libvips' effort 4) or OUTDIR/<stem>-WIDTH.jpg (quality Q).
"""
import multiprocessing
import os
import sys

from PIL import Image

SPECS = []  # (width, format, quality); empty: the 256x256 thumbnail


def parse_specs(texts):
    specs = []
    for text in texts:
        width, kind, quality = text.split(":")
        if kind not in ("webp", "jpeg"):
            raise SystemExit(f"pillow: bad output spec {text!r} (WIDTH:webp|jpeg:Q)")
        specs.append((int(width), kind, int(quality)))
    return specs


def stem_of(source):
    return os.path.splitext(os.path.basename(source))[0]


def make(job):
    source, outdir, specs = job
    try:
        with Image.open(source) as image:
            if not specs:
                image.draft("RGB", (512, 512))
                image = image.convert("RGB")
                image.thumbnail((256, 256))
                image.save(os.path.join(outdir, stem_of(source) + ".jpg"), "JPEG", quality=80)
                return None
            widest = max(width for width, _, _ in specs)
            image.draft("RGB", (2 * widest, 1))
            image = image.convert("RGB")
            made = {}
            for width, kind, quality in specs:
                if width not in made:
                    if width >= image.width:
                        made[width] = image
                    else:
                        height = max(1, round(image.height * width / image.width))
                        made[width] = image.resize((width, height), Image.Resampling.BICUBIC, reducing_gap=2.0)
                path = os.path.join(outdir, f"{stem_of(source)}-{width}.{'webp' if kind == 'webp' else 'jpg'}")
                if kind == "webp":
                    made[width].save(path, "WEBP", quality=quality, method=4)
                else:
                    made[width].save(path, "JPEG", quality=quality)
        return None
    except Exception as error:  # report and go on, like the other peers
        return f"{source}: {error}"


def main():
    processes, outdir, listfile = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    specs = parse_specs(sys.argv[4:])
    with open(listfile) as handle:
        sources = [line.rstrip("\n") for line in handle if line.strip()]
    jobs = [(s, outdir, specs) for s in sources]
    failures = 0
    with multiprocessing.Pool(processes) as pool:
        for error in pool.imap_unordered(make, jobs, chunksize=1 if specs and max(w for w, _, _ in specs) > 256 else 4):
            if error:
                failures += 1
                print(f"pillow: {error}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
