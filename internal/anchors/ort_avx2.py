#!/usr/bin/env python3
"""ONNX Runtime without AVX-512, to stand in for an AVX2-only CPU.

    python3 ort_avx2.py DEST

copies this folder's runner (ort_clip_bench.mjs, package.json and
node_modules, which `npm ci --prefix internal/anchors` installs) to DEST, and
in DEST's copy of onnxruntime-node's libonnxruntime.so.1 turns MLAS's AVX-512F
test into a jump past it: MLAS (ONNX Runtime's kernels) then sets itself up as
on a CPU with AVX2 and FMA but no AVX-512. ONNX Runtime has no switch for
this, and CPUID cannot be masked for one process on most machines.

With clipidx's side told the same through Go's GODEBUG (x/sys/cpu honours it):

    GODEBUG=cpu.avx512f=off,cpu.avx512bw=off,cpu.avx512vl=off,cpu.avx512dq=off,cpu.avx512cd=off \\
        go test ./clipnpu -run XXX -bench VersusORT -benchtime 6x -args \\
        -clipnpu.versus-model=/tmp/h14 -clipnpu.versus-onnx=/tmp/h14-onnx -clipnpu.versus-ort=DEST

both sides run their AVX2 code on the same machine. That is a proxy for an
AVX2-only CPU, not a measurement on one: the cores, caches and clocks are
still the AVX-512 CPU's.

The test it patches, in MLAS's platform set-up (x86-64):

    test $0x10000, r32     ; CPUID.7.0:EBX bit 16, AVX512F
    je   past              ; 74 rel8   -> jmp past: eb rel8
    ...
    test $0xe0, %al        ; XCR0: the OS saves the zmm state

The script refuses a library where that sequence is not found exactly once
(another onnxruntime-node than package-lock.json pins may lay it out
otherwise).
"""

import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIB = os.path.join('node_modules', 'onnxruntime-node', 'bin', 'napi-v6', 'linux', 'x64',
                   'libonnxruntime.so.1')

# test $0x10000, r32 (optionally REX.B), je rel8, then within 16 bytes the
# XCR0 test of the zmm state bits.
PATTERN = re.compile(rb'(?:\x41)?\xf7[\xc0-\xc7]\x00\x00\x01\x00(\x74).(?=.{0,16}?\xa8\xe0)',
                     re.DOTALL)


def patch(data):
    """Returns data with the AVX-512F branch made unconditional."""
    hits = list(PATTERN.finditer(data))
    if len(hits) != 1:
        raise ValueError(f'found the AVX-512F test {len(hits)} times, not once: '
                         'not the layout this script knows')
    at = hits[0].start(1)
    out = bytearray(data)
    out[at] = 0xEB
    return bytes(out), at


def other_platforms(folder, names):
    """copytree's ignore: under bin/napi-v6, all but linux/x64."""
    parts = folder.replace(os.sep, '/').split('/')
    if parts[-2:] == ['bin', 'napi-v6']:
        return [n for n in names if n != 'linux']
    if parts[-3:] == ['bin', 'napi-v6', 'linux']:
        return [n for n in names if n != 'x64']
    return []


def main(argv):
    if len(argv) != 2:
        print('usage: ort_avx2.py DEST', file=sys.stderr)
        return 2
    dest = os.path.abspath(argv[1])
    src_lib = os.path.join(HERE, LIB)
    if not os.path.exists(src_lib):
        print(f'{src_lib}: missing; run npm ci --prefix internal/anchors', file=sys.stderr)
        return 1
    with open(src_lib, 'rb') as f:
        try:
            data, at = patch(f.read())
        except ValueError as e:
            print(f'{src_lib}: {e}', file=sys.stderr)
            return 1
    if os.path.exists(dest):
        shutil.rmtree(dest)
    os.makedirs(os.path.join(dest, 'node_modules'))
    for name in ('ort_clip_bench.mjs', 'package.json'):
        shutil.copy2(os.path.join(HERE, name), dest)
    # onnxruntime-node is copied (node follows symlinks to where a package
    # really lies, and would load the library beside the original), without
    # the other platforms' binaries; the other packages are linked.
    modules = os.path.join(HERE, 'node_modules')
    for name in os.listdir(modules):
        src = os.path.join(modules, name)
        if name == 'onnxruntime-node':
            shutil.copytree(src, os.path.join(dest, 'node_modules', name), symlinks=True,
                            ignore=other_platforms)
        else:
            os.symlink(os.path.realpath(src), os.path.join(dest, 'node_modules', name))
    lib = os.path.join(dest, LIB)
    tmp = lib + '.tmp'
    with open(tmp, 'wb') as f:
        f.write(data)
    os.replace(tmp, lib)
    print(f'{dest}: onnxruntime-node with its AVX-512F test jumped over '
          f'(byte {at:#x} of libonnxruntime.so.1)')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
