// SpMM/SpMV, the empty rows of a sorted launch (fill) and the long rows' partial sums (combine). Included by spmm.cu.

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
