//! Stage 1 of SEACells: exact k nearest neighbours (the cell itself included) in Euclidean
//! distance, bandwidths sigma_i = the distance to the floor(k/2)-th nearest other cell at a
//! non-zero distance, the kNN graph made symmetric by union or intersection with self-loops, and
//! weights M_ij = exp(-||x_i - x_j||^2 / (sigma_i sigma_j)) on its edges.
//!
//! Cost: the kNN is exact and brute force, O(n^2 d) with rows in parallel and O(n k) memory;
//! nothing of size n x n is held.

use rayon::prelude::*;

use crate::matrix::{Csr, Dense};
use crate::{Error, Result, Scalar};

/// How the kNN graph is made symmetric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Symmetrize {
    /// An edge where either cell has the other among its neighbours (the SEACells default).
    Union,
    /// An edge only where each cell has the other among its neighbours.
    Intersection,
}

/// Exact kNN: for each cell, `k` (cell, squared distance) pairs in ascending distance, ties by
/// the smaller index; the cell itself comes first (distance 0, smallest index among its exact
/// duplicates excepted).
pub fn knn<T: Scalar>(x: &Dense<T>, k: usize) -> Result<Vec<Vec<(u32, f64)>>> {
    check_embedding(x, k)?;
    let (n, d) = (x.nrows(), x.ncols());
    // The embedding transposed (d x n): a block of rows' distances to a block of cells then
    // vectorises across the cells and reuses each loaded value for every row of the block,
    // while each pair's sum still runs in dimension order, as a plain loop would.
    let mut xt = vec![0.0f64; n * d];
    for i in 0..n {
        for (c, v) in x.row(i).iter().enumerate() {
            xt[c * n + i] = v.to_f64();
        }
    }
    let cmp = |a: &(f64, u32), b: &(f64, u32)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
    Ok((0..n.div_ceil(KNN_ROWS))
        .into_par_iter()
        .flat_map_iter(|rb| {
            let r0 = rb * KNN_ROWS;
            let nr = KNN_ROWS.min(n - r0);
            let xi: Vec<Vec<f64>> = (0..nr)
                .map(|r| (0..d).map(|c| xt[c * n + r0 + r]).collect())
                .collect();
            // Per row: candidates, trimmed to the k best whenever they reach 4k; a cell enters
            // only when it beats the k-th best so far (distance, then index).
            let mut cand: Vec<Vec<(f64, u32)>> = vec![Vec::with_capacity(4 * k + KNN_CELLS); nr];
            let mut bound: Vec<Option<(f64, u32)>> = vec![None; nr];
            let mut acc = vec![0.0f64; KNN_ROWS * KNN_CELLS];
            for j0 in (0..n).step_by(KNN_CELLS) {
                let len = KNN_CELLS.min(n - j0);
                block_distances(&mut acc, &xt, &xi, n, j0, len);
                for r in 0..nr {
                    let i = r0 + r;
                    // Runs of eight cells all farther than the bound are passed over at once
                    // (the bound's own distance and index need the full comparison).
                    let far = bound[r].map_or(f64::INFINITY, |b| b.0);
                    let has_self = (j0..j0 + len).contains(&i);
                    let row = &acc[r * KNN_CELLS..r * KNN_CELLS + len];
                    for (q, run) in row.chunks(8).enumerate() {
                        if !has_self && run.iter().fold(true, |all, &x| all & (x > far)) {
                            continue;
                        }
                        for (jj, &d2) in run.iter().enumerate() {
                            let j = (j0 + q * 8 + jj) as u32;
                            // The cell itself first: distance 0 and the self index win over
                            // other zeros.
                            let e = (if j as usize == i { -1.0 } else { d2 }, j);
                            if bound[r].is_some_and(|b| cmp(&e, &b) != std::cmp::Ordering::Less) {
                                continue;
                            }
                            cand[r].push(e);
                        }
                    }
                    if cand[r].len() >= 4 * k {
                        cand[r].select_nth_unstable_by(k - 1, cmp);
                        cand[r].truncate(k);
                        bound[r] = Some(cand[r][k - 1]);
                    }
                }
            }
            cand.into_iter()
                .map(|mut c| {
                    if c.len() > k {
                        c.select_nth_unstable_by(k - 1, cmp);
                        c.truncate(k);
                    }
                    c.sort_unstable_by(cmp);
                    c[0].0 = 0.0;
                    // A fresh vector of k: collecting in place would keep the candidate
                    // buffer's whole allocation alive for every cell.
                    let mut row = Vec::with_capacity(k);
                    row.extend(c.iter().map(|&(d2, j)| (j, d2)));
                    row
                })
                .collect::<Vec<_>>()
        })
        .collect())
}

crate::simd::multiversion! {
/// Squared distances of the rows `xi` (each d values) to cells `j0..j0 + len` into `acc`
/// (row r at `r * KNN_CELLS`), each pair summed in dimension order.
fn block_distances(
    acc: &mut [f64],
    xt: &[f64],
    xi: &[Vec<f64>],
    n: usize,
    j0: usize,
    len: usize,
) {
    let d = xi.first().map_or(0, |r| r.len());
    let nr = xi.len();
    // Eight cells by eight rows at a time, each row summing in its own registers over the
    // dimensions, so a loaded value of the cells serves eight rows and nothing is stored
    // until the sums are done; the block's cells stay in L2 while every group of eight rows
    // passes over them. Rows past `nr` (the last group) repeat the group's first, unused.
    let mut jc = 0;
    while jc + 8 <= len {
        for g0 in (0..nr).step_by(TILE_ROWS) {
            let live = TILE_ROWS.min(nr - g0);
            let mut rows = [g0; TILE_ROWS];
            for (r, x) in rows.iter_mut().enumerate().take(live) {
                *x = g0 + r;
            }
            let mut s = [[0.0f64; 8]; TILE_ROWS];
            for c in 0..d {
                let xv = &xt[c * n + j0 + jc..c * n + j0 + jc + 8];
                for (sr, &r) in s.iter_mut().zip(&rows) {
                    let a = xi[r][c];
                    for (x, &b) in sr.iter_mut().zip(xv) {
                        let t = a - b;
                        *x += t * t;
                    }
                }
            }
            for (r, sr) in s.iter().enumerate().take(live) {
                let at = (g0 + r) * KNN_CELLS + jc;
                acc[at..at + 8].copy_from_slice(sr);
            }
        }
        jc += 8;
    }
    for r in 0..nr {
        for j in jc..len {
            let mut x = 0.0;
            for c in 0..d {
                let t = xi[r][c] - xt[c * n + j0 + j];
                x += t * t;
            }
            acc[r * KNN_CELLS + j] = x;
        }
    }
}
}

/// Rows and cells per block of the CPU kNN's distance computation, and rows per register
/// tile within a block.
const KNN_ROWS: usize = 64;
const TILE_ROWS: usize = 8;
const KNN_CELLS: usize = 512;

/// The kNN's argument checks: k in 1..=n, cell indices within 32 bits, every entry finite.
pub fn check_embedding<T: Scalar>(x: &Dense<T>, k: usize) -> Result<()> {
    let n = x.nrows();
    if k == 0 || k > n {
        return Err(Error::invalid(
            "knn",
            format!("k = {k} must be in 1..={n} (the number of cells)"),
        ));
    }
    if n > u32::MAX as usize {
        return Err(Error::invalid(
            "embedding",
            format!("{n} cells exceed the 32-bit cell index"),
        ));
    }
    for i in 0..n {
        if let Some(j) = x.row(i).iter().position(|v| !v.to_f64().is_finite()) {
            return Err(Error::invalid(
                "embedding",
                format!("cell {i}, dimension {j} is not finite"),
            ));
        }
    }
    Ok(())
}

/// The bandwidth of each cell among its first k neighbours: the distance to its floor(k/2)-th
/// nearest other cell at a non-zero distance; when fewer such neighbours exist, the farthest of
/// them; 1 when all of the cell's neighbours sit on it (an isolated stack of duplicates, whose
/// weights are then exp(0)).
pub fn bandwidths(nbrs: &[Vec<(u32, f64)>], k: usize) -> Vec<f64> {
    let want = (k / 2).max(1);
    nbrs.iter()
        .enumerate()
        .map(|(i, row)| {
            let others: Vec<f64> = row[..k.min(row.len())]
                .iter()
                .filter(|(j, d2)| *j as usize != i && *d2 > 0.0)
                .map(|(_, d2)| d2.sqrt())
                .collect();
            match others.len() {
                0 => 1.0,
                l if l >= want => others[want - 1],
                l => others[l - 1],
            }
        })
        .collect()
}

/// The kernel M (n x n CSR, symmetric, with self-loops) of an n x d embedding.
pub fn kernel<T: Scalar>(x: &Dense<T>, k: usize, sym: Symmetrize) -> Result<Csr<f64>> {
    kernel_from_knn(&knn(x, k)?, k, sym)
}

/// The kernel from neighbour lists already computed (each sorted as [`knn`] returns them, the
/// first `k` entries used), so one kNN pass can serve several neighbourhood sizes.
pub fn kernel_from_knn(all: &[Vec<(u32, f64)>], k: usize, sym: Symmetrize) -> Result<Csr<f64>> {
    let n = all.len();
    let nbrs: Vec<&[(u32, f64)]> = all.iter().map(|r| &r[..k.min(r.len())]).collect();
    let sigma = bandwidths(all, k);
    // Directed edges i -> j (j among i's neighbours), with squared distances.
    let has = |i: usize, j: usize| nbrs[i].iter().any(|&(c, _)| c as usize == j);
    let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        rows.push(i);
        cols.push(i);
        vals.push(1.0);
        for &(j, d2) in nbrs[i] {
            let j = j as usize;
            if j == i {
                continue;
            }
            let w = (-d2 / (sigma[i] * sigma[j])).exp();
            let mutual = has(j, i);
            match sym {
                Symmetrize::Intersection if mutual => {
                    // Added from both sides: once here for (i, j).
                    rows.push(i);
                    cols.push(j);
                    vals.push(w);
                }
                Symmetrize::Intersection => {}
                Symmetrize::Union => {
                    rows.push(i);
                    cols.push(j);
                    vals.push(w);
                    if !mutual {
                        rows.push(j);
                        cols.push(i);
                        vals.push(w);
                    }
                }
            }
        }
    }
    Csr::from_triplets(n, n, &rows, &cols, &vals)
}

#[cfg(test)]
mod tests {
    use super::knn;
    use crate::simd::WIDEST;
    use crate::solvers::seacells::fit::gaussian_mixture;
    use std::sync::atomic::Ordering;

    /// The kNN's distance tiles at every vector width: the same lists bit for bit.
    #[test]
    fn knn_is_the_same_at_every_width() {
        let (x, _) = gaussian_mixture(700, 9, 5, 2);
        WIDEST.store(0, Ordering::Relaxed);
        let base = knn(&x, 20).unwrap();
        for widest in [1, 2] {
            WIDEST.store(widest, Ordering::Relaxed);
            let got = knn(&x, 20).unwrap();
            WIDEST.store(2, Ordering::Relaxed);
            assert!(got == base, "widest {widest}");
        }
    }
}
