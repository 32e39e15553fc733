"""Pillow's side of BenchmarkJPEGVersusPillow.

Encodes a PPM to JPEG at quality 90 (argv: "encode SRC DST SUBSAMPLING"),
or serves timing requests on stdin: each line "PATH N" decodes PATH N
times with Image.open(f).load() and prints the process CPU seconds spent.
"""
import io
import sys
import time

from PIL import Image


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "encode":
        Image.open(sys.argv[2]).save(sys.argv[3], quality=90, subsampling=int(sys.argv[4]))
        return
    for line in sys.stdin:
        path, n = line.split()
        with open(path, "rb") as f:
            data = f.read()
        t0 = time.process_time()
        for _ in range(int(n)):
            Image.open(io.BytesIO(data)).load()
        print(time.process_time() - t0, flush=True)


main()
