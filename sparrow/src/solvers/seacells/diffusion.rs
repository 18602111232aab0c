//! The diffusion map SEACells initialises from (as palantir's `run_diffusion_maps` and
//! `determine_multiscale_space`): on a kNN graph of 30 (the cell included), Gaussian weights
//! exp(-d_ij / sigma_i) with sigma_i the distance to the 10th nearest other cell, the kernel
//! W + W^T, the Markov matrix T = D^-1 (W + W^T), its leading eigenvectors (unit norm), and
//! components 1.. each scaled by lambda / (1 - lambda).
//!
//! T's eigenvectors come from the symmetric S = D^-1/2 (W + W^T) D^-1/2 (v = D^-1/2 u) by
//! subspace iteration with Rayleigh-Ritz steps; only n x (a few more than the wanted count)
//! dense vectors are held.

use faer::{Mat, Side};
use rayon::prelude::*;

use crate::matrix::{Csr, Rng};
use crate::{Error, Result};

/// Leading eigenpairs of the diffusion operator, eigenvalues descending.
#[derive(Clone, Debug)]
pub struct Diffusion {
    /// Eigenvalues, descending.
    pub values: Vec<f64>,
    /// Unit-norm eigenvectors, one per eigenvalue, each of length n.
    pub vectors: Vec<Vec<f64>>,
    /// Subspace iterations taken.
    pub iterations: usize,
}

/// The symmetric diffusion kernel W + W^T on the first `k` entries of neighbour lists as `knn`
/// returns them (self first, squared distances): W_ij = exp(-d_ij / sigma_i), sigma_i the
/// distance to the `adaptive`-th nearest other cell (the farthest when there are fewer; 1 when
/// it is 0).
pub fn diffusion_kernel(nbrs: &[Vec<(u32, f64)>], k: usize, adaptive: usize) -> Result<Csr<f64>> {
    let n = nbrs.len();
    let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
    for (i, row) in nbrs.iter().enumerate() {
        let others: Vec<(usize, f64)> = row[..k.min(row.len())]
            .iter()
            .filter(|(j, _)| *j as usize != i)
            .map(|&(j, d2)| (j as usize, d2.sqrt()))
            .collect();
        if others.is_empty() {
            continue;
        }
        let s = others[(adaptive.max(1) - 1).min(others.len() - 1)].1;
        let s = if s > 0.0 { s } else { 1.0 };
        for &(j, d) in &others {
            let w = (-d / s).exp();
            r.extend([i, j]);
            c.extend([j, i]);
            v.extend([w, w]);
        }
    }
    Csr::from_triplets(n, n, &r, &c, &v)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Orthonormalises the columns in place (modified Gram-Schmidt, twice); a column that
/// vanishes is replaced by a fresh random one.
fn orthonormalize(q: &mut [Vec<f64>], rng: &mut Rng) {
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

/// The `count` leading eigenpairs of D^-1 W for a symmetric non-negative W, eigenvectors of
/// unit norm; deterministic for a seed.
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
    let (cols, vals) = (w.col_idx(), w.values());
    // (S + I) / 2: the same eigenvectors, eigenvalues in [0, 1], so the wanted ones lead.
    let apply = |x: &[f64]| -> Vec<f64> {
        (0..n)
            .into_par_iter()
            .map(|i| {
                let s: f64 = w
                    .row_range(i)
                    .map(|p| vals[p] * dis[cols[p] as usize] * x[cols[p] as usize])
                    .sum();
                0.5 * (dis[i] * s + x[i])
            })
            .collect()
    };
    let b = (count + 8).min(n);
    let mut rng = Rng::new(seed ^ 0x5EAC_E115);
    let mut q: Vec<Vec<f64>> = (0..b)
        .map(|_| (0..n).map(|_| rng.uniform() - 0.5).collect())
        .collect();
    orthonormalize(&mut q, &mut rng);
    let (mut theta, mut ritz) = (Vec::new(), Vec::new());
    let mut iterations = 0;
    for it in 1..=2000 {
        let aq: Vec<Vec<f64>> = q.iter().map(|c| apply(c)).collect();
        if it % 10 == 0 || it == 2000 {
            // Rayleigh-Ritz on span(Q), and the residuals of the wanted Ritz pairs.
            let h = Mat::<f64>::from_fn(b, b, |i, j| dot(&q[i], &aq[j]));
            let e = h
                .self_adjoint_eigen(Side::Lower)
                .map_err(|e| Error::device("eigendecomposition (faer)", format!("{e:?}")))?;
            let order: Vec<usize> = (0..b).rev().collect();
            theta = order.iter().map(|&k| e.S()[k]).collect();
            let u = e.U();
            let comb = |basis: &[Vec<f64>], k: usize| -> Vec<f64> {
                let mut v = vec![0.0; n];
                for (i, col) in basis.iter().enumerate() {
                    let c = u[(i, k)];
                    v.iter_mut().zip(col).for_each(|(x, y)| *x += c * y);
                }
                v
            };
            ritz = order.iter().map(|&k| comb(&q, k)).collect::<Vec<_>>();
            let worst = (0..count)
                .map(|j| {
                    let av = comb(&aq, order[j]);
                    av.iter()
                        .zip(&ritz[j])
                        .map(|(a, v)| (a - theta[j] * v).powi(2))
                        .sum::<f64>()
                        .sqrt()
                })
                .fold(0.0, f64::max);
            iterations = it;
            if worst < 1e-6 {
                break;
            }
            q = ritz.clone();
            let aq2: Vec<Vec<f64>> = q.iter().map(|c| apply(c)).collect();
            q = aq2;
        } else {
            q = aq;
        }
        orthonormalize(&mut q, &mut rng);
    }
    let mut values = Vec::with_capacity(count);
    let mut vectors = Vec::with_capacity(count);
    for j in 0..count {
        values.push(2.0 * theta[j] - 1.0);
        let mut v: Vec<f64> = ritz[j].iter().zip(&dis).map(|(u, d)| u * d).collect();
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
/// least 1e-9: a disconnected graph has several eigenvalues of 1).
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
