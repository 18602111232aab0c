// CSR times dense: C = alpha * A * B + beta * C, B and C row-major with leading dimensions.
// Row pointers are 64-bit, column indices 32-bit. Two families:
//   nnzsplit: a group of G lanes per row splits the row's entries; each lane keeps NMAX
//             partial sums (one per column of B, N <= NMAX), reduced by shuffles. For small N
//             and SpMV (N = 1), where lanes-over-columns would leave most lanes idle.
//   colwarp:  a group of L lanes per row; lanes own columns of B (coalesced reads of a row of
//             B), TN columns each per pass; the row's entries are loaded L at a time and
//             broadcast by shuffles. For N above 8.
// Every thread reaches every shuffle: rows past the end compute zeros and store nothing.
#include "common.cuh"

template <typename T, int NMAX, int G>
__device__ __forceinline__ void spmm_nnzsplit(i64 nrows, int n, const i64* __restrict__ row_ptr,
                                              const int* __restrict__ col, const T* __restrict__ val,
                                              const T* __restrict__ B, i64 ldb, T* __restrict__ C,
                                              i64 ldc, T alpha, T beta) {
    const int lane = threadIdx.x % G;
    const i64 row = (i64)blockIdx.x * (blockDim.x / G) + threadIdx.x / G;
    const bool active = row < nrows;
    T acc[NMAX];
#pragma unroll
    for (int j = 0; j < NMAX; j++) acc[j] = T(0);
    if (active) {
        const i64 s = row_ptr[row], e = row_ptr[row + 1];
#pragma unroll 4
        for (i64 p = s + lane; p < e; p += G) {
            const int c = ld_stream(col + p);
            const T a = ld_stream(val + p);
            const T* b = B + (i64)c * ldb;
#pragma unroll
            for (int j = 0; j < NMAX; j++)
                if (j < n) acc[j] += a * __ldg(b + j);
        }
    }
    // Butterfly within the group: every lane ends with the full sums.
#pragma unroll
    for (int j = 0; j < NMAX; j++)
#pragma unroll
        for (int off = G / 2; off > 0; off >>= 1) acc[j] += __shfl_xor_sync(0xffffffffu, acc[j], off, G);
    if (active) {
#pragma unroll
        for (int j = 0; j < NMAX; j++)
            if (j < n && j % G == lane) axpby_store(C + row * ldc + j, acc[j], alpha, beta);
    }
}

template <typename T, int L, int TN>
__device__ __forceinline__ void spmm_colwarp(i64 nrows, int n, const i64* __restrict__ row_ptr,
                                             const int* __restrict__ col, const T* __restrict__ val,
                                             const T* __restrict__ B, i64 ldb, T* __restrict__ C,
                                             i64 ldc, T alpha, T beta) {
    const int lane = threadIdx.x % L;
    const i64 row = (i64)blockIdx.x * (blockDim.x / L) + threadIdx.x / L;
    const bool active = row < nrows;
    const u32 mask = group_mask<L>();
    i64 s = 0, e = 0;
    if (active) {
        s = row_ptr[row];
        e = row_ptr[row + 1];
    }
    // n is the same for every thread, so every lane runs the same passes.
    for (int col0 = 0; col0 < n; col0 += L * TN) {
        T acc[TN];
#pragma unroll
        for (int t = 0; t < TN; t++) acc[t] = T(0);
        // s and e are the same across the group, so the group runs these loops in step.
        for (i64 base = s; base < e; base += L) {
            int c = 0;
            T a = T(0);
            if (base + lane < e) {
                c = ld_stream(col + base + lane);
                a = ld_stream(val + base + lane);
            }
            const int cnt = (int)((e - base) < L ? (e - base) : L);
            for (int k = 0; k < cnt; k++) {
                const int ck = __shfl_sync(mask, c, k, L);
                const T ak = __shfl_sync(mask, a, k, L);
                const T* b = B + (i64)ck * ldb + col0 + lane;
#pragma unroll
                for (int t = 0; t < TN; t++)
                    if (col0 + lane + t * L < n) acc[t] += ak * __ldg(b + t * L);
            }
        }
        if (active) {
#pragma unroll
            for (int t = 0; t < TN; t++) {
                const int j = col0 + lane + t * L;
                if (j < n) axpby_store(C + row * ldc + j, acc[t], alpha, beta);
            }
        }
    }
}

#define SPMM_ARGS(T)                                                                              \
    i64 nrows, int n, const i64 *row_ptr, const int *col, const T *val, const T *B, i64 ldb, T *C, \
        i64 ldc, T alpha, T beta
#define SPMM_PASS nrows, n, row_ptr, col, val, B, ldb, C, ldc, alpha, beta

#define NNZSPLIT(T, TNAME, NMAX, G)                                                                     \
    extern "C" __global__ void __launch_bounds__(256) spmm_nnzsplit_##TNAME##_n##NMAX##_g##G(SPMM_ARGS(T)) { \
        spmm_nnzsplit<T, NMAX, G>(SPMM_PASS);                                                           \
    }
#define NNZSPLIT_G(T, TNAME, NMAX) \
    NNZSPLIT(T, TNAME, NMAX, 4) NNZSPLIT(T, TNAME, NMAX, 8) NNZSPLIT(T, TNAME, NMAX, 16) NNZSPLIT(T, TNAME, NMAX, 32)
#define NNZSPLIT_ALL(T, TNAME) \
    NNZSPLIT_G(T, TNAME, 1) NNZSPLIT_G(T, TNAME, 2) NNZSPLIT_G(T, TNAME, 4) NNZSPLIT_G(T, TNAME, 8)

#define COLWARP(T, TNAME, L, TN)                                                                         \
    extern "C" __global__ void __launch_bounds__(256) spmm_colwarp_##TNAME##_l##L##_t##TN(SPMM_ARGS(T)) { \
        spmm_colwarp<T, L, TN>(SPMM_PASS);                                                               \
    }
#define COLWARP_ALL(T, TNAME) \
    COLWARP(T, TNAME, 16, 1) COLWARP(T, TNAME, 32, 1) COLWARP(T, TNAME, 32, 2) COLWARP(T, TNAME, 32, 4)

NNZSPLIT_ALL(float, f32)
NNZSPLIT_ALL(double, f64)
COLWARP_ALL(float, f32)
COLWARP_ALL(double, f64)
