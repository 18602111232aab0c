// SpMM/SpMV, rowblk: blocks of consecutive rows over the union of their columns. Included by spmm.cu.

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
