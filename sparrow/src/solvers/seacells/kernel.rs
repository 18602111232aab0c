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
    // The embedding in panels of eight cells, each panel dimension-major (eight values per
    // dimension, zeros past the last cell): a tile's distances then vectorise across a panel
    // of cells and reuse each loaded value for a panel of rows, with every load contiguous,
    // while each pair's sum still runs in dimension order, as a plain loop would.
    let np = n.div_ceil(PANEL);
    let mut panels = vec![0.0f64; np * d * PANEL];
    for i in 0..n {
        let at = (i / PANEL) * d * PANEL + i % PANEL;
        for (c, v) in x.row(i).iter().enumerate() {
            panels[at + c * PANEL] = v.to_f64();
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
    let panel = |i0: usize, len: usize| &panels[i0 * d..(i0 + len.next_multiple_of(PANEL)) * d];
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
            for jb in ib..nb {
                let j0 = jb * KNN_TILE;
                let len = KNN_TILE.min(n - j0);
                block_distances(acc, tr, panel(r0, nr), panel(j0, len), d);
                let mut mine = lists[ib].lock().unwrap_or_else(|e| e.into_inner());
                offer_tile(&mut mine, acc, r0, j0, len, jb == ib);
                drop(mine);
                if jb != ib {
                    // The tile's columns, the rows of block jb.
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
/// Squared distances of the panels of rows `rows` to the panels of cells `cells` (both
/// panels of [`PANEL`] cells, `d` values each, dimension-major), each pair summed in dimension
/// order: row r, cell j into `acc` at `r * KNN_TILE + j` and into `tr` at `j * KNN_TILE + r`.
fn block_distances(acc: &mut [f64], tr: &mut [f64], rows: &[f64], cells: &[f64], d: usize) {
    // A panel of cells against a panel of rows at a time, one vector of the rows' sums per
    // cell held in registers over the dimensions, so a loaded value of the rows serves eight
    // cells and nothing is stored until the sums are done; the tile's panels of rows stay in
    // L1 while every panel of cells passes over them.
    let w = d * PANEL;
    if w == 0 {
        acc.fill(0.0);
        tr.fill(0.0);
        return;
    }
    for (jp, pj) in cells.chunks_exact(w).enumerate() {
        for (ip, pi) in rows.chunks_exact(w).enumerate() {
            // Eight named sums, not an array the loop vectoriser would turn across cells
            // (gathering and scattering the sums through memory at every dimension).
            let [mut s0, mut s1, mut s2, mut s3, mut s4, mut s5, mut s6, mut s7] =
                [[0.0f64; PANEL]; PANEL];
            for (xv, xa) in pj.chunks_exact(PANEL).zip(pi.chunks_exact(PANEL)) {
                let xv: &[f64; PANEL] = xv.try_into().expect("a panel's dimension");
                let xa: &[f64; PANEL] = xa.try_into().expect("a panel's dimension");
                add_squares(&mut s0, xa, xv[0]);
                add_squares(&mut s1, xa, xv[1]);
                add_squares(&mut s2, xa, xv[2]);
                add_squares(&mut s3, xa, xv[3]);
                add_squares(&mut s4, xa, xv[4]);
                add_squares(&mut s5, xa, xv[5]);
                add_squares(&mut s6, xa, xv[6]);
                add_squares(&mut s7, xa, xv[7]);
            }
            let s = [s0, s1, s2, s3, s4, s5, s6, s7];
            for (jj, sj) in s.iter().enumerate() {
                let j = jp * PANEL + jj;
                let at = j * KNN_TILE + ip * PANEL;
                tr[at..at + PANEL].copy_from_slice(sj);
                for (r, &x) in sj.iter().enumerate() {
                    acc[(ip * PANEL + r) * KNN_TILE + j] = x;
                }
            }
        }
    }
}
}

/// s[r] += (a[r] - b)^2.
#[inline(always)]
fn add_squares(s: &mut [f64; PANEL], a: &[f64; PANEL], b: f64) {
    for (x, &a) in s.iter_mut().zip(a) {
        let t = a - b;
        *x += t * t;
    }
}

/// Rows and cells per (square) tile of the CPU kNN's distance computation, and cells per panel
/// (the register tile is a panel of rows by a panel of cells).
const KNN_TILE: usize = 64;
const PANEL: usize = 8;

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
    // The edges are handed over twice instead of stored (see [`Csr::from_triplet_stream`]).
    Csr::from_triplet_stream(n, n, |put| {
        for i in 0..n {
            put(i, i, 1.0);
            for &(j, d2) in nbrs[i] {
                let j = j as usize;
                if j == i {
                    continue;
                }
                let w = (-d2 / (sigma[i] * sigma[j])).exp();
                let mutual = has(j, i);
                match sym {
                    // Added from both sides: once here for (i, j).
                    Symmetrize::Intersection if mutual => put(i, j, w),
                    Symmetrize::Intersection => {}
                    Symmetrize::Union => {
                        put(i, j, w);
                        if !mutual {
                            put(j, i, w);
                        }
                    }
                }
            }
        }
    })
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
