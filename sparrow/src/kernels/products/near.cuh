// SpMM/SpMV, near: SpMV over 16-bit column offsets from the row. Included by spmm.cu.

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
