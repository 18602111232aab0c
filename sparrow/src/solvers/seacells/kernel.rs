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
    let n = x.nrows();
    let rows: Vec<Vec<f64>> = (0..n)
        .map(|i| x.row(i).iter().map(|v| v.to_f64()).collect())
        .collect();
    Ok((0..n)
        .into_par_iter()
        .map(|i| {
            let xi = &rows[i];
            let mut dist: Vec<(f64, u32)> = rows
                .iter()
                .enumerate()
                .map(|(j, xj)| {
                    (
                        xi.iter()
                            .zip(xj)
                            .map(|(a, b)| (a - b) * (a - b))
                            .sum::<f64>(),
                        j as u32,
                    )
                })
                .collect();
            // The cell itself first: distance 0 and the self index win over other zeros.
            dist[i].0 = -1.0;
            let cmp = |a: &(f64, u32), b: &(f64, u32)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
            if k < n {
                dist.select_nth_unstable_by(k - 1, cmp);
                dist.truncate(k);
            }
            dist.sort_unstable_by(cmp);
            dist[0].0 = 0.0;
            // A fresh vector of k: collecting in place would keep the n-entry allocation of
            // every row alive (n^2 memory).
            let mut row = Vec::with_capacity(k);
            row.extend(dist.iter().map(|&(d2, j)| (j, d2)));
            row
        })
        .collect())
}

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
