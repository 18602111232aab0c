#!/usr/bin/env python3
"""Streaming-read rate of the GPU by size: the ceiling under SpMV on the small regular matrices.

SpMV on a matrix of a few tens of megabytes runs for 10 to 50 microseconds, where a launch's
start and its last wave cost a share of the time that a copy of gigabytes does not pay. This
script runs a kernel that only reads (16-byte loads, four in flight per thread, four blocks of
512 threads per SM), `read16`, and a device-to-device copy over buffers of the sizes given.
Run it under ncu for the kernels' own times, which is what the SpMV figures compare with:

    ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum \
        -k regex:read16 python3 bench/read_rate.py --reps 10

Its own table times each call with CUDA events, as `sparrow bench` does, but from Python: below
about 100 MB CuPy's launch latency (the GPU idles between the first event and the kernel) is
most of those times, so they are an upper bound there. With CuPy's RawKernel; no sparrow code.

Usage: python3 bench/read_rate.py [--mb 33,48,54,82,133,145,220,1024] [--reps 50]
"""
import argparse
import statistics

import cupy as cp

SRC = r"""
extern "C" __global__ void __launch_bounds__(512) read16(const uint4* __restrict__ p, long long n, unsigned* out) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    unsigned s = 0;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const uint4 a = __ldg(p + i), b = __ldg(p + i + stride), c = __ldg(p + i + 2 * stride),
                    d = __ldg(p + i + 3 * stride);
        s ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
    }
    for (; i < n; i += stride) {
        const uint4 a = __ldg(p + i);
        s ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (s == 0x9e3779b9u) out[0] = s;
}
"""


def timed(fn, reps):
    for _ in range(5):
        fn()
    cp.cuda.Device().synchronize()
    out = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(cp.cuda.get_elapsed_time(a, b) * 1e-3)
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", default="33,48,54,82,133,145,220,1024")
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args()
    if args.reps < 1:
        ap.error("--reps: at least 1")
    big = 1 << 30
    try:
        sizes = [float(x) for x in args.mb.split(",")]
    except ValueError:
        ap.error(f"--mb: {args.mb!r} is not a comma-separated list of megabytes")
    if any(not 0 < mb * 1e6 <= big for mb in sizes):
        ap.error(f"--mb: every size must be above 0 and at most {big / 1e6:.0f} (the 1 GiB buffers)")
    read16 = cp.RawKernel(SRC, "read16")
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    sink = cp.zeros(1, dtype=cp.uint32)
    src, dst = cp.ones(big // 4, dtype=cp.float32), cp.empty(big // 4, dtype=cp.float32)
    copy_rate = 2 * big / timed(lambda: cp.copyto(dst, src), args.reps)
    print(f"copy of 1,024 MiB: {copy_rate / 1e9:.0f} GB/s (read + written)")
    print(f"{'MB':>6} {'read us':>9} {'read GB/s':>10} {'% of copy':>9} {'copy us':>9} {'% of copy':>9}")
    for mb in sizes:
        nbytes = int(mb * 1e6) // 16 * 16
        vec = src.view(cp.uint8)[:nbytes].view(cp.uint32)
        n = nbytes // 16
        t_read = timed(lambda: read16((sms * 4,), (512,), (vec, cp.int64(n), sink)), args.reps)
        half = nbytes // 2 // 4
        a, b = vec[:half], dst[:half]
        t_copy = timed(lambda: cp.copyto(b, a.view(cp.float32)), args.reps)
        print(
            f"{mb:6.0f} {t_read * 1e6:9.2f} {nbytes / t_read / 1e9:10.0f} {nbytes / t_read / copy_rate:9.1%}"
            f" {t_copy * 1e6:9.2f} {2 * half * 4 / t_copy / copy_rate:9.1%}"
        )


if __name__ == "__main__":
    main()
