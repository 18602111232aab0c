// CSR times dense: C = alpha * A * B + beta * C, B and C row-major with leading dimensions.
// Row pointers are 64-bit, column indices 32-bit. The families:
//   rowvec:  a group of G = CK lanes per row: C column lanes each own VEC = 16 / sizeof(T)
//            consecutive columns of B (one 16-byte load per entry, TN such segments per
//            pass), and K entry lanes split the row's entries, summed by shuffles at the end.
//            Each lane keeps several rows of B in flight (U: 4 with one segment, 2 with more;
//            8 in the f32 `_u8` builds for rows of scattered columns), so the kernel is bound
//            by the memory system rather than by instruction issue. Launch flag `vec`: bit 0 says B,
//            bit 1 says C, is 16-byte aligned with a leading dimension of whole 16-byte
//            segments; without it the kernel reads (writes) that matrix an element at a time.
//   avec:    one column lane whose K entry lanes read A's indices and values as aligned
//            4-entry vectors (spmm_c1), for SpMV and N up to one 16-byte segment; spmv_avec
//            is its N = 1 body alone, for f32 SpMV in fewer registers.
//   window:  rowvec over blocks of rows that stage their window of B in shared memory.
//   rowblk:  rowvec over blocks of RB consecutive rows and the union of their columns, each
//            row of B loaded once for the block's rows.
//   stream:  SpMV (N = 1) over work blocks a plan computed on the host: a block of short
//            rows with at most STREAM_ITEMS entries (all of them loaded at once as aligned
//            4-entry vectors, products staged in shared memory, then each row summed by a
//            group of lanes), or one chunk of a long row (a block-wide sum; the last chunk of
//            a row to finish adds the row's partials in chunk order, so the result does not
//            depend on timing). spmv_packed is the same kernel over 16-bit column offsets and
//            row ends (PackedCols), fewer bytes an entry where every block's columns allow.
//   diag:    SpMV over rows that repeat one pattern of diagonals, a thread a row computing the
//            columns instead of reading them.
//   near:    SpMV over rows whose columns all lie within 2^15 of the row, each column read as a
//            16-bit offset from its row.
//   sliced:  SpMV over scattered columns: entries sorted by slice of columns, each slice of x
//            copied into shared memory, the rows' sums there too (matrix::slices).
// Long rows in rowvec: a row longer than long_len would keep one group busy long after the
// rest of the grid is done, so the row kernels skip it; the chunk entry points (CHUNKS = true)
// process the long rows' entries in fixed chunks, one chunk per warp, writing partial sums
// (alpha 1, beta 0) to a scratch buffer, and spmm_combine adds each row's partials in chunk
// order and applies alpha and beta. The result is deterministic.
// Row lists: a row-kernel launch may pass a list of rows in `ends` and take row ends[item] for
// item `item`. The host sorts rows by length into bins of similar rows, one launch each with
// as many entry lanes as the bin's rows need, so no group idles in a warp beside a long row;
// spmm_fill writes the empty rows.
// Every thread reaches every shuffle: items past the end compute zeros and store nothing.
#include "common.cuh"

template <typename T>
struct VecOf;
template <>
struct VecOf<float> {
    static constexpr int N = 4;
};
template <>
struct VecOf<double> {
    static constexpr int N = 2;
};

// ld.global.nc.v4.f32 / .v2.f64: one 16-byte read-only load (p 16-byte aligned).
__device__ __forceinline__ void ld_vec(const float* p, float* r) {
    asm("ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(r[0]), "=f"(r[1]), "=f"(r[2]), "=f"(r[3]) : "l"(p));
}
__device__ __forceinline__ void ld_vec(const double* p, double* r) {
    asm("ld.global.nc.v2.f64 {%0, %1}, [%2];" : "=d"(r[0]), "=d"(r[1]) : "l"(p));
}
// ld.global.v4.f32 / .v2.f64: a plain 16-byte load, for C (written by this kernel).
__device__ __forceinline__ void ld_vec_rw(const float* p, float* r) {
    asm volatile("ld.global.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(r[0]), "=f"(r[1]), "=f"(r[2]), "=f"(r[3])
                 : "l"(p)
                 : "memory");
}
__device__ __forceinline__ void ld_vec_rw(const double* p, double* r) {
    asm volatile("ld.global.v2.f64 {%0, %1}, [%2];" : "=d"(r[0]), "=d"(r[1]) : "l"(p) : "memory");
}
// st.global.v4.f32 / .v2.f64: one 16-byte store.
__device__ __forceinline__ void st_vec(float* p, const float* r) {
    asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(r[0]), "f"(r[1]), "f"(r[2]), "f"(r[3])
                 : "memory");
}
__device__ __forceinline__ void st_vec(double* p, const double* r) {
    asm volatile("st.global.v2.f64 [%0], {%1, %2};" ::"l"(p), "d"(r[0]), "d"(r[1]) : "memory");
}

// ld.global.nc.L1::no_allocate.v4: four consecutive column indices or values of A, which are
// read once (p 16-byte aligned).
__device__ __forceinline__ void ld_stream4(const int* p, int* r) {
    asm("ld.global.nc.L1::no_allocate.v4.s32 {%0, %1, %2, %3}, [%4];"
        : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
        : "l"(p));
}
__device__ __forceinline__ void ld_stream4(const float* p, float* r) {
    asm("ld.global.nc.L1::no_allocate.v4.f32 {%0, %1, %2, %3}, [%4];"
        : "=f"(r[0]), "=f"(r[1]), "=f"(r[2]), "=f"(r[3])
        : "l"(p));
}
__device__ __forceinline__ void ld_stream4(const double* p, double* r) {
    asm("ld.global.nc.L1::no_allocate.v2.f64 {%0, %1}, [%2];" : "=d"(r[0]), "=d"(r[1]) : "l"(p));
    asm("ld.global.nc.L1::no_allocate.v2.f64 {%0, %1}, [%2];" : "=d"(r[2]), "=d"(r[3]) : "l"(p + 2));
}

// Columns j..j+VEC of row b (zeros past n): one vector load when V and the segment is whole.
template <typename T, bool V>
__device__ __forceinline__ void ld_seg(const T* __restrict__ b, int j, int n, T* r) {
    constexpr int VEC = VecOf<T>::N;
    if (V && j + VEC <= n) {
        ld_vec(b + j, r);
    } else {
#pragma unroll
        for (int v = 0; v < VEC; v++) r[v] = j + v < n ? __ldg(b + j + v) : T(0);
    }
}

// out[j..j+VEC] = alpha * acc + beta * out (beta == 0 never reads out), columns below n only;
// one vector store when vc (C aligned) and the segment is whole.
template <typename T>
__device__ __forceinline__ void st_seg(T* out, int j, int n, const T* acc, T alpha, T beta, bool vc) {
    constexpr int VEC = VecOf<T>::N;
    if (vc && j + VEC <= n) {
        T r[VEC];
#pragma unroll
        for (int v = 0; v < VEC; v++) r[v] = alpha * acc[v];
        if (beta != T(0)) {
            T old[VEC];
            ld_vec_rw(out + j, old);
#pragma unroll
            for (int v = 0; v < VEC; v++) r[v] += beta * old[v];
        }
        st_vec(out + j, r);
    } else {
#pragma unroll
        for (int v = 0; v < VEC; v++)
            if (j + v < n) axpby_store(out + j + v, acc[v], alpha, beta);
    }
}

// The entry range of item `item` and the row of C it writes: row `item`, or row ends[item]
// when the launch passes a row list in `ends` (rows sorted by length), skipped (active =
// false) when longer than long_len; or chunk `item` of the long rows (C row `item`).
template <bool CHUNKS>
__device__ __forceinline__ bool item_range(i64 item, i64 nitems, const i64* __restrict__ starts,
                                           const i64* __restrict__ ends, i64 long_len, i64& s, i64& e,
                                           i64& row) {
    s = 0;
    e = 0;
    row = item;
    if (item >= nitems) return false;
    if (CHUNKS) {
        s = starts[item];
        e = ends[item];
        return true;
    }
    if (ends != nullptr) row = ends[item];
    s = starts[row];
    e = starts[row + 1];
    if (e - s > long_len) {
        s = e = 0;
        return false;
    }
    return true;
}

// One column lane (C = 1): the K entry lanes of a row read its column indices and values as
// aligned 4-entry vectors (E = VEC_ENTRIES on the host, which pads both arrays to a multiple
// of it, so a vector that starts inside the arrays ends inside them). Scalar loads of A cost a
// cache request per 4 bytes; on the H200 the vectors ran SpMV on block-diagonal rows 15% faster.
// Entries of a vector outside the row's range are neither loaded from B nor added.
template <typename T, int K, int NW, int U, bool CHUNKS, bool V>
__device__ __forceinline__ void spmm_c1_body(i64 nrows, int n, const i64* __restrict__ row_ptr,
                                             const i64* __restrict__ ends, i64 long_len,
                                             const int* __restrict__ col, const T* __restrict__ val,
                                             const T* __restrict__ B, i64 ldb, T* __restrict__ Cm, i64 ldc,
                                             T alpha, T beta, bool vc) {
    constexpr int E = 4;
    const int kl = threadIdx.x % K;
    const i64 item = (i64)blockIdx.x * (blockDim.x / K) + threadIdx.x / K;
    i64 s, e, row;
    const bool active = item_range<CHUNKS>(item, nrows, row_ptr, ends, long_len, s, e, row);
    const i64 first = (s & ~(i64)(E - 1)) + (i64)kl * E;
    for (int jb = 0; jb < n; jb += NW) {
        T acc[NW];
#pragma unroll
        for (int v = 0; v < NW; v++) acc[v] = T(0);
        if (active) {
            for (i64 q = first; q < e; q += (i64)U * K * E) {
                int c[U][E];
                T a[U][E];
#pragma unroll
                for (int u = 0; u < U; u++) {
                    const i64 p = q + (i64)u * K * E;
                    if (p < e) {
                        ld_stream4(col + p, c[u]);
                        ld_stream4(val + p, a[u]);
                    } else {
#pragma unroll
                        for (int i = 0; i < E; i++) {
                            c[u][i] = 0;
                            a[u][i] = T(0);
                        }
                    }
                }
                T bv[U][E][NW];
#pragma unroll
                for (int u = 0; u < U; u++)
#pragma unroll
                    for (int i = 0; i < E; i++) {
                        const i64 p = q + (i64)u * K * E + i;
                        if (p >= s && p < e) {
                            if (NW == 1)
                                bv[u][i][0] = __ldg(B + (i64)c[u][i] * ldb);
                            else
                                ld_seg<T, V>(B + (i64)c[u][i] * ldb, jb, n, bv[u][i]);
                        } else {
#pragma unroll
                            for (int v = 0; v < NW; v++) bv[u][i][v] = T(0);
                        }
                    }
#pragma unroll
                for (int u = 0; u < U; u++)
#pragma unroll
                    for (int i = 0; i < E; i++) {
                        const i64 p = q + (i64)u * K * E + i;
                        if (p >= s && p < e) {
#pragma unroll
                            for (int v = 0; v < NW; v++) acc[v] += a[u][i] * bv[u][i][v];
                        }
                    }
            }
        }
#pragma unroll
        for (int off = 1; off < K; off <<= 1)
#pragma unroll
            for (int v = 0; v < NW; v++) acc[v] += __shfl_xor_sync(0xffffffffu, acc[v], off);
        if (active && kl == 0) {
            if (NW == 1)
                axpby_store(Cm + row * ldc, acc[0], alpha, beta);
            else
                st_seg<T>(Cm + row * ldc, jb, n, acc, alpha, beta, vc);
        }
    }
}

// N = 1 takes one B element per entry and two vectors in flight per lane; wider B one 16-byte
// segment per entry and one vector, which keeps the register count (and so the occupancy) of
// both near that of the scalar-load kernels. f32 SpMV runs spmv_avec, so the f32 kernels hold
// the wider body only (it computes N = 1 too).
template <typename T, int K, bool CHUNKS, bool V>
__device__ __forceinline__ void spmm_c1(i64 nrows, int n, const i64* __restrict__ row_ptr,
                                        const i64* __restrict__ ends, i64 long_len,
                                        const int* __restrict__ col, const T* __restrict__ val,
                                        const T* __restrict__ B, i64 ldb, T* __restrict__ Cm, i64 ldc,
                                        T alpha, T beta, bool vc) {
    if (sizeof(T) == 8 && n == 1)
        spmm_c1_body<T, K, 1, 2, CHUNKS, V>(nrows, n, row_ptr, ends, long_len, col, val, B, ldb, Cm, ldc, alpha,
                                            beta, vc);
    else
        spmm_c1_body<T, K, VecOf<T>::N, 1, CHUNKS, V>(nrows, n, row_ptr, ends, long_len, col, val, B, ldb, Cm,
                                                      ldc, alpha, beta, vc);
}

template <typename T, int C, int K, int TN, bool CHUNKS, bool V, int U = (TN == 1 ? 4 : 2)>
__device__ __forceinline__ void spmm_rowvec(i64 nrows, int n, const i64* __restrict__ row_ptr,
                                            const i64* __restrict__ ends, i64 long_len,
                                            const int* __restrict__ col, const T* __restrict__ val,
                                            const T* __restrict__ B, i64 ldb, T* __restrict__ Cm, i64 ldc,
                                            T alpha, T beta, bool vc) {
    constexpr int VEC = VecOf<T>::N;
    constexpr int G = C * K;
    constexpr int W = C * VEC * TN;  // columns per pass
    const int lane = threadIdx.x % G, cl = lane % C, kl = lane / C;
    const i64 item = (i64)blockIdx.x * (blockDim.x / G) + threadIdx.x / G;
    i64 s, e, row;
    const bool active = item_range<CHUNKS>(item, nrows, row_ptr, ends, long_len, s, e, row);
    // n is the same for every thread, so every lane runs the same passes and shuffles.
    for (int col0 = 0; col0 < n; col0 += W) {
        const int jb = col0 + cl * VEC;
        T acc[TN][VEC];
#pragma unroll
        for (int t = 0; t < TN; t++)
#pragma unroll
            for (int v = 0; v < VEC; v++) acc[t][v] = T(0);
        if (active) {
            i64 p = s + kl;
            for (; p + (U - 1) * K < e; p += U * K) {
                int c[U];
                T a[U];
#pragma unroll
                for (int u = 0; u < U; u++) {
                    c[u] = __ldg(col + p + u * K);
                    a[u] = __ldg(val + p + u * K);
                }
                T bv[U][TN][VEC];
#pragma unroll
                for (int u = 0; u < U; u++)
#pragma unroll
                    for (int t = 0; t < TN; t++) ld_seg<T, V>(B + (i64)c[u] * ldb, jb + t * C * VEC, n, bv[u][t]);
#pragma unroll
                for (int u = 0; u < U; u++)
#pragma unroll
                    for (int t = 0; t < TN; t++)
#pragma unroll
                        for (int v = 0; v < VEC; v++) acc[t][v] += a[u] * bv[u][t][v];
            }
            for (; p < e; p += K) {
                const int c = __ldg(col + p);
                const T a = __ldg(val + p);
#pragma unroll
                for (int t = 0; t < TN; t++) {
                    T bv[VEC];
                    ld_seg<T, V>(B + (i64)c * ldb, jb + t * C * VEC, n, bv);
#pragma unroll
                    for (int v = 0; v < VEC; v++) acc[t][v] += a * bv[v];
                }
            }
        }
        // Entry lane kl holds the sum over entries s + kl + i K; lanes cl, cl + C, ... of the
        // group add theirs by a butterfly over the bits above C.
#pragma unroll
        for (int off = C; off < G; off <<= 1)
#pragma unroll
            for (int t = 0; t < TN; t++)
#pragma unroll
                for (int v = 0; v < VEC; v++) acc[t][v] += __shfl_xor_sync(0xffffffffu, acc[t][v], off);
        if (active && kl == 0) {
#pragma unroll
            for (int t = 0; t < TN; t++) st_seg<T>(Cm + row * ldc, jb + t * C * VEC, n, acc[t], alpha, beta, vc);
        }
    }
}

#define SPMM_ARGS(T)                                                                                    \
    i64 nrows, int n, const i64 *row_ptr, const i64 *ends, i64 long_len, const int *col, const T *val, \
        const T *B, i64 ldb, T *C, i64 ldc, T alpha, T beta, int vec
#define SPMM_PASS nrows, n, row_ptr, ends, long_len, col, val, B, ldb, C, ldc, alpha, beta, (vec & 2) != 0

#define ROWVEC(T, TNAME, C, K, TN)                                                                      \
    extern "C" __global__ void __launch_bounds__(256) spmm_rowvec_##TNAME##_c##C##_k##K##_t##TN(SPMM_ARGS(T)) { \
        if (vec & 1)                                                                                    \
            spmm_rowvec<T, C, K, TN, false, true>(SPMM_PASS);                                           \
        else                                                                                            \
            spmm_rowvec<T, C, K, TN, false, false>(SPMM_PASS);                                          \
    }
// Deep (f32, one segment a lane): U = 8 entries in flight per lane instead of 4. On rows of
// scattered columns, whose gathers of B wait on L2 and DRAM, more loads in flight beat the
// occupancy the extra registers cost; on local columns (stencils, FEM-like rows) they lose.
#define ROWVEC_DEEP(T, TNAME, C, K)                                                                     \
    extern "C" __global__ void __launch_bounds__(256) spmm_rowvec_##TNAME##_c##C##_k##K##_t1_u8(SPMM_ARGS(T)) { \
        if (vec & 1)                                                                                    \
            spmm_rowvec<T, C, K, 1, false, true, 8>(SPMM_PASS);                                         \
        else                                                                                            \
            spmm_rowvec<T, C, K, 1, false, false, 8>(SPMM_PASS);                                        \
    }
#define ROWVEC_CHUNKS_DEEP(T, TNAME, C)                                                                  \
    extern "C" __global__ void __launch_bounds__(256) spmm_chunks_rowvec_##TNAME##_c##C##_t1_u8(SPMM_ARGS(T)) { \
        if (vec & 1)                                                                                     \
            spmm_rowvec<T, C, 32 / C, 1, true, true, 8>(SPMM_PASS);                                      \
        else                                                                                             \
            spmm_rowvec<T, C, 32 / C, 1, true, false, 8>(SPMM_PASS);                                     \
    }
#define ROWVEC_CHUNKS(T, TNAME, C, TN)                                                                   \
    extern "C" __global__ void __launch_bounds__(256) spmm_chunks_rowvec_##TNAME##_c##C##_t##TN(SPMM_ARGS(T)) { \
        if (vec & 1)                                                                                     \
            spmm_rowvec<T, C, 32 / C, TN, true, true>(SPMM_PASS);                                        \
        else                                                                                             \
            spmm_rowvec<T, C, 32 / C, TN, true, false>(SPMM_PASS);                                       \
    }
#define AVEC(T, TNAME, K)                                                                              \
    extern "C" __global__ void __launch_bounds__(256) spmm_avec_##TNAME##_k##K(SPMM_ARGS(T)) {           \
        if (vec & 1)                                                                                    \
            spmm_c1<T, K, false, true>(SPMM_PASS);                                                      \
        else                                                                                            \
            spmm_c1<T, K, false, false>(SPMM_PASS);                                                     \
    }
// SpMV alone (N = 1): the same body as spmm_avec's N = 1 branch, without the wider branch, so
// the kernel takes only the registers that body needs (f32: 32 at 8 blocks per SM against 48;
// SpMV on the H200 16 % faster on banded rows, 6 % on block-diagonal ones; f64's SpMV ran
// 8-16 % slower in such a build, so f64 has none).
#define SPMV_AVEC(T, TNAME, K)                                                                         \
    extern "C" __global__ void __launch_bounds__(256, 8) spmv_avec_##TNAME##_k##K(SPMM_ARGS(T)) {        \
        spmm_c1_body<T, K, 1, 2, false, false>(nrows, 1, row_ptr, ends, long_len, col, val, B, ldb, C, ldc, \
                                               alpha, beta, false);                                    \
    }
#define SPMV_AVEC_ALL(T, TNAME)                                                                        \
    SPMV_AVEC(T, TNAME, 1) SPMV_AVEC(T, TNAME, 2) SPMV_AVEC(T, TNAME, 4) SPMV_AVEC(T, TNAME, 8)        \
        SPMV_AVEC(T, TNAME, 16) SPMV_AVEC(T, TNAME, 32)
#define AVEC_ALL(T, TNAME) \
    AVEC(T, TNAME, 1) AVEC(T, TNAME, 2) AVEC(T, TNAME, 4) AVEC(T, TNAME, 8) AVEC(T, TNAME, 16) AVEC(T, TNAME, 32)
#define ROWVEC_C(T, TNAME, C) ROWVEC_CHUNKS(T, TNAME, C, 1)
#define ROWVEC_ALL(T, TNAME) \
    ROWVEC(T, TNAME, 1, 1, 1) ROWVEC(T, TNAME, 1, 2, 1) ROWVEC(T, TNAME, 1, 4, 1) \
    ROWVEC(T, TNAME, 1, 8, 1) ROWVEC(T, TNAME, 1, 16, 1) ROWVEC(T, TNAME, 1, 32, 1) \
    ROWVEC(T, TNAME, 2, 1, 1) ROWVEC(T, TNAME, 2, 2, 1) ROWVEC(T, TNAME, 2, 4, 1) \
    ROWVEC(T, TNAME, 2, 8, 1) ROWVEC(T, TNAME, 2, 16, 1) ROWVEC(T, TNAME, 4, 1, 1) \
    ROWVEC(T, TNAME, 4, 2, 1) ROWVEC(T, TNAME, 4, 4, 1) ROWVEC(T, TNAME, 4, 8, 1) \
    ROWVEC(T, TNAME, 8, 1, 1) ROWVEC(T, TNAME, 8, 2, 1) ROWVEC(T, TNAME, 8, 4, 1) \
    ROWVEC(T, TNAME, 16, 1, 1) ROWVEC(T, TNAME, 16, 2, 1) ROWVEC(T, TNAME, 32, 1, 1) \
    ROWVEC(T, TNAME, 32, 1, 2) ROWVEC(T, TNAME, 32, 1, 4) ROWVEC(T, TNAME, 8, 1, 2) ROWVEC(T, TNAME, 8, 1, 4)
// The deep kernels: every one-segment shape of ROWVEC_ALL, and a chunk kernel per column lanes.
#define ROWVEC_DEEP_ALL(T, TNAME)                                                                        \
    ROWVEC_DEEP(T, TNAME, 1, 1) ROWVEC_DEEP(T, TNAME, 1, 2) ROWVEC_DEEP(T, TNAME, 1, 4)                  \
    ROWVEC_DEEP(T, TNAME, 1, 8) ROWVEC_DEEP(T, TNAME, 1, 16) ROWVEC_DEEP(T, TNAME, 1, 32)                \
    ROWVEC_DEEP(T, TNAME, 2, 1) ROWVEC_DEEP(T, TNAME, 2, 2) ROWVEC_DEEP(T, TNAME, 2, 4)                  \
    ROWVEC_DEEP(T, TNAME, 2, 8) ROWVEC_DEEP(T, TNAME, 2, 16) ROWVEC_DEEP(T, TNAME, 4, 1)                 \
    ROWVEC_DEEP(T, TNAME, 4, 2) ROWVEC_DEEP(T, TNAME, 4, 4) ROWVEC_DEEP(T, TNAME, 4, 8)                  \
    ROWVEC_DEEP(T, TNAME, 8, 1) ROWVEC_DEEP(T, TNAME, 8, 2) ROWVEC_DEEP(T, TNAME, 8, 4)                  \
    ROWVEC_DEEP(T, TNAME, 16, 1) ROWVEC_DEEP(T, TNAME, 16, 2) ROWVEC_DEEP(T, TNAME, 32, 1)               \
    ROWVEC_CHUNKS_DEEP(T, TNAME, 1) ROWVEC_CHUNKS_DEEP(T, TNAME, 2) ROWVEC_CHUNKS_DEEP(T, TNAME, 4)      \
    ROWVEC_CHUNKS_DEEP(T, TNAME, 8) ROWVEC_CHUNKS_DEEP(T, TNAME, 16) ROWVEC_CHUNKS_DEEP(T, TNAME, 32)
#define ROWVEC_CHUNKS_ALL(T, TNAME)                                                                      \
    ROWVEC_C(T, TNAME, 1) ROWVEC_C(T, TNAME, 2) ROWVEC_C(T, TNAME, 4) ROWVEC_C(T, TNAME, 8)               \
    ROWVEC_C(T, TNAME, 16) ROWVEC_C(T, TNAME, 32) ROWVEC_CHUNKS(T, TNAME, 32, 2) ROWVEC_CHUNKS(T, TNAME, 32, 4) \
    ROWVEC_CHUNKS(T, TNAME, 8, 2) ROWVEC_CHUNKS(T, TNAME, 8, 4)

// ---- Row blocks staged through shared memory ----
// A block of 256 threads takes WINDOW_ROWS consecutive rows. Rows hold sorted columns, so
// their first and last entries bound the block's columns to [lo, hi]; when that window holds
// at most `cap` rows of B (the dynamic shared memory the launch gave), the block copies the
// window's rows of B (this pass's columns) into shared memory once and every entry reads its
// B segment there, so B's rows come from L2 once per block instead of once per entry. A block
// whose window is wider reads B from global memory as rowvec does. Rows over long_len are
// skipped (the chunk kernels take them) and do not widen the window.
#define WINDOW_ROWS 32

template <typename T>
struct alignas(16) Seg {
    T v[VecOf<T>::N];
};

template <typename T, int C, int K, bool V>
__device__ __forceinline__ void spmm_window(i64 nrows, int n, const i64* __restrict__ row_ptr, i64 long_len,
                                            const int* __restrict__ col, const T* __restrict__ val,
                                            const T* __restrict__ B, i64 ldb, T* __restrict__ Cm, i64 ldc,
                                            T alpha, T beta, bool vc, int cap) {
    constexpr int VEC = VecOf<T>::N;
    constexpr int G = C * K;
    constexpr int W = C * VEC;         // columns per pass
    constexpr int RPB = 256 / G;       // rows at a time (G >= 8: at most WINDOW_ROWS)
    constexpr int U = 2;               // entries in flight per lane
    extern __shared__ __align__(16) unsigned char window_smem[];
    Seg<T>* tile = reinterpret_cast<Seg<T>*>(window_smem);  // [window row][column lane]
    __shared__ int s_lo, s_hi;
    const i64 r0 = (i64)blockIdx.x * WINDOW_ROWS;
    const int lane = threadIdx.x % G, cl = lane % C, kl = lane / C;
    if (threadIdx.x == 0) {
        s_lo = 0x7fffffff;
        s_hi = -1;
    }
    __syncthreads();
    if (threadIdx.x < WINDOW_ROWS && r0 + threadIdx.x < nrows) {
        const i64 s = row_ptr[r0 + threadIdx.x], e = row_ptr[r0 + threadIdx.x + 1];
        if (e > s && e - s <= long_len) {
            atomicMin(&s_lo, col[s]);
            atomicMax(&s_hi, col[e - 1]);
        }
    }
    __syncthreads();
    const int lo = s_lo;
    const int span = s_hi - s_lo + 1;  // at most 0 when no row of the block has entries
    const bool staged = span > 0 && span <= cap;
    for (int col0 = 0; col0 < n; col0 += W) {
        const int jb = col0 + cl * VEC;
        if (staged) {
            for (int t = threadIdx.x; t < span * C; t += blockDim.x) {
                Seg<T> g;
                ld_seg<T, V>(B + (i64)(lo + t / C) * ldb, col0 + (t % C) * VEC, n, g.v);
                tile[t] = g;
            }
            __syncthreads();
        }
        for (int sub = 0; sub < WINDOW_ROWS; sub += RPB) {
            const i64 row = r0 + sub + threadIdx.x / G;
            i64 s, e, out;
            const bool active = item_range<false>(row, nrows, row_ptr, nullptr, long_len, s, e, out);
            T acc[VEC];
#pragma unroll
            for (int v = 0; v < VEC; v++) acc[v] = T(0);
            if (active) {
                i64 p = s + kl;
                for (; p + (U - 1) * K < e; p += U * K) {
                    int c[U];
                    T a[U];
#pragma unroll
                    for (int u = 0; u < U; u++) {
                        c[u] = __ldg(col + p + u * K);
                        a[u] = __ldg(val + p + u * K);
                    }
                    T bv[U][VEC];
#pragma unroll
                    for (int u = 0; u < U; u++) {
                        if (staged) {
                            const Seg<T> g = tile[(c[u] - lo) * C + cl];
#pragma unroll
                            for (int v = 0; v < VEC; v++) bv[u][v] = g.v[v];
                        } else {
                            ld_seg<T, V>(B + (i64)c[u] * ldb, jb, n, bv[u]);
                        }
                    }
#pragma unroll
                    for (int u = 0; u < U; u++)
#pragma unroll
                        for (int v = 0; v < VEC; v++) acc[v] += a[u] * bv[u][v];
                }
                for (; p < e; p += K) {
                    const int c = __ldg(col + p);
                    const T a = __ldg(val + p);
                    T bv[VEC];
                    if (staged) {
                        const Seg<T> g = tile[(c - lo) * C + cl];
#pragma unroll
                        for (int v = 0; v < VEC; v++) bv[v] = g.v[v];
                    } else {
                        ld_seg<T, V>(B + (i64)c * ldb, jb, n, bv);
                    }
#pragma unroll
                    for (int v = 0; v < VEC; v++) acc[v] += a * bv[v];
                }
            }
#pragma unroll
            for (int off = C; off < G; off <<= 1)
#pragma unroll
                for (int v = 0; v < VEC; v++) acc[v] += __shfl_xor_sync(0xffffffffu, acc[v], off);
            if (active && kl == 0) st_seg<T>(Cm + row * ldc, jb, n, acc, alpha, beta, vc);
        }
        if (staged) __syncthreads();  // every read of this pass's tile is done
    }
}

#define WINDOW(T, TNAME, CL, K)                                                                          \
    extern "C" __global__ void __launch_bounds__(256) spmm_window_##TNAME##_c##CL##_k##K(SPMM_ARGS(T), int cap) { \
        if (vec & 1)                                                                                    \
            spmm_window<T, CL, K, true>(nrows, n, row_ptr, long_len, col, val, B, ldb, C, ldc, alpha, beta, \
                                       (vec & 2) != 0, cap);                                            \
        else                                                                                            \
            spmm_window<T, CL, K, false>(nrows, n, row_ptr, long_len, col, val, B, ldb, C, ldc, alpha, beta, \
                                        (vec & 2) != 0, cap);                                           \
    }
#define WINDOW_ALL(T, TNAME)                                                                            \
    WINDOW(T, TNAME, 2, 4) WINDOW(T, TNAME, 2, 8) WINDOW(T, TNAME, 2, 16) WINDOW(T, TNAME, 4, 2)        \
    WINDOW(T, TNAME, 4, 4) WINDOW(T, TNAME, 4, 8) WINDOW(T, TNAME, 8, 1) WINDOW(T, TNAME, 8, 2)         \
    WINDOW(T, TNAME, 8, 4) WINDOW(T, TNAME, 16, 1) WINDOW(T, TNAME, 16, 2) WINDOW(T, TNAME, 32, 1)

// ---- Blocks of consecutive rows over the union of their columns ----
// The upload groups rows in blocks of RB (4, or 8 for f32's tall blocks) and lists each
// block's distinct columns once, with RB values per listed column (zero where a row lacks it;
// matrix/row_blocks.rs, RowBlocks). A group of C * K lanes takes a block: each listed column's
// row of B is loaded once and feeds the RB rows, where rowvec loads it once per row holding it.
// Banded and stencil rows share most columns with their neighbours, and there the L1 traffic
// and the issued loads per product both fall by up to RB (the rowvec kernels wait on L1 with
// no unit saturated).
template <typename T, int RB, int C, int K, int TN, bool V>
__device__ __forceinline__ void spmm_rowblk(i64 nblk, i64 nrows, int n, const i64* __restrict__ bptr,
                                            const int* __restrict__ bcol, const T* __restrict__ bval,
                                            const T* __restrict__ B, i64 ldb, T* __restrict__ Cm, i64 ldc,
                                            T alpha, T beta, bool vc) {
    constexpr int VEC = VecOf<T>::N;
    constexpr int G = C * K;
    constexpr int W = C * VEC * TN;  // columns per pass
    // Listed columns in flight per lane: 4 with one segment and one entry lane (banded rows
    // at N = 32 ran 1.44x faster on the H200 than with 2), else 2 (dense 32 x 32 blocks at N = 8,
    // four entry lanes, ran 1.26x slower with 4).
    constexpr int U = TN == 1 && K == 1 ? 4 : 2;
    const int lane = threadIdx.x % G, cl = lane % C, kl = lane / C;
    const i64 item = (i64)blockIdx.x * (blockDim.x / G) + threadIdx.x / G;
    const bool active = item < nblk;
    const i64 s = active ? bptr[item] : 0, e = active ? bptr[item + 1] : 0;
    for (int col0 = 0; col0 < n; col0 += W) {
        const int jb = col0 + cl * VEC;
        T acc[RB][TN][VEC];
#pragma unroll
        for (int r = 0; r < RB; r++)
#pragma unroll
            for (int t = 0; t < TN; t++)
#pragma unroll
                for (int v = 0; v < VEC; v++) acc[r][t][v] = T(0);
        i64 p = s + kl;
        for (; p + (U - 1) * K < e; p += U * K) {
            int c[U];
            T a[U][RB];
#pragma unroll
            for (int u = 0; u < U; u++) {
                c[u] = __ldg(bcol + p + u * K);
#pragma unroll
                for (int q = 0; q < RB; q += 4) ld_stream4(bval + (p + u * K) * RB + q, a[u] + q);
            }
            T bv[U][TN][VEC];
#pragma unroll
            for (int u = 0; u < U; u++)
#pragma unroll
                for (int t = 0; t < TN; t++) ld_seg<T, V>(B + (i64)c[u] * ldb, jb + t * C * VEC, n, bv[u][t]);
#pragma unroll
            for (int u = 0; u < U; u++)
#pragma unroll
                for (int r = 0; r < RB; r++)
#pragma unroll
                    for (int t = 0; t < TN; t++)
#pragma unroll
                        for (int v = 0; v < VEC; v++) acc[r][t][v] += a[u][r] * bv[u][t][v];
        }
        for (; p < e; p += K) {
            const int c = __ldg(bcol + p);
            T a[RB];
#pragma unroll
            for (int q = 0; q < RB; q += 4) ld_stream4(bval + p * RB + q, a + q);
#pragma unroll
            for (int t = 0; t < TN; t++) {
                T bv[VEC];
                ld_seg<T, V>(B + (i64)c * ldb, jb + t * C * VEC, n, bv);
#pragma unroll
                for (int r = 0; r < RB; r++)
#pragma unroll
                    for (int v = 0; v < VEC; v++) acc[r][t][v] += a[r] * bv[v];
            }
        }
#pragma unroll
        for (int off = C; off < G; off <<= 1)
#pragma unroll
            for (int r = 0; r < RB; r++)
#pragma unroll
                for (int t = 0; t < TN; t++)
#pragma unroll
                    for (int v = 0; v < VEC; v++) acc[r][t][v] += __shfl_xor_sync(0xffffffffu, acc[r][t][v], off);
        if (active && kl == 0) {
#pragma unroll
            for (int r = 0; r < RB; r++) {
                const i64 row = item * RB + r;
                if (row < nrows) {
#pragma unroll
                    for (int t = 0; t < TN; t++)
                        st_seg<T>(Cm + row * ldc, jb + t * C * VEC, n, acc[r][t], alpha, beta, vc);
                }
            }
        }
    }
}

// f64 with two segments a lane holds 108 registers unbounded (two blocks a SM); capped at three
// blocks (80 registers, 32 bytes spilled) it ran 21-44 % faster on the H200 on banded,
// block-diagonal and 3-D stencil rows. The same cap on f32 (four blocks, 64 registers) and five
// blocks for one segment ran up to 26 % slower on most cases, so the other shapes keep plain
// bounds: a minimum of one block is not the same to the compiler, which then took 70-94
// registers where plain bounds give 62-66 (f32 two segments 90 against 80).
#define ROWBLK_KERNEL(T, NAME, RBN, CL, K, TN, BOUNDS)                                                 \
    extern "C" __global__ void BOUNDS NAME##_c##CL##_k##K##_t##TN(                                      \
        i64 nblk, i64 nrows, int n, const i64 *bptr, const int *bcol, const T *bval, const T *B, i64 ldb, \
        T *Cm, i64 ldc, T alpha, T beta, int vec) {                                                    \
        if (vec & 1)                                                                                    \
            spmm_rowblk<T, RBN, CL, K, TN, true>(nblk, nrows, n, bptr, bcol, bval, B, ldb, Cm, ldc, alpha, \
                                                 beta, (vec & 2) != 0);                                 \
        else                                                                                            \
            spmm_rowblk<T, RBN, CL, K, TN, false>(nblk, nrows, n, bptr, bcol, bval, B, ldb, Cm, ldc, alpha, \
                                                  beta, (vec & 2) != 0);                                \
    }
#define ROWBLK(T, TNAME, CL, K, TN) ROWBLK_KERNEL(T, spmm_rowblk_##TNAME, 4, CL, K, TN, __launch_bounds__(256))
#define ROWBLK3(T, TNAME, CL, K, TN) \
    ROWBLK_KERNEL(T, spmm_rowblk_##TNAME, 4, CL, K, TN, __launch_bounds__(256, 3))
// f32's tall blocks of 8 rows (RowStats::block_rows): twice the accumulators a lane, up to
// about 110 registers at two segments (two blocks a SM), which still ran fastest on banded rows
// from N = 128.
#define ROWBLK8(T, TNAME, CL, K, TN) ROWBLK_KERNEL(T, spmm_rowblk8_##TNAME, 8, CL, K, TN, __launch_bounds__(256))
// Every row-block shape (ROWBLK_SHAPES on the host): M1 builds the one-segment shapes, M2 the
// two-segment ones (ROWBLK3 for f64).
#define ROWBLK_ALL(T, TNAME, M1, M2)                                                                    \
    M1(T, TNAME, 1, 1, 1) M1(T, TNAME, 1, 4, 1) M1(T, TNAME, 2, 1, 1) M1(T, TNAME, 2, 4, 1)             \
    M1(T, TNAME, 4, 1, 1) M1(T, TNAME, 4, 2, 1) M1(T, TNAME, 8, 1, 1) M1(T, TNAME, 8, 2, 1)             \
    M1(T, TNAME, 16, 1, 1) M1(T, TNAME, 16, 2, 1) M1(T, TNAME, 32, 1, 1)                                \
    M2(T, TNAME, 8, 1, 2) M2(T, TNAME, 16, 1, 2) M2(T, TNAME, 32, 1, 2)

// C[rows[i], j] = beta * C[rows[i], j] (0 when beta == 0, which never reads C) for the nitems
// rows of the list `rows`: the empty rows of a sorted launch, which in a row kernel would take
// a lane group and a warp slot each for one store. A power of two of lanes at most 32 per row
// own its 16-byte segments; the grid strides over the rows. The values match what the row
// kernels store for an empty row (alpha * 0 + beta * C).
template <typename T>
__device__ __forceinline__ void spmm_fill(i64 nitems, int n, const i64* __restrict__ rows, T* __restrict__ C,
                                          i64 ldc, T alpha, T beta, bool vc) {
    constexpr int VEC = VecOf<T>::N;
    const int segs = (n + VEC - 1) / VEC;
    int lpr = 1;
    while (lpr < 32 && lpr < segs) lpr <<= 1;
    const int lane = threadIdx.x & (lpr - 1);
    const i64 stride = (i64)gridDim.x * (blockDim.x / lpr);
    T zero[VEC];
#pragma unroll
    for (int v = 0; v < VEC; v++) zero[v] = T(0);
    for (i64 i = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / lpr; i < nitems; i += stride) {
        T* out = C + rows[i] * ldc;
        for (int sg = lane; sg < segs; sg += lpr) st_seg<T>(out, sg * VEC, n, zero, alpha, beta, vc);
    }
}
#define FILL(T, TNAME)                                                                                  \
    extern "C" __global__ void __launch_bounds__(256)                                                   \
        spmm_fill_##TNAME(i64 nitems, int n, const i64 *rows, T *C, i64 ldc, T alpha, T beta, int vc) { \
        spmm_fill<T>(nitems, n, rows, C, ldc, alpha, beta, vc != 0);                                    \
    }

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

// ---- SpMV over planned work blocks ----
// STREAM_BLOCK threads; a block of short rows holds at most STREAM_ITEMS entries. Each work
// block is six i64: first row, one past the last row, first entry, one past the last entry,
// and for a chunk of a long row the index of the row's first chunk block and the row's
// number of chunks (0 for a block of short rows).
#define STREAM_BLOCK 256
// Entries of a block of short rows at most: what three aligned 4-entry vectors per thread cover
// from any alignment. The host plans blocks of up to this many on even rows with local columns
// and of up to 2048 elsewhere (work.rs), and sizes the products' shared memory to match.
#define STREAM_ITEMS 3068
#define STREAM_MAX_ROWS 2048
// 4-entry vectors per thread that cover a block's entries from any alignment.
#define STREAM_VECS ((STREAM_ITEMS / 4 + 1 + STREAM_BLOCK - 1) / STREAM_BLOCK)
#define STREAM_LANE_ITEMS 4

template <typename T>
__device__ __forceinline__ T block_sum(T s, T* wsum) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) wsum[warp] = s;
    __syncthreads();
    T t = T(0);
    if (threadIdx.x == 0)
        for (int w = 0; w < STREAM_BLOCK / 32; w++) t += wsum[w];
    return t;  // valid in thread 0
}

// Where the planned blocks read A's columns and row bounds. Plain: the 32-bit indices and the
// 64-bit row pointers. Packed (spmv_packed): each entry's column as a 16-bit offset from its
// work block's first column, and each row's end as a 16-bit offset from its block's first
// entry, which the upload builds once for matrices whose every block spans at most
// 65,536 columns: 6 bytes an f32 entry instead of 8, and 2 bytes a row instead of 8.
struct PlainCols {
    const int* __restrict__ col;
    const i64* __restrict__ row_ptr;
    static constexpr int W = 4;  // 32-bit words a 4-entry vector takes in registers
    __device__ __forceinline__ void init(i64) {}
    __device__ __forceinline__ void load4(i64 p, u32* w) const { ld_stream4(col + p, reinterpret_cast<int*>(w)); }
    __device__ __forceinline__ int at(const u32* w, int u) const { return (int)w[u]; }
    __device__ __forceinline__ int one(i64 p) const { return ld_stream(col + p); }
    // Row g's first entry relative to the block's first entry p0 (g up to the block's rows).
    __device__ __forceinline__ int bound(i64 r0, int g, i64 p0) const { return (int)(row_ptr[r0 + g] - p0); }
};
struct PackedCols {
    const u16* __restrict__ col;
    const int* __restrict__ base;
    const u16* __restrict__ ends;
    int first;  // the work block's first column
    static constexpr int W = 2;
    __device__ __forceinline__ void init(i64 b) { first = base[b]; }
    // ld.global.nc.L1::no_allocate.v2.u32: four 16-bit offsets (p a multiple of 4 entries).
    __device__ __forceinline__ void load4(i64 p, u32* w) const {
        asm("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "l"(col + p));
    }
    __device__ __forceinline__ int at(const u32* w, int u) const {
        return first + (int)((w[u >> 1] >> (16 * (u & 1))) & 0xffffu);
    }
    __device__ __forceinline__ int one(i64 p) const { return first + (int)ld_stream(col + p); }
    __device__ __forceinline__ int bound(i64 r0, int g, i64) const {
        return g == 0 ? 0 : (int)ld_stream(ends + r0 + g - 1);
    }
};

template <typename T, typename Cols>
__device__ __forceinline__ void spmv_stream(const i64* __restrict__ work, Cols cs, const T* __restrict__ val,
                                            const T* __restrict__ x, i64 ldx, T* __restrict__ y, i64 ldy,
                                            T alpha, T beta, T* partial, u32* counters) {
    // The block's products: the launch gives the partition's capacity (at most STREAM_ITEMS),
    // so blocks of the skewed rows' 2048 entries keep the shared memory they had.
    extern __shared__ __align__(16) unsigned char stream_smem[];
    T* prod = reinterpret_cast<T*>(stream_smem);
    __shared__ int rp[STREAM_MAX_ROWS + 1];
    __shared__ T wsum[STREAM_BLOCK / 32];
    __shared__ int last;
    const i64* w = work + 6 * (i64)blockIdx.x;
    const i64 r0 = w[0], r1 = w[1], p0 = w[2], p1 = w[3], first = w[4], count = w[5];
    cs.init(blockIdx.x);
    if (count == 0) {
        const int m = (int)(p1 - p0);
        const int nr = (int)(r1 - r0);
        // The entries as aligned 4-entry vectors from the one holding p0 (the device copies are
        // padded to whole vectors); every load of the block is issued before any product is
        // formed, and the rows' bounds (relative to p0) come in alongside.
        const i64 a0 = p0 & ~(i64)3;
        const int head = (int)(p0 - a0);
        const int nv = (head + m + 3) >> 2;
        u32 c[STREAM_VECS][Cols::W];
        T a[STREAM_VECS][4];
#pragma unroll
        for (int i = 0; i < STREAM_VECS; i++) {
            const int j = threadIdx.x + i * STREAM_BLOCK;
            if (j < nv) {
                cs.load4(a0 + 4 * j, c[i]);
                ld_stream4(val + a0 + 4 * j, a[i]);
            } else {
#pragma unroll
                for (int u = 0; u < Cols::W; u++) c[i][u] = 0;
#pragma unroll
                for (int u = 0; u < 4; u++) a[i][u] = T(0);
            }
        }
        // Up to STREAM_MAX_ROWS + 1 row bounds, four loads in flight per thread.
        for (int g0 = 0; g0 <= nr; g0 += 4 * STREAM_BLOCK) {
            int b[4];
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int g = g0 + threadIdx.x + u * STREAM_BLOCK;
                b[u] = g <= nr ? cs.bound(r0, g, p0) : 0;
            }
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int g = g0 + threadIdx.x + u * STREAM_BLOCK;
                if (g <= nr) rp[g] = b[u];
            }
        }
        T xv[STREAM_VECS][4];
#pragma unroll
        for (int i = 0; i < STREAM_VECS; i++)
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int k = 4 * (threadIdx.x + i * STREAM_BLOCK) + u - head;
                xv[i][u] = k >= 0 && k < m ? __ldg(x + (i64)cs.at(c[i], u) * ldx) : T(0);
            }
#pragma unroll
        for (int i = 0; i < STREAM_VECS; i++)
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int k = 4 * (threadIdx.x + i * STREAM_BLOCK) + u - head;
                if (k >= 0 && k < m) prod[k] = a[i][u] * xv[i][u];
            }
        __syncthreads();
        // Lanes per row: the largest power of two with about STREAM_LANE_ITEMS products per
        // lane in the block's mean row, so a lane adds a few neighbours from shared memory
        // before the shuffles.
        int V = 1;
        const int mean = nr > 0 ? m / nr : 0;
        while (V < 32 && 2 * V * STREAM_LANE_ITEMS <= mean) V *= 2;
        const int lane = threadIdx.x % V;
        for (int base = 0; base < nr; base += STREAM_BLOCK / V) {
            const int g = base + threadIdx.x / V;
            T s = T(0);
            if (g < nr) {
                const int rs = rp[g], re = rp[g + 1];
                if (re - rs >= 8 * V) {
                    // A row far above the block's mean (rows of 32 among empty ones): four
                    // products in flight per lane, 10 % faster on 90%-empty rows on the H200.
                    // The FEM-like rows ran 4 % slower with this branch in the kernel, whether
                    // they took it (every row unrolled) or not.
#pragma unroll 4
                    for (int k = rs + lane; k < re; k += V) s += prod[k];
                } else {
                    for (int k = rs + lane; k < re; k += V) s += prod[k];
                }
            }
            for (int off = V / 2; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
            if (g < nr && lane == 0) axpby_store(y + (r0 + g) * ldy, s, alpha, beta);
        }
        return;
    }
    T s = T(0);
    i64 k = p0 + threadIdx.x;
    for (; k + 3 * STREAM_BLOCK < p1; k += 4 * STREAM_BLOCK) {
        int c[4];
        T a[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            c[u] = cs.one(k + u * STREAM_BLOCK);
            a[u] = ld_stream(val + k + u * STREAM_BLOCK);
        }
#pragma unroll
        for (int u = 0; u < 4; u++) s += a[u] * __ldg(x + c[u] * ldx);
    }
    for (; k < p1; k += STREAM_BLOCK) s += ld_stream(val + k) * __ldg(x + cs.one(k) * ldx);
    const T t = block_sum(s, wsum);
    if (count == 1) {
        if (threadIdx.x == 0) axpby_store(y + r0 * ldy, t, alpha, beta);
        return;
    }
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = t;
        __threadfence();
        last = atomicAdd(counters + first, 1u) == (u32)(count - 1);
    }
    __syncthreads();
    if (last && threadIdx.x == 0) {
        __threadfence();
        T sum = T(0);
        // Volatile: the other chunks' partials were written by other blocks after this
        // block started, so they must not come from a stale cache line.
        const volatile T* vp = partial;
        for (i64 b = first; b < first + count; b++) sum += vp[b];
        axpby_store(y + r0 * ldy, sum, alpha, beta);
        counters[first] = 0u;  // ready for the next call
    }
}
#define STREAM(T, TNAME)                                                                              \
    extern "C" __global__ void __launch_bounds__(STREAM_BLOCK)                                        \
        spmv_stream_##TNAME(const i64 *work, const i64 *row_ptr, const int *col, const T *val,         \
                            const T *x, i64 ldx, T *y, i64 ldy, T alpha, T beta, T *partial,           \
                            u32 *counters) {                                                           \
        spmv_stream<T>(work, PlainCols{col, row_ptr}, val, x, ldx, y, ldy, alpha, beta, partial, counters); \
    }
// The planned blocks over packed columns (PackedCols): `base` the first column of each work
// block, `ends` each row's end relative to its block's first entry.
#define PACKED(T, TNAME)                                                                              \
    extern "C" __global__ void __launch_bounds__(STREAM_BLOCK)                                        \
        spmv_packed_##TNAME(const i64 *work, const int *base, const u16 *ends, const u16 *col,         \
                            const T *val, const T *x, i64 ldx, T *y, i64 ldy, T alpha, T beta,         \
                            T *partial, u32 *counters) {                                               \
        spmv_stream<T>(work, PackedCols{col, base, ends, 0}, val, x, ldx, y, ldy, alpha, beta, partial, \
                       counters);                                                                      \
    }

// SpMV over rows that repeat one pattern of d diagonals: row r holds columns r + off[k] where
// bit r of `bits` is set. A thread a row: such a row reads its values and gathers x at the
// pattern's offsets (the same for the whole warp, from shared memory), so no column index
// moves and the warp's gathers are its rows' neighbours; the other rows read their columns.
// A warp whose 32 rows all follow the pattern reads one row pointer (its rows then hold d
// entries each), so a row moves only its values; that pointer is read beside the warp's word.
// Entries are summed in row order, U of them in flight per thread. (The longest run of pattern
// rows that the vector path below uses is one grid line of a stencil, too short to matter here.)
#define DIAG_MAX 128
template <typename T>
__device__ __forceinline__ void spmv_diag(i64 nrows, const i64* __restrict__ row_ptr, const int* __restrict__ col,
                                          const T* __restrict__ val, const u32* __restrict__ bits,
                                          const int* __restrict__ off, int d, const T* __restrict__ x, i64 ldx,
                                          T* __restrict__ y, i64 ldy, T alpha, T beta) {
    constexpr int U = sizeof(T) == 4 ? 8 : 4;
    __shared__ int so[DIAG_MAX];
    for (int k = threadIdx.x; k < d; k += blockDim.x) so[k] = off[k];
    __syncthreads();
    const i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= nrows) return;
    // The warp's word: the grid's blocks are whole warps of rows from a multiple of 32.
    const u32 word = __ldg(bits + (r >> 5));
    const i64 pw = __ldg(row_ptr + (r & ~(i64)31));  // beside the word: one wait, not two
    const i64 p = word == 0xffffffffu ? pw + (r & 31) * d : row_ptr[r];
    T s = T(0);
    if ((word >> (r & 31)) & 1u) {
        const T* v = val + p;
        const T* xr = x + r * ldx;
        for (int k0 = 0; k0 < d; k0 += U) {
            T a[U], b[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int k = k0 + u;
                a[u] = k < d ? __ldg(v + k) : T(0);
                b[u] = k < d ? __ldg(xr + (i64)so[k < d ? k : 0] * ldx) : T(0);
            }
#pragma unroll
            for (int u = 0; u < U; u++)
                if (k0 + u < d) s += a[u] * b[u];
        }
    } else {
        const i64 e = row_ptr[r + 1];
        for (i64 k = p; k < e; k++) s += __ldg(val + k) * __ldg(x + (i64)__ldg(col + k) * ldx);
    }
    axpby_store(y + r * ldy, s, alpha, beta);
}
#define DIAG(T, TNAME)                                                                                \
    extern "C" __global__ void __launch_bounds__(256)                                                 \
        spmv_diag_##TNAME(i64 nrows, const i64 *row_ptr, const int *col, const T *val, const u32 *bits,  \
                          const int *off, int d, const T *x, i64 ldx, T *y, i64 ldy, T alpha, T beta) { \
        spmv_diag<T>(nrows, row_ptr, col, val, bits, off, d, x, ldx, y, ldy, alpha, beta);             \
    }

// SpMV over a pattern of many diagonals (banded rows): L lanes a row read the row's values as
// 16-byte vectors from the aligned entry at or before its first, lane g vectors g, g + L, ...,
// each entry's x at the pattern's offset (entries of the vectors outside the row are skipped).
// A warp takes S steps of 32 / L rows (S <= L, so its rows lie within one word of `bits`), with
// C vectors a lane per row: all S * C vectors a lane are issued before the first product, as a
// streaming read keeps its loads in flight; a row of more than L * C vectors reads the rest a
// vector at a time after them. Lane sums are added by xor shuffles.
// Nothing a warp loads before its values should wait on memory: inside the longest run of
// pattern rows (rows run_lo..run_hi, the first starting at entry run_at) a row's start is
// computed; elsewhere the word and the row pointer of the warp's first row are read together,
// so a warp whose rows all follow the pattern waits one load before its values. Rows outside
// the pattern read their columns, L lanes a row. Consecutive offsets (CONSEC, a band: first +
// k) are computed too (UNIT: x contiguous, so a lane's x are one base plus constants); others
// are read into shared memory (times ldx) before the rows. A row's x are all loaded before its
// first product: interleaved with the products, most of them waited for the values first.
// ld.global.nc.L1::no_allocate: one 16-byte vector of A's values, read once (p 16-byte aligned).
__device__ __forceinline__ void ld_stream_vec(const float* p, float* r) { ld_stream4(p, r); }
__device__ __forceinline__ void ld_stream_vec(const double* p, double* r) {
    asm("ld.global.nc.L1::no_allocate.v2.f64 {%0, %1}, [%2];" : "=d"(r[0]), "=d"(r[1]) : "l"(p));
}
// The aligned vector at or before entry p (val 16-byte aligned).
template <typename T>
__device__ __forceinline__ const T* vec_floor(const T* p) {
    return reinterpret_cast<const T*>(reinterpret_cast<unsigned long long>(p) & ~15ull);
}
template <typename T, int L, int C, int S, bool CONSEC, bool UNIT>
__device__ __forceinline__ void spmv_diagv(i64 nrows, const i64* __restrict__ row_ptr, const int* __restrict__ col,
                                           const T* __restrict__ val, const u32* __restrict__ bits,
                                           const int* __restrict__ off, int d, int first, i64 run_lo,
                                           i64 run_hi, i64 run_at, const T* __restrict__ x, i64 ldx,
                                           T* __restrict__ y, i64 ldy, T alpha, T beta) {
    constexpr int V = VecOf<T>::N;
    constexpr int R = 32 / L;
    static_assert(S <= L, "a warp's rows within 32");
    __shared__ i64 so[DIAG_MAX];  // the offsets times ldx
    if (!CONSEC) {
        for (int k = threadIdx.x; k < d; k += blockDim.x) so[k] = (i64)off[k] * ldx;
        __syncthreads();
    }
    const int g = (int)(threadIdx.x & 31) % L;
    const int sub = (int)(threadIdx.x & 31) / L;
    const i64 r0 = (((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5) * (R * S);
    if (r0 >= nrows) return;  // the whole warp
    const i64 w0 = r0 & ~(i64)31;
    const bool in_run = r0 >= run_lo && r0 + R * S <= run_hi;
    const u32 word = in_run ? 0xffffffffu : __ldg(bits + (r0 >> 5));
    const bool full = word == 0xffffffffu;
    // The entry where row w0 would start were it in the run (then every row is d entries).
    const i64 ew = in_run ? run_at + (w0 - run_lo) * d : __ldg(row_ptr + w0);
    const T* ps[S];  // each step's row start
    T v[S][C][V];
#pragma unroll
    for (int s = 0; s < S; s++) {
        const i64 r = r0 + s * R + sub;
        const bool pat = r < nrows && ((word >> (r & 31)) & 1u);
        ps[s] = val + (full ? ew + (r - w0) * d : (r < nrows ? __ldg(row_ptr + r) : 0));
        const T* a = vec_floor(ps[s]) + g * V;
#pragma unroll
        for (int c = 0; c < C; c++) {
            if (pat && a + c * L * V < ps[s] + d) {
                ld_stream_vec(a + c * L * V, v[s][c]);
            } else {
#pragma unroll
                for (int t = 0; t < V; t++) v[s][c][t] = T(0);
            }
        }
    }
#pragma unroll
    for (int s = 0; s < S; s++) {
        const i64 r = r0 + s * R + sub;
        const bool ok = r < nrows;
        T sum = T(0);
        if (ok && ((word >> (r & 31)) & 1u)) {
            const T* a = vec_floor(ps[s]);
            const int ph = (int)(ps[s] - a);
            const T* xr = x + r * ldx;
            const T* xc = xr + (i64)(first - ph) * ldx;  // entry k's x at xc + (k + ph) * ldx
            const T* xg = x + (r + first - ph + g * V);  // UNIT: entry k's x at xg + (k + ph - g * V)
            // Every x of the batch is loaded before the first product, so none waits on the values.
            T xv[C][V];
#pragma unroll
            for (int c = 0; c < C; c++) {
#pragma unroll
                for (int t = 0; t < V; t++) {
                    const int j = (g + c * L) * V + t;
                    const int k = j - ph;
                    xv[c][t] = k >= 0 && k < d ? __ldg(UNIT ? xg + (c * L * V + t) : CONSEC ? xc + j * ldx : xr + so[k])
                                               : T(0);
                }
            }
#pragma unroll
            for (int c = 0; c < C; c++) {
#pragma unroll
                for (int t = 0; t < V; t++) {
                    const int k = (g + c * L) * V + t - ph;
                    if (k >= 0 && k < d) sum += v[s][c][t] * xv[c][t];
                }
            }
            for (int vi = g + C * L; vi * V < d + ph; vi += L) {
                T w[V];
                ld_stream_vec(a + vi * V, w);
#pragma unroll
                for (int t = 0; t < V; t++) {
                    const int j = vi * V + t;
                    const int k = j - ph;
                    if (k < d) sum += w[t] * __ldg(UNIT ? xg + (j - g * V) : CONSEC ? xc + j * ldx : xr + so[k]);
                }
            }
        } else if (ok) {
            const i64 e = __ldg(row_ptr + r + 1);
            for (i64 q = (ps[s] - val) + g; q < e; q += L) sum += __ldg(val + q) * __ldg(x + (i64)__ldg(col + q) * ldx);
        }
#pragma unroll
        for (int o = L / 2; o >= 1; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        if (ok && g == 0) axpby_store(y + r * ldy, sum, alpha, beta);
    }
}
// `consec` is the same for the whole grid, so the branch costs nothing and the band's build
// has no barrier.
#define DIAGV(T, TNAME, L, C, S)                                                                      \
    extern "C" __global__ void __launch_bounds__(256) spmv_diagv_##TNAME##_l##L##_c##C##_s##S(       \
        i64 nrows, const i64 *row_ptr, const int *col, const T *val, const u32 *bits, const int *off,  \
        int d, int consec, int first, i64 run_lo, i64 run_hi, i64 run_at, const T *x, i64 ldx, T *y,   \
        i64 ldy, T alpha, T beta) {                                                                    \
        if (consec && ldx == 1)                                                                        \
            spmv_diagv<T, L, C, S, true, true>(nrows, row_ptr, col, val, bits, off, d, first, run_lo,  \
                                               run_hi, run_at, x, ldx, y, ldy, alpha, beta);           \
        else if (consec)                                                                               \
            spmv_diagv<T, L, C, S, true, false>(nrows, row_ptr, col, val, bits, off, d, first, run_lo, \
                                                run_hi, run_at, x, ldx, y, ldy, alpha, beta);          \
        else                                                                                           \
            spmv_diagv<T, L, C, S, false, false>(nrows, row_ptr, col, val, bits, off, d, first,        \
                                                 run_lo, run_hi, run_at, x, ldx, y, ldy, alpha, beta); \
    }
#define DIAGV_ALL(T, TNAME)                                                                           \
    DIAGV(T, TNAME, 4, 4, 1) DIAGV(T, TNAME, 4, 4, 2) DIAGV(T, TNAME, 8, 1, 1) DIAGV(T, TNAME, 8, 2, 1)  \
    DIAGV(T, TNAME, 16, 1, 1)

// SpMV over rows whose entries all lie within 2^15 of the diagonal (RowStats::near): each
// column as a 16-bit offset from its row (`off`), so an f64 entry moves 10 bytes, not 12. K
// lanes a row take every K-th entry, U of them a lane loaded at once and predicated on the
// row's end, then their x, then the products: no loop over the leftover entries, whose loads
// would wait one after another. On the H200's FEM-like f64 rows (16.7 a row, under ncu): two
// lanes looping over CSR 70.5 us, four predicated lanes over CSR 66, over the offsets 56.7
// (bench/narrow_cols_probe.py, 8-bit offsets no faster).
template <typename T, int K, bool UNIT>
__device__ __forceinline__ void spmv_near(i64 nrows, const i64* __restrict__ row_ptr, const short* __restrict__ off,
                                          const T* __restrict__ val, const T* __restrict__ x, i64 ldx,
                                          T* __restrict__ y, i64 ldy, T alpha, T beta) {
    constexpr int U = 4;
    const int lane = threadIdx.x % K;
    const i64 r = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / K;
    T s = T(0);
    if (r < nrows) {
        const i64 b = __ldg(row_ptr + r), e = __ldg(row_ptr + r + 1);
        const T* xr = x + (UNIT ? r : r * ldx);
        for (i64 p0 = b + lane; p0 < e; p0 += K * U) {
            bool ok[U];
            int c[U];
            T a[U], v[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                ok[u] = p0 + u * K < e;
                c[u] = ok[u] ? __ldg(off + p0 + u * K) : 0;
                a[u] = ok[u] ? __ldg(val + p0 + u * K) : T(0);
            }
#pragma unroll
            for (int u = 0; u < U; u++) v[u] = ok[u] ? __ldg(xr + (UNIT ? (i64)c[u] : (i64)c[u] * ldx)) : T(0);
#pragma unroll
            for (int u = 0; u < U; u++)
                if (ok[u]) s += a[u] * v[u];
        }
    }
#pragma unroll
    for (int o = K / 2; o >= 1; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (r < nrows && lane == 0) axpby_store(y + r * ldy, s, alpha, beta);
}
// `ldx` is the same for the whole grid; a contiguous x takes the build without its multiplies.
#define NEAR(T, TNAME, K)                                                                             \
    extern "C" __global__ void __launch_bounds__(256, 8) spmv_near_##TNAME##_k##K(                    \
        i64 nrows, const i64 *row_ptr, const short *off, const T *val, const T *x, i64 ldx, T *y,     \
        i64 ldy, T alpha, T beta) {                                                                    \
        if (ldx == 1)                                                                                  \
            spmv_near<T, K, true>(nrows, row_ptr, off, val, x, ldx, y, ldy, alpha, beta);              \
        else                                                                                           \
            spmv_near<T, K, false>(nrows, row_ptr, off, val, x, ldx, y, ldy, alpha, beta);             \
    }
#define NEAR_ALL(T, TNAME) NEAR(T, TNAME, 2) NEAR(T, TNAME, 4) NEAR(T, TNAME, 8)

// f32 SpMV over the column-slice layout (matrix::slices, scattered columns): x copied into shared
// memory a slice at a time, so an entry reads its x there instead of gathering a sector from
// L2. A group of SLICE_MEMBERS blocks owns a run of row pieces; each member keeps sums for all
// of them in shared memory and takes every SLICE_MEMBERS-th of the group's stages, so the
// group copies x once between them. A stage is one slice of x, the records in it (column in
// the slice << 16 | piece, and the value) and its descriptor (each warp's first record with
// its step width, the end, the slice). Each warp adds its records in steps in which no piece
// appears twice (the layout deals them so), a lane's product straight into its piece's sum:
// every sum takes its additions in one fixed order. With `bulk` (sm_90, x contiguous and
// 16-byte aligned) a group is a cluster: warp SLICE_WARPS copies SLICE_XB stages ahead by bulk
// copies, every thread of the others releases each stage by an mbarrier arrival, so no warp
// waits on another, and at the end each member adds a share of the pieces' sums over the
// members in rank order through distributed shared memory. Otherwise one block a group loads
// each of its members' stages in turn and waits on barriers. Pieces of cut rows go to
// `slots`, summed in order by spmv_cut.
#define SLICE_WARPS 31
#define SLICE_THREADS (32 * (SLICE_WARPS + 1))
#define SLICE_MEMBERS 2
#define SLICE_STAGE 2560
#define SLICE_DESC 36
#define SLICE_SS_SHIFT 26
#define SLICE_POS 0x3ffffffu
#define SLICE_PAD 0xffffu
// Columns of x a stage holds (32 KB), stages in flight, and a stage's bytes: x's slice, the
// records (8 bytes each), the descriptor, rounded up to 128 so every stage's copies land on
// 128-byte lines.
#define SLICE_COLS 8192
#define SLICE_XB 3
#define SLICE_STAGE_BYTES ((SLICE_COLS * 4 + SLICE_STAGE * 8 + SLICE_DESC * 4 + 127) / 128 * 128)
// Warp w's records of one stage (its descriptor `d` in shared memory): (column in the slice
// << 16 | piece, the value's bits).
__device__ __forceinline__ void slice_sums(const u32* d, int w, int lane, const float* xs, const uint2* rs,
                                           float* ys) {
    const u32 a = d[0] & SLICE_POS, d0 = d[w];
    const u32 ss = d0 >> SLICE_SS_SHIFT, p0 = (d0 & SLICE_POS) - a, p1 = (d[w + 1] & SLICE_POS) - a;
    for (u32 p = p0; p < p1; p += 2 * ss) {
        const u32 q0 = p + lane, q1 = p + ss + lane;
        const uint2 r0 = lane < ss && q0 < p1 ? rs[q0] : make_uint2(SLICE_PAD, 0u);
        const uint2 r1 = lane < ss && q1 < p1 ? rs[q1] : make_uint2(SLICE_PAD, 0u);
        const float f0 = __uint_as_float(r0.y) * xs[r0.x >> 16];
        const float f1 = __uint_as_float(r1.y) * xs[r1.x >> 16];
        if ((r0.x & 0xffffu) != SLICE_PAD) ys[r0.x & 0xffffu] += f0;
        __syncwarp();
        if ((r1.x & 0xffffu) != SLICE_PAD) ys[r1.x & 0xffffu] += f1;
        __syncwarp();
    }
}
__device__ __forceinline__ void spmv_sliced(const uint2* __restrict__ recs, const i64* __restrict__ block_base,
                                            const int* __restrict__ stage0, const u32* __restrict__ desc,
                                            const int* __restrict__ piece0, const int* __restrict__ piece_out,
                                            const float* __restrict__ x, i64 ncols, i64 ldx, float* __restrict__ y,
                                            i64 ldy, float alpha, float beta, float* __restrict__ slots, int bulk) {
    constexpr int SC = SLICE_COLS, XB = SLICE_XB, SB = SLICE_STAGE_BYTES;
    extern __shared__ __align__(128) unsigned char slice_smem[];
#if __CUDA_ARCH__ >= 900
    const int stages = bulk ? XB : 1;
#else
    const int stages = 1;
    bulk = 0;
#endif
    // The pieces' sums after the stages the launch gave room for (slices::smem_bytes).
    float* ys = reinterpret_cast<float*>(slice_smem + stages * SB);
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, blk = blockIdx.x;
    // With bulk, block blk is member blk % SLICE_MEMBERS of its group (the cluster's rank);
    // otherwise block blk is the whole of group blk.
    const int g = bulk ? blk / SLICE_MEMBERS : blk;
    const int v0 = piece0[g], nv = piece0[g + 1] - v0;
    auto xs_of = [&](int b) { return reinterpret_cast<float*>(slice_smem + b * SB); };
    auto rs_of = [&](int b) { return reinterpret_cast<uint2*>(slice_smem + b * SB + SC * 4); };
    auto d_of = [&](int b) { return reinterpret_cast<u32*>(slice_smem + b * SB + SC * 4 + SLICE_STAGE * 8); };
    auto put = [&](int i, float s) {
        const int o = piece_out[v0 + i];
        if (o >= 0)
            axpby_store(y + (i64)o * ldy, s, alpha, beta);
        else
            slots[-1 - o] = s;
    };
    for (int i = tid; i < nv; i += SLICE_THREADS) ys[i] = 0.f;
#if __CUDA_ARCH__ >= 900
    __shared__ __align__(8) u64 full[XB], empty[XB];
    if (bulk) {
        const int st0 = stage0[blk], nst = stage0[blk + 1] - st0;
        const i64 base = block_base[blk];
        if (tid == 0) {
            for (int b = 0; b < XB; b++) {
                mbar_init(&full[b], 1);
                mbar_init(&empty[b], SLICE_WARPS * 32);
            }
            fence_mbar_init();
        }
        __syncthreads();
        if (w == SLICE_WARPS) {
            u32 ws = 0, we = 0, wsl = 0;  // lane j: stage k + j's first record, end and slice
            for (int k = 0; k < nst; k++) {
                const int j = k & 31;
                if (j == 0 && k + lane < nst) {
                    const u32* d = desc + (i64)(st0 + k + lane) * SLICE_DESC;
                    ws = d[0] & SLICE_POS;
                    we = d[SLICE_WARPS + 1];
                    wsl = d[SLICE_WARPS + 2];
                }
                const u32 a = __shfl_sync(0xffffffffu, ws, j), e = __shfl_sync(0xffffffffu, we, j);
                const u32 sl = __shfl_sync(0xffffffffu, wsl, j);
                if (lane == 0) {
                    const int b = k % XB;
                    if (k >= XB)
                        while (!mbar_try_wait(&empty[b], (u32)((k / XB - 1) & 1))) {
                        }
                    const i64 c0 = (i64)sl * SC;
                    const u32 nx = (u32)min((i64)SC, ncols - c0);
                    const u32 body = nx * 4 / 16 * 16;
                    float* xs = xs_of(b);
                    for (u32 i = body / 4; i < nx; i++) xs[i] = x[c0 + i];
                    mbar_arrive_expect_tx(&full[b], body + (e - a) * 8 + SLICE_DESC * 4);
                    if (body) bulk_copy_g2s(xs, x + c0, body, &full[b]);
                    if (e > a) bulk_copy_g2s(rs_of(b), recs + base + a, (e - a) * 8, &full[b]);
                    bulk_copy_g2s(d_of(b), desc + (i64)(st0 + k) * SLICE_DESC, SLICE_DESC * 4, &full[b]);
                }
            }
        } else {
            for (int k = 0; k < nst; k++) {
                const int b = k % XB;
                while (!mbar_try_wait(&full[b], (u32)((k / XB) & 1))) {
                }
                slice_sums(d_of(b), w, lane, xs_of(b), rs_of(b), ys);
                // Every thread that read the stage releases it (its reads ordered before the
                // producer's next copy into it), not one lane for the warp.
                mbar_arrive(&empty[b]);
            }
        }
        // Every member's sums are done; each adds its share of the pieces over the members in
        // rank order, then waits until no other member still reads its sums.
        __syncwarp();
        cluster_sync();
        const u32 rank = cluster_rank();
        const int lo = nv * (int)rank / SLICE_MEMBERS, hi = nv * ((int)rank + 1) / SLICE_MEMBERS;
        for (int i = lo + tid; i < hi; i += SLICE_THREADS) {
            float s = ld_cluster_f32(ys + i, 0);
            for (u32 q = 1; q < SLICE_MEMBERS; q++) s += ld_cluster_f32(ys + i, q);
            put(i, s);
        }
        cluster_sync();
        return;
    }
#endif
    float* xs = xs_of(0);
    uint2* rs = rs_of(0);
    u32* d = d_of(0);
    for (int m = g * SLICE_MEMBERS; m < (g + 1) * SLICE_MEMBERS; m++) {
        const int st0 = stage0[m], nst = stage0[m + 1] - st0;
        const i64 base = block_base[m];
        for (int k = 0; k < nst; k++) {
            __syncthreads();  // the last stage's sums are done (and ys is zeroed)
            if (tid < SLICE_DESC) d[tid] = desc[(i64)(st0 + k) * SLICE_DESC + tid];
            __syncthreads();
            const u32 a = d[0] & SLICE_POS, e = d[SLICE_WARPS + 1];
            const i64 c0 = (i64)d[SLICE_WARPS + 2] * SC;
            const int nx = (int)min((i64)SC, ncols - c0);
            for (int i = tid; i < nx; i += SLICE_THREADS) xs[i] = x[(c0 + i) * ldx];
            for (u32 i = tid; i < e - a; i += SLICE_THREADS) rs[i] = recs[base + a + i];
            __syncthreads();
            if (w < SLICE_WARPS) slice_sums(d, w, lane, xs, rs, ys);
        }
    }
    __syncthreads();
    for (int i = tid; i < nv; i += SLICE_THREADS) put(i, ys[i]);
}
// The cut rows: a warp a row adds its pieces' sums, lane i those i, i + 32, ..., then the
// lanes by xor shuffles, the same order on every run.
template <typename T>
__device__ __forceinline__ void spmv_cut(i64 ncut, const int* __restrict__ cut_rows,
                                         const int* __restrict__ cut_start, const T* __restrict__ slots,
                                         T* __restrict__ y, i64 ldy, T alpha, T beta) {
    const i64 r = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (r >= ncut) return;
    T s = T(0);
    for (int p = cut_start[r] + lane; p < cut_start[r + 1]; p += 32) s += slots[p];
#pragma unroll
    for (int o = 16; o >= 1; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) axpby_store(y + (i64)cut_rows[r] * ldy, s, alpha, beta);
}
extern "C" __global__ void __launch_bounds__(SLICE_THREADS, 1)
    spmv_sliced_f32(const uint2* recs, const i64* block_base, const int* stage0, const u32* desc,
                    const int* piece0, const int* piece_out, const float* x, i64 ncols, i64 ldx, float* y,
                    i64 ldy, float alpha, float beta, float* slots, int bulk) {
    spmv_sliced(recs, block_base, stage0, desc, piece0, piece_out, x, ncols, ldx, y, ldy, alpha, beta, slots,
                bulk);
}
extern "C" __global__ void __launch_bounds__(256)
    spmv_cut_f32(i64 ncut, const int* cut_rows, const int* cut_start, const float* slots, float* y, i64 ldy,
                 float alpha, float beta) {
    spmv_cut<float>(ncut, cut_rows, cut_start, slots, y, ldy, alpha, beta);
}

ROWVEC_ALL(float, f32)
ROWVEC_ALL(double, f64)
ROWVEC_CHUNKS_ALL(float, f32)
ROWVEC_DEEP_ALL(float, f32)
ROWVEC_CHUNKS_ALL(double, f64)
AVEC_ALL(float, f32)
AVEC_ALL(double, f64)
SPMV_AVEC_ALL(float, f32)
WINDOW_ALL(float, f32)
WINDOW_ALL(double, f64)
ROWBLK_ALL(float, f32, ROWBLK, ROWBLK)
ROWBLK_ALL(double, f64, ROWBLK, ROWBLK3)
ROWBLK_ALL(float, f32, ROWBLK8, ROWBLK8)
COMBINE(float, f32)
COMBINE(double, f64)
FILL(float, f32)
FILL(double, f64)
STREAM(float, f32)
STREAM(double, f64)
PACKED(float, f32)
PACKED(double, f64)
DIAG(float, f32)
DIAG(double, f64)
DIAGV_ALL(float, f32)
DIAGV_ALL(double, f64)
NEAR_ALL(float, f32)
NEAR_ALL(double, f64)
