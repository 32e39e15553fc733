#!/usr/bin/env python3
"""PyTorch anchor for `clipidx bench model --random h14|b32`.

A self-contained CLIP-shaped forward (pre-LayerNorm ViT, written with
torch.nn.functional ops, random weights, float32) timed the way
`clipidx bench model` times itself: two warm-up passes, then the median of
--runs passes, and the peak RSS of the process (resource.getrusage
ru_maxrss). --serve keeps the model and runs one pass per request on stdin,
for runs interleaved with clipidx's (clipnpu's BenchmarkVersusTorch).
--dtype bf16 casts the whole model and its inputs to bfloat16
(oneDNN runs its products on AMX or AVX512_BF16 where the CPU has them), the
anchor for `clipidx --precision bf16`. Never run by tests or CI (only by
benchmarks); see README.md for the command.
"""
import argparse
import json
import math
import os
import resource
import statistics
import sys
import time

import torch
import torch.nn.functional as F

SHAPES = {
    # name: (vision width, layers, heads, mlp, patch, image), (text width, layers, heads, mlp), projection
    "h14": ((1280, 32, 16, 5120, 14, 224), (1024, 24, 16, 4096), 1024),
    "b32": ((768, 12, 12, 3072, 32, 224), (512, 12, 8, 2048), 512),
}
VOCAB, CONTEXT, EPS = 49408, 77, 1e-5
DTYPE = torch.float32  # --dtype


def rand(*shape):
    # Filled in place: a temporary per tensor (randn() * 0.02) would leave
    # freed heap behind and inflate the peak RSS beyond what holding the
    # model costs.
    return torch.empty(*shape, dtype=DTYPE).normal_(0.0, 0.02)


def ones(n):
    return torch.ones(n, dtype=DTYPE)


def zeros(n):
    return torch.zeros(n, dtype=DTYPE)


def layer(width, mlp):
    return {
        "ln1_w": ones(width), "ln1_b": zeros(width),
        "qkv_w": rand(3 * width, width), "qkv_b": rand(3 * width),
        "o_w": rand(width, width), "o_b": rand(width),
        "ln2_w": ones(width), "ln2_b": zeros(width),
        "fc1_w": rand(mlp, width), "fc1_b": rand(mlp),
        "fc2_w": rand(width, mlp), "fc2_b": rand(width),
    }


def block(x, p, heads, mask):
    """x [n, T, W] → [n, T, W]: pre-LN attention then pre-LN MLP (exact GELU)."""
    n, t, w = x.shape
    hd = w // heads
    h = F.layer_norm(x, (w,), p["ln1_w"], p["ln1_b"], EPS)
    qkv = F.linear(h, p["qkv_w"], p["qkv_b"]).view(n, t, 3, heads, hd).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]  # [n, heads, T, hd]
    s = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(hd))
    if mask is not None:
        s = s + mask
    a = torch.matmul(torch.softmax(s, dim=-1), v).transpose(1, 2).reshape(n, t, w)
    x = x + F.linear(a, p["o_w"], p["o_b"])
    h = F.layer_norm(x, (w,), p["ln2_w"], p["ln2_b"], EPS)
    h = F.linear(F.gelu(F.linear(h, p["fc1_w"], p["fc1_b"])), p["fc2_w"], p["fc2_b"])
    return x + h


class Vision:
    def __init__(self, width, layers, heads, mlp, patch, image, proj):
        self.width, self.heads, self.patch = width, heads, patch
        g = image // patch
        self.patch_w = rand(width, 3, patch, patch)
        self.cls = rand(width)
        self.pos = rand(g * g + 1, width)
        self.pre_w, self.pre_b = ones(width), zeros(width)
        self.post_w, self.post_b = ones(width), zeros(width)
        self.layers = [layer(width, mlp) for _ in range(layers)]
        self.proj = rand(proj, width)

    def __call__(self, pixels):  # [n, 3, S, S] → [n, proj]
        n = pixels.shape[0]
        x = F.conv2d(pixels, self.patch_w, stride=self.patch).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(n, 1, -1), x], dim=1) + self.pos
        x = F.layer_norm(x, (self.width,), self.pre_w, self.pre_b, EPS)
        for p in self.layers:
            x = block(x, p, self.heads, None)
        x = F.layer_norm(x[:, 0], (self.width,), self.post_w, self.post_b, EPS)
        return F.linear(x, self.proj)


class Text:
    def __init__(self, width, layers, heads, mlp, proj):
        self.width, self.heads = width, heads
        self.tok = rand(VOCAB, width)
        self.pos = rand(CONTEXT, width)
        self.fin_w, self.fin_b = ones(width), zeros(width)
        self.layers = [layer(width, mlp) for _ in range(layers)]
        self.proj = rand(proj, width)
        self.mask = torch.full((CONTEXT, CONTEXT), float("-inf"), dtype=DTYPE).triu(1)

    def __call__(self, ids):  # [n, T] int64 → [n, proj]
        x = self.tok[ids] + self.pos
        for p in self.layers:
            x = block(x, p, self.heads, self.mask)
        x = F.layer_norm(x, (self.width,), self.fin_w, self.fin_b, EPS)
        eos = ids.argmax(dim=-1)  # the EOS id is the largest id
        return F.linear(x[torch.arange(ids.shape[0]), eos], self.proj)


def timed(fn, runs):
    """Median wall seconds, the wall seconds of each run, and the median
    process CPU seconds (all threads) of the runs."""
    for _ in range(2):  # warm-ups, as clipidx bench model
        fn()
    ts, cs = [], []
    for _ in range(runs):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
        cs.append(time.process_time() - c0)
    return statistics.median(ts), ts, statistics.median(cs)


def serve(a):
    """--serve: the same towers and inputs as a timed run, each pass on request."""
    (vw, vl, vh, vm, vp, vs), (tw, tl, th, tm), proj = SHAPES[a.random]
    passes = {}
    with torch.inference_mode():
        if a.tower in ("both", "image"):
            vis = Vision(vw, vl, vh, vm, vp, vs, proj)
            px = torch.randn(a.images, 3, vs, vs, dtype=DTYPE)
            passes["image"] = lambda: vis(px)
        if a.tower in ("both", "text"):
            txt = Text(tw, tl, th, tm, proj)
            ids = torch.randint(0, VOCAB - 2, (a.texts, CONTEXT))
            ids[:, 0], ids[:, CONTEXT - 1] = 49406, 49407
            passes["text"] = lambda: txt(ids)
        for _ in range(2):  # warm-ups, as BenchmarkVersusTorch's own
            for fn in passes.values():
                fn()
        print("ready", flush=True)
        for line in sys.stdin:
            fn = passes.get(line.strip())
            if fn is None:
                print("error: unknown pass %r (have %s)" % (line.strip(), ", ".join(passes)), flush=True)
                continue
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            print(time.perf_counter() - t0, time.process_time() - c0, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--random", default="h14", choices=sorted(SHAPES))
    ap.add_argument("--images", type=int, default=4)
    ap.add_argument("--texts", type=int, default=8)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tower", default="both", choices=["both", "image", "text"],
                    help="build and run one tower only (peak RSS of that tower alone)")
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"],
                    help="bf16: the model and inputs cast to bfloat16")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--serve", action="store_true",
                    help="build the towers, print 'ready', then for each line 'image' or 'text' on stdin run "
                         "one pass and print its wall and CPU seconds (for interleaved runs against clipidx)")
    a = ap.parse_args()
    global DTYPE
    DTYPE = torch.bfloat16 if a.dtype == "bf16" else torch.float32

    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    (vw, vl, vh, vm, vp, vs), (tw, tl, th, tm), proj = SHAPES[a.random]
    out = {"model": a.random, "dtype": a.dtype, "threads": a.threads, "torch": torch.__version__,
           "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""), "runs": a.runs}
    if a.serve:
        serve(a)
        return
    with torch.inference_mode():
        if a.tower in ("both", "image"):
            vis = Vision(vw, vl, vh, vm, vp, vs, proj)
            px = torch.randn(a.images, 3, vs, vs, dtype=DTYPE)
            out["image_pass_s"], out["image_runs_s"], out["image_cpu_s"] = timed(lambda: vis(px), a.runs)
            out["images_per_s"] = a.images / out["image_pass_s"]
            out["rss_after_image_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        if a.tower in ("both", "text"):
            txt = Text(tw, tl, th, tm, proj)
            ids = torch.randint(0, VOCAB - 2, (a.texts, CONTEXT))
            ids[:, 0], ids[:, 20], ids[:, 21:] = 49406, 49407, 49407
            out["text_pass_s"], out["text_runs_s"], out["text_cpu_s"] = timed(lambda: txt(ids), a.runs)
            out["prompts_per_s"] = a.texts / out["text_pass_s"]
    out["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if a.json:
        json.dump(out, sys.stdout, indent=1)
        print()
        return
    for k, v in out.items():
        print(f"{k:24s} {v}")


if __name__ == "__main__":
    main()
