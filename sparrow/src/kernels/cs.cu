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

// The IHT step z = x + mu g, fused with the key of the top-K hard threshold, |z|. Signals
// whose solver has stopped (active[b] == 0) keep z = x, so their estimate does not move.
template <class T>
__device__ void iht_step(const T* __restrict__ x, const T* __restrict__ g, T mu, T* __restrict__ z,
                         T* __restrict__ zabs, const int* __restrict__ active, i64 per, i64 n) {
    FOR_EACH(i, n) {
        const T v = (active == nullptr || active[i / per]) ? x[i] + mu * g[i] : x[i];
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

#define CS_ENTRIES(T, NAME)                                                                                    \
    extern "C" __global__ void __launch_bounds__(256) cs_hard_##NAME(const T* x, T t, T* out, i64 n) {         \
        hard<T>(x, t, out, n);                                                                                 \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256) cs_soft_##NAME(const T* x, T l, T* out, i64 n) {         \
        soft<T>(x, l, out, n);                                                                                 \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(256)                                                          \
        cs_iht_step_##NAME(const T* x, const T* g, T mu, T* z, T* zabs, const int* active, i64 per, i64 n) {   \
        iht_step<T>(x, g, mu, z, zabs, active, per, n);                                                        \
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
    extern "C" __global__ void __launch_bounds__(256)                                                          \
        cs_keep_running_##NAME(const T* src, T* dst, const int* active, i64 per, i64 n) {                      \
        keep_running<T>(src, dst, active, per, n);                                                             \
    }

CS_ENTRIES(float, f32)
CS_ENTRIES(double, f64)
