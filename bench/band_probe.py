#!/usr/bin/env python3
"""SpMV over a band staged into shared memory by bulk copies: how close it comes to a bare read.

The banded panel matrix (62,451 rows, 64 a row) moves 16 MB of values in f32; its rows inside the
band's run are laid out end to end, so a block can copy a whole range of rows into shared memory
with the TMA's bulk copies (no registers held while the bytes are in flight), read x's window for
those rows once, and sum each row from shared memory. This script times that design against the
same product on the CPU oracle (float64), with CuPy's RawModule and sparrow's PTX wrappers
(`sparrow/src/kernels/common.cuh`); no sparrow kernel. Each variant
is (blocks a SM, rows a chunk, stages a block): a block takes a contiguous range of chunks and
keeps `stages` of them in flight.

Usage: python3 bench/band_probe.py [--reps 20] [--variants 2:60:4,3:40:4]
Run under ncu for the kernels' own times:
    ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum -k regex:band \
        python3 bench/band_probe.py --reps 3
"""
import argparse
import pathlib
import statistics

import cupy as cp
import numpy as np
from cold_timing import cold_times

SRC = r"""
#include "common.cuh"

template <typename T>
struct Span {
    const unsigned char* src;
    u32 bytes;
    int ph;  // entries of the copy before the chunk's first
    i64 ra, rb;
};
template <typename T>
__device__ __forceinline__ Span<T> span(const T* val, i64 run_lo, i64 run_hi, i64 run_at, int d, int rpc, i64 c) {
    Span<T> s;
    s.ra = run_lo + c * rpc;
    s.rb = min(run_hi, s.ra + rpc);
    const T* p = val + run_at + (s.ra - run_lo) * d;
    const T* q = val + run_at + (s.rb - run_lo) * d;
    const u64 a = (u64)p & ~15ull, b = ((u64)q + 15) & ~15ull;
    s.src = (const unsigned char*)a;
    s.bytes = (u32)(b - a);
    s.ph = (int)(p - (const T*)a);
    return s;
}

template <typename T>
__device__ __forceinline__ void band(const i64* row_ptr, const int* col, const T* val, i64 nrows, int d, int first,
                                     i64 run_lo, i64 run_hi, i64 run_at, const T* x, T* y, int rpc, int cpb,
                                     int nstage, int stage_bytes, int xs_bytes) {
    extern __shared__ __align__(128) unsigned char sm[];
    u64* bar = (u64*)sm;
    T* xs = (T*)(sm + 128);
    unsigned char* stages = sm + 128 + xs_bytes;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
    const i64 nchunks = (run_hi - run_lo + rpc - 1) / rpc;
    const i64 c0 = (i64)blockIdx.x * cpb;
    const i64 c1 = min(c0 + cpb, nchunks);
    if (threadIdx.x == 0) {
        for (int q = 0; q < nstage; q++) mbar_init(&bar[q], 1);
        fence_mbar_init();
    }
    __syncthreads();
    if (threadIdx.x == 0)
        for (int q = 0; q < nstage && c0 + q < c1; q++) {
            const Span<T> s = span(val, run_lo, run_hi, run_at, d, rpc, c0 + q);
            mbar_arrive_expect_tx(&bar[q], s.bytes);
            bulk_copy_g2s(stages + q * stage_bytes, s.src, s.bytes, &bar[q]);
        }
    const i64 xb = run_lo + c0 * rpc;  // the block's first row
    if (c0 < c1) {
        const i64 xe = min(run_hi, run_lo + c1 * rpc);
        for (int j = threadIdx.x; j < (int)(xe - xb) + d - 1; j += blockDim.x) xs[j] = x[xb + first + j];
    }
    // Rows outside the run: a warp a row over its columns.
    const i64 nout = run_lo + (nrows - run_hi);
    for (i64 o = (i64)blockIdx.x * nw + warp; o < nout; o += (i64)gridDim.x * nw) {
        const i64 r = o < run_lo ? o : run_hi + (o - run_lo);
        T sum = T(0);
        for (i64 k = row_ptr[r] + lane; k < row_ptr[r + 1]; k += 32) sum += val[k] * x[col[k]];
        for (int m = 16; m >= 1; m /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, m);
        if (lane == 0) y[r] = sum;
    }
    __syncthreads();
    for (i64 c = c0, i = 0; c < c1; c++, i++) {
        const int s = (int)(i % nstage);
        const u32 par = (u32)((i / nstage) & 1);
        while (!mbar_try_wait(&bar[s], par)) {
        }
        const Span<T> sp = span(val, run_lo, run_hi, run_at, d, rpc, c);
        const T* st = (const T*)(stages + s * stage_bytes) + sp.ph;
        for (i64 r = sp.ra + warp; r < sp.rb; r += nw) {
            const T* v = st + (r - sp.ra) * d;
            const T* xw = xs + (r - xb);
            T sum = T(0);
            for (int k = lane; k < d; k += 32) sum += v[k] * xw[k];
            for (int m = 16; m >= 1; m /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, m);
            if (lane == 0) y[r] = sum;
        }
        __syncthreads();
        if (threadIdx.x == 0 && c + nstage < c1) {
            fence_proxy_async();
            const Span<T> n = span(val, run_lo, run_hi, run_at, d, rpc, c + nstage);
            mbar_arrive_expect_tx(&bar[s], n.bytes);
            bulk_copy_g2s(stages + s * stage_bytes, n.src, n.bytes, &bar[s]);
        }
    }
}
#define BAND(T, NAME)                                                                                  \
    extern "C" __global__ void __launch_bounds__(1024) NAME(                                          \
        const i64* row_ptr, const int* col, const T* val, i64 nrows, int d, int first, i64 run_lo,     \
        i64 run_hi, i64 run_at, const T* x, T* y, int rpc, int cpb, int nstage, int stage_bytes,       \
        int xs_bytes) {                                                                                \
        band<T>(row_ptr, col, val, nrows, d, first, run_lo, run_hi, run_at, x, y, rpc, cpb, nstage,     \
                stage_bytes, xs_bytes);                                                                \
    }
BAND(float, band_f32)
BAND(double, band_f64)
"""


def banded(n, w, dtype, rng):
    starts = np.clip(np.arange(n) - w // 2, 0, n - w)
    col = (starts[:, None] + np.arange(w)[None, :]).astype(np.int32).ravel()
    row_ptr = (np.arange(n + 1, dtype=np.int64) * w)
    val = rng.uniform(-1, 1, n * w).astype(dtype)
    # pad the values to a multiple of 4 entries (as sparrow's upload does)
    pad = (-len(val)) % 4
    return row_ptr, col, np.concatenate([val, np.zeros(pad, dtype)]), starts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--variants", default="1:120:4,2:60:4,2:30:8,3:40:4,4:30:4,2:120:2")
    ap.add_argument("--threads", type=int, default=256)
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    kernels = pathlib.Path(__file__).resolve().parent.parent / "sparrow" / "src" / "kernels"
    mod = cp.RawModule(code=SRC, options=("-std=c++17", f"-I{kernels}"))
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    n, w = 62_451, 64
    for dtype, kname in [(np.float32, "band_f32"), (np.float64, "band_f64")]:
        kern = mod.get_function(kname)
        row_ptr, col, val, starts = banded(n, w, dtype, rng)
        follows = starts == np.arange(n) - w // 2
        idx = np.flatnonzero(follows)
        run_lo, run_hi = int(idx[0]), int(idx[-1]) + 1
        assert follows[run_lo:run_hi].all()
        first = -(w // 2)
        x = rng.uniform(-1, 1, n).astype(dtype)
        want = (val[: n * w].astype(np.float64).reshape(n, w) * x.astype(np.float64)[col.reshape(n, w)]).sum(1)
        d_rp, d_col, d_val, d_x = cp.asarray(row_ptr), cp.asarray(col), cp.asarray(val), cp.asarray(x)
        esz = np.dtype(dtype).itemsize
        print(f"{kname}: {n} rows x {w}, run {run_lo}..{run_hi}, {n * w * esz / 1e6:.1f} MB of values")
        for v in args.variants.split(","):
            bps, rpc, nstage = (int(t) for t in v.split(":"))
            nchunks = -(-(run_hi - run_lo) // rpc)
            grid = min(nchunks, sms * bps)
            cpb = -(-nchunks // grid)
            grid = -(-nchunks // cpb)
            stage_bytes = (rpc * w * esz + 32 + 127) // 128 * 128
            xs_bytes = ((cpb * rpc + w - 1) * esz + 127) // 128 * 128
            smem = 128 + xs_bytes + nstage * stage_bytes
            if smem > 227 * 1024 // bps:
                print(f"  {v}: {smem} B of shared memory a block, too many for {bps} a SM; skipped")
                continue
            kern.max_dynamic_shared_size_bytes = smem
            y = cp.full(n, cp.nan, dtype=dtype)
            launch = lambda: kern(
                (grid,), (args.threads,),
                (d_rp, d_col, d_val, cp.int64(n), cp.int32(w), cp.int32(first), cp.int64(run_lo),
                 cp.int64(run_hi), cp.int64(run_lo * w), d_x, y, cp.int32(rpc), cp.int32(cpb),
                 cp.int32(nstage), cp.int32(stage_bytes), cp.int32(xs_bytes)),
                shared_mem=smem,
            )
            launch()
            got = cp.asnumpy(y).astype(np.float64)
            err = np.max(np.abs(got - want)) / max(1e-30, np.max(np.abs(want)))
            times = cold_times(launch, args.reps)
            print(f"  {v}: grid {grid}, {cpb} chunks a block, {smem} B shared, cold median "
                  f"{statistics.median(times):.2f} us (min {min(times):.2f}), max rel err {err:.1e}")


if __name__ == "__main__":
    main()
