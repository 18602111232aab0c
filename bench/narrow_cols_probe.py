#!/usr/bin/env python3
"""f64 SpMV over the FEM-like rows with fewer bytes an entry: are these rows bound by the bytes
of A or by the latency of each row's chain?

CSR moves 12 bytes an entry in f64 (8 value + 4 column). The FEM-like rows keep their columns
within 64 of the row, so a column fits a signed byte as its offset from the row (9 bytes an
entry) or a 16-bit one (10 bytes). This script times, with CuPy's RawModule (no sparrow code), on
the matrix of `rows_probe.py`:

- `pred_k4_u4`: the best shape of `rows_probe.py` (CSR, four lanes a row, four entries a lane
  at once, predicated on the row's end);
- `off8_k4_u4`, `off16_k4_u4`: the same code over 8- and 16-bit column offsets from the row;
- `grp8_kK_uU`: rows padded to groups of four entries (offsets as one 32-bit word of four bytes,
  values as two 16-byte loads), K lanes a row, U groups a lane at once; padding entries carry
  the offset -128 and are skipped (an explicit zero must still turn an infinite x into NaN);
- `grp16_k4_u2`: the same groups with 16-bit offsets (one 8-byte load; -32768 marks padding).

Usage: python3 bench/narrow_cols_probe.py [--reps 20]
Under ncu for the kernels' own times:
    ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__registers_per_thread \
        -k regex:'pred|off|grp' python3 bench/narrow_cols_probe.py --reps 2
"""
import argparse
import statistics

import cupy as cp
import numpy as np
from cold_timing import cold_times
from rows_probe import SRC as ROWS_SRC
from rows_probe import fem_like

SRC = ROWS_SRC + r"""
extern "C" __global__ void __launch_bounds__(256) off8_k4_u4(int nrows, const int* rp, const signed char* d,
        const double* val, const double* x, double* y) { pred<signed char, true, 4, 4>(nrows, rp, d, val, x, y); }
extern "C" __global__ void __launch_bounds__(256) off16_k4_u4(int nrows, const int* rp, const short* d,
        const double* val, const double* x, double* y) { pred<short, true, 4, 4>(nrows, rp, d, val, x, y); }

// Groups of four entries: gp[row]..gp[row + 1] are the row's groups; d holds 4 offsets a group
// (4 bytes or 8), val 4 values a group (32 bytes, 16-byte aligned).
template <bool WIDE> struct Offs;
template <> struct Offs<false> {
    static constexpr int PAD = -128;
    __device__ static void load(const void* d, long long g, int (&c)[4]) {
        const unsigned w = __ldg((const unsigned*)d + g);
#pragma unroll
        for (int i = 0; i < 4; i++) c[i] = (int)(signed char)(w >> (8 * i));
    }
};
template <> struct Offs<true> {
    static constexpr int PAD = -32768;
    __device__ static void load(const void* d, long long g, int (&c)[4]) {
        const uint2 w = __ldg((const uint2*)d + g);
        c[0] = (int)(short)(w.x & 0xffff); c[1] = (int)(short)(w.x >> 16);
        c[2] = (int)(short)(w.y & 0xffff); c[3] = (int)(short)(w.y >> 16);
    }
};
template <bool WIDE, int K, int U>
__device__ __forceinline__ void grp(int nrows, const int* __restrict__ gp, const void* __restrict__ d,
                                    const double* __restrict__ val, const double* __restrict__ x,
                                    double* __restrict__ y) {
    const int lane = threadIdx.x % K;
    const long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / K;
    double sum = 0.0;
    if (row < nrows) {
        const int s = gp[row], e = gp[row + 1];
        const double* xr = x + row;
        for (int g0 = s + lane; g0 < e; g0 += K * U) {
            int c[U][4];
            double2 a[U][2];
            double b[U][4];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int g = g0 + u * K;
                if (g < e) {
                    Offs<WIDE>::load(d, g, c[u]);
                    a[u][0] = __ldg((const double2*)val + 2 * (long long)g);
                    a[u][1] = __ldg((const double2*)val + 2 * (long long)g + 1);
                } else {
#pragma unroll
                    for (int i = 0; i < 4; i++) c[u][i] = Offs<WIDE>::PAD;
                    a[u][0] = a[u][1] = make_double2(0.0, 0.0);
                }
            }
#pragma unroll
            for (int u = 0; u < U; u++)
#pragma unroll
                for (int i = 0; i < 4; i++) b[u][i] = c[u][i] != Offs<WIDE>::PAD ? __ldg(xr + c[u][i]) : 0.0;
#pragma unroll
            for (int u = 0; u < U; u++) {
                if (c[u][0] != Offs<WIDE>::PAD) sum += a[u][0].x * b[u][0];
                if (c[u][1] != Offs<WIDE>::PAD) sum += a[u][0].y * b[u][1];
                if (c[u][2] != Offs<WIDE>::PAD) sum += a[u][1].x * b[u][2];
                if (c[u][3] != Offs<WIDE>::PAD) sum += a[u][1].y * b[u][3];
            }
        }
    }
#pragma unroll
    for (int o = K / 2; o >= 1; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (row < nrows && lane == 0) y[row] = sum;
}
#define GRP(NAME, WIDE, K, U)                                                                      \
    extern "C" __global__ void __launch_bounds__(256) NAME(int nrows, const int* gp, const void* d, \
        const double* val, const double* x, double* y) { grp<WIDE, K, U>(nrows, gp, d, val, x, y); }
GRP(grp8_k2_u2, false, 2, 2) GRP(grp8_k4_u1, false, 4, 1) GRP(grp8_k2_u1, false, 2, 1)
GRP(grp8_k4_u2, false, 4, 2) GRP(grp8_k1_u4, false, 1, 4) GRP(grp16_k2_u2, true, 2, 2)
GRP(grp16_k4_u1, true, 4, 1)
"""

GROUPS = [("grp8_k2_u2", 2, 8), ("grp8_k4_u1", 4, 8), ("grp8_k2_u1", 2, 8), ("grp8_k4_u2", 4, 8),
          ("grp8_k1_u4", 1, 8), ("grp16_k2_u2", 2, 16), ("grp16_k4_u1", 4, 16)]


def groups(a, bits):
    """Rows padded to groups of four entries: group pointers, offsets from the row, values."""
    ip = cp.asnumpy(a.indptr).astype(np.int64)
    n = len(ip) - 1
    lens = np.diff(ip)
    glen = (lens + 3) // 4
    gp = np.zeros(n + 1, np.int64)
    np.cumsum(glen, out=gp[1:])
    rows = np.repeat(np.arange(n), lens)
    slot = np.arange(len(rows)) - ip[rows] + 4 * gp[rows]
    dt, pad = (np.int8, -128) if bits == 8 else (np.int16, -32768)
    d = np.full(4 * gp[-1], pad, dt)
    d[slot] = (cp.asnumpy(a.indices) - rows).astype(dt)
    v = np.zeros(4 * gp[-1])
    v[slot] = cp.asnumpy(a.data)
    return cp.asarray(gp.astype(np.int32)), cp.asarray(d), cp.asarray(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    a = fem_like(1_000_000, 1_500_000, 19)
    n = a.shape[0]
    ip = cp.asnumpy(a.indptr)
    off = cp.asnumpy(a.indices) - np.repeat(np.arange(n), np.diff(ip))
    assert np.abs(off).max() < 128
    d8, d16 = cp.asarray(off.astype(np.int8)), cp.asarray(off.astype(np.int16))
    g8, g16 = groups(a, 8), groups(a, 16)
    ng = int(g8[0][-1])
    print(f"FEM-like f64: {n} rows, {a.nnz} entries; CSR {a.nnz * 12 / 1e6:.0f} MB of entries, 8-bit offsets "
          f"{a.nnz * 9 / 1e6:.0f} MB, groups {ng} ({4 * ng / a.nnz:.3f} slots an entry) "
          f"{ng * 36 / 1e6:.0f} MB (8-bit) / {ng * 40 / 1e6:.0f} MB (16-bit)")
    x = cp.asarray(np.random.default_rng(5).uniform(-1, 1, n))
    want = cp.asnumpy(a @ x)
    mod = cp.RawModule(code=SRC, options=("-std=c++17",))

    def run(name, k, argv):
        kern = mod.get_function(name)
        y = cp.full(n, cp.nan)
        grid = (n * k + 255) // 256
        launch = lambda: kern((grid,), (256,), (cp.int32(n), *argv, x, y))
        launch()
        t = statistics.median(cold_times(launch, args.reps))
        err = np.max(np.abs(cp.asnumpy(y) - want)) / np.max(np.abs(want))
        print(f"  {name}: cold median {t:.1f} us, max rel err against cuSPARSE {err:.1e}")

    run("pred_k4_u4", 4, (a.indptr, a.indices, a.data))
    run("loop_k2_u4", 2, (a.indptr, a.indices, a.data))
    run("off8_k4_u4", 4, (a.indptr, d8, a.data))
    run("off16_k4_u4", 4, (a.indptr, d16, a.data))
    for name, k, bits in GROUPS:
        run(name, k, g8 if bits == 8 else g16)
    # An infinite x beside a padding slot must not turn a row into NaN; an explicit zero must.
    xs = x.copy()
    xs[0] = cp.inf
    kern = mod.get_function("grp8_k2_u2")
    y = cp.full(n, cp.nan)
    kern(((n * 2 + 255) // 256,), (256,), (cp.int32(n), *g8, xs, y))
    ref = cp.asnumpy(a @ xs)
    same = np.array_equal(np.isnan(cp.asnumpy(y)), np.isnan(ref))
    print(f"  grp8_k2_u2 with x[0] = inf: NaN rows as cuSPARSE's: {same}")


if __name__ == "__main__":
    main()
