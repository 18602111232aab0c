// The elementwise and per-signal steps of the compressed-sensing solvers, for f32 and f64.
// A batch of B signals is stored signal after signal: signal b's n entries start at b * n.
// The products with Phi (correlate Phi^T R and apply Phi X) go through cuBLAS for batches;
// `correlate` here is the single-signal GEMV. Every kernel is checked against the CPU
// reference in `solvers::cs::prox` (or the plain loop it replaces) on the device.
#include "common.cuh"

#define PASTE2(a, b) a##b
#define PASTE(a, b) PASTE2(a, b)

// Grid-stride loop over [0, n): launches of any size cover any n.
#define FOR_EACH(i, n) for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (i64)gridDim.x * blockDim.x)

template <class T>
__device__ __forceinline__ T absv(T v) {
    return v < (T)0 ? -v : v;
}

// Sum of v over the block into *out (one atomic per block); every thread must call it.
__device__ __forceinline__ double block_sum(double v, double* red) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    if (lane == 0) red[w] = v;
    __syncthreads();
    double t = 0;
    if (threadIdx.x == 0)
        for (int j = 0; j < (int)(blockDim.x >> 5); j++) t += red[j];
    __syncthreads();
    return t;  // in thread 0
}

// out = |x| > t ? x : 0
template <class T>
__device__ void hard(const T* __restrict__ x, T t, T* __restrict__ out, i64 n) {
    FOR_EACH(i, n) {
        const T v = x[i];
        out[i] = absv(v) > t ? v : (T)0;
    }
}

// out = sign(x) max(|x| - lambda, 0)
template <class T>
__device__ __forceinline__ T soft1(T v, T lambda) {
    const T a = absv(v) - lambda;
    return a > (T)0 ? (v < (T)0 ? -a : a) : (T)0;
}
template <class T>
__device__ void soft(const T* __restrict__ x, T lambda, T* __restrict__ out, i64 n) {
    FOR_EACH(i, n) out[i] = soft1(x[i], lambda);
}

// The IHT step z = x + mu g, fused with the key of the top-K hard threshold, |z|; mu is one
// step for all signals, or mus[b] per signal when mus is given (normalised IHT, HTP). Signals
// whose solver has stopped (active[b] == 0) keep z = x, so their estimate does not move.
template <class T>
__device__ void iht_step(const T* __restrict__ x, const T* __restrict__ g, T mu, const T* __restrict__ mus,
                         T* __restrict__ z, T* __restrict__ zabs, const int* __restrict__ active, i64 per, i64 n) {
    FOR_EACH(i, n) {
        const i64 b = i / per;
        const T m = mus != nullptr ? mus[b] : mu;
        const T v = (active == nullptr || active[b]) ? x[i] + m * g[i] : x[i];
        z[i] = v;
        zabs[i] = absv(v);
    }
}

// The top-K hard threshold's write: out (zeroed) gets z at each signal's K selected positions.
template <class T>
__device__ void scatter(const T* __restrict__ z, const int* __restrict__ idx, i64 k, i64 per, i64 nsig,
                        T* __restrict__ out) {
    FOR_EACH(e, nsig * k) {
        const i64 b = e / k;
        const int j = idx[e];
        if (j >= 0) out[b * per + j] = z[b * per + j];
    }
}

// AMP's residual with the Onsager term, one block per signal:
// z = y - phix + (||x||_0 / m) z_prev, with x of n entries and y, phix, z_prev, z of m.
template <class T>
__device__ void amp_residual(const T* __restrict__ y, const T* __restrict__ phix, const T* __restrict__ x,
                             const T* __restrict__ zprev, T* __restrict__ z, i64 m, i64 n) {
    __shared__ double red[32];
    __shared__ double l0;
    const i64 b = blockIdx.x;
    double c = 0;
    for (i64 j = threadIdx.x; j < n; j += blockDim.x) c += x[b * n + j] != (T)0 ? 1.0 : 0.0;
    const double t = block_sum(c, red);
    if (threadIdx.x == 0) l0 = t;
    __syncthreads();
    const T onsager = (T)(l0 / (double)m);
    for (i64 i = threadIdx.x; i < m; i += blockDim.x) {
        const i64 e = b * m + i;
        z[e] = y[e] - phix[e] + onsager * zprev[e];
    }
}

// Singular-value shrink out = max(sigma - tau, 0); *nuclear (zeroed) += the sum of out, by
// warp-shuffle partial sums and one atomic per block.
template <class T>
__device__ void sv_shrink(const T* __restrict__ sigma, T tau, T* __restrict__ out, i64 n, T* nuclear) {
    __shared__ double red[32];
    double part = 0;
    FOR_EACH(i, n) {
        const T d = sigma[i] - tau;
        const T v = d > (T)0 ? d : (T)0;
        out[i] = v;
        part += (double)v;
    }
    const double t = block_sum(part, red);
    if (threadIdx.x == 0) atomicAdd(nuclear, (T)t);
}

// Total-variation forward difference per signal: d[i] = x[i + 1] - x[i], the last entry 0.
template <class T>
__device__ void tv_grad(const T* __restrict__ x, T* __restrict__ d, i64 per, i64 n) {
    FOR_EACH(e, n) {
        const i64 i = e % per;
        d[e] = i + 1 < per ? x[e + 1] - x[e] : (T)0;
    }
}

// out = Phi^T r for one signal, Phi m x n row-major: a block owns 32 columns (one coalesced
// row segment per warp load) and splits the rows over its 8 warps; the partial sums meet in
// shared memory in a fixed order, so the result is the same on every run.
template <class T>
__device__ void correlate(const T* __restrict__ phi, const T* __restrict__ r, T* __restrict__ out, i64 m,
                          i64 n) {
    __shared__ T part[8][33];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const i64 j = (i64)blockIdx.x * 32 + lane;
    T acc = 0;
    if (j < n)
        for (i64 i = w; i < m; i += 8) acc += phi[i * n + j] * r[i];
    part[w][lane] = acc;
    __syncthreads();
    if (w == 0 && j < n) {
        T s = 0;
#pragma unroll
        for (int q = 0; q < 8; q++) s += part[q][lane];
        out[j] = s;
    }
}

// Per signal b (one block each) of `per` entries: sq[b] = sum a^2 and, when c is given,
// dsq[b] = sum (a - c)^2, accumulated in f64: the solvers' stop tests.
template <class T>
__device__ void norms(const T* __restrict__ a, const T* __restrict__ c, i64 per, double* sq, double* dsq) {
    __shared__ double red[32];
    const i64 b = blockIdx.x;
    double s = 0, d = 0;
    for (i64 i = threadIdx.x; i < per; i += blockDim.x) {
        const double v = (double)a[b * per + i];
        s += v * v;
        if (c != nullptr) {
            const double u = v - (double)c[b * per + i];
            d += u * u;
        }
    }
    const double ts = block_sum(s, red);
    const double td = block_sum(d, red);
    if (threadIdx.x == 0) {
        sq[b] = ts;
        if (c != nullptr) dsq[b] = td;
    }
}

// FISTA's step for signals whose solver runs, with g = Phi^T (y - Phi w):
// x_new = soft(w + step g, step lambda),
// w_new = x_new + coef (x_new - x), with coef = (t - 1) / t_next; stopped signals keep x and w.
template <class T>
__device__ void fista(const T* __restrict__ w, const T* __restrict__ g, const T* __restrict__ x, T step,
                      T lambda, T coef, const int* __restrict__ active, i64 per, T* __restrict__ x_new,
                      T* __restrict__ w_new, i64 n) {
    FOR_EACH(i, n) {
        if (active[i / per]) {
            const T xn = soft1(w[i] + step * g[i], step * lambda);
            x_new[i] = xn;
            w_new[i] = xn + coef * (xn - x[i]);
        } else {
            x_new[i] = x[i];
            w_new[i] = w[i];
        }
    }
}

// AMP's estimate for running signals: x_new = soft(x + g, theta[b]); stopped ones keep x.
template <class T>
__device__ void amp_step(const T* __restrict__ x, const T* __restrict__ g, const T* __restrict__ theta,
                         const int* __restrict__ active, i64 per, T* __restrict__ x_new, i64 n) {
    FOR_EACH(i, n) {
        const i64 b = i / per;
        x_new[i] = active[b] ? soft1(x[i] + g[i], theta[b]) : x[i];
    }
}

// dst = src for running signals (the residual or state a stopped signal keeps).
template <class T>
__device__ void keep_running(const T* __restrict__ src, T* __restrict__ dst, const int* __restrict__ active,
                             i64 per, i64 n) {
    FOR_EACH(i, n) if (active[i / per]) dst[i] = src[i];
}

// The IHT step of `iht_step`, its operands staged through shared memory by cp.async (sm_80+):
// each thread copies 16 bytes of x and of g per tile straight into shared memory, the next
// tile's copies in flight while the current one is computed. A thread reads only the chunk it
// copied, so a wait on its own copy groups suffices and no block barrier is needed.
template <class T>
__device__ void iht_step_async(const T* __restrict__ x, const T* __restrict__ g, T mu, const T* __restrict__ mus,
                               T* __restrict__ z, T* __restrict__ zabs, const int* __restrict__ active, i64 per,
                               i64 n) {
    constexpr int V = 16 / sizeof(T);
    constexpr int TL = 256 * V;
    __shared__ __align__(16) T sx[2][TL];
    __shared__ __align__(16) T sg[2][TL];
    const i64 ntiles = (n + TL - 1) / TL;
    const int c0 = threadIdx.x * V;
    auto issue = [&](i64 tile, int b) {
        const i64 e0 = tile * TL + c0;
        const i64 left = n - e0;
        if (left >= V) {
            cp_async16(&sx[b][c0], x + e0, 16u);
            cp_async16(&sg[b][c0], g + e0, 16u);
        } else {
            // The ragged end: cp.async reads all 16 bytes whatever its source size, so the
            // last partial chunk is loaded element by element (read back by this thread only).
            for (int v = 0; v < V && v < left; v++) {
                sx[b][c0 + v] = x[e0 + v];
                sg[b][c0 + v] = g[e0 + v];
            }
        }
    };
    i64 t = blockIdx.x;
    int b = 0;
    if (t < ntiles) issue(t, 0);
    cp_async_commit();
    for (; t < ntiles; t += gridDim.x) {
        const i64 tn = t + gridDim.x;
        if (tn < ntiles) issue(tn, b ^ 1);
        cp_async_commit();
        cp_async_wait<1>();
#pragma unroll
        for (int v = 0; v < V; v++) {
            const i64 e = t * TL + c0 + v;
            if (e < n) {
                const T xv = sx[b][c0 + v];
                const T m = mus != nullptr ? mus[e / per] : mu;
                const T zv = (active == nullptr || active[e / per]) ? xv + m * sg[b][c0 + v] : xv;
                z[e] = zv;
                zabs[e] = absv(zv);
            }
        }
        b ^= 1;
    }
    cp_async_wait<0>();
}

// correlate (Phi^T r, one signal) with Phi's rows staged by the TMA's bulk copies (sm_90): a
// block owns TMA_CW columns, one thread each; one thread issues a bulk copy per row of a stage
// of TMA_ROWS rows into shared memory, signalled through an mbarrier, two stages in flight.
// Needs n * sizeof(T) to be a multiple of 16 (the host checks). Rows are summed in order.
#define TMA_CW 256
#define TMA_ROWS 8
template <class T>
__device__ void correlate_tma(const T* __restrict__ phi, const T* __restrict__ r, T* __restrict__ out, i64 m,
                              i64 n) {
#if __CUDA_ARCH__ >= 900
    __shared__ __align__(128) T stage[2][TMA_ROWS][TMA_CW];
    __shared__ __align__(8) u64 bar[2];
    const i64 j0 = (i64)blockIdx.x * TMA_CW;
    const int cols = (int)(n - j0 < TMA_CW ? n - j0 : TMA_CW);
    const u32 width = (u32)(cols * sizeof(T));
    const i64 nchunks = (m + TMA_ROWS - 1) / TMA_ROWS;
    if (threadIdx.x == 0) {
        mbar_init(&bar[0], 1);
        mbar_init(&bar[1], 1);
        fence_mbar_init();
    }
    __syncthreads();
    auto issue = [&](i64 c) {
        const int s = (int)(c & 1);
        const i64 r0 = c * TMA_ROWS;
        const int rows = (int)(m - r0 < TMA_ROWS ? m - r0 : TMA_ROWS);
        mbar_arrive_expect_tx(&bar[s], (u32)rows * width);
        for (int q = 0; q < rows; q++) bulk_copy_g2s(&stage[s][q][0], phi + (r0 + q) * n + j0, width, &bar[s]);
    };
    if (threadIdx.x == 0) {
        if (nchunks > 0) issue(0);
        if (nchunks > 1) issue(1);
    }
    const int t = threadIdx.x;
    T acc = 0;
    for (i64 c = 0; c < nchunks; c++) {
        const int s = (int)(c & 1);
        while (!mbar_try_wait(&bar[s], (u32)((c >> 1) & 1))) {
        }
        const i64 r0 = c * TMA_ROWS;
        const int rows = (int)(m - r0 < TMA_ROWS ? m - r0 : TMA_ROWS);
        if (t < cols)
            for (int q = 0; q < rows; q++) acc += stage[s][q][t] * r[r0 + q];
        __syncthreads();
        if (threadIdx.x == 0 && c + 2 < nchunks) {
            fence_proxy_async();
            issue(c + 2);
        }
    }
    if (t < cols) out[j0 + t] = acc;
#else
    __trap();
#endif
}

// Least squares on each running signal's support (one block per signal): the normal
// equations gathered from the Gram matrix Phi^T Phi (n x n) and the correlation c = Phi^T y
// (n per signal), solved by Cholesky in f64 with the CPU's ridge of 1e-12 of the mean
// diagonal, in shared memory (smax^2 + smax doubles), or, for supports too large for it, in
// `scratch` (the same per signal, in global memory); the signal's n entries of x are zeroed
// and the coefficients scattered to the support. idx holds smax entries per signal, the
// support first, then -1. Stopped signals are left alone.
template <class T>
__device__ void lsq(const T* __restrict__ gram, const T* __restrict__ cy, const int* __restrict__ idx, i64 smax,
                    i64 n, const int* __restrict__ active, T* __restrict__ x, double* scratch) {
    extern __shared__ double lsq_smem[];
    __shared__ int s_cnt;
    __shared__ double s_ridge;
    const i64 b = blockIdx.x;
    if (active != nullptr && !active[b]) return;  // the whole block
    const int* id = idx + b * smax;
    const int tid = threadIdx.x, bd = blockDim.x;
    if (tid == 0) {
        int c = 0;
        while (c < smax && id[c] >= 0) c++;
        s_cnt = c;
    }
    for (i64 j = tid; j < n; j += bd) x[b * n + j] = (T)0;
    __syncthreads();
    const int s = s_cnt;
    double* G = scratch != nullptr ? scratch + b * (smax * smax + smax) : lsq_smem;
    double* w = G + (i64)s * s;
    for (int e = tid; e < s * s; e += bd) G[e] = (double)gram[(i64)id[e / s] * n + id[e % s]];
    for (int a = tid; a < s; a += bd) w[a] = (double)cy[b * n + id[a]];
    __syncthreads();
    if (tid == 0) {
        double tr = 0;
        for (int a = 0; a < s; a++) tr += G[a * s + a];
        s_ridge = 1e-12 * (tr > 2.2250738585072014e-308 ? tr : 2.2250738585072014e-308) / (double)(s > 0 ? s : 1);
    }
    __syncthreads();
    for (int a = tid; a < s; a += bd) G[a * s + a] += s_ridge;
    __syncthreads();
    // Right-looking Cholesky, the lower factor in place.
    for (int j = 0; j < s; j++) {
        if (tid == 0) {
            const double d = G[j * s + j];
            G[j * s + j] = sqrt(d > 2.2250738585072014e-308 ? d : 2.2250738585072014e-308);
        }
        __syncthreads();
        const double d = G[j * s + j];
        for (int i = j + 1 + tid; i < s; i += bd) G[i * s + j] /= d;
        __syncthreads();
        const int t = s - j - 1;
        for (int e = tid; e < t * t; e += bd) {
            const int i = j + 1 + e / t, c = j + 1 + e % t;
            if (c <= i) G[i * s + c] -= G[i * s + j] * G[c * s + j];
        }
        __syncthreads();
    }
    // L v = w, then L^T z = v, column by column.
    for (int i = 0; i < s; i++) {
        if (tid == 0) w[i] /= G[i * s + i];
        __syncthreads();
        for (int p = i + 1 + tid; p < s; p += bd) w[p] -= G[p * s + i] * w[i];
        __syncthreads();
    }
    for (int i = s - 1; i >= 0; i--) {
        if (tid == 0) w[i] /= G[i * s + i];
        __syncthreads();
        for (int p = tid; p < i; p += bd) w[p] -= G[i * s + p] * w[i];
        __syncthreads();
    }
    for (int a = tid; a < s; a += bd) x[b * n + id[a]] = (T)w[a];
}

__device__ __forceinline__ double warp_sum_d(double v) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// OMP's least squares on a support grown by one column: one warp per running signal stores
// the column chosen (pick[b]) in support slot s = count - 1, appends row s to the Cholesky
// factor L of the support's normal equations (k x k per signal, f64, row-major) and entry s to
// v = L^-1 Phi_S^T y, solves L^T z = v (z: k per signal) and rewrites the signal's x (zero off
// the support). The CPU's GrowingCholesky does the same arithmetic: O(s^2) per step instead of
// a fresh O(s^3) factorisation. Stopped signals are left alone.
template <class T>
__device__ void omp_chol(const T* __restrict__ gram, const T* __restrict__ cy, const int* __restrict__ pick,
                         int* __restrict__ support, i64 k, i64 count, i64 n, i64 nsig, const int* __restrict__ active,
                         double* __restrict__ lf, double* __restrict__ vf, double* __restrict__ zf, T* __restrict__ x) {
    const i64 b = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (b >= nsig || !active[b]) return;  // the whole warp
    int* S = support + b * k;
    const int s = (int)count - 1;
    const i64 j = pick[b];
    double* L = lf + b * k * k;
    double* w = L + (i64)s * k;
    double* v = vf + b * k;
    double* z = zf + b * k;
    if (lane == 0) S[s] = (int)j;
    for (int p = lane; p < s; p += 32) w[p] = (double)gram[(i64)S[p] * n + j];
    __syncwarp();
    // L[:s, :s] w = Gram[S, j], row by row.
    for (int p = 0; p < s; p++) {
        const double* lp = L + (i64)p * k;
        double dot = 0;
        for (int q = lane; q < p; q += 32) dot += lp[q] * w[q];
        const double wp = (w[p] - warp_sum_d(dot)) / lp[p];
        __syncwarp();
        if (lane == 0) w[p] = wp;
        __syncwarp();
    }
    double ww = 0, wv = 0;
    for (int q = lane; q < s; q += 32) {
        ww += w[q] * w[q];
        wv += w[q] * v[q];
    }
    ww = warp_sum_d(ww);
    wv = warp_sum_d(wv);
    const double d = (double)gram[j * n + j] * (1.0 + 1e-12) - ww;
    const double l = sqrt(d > 2.2250738585072014e-308 ? d : 2.2250738585072014e-308);
    const double vs = ((double)cy[b * n + j] - wv) / l;
    for (int q = lane; q < s; q += 32) z[q] = v[q];
    __syncwarp();
    if (lane == 0) {
        w[s] = l;
        v[s] = vs;
        z[s] = vs;
    }
    __syncwarp();
    // L^T z = v, from the last row up.
    for (int p = s; p >= 0; p--) {
        const double* lp = L + (i64)p * k;
        const double zp = z[p] / lp[p];
        __syncwarp();
        if (lane == 0) z[p] = zp;
        for (int q = lane; q < p; q += 32) z[q] -= lp[q] * zp;
        __syncwarp();
    }
    for (i64 e = lane; e < n; e += 32) x[b * n + e] = (T)0;
    __syncwarp();
    for (int q = lane; q <= s; q += 32) x[b * n + S[q]] = (T)z[q];
}

// Normalised IHT's line-search direction: g on x's support (out = x != 0 ? g : 0).
template <class T>
__device__ void mask_support(const T* __restrict__ g, const T* __restrict__ x, T* __restrict__ out, i64 n) {
    FOR_EACH(i, n) out[i] = x[i] != (T)0 ? g[i] : (T)0;
}

// |src| as top-k keys.
template <class T>
__device__ void abs_keys(const T* __restrict__ src, T* __restrict__ keys, i64 n) {
    FOR_EACH(i, n) keys[i] = absv(src[i]);
}

// CoSaMP's and subspace pursuit's merged support, one thread per signal: the sorted union of
// a (ka entries per signal, -1 ends it early) and b (kb entries, ascending), -1 padded to smax.
__device__ void union_sorted(const int* __restrict__ a, i64 ka, const int* __restrict__ b, i64 kb, i64 nsig,
                             int* __restrict__ out, i64 smax) {
    FOR_EACH(sg, nsig) {
        const int* pa = a + sg * ka;
        const int* pb = b + sg * kb;
        int* o = out + sg * smax;
        i64 i = 0, j = 0, c = 0;
        while (true) {
            const int va = i < ka && pa[i] >= 0 ? pa[i] : 0x7fffffff;
            const int vb = j < kb && pb[j] >= 0 ? pb[j] : 0x7fffffff;
            if (va == 0x7fffffff && vb == 0x7fffffff) break;
            const int v = va < vb ? va : vb;
            if (va == v) i++;
            if (vb == v) j++;
            if (c < smax) o[c++] = v;
        }
        for (; c < smax; c++) o[c] = -1;
    }
}

// One block per signal: running signals get out = v restricted to the k positions idx (zero
// elsewhere); stopped ones get out = keep.
template <class T>
__device__ void restrict_to(const T* __restrict__ v, const int* __restrict__ idx, i64 k, i64 n,
                            const int* __restrict__ active, const T* __restrict__ keep, T* __restrict__ out) {
    const i64 b = blockIdx.x;
    if (!active[b]) {
        for (i64 j = threadIdx.x; j < n; j += blockDim.x) out[b * n + j] = keep[b * n + j];
        return;
    }
    for (i64 j = threadIdx.x; j < n; j += blockDim.x) out[b * n + j] = (T)0;
    __syncthreads();
    for (i64 a = threadIdx.x; a < k; a += blockDim.x) {
        const int j = idx[b * k + a];
        if (j >= 0) out[b * n + j] = v[b * n + j];
    }
}

// OMP: the columns already chosen (support, k slots per signal, the first `count` used) get
// key -1 in the |g| keys, below every magnitude, so no column is chosen twice.
template <class T>
__device__ void omp_mask(const int* __restrict__ support, i64 k, i64 count, i64 n, i64 nsig, T* __restrict__ keys) {
    FOR_EACH(e, nsig * count) {
        const i64 b = e / count, a = e % count;
        const int j = support[b * k + a];
        if (j >= 0) keys[b * n + j] = (T)-1;
    }
}

#define CS_ENTRIES(T, NAME)                                                                                    \
    extern "C" __global__ void __launch_bounds__(256) cs_hard_##NAME(const T* x, T t, T* out, i64 n) {         \
        hard<T>(x, t, out, n);                                                                                 \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256) cs_soft_##NAME(const T* x, T l, T* out, i64 n) {         \
        soft<T>(x, l, out, n);                                                                                 \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256)                                                          \
        cs_iht_step_##NAME(const T* x, const T* g, T mu, const T* mus, T* z, T* zabs, const int* active,      \
                           i64 per, i64 n) {                                                                   \
        iht_step<T>(x, g, mu, mus, z, zabs, active, per, n);                                                   \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256)                                                          \
        cs_scatter_##NAME(const T* z, const int* idx, i64 k, i64 per, i64 nsig, T* out) {                      \
        scatter<T>(z, idx, k, per, nsig, out);                                                                 \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256) cs_amp_residual_##NAME(                                  \
        const T* y, const T* phix, const T* x, const T* zprev, T* z, i64 m, i64 n) {                           \
        amp_residual<T>(y, phix, x, zprev, z, m, n);                                                           \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256)                                                          \
        cs_sv_shrink_##NAME(const T* sigma, T tau, T* out, i64 n, T* nuclear) {                                \
        sv_shrink<T>(sigma, tau, out, n, nuclear);                                                             \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256) cs_tv_grad_##NAME(const T* x, T* d, i64 per, i64 n) {    \
        tv_grad<T>(x, d, per, n);                                                                              \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256)                                                          \
        cs_correlate_##NAME(const T* phi, const T* r, T* out, i64 m, i64 n) {                                  \
        correlate<T>(phi, r, out, m, n);                                                                       \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256)                                                          \
        cs_norms_##NAME(const T* a, const T* c, i64 per, double* sq, double* dsq) {                            \
        norms<T>(a, c, per, sq, dsq);                                                                          \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256)                                                          \
        cs_fista_##NAME(const T* w, const T* g, const T* x, T step, T lambda, T coef, const int* active,        \
                        i64 per, T* x_new, T* w_new, i64 n) {                                                  \
        fista<T>(w, g, x, step, lambda, coef, active, per, x_new, w_new, n);                                   \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256) cs_amp_step_##NAME(                                      \
        const T* x, const T* g, const T* theta, const int* active, i64 per, T* x_new, i64 n) {                 \
        amp_step<T>(x, g, theta, active, per, x_new, n);                                                       \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256) cs_iht_step_async_##NAME(                                \
        const T* x, const T* g, T mu, const T* mus, T* z, T* zabs, const int* active, i64 per, i64 n) {        \
        iht_step_async<T>(x, g, mu, mus, z, zabs, active, per, n);                                             \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256)                                                          \
        cs_correlate_tma_##NAME(const T* phi, const T* r, T* out, i64 m, i64 n) {                              \
        correlate_tma<T>(phi, r, out, m, n);                                                                   \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256) cs_lsq_##NAME(                                           \
        const T* gram, const T* cy, const int* idx, i64 smax, i64 n, const int* active, T* x, double* scratch) { \
        lsq<T>(gram, cy, idx, smax, n, active, x, scratch);                                                    \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256)                                                          \
        cs_mask_support_##NAME(const T* g, const T* x, T* out, i64 n) {                                        \
        mask_support<T>(g, x, out, n);                                                                         \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256) cs_abs_keys_##NAME(const T* src, T* keys, i64 n) {       \
        abs_keys<T>(src, keys, n);                                                                             \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256) cs_restrict_##NAME(                                      \
        const T* v, const int* idx, i64 k, i64 n, const int* active, const T* keep, T* out) {                  \
        restrict_to<T>(v, idx, k, n, active, keep, out);                                                       \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256)                                                          \
        cs_omp_mask_##NAME(const int* support, i64 k, i64 count, i64 n, i64 nsig, T* keys) {                   \
        omp_mask<T>(support, k, count, n, nsig, keys);                                                         \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256) cs_omp_chol_##NAME(                                      \
        const T* gram, const T* cy, const int* pick, int* support, i64 k, i64 count, i64 n, i64 nsig,          \
        const int* active, double* lf, double* vf, double* zf, T* x) {                                         \
        omp_chol<T>(gram, cy, pick, support, k, count, n, nsig, active, lf, vf, zf, x);                        \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256)                                                          \
        cs_keep_running_##NAME(const T* src, T* dst, const int* active, i64 per, i64 n) {                      \
        keep_running<T>(src, dst, active, per, n);                                                             \
    }

CS_ENTRIES(float, f32)
CS_ENTRIES(double, f64)

// correlate with Phi stored as FP8 e4m3 (m x n bytes, row-major) and a per-row f32 scale
// (sm_89+): out[j] = sum_i scale[i] dec(q[i][j]) r[i]. Each lane owns two adjacent columns and
// converts their bytes with one cvt.rn.f16x2.e4m3x2; the block's 8 warps split the rows and
// their partial sums meet in shared memory in a fixed order.
extern "C" __global__ void __launch_bounds__(256)
    cs_correlate_fp8(const u8* __restrict__ q, const float* __restrict__ scale, const float* __restrict__ r,
                     float* __restrict__ out, i64 m, i64 n) {
#if __CUDA_ARCH__ >= 890
    __shared__ float part[8][65];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const i64 j = ((i64)blockIdx.x * 32 + lane) * 2;
    float a0 = 0.f, a1 = 0.f;
    if (j < n) {
        for (i64 i = w; i < m; i += 8) {
            const u8* row = q + i * n + j;
            const u16 v = (n & 1) == 0 ? *(const u16*)row : (u16)(row[0] | (j + 1 < n ? (u32)row[1] << 8 : 0u));
            float lo, hi;
            e4m3x2_to_f32(v, &lo, &hi);
            const float f = scale[i] * r[i];
            a0 += lo * f;
            a1 += hi * f;
        }
    }
    part[w][2 * lane] = a0;
    part[w][2 * lane + 1] = a1;
    __syncthreads();
    if (w == 0) {
        for (int h = 0; h < 2; h++) {
            if (j + h < n) {
                float s = 0.f;
#pragma unroll
                for (int p = 0; p < 8; p++) s += part[p][2 * lane + h];
                out[j + h] = s;
            }
        }
    }
#else
    __trap();
#endif
}

extern "C" __global__ void __launch_bounds__(256)
    cs_union(const int* a, i64 ka, const int* b, i64 kb, i64 nsig, int* out, i64 smax) {
    union_sorted(a, ka, b, kb, nsig, out, smax);
}

// SVT's step on the observed entries (COO, f64): d = M_ij - X_ij, Y_ij += delta d, and
// *res (zeroed) += the sum of d^2 by block partials and one atomic per block. X and Y are
// column-major m x n.
extern "C" __global__ void __launch_bounds__(256)
    cs_svt_observe(const int* __restrict__ rows, const int* __restrict__ cols, const double* __restrict__ vals,
                   i64 nnz, i64 m, const double* __restrict__ x, double* __restrict__ y, double delta, double* res) {
    __shared__ double red[32];
    double part = 0;
    FOR_EACH(e, nnz) {
        const i64 at = (i64)rows[e] + (i64)cols[e] * m;
        const double d = vals[e] - x[at];
        y[at] += delta * d;
        part += d * d;
    }
    const double t = block_sum(part, red);
    if (threadIdx.x == 0) atomicAdd(res, t);
}
