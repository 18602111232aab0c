// SEACells on the GPU: the exact kNN's distance tiles and the B update's gradient columns.
//
// kNN: squared Euclidean distances in f64 with the CPU's arithmetic (difference, square and
// running sum in dimension order, each rounded on its own, no fused multiply-add), so the
// neighbours, their order and their distances are the CPU's bit for bit; a cell's distance to
// itself is written as -1 so the selection puts it first.
//
// B update: with K = M M and t1 = A A^T, the gradient column c is
//   G[:, c] = K B t1[:, c] - K A^T[:, c] = M (M V[:, c]),  V[:, c] = B t1[:, c] - A^T[:, c],
// so K and K B are never formed: a chunk of columns of V is built (b_rhs), multiplied by M
// twice with the SpMM kernels, and reduced to each column's argmin cell and duality-gap share
// (b_pick). Every sum runs in a fixed order, so a run repeats bit for bit.
#include "common.cuh"

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

// V[:, c] = B t1[:, c] - A^T[:, c] for the chunk's columns c = c0 + blockIdx.x, into v (n x ld,
// row-major, column c - c0, zeroed before). One block per column: t1's row c (t1 is symmetric;
// CSR, ascending m) adds t1[m, c] B[:, m] with the threads over B[:, m]'s distinct cells and a
// barrier between columns m, then the cells of A^T[:, c] (distinct) are subtracted.
// B and A^T are CSR by column (archetype): ptr, cell, weight.
extern "C" __global__ void __launch_bounds__(256)
    seacells_b_rhs(const i64* __restrict__ t1_ptr, const int* __restrict__ t1_col, const double* __restrict__ t1_val,
                   const i64* __restrict__ b_ptr, const int* __restrict__ b_cell, const double* __restrict__ b_w,
                   const i64* __restrict__ at_ptr, const int* __restrict__ at_cell, const double* __restrict__ at_w,
                   i64 c0, i64 ld, double* __restrict__ v) {
    const int col = blockIdx.x;
    const i64 c = c0 + col;
    for (i64 p = t1_ptr[c]; p < t1_ptr[c + 1]; p++) {
        const int m = t1_col[p];
        const double t = t1_val[p];
        for (i64 q = b_ptr[m] + threadIdx.x; q < b_ptr[m + 1]; q += blockDim.x) {
            double* e = v + (i64)b_cell[q] * ld + col;
            *e = __dadd_rn(*e, __dmul_rn(t, b_w[q]));
        }
        __syncthreads();
    }
    for (i64 q = at_ptr[c] + threadIdx.x; q < at_ptr[c + 1]; q += blockDim.x) {
        double* e = v + (i64)at_cell[q] * ld + col;
        *e = __dsub_rn(*e, at_w[q]);
    }
}

// For the chunk's column c = c0 + blockIdx.x of G (n x ld, row-major): pick[c] = the lowest
// cell among those with the smallest G[i, c], and gap[c] = sum_i B[i, c] G[i, c] - that
// minimum (B's entries in column order).
extern "C" __global__ void __launch_bounds__(256)
    seacells_b_pick(const double* __restrict__ g, i64 n, i64 ld, i64 c0, const i64* __restrict__ b_ptr,
                    const int* __restrict__ b_cell, const double* __restrict__ b_w, int* __restrict__ pick,
                    double* __restrict__ gap) {
    __shared__ double sv[256];
    __shared__ i64 si[256];
    const int col = blockIdx.x, t = threadIdx.x;
    const i64 c = c0 + col;
    double best = __longlong_as_double(0x7ff0000000000000ll);  // +inf
    i64 bi = n;
    for (i64 i = t; i < n; i += blockDim.x) {
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
        double dot = 0.0;
        for (i64 q = b_ptr[c]; q < b_ptr[c + 1]; q++)
            dot = __dadd_rn(dot, __dmul_rn(b_w[q], g[(i64)b_cell[q] * ld + col]));
        pick[c] = (int)si[0];
        gap[c] = dot - sv[0];
    }
}
