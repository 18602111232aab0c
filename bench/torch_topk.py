"""Times torch.topk on the GPU on the shapes of `sparrow bench topk`, for a side-by-side table.

Run on the GPU host: python3 bench/torch_topk.py [--reps 20] [--set targets|serving] [--jsonl FILE]
f32 keys uniform in [1, 2), largest, unsorted (sorted=False), one row per segment; CUDA events
around each call after warm-up; median and minimum in milliseconds."""
import argparse
import json
import statistics

import torch

SHAPES = [
    (131_072, 2_048, 64),
    (262_144, 64, 1_024),
    (262_144, 2_048, 1_024),
    (2_097_152, 1_024, 16),
    (1_024, 16, 100_000),
    (8_192, 256, 4_096),
    (268_435_456, 1_024, 1),
]

SERVING = [
    (163_840, 2_048, 4),
    (131_072, 2_048, 1),
    (131_072, 50, 1),
    (131_072, 50, 64),
    (32_768, 2_048, 16),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--jsonl")
    ap.add_argument("--set", choices=["targets", "serving"], default="targets")
    args = ap.parse_args()
    gen = torch.Generator(device="cuda").manual_seed(21)
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    print(f"{'length':>11} {'k':>6} {'segments':>8} {'median ms':>10} {'min ms':>10}")
    out = []
    for length, k, segs in SERVING if args.set == "serving" else SHAPES:
        x = torch.rand((segs, length), device="cuda", generator=gen) + 1.0
        for _ in range(3):
            torch.topk(x, k, dim=1, largest=True, sorted=False)
        torch.cuda.synchronize()
        times = []
        for _ in range(args.reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            torch.topk(x, k, dim=1, largest=True, sorted=False)
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        rec = {"len": length, "k": k, "segments": segs, "median_ms": statistics.median(times), "min_ms": min(times), "reps": args.reps}
        out.append(rec)
        print(f"{length:>11} {k:>6} {segs:>8} {rec['median_ms']:>10.4f} {rec['min_ms']:>10.4f}")
        del x
        torch.cuda.empty_cache()
    if args.jsonl:
        with open(args.jsonl, "a") as f:
            for r in out:
                f.write(json.dumps({"backend": "torch.topk", **r}) + "\n")


if __name__ == "__main__":
    main()
