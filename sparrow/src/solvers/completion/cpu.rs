//! The CPU backend: a full thin SVD of Y each iteration (faer).

use faer::Mat;

use super::request::completion;
use super::{Complete, Completion};
use crate::matrix::Csr;
use crate::solvers::cs::prox::sv_shrink;
use crate::solvers::cs::StopReason;
use crate::{memory, Error, Result};

impl Complete {
    /// Completes the matrix whose observed entries are the stored entries of `observed`, on
    /// the CPU.
    pub fn run(&self, observed: &Csr<f64>) -> Result<Completion> {
        let (tau, delta, m_norm) = self.resolve(observed)?;
        let (m, n) = (observed.nrows(), observed.ncols());
        // Y and X, the SVD's copy of Y and its U and V, and the returned matrix.
        let what = format!("a {m} x {n} completion on the CPU (dense Y, X and their SVD)");
        let bytes = [
            memory::bytes_of(&what, &[4, m, n], 8)?,
            memory::bytes_of(&what, &[m.saturating_add(n), m.min(n)], 8)?,
        ];
        memory::ensure_fits(&what, bytes[0].saturating_add(bytes[1]))?;
        let mut y = Mat::<f64>::zeros(m, n);
        let mut x = Mat::<f64>::zeros(m, n);
        let mut rank = 0;
        let mut rel = 1.0;
        for it in 1..=self.max_iter {
            let svd = y
                .thin_svd()
                .map_err(|e| Error::device("SVD (faer)", format!("{e:?}")))?;
            let sigma: Vec<f64> = (0..m.min(n)).map(|i| svd.S()[i]).collect();
            let (s, _) = sv_shrink(&sigma, tau);
            rank = s.iter().take(self.rank_hint).filter(|&&v| v > 0.0).count();
            let (u, v) = (svd.U(), svd.V());
            x = Mat::from_fn(m, n, |i, j| {
                (0..rank).map(|r| u[(i, r)] * s[r] * v[(j, r)]).sum()
            });
            let mut res = 0.0;
            for i in 0..m {
                for p in observed.row_range(i) {
                    let j = observed.col_idx()[p] as usize;
                    let d = observed.values()[p] - x[(i, j)];
                    res += d * d;
                    y[(i, j)] += delta * d;
                }
            }
            rel = res.sqrt() / m_norm.max(f64::MIN_POSITIVE);
            if let Some(e) = self.diverged(observed, it, rel, tau, delta) {
                return Err(e);
            }
            if rel <= self.tol {
                return finish(x, rank, it, StopReason::Residual, rel);
            }
        }
        finish(x, rank, self.max_iter, StopReason::MaxIterations, rel)
    }
}

/// The completion from X (CPU), checked finite.
fn finish(
    x: Mat<f64>,
    rank: usize,
    iterations: usize,
    stop: StopReason,
    rel: f64,
) -> Result<Completion> {
    let (m, n) = (x.nrows(), x.ncols());
    let data: Vec<f64> = (0..m)
        .flat_map(|i| (0..n).map(move |j| (i, j)))
        .map(|(i, j)| x[(i, j)])
        .collect();
    completion(m, n, data, rank, iterations, stop, rel)
}
