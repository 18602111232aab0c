// SpMM/SpMV, rowvec and avec: a group of lanes per row, and their entry points. Included by spmm.cu.

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
