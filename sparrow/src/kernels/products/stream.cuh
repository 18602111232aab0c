// SpMM/SpMV, stream and packed: SpMV over the work blocks planned on the host. Included by spmm.cu.

// ---- SpMV over planned work blocks ----
// STREAM_BLOCK threads; a block of short rows holds at most STREAM_ITEMS entries. Each work
// block is six i64: first row, one past the last row, first entry, one past the last entry,
// and for a chunk of a long row the index of the row's first chunk block and the row's
// number of chunks (0 for a block of short rows).
// STREAM_BLOCK, STREAM_ITEMS (entries of a block of short rows at most: what three aligned
// 4-entry vectors per thread cover from any alignment; the host plans blocks of up to this many
// on even rows with local columns and sizes the products' shared memory to match) and
// STREAM_MAX_ROWS come from the host as -D definitions (kernels/sizes.rs).
#if !defined(STREAM_BLOCK) || !defined(STREAM_ITEMS) || !defined(STREAM_MAX_ROWS)
#error "STREAM_BLOCK, STREAM_ITEMS and STREAM_MAX_ROWS are passed by the host (kernels/sizes.rs)"
#endif
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
