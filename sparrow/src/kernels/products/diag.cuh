// SpMM/SpMV, diag and diagv: SpMV over rows that repeat one pattern of diagonals. Included by spmm.cu.

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
