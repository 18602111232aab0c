//! Matrix completion by singular value thresholding (Cai, Candes and Shen, 2010): from the
//! observed entries of a low-rank matrix, iterate X = D_tau(Y), Y += delta P_Omega(M - X),
//! where D_tau shrinks the singular values by tau.
//!
//! Defaults from the paper: tau = 5 sqrt(m n) times the RMS of the observed entries (the paper's
//! 5 sqrt(m n) assumes entries of unit size; scaling keeps the default independent of units),
//! delta = 1.2 m n / |Omega|; stop when
//! ||P_Omega(X - M)||_F <= tol ||P_Omega(M)||_F (tol 1e-4) or after max_iter (500) iterations.
//! The CPU backend takes a full thin SVD each iteration (faer), O(m n min(m, n)) per step:
//! for matrices up to a few thousand on a side. The GPU backend ([`super::svt_gpu`]) finds the
//! leading triplets by a randomized range finder with cuBLAS GEMMs. The rank hint caps the
//! rank kept.

use faer::Mat;

use super::prox::sv_shrink;
use super::StopReason;
use crate::matrix::{Csr, Dense};
use crate::ops::{Backend, Plan};
use crate::{Device, Error, Result};

/// A completion request.
#[derive(Clone, Debug)]
pub struct Complete {
    /// Rank cap (the hint): at most this many singular triplets are kept.
    pub rank_hint: usize,
    /// Shrinkage; None for 5 sqrt(m n) times the RMS of the observed entries.
    pub tau: Option<f64>,
    /// Step; None for 1.2 m n / |Omega|.
    pub delta: Option<f64>,
    /// Iteration cap.
    pub max_iter: usize,
    /// Relative tolerance on the observed entries.
    pub tol: f64,
}

/// The completed matrix and how the iteration ended.
#[derive(Clone, Debug)]
pub struct Completion {
    /// The estimate, m x n.
    pub x: Dense<f64>,
    /// Its rank (singular values kept in the last step).
    pub rank: usize,
    /// Iterations run.
    pub iterations: usize,
    /// Why it stopped.
    pub stop: StopReason,
    /// ||P_Omega(X - M)||_F / ||P_Omega(M)||_F at the end.
    pub relative_residual: f64,
}

impl Complete {
    /// A request with the documented defaults.
    pub fn new(rank_hint: usize) -> Self {
        Complete {
            rank_hint,
            tau: None,
            delta: None,
            max_iter: 500,
            tol: 1e-4,
        }
    }

    /// Completes on `device` (the GPU's randomized SVD, or the CPU's full one), with the plan.
    pub fn run_on(&self, device: &Device, observed: &Csr<f64>) -> Result<(Completion, Plan)> {
        let (tau, delta, m_norm) = self.resolve(observed)?;
        match device {
            Device::Cuda(gpu) => Ok((
                super::svt_gpu::run(gpu, self, observed, tau, delta, m_norm)?,
                Plan {
                    op: "complete",
                    backend: Backend::Cuda,
                    kernel: Some("cuBLAS GEMMs + cs_svt_observe_f64".into()),
                    shape: None,
                    reason: format!(
                        "GPU: Y dense in f64, its leading {} singular triplets by a randomized range finder (two power iterations, host QR and l x n SVD), X by one GEMM, the observed-entry step by one kernel",
                        self.rank_hint
                    ),
                },
            )),
            Device::Cpu => Ok((
                self.run(observed)?,
                Plan {
                    op: "complete",
                    backend: Backend::Cpu,
                    kernel: None,
                    shape: None,
                    reason: "the device is the CPU: a full thin SVD per iteration (faer)".into(),
                },
            )),
        }
    }

    /// Checks the request and resolves tau, delta and ||P_Omega(M)||_F.
    fn resolve(&self, observed: &Csr<f64>) -> Result<(f64, f64, f64)> {
        let (m, n) = (observed.nrows(), observed.ncols());
        let omega = observed.nnz();
        if m == 0 || n == 0 || omega == 0 {
            return Err(Error::invalid("observed", "has no observed entries"));
        }
        if self.rank_hint == 0 || self.rank_hint > m.min(n) {
            return Err(Error::invalid(
                "rank hint",
                format!("{} must be in 1..={}", self.rank_hint, m.min(n)),
            ));
        }
        if let Some(p) = observed.values().iter().position(|v| !v.is_finite()) {
            return Err(Error::invalid(
                "observed",
                format!("entry {p} is not finite"),
            ));
        }
        if self.max_iter == 0 || !(self.tol.is_finite() && self.tol >= 0.0) {
            return Err(Error::invalid(
                "max_iter/tol",
                "need at least one iteration and a finite tolerance",
            ));
        }
        let m_norm = observed.values().iter().map(|v| v * v).sum::<f64>().sqrt();
        let rms = m_norm / (omega as f64).sqrt();
        let tau = self.tau.unwrap_or(5.0 * ((m * n) as f64).sqrt() * rms);
        let delta = self.delta.unwrap_or(1.2 * (m * n) as f64 / omega as f64);
        if !(tau > 0.0 && delta > 0.0) {
            return Err(Error::invalid("tau/delta", "must be positive"));
        }
        Ok((tau, delta, m_norm))
    }

    /// Completes the matrix whose observed entries are the stored entries of `observed`, on
    /// the CPU.
    pub fn run(&self, observed: &Csr<f64>) -> Result<Completion> {
        let (tau, delta, m_norm) = self.resolve(observed)?;
        let (m, n) = (observed.nrows(), observed.ncols());
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
            if rel <= self.tol {
                return Ok(self.finish(x, rank, it, StopReason::Residual, rel));
            }
        }
        Ok(self.finish(x, rank, self.max_iter, StopReason::MaxIterations, rel))
    }

    fn finish(
        &self,
        x: Mat<f64>,
        rank: usize,
        iterations: usize,
        stop: StopReason,
        rel: f64,
    ) -> Completion {
        let (m, n) = (x.nrows(), x.ncols());
        let data = (0..m)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .map(|(i, j)| x[(i, j)])
            .collect();
        Completion {
            x: Dense::from_rows(m, n, data).expect("m x n elements"),
            rank,
            iterations,
            stop,
            relative_residual: rel,
        }
    }
}
