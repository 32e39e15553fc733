#!/usr/bin/python3
"""Reference data for the preprocess tests (see README.md beside this file).

An independent numpy transcription of ../../../shared/docs/preprocess-spec.md
(sections 2-5), checked first against the shared fixture pixels, then used to
make references for images the fixtures do not cover. Needs Debian's
python3-numpy, python3-pil (Pillow 9.4) and libjpeg-turbo-progs (cjpeg, for
4:4:0 and 4:1:1 JPEGs); torch is not used: Debian ships
torch 1.13, whose antialiased bicubic is the float path the spec rules out.

Run from this directory: /usr/bin/python3 make_refs.py [SHARED_DIR]
"""
import hashlib
import io
import json
import math
import os
import subprocess
import sys

import numpy as np
from PIL import Image, ImageOps

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "..", "shared")
MEAN = (0.48145466, 0.4578275, 0.40821073)
STD = (0.26862954, 0.26130258, 0.27577711)


# ---- spec section 3: one 1-D pass of torch's uint8 antialiased bicubic ----
def cubic(x):
    a = -0.5
    t = abs(x)
    if t < 1:
        return ((a + 2) * t - (a + 3)) * t * t + 1
    if t < 2:
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return 0.0


def pass_weights(n_in, n_out):
    scale = n_in / n_out
    support = 2.0 * scale if scale >= 1 else 2.0
    invscale = 1.0 / scale if scale >= 1 else 1.0
    k = math.ceil(support) * 2 + 1
    starts, ws = [], []
    for i in range(n_out):
        center = scale * (i + 0.5)
        xmin = max(int(center - support + 0.5), 0)
        xsize = min(int(center + support + 0.5), n_in) - xmin
        xsize = min(max(xsize, 0), k)
        w = [cubic((xmin + j - center + 0.5) * invscale) for j in range(xsize)]
        total = sum(w)
        if total != 0:
            w = [v / total for v in w]
        starts.append(xmin)
        ws.append(w)
    wmax = max(max(w) for w in ws if w)
    prec = 22
    for p in range(22):
        if int(0.5 + wmax * (1 << (p + 1))) >= 1 << 15:
            prec = p
            break
    q = np.zeros((n_out, k), dtype=np.int64)
    idx = np.zeros((n_out, k), dtype=np.int64)
    for i, w in enumerate(ws):
        for j, v in enumerate(w):
            v *= 1 << prec
            q[i, j] = int(v - 0.5) if v < 0 else int(v + 0.5)
            idx[i, j] = starts[i] + j
    return q, idx, prec


def resample_axis(a, n_out, axis):
    """a: uint8 [H, W, 3]; resample along axis 1 (width) or 0 (height)."""
    if axis == 0:
        return resample_axis(a.transpose(1, 0, 2), n_out, 1).transpose(1, 0, 2)
    q, idx, prec = pass_weights(a.shape[1], n_out)
    src = a.astype(np.int64)
    acc = np.full((a.shape[0], n_out, 3), 1 << (prec - 1), dtype=np.int64)
    for j in range(q.shape[1]):
        acc += src[:, idx[:, j], :] * q[None, :, j, None]
    return np.clip(acc >> prec, 0, 255).astype(np.uint8)


def resize(a, out_h, out_w):
    if out_w != a.shape[1]:
        a = resample_axis(a, out_w, 1)
    if out_h != a.shape[0]:
        a = resample_axis(a, out_h, 0)
    return a


# ---- sections 2, 4, 5 ----
def shortest_edge_size(h, w, size=224):
    short, long = (w, h) if w <= h else (h, w)
    new_long = int(size * long / short)
    return (new_long, size) if w <= h else (size, new_long)


def pipeline(rgb, size=224, crop=224):
    h, w = rgb.shape[:2]
    rh, rw = shortest_edge_size(h, w, size)
    r = resize(rgb, rh, rw)
    top, left = int((rh - crop) / 2.0), int((rw - crop) / 2.0)
    c = r[top:top + crop, left:left + crop].astype(np.float32)
    mean = np.array([np.float32(np.float32(m) * np.float32(255)) for m in MEAN], dtype=np.float32)
    std = np.array([np.float32(np.float32(s) * np.float32(255)) for s in STD], dtype=np.float32)
    out = (c - mean) / std
    return np.ascontiguousarray(out.transpose(2, 0, 1)).astype("<f4")


def sha(arr):
    return hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()


# ---- deterministic synthetic image, the same formula as synthetic() in the Go tests ----
def synthetic(w, h, kind):
    y, x, c = np.meshgrid(np.arange(h, dtype=np.uint64), np.arange(w, dtype=np.uint64),
                          np.arange(3, dtype=np.uint64), indexing="ij")
    if kind == "saw":
        return ((x + 2 * y + 40 * c) & np.uint64(255)).astype(np.uint8)
    m = np.uint64(0xFFFFFFFF)
    v = (x * np.uint64(0x9E3779B1) + y * np.uint64(0x85EBCA77) + c * np.uint64(0xC2B2AE3D)) & m
    v ^= v >> np.uint64(15)
    v = (v * np.uint64(0x2C1B3C6D)) & m
    v ^= v >> np.uint64(12)
    return (v >> np.uint64(24)).astype(np.uint8)


def check_fixtures():
    d = os.path.join(SHARED, "fixtures", "tiny-clip-h")
    ref = json.load(open(os.path.join(d, "reference.json")))
    for im in ref["images"]:
        rgb = np.asarray(Image.open(os.path.join(d, im["file"])).convert("RGB"))
        want = np.fromfile(os.path.join(d, im["pixel_values_file"]), dtype="<f4")
        got = pipeline(rgb).ravel()
        assert (got.view(np.uint32) == want.view(np.uint32)).all(), im["name"]
    print("numpy transcription reproduces all", len(ref["images"]), "fixture tensors bit for bit")


def pillow_crosscheck(rng):
    """Pillow's BICUBIC (22-bit fixed point) must stay within 2 levels."""
    worst = 0
    for _ in range(40):
        w, h = int(rng.integers(20, 700)), int(rng.integers(20, 700))
        rh, rw = int(rng.integers(10, 400)), int(rng.integers(10, 400))
        a = synthetic(w, h, "saw" if rng.integers(2) else "noise")
        ours = resize(a, rh, rw).astype(int)
        pil = np.asarray(Image.fromarray(a).resize((rw, rh), Image.BICUBIC)).astype(int)
        worst = max(worst, int(np.abs(ours - pil).max()))
    print("max difference to Pillow's bicubic over 40 random resizes:", worst, "levels")
    assert worst <= 2, worst


def random_resizes(rng, n=200):
    cases = []
    for i in range(n):
        w, h = int(rng.integers(1, 400)), int(rng.integers(1, 400))
        rw, rh = int(rng.integers(1, 400)), int(rng.integers(1, 400))
        if i % 10 == 0:  # some strong reductions
            w, h = int(rng.integers(600, 1600)), int(rng.integers(600, 1600))
        kind = "saw" if i % 2 else "noise"
        cases.append({"w": w, "h": h, "rw": rw, "rh": rh, "kind": kind,
                      "sha256": sha(resize(synthetic(w, h, kind), rh, rw))})
    return cases


def save(img, name, **kw):
    path = os.path.join(HERE, "images", name)
    img.save(path, **kw)
    return name


def exif_bytes(orientation):
    e = Image.Exif()
    e[0x0112] = orientation
    return e.tobytes()


def make_images():
    """Small files covering the decoders and colour modes; returns cases."""
    os.makedirs(os.path.join(HERE, "images"), exist_ok=True)
    base = Image.fromarray(synthetic(96, 64, "saw"))
    smooth = Image.radial_gradient("L").resize((180, 120))
    photo = Image.merge("RGB", (smooth, smooth.rotate(90).resize((180, 120)),
                                Image.linear_gradient("L").resize((180, 120))))
    files = []
    files.append(save(photo.quantize(64), "palette.png"))
    p = photo.quantize(32)
    p.info["transparency"] = 3
    files.append(save(p, "palette_trns.png", transparency=3))
    g1, g2 = photo.quantize(16), photo.rotate(180).quantize(16)
    files.append(save(g1, "anim.gif", save_all=True, append_images=[g2], transparency=2))
    files.append(save(smooth.resize((120, 200)), "gray_portrait.png"))
    la = Image.merge("LA", (smooth, Image.linear_gradient("L").resize((180, 120))))
    files.append(save(la, "gray_alpha.png"))
    rgba = photo.convert("RGBA")
    alpha = np.asarray(Image.linear_gradient("L").resize((180, 120))).copy()
    alpha[:, :60] = 0  # colour under fully transparent pixels must survive
    rgba.putalpha(Image.fromarray(alpha))
    files.append(save(rgba, "rgba_transparent.png"))
    rgb16 = (np.asarray(photo).astype(np.uint16) * 257 + 77).astype(">u2")
    files.append(save_png16_rgb(rgb16, "rgb16.png"))
    files.append(save(photo.resize((1500, 90)), "panorama.png"))
    files.append(save(photo.resize((90, 700)), "tall.png"))
    files.append(save(photo.resize((7, 5)), "tiny_7x5.png"))
    files.append(save(photo.resize((1, 1)), "one_pixel.png"))
    files.append(save(photo.resize((2, 300)), "sliver_2x300.png"))
    files.append(save(photo, "rgb24.bmp"))
    files.append(save(photo.quantize(16), "palette.bmp"))
    files.append(save(photo, "rgb.tiff"))
    files.append(save(photo, "lossless.webp", lossless=True))
    cases = []
    for f in files:
        im = Image.open(os.path.join(HERE, "images", f))
        cases.append({"file": f, "exif": False, "sha256": sha(pipeline(np.asarray(im.convert("RGB"))))})
    # EXIF orientation in a PNG eXIf chunk: lossless, so exact.
    for o in range(1, 9):
        f = save(base, f"orient{o}.png", exif=exif_bytes(o))
        im = Image.open(os.path.join(HERE, "images", f))
        t = ImageOps.exif_transpose(im).convert("RGB")
        cases.append({"file": f, "exif": True, "sha256": sha(pipeline(np.asarray(t)))})
        cases.append({"file": f, "exif": False, "sha256": sha(pipeline(np.asarray(im.convert("RGB"))))})
    # EXIF-rotated JPEGs: Go's JPEG IDCT differs from libjpeg's, so the test
    # compares with a tolerance against Pillow's decoding, stored losslessly.
    jpegs = []
    for o in (3, 6, 8):
        f = save(photo, f"orient{o}.jpg", quality=92, exif=exif_bytes(o))
        im = Image.open(os.path.join(HERE, "images", f))
        pil = save(ImageOps.exif_transpose(im).convert("RGB"), f"orient{o}.pillow.png")
        jpegs.append({"file": f, "pillow_png": pil})
    # Flat 16x16 blocks: every DCT block holds only a DC term, which both
    # IDCTs reconstruct exactly, so Go must match Pillow bit for bit: this
    # isolates the chroma upsampling and the YCbCr matrix.
    rng = np.random.default_rng(7)
    blocks = np.repeat(np.repeat(rng.integers(0, 256, (5, 8, 3), dtype=np.uint8), 16, 0), 16, 1)
    for sub, (w, h) in [(0, (125, 77)), (1, (127, 80)), (2, (125, 79)), (2, (6, 9)), (1, (4, 4))]:
        img = Image.fromarray(blocks[:h, :w].copy())
        f = save(img, f"blocks{sub}_{w}x{h}.jpg", quality=100, subsampling=sub)
        pil = save(Image.open(os.path.join(HERE, "images", f)).convert("RGB"), f"blocks{sub}_{w}x{h}.pillow.png")
        jpegs.append({"file": f, "pillow_png": pil, "exact": True})
    # 4:4:0 and 4:1:1, which Pillow cannot write: libjpeg-turbo's cjpeg.
    b3 = np.repeat(np.repeat(rng.integers(0, 256, (6, 9, 3), dtype=np.uint8), 16, 0), 16, 1)[:83, :131]
    ppm = os.path.join(HERE, "images", "tmp.ppm")
    Image.fromarray(b3).save(ppm)
    for sample, name in [("1x2,1x1,1x1", "blocks440_131x83.jpg"), ("4x1,1x1,1x1", "blocks411_131x83.jpg")]:
        subprocess.run(["cjpeg", "-quality", "100", "-sample", sample, "-outfile",
                        os.path.join(HERE, "images", name), ppm], check=True)
        pil = save(Image.open(os.path.join(HERE, "images", name)).convert("RGB"), name + ".pillow.png")
        jpegs.append({"file": name, "pillow_png": pil, "exact": True})
    os.remove(ppm)
    # Adobe CMYK and grayscale JPEGs of flat blocks: Pillow's cmyk2rgb and
    # gray copy after an exact decode.
    b4 = np.repeat(np.repeat(rng.integers(0, 256, (5, 8, 4), dtype=np.uint8), 16, 0), 16, 1)[:77, :125]
    for img, name in [(Image.fromarray(b4.copy(), "CMYK"), "blocks_cmyk.jpg"),
                      (Image.fromarray(b4[..., 0].copy(), "L"), "blocks_gray.jpg")]:
        f = save(img, name, quality=100)
        pil = save(Image.open(os.path.join(HERE, "images", f)).convert("RGB"), name + ".pillow.png")
        jpegs.append({"file": f, "pillow_png": pil, "exact": True})
    # Lossy WebP: VP8 decoding is exact, and Go converts with libwebp's
    # fancy upsampling and matrix, so these match Pillow bit for bit too.
    odd = photo.resize((121, 77))
    with_alpha = photo.resize((127, 78)).convert("RGBA")
    with_alpha.putalpha(Image.linear_gradient("L").resize((127, 78)))
    for img, name in [(photo, "lossy.webp"), (odd, "lossy_121x77.webp"), (with_alpha, "lossy_alpha_127x78.webp")]:
        f = save(img, name, quality=80)
        pil = save(Image.open(os.path.join(HERE, "images", f)).convert("RGB"), name + ".pillow.png")
        jpegs.append({"file": f, "pillow_png": pil, "exact": True})
    return cases, jpegs


def save_png16_rgb(a, name):
    """Write a 16-bit RGB PNG by hand (Pillow cannot save one)."""
    import struct
    import zlib
    h, w, _ = a.shape
    raw = b"".join(b"\x00" + a[y].tobytes() for y in range(h))
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    open(os.path.join(HERE, "images", name), "wb").write(png)
    return name


def make_formats():
    """Files in formats/ for TestUnsupportedTIFF and TestAnimatedWebP: TIFFs
    x/image/tiff refuses (CMYK, JPEG compression, float samples) and
    animated WebPs with Pillow's RGB of their first frame. Not in refs.json;
    kept out of images/, whose files must all decode."""
    out = os.path.join(HERE, "formats")
    os.makedirs(out, exist_ok=True)
    smooth = Image.radial_gradient("L").resize((60, 40))
    photo = Image.merge("RGB", (smooth, smooth.rotate(90).resize((60, 40)),
                                Image.linear_gradient("L").resize((60, 40))))
    Image.new("CMYK", (16, 12), (10, 20, 30, 40)).save(os.path.join(out, "cmyk.tif"))
    photo.save(os.path.join(out, "jpeg.tif"), compression="jpeg")
    Image.new("F", (16, 12), 1.5).save(os.path.join(out, "float.tif"))
    # A first frame with a transparent border: the encoder stores only its
    # opaque part, a frame at an offset on the canvas, with partial alpha.
    first = photo.convert("RGBA")
    alpha = np.zeros((40, 60), np.uint8)
    alpha[9:31, 13:48] = np.linspace(40, 255, 35, dtype=np.uint8)
    first.putalpha(Image.fromarray(alpha))
    first = Image.fromarray(np.asarray(first) * (alpha[..., None] > 0).astype(np.uint8), "RGBA")
    second = photo.rotate(180)
    opaque = photo.transpose(Image.FLIP_LEFT_RIGHT)
    for img, name, kw in [(first, "anim_lossless.webp", {"lossless": True}),
                          (first, "anim_alpha.webp", {"quality": 80}),
                          (opaque, "anim_lossy.webp", {"quality": 80})]:
        path = os.path.join(out, name)
        img.save(path, save_all=True, append_images=[second], duration=100, **kw)
        im = Image.open(path)
        assert im.n_frames == 2, name
        im.convert("RGB").save(path + ".pillow.png")


def main():
    check_fixtures()
    rng = np.random.default_rng(20261129)
    pillow_crosscheck(rng)
    cases, jpegs = make_images()
    make_formats()
    big = [{"w": w, "h": h, "kind": k, "sha256": sha(pipeline(synthetic(w, h, k)))}
           for (w, h, k) in [(4000, 3000, "noise"), (3000, 4000, "saw"), (2001, 1333, "noise"),
                             (5000, 224, "saw"), (224, 225, "noise"), (225, 224, "saw")]]
    out = {"generator": "make_refs.py", "pillow": Image.__version__, "numpy": np.__version__,
           "files": cases, "jpeg_exif": jpegs, "synthetic": big, "resizes": random_resizes(rng)}
    with open(os.path.join(HERE, "refs.json"), "w") as f:
        json.dump(out, f, indent=1)
    print(len(cases), "file cases,", len(big), "synthetic pipelines,", len(out["resizes"]), "resizes")


if __name__ == "__main__":
    main()
