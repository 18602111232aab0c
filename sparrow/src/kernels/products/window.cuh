// SpMM/SpMV, window: row blocks with their window of B staged in shared memory. Included by spmm.cu.

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
