#!/usr/bin/env python3
"""PyTorch anchor for BenchmarkBF16 in internal/gemm.

Times torch.mm on bfloat16 tensors (oneDNN; AMX tiles on CPUs that have
them) for the linear shapes of the ViT-H/14 forward that the Go benchmark
uses, y[m, n] = x[m, k] · wᵀ with w [n, k] as nn.Linear stores it, on
--threads threads: --warmup calls, then the best and median of --runs calls.
Prints one JSON object. Never run by tests or CI:

    python3 internal/anchors/torch_bf16_mm.py --threads 2

With --versus, a test binary of internal/gemm (`go test -c -o gemm.test
./internal/gemm`), it alternates shape by shape, --rounds times, between
that binary's BenchmarkBF16AMX/<shape> (10 calls, best) and torch.mm (10
calls after 3 warm-up, best), and reports each side's best over the rounds
and their ratio: on a shared machine whose speed comes and goes in
seconds, only runs this close together compare.

    python3 internal/anchors/torch_bf16_mm.py --threads 1 --versus /tmp/gemm.test
"""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
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
    ap.add_argument("--versus", help="internal/gemm test binary to alternate with")
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.versus:
        versus(args)
        return
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


def ours_gflops(binary, name, threads):
    """Best GFLOP/s of BenchmarkBF16AMX/name over 10 calls."""
    out = subprocess.run([binary, "-test.run", "XXX", "-test.bench", f"BF16AMX/{name}$",
                          "-test.benchtime", "10x", f"-gemm.threads={threads}"],
                         capture_output=True, text=True, check=True,
                         cwd=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gemm")).stdout
    found = re.search(r"([0-9.]+) amx_GFLOP/s", out)
    if not found:
        raise SystemExit(f"{binary}: no amx_GFLOP/s for {name} in:\n{out}")
    return float(found.group(1))


def versus(args):
    clock = time.thread_time if args.threads == 1 else time.perf_counter
    torch.manual_seed(1)
    runs = {name: ([], []) for name in SHAPES}
    with torch.no_grad():
        for _ in range(args.rounds):
            for name, (m, n, k) in SHAPES.items():
                runs[name][0].append(ours_gflops(args.versus, name, args.threads))
                x = (torch.rand(m, k) * 2 - 1).bfloat16()
                w = (torch.rand(n, k) * 2 - 1).bfloat16()
                best = float("inf")
                for i in range(13):
                    t0 = clock()
                    torch.mm(x, w.t())
                    if i >= 3:
                        best = min(best, clock() - t0)
                runs[name][1].append(2.0 * m * n * k / best / 1e9)
    out = {"torch": torch.__version__, "threads": args.threads, "rounds": args.rounds,
           "versus": args.versus, "clock": "thread cpu" if args.threads == 1 else "wall", "shapes": {}}
    for name, (ours, theirs) in runs.items():
        out["shapes"][name] = {
            "ours_gflops": max(ours), "torch_gflops": round(max(theirs), 1),
            "ratio": round(max(ours) / max(theirs), 2),
            "round_ratios": [round(a / b, 2) for a, b in zip(ours, theirs)],
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
