#!/usr/bin/env python3
"""PyTorch anchor for BenchmarkBF16 in internal/gemm.

Times torch.mm on bfloat16 tensors (oneDNN; AMX tiles on CPUs that have
them) for the linear shapes of the ViT-H/14 forward that the Go benchmark
uses, y[m, n] = x[m, k] · wᵀ with w [n, k] as nn.Linear stores it, on
--threads threads: --warmup calls, then the best and median of --runs calls.
Prints one JSON object. Never run by tests or CI:

    python3 internal/anchors/torch_bf16_mm.py --threads 2
"""
import argparse
import json
import platform
import statistics
import time

import torch

# name: (m, n, k), as modelShapes in internal/gemm/bench_test.go.
SHAPES = {
    "img_qkv": (1028, 3840, 1280),
    "img_o": (1028, 1280, 1280),
    "img_fc1": (1028, 5120, 1280),
    "img_fc2": (1028, 1280, 5120),
    "txt_qkv": (616, 3072, 1024),
    "txt_o": (616, 1024, 1024),
    "txt_fc1": (616, 4096, 1024),
    "txt_fc2": (616, 1024, 4096),
    "patch": (1024, 1280, 588),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    clock = time.thread_time if args.threads == 1 else time.perf_counter
    torch.manual_seed(1)
    out = {"torch": torch.__version__, "threads": args.threads,
           "cpu": platform.processor() or platform.machine(),
           "clock": "thread cpu" if args.threads == 1 else "wall", "shapes": {}}
    with torch.no_grad():
        for name, (m, n, k) in SHAPES.items():
            x = (torch.rand(m, k) * 2 - 1).bfloat16()
            w = (torch.rand(n, k) * 2 - 1).bfloat16()
            times = []
            for i in range(args.warmup + args.runs):
                t0 = clock()
                torch.mm(x, w.t())
                dt = clock() - t0
                if i >= args.warmup:
                    times.append(dt)
            flops = 2.0 * m * n * k
            best, med = min(times), statistics.median(times)
            out["shapes"][name] = {
                "m": m, "n": n, "k": k,
                "best_ms": round(best * 1e3, 3), "median_ms": round(med * 1e3, 3),
                "best_gflops": round(flops / best / 1e9, 1),
                "median_gflops": round(flops / med / 1e9, 1),
            }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
