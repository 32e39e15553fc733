#!/usr/bin/env python3
"""Writes photo-like 12 MP JPEGs for timing `clipidx build`.

Each image is 4000x3000: smooth colour gradients (sky, walls) plus blurred
noise at two scales (texture, sensor grain), saved by Pillow at quality 90
with 4:2:0 chroma, about 3.0 MB each, near what a phone writes for a
12 MP photo. The noise makes the entropy decoding as busy as a real photo's
(flat synthetic images decode several times faster).

    /usr/bin/python3 internal/anchors/photolike_jpegs.py OUT [--count 12] [--seed 1]

Measures a build's marginal time per photo as in the README:

    photolike_jpegs.py /tmp/jp12 --count 12; photolike_jpegs.py /tmp/jp4 --count 4
    time clipidx --model /tmp/h14 --db /tmp/b12.db build /tmp/jp12   # fresh DBs
    time clipidx --model /tmp/h14 --db /tmp/b4.db build /tmp/jp4
    (t12 - t4) / 8, against clipidx bench model --images 4 --texts 0

The first files of a larger set are the same as a smaller set's (same seed).
"""

import argparse
import os

import numpy as np
from PIL import Image, ImageFilter

W, H = 4000, 3000


def photo(i, rng, yy, xx):
    base = np.stack([
        128 + 80 * np.sin(xx / (300 + 37 * i) + i) * np.cos(yy / (410 - 13 * i)),
        128 + 70 * np.cos(xx / (520 - 29 * i) - yy / (700 + 11 * i)),
        128 + 60 * np.sin((xx + yy) / (260 + 17 * i) + 2 * i),
    ], -1)
    coarse = rng.normal(0, 1, (H // 8, W // 8, 3)).astype(np.float32)
    coarse = Image.fromarray(np.clip(128 + 40 * coarse, 0, 255).astype(np.uint8))
    coarse = np.asarray(coarse.resize((W, H), Image.BICUBIC), dtype=np.float32) - 128
    grain = rng.normal(0, 6, (H, W, 3)).astype(np.float32)
    img = np.clip(base + 0.8 * coarse + grain, 0, 255).astype(np.uint8)
    return Image.fromarray(img).filter(ImageFilter.GaussianBlur(0.6))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--count", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)
    for i in range(a.count):
        path = os.path.join(a.out, f"p{i:02d}.jpg")
        photo(i, rng, yy, xx).save(path, quality=90, subsampling=2)
        print(path, os.path.getsize(path))


if __name__ == "__main__":
    main()
