//! Stage 1 of SEACells: exact k nearest neighbours (the cell itself included) in Euclidean
//! distance, bandwidths sigma_i = the distance to the floor(k/2)-th nearest other cell at a
//! non-zero distance, the kNN graph made symmetric by union or intersection with self-loops, and
//! weights M_ij = exp(-||x_i - x_j||^2 / (sigma_i sigma_j)) on its edges.
//!
//! Cost: the kNN is exact and brute force, O(n^2 d) with rows in parallel and O(n k) memory;
//! nothing of size n x n is held.

use std::sync::Mutex;

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
    // Each pair's distance is computed once, in the tile of the lower row block, and offered
    // to both cells: (a - b)^2 is (b - a)^2 bit for bit, so each list is what a pass over all
    // cells would give, for half the distance work.
    let nb = n.div_ceil(KNN_TILE);
    let lists: Vec<Mutex<Vec<Nearest>>> = (0..nb)
        .map(|b| {
            let rows = KNN_TILE.min(n - b * KNN_TILE);
            Mutex::new((0..rows).map(|_| Nearest::new(k)).collect())
        })
        .collect();
    (0..nb).into_par_iter().for_each_init(
        || {
            (
                vec![0.0f64; KNN_TILE * KNN_TILE],
                vec![0.0f64; KNN_TILE * KNN_TILE],
            )
        },
        |(acc, tr), ib| {
            let r0 = ib * KNN_TILE;
            let nr = KNN_TILE.min(n - r0);
            let xi: Vec<Vec<f64>> = (0..nr)
                .map(|r| (0..d).map(|c| xt[c * n + r0 + r]).collect())
                .collect();
            for jb in ib..nb {
                let j0 = jb * KNN_TILE;
                let len = KNN_TILE.min(n - j0);
                block_distances(acc, &xt, &xi, n, j0, len);
                let mut mine = lists[ib].lock().unwrap_or_else(|e| e.into_inner());
                offer_tile(&mut mine, acc, r0, j0, len, jb == ib);
                drop(mine);
                if jb != ib {
                    // The tile's columns become the rows of block jb.
                    for (jj, dst) in tr.chunks_exact_mut(KNN_TILE).enumerate().take(len) {
                        for (r, x) in dst.iter_mut().enumerate().take(nr) {
                            *x = acc[r * KNN_TILE + jj];
                        }
                    }
                    let mut theirs = lists[jb].lock().unwrap_or_else(|e| e.into_inner());
                    offer_tile(&mut theirs, tr, j0, r0, nr, false);
                }
            }
        },
    );
    Ok(lists
        .into_iter()
        .flat_map(|l| l.into_inner().unwrap_or_else(|e| e.into_inner()))
        .map(Nearest::finish)
        .collect())
}

/// Offers row r of `tile` (cells `j0..j0 + len` at `r * KNN_TILE`) to cell `r0 + r`'s
/// list; `has_self` when the tile holds each row's own cell.
fn offer_tile(
    lists: &mut [Nearest],
    tile: &[f64],
    r0: usize,
    j0: usize,
    len: usize,
    has_self: bool,
) {
    for (r, near) in lists.iter_mut().enumerate() {
        let i = r0 + r;
        let row = &tile[r * KNN_TILE..r * KNN_TILE + len];
        for (q, run) in row.chunks(8).enumerate() {
            // Runs of eight cells all farther than the bound are passed over at once (the
            // bound's own distance and index need the full comparison).
            if !has_self && run.iter().fold(true, |all, &x| all & (x > near.far())) {
                continue;
            }
            for (jj, &d2) in run.iter().enumerate() {
                near.offer(i, j0 + q * 8 + jj, d2);
            }
        }
    }
}

/// One cell's nearest cells so far: candidates, trimmed to the k best whenever they reach 2k;
/// a cell enters only when it beats the k-th best so far (distance, then index).
struct Nearest {
    cand: Vec<(f64, u32)>,
    bound: Option<(f64, u32)>,
    k: usize,
}

impl Nearest {
    fn new(k: usize) -> Self {
        Nearest {
            cand: Vec::new(),
            bound: None,
            k,
        }
    }

    /// The bound's distance (+inf before there is one).
    #[inline]
    fn far(&self) -> f64 {
        self.bound.map_or(f64::INFINITY, |b| b.0)
    }

    /// Cell j at squared distance d2 from this cell i.
    #[inline]
    fn offer(&mut self, i: usize, j: usize, d2: f64) {
        // The cell itself first: distance 0 and the self index win over other zeros.
        let e = (if j == i { -1.0 } else { d2 }, j as u32);
        if self
            .bound
            .is_some_and(|b| order(&e, &b) != std::cmp::Ordering::Less)
        {
            return;
        }
        self.cand.push(e);
        if self.cand.len() >= 2 * self.k {
            self.cand.select_nth_unstable_by(self.k - 1, order);
            self.cand.truncate(self.k);
            self.bound = Some(self.cand[self.k - 1]);
        }
    }

    /// The k best as (cell, squared distance), ascending, the cell itself first at 0.
    fn finish(self) -> Vec<(u32, f64)> {
        let (mut c, k) = (self.cand, self.k);
        if c.len() > k {
            c.select_nth_unstable_by(k - 1, order);
            c.truncate(k);
        }
        c.sort_unstable_by(order);
        c[0].0 = 0.0;
        c.iter().map(|&(d2, j)| (j, d2)).collect()
    }
}

/// Distance, then index.
fn order(a: &(f64, u32), b: &(f64, u32)) -> std::cmp::Ordering {
    a.0.total_cmp(&b.0).then(a.1.cmp(&b.1))
}

crate::simd::multiversion! {
/// Squared distances of the rows `xi` (each d values) to cells `j0..j0 + len` into `acc`
/// (row r at `r * KNN_TILE`), each pair summed in dimension order.
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
                let at = (g0 + r) * KNN_TILE + jc;
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
            acc[r * KNN_TILE + j] = x;
        }
    }
}
}

/// Rows and cells per (square) tile of the CPU kNN's distance computation, and rows per
/// register tile within it.
const KNN_TILE: usize = 64;
const TILE_ROWS: usize = 8;

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

    /// The naive kNN: every pair's distance summed in dimension order, all cells sorted by
    /// (distance, index) with the cell itself first.
    #[test]
    fn knn_is_the_naive_scan() {
        let (mut x, _) = gaussian_mixture(700, 6, 4, 3);
        let d = x.ncols();
        // Exact duplicates, so ties by index are exercised across tiles.
        for (dst, src) in [(5usize, 300usize), (640, 300), (64, 63), (699, 0)] {
            let (ld, row) = (x.ld(), x.row(src).to_vec());
            x.data_mut()[dst * ld..dst * ld + d].copy_from_slice(&row);
        }
        let n = x.nrows();
        // k = 1 trims at every second offer; k = n never trims.
        for k in [1, 15, n] {
            let got = knn(&x, k).unwrap();
            for (i, got_i) in got.iter().enumerate() {
                let mut all: Vec<(f64, u32)> = (0..n)
                    .map(|j| {
                        let mut s = 0.0;
                        for c in 0..d {
                            let t = x.row(i)[c] - x.row(j)[c];
                            s += t * t;
                        }
                        (if i == j { -1.0 } else { s }, j as u32)
                    })
                    .collect();
                all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                all[0].0 = 0.0;
                let want: Vec<(u32, f64)> = all[..k].iter().map(|&(s, j)| (j, s)).collect();
                assert_eq!(got_i, &want, "k {k}, cell {i}");
            }
        }
    }

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
