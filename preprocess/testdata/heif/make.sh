#!/bin/sh
# Regenerates the HEIC/AVIF test files and their heif-convert references.
# Needs Debian's python3-pil, python3-numpy, libheif-examples (heif-enc,
# heif-convert; libheif 1.15.1, x265, aom) and libavif-bin (avifenc).
# Run from this directory.
set -eu
/usr/bin/python3 - <<'PY'
import numpy as np
from PIL import Image
def photo(w, h, seed):
    # Smooth gradients, a saturated disc and hard edges: what exercises
    # chroma subsampling and the colour matrix.
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 128 + 100*np.sin(x/w*5 + seed)
    g = 128 + 100*np.cos(y/h*4)
    b = 255*(x+y)/(w+h)
    d = (x-w*0.6)**2 + (y-h*0.4)**2 < (min(w, h)*0.25)**2
    r[d], g[d], b[d] = 230, 20, 40
    r[:, :w//8] = 10; g[:h//8, :] = 250
    img = np.stack([r, g, b], -1) + rng.normal(0, 6, (h, w, 3))
    return np.clip(img, 0, 255)
Image.fromarray(photo(67, 45, 1).round().astype(np.uint8)).save('src.png')
p16 = (photo(64, 48, 2) * 257).round().astype(np.uint16)
# 16-bit RGB PNG: PIL cannot write it, so write it by hand.
import zlib, struct
def chunk(t, b): return struct.pack('>I', len(b)) + t + b + struct.pack('>I', zlib.crc32(t+b) & 0xffffffff)
raw = b''.join(b'\0' + row.astype('>u2').tobytes() for row in p16)
open('src16.png', 'wb').write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 64, 48, 16, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))
PY
enc() { out=$1; shift; heif-enc -q 80 "$@" -o "$out" >/dev/null; heif-convert "$out" "$out.png" >/dev/null; }
# libheif 1.15's heif-enc ignores --matrix_coefficients and --full_range_flag
# for PNG input (the files come out byte-identical and without a colr box),
# so the nclx variants are made by heif_test.go, which adds colr boxes to
# these files and compares with heif-convert at test time. It also wraps
# small images in a one-tile grid (the primary item is a grid).
enc yuv420.heic src.png
heif-convert yuv420.heic yuv420.heic.y4m >/dev/null # planes, for TestHEIFPlanesExact
enc yuv422.heic -p chroma=422 src.png
enc yuv444.heic -p chroma=444 src.png
enc yuv420_10bit.heic -b 10 src16.png
enc yuv420.avif -A src.png
enc yuv444.avif -A -p chroma=444 src.png
# 10-bit AVIF: Debian's heif-enc -A -b 10 aborts inside aom
# (write_color_config assertion), so libavif's avifenc (libavif-bin) makes it.
avifenc -d 10 -y 420 --min 10 --max 20 src16.png yuv420_10bit.avif >/dev/null
heif-convert yuv420_10bit.avif yuv420_10bit.avif.png >/dev/null
# libavif's own decodes (avifdec, libavif 0.11), for TestAVIFMatchesAvifdec.
avifdec -d 16 yuv420_10bit.avif yuv420_10bit.avif.avifdec.png >/dev/null
avifdec -d 8 yuv444.avif yuv444.avif.avifdec.png >/dev/null

# A HEIC whose EXIF says orientation 6 (heif-enc keeps the EXIF and adds no
# irot): libheif and heif-convert ignore it, and so must this package.
/usr/bin/python3 - <<'PY'
import numpy as np
from PIL import Image
y, x = np.mgrid[0:40, 0:64]
a = np.stack([x*4, y*6, (x+y)*2], -1).astype(np.uint8)
a[:10, :20] = (250, 30, 30)
im = Image.fromarray(a)
ex = im.getexif(); ex[0x0112] = 6
im.save('o6.jpg', quality=95, exif=ex.tobytes())
PY
enc exif6.heic o6.jpg
rm -f o6.jpg
rm -f src.png src16.png
