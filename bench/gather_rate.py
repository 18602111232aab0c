#!/usr/bin/env python3
"""Random-gather rate of the GPU: the floor under SpMV on random columns.

SpMV on a matrix with uniformly random columns reads one element of x per entry at a random
position; x (4 MB for a million f32 columns) stays in L2, so each entry costs an L2 request for a
32-byte sector whatever the kernel does. This script times three kernels over the same count of
entries, with CuPy's RawKernel (no sparrow code):

- `stream`: read the index array only (4 bytes per entry, coalesced);
- `gather`: read the index array and gather x at each index, summing 16 entries per output;
- `hashed`: gather x at hashed positions without an index array (the L2 request rate alone).

Usage: python3 bench/gather_rate.py [--entries 16000000] [--xlen 1000000,2000000,16000000]
"""
import argparse

import cupy as cp

SRC = r"""
extern "C" __global__ void stream(const int* __restrict__ idx, long long m, float* out) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    int s = 0;
    for (; i < m; i += stride) s += __ldg(idx + i);
    if (s == 0x7fffffff) out[0] = (float)s;
}
extern "C" __global__ void gather(const int* __restrict__ idx, const float* __restrict__ x, long long m,
                                  float* __restrict__ y) {
    // 16 consecutive entries per output, read by 16 lanes each 1/16 apart (as a row-split kernel would).
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long row = t / 4, lane = t % 4;
    if (row * 16 >= m) return;
    float s = 0.f;
    #pragma unroll
    for (int k = 0; k < 4; k++) {
        long long p = row * 16 + lane * 4 + k;
        if (p < m) s += __ldg(x + __ldg(idx + p));
    }
    s += __shfl_xor_sync(0xffffffffu, s, 1);
    s += __shfl_xor_sync(0xffffffffu, s, 2);
    if (lane == 0) y[row] = s;
}
extern "C" __global__ void hashed(const float* __restrict__ x, unsigned mask, long long m, float* __restrict__ y) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t * 16 >= m) return;
    float s = 0.f;
    #pragma unroll
    for (int k = 0; k < 16; k++) {
        unsigned h = (unsigned)(t * 16 + k) * 2654435761u;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        s += __ldg(x + (h & mask));
    }
    y[t] = s;
}
"""


def timed(fn, reps=20):
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=16_000_000)
    ap.add_argument("--xlen", default="1000000,2000000,16000000")
    args = ap.parse_args()
    mod = cp.RawModule(code=SRC, options=("-std=c++17",))
    k_stream, k_gather, k_hashed = (mod.get_function(n) for n in ("stream", "gather", "hashed"))
    m = args.entries
    out = cp.zeros(1, dtype=cp.float32)
    y = cp.zeros((m + 15) // 16, dtype=cp.float32)
    block = 256
    for xlen in [int(v) for v in args.xlen.split(",")]:
        rng = cp.random.default_rng(7)
        idx = rng.integers(0, xlen, size=m, dtype=cp.int32)
        x = rng.random(xlen, dtype=cp.float32)
        sms = cp.cuda.Device().attributes["MultiProcessorCount"]
        t_stream = timed(lambda: k_stream((sms * 8,), (block,), (idx, cp.int64(m), out)))
        rows = (m + 15) // 16
        t_gather = timed(lambda: k_gather(((rows * 4 + block - 1) // block,), (block,), (idx, x, cp.int64(m), y)))
        pow2 = 1 << (xlen.bit_length() - 1)
        t_hashed = timed(
            lambda: k_hashed(((rows + block - 1) // block,), (block,), (x, cp.uint32(pow2 - 1), cp.int64(m), y))
        )
        print(
            f"x {xlen:>10} ({xlen * 4 / 2**20:7.1f} MiB)  entries {m}:  "
            f"stream idx {t_stream * 1e3:7.1f} us ({m * 4 / t_stream / 1e6:6.0f} GB/s)  "
            f"gather {t_gather * 1e3:7.1f} us ({m / t_gather / 1e6:6.1f} G entries/s)  "
            f"hashed (x of {pow2 * 4 / 2**20:.0f} MiB) {t_hashed * 1e3:7.1f} us ({m / t_hashed / 1e6:6.1f} G gathers/s)"
        )


if __name__ == "__main__":
    main()
