//! Test problems: Gaussian sensing matrices with entries N(0, 1/m) and K-sparse signals with
//! random support and +-1 or Gaussian entries, deterministic for a seed.

use crate::matrix::{Dense, Rng};
use crate::Result;

fn gauss(rng: &mut Rng) -> f64 {
    // Box-Muller; 1 - u keeps the logarithm finite.
    let (u, v) = (1.0 - rng.uniform(), rng.uniform());
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// An m x n matrix with independent N(0, 1/m) entries.
pub fn gaussian_phi(m: usize, n: usize, seed: u64) -> Result<Dense<f64>> {
    let mut rng = Rng::new(seed);
    let s = 1.0 / (m as f64).sqrt();
    Dense::from_rows(m, n, (0..m * n).map(|_| s * gauss(&mut rng)).collect())
}

/// `batch` K-sparse signals of length n as the columns of an n x batch matrix: supports drawn
/// uniformly, entries +-1 (`signs`) or N(0, 1).
pub fn sparse_signals(
    n: usize,
    k: usize,
    batch: usize,
    signs: bool,
    seed: u64,
) -> Result<Dense<f64>> {
    let mut rng = Rng::new(seed);
    let mut x = Dense::filled(n, batch, batch, 0.0)?;
    for b in 0..batch {
        let mut chosen = 0;
        while chosen < k.min(n) {
            let j = rng.below(n as u64) as usize;
            if x.get(j, b) == 0.0 {
                let v = if signs {
                    if rng.next_u64() & 1 == 0 {
                        1.0
                    } else {
                        -1.0
                    }
                } else {
                    let g = gauss(&mut rng);
                    if g == 0.0 {
                        1.0
                    } else {
                        g
                    }
                };
                x.data_mut()[j * batch + b] = v;
                chosen += 1;
            }
        }
    }
    Ok(x)
}

/// `Phi X` for dense matrices (the measurements of a batch).
pub fn measure(phi: &Dense<f64>, x: &Dense<f64>) -> Result<Dense<f64>> {
    let (m, n, nb) = (phi.nrows(), phi.ncols(), x.ncols());
    let mut y = Dense::filled(m, nb, nb, 0.0)?;
    for i in 0..m {
        for j in 0..n {
            let a = phi.get(i, j);
            if a != 0.0 {
                for b in 0..nb {
                    y.data_mut()[i * nb + b] += a * x.get(j, b);
                }
            }
        }
    }
    Ok(y)
}
