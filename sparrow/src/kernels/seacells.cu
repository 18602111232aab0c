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

// ---- The fused B update (by cells) ----
//
// G[i, c] = sum over K B row i's archetypes m (ascending) of KB[i, m] t1[m, c], then plus
// (-K A^T)[i, c]: each row of G is summed in registers and reduced at once to every column's
// argmin and to the duality-gap terms, so G is never stored. The arithmetic is the CPU's
// (bounds.rs, pick_bounded): products and sums rounded one by one in the same order; zero entries
// of t1 are skipped, which adds only +0 terms to non-negative sums.
//
// Thread t of a 256-thread block owns columns [t W, t W + W) in registers. t1 is CSR by row
// with a segment table seg[m * 257 + t] = first entry of row m at a column >= t W, so a thread
// finds its run of any row with two loads. Block b takes the rows [b span, (b + 1) span) of
// K B (laid out so neighbouring rows read the same rows of t1); its per-column smallest value
// and lowest cell go to part_v/part_i[b * nm + c]. Every B entry (cell, c) gets its term
// B[cell, c] G[cell, c] written at its place `pos` in B's column-major order.
template <int W>
__device__ __forceinline__ void b_grad(const i64* __restrict__ kb_ptr, const int* __restrict__ kb_cell,
                                       const int* __restrict__ kb_col, const double* __restrict__ kb_val, i64 rows,
                                       i64 span, const i64* __restrict__ nk_ptr, const int* __restrict__ nk_col,
                                       const double* __restrict__ nk_val, const int* __restrict__ t_seg,
                                       const int* __restrict__ t_col, const double* __restrict__ t_val, i64 nm,
                                       const i64* __restrict__ b_ptr, const int* __restrict__ b_col,
                                       const int* __restrict__ b_pos, const double* __restrict__ b_w,
                                       double* __restrict__ part_v, int* __restrict__ part_i,
                                       double* __restrict__ prod) {
    const int t = threadIdx.x;
    const int c0 = t * W;
    double best_v[W];
    int best_i[W];
#pragma unroll
    for (int j = 0; j < W; j++) {
        best_v[j] = __longlong_as_double(0x7ff0000000000000ll);  // +inf
        best_i[j] = 0x7fffffff;
    }
    const i64 r0 = (i64)blockIdx.x * span;
    const i64 r1 = r0 + span < rows ? r0 + span : rows;
    for (i64 r = r0; r < r1; r++) {
        const int cell = kb_cell[r];
        double acc[W];
#pragma unroll
        for (int j = 0; j < W; j++) acc[j] = 0.0;
        // Four K B entries at a time: their segment bounds are loaded together, then summed
        // in order.
        const i64 qe = kb_ptr[r + 1];
        for (i64 q = kb_ptr[r]; q < qe; q += 4) {
            int s[4], e[4];
            double v[4];
#pragma unroll
            for (int u = 0; u < 4; u++) {
                s[u] = e[u] = 0;
                v[u] = 0.0;
                if (q + u < qe) {
                    const i64 m = kb_col[q + u];
                    v[u] = kb_val[q + u];
                    s[u] = t_seg[m * 257 + t];
                    e[u] = t_seg[m * 257 + t + 1];
                }
            }
#pragma unroll
            for (int u = 0; u < 4; u++) {
                for (int p = s[u]; p < e[u]; p++) {
                    const int col = t_col[p] - c0;
                    const double x = __dmul_rn(v[u], t_val[p]);
#pragma unroll
                    for (int j = 0; j < W; j++)
                        if (col == j) acc[j] = __dadd_rn(acc[j], x);
                }
            }
        }
        // -K A^T: this thread's run of the cell's row, found by bisection.
        for (i64 p = lower_bound(nk_col, nk_ptr[cell], nk_ptr[cell + 1], (int)c0); p < nk_ptr[cell + 1]; p++) {
            const int col = nk_col[p] - c0;
            if (col >= W) break;
            const double x = nk_val[p];
#pragma unroll
            for (int j = 0; j < W; j++)
                if (col == j) acc[j] = __dadd_rn(acc[j], x);
        }
#pragma unroll
        for (int j = 0; j < W; j++) {
            if (acc[j] < best_v[j] || (acc[j] == best_v[j] && cell < best_i[j])) {
                best_v[j] = acc[j];
                best_i[j] = cell;
            }
        }
        for (i64 q = b_ptr[cell]; q < b_ptr[cell + 1]; q++) {
            const int col = b_col[q] - c0;
#pragma unroll
            for (int j = 0; j < W; j++)
                if (col == j) prod[b_pos[q]] = __dmul_rn(b_w[q], acc[j]);
        }
    }
#pragma unroll
    for (int j = 0; j < W; j++) {
        if (c0 + j < nm) {
            part_v[(i64)blockIdx.x * nm + c0 + j] = best_v[j];
            part_i[(i64)blockIdx.x * nm + c0 + j] = best_i[j];
        }
    }
}

#define B_GRAD(W)                                                                                                  \
    extern "C" __global__ void __launch_bounds__(256) seacells_b_grad_w##W(                                        \
        const i64* __restrict__ kb_ptr, const int* __restrict__ kb_cell, const int* __restrict__ kb_col,           \
        const double* __restrict__ kb_val, i64 rows, i64 span, const i64* __restrict__ nk_ptr,                     \
        const int* __restrict__ nk_col, const double* __restrict__ nk_val, const int* __restrict__ t_seg,          \
        const int* __restrict__ t_col, const double* __restrict__ t_val, i64 nm, const i64* __restrict__ b_ptr,    \
        const int* __restrict__ b_col, const int* __restrict__ b_pos, const double* __restrict__ b_w,              \
        double* __restrict__ part_v, int* __restrict__ part_i, double* __restrict__ prod) {                        \
        b_grad<W>(kb_ptr, kb_cell, kb_col, kb_val, rows, span, nk_ptr, nk_col, nk_val, t_seg, t_col, t_val, nm,    \
                  b_ptr, b_col, b_pos, b_w, part_v, part_i, prod);                                                 \
    }
B_GRAD(1)
B_GRAD(2)
B_GRAD(4)
B_GRAD(8)
B_GRAD(16)
B_GRAD(32)

// One thread per column c: the blocks' partial argmins reduced in block order (ties to the
// lower cell; cell 0 when every value is +inf, as the CPU), and the gap share: the column's
// terms in B's order, summed, minus the minimum.
extern "C" __global__ void __launch_bounds__(256)
    seacells_b_final(const double* __restrict__ part_v, const int* __restrict__ part_i, i64 parts, i64 nm,
                     const i64* __restrict__ b_at, const double* __restrict__ prod, int* __restrict__ pick,
                     double* __restrict__ share) {
    FOR_EACH(c, nm) {
        double v = __longlong_as_double(0x7ff0000000000000ll);
        int idx = 0x7fffffff;
        for (i64 p = 0; p < parts; p++) lower_pair(v, idx, part_v[p * nm + c], part_i[p * nm + c]);
        double dot = 0.0;
        for (i64 q = b_at[c]; q < b_at[c + 1]; q++) dot = __dadd_rn(dot, prod[q]);
        pick[c] = idx == 0x7fffffff ? 0 : idx;
        share[c] = __dsub_rn(dot, v);
    }
}

// ---- The B update's argmin by a lower bound ----
//
// Every G entry is a sum of non-negative products plus -K A^T, so G[i, c] >= -(K A^T)[i, c]
// as rounded (bounds.rs). bb_seed evaluates each column at B's cells and a seed cell; where the
// best of those is negative, only cells whose -K A^T entry is at most that bound can reach the
// minimum, and bb_scan evaluates just those: pass 0 takes the smallest value (atomicMin on the
// bits of negative doubles, complemented so their order is the values'), pass 1 the lowest
// cell holding exactly it. G entries are summed as the fused kernel sums them (K B row's
// archetypes ascending, then -K A^T), against a dense copy of t1 by columns
// (tt[c * nm + m] = t1[m, c]); its zeros add +0 to non-negative sums, as skipping them does.
__device__ __forceinline__ double bb_g(int cell, i64 c, const unsigned* __restrict__ pos, const i64* __restrict__ kb_ptr,
                                       const int* __restrict__ kb_col, const double* __restrict__ kb_val,
                                       const double* __restrict__ tt, i64 nm, const i64* __restrict__ nk_ptr,
                                       const int* __restrict__ nk_col, const double* __restrict__ nk_val) {
    const i64 r = pos[cell];
    const double* tc = tt + c * nm;
    double s = 0.0;
    for (i64 q = kb_ptr[r]; q < kb_ptr[r + 1]; q++) s = __dadd_rn(s, __dmul_rn(kb_val[q], tc[kb_col[q]]));
    const i64 lo = lower_bound(nk_col, nk_ptr[cell], nk_ptr[cell + 1], (int)c);
    if (lo < nk_ptr[cell + 1] && nk_col[lo] == c) s = __dadd_rn(s, nk_val[lo]);
    return s;
}

// One warp per column c (grid-stride): G at B's cells (B by columns, cells ascending; the
// lanes take them, keeping each G in gq) and at seed[c] (-1 for none); the smallest is the
// bound, and lane 0 sums the gap's dot B[i, c] G[i, c] in B's order.
extern "C" __global__ void __launch_bounds__(256)
    seacells_bb_seed(const unsigned* __restrict__ pos, const i64* __restrict__ kb_ptr, const int* __restrict__ kb_col,
                     const double* __restrict__ kb_val, const double* __restrict__ tt, i64 nm,
                     const i64* __restrict__ nk_ptr, const int* __restrict__ nk_col, const double* __restrict__ nk_val,
                     const i64* __restrict__ bc_ptr, const int* __restrict__ bc_cell, const double* __restrict__ bc_w,
                     const int* __restrict__ seed, double* __restrict__ gq, double* __restrict__ bound,
                     double* __restrict__ dot, unsigned long long* __restrict__ key, int* __restrict__ best) {
    const int lane = threadIdx.x & 31;
    const i64 warps = (i64)gridDim.x * (blockDim.x >> 5);
    for (i64 c = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; c < nm; c += warps) {
        double low = __longlong_as_double(0x7ff0000000000000ll);
        for (i64 q = bc_ptr[c] + lane; q < bc_ptr[c + 1]; q += 32) {
            const double g = bb_g(bc_cell[q], c, pos, kb_ptr, kb_col, kb_val, tt, nm, nk_ptr, nk_col, nk_val);
            gq[q] = g;
            if (g < low) low = g;
        }
        if (lane == 0 && seed[c] >= 0) {
            const double g = bb_g(seed[c], c, pos, kb_ptr, kb_col, kb_val, tt, nm, nk_ptr, nk_col, nk_val);
            if (g < low) low = g;
        }
        for (int off = 16; off > 0; off >>= 1) {
            const double o = __shfl_xor_sync(0xffffffffu, low, off);
            if (o < low) low = o;
        }
        __syncwarp();
        if (lane == 0) {
            double d = 0.0;
            for (i64 q = bc_ptr[c]; q < bc_ptr[c + 1]; q++) d = __dadd_rn(d, __dmul_rn(bc_w[q], gq[q]));
            bound[c] = low;
            dot[c] = d;
            key[c] = 0xffffffffffffffffull;
            best[c] = 0x7fffffff;
        }
    }
}

// One warp per cell (grid-stride): the lanes take the cell's -K A^T entries; an entry within
// its column's (negative) bound is evaluated. Pass 0 lowers key[c] to the smallest value's
// key, pass 1 lowers best[c] to the lowest cell with exactly that value.
extern "C" __global__ void __launch_bounds__(256)
    seacells_bb_scan(int pass, i64 n, const unsigned* __restrict__ pos, const i64* __restrict__ kb_ptr,
                     const int* __restrict__ kb_col, const double* __restrict__ kb_val, const double* __restrict__ tt,
                     i64 nm, const i64* __restrict__ nk_ptr, const int* __restrict__ nk_col,
                     const double* __restrict__ nk_val, const double* __restrict__ bound,
                     unsigned long long* __restrict__ key, int* __restrict__ best) {
    const int lane = threadIdx.x & 31;
    const i64 warps = (i64)gridDim.x * (blockDim.x >> 5);
    for (i64 cell = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; cell < n; cell += warps) {
        for (i64 p = nk_ptr[cell] + lane; p < nk_ptr[cell + 1]; p += 32) {
            const i64 c = nk_col[p];
            const double lim = bound[c];
            if (!(lim < 0.0) || nk_val[p] > lim) continue;
            const double g = bb_g((int)cell, c, pos, kb_ptr, kb_col, kb_val, tt, nm, nk_ptr, nk_col, nk_val);
            if (!(g <= lim)) continue;
            const unsigned long long k = ~(unsigned long long)__double_as_longlong(g);
            if (pass == 0)
                atomicMin(&key[c], k);
            else if (k == key[c])
                atomicMin(&best[c], (int)cell);
        }
    }
}

// One thread per column: the pick and gap share where the bound read the column; open[c] = 1
// where it could not (the bound not negative), for the fused kernel to read every cell.
extern "C" __global__ void __launch_bounds__(256)
    seacells_bb_final(i64 nm, const double* __restrict__ bound, const double* __restrict__ dot,
                      const unsigned long long* __restrict__ key, const int* __restrict__ best,
                      int* __restrict__ pick, double* __restrict__ share, int* __restrict__ open) {
    FOR_EACH(c, nm) {
        const bool ok = bound[c] < 0.0 && best[c] != 0x7fffffff;
        open[c] = ok ? 0 : 1;
        pick[c] = ok ? best[c] : -1;
        share[c] = ok ? __dsub_rn(dot[c], __longlong_as_double((long long)~key[c])) : 0.0;
    }
}

// The columns the bound left open (open_cols), read at every cell: block b takes column
// open_cols[b / split] over its share b % split of the cells, each thread a stride of them,
// reduced by a shared-memory tree to the lowest cell with the smallest value (the smallest
// (value, cell) pair is the same in any order) in part_v/part_i[b].
extern "C" __global__ void __launch_bounds__(256)
    seacells_bb_open(const int* __restrict__ open_cols, i64 split, i64 n, const unsigned* __restrict__ pos,
                     const i64* __restrict__ kb_ptr, const int* __restrict__ kb_col, const double* __restrict__ kb_val,
                     const double* __restrict__ tt, i64 nm, const i64* __restrict__ nk_ptr,
                     const int* __restrict__ nk_col, const double* __restrict__ nk_val, double* __restrict__ part_v,
                     int* __restrict__ part_i) {
    __shared__ double sv[256];
    __shared__ int si[256];
    const i64 c = open_cols[blockIdx.x / split];
    const i64 share = (n + split - 1) / split;
    const i64 c0 = (blockIdx.x % split) * share;
    const i64 c1 = c0 + share < n ? c0 + share : n;
    double v = __longlong_as_double(0x7ff0000000000000ll);
    int idx = 0x7fffffff;
    for (i64 cell = c0 + threadIdx.x; cell < c1; cell += blockDim.x)
        lower_pair(v, idx, bb_g((int)cell, c, pos, kb_ptr, kb_col, kb_val, tt, nm, nk_ptr, nk_col, nk_val), (int)cell);
    sv[threadIdx.x] = v;
    si[threadIdx.x] = idx;
    __syncthreads();
    for (int h = blockDim.x >> 1; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h) {
            double a = sv[threadIdx.x];
            int ai = si[threadIdx.x];
            lower_pair(a, ai, sv[threadIdx.x + h], si[threadIdx.x + h]);
            sv[threadIdx.x] = a;
            si[threadIdx.x] = ai;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        part_v[blockIdx.x] = sv[0];
        part_i[blockIdx.x] = si[0];
    }
}

// One thread per open column: its blocks' partials reduced, the pick (cell 0 when every value
// is +inf, as the CPU) and the gap share from the seed pass's dot.
extern "C" __global__ void __launch_bounds__(256)
    seacells_bb_open_final(const int* __restrict__ open_cols, i64 n_open, i64 split, const double* __restrict__ part_v,
                           const int* __restrict__ part_i, const double* __restrict__ dot, int* __restrict__ pick,
                           double* __restrict__ share) {
    FOR_EACH(o, n_open) {
        const i64 c = open_cols[o];
        double v = __longlong_as_double(0x7ff0000000000000ll);
        int idx = 0x7fffffff;
        for (i64 p = 0; p < split; p++) lower_pair(v, idx, part_v[o * split + p], part_i[o * split + p]);
        pick[c] = idx == 0x7fffffff ? 0 : idx;
        share[c] = __dsub_rn(dot[c], v);
    }
}

// ---- K B kept on the device between the B update's steps ----
//
// Each step blends K B <- (1 - g) K B + g sum_c K[:, pick[c]] e_c^T with the CPU's arithmetic
// (rows.rs, blend_blocks): the picked cells' K columns are expanded (kb_expand), grouped by
// row (scan, kb_scatter), sorted and counted against the old rows (kb_count), and merged into
// new rows (scan, kb_merge). K B's rows are in the layout's order: cell l is row pos[l].

// One block per archetype c: the cells l two hops from p = pick[c] through M, each once, with
// K[l, p] = sum over j in row p's order of M[p, j] M[j, l], as the CPU's add_k_col sums it.
// First every l gets a slot of a shared-memory hash set (hs slots, open addressing), then
// row p's j are taken in order, each adding its products to its cells' sums (a row of M
// names a cell once, so no two threads add to one sum at a time). Out: (row pos[l], value)
// pairs in c's segment of `cap` slots, their count add_n[c], and row_cnt[pos[l]] raised by
// one each. Shared memory: hs doubles and hs ints.
extern "C" __global__ void __launch_bounds__(256)
    seacells_kb_expand(const i64* __restrict__ m_ptr, const int* __restrict__ m_col, const double* __restrict__ m_val,
                       const int* __restrict__ pick, const int* __restrict__ pos, i64 cap, int hs,
                       int* __restrict__ seg_row, double* __restrict__ seg_val, int* __restrict__ add_n,
                       int* __restrict__ row_cnt) {
    extern __shared__ double ex_smem[];
    double* sums = ex_smem;               // hs
    int* hkey = (int*)(sums + hs);        // hs
    __shared__ int s_n;
    const i64 c = blockIdx.x;
    const int t = threadIdx.x;
    const int p = pick[c];
    for (int i = t; i < hs; i += blockDim.x) {
        hkey[i] = -1;
        sums[i] = 0.0;
    }
    if (t == 0) s_n = 0;
    __syncthreads();
    const i64 a0 = m_ptr[p], a1 = m_ptr[p + 1];
    for (i64 a = a0; a < a1; a++) {
        const int j = m_col[a];
        for (i64 q = m_ptr[j] + t; q < m_ptr[j + 1]; q += blockDim.x) {
            const int l = m_col[q];
            int h = (int)(((unsigned)l * 2654435761u) & (unsigned)(hs - 1));
            while (true) {
                const int old = atomicCAS(&hkey[h], -1, l);
                if (old == -1 || old == l) break;
                h = (h + 1) & (hs - 1);
            }
        }
    }
    __syncthreads();
    for (i64 a = a0; a < a1; a++) {
        const int j = m_col[a];
        const double mpj = m_val[a];
        for (i64 q = m_ptr[j] + t; q < m_ptr[j + 1]; q += blockDim.x) {
            const int l = m_col[q];
            int h = (int)(((unsigned)l * 2654435761u) & (unsigned)(hs - 1));
            while (hkey[h] != l) h = (h + 1) & (hs - 1);
            sums[h] = __dadd_rn(sums[h], __dmul_rn(mpj, m_val[q]));
        }
        __syncthreads();
    }
    for (int h = t; h < hs; h += blockDim.x) {
        const int l = hkey[h];
        if (l < 0) continue;
        const int i = atomicAdd(&s_n, 1);
        if (i < cap) {
            const int r = pos[l];
            seg_row[c * cap + i] = r;
            seg_val[c * cap + i] = sums[h];
            atomicAdd(&row_cnt[r], 1);
        }
    }
    __syncthreads();
    if (t == 0) add_n[c] = s_n < cap ? s_n : (int)cap;
}

// Exclusive prefix sums of n counts into off[0..n] (off[n] the total, also written to *total),
// by one block of 1024 threads, each summing a contiguous run.
extern "C" __global__ void __launch_bounds__(1024)
    seacells_scan(const int* __restrict__ cnt, i64 n, i64* __restrict__ off, i64* __restrict__ total) {
    __shared__ i64 part[1024];
    const int t = threadIdx.x;
    const i64 per = (n + 1023) / 1024;
    const i64 lo = t * per < n ? t * per : n, hi = lo + per < n ? lo + per : n;
    i64 s = 0;
    for (i64 i = lo; i < hi; i++) s += cnt[i];
    part[t] = s;
    __syncthreads();
    for (int d = 1; d < 1024; d <<= 1) {
        const i64 x = t >= d ? part[t - d] : 0;
        __syncthreads();
        part[t] += x;
        __syncthreads();
    }
    i64 run = part[t] - s;
    for (i64 i = lo; i < hi; i++) {
        off[i] = run;
        run += cnt[i];
    }
    if (t == 1023) {
        off[n] = part[1023];
        *total = part[1023];
    }
}

// The expanded pairs placed by row: archetype c's pairs go to add_col/add_val at
// row_off[row] plus a slot taken from row_fill[row] (their order within a row is fixed
// later by kb_count's sort).
extern "C" __global__ void __launch_bounds__(256)
    seacells_kb_scatter(const int* __restrict__ seg_row, const double* __restrict__ seg_val,
                        const int* __restrict__ add_n, i64 cap, const i64* __restrict__ row_off,
                        int* __restrict__ row_fill, int* __restrict__ add_col, double* __restrict__ add_val) {
    const i64 c = blockIdx.x;
    for (int e = threadIdx.x; e < add_n[c]; e += blockDim.x) {
        const int r = seg_row[c * cap + e];
        const i64 slot = row_off[r] + atomicAdd(&row_fill[r], 1);
        add_col[slot] = (int)c;
        add_val[slot] = seg_val[c * cap + e];
    }
}

// One thread per row: its additions sorted by archetype (each archetype adds at most one
// entry to a row), then new_cnt[r] = the size of their union with the old row.
extern "C" __global__ void __launch_bounds__(256)
    seacells_kb_count(const i64* __restrict__ kb_ptr, const int* __restrict__ kb_col, i64 n,
                      const i64* __restrict__ row_off, int* __restrict__ add_col, double* __restrict__ add_val,
                      int* __restrict__ new_cnt) {
    FOR_EACH(r, n) {
        const i64 a0 = row_off[r], a1 = row_off[r + 1];
        for (i64 i = a0 + 1; i < a1; i++) {
            const int kc = add_col[i];
            const double kv = add_val[i];
            i64 j = i - 1;
            while (j >= a0 && add_col[j] > kc) {
                add_col[j + 1] = add_col[j];
                add_val[j + 1] = add_val[j];
                j--;
            }
            add_col[j + 1] = kc;
            add_val[j + 1] = kv;
        }
        i64 p = kb_ptr[r], pe = kb_ptr[r + 1], q = a0;
        int k = 0;
        while (p < pe || q < a1) {
            if (p < pe && q < a1 && kb_col[p] == add_col[q]) {
                p++;
                q++;
            } else if (q < a1 && (p >= pe || add_col[q] < kb_col[p])) {
                q++;
            } else {
                p++;
            }
            k++;
        }
        new_cnt[r] = k;
    }
}

// One thread per row: the old row and its sorted additions merged into the new row at
// new_ptr[r], as blend_runs: both (1 - g) a + g b, old only (1 - g) a, new only g b.
extern "C" __global__ void __launch_bounds__(256)
    seacells_kb_merge(const i64* __restrict__ kb_ptr, const int* __restrict__ kb_col, const double* __restrict__ kb_val,
                      i64 n, const i64* __restrict__ row_off, const int* __restrict__ add_col,
                      const double* __restrict__ add_val, double g, const i64* __restrict__ new_ptr,
                      int* __restrict__ out_col, double* __restrict__ out_val) {
    const double keep = 1.0 - g;
    FOR_EACH(r, n) {
        i64 p = kb_ptr[r], pe = kb_ptr[r + 1], q = row_off[r], qe = row_off[r + 1], o = new_ptr[r];
        while (p < pe || q < qe) {
            if (p < pe && q < qe && kb_col[p] == add_col[q]) {
                out_col[o] = kb_col[p];
                out_val[o] = __dadd_rn(__dmul_rn(keep, kb_val[p]), __dmul_rn(g, add_val[q]));
                p++;
                q++;
            } else if (q < qe && (p >= pe || add_col[q] < kb_col[p])) {
                out_col[o] = add_col[q];
                out_val[o] = __dmul_rn(g, add_val[q]);
                q++;
            } else {
                out_col[o] = kb_col[p];
                out_val[o] = __dmul_rn(keep, kb_val[p]);
                p++;
            }
            o++;
        }
    }
}

// ---- M X by rows: K B and K A^T built on the device ----
//
// Out row p (cell i = order[p], or i = p without an order) of sign * M X, for X sparse by rows
// (columns ascending): entry c sums M[i, j] X[j, c] over row i's j in order, each product and
// sum rounded on its own, skipping the j where X[j, c] is not stored. For a symmetric M that is
// the CPU's kb_cols (sparse.rs) bit for bit, and M (M X) in two calls is its two hops.
// The rows come out with columns ascending. Each call runs twice: count (cnt[p]), then, after
// the scan, fill at out_ptr[p].

#define RC_WARPS 4
#define RC_HS 1024
#define RC_LOAD 768

__device__ __forceinline__ int rc_slot(int c) { return (int)(((unsigned)c * 2654435761u) & (unsigned)(RC_HS - 1)); }

// One warp per row, its sums in a shared-memory hash set of RC_HS slots: lanes take row j's
// entries of X (distinct columns, so no two lanes add to one sum at a time), rows j in order.
// A row that could pass RC_LOAD distinct columns stops (the same way in both passes): the count
// pass lists it in big[] (its count comes from rowcomb_big) and the fill pass leaves it.
extern "C" __global__ void __launch_bounds__(RC_WARPS * 32)
    seacells_rowcomb(const i64* __restrict__ m_ptr, const int* __restrict__ m_col, const double* __restrict__ m_val,
                     const i64* __restrict__ x_ptr, const int* __restrict__ x_col, const double* __restrict__ x_val,
                     const unsigned* __restrict__ order, i64 rows, double sign, int fill, int* __restrict__ cnt,
                     int* __restrict__ big, int* __restrict__ nbig, const i64* __restrict__ out_ptr,
                     int* __restrict__ out_col, double* __restrict__ out_val) {
    __shared__ int keys[RC_WARPS][RC_HS];
    __shared__ double sums[RC_WARPS][RC_HS];
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int* key = keys[w];
    double* sum = sums[w];
    for (i64 p = (i64)blockIdx.x * RC_WARPS + w; p < rows; p += (i64)gridDim.x * RC_WARPS) {
        const i64 i = order ? (i64)order[p] : p;
        for (int h = lane; h < RC_HS; h += 32) {
            key[h] = -1;
            sum[h] = 0.0;
        }
        __syncwarp();
        int distinct = 0;
        bool over = false;
        for (i64 e = m_ptr[i]; e < m_ptr[i + 1]; e++) {
            const int j = m_col[e];
            const double mv = m_val[e];
            const i64 q0 = x_ptr[j], q1 = x_ptr[j + 1];
            if (distinct + (q1 - q0) > RC_LOAD) {
                over = true;
                break;
            }
            int added = 0;
            for (i64 q = q0 + lane; q < q1; q += 32) {
                const int c = x_col[q];
                const double v = __dmul_rn(mv, x_val[q]);
                int h = rc_slot(c);
                while (true) {
                    const int old = atomicCAS(&key[h], -1, c);
                    if (old == -1) {
                        added++;
                        break;
                    }
                    if (old == c) break;
                    h = (h + 1) & (RC_HS - 1);
                }
                sum[h] = __dadd_rn(sum[h], v);
            }
            for (int o = 16; o > 0; o >>= 1) added += __shfl_xor_sync(0xffffffffu, added, o);
            distinct += added;
            __syncwarp();
        }
        if (!fill) {
            if (lane == 0) {
                if (over) {
                    cnt[p] = -1;
                    big[atomicAdd(nbig, 1)] = (int)p;
                } else {
                    cnt[p] = distinct;
                }
            }
        } else if (!over) {
            // Each column's place among the row's columns (-1, unsigned, is above them all).
            const i64 base = out_ptr[p];
            for (int h = lane; h < RC_HS; h += 32) {
                const int c = key[h];
                if (c < 0) continue;
                int r = 0;
                for (int g = 0; g < RC_HS; g++) r += (unsigned)key[g] < (unsigned)c;
                out_col[base + r] = c;
                out_val[base + r] = sign * sum[h];
            }
        }
        __syncwarp();
    }
}

// The rows big[] lists, one block each, summed in a dense shared-memory row of ncols doubles
// with a flag per column (9 ncols bytes), in the same order as seacells_rowcomb. Count pass:
// cnt[p]; fill pass: the flagged columns ascending at out_ptr[p].
extern "C" __global__ void __launch_bounds__(256)
    seacells_rowcomb_big(const i64* __restrict__ m_ptr, const int* __restrict__ m_col, const double* __restrict__ m_val,
                         const i64* __restrict__ x_ptr, const int* __restrict__ x_col,
                         const double* __restrict__ x_val, const unsigned* __restrict__ order,
                         const int* __restrict__ big, i64 ncols, double sign, int fill, int* __restrict__ cnt,
                         const i64* __restrict__ out_ptr, int* __restrict__ out_col, double* __restrict__ out_val) {
    extern __shared__ double rb_smem[];
    double* acc = rb_smem;
    unsigned char* flag = (unsigned char*)(acc + ncols);
    __shared__ u32 warp_sums[32];
    const i64 p = big[blockIdx.x];
    const i64 i = order ? (i64)order[p] : p;
    for (i64 c = threadIdx.x; c < ncols; c += blockDim.x) {
        acc[c] = 0.0;
        flag[c] = 0;
    }
    __syncthreads();
    for (i64 e = m_ptr[i]; e < m_ptr[i + 1]; e++) {
        const int j = m_col[e];
        const double mv = m_val[e];
        for (i64 q = x_ptr[j] + threadIdx.x; q < x_ptr[j + 1]; q += blockDim.x) {
            const int c = x_col[q];
            acc[c] = __dadd_rn(acc[c], __dmul_rn(mv, x_val[q]));
            flag[c] = 1;
        }
        __syncthreads();
    }
    i64 at = fill ? out_ptr[p] : 0;
    for (i64 c0 = 0; c0 < ncols; c0 += blockDim.x) {
        const i64 c = c0 + threadIdx.x;
        const u32 f = c < ncols ? flag[c] : 0u;
        u32 total;
        const u32 before = block_exclusive_scan(f, warp_sums, &total);
        if (fill && f) {
            out_col[at + before] = (int)c;
            out_val[at + before] = sign * acc[c];
        }
        at += total;
        // warp_sums is read above before the next scan writes it.
        __syncthreads();
    }
    if (!fill && threadIdx.x == 0) cnt[p] = (int)at;
}
