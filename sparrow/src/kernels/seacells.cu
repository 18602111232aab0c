// SEACells on the GPU: the exact kNN's distance tiles and the B update's gradient columns.
//
// kNN: squared Euclidean distances in f64 with the CPU's arithmetic (difference, square and
// running sum in dimension order, each rounded on its own, no fused multiply-add), so the
// neighbours, their order and their distances are the CPU's bit for bit; a cell's distance to
// itself is written as -1 so the selection puts it first.
//
// B update: with K = M M and t1 = A A^T, the gradient column c is
//   G[:, c] = K B t1[:, c] - K A^T[:, c] = M (M V[:, c]),  V[:, c] = B t1[:, c] - A^T[:, c],
// so K and K B are never formed: a chunk of columns of V is built (b_rhs, b_asub), multiplied
// by M twice with the SpMM kernels, and reduced to each column's argmin cell and duality-gap
// share (b_pick, b_gap). Every sum runs in a fixed order, so a run repeats bit for bit.
#include "common.cuh"

#define FOR_EACH(i, n) for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (i64)gridDim.x * blockDim.x)

#define KNN_ROWS 8

// dist[(i - r0) * n + j] for rows i in [r0, r0 + rows) and every cell j; xt is the embedding
// transposed (d x n), so a warp's loads of one dimension are contiguous. Each thread keeps
// KNN_ROWS rows' sums so every load of x_j serves all of them; the block's rows sit in shared
// memory. Grid: (ceil(n / 256), ceil(rows / KNN_ROWS)).
extern "C" __global__ void __launch_bounds__(256)
    seacells_knn_dist(const double* __restrict__ xt, i64 n, i64 d, i64 r0, i64 rows, double* __restrict__ dist) {
    extern __shared__ double xi[];  // KNN_ROWS x d
    const i64 j = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    const i64 q0 = (i64)blockIdx.y * KNN_ROWS;
    const int nr = (int)(rows - q0 < KNN_ROWS ? rows - q0 : KNN_ROWS);
    for (i64 e = threadIdx.x; e < (i64)nr * d; e += blockDim.x) {
        const i64 q = e / d, k = e % d;
        xi[e] = xt[k * n + r0 + q0 + q];
    }
    __syncthreads();
    if (j >= n) return;
    double acc[KNN_ROWS];
#pragma unroll
    for (int q = 0; q < KNN_ROWS; q++) acc[q] = 0.0;
    for (i64 k = 0; k < d; k++) {
        const double xj = xt[k * n + j];
#pragma unroll
        for (int q = 0; q < KNN_ROWS; q++) {
            if (q < nr) {
                const double diff = __dsub_rn(xi[q * d + k], xj);
                acc[q] = __dadd_rn(acc[q], __dmul_rn(diff, diff));
            }
        }
    }
#pragma unroll
    for (int q = 0; q < KNN_ROWS; q++) {
        if (q < nr) {
            const i64 i = r0 + q0 + q;
            dist[(q0 + q) * n + j] = i == j ? -1.0 : acc[q];
        }
    }
}

// V[:, c] = B t1[:, c] - A^T[:, c] for the chunk's columns c = c0 + col, col < nc, into v
// (n x ld, row-major; columns nc..ld are zeroed). One thread per entry, so every entry is
// written once: V[i, c] = sum over cell i's B entries (m, w) in ascending m of w t1[m, c],
// then minus A[c, i] (a_sub, one thread per A entry, runs next). B is CSR by cell; t1 is dense
// nm x nm, row-major.
extern "C" __global__ void __launch_bounds__(256)
    seacells_b_rhs(const i64* __restrict__ b_ptr, const int* __restrict__ b_arch, const double* __restrict__ b_w,
                   const double* __restrict__ t1, i64 nm, i64 n, i64 c0, i64 nc, i64 ld, double* __restrict__ v) {
    FOR_EACH(e, n * ld) {
        const i64 i = e / ld, col = e % ld;
        double acc = 0.0;
        if (col < nc) {
            for (i64 q = b_ptr[i]; q < b_ptr[i + 1]; q++)
                acc = __dadd_rn(acc, __dmul_rn(b_w[q], t1[(i64)b_arch[q] * nm + c0 + col]));
        }
        v[e] = acc;
    }
}

// V[i, c] -= A[c, i] for A's entries (CSR by cell: archetype, weight) in the chunk; each
// (cell, archetype) pair is one entry, so no two threads touch one element.
extern "C" __global__ void __launch_bounds__(256)
    seacells_b_asub(const i64* __restrict__ a_ptr, const int* __restrict__ a_arch, const double* __restrict__ a_w,
                    i64 n, i64 c0, i64 nc, i64 ld, double* __restrict__ v) {
    FOR_EACH(i, n) {
        for (i64 q = a_ptr[i]; q < a_ptr[i + 1]; q++) {
            const i64 col = (i64)a_arch[q] - c0;
            if (col >= 0 && col < nc) v[i * ld + col] = __dsub_rn(v[i * ld + col], a_w[q]);
        }
    }
}

// Partial argmins of the chunk's gradient columns (G: n x ld, row-major): block (col, part)
// scans cells [part * span, (part + 1) * span) of column col and writes its smallest value
// and the lowest cell holding it to pv/pi[col * parts + part].
extern "C" __global__ void __launch_bounds__(256)
    seacells_b_pick(const double* __restrict__ g, i64 n, i64 ld, i64 span, double* __restrict__ pv,
                    i64* __restrict__ pi) {
    __shared__ double sv[256];
    __shared__ i64 si[256];
    const int col = blockIdx.x, part = blockIdx.y, t = threadIdx.x;
    const i64 lo = (i64)part * span, hi = lo + span < n ? lo + span : n;
    double best = __longlong_as_double(0x7ff0000000000000ll);  // +inf
    i64 bi = n;
    for (i64 i = lo + t; i < hi; i += blockDim.x) {
        const double x = g[i * ld + col];
        if (x < best) {
            best = x;
            bi = i;
        }
    }
    sv[t] = best;
    si[t] = bi;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) {
            const double ov = sv[t + s];
            const i64 oi = si[t + s];
            if (ov < sv[t] || (ov == sv[t] && oi < si[t])) {
                sv[t] = ov;
                si[t] = oi;
            }
        }
        __syncthreads();
    }
    if (t == 0) {
        pv[(i64)col * gridDim.y + part] = sv[0];
        pi[(i64)col * gridDim.y + part] = si[0];
    }
}

// One thread per chunk column c = c0 + col: the partial argmins reduced in part order (ties to
// the lower cell), pick[c] that cell, and gap[c] = sum_i B[i, c] G[i, c] - the minimum over
// B's entries of column c (CSR by archetype) in order.
extern "C" __global__ void __launch_bounds__(256)
    seacells_b_gap(const double* __restrict__ g, i64 ld, i64 c0, i64 nc, i64 parts, const double* __restrict__ pv,
                   const i64* __restrict__ pi, const i64* __restrict__ bc_ptr, const int* __restrict__ bc_cell,
                   const double* __restrict__ bc_w, int* __restrict__ pick, double* __restrict__ gap) {
    FOR_EACH(col, nc) {
        double v = pv[col * parts];
        i64 idx = pi[col * parts];
        for (i64 p = 1; p < parts; p++) {
            const double ov = pv[col * parts + p];
            const i64 oi = pi[col * parts + p];
            if (ov < v || (ov == v && oi < idx)) {
                v = ov;
                idx = oi;
            }
        }
        const i64 c = c0 + col;
        double dot = 0.0;
        for (i64 q = bc_ptr[c]; q < bc_ptr[c + 1]; q++)
            dot = __dadd_rn(dot, __dmul_rn(bc_w[q], g[(i64)bc_cell[q] * ld + col]));
        pick[c] = (int)idx;
        gap[c] = dot - v;
    }
}

// The (value, index) pair that is smaller, ties to the lower index.
__device__ __forceinline__ void lower_pair(double& v, int& i, double ov, int oi) {
    if (ov < v || (ov == v && oi < i)) {
        v = ov;
        i = oi;
    }
}

// The A update: one block per cell, `steps` Frank-Wolfe steps over the nm archetypes with the
// CPU's arithmetic (every product, sum and quotient rounded on its own, atoms kept in the
// order they were first chosen), so each cell's atoms are the CPU's bit for bit.
//   w = t1 a_prev (prev atoms of the cell, in order) or w0 when prev_ptr is null;
//   step t: c = argmin_c (w[c] - kb[c]) (ties to the lowest c), gamma = 2 / (t + 2), atoms
//   scaled by 1 - gamma and c's raised by gamma (or appended), w = (1 - gamma) w + gamma t1[c];
//   atoms under `prune` are dropped with their rank-1 terms and the rest renormalised.
// t1 is dense nm x nm (row-major); kb and prev are CSR by cell. Out: `cap` slots per cell of
// (archetype, weight), -1 after the last atom. Shared memory: 2 nm doubles plus cap atoms.
extern "C" __global__ void __launch_bounds__(256)
    seacells_a_update(const double* __restrict__ t1, i64 nm, const i64* __restrict__ kb_ptr,
                      const int* __restrict__ kb_col, const double* __restrict__ kb_val,
                      const i64* __restrict__ prev_ptr, const int* __restrict__ prev_col,
                      const double* __restrict__ prev_val, const double* __restrict__ w0, i64 steps, double prune,
                      i64 cap, int* __restrict__ out_c, double* __restrict__ out_w) {
    extern __shared__ double a_smem[];
    double* w = a_smem;
    double* kb = w + nm;
    double* aw = kb + nm;           // cap atom weights
    int* ac = (int*)(aw + cap);     // cap atom archetypes
    __shared__ double rv[32];
    __shared__ int ri[32];
    __shared__ int s_na, s_prune, s_pick;
    __shared__ double s_sum;
    const i64 cell = blockIdx.x;
    const int t = threadIdx.x, nt = blockDim.x, lane = t & 31, wp = t >> 5;
    for (i64 c = t; c < nm; c += nt) {
        double x = 0.0;
        if (prev_ptr != nullptr) {
            for (i64 q = prev_ptr[cell]; q < prev_ptr[cell + 1]; q++)
                x = __dadd_rn(x, __dmul_rn(prev_val[q], t1[(i64)prev_col[q] * nm + c]));
        } else {
            x = w0[c];
        }
        w[c] = x;
        kb[c] = 0.0;
    }
    if (t == 0) s_na = 0;
    __syncthreads();
    for (i64 q = kb_ptr[cell] + t; q < kb_ptr[cell + 1]; q += nt) kb[kb_col[q]] = kb_val[q];
    __syncthreads();
    for (i64 step = 0; step < steps; step++) {
        double bv = __longlong_as_double(0x7ff0000000000000ll);
        int bi = 0x7fffffff;
        for (i64 c = t; c < nm; c += nt) lower_pair(bv, bi, __dsub_rn(w[c], kb[c]), (int)c);
#pragma unroll
        for (int off = 16; off > 0; off >>= 1)
            lower_pair(bv, bi, __shfl_xor_sync(0xffffffffu, bv, off), __shfl_xor_sync(0xffffffffu, bi, off));
        if (lane == 0) {
            rv[wp] = bv;
            ri[wp] = bi;
        }
        __syncthreads();
        const double gamma = 2.0 / ((double)step + 2.0);
        const double keep = 1.0 - gamma;
        if (t == 0) {
            double v = rv[0];
            int c = ri[0];
            for (int j = 1; j < (nt >> 5); j++) lower_pair(v, c, rv[j], ri[j]);
            // The CPU starts from archetype 0 at +inf: with every value +inf it takes 0.
            if (c == 0x7fffffff) c = 0;
            s_pick = c;
            int na = s_na, found = -1;
            for (int j = 0; j < na; j++) {
                aw[j] = __dmul_rn(aw[j], keep);
                if (ac[j] == c) found = j;
            }
            if (found >= 0) {
                aw[found] = __dadd_rn(aw[found], gamma);
            } else {
                ac[na] = c;
                aw[na] = gamma;
                na++;
            }
            s_na = na;
            int pr = 0;
            for (int j = 0; j < na; j++) pr |= aw[j] < prune;
            s_prune = pr;
        }
        __syncthreads();
        const int c = s_pick;
        for (i64 e = t; e < nm; e += nt)
            w[e] = __dadd_rn(__dmul_rn(keep, w[e]), __dmul_rn(gamma, t1[(i64)c * nm + e]));
        if (s_prune) {
            const int na = s_na;
            // Each thread's entries of w lose the light atoms' terms in atom order.
            for (i64 e = t; e < nm; e += nt) {
                double x = w[e];
                for (int j = 0; j < na; j++)
                    if (aw[j] < prune) x = __dsub_rn(x, __dmul_rn(aw[j], t1[(i64)ac[j] * nm + e]));
                w[e] = x;
            }
            __syncthreads();
            if (t == 0) {
                int m = 0;
                for (int j = 0; j < na; j++) {
                    if (aw[j] >= prune) {
                        ac[m] = ac[j];
                        aw[m] = aw[j];
                        m++;
                    }
                }
                double s = 0.0;
                for (int j = 0; j < m; j++) s = __dadd_rn(s, aw[j]);
                for (int j = 0; j < m; j++) aw[j] = __ddiv_rn(aw[j], s);
                s_na = m;
                s_sum = s;
            }
            __syncthreads();
            const double s = s_sum;
            for (i64 e = t; e < nm; e += nt) w[e] = __ddiv_rn(w[e], s);
        }
        __syncthreads();
    }
    const int na = s_na;
    for (int j = t; j < cap; j += nt) {
        out_c[cell * cap + j] = j < na ? ac[j] : -1;
        out_w[cell * cap + j] = j < na ? aw[j] : 0.0;
    }
}
