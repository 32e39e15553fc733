#!/usr/bin/python3
"""JPEG corpus and Pillow references for preprocess's own JPEG decoder.

Writes small JPEGs into this folder (Pillow, and libjpeg-turbo-progs' cjpeg
and jpegtran for what Pillow cannot write: 4:4:0, 4:1:1 and odd sampling,
restart markers, RGB JPEGs) and refs.json with, for each of them and for Go's
own $GOROOT/src/image/testdata/*.jpeg, the sha256 of Pillow's
Image.open(f).convert("RGB") bytes and of the preprocessed tensor (the numpy
pipeline of ../make_refs.py), or the error Pillow raises.

Needs Debian's python3-pil (9.4, libjpeg-turbo 2.1.5), python3-numpy,
libjpeg-turbo-progs and a Go toolchain (for GOROOT). Run from anywhere:
/usr/bin/python3 make_jpeg_refs.py
"""
import hashlib
import io
import json
import os
import subprocess
import sys

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from make_refs import pipeline, sha  # noqa: E402


def photo(w, h, seed):
    """Smooth gradients, edges and per-pixel noise: every IDCT term matters."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    fx, fy = x / max(w, 1), y / max(h, 1)
    base = np.stack([200 - 120 * fy + 30 * np.sin(fx * 9),
                     60 + 40 * np.sin(fx * 12 + 3 * np.sin(fy * 7)) + 80 * fx,
                     128 + 100 * np.cos(fx * 5 + fy * 3)], axis=-1)
    base[(fx - 0.5) ** 2 + (fy - 0.4) ** 2 < 0.05] = (250, 30, 40)  # a sharp disc
    noise = rng.normal(0, 5, (h, w, 3))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)
    return name


def pil_jpeg(img, **kw):
    b = io.BytesIO()
    img.save(b, "JPEG", **kw)
    return b.getvalue()


def cjpeg(ppm, *args):
    return subprocess.run(["cjpeg", *args, ppm], check=True, capture_output=True).stdout


def jpegtran(data, *args):
    return subprocess.run(["jpegtran", *args], input=data, check=True, capture_output=True).stdout


def make_corpus():
    files = []
    sizes = [(1, 1), (17, 9), (333, 211), (64, 48), (9, 17), (2, 2), (3, 40)]
    for (w, h) in sizes:
        im = Image.fromarray(photo(w, h, w * 1000 + h))
        for sub, sname in [(0, "444"), (1, "422"), (2, "420")]:
            q = {0: 90, 1: 75, 2: 50}[sub] if (w, h) != (333, 211) else 85
            files.append(write(f"pil_{sname}_q{q}_{w}x{h}.jpg", pil_jpeg(im, quality=q, subsampling=sub)))
    big = Image.fromarray(photo(333, 211, 5))
    for q in (30, 95, 100):
        files.append(write(f"pil_420_q{q}_333x211.jpg", pil_jpeg(big, quality=q, subsampling=2)))
    files.append(write("pil_prog_420_333x211.jpg", pil_jpeg(big, quality=80, progressive=True)))
    files.append(write("pil_prog_444_17x9.jpg", pil_jpeg(Image.fromarray(photo(17, 9, 3)), quality=90,
                                                          progressive=True, subsampling=0)))
    grey = Image.fromarray(photo(333, 211, 6)[..., 1])
    files.append(write("pil_grey_333x211.jpg", pil_jpeg(grey, quality=85)))
    files.append(write("pil_grey_prog_31x7.jpg", pil_jpeg(grey.resize((31, 7)), quality=70, progressive=True)))
    cmyk = Image.fromarray(np.concatenate([photo(123, 77, 7), photo(123, 77, 8)[..., :1]], axis=-1), "CMYK")
    files.append(write("pil_cmyk_123x77.jpg", pil_jpeg(cmyk, quality=90)))
    # cjpeg: sampling factors Pillow cannot write, restart markers, RGB.
    ppm = os.path.join(HERE, "tmp.ppm")
    pgm = os.path.join(HERE, "tmp.pgm")
    Image.fromarray(photo(333, 211, 9)).save(ppm)
    Image.fromarray(photo(101, 67, 9)[..., 0]).save(pgm)
    for sample, tag in [("1x2,1x1,1x1", "440"), ("4x1,1x1,1x1", "411"), ("4x2,1x1,1x1", "410"),
                        ("2x2,1x2,2x1", "mixed"), ("1x1,2x2,1x1", "cbfull"), ("3x1,1x1,1x1", "311"),
                        ("1x4,1x1,1x1", "1x4"), ("2x2,2x1,1x1", "22_21")]:
        files.append(write(f"cjpeg_{tag}_q85_333x211.jpg", cjpeg(ppm, "-quality", "85", "-sample", sample)))
        files.append(write(f"cjpeg_{tag}_prog_333x211.jpg",
                           cjpeg(ppm, "-quality", "75", "-sample", sample, "-progressive")))
    files.append(write("cjpeg_restart1_420_333x211.jpg", cjpeg(ppm, "-quality", "85", "-restart", "1")))
    files.append(write("cjpeg_restart5b_444_333x211.jpg",
                       cjpeg(ppm, "-quality", "85", "-restart", "5B", "-sample", "1x1,1x1,1x1")))
    files.append(write("cjpeg_restart3b_prog_333x211.jpg",
                       cjpeg(ppm, "-quality", "85", "-restart", "3B", "-progressive")))
    files.append(write("cjpeg_restart1_prog_440_333x211.jpg",
                       cjpeg(ppm, "-quality", "85", "-restart", "1", "-progressive", "-sample", "1x2,1x1,1x1")))
    files.append(write("cjpeg_rgb_333x211.jpg", cjpeg(ppm, "-quality", "90", "-rgb")))
    files.append(write("cjpeg_rgb_prog_333x211.jpg", cjpeg(ppm, "-quality", "90", "-rgb", "-progressive")))
    files.append(write("cjpeg_grey_restart2b_101x67.jpg", cjpeg(pgm, "-quality", "80", "-restart", "2B")))
    files.append(write("cjpeg_q100_444_333x211.jpg", cjpeg(ppm, "-quality", "100", "-sample", "1x1,1x1,1x1")))
    files.append(write("cjpeg_optimize_baseline_333x211.jpg", cjpeg(ppm, "-quality", "60", "-optimize")))
    seq = cjpeg(ppm, "-quality", "80")
    ppm35, pgm33 = os.path.join(HERE, "tmp35.ppm"), os.path.join(HERE, "tmp33.pgm")
    Image.fromarray(photo(97, 35, 11)).save(ppm35)
    Image.fromarray(photo(45, 33, 12)[..., 2]).save(pgm33)
    seq35 = cjpeg(ppm35, "-quality", "90")
    seq16 = pil_jpeg(Image.fromarray(photo(16, 9, 13)), quality=95)
    seq9 = pil_jpeg(Image.fromarray(photo(9, 40, 14)), quality=95, subsampling=0)
    files.append(write("jpegtran_restart4b_prog_333x211.jpg", jpegtran(seq, "-progressive", "-restart", "4B")))
    files.append(write("jpegtran_restart1_333x211.jpg", jpegtran(seq, "-restart", "1")))
    files.append(write("cjpeg_restart1b_prog_411_97x35.jpg",
                       cjpeg(ppm35, "-quality", "70", "-restart", "1B", "-progressive", "-sample", "4x1,1x1,1x1")))
    files.append(write("cjpeg_grey_2x2_prog_45x33.jpg",
                       cjpeg(pgm33, "-quality", "80", "-sample", "2x2", "-progressive")))
    # Progressions that stop early: libjpeg's block smoothing estimates the
    # missing low-frequency coefficients (and the DC when no AC was sent).
    for tag, script in [("dconly", "0,1,2: 0-0, 0, 0;"),
                        ("dcapprox", "0,1,2: 0-0, 0, 2;"),
                        ("partial", "0,1,2: 0-0, 0, 1; 0: 1-5, 0, 2; 1: 1-63, 0, 0; 2: 1-2, 0, 0;"),
                        ("refined", "0,1,2: 0-0, 0, 1; 0: 1-9, 0, 1; 0,1,2: 0-0, 1, 0; 0: 1-9, 1, 0;")]:
        sc = os.path.join(HERE, "tmp.scans")
        with open(sc, "w") as f:
            f.write(script)
        for src, size in [(seq, "333x211"), (seq35, "97x35"), (seq16, "16x9"), (seq9, "9x40")]:
            files.append(write(f"jpegtran_{tag}_{size}.jpg", jpegtran(src, "-scans", sc)))
        os.remove(sc)
    # Sequential JPEG in several scans (one component each): SOF0 with
    # three non-interleaved scans.
    sc = os.path.join(HERE, "tmp.scans")
    with open(sc, "w") as f:
        f.write("0: 0-63, 0, 0; 2: 0-63, 0, 0; 1: 0-63, 0, 0;")
    files.append(write("jpegtran_multiscan_sequential_333x211.jpg", jpegtran(seq, "-scans", sc)))
    os.remove(sc)
    # Arithmetic coding, which Pillow's libjpeg-turbo decodes.
    files.append(write("cjpeg_arithmetic_97x35.jpg", cjpeg(ppm35, "-quality", "85", "-arithmetic")))
    files.append(write("cjpeg_arithmetic_prog_97x35.jpg", cjpeg(ppm35, "-quality", "85", "-arithmetic", "-progressive")))
    files.append(write("cjpeg_arithmetic_restart2b_420_333x211.jpg",
                       cjpeg(ppm, "-quality", "75", "-arithmetic", "-restart", "2B")))
    files.append(write("cjpeg_arithmetic_prog_restart1_411_333x211.jpg",
                       cjpeg(ppm, "-quality", "75", "-arithmetic", "-progressive", "-restart", "1",
                             "-sample", "4x1,1x1,1x1")))
    files.append(write("cjpeg_arithmetic_grey_101x67.jpg", cjpeg(pgm, "-quality", "90", "-arithmetic")))
    # Over Pillow's 64 KB read block: libjpeg's arithmetic decoder cannot
    # suspend for more input, so Pillow fails ("broken data stream"); djpeg,
    # reading the whole file, is the reference.
    files.append(write("cjpeg_arithmetic_over64k_333x211.jpg",
                       cjpeg(ppm, "-quality", "98", "-sample", "1x1,1x1,1x1", "-arithmetic")))
    files.append(write("arithmetic_no_dac_97x35.jpg",  # T.81's default conditioning
                       strip_segment(open(os.path.join(HERE, "cjpeg_arithmetic_97x35.jpg"), "rb").read(), 0xCC)))
    with open(sc, "w") as f:
        f.write("0,1,2: 0-0, 0, 1; 0: 1-5, 0, 2; 1: 1-63, 0, 0; 0,1,2: 0-0, 1, 0; 0: 1-5, 2, 1;")
    files.append(write("jpegtran_arithmetic_partial_97x35.jpg", jpegtran(seq35, "-arithmetic", "-scans", sc)))
    os.remove(sc)
    # Colour-space signals: Adobe transform 1 and 2 on three components
    # (YCbCr), RGB told by component ids alone, CMYK without an Adobe
    # marker, and YCCK (Adobe transform 2 on four components).
    rgbj = open(os.path.join(HERE, "cjpeg_rgb_333x211.jpg"), "rb").read()
    files.append(write("adobe_xform1_3comp.jpg", set_adobe(rgbj, 1)))
    files.append(write("adobe_xform2_3comp.jpg", set_adobe(rgbj, 2)))
    files.append(write("rgb_ids_no_adobe.jpg", strip_segment(rgbj, 0xEE)))
    cmykj = open(os.path.join(HERE, "pil_cmyk_123x77.jpg"), "rb").read()
    files.append(write("cmyk_no_adobe.jpg", strip_segment(cmykj, 0xEE)))
    files.append(write("ycck_adobe2.jpg", set_adobe(cmykj, 2)))
    files.append(write("ycck_adobe1.jpg", set_adobe(cmykj, 1)))
    # Component ids repeated (all 0), as some encoders write them: libjpeg
    # matches scan components to frame components by position then.
    dup = bytearray(open(os.path.join(HERE, "pil_420_q50_64x48.jpg"), "rb").read())
    i = dup.index(b"\xff\xc0")
    for k in range(dup[i + 9]):
        dup[i + 10 + 3 * k] = 0
    j = dup.index(b"\xff\xda")
    for k in range(dup[j + 4]):
        dup[j + 5 + 2 * k] = 0
    files.append(write("dup_component_ids.jpg", bytes(dup)))
    # Truncated and damaged files, to record what Pillow does with them.
    ar = bytearray(open(os.path.join(HERE, "cjpeg_arithmetic_restart2b_420_333x211.jpg"), "rb").read())
    i = ar.index(b"\xff\xd1") + 40
    ar[i:i + 2] = b"\xff\xd5"  # a stray marker: arithmetic decoding goes on with zeros
    files.append(write("bad_arithmetic_stray_marker.jpg", bytes(ar)))
    ar = open(os.path.join(HERE, "cjpeg_arithmetic_97x35.jpg"), "rb").read()
    files.append(write("bad_truncated_arithmetic.jpg", ar[:len(ar) * 2 // 3]))
    full = open(os.path.join(HERE, "pil_prog_420_333x211.jpg"), "rb").read()
    files.append(write("bad_truncated_prog.jpg", full[:len(full) * 2 // 3]))
    base = open(os.path.join(HERE, "pil_444_q85_333x211.jpg"), "rb").read()
    files.append(write("bad_truncated_baseline.jpg", base[:len(base) // 2]))
    files.append(write("bad_no_eoi.jpg", base[:-2]))
    dam = bytearray(base)
    sos = dam.index(b"\xff\xda")
    dam[sos + 400] = 0xff
    dam[sos + 401] = 0xd3  # a stray RST marker in the entropy data
    files.append(write("bad_marker_in_data.jpg", bytes(dam)))
    rst = bytearray(open(os.path.join(HERE, "cjpeg_restart1_420_333x211.jpg"), "rb").read())
    i = rst.index(b"\xff\xd3")
    rst[i + 1] = 0xd5  # a restart marker out of sequence
    files.append(write("bad_rst_sequence.jpg", bytes(rst)))
    rst = bytearray(open(os.path.join(HERE, "cjpeg_restart1_420_333x211.jpg"), "rb").read())
    i = rst.index(b"\xff\xd2") + 50
    rst[i:i + 2] = b"\xff\xd4"  # a stray marker inside interval 3, the one after next
    files.append(write("bad_stray_rst_in_interval.jpg", bytes(rst)))
    for f in (ppm, pgm, ppm35, pgm33):
        os.remove(f)
    return files


def segments(data):
    """(start, end, marker) of each marker segment before the first SOS."""
    i = 2
    while i + 4 <= len(data) and data[i] == 0xFF:
        m, n = data[i + 1], int.from_bytes(data[i + 2:i + 4], "big")
        yield i, i + 2 + n, m
        if m == 0xDA:
            return
        i += 2 + n


def strip_segment(data, marker):
    for a, b, m in segments(data):
        if m == marker:
            return data[:a] + data[b:]
    raise ValueError(f"no marker 0x{marker:02x}")


def set_adobe(data, transform):
    for a, b, m in segments(data):
        if m == 0xEE and data[a + 4:a + 9] == b"Adobe":
            out = bytearray(data)
            out[a + 4 + 11] = transform
            return bytes(out)
    raise ValueError("no Adobe segment")


def reference(path):
    try:
        im = Image.open(path)
        rgb = np.asarray(im.convert("RGB"))
    except Exception as e:  # noqa: BLE001 - Pillow's error is the reference
        err = f"{type(e).__name__}: {e}"
        if "arithmetic" not in path or "broken data stream" not in err:
            return {"error": err}
        # Pillow feeds libjpeg 64 KB at a time, which arithmetic decoding
        # cannot suspend on; libjpeg-turbo's own djpeg reads it whole.
        dj = subprocess.run(["djpeg", "-ppm", path], capture_output=True)
        if dj.returncode != 0:  # djpeg warns too (e.g. a truncated file)
            return {"error": err}
        ppm = dj.stdout
        rgb = np.asarray(Image.open(io.BytesIO(ppm)).convert("RGB"))
        return {"w": rgb.shape[1], "h": rgb.shape[0], "rgb_sha256": sha(rgb),
                "tensor_sha256": sha(pipeline(rgb)), "reference": "djpeg", "pillow_error": err}
    return {"w": rgb.shape[1], "h": rgb.shape[0], "rgb_sha256": sha(rgb), "tensor_sha256": sha(pipeline(rgb))}


def main():
    for f in os.listdir(HERE):
        if f.endswith(".jpg"):
            os.remove(os.path.join(HERE, f))
    files = make_corpus()
    goroot = subprocess.run(["go", "env", "GOROOT"], check=True, capture_output=True, text=True).stdout.strip()
    gotest = os.path.join(goroot, "src", "image", "testdata")
    cases = [dict(file=f, **reference(os.path.join(HERE, f))) for f in files]
    for f in sorted(os.listdir(gotest)):
        if f.endswith(".jpeg"):
            data = open(os.path.join(gotest, f), "rb").read()
            cases.append(dict(file="goroot:" + f, size=len(data),
                              file_sha256=hashlib.sha256(data).hexdigest(),
                              **reference(os.path.join(gotest, f))))
    out = {"generator": "make_jpeg_refs.py", "pillow": Image.__version__, "cases": cases}
    with open(os.path.join(HERE, "refs.json"), "w") as f:
        json.dump(out, f, indent=1)
    bad = [c["file"] for c in cases if "error" in c]
    print(len(cases), "cases;", len(bad), "refused by Pillow:", ", ".join(bad))


if __name__ == "__main__":
    main()
