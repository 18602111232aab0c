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


def breakdown(reps):
    """Host time of each step of `sparrow.topk` on a CUDA tensor, in microseconds."""
    from sparrow._arrays import current_stream
    from sparrow._topk_cuda import topk_cuda

    x = torch.rand(64, 131072, device="cuda")
    s = torch.cuda.current_stream().cuda_stream
    s = s or 1  # DLPack spells the legacy default stream 1
    vals = torch.empty(64, 2048, device="cuda")
    idx = torch.empty(64, 2048, dtype=torch.int64, device="cuda")
    steps = {
        "x.__dlpack__(max_version, stream)": lambda: x.__dlpack__(stream=s, max_version=(1, 0)),
        "x.__dlpack__(stream)": lambda: x.__dlpack__(stream=s),
        "x.__dlpack__()": lambda: x.__dlpack__(),
        "torch.empty x2": lambda: (torch.empty(64, 2048, device="cuda"), torch.empty(64, 2048, dtype=torch.int64, device="cuda")),
        "current_stream": lambda: current_stream(x),
        "movedim+contiguous+reshape": lambda: x.movedim(1, -1).contiguous().reshape(-1, 131072),
        "_native.topk_cuda": lambda: _native.topk_cuda(x, vals, idx, 2048, True, False, "fast", s),
        "topk_cuda (python)": lambda: topk_cuda(x, 2048, -1, True, False, "fast", None, None),
        "sparrow.topk": lambda: sparrow.topk(x, 2048, sorted=False, tie_break="fast"),
    }
    for name, fn in steps.items():
        fn()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        host = (time.perf_counter() - t) / reps
        torch.cuda.synchronize()
        print(f"{name:>36}: {host * 1e6:8.1f} us host")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--json")
    ap.add_argument("--breakdown", action="store_true", help="also time the pieces of one Python call")
    args = ap.parse_args()
    if args.breakdown:
        breakdown(args.reps)
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
