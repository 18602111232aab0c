//! Synthetic single-cell-like embeddings for tests and benchmarks. Gaussian mixtures
//! (`fit::gaussian_mixture`) fall apart into one graph piece per cluster; SEACells is used on
//! continuous manifolds, differentiation trajectories that branch, which these generate.

use crate::matrix::{Dense, Rng};

/// `n` cells on a tree of trajectories in `d` dimensions: a trunk that splits into `branches`
/// arms (at least 2), each a curved path, every cell at a uniform pseudotime on one segment,
/// with Gaussian noise of 1 around its path point in every dimension. The paths live in a
/// latent space of `branches + 1` dimensions (one direction per segment, so arms part ways),
/// scaled to lengths of about 60 noise units and mapped into `d` dimensions by a random linear
/// map with unit columns. Labels: 0 for the trunk, 1..=branches for the arms. Deterministic for
/// a seed.
pub fn branching_trajectories(
    n: usize,
    d: usize,
    branches: usize,
    seed: u64,
) -> (Dense<f64>, Vec<usize>) {
    let mut rng = Rng::new(seed);
    let b = branches.max(2);
    let latent = b + 1;
    let gauss = |rng: &mut Rng| {
        let (u1, u2) = (rng.uniform().max(1e-300), rng.uniform());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    };
    // A d x latent map with unit columns, so each latent direction keeps its length.
    let mut map = vec![0.0; d * latent];
    for j in 0..latent {
        let col: Vec<f64> = (0..d).map(|_| gauss(&mut rng)).collect();
        let norm = col.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-12);
        for i in 0..d {
            map[i * latent + j] = col[i] / norm;
        }
    }
    // Segment 0 (trunk) from the origin along direction 0; arm k from the trunk's end along
    // direction k, bending towards the trunk's direction by a random amount.
    let length = 60.0;
    let bend: Vec<f64> = (0..=b).map(|_| rng.range_f64(-0.5, 0.5)).collect();
    let point = |seg: usize, t: f64| -> Vec<f64> {
        let mut p = vec![0.0; latent];
        if seg == 0 {
            p[0] = length * t;
        } else {
            p[0] = length + length * bend[seg] * t * t;
            p[seg] = length * t;
        }
        p
    };
    let mut data = Vec::with_capacity(n * d);
    let mut labels = Vec::with_capacity(n);
    for i in 0..n {
        // About a third of the cells on the trunk, the rest shared by the arms.
        let seg = if i % 3 == 0 { 0 } else { 1 + (i / 3) % b };
        labels.push(seg);
        let p = point(seg, rng.uniform());
        for r in 0..d {
            let mut v = gauss(&mut rng);
            for (j, pj) in p.iter().enumerate() {
                v += map[r * latent + j] * pj;
            }
            data.push(v);
        }
    }
    (Dense::from_rows(n, d, data).expect("n x d fits"), labels)
}
