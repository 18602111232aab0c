//! The diffusion map SEACells initialises from (as palantir's `run_diffusion_maps` and
//! `determine_multiscale_space`): on a kNN graph of 30 (the cell included), Gaussian weights
//! exp(-d_ij / sigma_i) with sigma_i the distance to the 10th nearest other cell, the kernel
//! W + W^T, the Markov matrix T = D^-1 (W + W^T), its leading eigenvectors (unit norm), and
//! components 1.. each scaled by lambda / (1 - lambda). A graph that falls apart takes one map
//! per connected component ([`multiscale_by_piece`], where the reason is given).
//!
//! T's eigenvectors come from the symmetric S = D^-1/2 (W + W^T) D^-1/2 (v = D^-1/2 u) by
//! subspace iteration with Rayleigh-Ritz steps, each step's block passed through a Chebyshev filter
//! that damps the unwanted end of the spectrum; only n x (a few more than the wanted count)
//! dense vectors are held.

use faer::{Mat, Side};
use rayon::prelude::*;

use super::graph::Components;
use crate::matrix::{Csr, Rng};
use crate::{Error, Result};

/// Leading eigenpairs of the diffusion operator, eigenvalues descending.
#[derive(Clone, Debug)]
pub struct Diffusion {
    /// Eigenvalues, descending.
    pub values: Vec<f64>,
    /// Unit-norm eigenvectors, one per eigenvalue, each of length n.
    pub vectors: Vec<Vec<f64>>,
    /// Products of the operator with the block of vectors, over all steps.
    pub iterations: usize,
}

/// The symmetric diffusion kernel W + W^T on the first `k` entries of neighbour lists as `knn`
/// returns them (self first, squared distances): W_ij = exp(-d_ij / sigma_i), sigma_i the
/// distance to the `adaptive`-th nearest other cell (the farthest when there are fewer; 1 when
/// it is 0).
pub fn diffusion_kernel(nbrs: &[Vec<(u32, f64)>], k: usize, adaptive: usize) -> Result<Csr<f64>> {
    let n = nbrs.len();
    // W = K + K^T: each weight is handed over as (i, j) and (j, i), in cell order, and the
    // stream is run twice instead of stored (see [`Csr::from_triplet_stream`]).
    Csr::from_triplet_stream(n, n, |put| {
        let mut others: Vec<(usize, f64)> = Vec::new();
        for (i, row) in nbrs.iter().enumerate() {
            others.clear();
            others.extend(
                row[..k.min(row.len())]
                    .iter()
                    .filter(|(j, _)| *j as usize != i)
                    .map(|&(j, d2)| (j as usize, d2.sqrt())),
            );
            if others.is_empty() {
                continue;
            }
            let s = others[(adaptive.max(1) - 1).min(others.len() - 1)].1;
            let s = if s > 0.0 { s } else { 1.0 };
            for &(j, d) in &others {
                let w = (-d / s).exp();
                put(i, j, w);
                put(j, i, w);
            }
        }
    })
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Rows per parallel piece of the n x b blocks; fixed, so sums over pieces run in one order
/// whatever the thread count.
const PIECE: usize = 2048;

/// Q^T P for row-major n x b blocks, as the sum over row pieces in piece order.
fn gram(q: &[f64], p: &[f64], b: usize) -> Vec<f64> {
    let parts: Vec<Vec<f64>> = q
        .par_chunks(PIECE * b)
        .zip(p.par_chunks(PIECE * b))
        .map(|(qc, pc)| {
            let mut g = vec![0.0; b * b];
            for (qr, pr) in qc.chunks_exact(b).zip(pc.chunks_exact(b)) {
                for i in 0..b {
                    let qi = qr[i];
                    for j in 0..b {
                        g[i * b + j] += qi * pr[j];
                    }
                }
            }
            g
        })
        .collect();
    let mut g = vec![0.0; b * b];
    for part in parts {
        g.iter_mut().zip(&part).for_each(|(x, y)| *x += y);
    }
    g
}

/// Q^T Q, as [`gram`] gives it bit for bit at half its products: entry (j, i) sums the same
/// products as (i, j) (q_j q_i = q_i q_j exactly) in the same row order, so only the upper
/// triangle is summed and then mirrored. Orthonormalising spends most of the diffusion map's
/// time in these sums.
fn gram_self(q: &[f64], b: usize) -> Vec<f64> {
    let parts: Vec<Vec<f64>> = q
        .par_chunks(PIECE * b)
        .map(|qc| {
            let mut g = vec![0.0; b * b];
            // Four rows per sweep of the triangle: an entry takes their products one after
            // another in row order, as row by row, but is loaded and stored once.
            let mut groups = qc.chunks_exact(4 * b);
            for q4 in &mut groups {
                let (r0, rest) = q4.split_at(b);
                let (r1, rest) = rest.split_at(b);
                let (r2, r3) = rest.split_at(b);
                for i in 0..b {
                    let (a0, a1, a2, a3) = (r0[i], r1[i], r2[i], r3[i]);
                    let row = &mut g[i * b + i..(i + 1) * b];
                    for (jj, x) in row.iter_mut().enumerate() {
                        let j = i + jj;
                        let mut s = *x;
                        s += a0 * r0[j];
                        s += a1 * r1[j];
                        s += a2 * r2[j];
                        s += a3 * r3[j];
                        *x = s;
                    }
                }
            }
            for qr in groups.remainder().chunks_exact(b) {
                for i in 0..b {
                    let qi = qr[i];
                    let row = &mut g[i * b + i..(i + 1) * b];
                    row.iter_mut()
                        .zip(&qr[i..])
                        .for_each(|(x, &qj)| *x += qi * qj);
                }
            }
            g
        })
        .collect();
    let mut g = vec![0.0; b * b];
    for part in parts {
        g.iter_mut().zip(&part).for_each(|(x, y)| *x += y);
    }
    for i in 0..b {
        for j in i + 1..b {
            g[j * b + i] = g[i * b + j];
        }
    }
    g
}

/// Y = X C for a row-major n x b block X and a b x b matrix C (entry (i, j) at i b + j).
fn times(x: &[f64], c: &[f64], b: usize) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    y.par_chunks_mut(PIECE * b)
        .zip(x.par_chunks(PIECE * b))
        .for_each(|(yc, xc)| {
            for (yr, xr) in yc.chunks_exact_mut(b).zip(xc.chunks_exact(b)) {
                for (i, &xi) in xr.iter().enumerate() {
                    for j in 0..b {
                        yr[j] += xi * c[i * b + j];
                    }
                }
            }
        });
    y
}

/// Columns of the block that [`half_s_plus_i`] sums at once, held in registers across a row's
/// entries instead of read and written back per entry.
const COLS: usize = 8;

/// (S + I) X / 2 for the row-major n x b block X, S = D^-1/2 W D^-1/2 with `dis` = D^-1/2.
/// Each output entry sums its row's entries of W in their stored order from 0.0, so the result
/// does not depend on how the columns are grouped into [`COLS`]-wide register blocks.
fn half_s_plus_i(w: &Csr<f64>, dis: &[f64], x: &[f64], b: usize) -> Vec<f64> {
    let (cols, vals) = (w.col_idx(), w.values());
    let mut y = vec![0.0; x.len()];
    y.par_chunks_mut(PIECE * b)
        .enumerate()
        .for_each(|(piece, yc)| {
            for (r, yr) in yc.chunks_exact_mut(b).enumerate() {
                let i = piece * PIECE + r;
                let range = w.row_range(i);
                let mut j0 = 0;
                while j0 < b {
                    let width = COLS.min(b - j0);
                    let mut acc = [0.0; COLS];
                    // The full-width loop is written apart so its width is a constant and the
                    // accumulators stay in registers; the tail's arithmetic is the same.
                    if width == COLS {
                        for p in range.clone() {
                            // S's entry without the row factor, applied below.
                            let c = cols[p] as usize;
                            let v = vals[p] * dis[c];
                            let xr = &x[c * b + j0..c * b + j0 + COLS];
                            acc.iter_mut().zip(xr).for_each(|(s, &xv)| *s += v * xv);
                        }
                    } else {
                        for p in range.clone() {
                            let c = cols[p] as usize;
                            let v = vals[p] * dis[c];
                            let xr = &x[c * b + j0..c * b + j0 + width];
                            acc.iter_mut().zip(xr).for_each(|(s, &xv)| *s += v * xv);
                        }
                    }
                    let xi = &x[i * b + j0..i * b + j0 + width];
                    yr[j0..j0 + width]
                        .iter_mut()
                        .zip(acc.iter().zip(xi))
                        .for_each(|(o, (&s, &xv))| *o = 0.5 * (dis[i] * s + xv));
                    j0 += width;
                }
            }
        });
    y
}

/// Orthonormalises the columns of a row-major n x b block by Cholesky QR, twice: G = Q^T Q =
/// R^T R, Q <- Q R^-1. Returns false (Q unchanged by the failing pass) when a pivot is not
/// clearly positive, i.e. the columns are nearly dependent.
fn chol_qr(q: &mut [f64], b: usize) -> bool {
    for _pass in 0..2 {
        let g = gram_self(q, b);
        // Upper-triangular R with R^T R = G.
        let mut r = vec![0.0; b * b];
        let scale = (0..b).map(|i| g[i * b + i]).fold(0.0, f64::max);
        for j in 0..b {
            let mut d = g[j * b + j];
            for k in 0..j {
                d -= r[k * b + j] * r[k * b + j];
            }
            if d.is_nan() || d <= 1e-20 * scale {
                return false;
            }
            let rjj = d.sqrt();
            r[j * b + j] = rjj;
            for i in j + 1..b {
                let mut v = g[j * b + i];
                for k in 0..j {
                    v -= r[k * b + j] * r[k * b + i];
                }
                r[j * b + i] = v / rjj;
            }
        }
        solve_rows(q, &r, b);
    }
    true
}

/// Rows solved together by [`solve_rows`].
const LANES: usize = 4;

/// Each row x of the n x b block `q` becomes the solution of y R = x (R upper triangular, b x b,
/// row-major). A row's solve is a chain of dependent multiply-subtracts, so [`LANES`] rows run
/// it in lockstep and the core overlaps their chains; each row's arithmetic and its order are
/// those of a row alone.
fn solve_rows(q: &mut [f64], r: &[f64], b: usize) {
    // R by columns, so a column's multipliers are read in order.
    let rt: Vec<f64> = (0..b * b).map(|x| r[(x % b) * b + x / b]).collect();
    q.par_chunks_mut(PIECE * b).for_each(|qc| {
        // A group's rows interleaved (entry k of lane t at k LANES + t), so the lanes of one
        // column sit side by side.
        let mut lanes = vec![0.0; LANES * b];
        let mut groups = qc.chunks_exact_mut(LANES * b);
        for g in &mut groups {
            for (t, row) in g.chunks_exact(b).enumerate() {
                for (k, &x) in row.iter().enumerate() {
                    lanes[k * LANES + t] = x;
                }
            }
            for j in 0..b {
                let (done, rest) = lanes.split_at_mut(j * LANES);
                let mut v = [0.0; LANES];
                v.copy_from_slice(&rest[..LANES]);
                for (xk, &rk) in done.chunks_exact(LANES).zip(&rt[j * b..j * b + j]) {
                    for (x, &y) in v.iter_mut().zip(xk) {
                        *x -= y * rk;
                    }
                }
                let d = rt[j * b + j];
                for (o, x) in rest[..LANES].iter_mut().zip(v) {
                    *o = x / d;
                }
            }
            for (t, row) in g.chunks_exact_mut(b).enumerate() {
                for (k, x) in row.iter_mut().enumerate() {
                    *x = lanes[k * LANES + t];
                }
            }
        }
        for row in groups.into_remainder().chunks_exact_mut(b) {
            for j in 0..b {
                let mut v = row[j];
                for k in 0..j {
                    v -= row[k] * rt[j * b + k];
                }
                row[j] = v / rt[j * b + j];
            }
        }
    });
}

/// Orthonormalises the columns in place (modified Gram-Schmidt, twice); a column that
/// vanishes is replaced by a fresh random one. The fallback for [`chol_qr`].
fn gram_schmidt(q: &mut [Vec<f64>], rng: &mut Rng) {
    for j in 0..q.len() {
        for _pass in 0..2 {
            for i in 0..j {
                let (a, b) = q.split_at_mut(j);
                let p = dot(&a[i], &b[0]);
                b[0].iter_mut().zip(&a[i]).for_each(|(x, y)| *x -= p * y);
            }
        }
        let mut nrm = dot(&q[j], &q[j]).sqrt();
        if nrm < 1e-12 {
            q[j].iter_mut().for_each(|x| *x = rng.uniform() - 0.5);
            for i in 0..j {
                let (a, b) = q.split_at_mut(j);
                let p = dot(&a[i], &b[0]);
                b[0].iter_mut().zip(&a[i]).for_each(|(x, y)| *x -= p * y);
            }
            nrm = dot(&q[j], &q[j]).sqrt();
        }
        q[j].iter_mut().for_each(|x| *x /= nrm);
    }
}

/// Orthonormalises the columns of a row-major n x b block: Cholesky QR when the columns are
/// well conditioned, else Gram-Schmidt with random replacement of vanished columns.
fn orthonormalize(q: &mut [f64], b: usize, rng: &mut Rng) {
    if chol_qr(q, b) {
        return;
    }
    let n = q.len() / b;
    let mut cols: Vec<Vec<f64>> = (0..b)
        .map(|j| (0..n).map(|i| q[i * b + j]).collect())
        .collect();
    gram_schmidt(&mut cols, rng);
    for (j, col) in cols.iter().enumerate() {
        for (i, &v) in col.iter().enumerate() {
            q[i * b + j] = v;
        }
    }
}

/// Ritz residual (unit vectors) under which the wanted pairs count as converged.
const RESIDUAL: f64 = 1e-6;

/// Operator products after which the eigensolver stops with the pairs it has.
const MAX_PRODUCTS: usize = 2000;

/// Highest degree of one filter, and the most it may raise the top of the spectrum over the
/// damped interval's edge: a larger gain would leave the filtered block too ill-conditioned
/// for the Cholesky QR that follows.
const MAX_DEGREE: usize = 24;
const MAX_GAIN: f64 = 1e4;

/// Whether [0, `cut`] leaves something to damp below the top eigenvalue 1 and something to
/// gain there (a cut at 0, at 1 or NaN does not, and the step is a plain product).
fn filters(cut: f64) -> bool {
    cut > 1e-3 && cut < 1.0 - 1e-9
}

/// The filter's degree for the damped interval [0, `cut`] of an operator whose top eigenvalue
/// is 1: the highest whose gain at 1, T_m(2 / cut - 1), stays under [`MAX_GAIN`]; 1 (a plain
/// shifted product) when the cut leaves nothing to damp or nothing to gain.
fn filter_degree(cut: f64) -> usize {
    if !filters(cut) {
        return 1;
    }
    let per_degree = (2.0 / cut - 1.0).acosh();
    ((MAX_GAIN.acosh() / per_degree) as usize).clamp(1, MAX_DEGREE)
}

/// p(A) X for the Chebyshev polynomial of degree `degree` that stays within its value at the
/// edge on [0, `cut`] and is 1 at A's top eigenvalue 1, so the eigenvectors above the cut grow
/// against those below by T_degree(2 / cut - 1) per filter where plain products would gain
/// only (1 / cut)^degree. The scaled three-term recurrence of Zhou and Saad (J. Comput. Phys.
/// 2007) keeps every term near unit size. `ax` is A X, which the Rayleigh-Ritz step has.
fn chebyshev(
    apply: &dyn Fn(&[f64]) -> Vec<f64>,
    x: Vec<f64>,
    ax: Vec<f64>,
    degree: usize,
    cut: f64,
) -> Vec<f64> {
    if !filters(cut) {
        return ax;
    }
    // [0, cut] is c +- e.
    let (c, e) = (cut / 2.0, cut / 2.0);
    let mut sigma = e / (1.0 - c);
    let tau = 2.0 / sigma;
    let mut y = ax;
    y.par_iter_mut()
        .zip(x.par_iter())
        .for_each(|(a, &xv)| *a = (*a - c * xv) * (sigma / e));
    let mut prev = x;
    for _ in 1..degree {
        let next_sigma = 1.0 / (tau - sigma);
        let mut ay = apply(&y);
        let (f, g) = (2.0 * next_sigma / e, sigma * next_sigma);
        ay.par_iter_mut()
            .zip(y.par_iter().zip(prev.par_iter()))
            .for_each(|(a, (&yv, &pv))| *a = (*a - c * yv) * f - g * pv);
        prev = std::mem::replace(&mut y, ay);
        sigma = next_sigma;
    }
    y
}

/// The `count` leading eigenpairs of D^-1 W for a symmetric non-negative W, eigenvectors of
/// unit norm; deterministic for a seed (whatever the thread count).
///
/// The block of b = count + 8 vectors is held row-major (n x b), so one pass over W applies
/// the operator to all of them and the orthonormalisation is parallel over rows.
pub fn diffusion_map(w: &Csr<f64>, count: usize, seed: u64) -> Result<Diffusion> {
    let n = w.nrows();
    if count == 0 || count > n {
        return Err(Error::invalid(
            "n_components",
            format!("{count} must be in 1..={n}"),
        ));
    }
    let deg: Vec<f64> = (0..n)
        .map(|i| w.row_range(i).map(|p| w.values()[p]).sum::<f64>())
        .collect();
    let dis: Vec<f64> = deg
        .iter()
        .map(|&d| if d > 0.0 { 1.0 / d.sqrt() } else { 0.0 })
        .collect();
    let b = (count + 8).min(n);
    // (S + I) / 2: the same eigenvectors, eigenvalues in [0, 1], so the wanted ones lead.
    let apply = |x: &[f64]| half_s_plus_i(w, &dis, x, b);
    let mut rng = Rng::new(seed ^ 0x5EAC_E115);
    // Column by column, as the random start has always been drawn.
    let mut q = vec![0.0; n * b];
    for j in 0..b {
        for i in 0..n {
            q[i * b + j] = rng.uniform() - 0.5;
        }
    }
    orthonormalize(&mut q, b, &mut rng);
    let (mut theta, mut ritz);
    let mut products = 0;
    loop {
        let aq = apply(&q);
        products += 1;
        // Rayleigh-Ritz on span(Q), and the residuals of the wanted Ritz pairs.
        let g = gram(&q, &aq, b);
        let h = Mat::<f64>::from_fn(b, b, |i, j| 0.5 * (g[i * b + j] + g[j * b + i]));
        let e = h
            .self_adjoint_eigen(Side::Lower)
            .map_err(|e| Error::device("eigendecomposition (faer)", format!("{e:?}")))?;
        // Eigenvalues descending: column k of U (b x b, row-major) is pair b - 1 - k.
        theta = (0..b).rev().map(|k| e.S()[k]).collect::<Vec<f64>>();
        let u = e.U();
        let ud: Vec<f64> = (0..b * b).map(|x| u[(x / b, b - 1 - x % b)]).collect();
        ritz = times(&q, &ud, b);
        let av = times(&aq, &ud, b);
        let worst = (0..count)
            .map(|j| {
                (0..n)
                    .map(|i| (av[i * b + j] - theta[j] * ritz[i * b + j]).powi(2))
                    .sum::<f64>()
                    .sqrt()
            })
            .fold(0.0, f64::max);
        if worst < RESIDUAL || products >= MAX_PRODUCTS {
            break;
        }
        // Damp everything at or below the block's smallest Ritz value, which bounds the
        // eigenvalues the block has not caught from below.
        let cut = theta[b - 1];
        let degree = filter_degree(cut).min(MAX_PRODUCTS - products);
        q = chebyshev(&apply, ritz, av, degree, cut);
        products += degree - 1;
        orthonormalize(&mut q, b, &mut rng);
    }
    let iterations = products;
    let mut values = Vec::with_capacity(count);
    let mut vectors = Vec::with_capacity(count);
    for j in 0..count {
        values.push(2.0 * theta[j] - 1.0);
        let mut v: Vec<f64> = (0..n).map(|i| ritz[i * b + j] * dis[i]).collect();
        let nrm = dot(&v, &v).sqrt();
        if nrm > 0.0 {
            v.iter_mut().for_each(|x| *x /= nrm);
        }
        // A fixed sign (the largest-magnitude entry positive) so runs agree bit for bit.
        let big = v
            .iter()
            .enumerate()
            .fold((0, 0.0f64), |acc, (i, x)| {
                if x.abs() > acc.1 {
                    (i, x.abs())
                } else {
                    acc
                }
            })
            .0;
        if v[big] < 0.0 {
            v.iter_mut().for_each(|x| *x = -*x);
        }
        vectors.push(v);
    }
    Ok(Diffusion {
        values,
        vectors,
        iterations,
    })
}

/// Components 1..count of the map, each scaled by lambda / (1 - lambda) (1 - lambda held at
/// least 1e-9: a disconnected graph has several eigenvalues of 1, which is why the fit maps
/// such a graph by piece, [`multiscale_by_piece`]; the guard is left for graphs whose parts are
/// joined only by weights too small to move an eigenvalue off 1).
pub fn multiscale(d: &Diffusion) -> Vec<Vec<f64>> {
    d.values
        .iter()
        .zip(&d.vectors)
        .skip(1)
        .map(|(&l, v)| {
            let s = l / (1.0 - l).max(1e-9);
            v.iter().map(|x| x * s).collect()
        })
        .collect()
}

/// The multiscale coordinates of a graph that falls apart into `pieces` (its connected
/// components, [`super::graph::connected_components`]): each piece of two or more cells gets
/// the diffusion map of its own subgraph, exactly as [`diffusion_map`] and [`multiscale`] give
/// it for that piece alone (`count` eigenpairs, fewer on a piece of fewer cells; the leading,
/// trivial one dropped), written on its cells; a lone cell stays at 0. Coordinate k of every
/// cell is its piece's k-th scaled component, so there are `count - 1` coordinates whatever
/// the number of pieces. Returns them with the eigensolver's iterations summed over the pieces.
///
/// Why by piece: on a disconnected graph the Markov matrix is block diagonal, and eigenvalue 1
/// comes once per piece. Its eigenvectors span the pieces' indicator vectors, in a basis the
/// solver picks arbitrarily; they say only which piece a cell is in, and lambda / (1 - lambda)
/// scales them, and the solver's rounding within each piece, by up to 1e9, so variances reach
/// 1e14 and distances mean nothing. Dropping those eigenvectors from one global map would keep
/// the rest of the spectrum exact, but the `count - 1` coordinates kept would be shared among
/// the pieces by eigenvalue rank: most pieces would get none (their cells all at 0), and
/// keeping them all would take `count - 1` eigenpairs per piece from one solver whose block
/// grows with the pieces. Each piece's own map is what SEACells (palantir) computes on that
/// piece, so the metrics of a metacell within a piece are those SEACells' evaluation gives on
/// the piece; distances between cells of different pieces compare unrelated coordinates and
/// mean nothing (see [`super::fit::separation_within`]).
pub fn multiscale_by_piece(
    w: &Csr<f64>,
    pieces: &Components,
    count: usize,
    seed: u64,
) -> Result<(Vec<Vec<f64>>, usize)> {
    let n = w.nrows();
    if count == 0 || count > n {
        return Err(Error::invalid(
            "n_components",
            format!("{count} must be in 1..={n}"),
        ));
    }
    if pieces.labels.len() != n {
        return Err(Error::invalid(
            "pieces",
            format!("{} labels for {n} cells", pieces.labels.len()),
        ));
    }
    let mut coords = vec![vec![0.0; n]; count - 1];
    let mut iterations = 0;
    // Each cell's index within its piece.
    let mut local = vec![0u32; n];
    let members: Vec<Vec<usize>> = pieces
        .members()
        .into_iter()
        .filter(|cells| cells.len() >= 2)
        .collect();
    for cells in &members {
        for (k, &c) in cells.iter().enumerate() {
            local[c] = k as u32;
        }
    }
    // The pieces' maps are independent, and one piece's solver runs in a fixed order whatever
    // the threads, so they run side by side (most pieces are far smaller than the rows a
    // solver spreads over the cores) and are written back in piece order.
    let maps: Vec<Result<Diffusion>> = members
        .par_iter()
        .map(|cells| {
            // The piece's rows, its columns renumbered in the same (ascending) order, so each
            // row stays sorted; no entry leaves a piece except at weight 0, which is dropped.
            let (mut ptr, mut idx, mut val) = (vec![0i64], Vec::new(), Vec::new());
            for &c in cells {
                for p in w.row_range(c) {
                    let j = w.col_idx()[p] as usize;
                    if pieces.labels[j] == pieces.labels[c] {
                        idx.push(local[j] as i32);
                        val.push(w.values()[p]);
                    }
                }
                ptr.push(idx.len() as i64);
            }
            let sub = Csr::new(cells.len(), cells.len(), ptr, idx, val)?;
            diffusion_map(&sub, count.min(cells.len()), seed)
        })
        .collect();
    for (cells, dm) in members.iter().zip(maps) {
        let dm = dm?;
        iterations += dm.iterations;
        for (dst, src) in coords.iter_mut().zip(multiscale(&dm)) {
            for (&c, v) in cells.iter().zip(src) {
                dst[c] = v;
            }
        }
    }
    Ok((coords, iterations))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connected symmetric graph with random positive weights: a ring plus random chords.
    fn graph(n: usize, seed: u64) -> Csr<f64> {
        let mut rng = Rng::new(seed);
        let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
        let mut edge = |i: usize, j: usize, w: f64| {
            r.extend([i, j]);
            c.extend([j, i]);
            v.extend([w, w]);
        };
        for i in 0..n {
            edge(i, (i + 1) % n, 0.5 + rng.uniform());
        }
        for _ in 0..3 * n {
            let (i, j) = (rng.below(n as u64) as usize, rng.below(n as u64) as usize);
            if i != j && (i + 1) % n != j && (j + 1) % n != i {
                edge(i, j, rng.uniform());
            }
        }
        // Duplicate chords are summed, which keeps W symmetric.
        let mut t: Vec<(usize, usize, f64)> = r
            .into_iter()
            .zip(c)
            .zip(v)
            .map(|((a, b), w)| (a, b, w))
            .collect();
        t.sort_by_key(|e| (e.0, e.1));
        let mut d: Vec<(usize, usize, f64)> = Vec::new();
        for (a, b, w) in t {
            match d.last_mut() {
                Some(l) if l.0 == a && l.1 == b => l.2 += w,
                _ => d.push((a, b, w)),
            }
        }
        let (rows, rest): (Vec<usize>, Vec<(usize, f64)>) =
            d.into_iter().map(|(a, b, w)| (a, (b, w))).unzip();
        let (cols, vals): (Vec<usize>, Vec<f64>) = rest.into_iter().unzip();
        Csr::from_triplets(n, n, &rows, &cols, &vals).unwrap()
    }

    /// The leading eigenpairs of D^-1 W against a dense eigendecomposition of D^-1/2 W D^-1/2:
    /// eigenvalues to 1e-9, unit eigenvectors up to sign to 1e-5.
    /// Rows solved in lockstep are each row's own solve bit for bit, remainders included.
    #[test]
    fn solve_rows_is_each_rows_solve() {
        let mut rng = Rng::new(6);
        for (n, b) in [(1, 3), (LANES, 18), (PIECE + LANES + 3, 18), (9, 1)] {
            let mut r = vec![0.0; b * b];
            for i in 0..b {
                for j in i..b {
                    r[i * b + j] = if i == j { 1.0 + rng.uniform() } else { rng.uniform() - 0.5 };
                }
            }
            let q0: Vec<f64> = (0..n * b).map(|_| rng.uniform() - 0.5).collect();
            let mut got = q0.clone();
            solve_rows(&mut got, &r, b);
            let mut want = q0;
            for row in want.chunks_exact_mut(b) {
                for j in 0..b {
                    let mut v = row[j];
                    for k in 0..j {
                        v -= row[k] * r[k * b + j];
                    }
                    row[j] = v / r[j * b + j];
                }
            }
            assert!(
                got.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits()),
                "n {n}, b {b}"
            );
        }
    }

    /// The operator in register blocks of columns is the entry-by-entry product bit for bit,
    /// at widths below, at and between whole blocks, across row pieces.
    #[test]
    fn operator_blocks_are_the_plain_product() {
        let mut rng = Rng::new(7);
        for (n, b) in [(40, 1), (300, COLS), (PIECE + 5, 18), (50, 2 * COLS + 3)] {
            let w = graph(n, 9);
            let dis: Vec<f64> = (0..n).map(|_| rng.uniform()).collect();
            let x: Vec<f64> = (0..n * b).map(|_| rng.uniform() - 0.5).collect();
            let got = half_s_plus_i(&w, &dis, &x, b);
            let mut want = vec![0.0; n * b];
            for i in 0..n {
                let yr = &mut want[i * b..(i + 1) * b];
                for p in w.row_range(i) {
                    let c = w.col_idx()[p] as usize;
                    let v = w.values()[p] * dis[c];
                    for j in 0..b {
                        yr[j] += v * x[c * b + j];
                    }
                }
                for j in 0..b {
                    yr[j] = 0.5 * (dis[i] * yr[j] + x[i * b + j]);
                }
            }
            assert!(
                got.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits()),
                "n {n}, b {b}"
            );
        }
    }

    /// On a diagonal operator the filter multiplies each entry by T_m(2 lambda / cut - 1) /
    /// T_m(2 / cut - 1): 1 at the top eigenvalue, at most the inverse gain on [0, cut], and the
    /// degree picked keeps that gain under MAX_GAIN.
    #[test]
    fn chebyshev_filter_is_the_scaled_polynomial() {
        let cheb = |m: usize, x: f64| {
            if x.abs() <= 1.0 {
                (m as f64 * x.acos()).cos()
            } else {
                (m as f64 * x.acosh()).cosh()
            }
        };
        let lam: Vec<f64> = (0..=50).map(|i| i as f64 / 50.0).collect();
        for cut in [0.3, 0.9, 0.98] {
            let degree = filter_degree(cut);
            assert!((1..=MAX_DEGREE).contains(&degree));
            assert!(cheb(degree, 2.0 / cut - 1.0) <= MAX_GAIN * (1.0 + 1e-12));
            let apply = |x: &[f64]| -> Vec<f64> { x.iter().zip(&lam).map(|(v, l)| v * l).collect() };
            let x: Vec<f64> = lam.iter().map(|_| 1.0).collect();
            let y = chebyshev(&apply, x.clone(), apply(&x), degree, cut);
            let top = cheb(degree, 2.0 / cut - 1.0);
            for (l, got) in lam.iter().zip(&y) {
                let want = cheb(degree, 2.0 * l / cut - 1.0) / top;
                assert!((got - want).abs() < 1e-9 * want.abs().max(1.0), "cut {cut}, lambda {l}: {got} vs {want}");
                if *l <= cut {
                    assert!(got.abs() <= 1.0 / top + 1e-12);
                }
            }
            assert!((y[50] - 1.0).abs() < 1e-12);
        }
        // Nothing to damp, or nothing left to gain: a plain product.
        assert_eq!(filter_degree(0.0), 1);
        assert_eq!(filter_degree(1.0), 1);
    }

    /// The symmetric Gram sum is the general one bit for bit, across row pieces.
    #[test]
    fn gram_self_is_gram_bit_for_bit() {
        let mut rng = Rng::new(5);
        for (n, b) in [(1, 1), (7, 18), (8, 3), (PIECE + 3, 18), (3 * PIECE - 1, 5)] {
            let q: Vec<f64> = (0..n * b).map(|_| rng.uniform() - 0.5).collect();
            let (a, g) = (gram_self(&q, b), gram(&q, &q, b));
            assert!(
                a.iter().zip(&g).all(|(x, y)| x.to_bits() == y.to_bits()),
                "n {n}, b {b}"
            );
        }
    }

    #[test]
    fn diffusion_map_matches_a_dense_eigendecomposition() {
        let n = 300;
        let w = graph(n, 4);
        let count = 6;
        let d = diffusion_map(&w, count, 0).unwrap();
        let deg: Vec<f64> = (0..n)
            .map(|i| w.row_range(i).map(|p| w.values()[p]).sum())
            .collect();
        let mut s = Mat::<f64>::zeros(n, n);
        for i in 0..n {
            for p in w.row_range(i) {
                let j = w.col_idx()[p] as usize;
                s[(i, j)] = w.values()[p] / (deg[i] * deg[j]).sqrt();
            }
        }
        let e = s.self_adjoint_eigen(Side::Lower).unwrap();
        for k in 0..count {
            let idx = n - 1 - k;
            let lam = e.S()[idx];
            assert!(
                (d.values[k] - lam).abs() < 1e-9,
                "value {k}: {} vs {lam}",
                d.values[k]
            );
            let mut v: Vec<f64> = (0..n).map(|i| e.U()[(i, idx)] / deg[i].sqrt()).collect();
            let nrm = dot(&v, &v).sqrt();
            v.iter_mut().for_each(|x| *x /= nrm);
            let c = dot(&v, &d.vectors[k]).abs();
            assert!((1.0 - c).abs() < 1e-5, "vector {k}: |cos| {c}");
        }
        assert!(d.iterations >= 10);
    }

    /// Two connected graphs interleaved into one (cells i % 5 < 3 the first, of 120, the rest
    /// the second, of 80): the map by piece is each graph's own map on its cells, bit for bit,
    /// and a one-piece graph's is the global map's; the global map of the two scales its
    /// second eigenvalue-1 vector by 1e9.
    #[test]
    fn the_map_by_piece_is_each_pieces_own_map() {
        let (a, b) = (graph(120, 1), graph(80, 2));
        let n = 200;
        let (mut ia, mut ib) = (Vec::new(), Vec::new());
        for i in 0..n {
            if i % 5 < 3 {
                ia.push(i);
            } else {
                ib.push(i);
            }
        }
        let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
        for (g, cells) in [(&a, &ia), (&b, &ib)] {
            for i in 0..g.nrows() {
                for p in g.row_range(i) {
                    r.push(cells[i]);
                    c.push(cells[g.col_idx()[p] as usize]);
                    v.push(g.values()[p]);
                }
            }
        }
        let w = Csr::from_triplets(n, n, &r, &c, &v).unwrap();
        let pieces = crate::solvers::seacells::graph::connected_components(&w);
        assert_eq!(pieces.count, 2);
        let (got, its) = multiscale_by_piece(&w, &pieces, 6, 3).unwrap();
        assert_eq!(got.len(), 5);
        let mut total = 0;
        for (g, cells) in [(&a, &ia), (&b, &ib)] {
            let dm = diffusion_map(g, 6, 3).unwrap();
            total += dm.iterations;
            for (k, want) in multiscale(&dm).iter().enumerate() {
                for (i, &cell) in cells.iter().enumerate() {
                    assert_eq!(got[k][cell].to_bits(), want[i].to_bits(), "{k} {cell}");
                }
            }
        }
        assert_eq!(its, total);
        // The pieces run side by side; on one thread they give the same bits.
        let one_thread = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let (seq, seq_its) = one_thread
            .install(|| multiscale_by_piece(&w, &pieces, 6, 3))
            .unwrap();
        assert_eq!(seq_its, its);
        assert!(seq
            .iter()
            .flatten()
            .zip(got.iter().flatten())
            .all(|(x, y)| x.to_bits() == y.to_bits()));
        let whole = multiscale(&diffusion_map(&w, 6, 3).unwrap());
        let big = whole[0].iter().fold(0.0f64, |m, x| m.max(x.abs()));
        assert!(big > 1e6, "the global map's second vector peaks at {big}");
        let one = graph(150, 5);
        let alone = crate::solvers::seacells::graph::connected_components(&one);
        let (got, _) = multiscale_by_piece(&one, &alone, 6, 3).unwrap();
        let want = multiscale(&diffusion_map(&one, 6, 3).unwrap());
        assert!(got
            .iter()
            .flatten()
            .zip(want.iter().flatten())
            .all(|(x, y)| x.to_bits() == y.to_bits()));
    }

    /// Columns that are dependent fall back to Gram-Schmidt, which replaces a vanished column.
    #[test]
    fn orthonormalize_handles_dependent_columns() {
        let (n, b) = (5000, 4);
        let mut rng = Rng::new(1);
        let mut q = vec![0.0; n * b];
        for i in 0..n {
            let x = rng.uniform();
            q[i * b] = x;
            q[i * b + 1] = 2.0 * x; // dependent on column 0
            q[i * b + 2] = rng.uniform();
            q[i * b + 3] = rng.uniform() - x;
        }
        orthonormalize(&mut q, b, &mut rng);
        let g = gram(&q, &q, b);
        for i in 0..b {
            for j in 0..b {
                let want = if i == j { 1.0 } else { 0.0 };
                assert!(
                    (g[i * b + j] - want).abs() < 1e-10,
                    "({i}, {j}) = {}",
                    g[i * b + j]
                );
            }
        }
    }
}
