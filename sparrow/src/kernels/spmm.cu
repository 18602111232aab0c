// CSR times dense: C = alpha * A * B + beta * C, B and C row-major with leading dimensions.
// Row pointers are 64-bit, column indices 32-bit. Two families:
//   nnzsplit: a group of G lanes per row splits the row's entries; each lane keeps NMAX
//             partial sums (one per column of B, N <= NMAX), reduced by shuffles. For small N
//             and SpMV (N = 1), where lanes-over-columns would leave most lanes idle.
//   colwarp:  a group of L lanes per row; lanes own columns of B (coalesced reads of a row of
//             B), TN columns each per pass; the row's entries are loaded L at a time and
//             broadcast by shuffles. For N above 8.
// Long rows: a row longer than long_len would keep one group busy long after the rest of the
// grid is done, so the row kernels skip it; the chunk entry points (CHUNKS = true) process the
// long rows' entries in fixed chunks, one chunk per group, writing partial sums (alpha 1,
// beta 0) to a scratch buffer, and spmm_combine adds each row's partials in chunk order and
// applies alpha and beta. The result is deterministic.
// Every thread reaches every shuffle: items past the end compute zeros and store nothing.
#include "common.cuh"

// The entry range of item `item`: row `item` (skipped, as active = false, when longer than
// long_len), or chunk `item` of the long rows.
template <bool CHUNKS>
__device__ __forceinline__ bool item_range(i64 item, i64 nitems, const i64* __restrict__ starts,
                                           const i64* __restrict__ ends, i64 long_len, i64& s, i64& e) {
    s = 0;
    e = 0;
    if (item >= nitems) return false;
    if (CHUNKS) {
        s = starts[item];
        e = ends[item];
        return true;
    }
    s = starts[item];
    e = starts[item + 1];
    if (e - s > long_len) {
        s = e = 0;
        return false;
    }
    return true;
}

template <typename T, int NMAX, int G, bool CHUNKS>
__device__ __forceinline__ void spmm_nnzsplit(i64 nrows, int n, const i64* __restrict__ row_ptr,
                                              const i64* __restrict__ ends, i64 long_len,
                                              const int* __restrict__ col, const T* __restrict__ val,
                                              const T* __restrict__ B, i64 ldb, T* __restrict__ C,
                                              i64 ldc, T alpha, T beta) {
    const int lane = threadIdx.x % G;
    const i64 row = (i64)blockIdx.x * (blockDim.x / G) + threadIdx.x / G;
    i64 s, e;
    const bool active = item_range<CHUNKS>(row, nrows, row_ptr, ends, long_len, s, e);
    T acc[NMAX];
#pragma unroll
    for (int j = 0; j < NMAX; j++) acc[j] = T(0);
    if (active) {
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

template <typename T, int L, int TN, bool CHUNKS>
__device__ __forceinline__ void spmm_colwarp(i64 nrows, int n, const i64* __restrict__ row_ptr,
                                             const i64* __restrict__ ends, i64 long_len,
                                             const int* __restrict__ col, const T* __restrict__ val,
                                             const T* __restrict__ B, i64 ldb, T* __restrict__ C,
                                             i64 ldc, T alpha, T beta) {
    const int lane = threadIdx.x % L;
    const i64 row = (i64)blockIdx.x * (blockDim.x / L) + threadIdx.x / L;
    const u32 mask = group_mask<L>();
    i64 s, e;
    const bool active = item_range<CHUNKS>(row, nrows, row_ptr, ends, long_len, s, e);
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
            // Unrolled so several rows of B are in flight at once; the shuffles are uniform
            // across the group because cnt is.
#pragma unroll 4
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
    i64 nrows, int n, const i64 *row_ptr, const i64 *ends, i64 long_len, const int *col, const T *val, \
        const T *B, i64 ldb, T *C, i64 ldc, T alpha, T beta
#define SPMM_PASS nrows, n, row_ptr, ends, long_len, col, val, B, ldb, C, ldc, alpha, beta

#define NNZSPLIT(T, TNAME, NMAX, G)                                                                     \
    extern "C" __global__ void __launch_bounds__(256) spmm_nnzsplit_##TNAME##_n##NMAX##_g##G(SPMM_ARGS(T)) { \
        spmm_nnzsplit<T, NMAX, G, false>(SPMM_PASS);                                                    \
    }
#define NNZSPLIT_G(T, TNAME, NMAX) \
    NNZSPLIT(T, TNAME, NMAX, 4) NNZSPLIT(T, TNAME, NMAX, 8) NNZSPLIT(T, TNAME, NMAX, 16) NNZSPLIT(T, TNAME, NMAX, 32)
#define NNZSPLIT_CHUNKS(T, TNAME, NMAX)                                                                      \
    extern "C" __global__ void __launch_bounds__(256) spmm_chunks_nnzsplit_##TNAME##_n##NMAX(SPMM_ARGS(T)) { \
        spmm_nnzsplit<T, NMAX, 32, true>(SPMM_PASS);                                                         \
    }
#define NNZSPLIT_ALL(T, TNAME)                                                                           \
    NNZSPLIT_G(T, TNAME, 1) NNZSPLIT_G(T, TNAME, 2) NNZSPLIT_G(T, TNAME, 4) NNZSPLIT_G(T, TNAME, 8)       \
    NNZSPLIT_CHUNKS(T, TNAME, 1) NNZSPLIT_CHUNKS(T, TNAME, 2) NNZSPLIT_CHUNKS(T, TNAME, 4)                \
    NNZSPLIT_CHUNKS(T, TNAME, 8)

#define COLWARP(T, TNAME, L, TN)                                                                         \
    extern "C" __global__ void __launch_bounds__(256) spmm_colwarp_##TNAME##_l##L##_t##TN(SPMM_ARGS(T)) { \
        spmm_colwarp<T, L, TN, false>(SPMM_PASS);                                                        \
    }
#define COLWARP_CHUNKS(T, TNAME, TN)                                                                          \
    extern "C" __global__ void __launch_bounds__(256) spmm_chunks_colwarp_##TNAME##_t##TN(SPMM_ARGS(T)) {     \
        spmm_colwarp<T, 32, TN, true>(SPMM_PASS);                                                             \
    }
#define COLWARP_ALL(T, TNAME)                                                                              \
    COLWARP(T, TNAME, 16, 1) COLWARP(T, TNAME, 32, 1) COLWARP(T, TNAME, 32, 2) COLWARP(T, TNAME, 32, 4)     \
    COLWARP_CHUNKS(T, TNAME, 1) COLWARP_CHUNKS(T, TNAME, 2) COLWARP_CHUNKS(T, TNAME, 4)

// C[rows[i], j] = alpha * (sum over the chunks of long row i, in order, of partial[chunk, j])
// + beta * C[rows[i], j]; one thread per (long row, column).
template <typename T>
__device__ __forceinline__ void spmm_combine(i64 nlong, int n, const i64* __restrict__ rows,
                                             const i64* __restrict__ chunk_ptr, const T* __restrict__ partial,
                                             T* __restrict__ C, i64 ldc, T alpha, T beta) {
    const i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < nlong * n) {
        const i64 i = t / n;
        const int j = (int)(t % n);
        T sum = T(0);
        for (i64 k = chunk_ptr[i]; k < chunk_ptr[i + 1]; k++) sum += partial[k * n + j];
        axpby_store(C + rows[i] * ldc + j, sum, alpha, beta);
    }
}
#define COMBINE(T, TNAME)                                                                               \
    extern "C" __global__ void __launch_bounds__(256)                                                   \
        spmm_combine_##TNAME(i64 nlong, int n, const i64 *rows, const i64 *chunk_ptr, const T *partial, \
                             T *C, i64 ldc, T alpha, T beta) {                                          \
        spmm_combine<T>(nlong, n, rows, chunk_ptr, partial, C, ldc, alpha, beta);                      \
    }

NNZSPLIT_ALL(float, f32)
NNZSPLIT_ALL(double, f64)
COLWARP_ALL(float, f32)
COLWARP_ALL(double, f64)
COMBINE(float, f32)
COMBINE(double, f64)
