#!/usr/bin/env python3
"""f64 SpMV over short irregular rows (the FEM-like panel matrix): does a lane's batch of entries
in flight at once beat a loop that waits on each batch in turn?

The panel's f64 FEM-like rows (16.7 entries a row on average, columns within 64 of the row) run
at about 63 % of the copy rate on every sparrow path. Its best path, two lanes a row, loads four
entries a lane, their x, then sums them, and loops; the entries left over (fewer than four) take
a loop of one entry at a time, each waiting on its column and then its x. This script builds a
matrix of the same shape (1,000,000 nodes, 1,500,000 random 4-node elements in windows of 64; not
sparrow's generator, so not the same entries) with CuPy and times, with CuPy's RawModule (no
sparrow code):

- `loop_k2_u4`: the two-lane loop as sparrow's row kernel has it (main loop of 4, then a tail);
- `pred_kK_uU`: K lanes a row, U entries a lane loaded at once, predicated on the row's end (no
  tail loop), their x loaded next, then the products; a row longer than K * U loops;
- cuSPARSE's SpMV (CuPy's csr @ x) for reference.

Usage: python3 bench/rows_probe.py [--reps 20]
Run under ncu for the kernels' own times:
    ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__registers_per_thread \
        -k regex:'loop|pred' python3 bench/rows_probe.py --reps 2
"""
import argparse
import statistics

import cupy as cp
import cupyx.scipy.sparse as sp
import numpy as np
from cold_timing import cold_times

SRC = r"""
// Two lanes a row, four entries a lane a step, then one at a time: sparrow's f64 row kernel at N = 1.
extern "C" __global__ void __launch_bounds__(256) loop_k2_u4(int nrows, const int* __restrict__ rp,
        const int* __restrict__ col, const double* __restrict__ val, const double* __restrict__ x,
        double* __restrict__ y) {
    constexpr int K = 2, U = 4;
    const int lane = threadIdx.x % K;
    const long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / K;
    double sum = 0.0;
    if (row < nrows) {
        const int s = rp[row], e = rp[row + 1];
        int p = s + lane;
        for (; p + (U - 1) * K < e; p += U * K) {
            int c[U];
            double a[U], b[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                c[u] = __ldg(col + p + u * K);
                a[u] = __ldg(val + p + u * K);
            }
#pragma unroll
            for (int u = 0; u < U; u++) b[u] = __ldg(x + c[u]);
#pragma unroll
            for (int u = 0; u < U; u++) sum += a[u] * b[u];
        }
        for (; p < e; p += K) sum += __ldg(val + p) * __ldg(x + __ldg(col + p));
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    if (row < nrows && lane == 0) y[row] = sum;
}

// C: the column type; REL: columns are offsets from the row (bench/narrow_cols_probe.py).
template <typename C, bool REL, int K, int U>
__device__ __forceinline__ void pred(int nrows, const int* __restrict__ rp, const C* __restrict__ col,
                                     const double* __restrict__ val, const double* __restrict__ x,
                                     double* __restrict__ y) {
    const int lane = threadIdx.x % K;
    const long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / K;
    double sum = 0.0;
    if (row < nrows) {
        const int s = rp[row], e = rp[row + 1];
        const double* xr = REL ? x + row : x;
        for (int p0 = s + lane; p0 < e; p0 += K * U) {
            int c[U];
            double a[U], b[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const bool ok = p0 + u * K < e;
                c[u] = ok ? (int)__ldg(col + p0 + u * K) : 0;
                a[u] = ok ? __ldg(val + p0 + u * K) : 0.0;
            }
#pragma unroll
            for (int u = 0; u < U; u++) b[u] = p0 + u * K < e ? __ldg(xr + c[u]) : 0.0;
#pragma unroll
            for (int u = 0; u < U; u++)
                if (p0 + u * K < e) sum += a[u] * b[u];
        }
    }
#pragma unroll
    for (int o = K / 2; o >= 1; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (row < nrows && lane == 0) y[row] = sum;
}
#define PRED(K, U)                                                                                   \
    extern "C" __global__ void __launch_bounds__(256) pred_k##K##_u##U(                              \
        int nrows, const int* rp, const int* col, const double* val, const double* x, double* y) {   \
        pred<int, false, K, U>(nrows, rp, col, val, x, y);                                           \
    }
PRED(2, 4) PRED(2, 8) PRED(2, 12) PRED(4, 4) PRED(4, 6) PRED(8, 2) PRED(8, 4) PRED(1, 16)
"""

VARIANTS = [("loop_k2_u4", 2)] + [
    (f"pred_k{k}_u{u}", k) for k, u in [(2, 4), (2, 8), (2, 12), (4, 4), (4, 6), (8, 2), (8, 4), (1, 16)]
]


def fem_like(nnodes, nelems, seed):
    rng = np.random.default_rng(seed)
    window = 64
    base = rng.integers(0, nnodes - window + 1, nelems)
    nodes = base[:, None] + rng.integers(0, window, (nelems, 4))
    rows, cols, vals = [], [], []
    for a in range(4):
        for b in range(a, 4):
            v = rng.uniform(-1, 1, nelems)
            rows += [nodes[:, a], nodes[:, b][nodes[:, a] != nodes[:, b]]]
            cols += [nodes[:, b], nodes[:, a][nodes[:, a] != nodes[:, b]]]
            vals += [v, v[nodes[:, a] != nodes[:, b]]]
    r, c, v = (cp.asarray(np.concatenate(t)) for t in (rows, cols, vals))
    a = sp.coo_matrix((v, (r, c)), shape=(nnodes, nnodes)).tocsr()
    a.sum_duplicates()
    a.sort_indices()
    return a


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    a = fem_like(1_000_000, 1_500_000, 19)
    n = a.shape[0]
    lens = cp.diff(a.indptr)
    print(f"FEM-like f64: {n} rows, {a.nnz} entries, {a.nnz / n:.1f} a row (max {int(lens.max())}), "
          f"CSR {a.nnz * 12 / 1e6 + n * 4 / 1e6:.0f} MB (int32 row pointers)")
    x = cp.asarray(np.random.default_rng(5).uniform(-1, 1, n))
    want = cp.asnumpy(a @ x)
    mod = cp.RawModule(code=SRC, options=("-std=c++17",))

    def cold(fn):
        fn()
        return statistics.median(cold_times(fn, args.reps))

    t = cold(lambda: a @ x)
    print(f"  cusparse (csr @ x): cold median {t:.1f} us")
    for name, k in VARIANTS:
        kern = mod.get_function(name)
        y = cp.full(n, cp.nan)
        grid = (n * k + 255) // 256
        launch = lambda: kern((grid,), (256,), (cp.int32(n), a.indptr, a.indices, a.data, x, y))
        t = cold(launch)
        got = cp.asnumpy(y)
        err = np.max(np.abs(got - want)) / np.max(np.abs(want))
        print(f"  {name}: cold median {t:.1f} us, max rel err against cuSPARSE {err:.1e}")


if __name__ == "__main__":
    main()
