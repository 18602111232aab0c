"""Overhead of `sparrow.topk` on CUDA tensors over the Rust call on the same data, with
torch.topk beside it. Run on a GPU host with torch and the sparrow wheel installed:

    python bench/python_overhead.py [--reps 200] [--json out.json]

Each case times (1) `sparrow.topk` from Python, (2) the same prepared plan run from Rust in a
loop (`_native.topk_cuda(..., reps=N)`: no Python between runs) and (3) torch.topk; all on
the current stream, waited for once at the end. The overhead is (1) - (2) per call.
"""

import argparse
import json
import time

import torch

import sparrow
from sparrow import _native

CASES = [(64, 131072, 2048), (100000, 1024, 16)]


def per_call(fn, reps):
    fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / reps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    print(f"{torch.cuda.get_device_name()}; {args.reps} calls each; microseconds per call")
    print(f"{'rows x length, k':>24} {'python':>9} {'rust':>9} {'overhead':>9} {'torch':>9}")
    for r, n, k in CASES:
        x = torch.rand(r, n, device="cuda")
        py = per_call(lambda: sparrow.topk(x, k, sorted=False, tie_break="fast"), args.reps)
        vals = torch.empty(r, k, device="cuda")
        idx = torch.empty(r, k, dtype=torch.int64, device="cuda")
        stream = torch.cuda.current_stream().cuda_stream
        _native.topk_cuda(x, vals, idx, k, True, False, "fast", stream)
        rust = min(_native.topk_cuda(x, vals, idx, k, True, False, "fast", stream, reps=args.reps) for _ in range(3))
        th = per_call(lambda: torch.topk(x, k, sorted=False), args.reps)
        row = {"rows": r, "length": n, "k": k, "python_us": py * 1e6, "rust_us": rust * 1e6,
               "overhead_us": (py - rust) * 1e6, "torch_us": th * 1e6, "gpu": torch.cuda.get_device_name()}
        rows.append(row)
        print(f"{f'{r} x {n}, {k}':>24} {py * 1e6:9.1f} {rust * 1e6:9.1f} {(py - rust) * 1e6:9.1f} {th * 1e6:9.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
