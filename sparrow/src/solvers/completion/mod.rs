//! Matrix completion by singular value thresholding (Cai, Candes and Shen, 2010): from the
//! observed entries of a low-rank matrix, iterate X = D_tau(Y), Y += delta P_Omega(M - X),
//! where D_tau shrinks the singular values by tau.
//!
//! Defaults from the paper: tau = 5 sqrt(m n) times the RMS of the observed entries (the paper's
//! 5 sqrt(m n) assumes entries of unit size; scaling keeps the default independent of units),
//! delta = 1.2 m n / |Omega|; stop when
//! ||P_Omega(X - M)||_F <= tol ||P_Omega(M)||_F (tol 1e-4) or after max_iter (500) iterations.
//! SVT is guaranteed to converge for a step delta in (0, 2) (Cai, Candes and Shen, Theorem
//! 4.1), so a step given explicitly must lie there; the default step exceeds 2 when fewer than
//! 60% of the entries are observed, as the paper recommends, and converges with the default
//! threshold. A residual on the observed entries past [`DIVERGENCE_FACTOR`](crate::solvers::cs::DIVERGENCE_FACTOR) times their norm,
//! or a non-finite one, ends the run in [`Error::Numerical`](crate::Error::Numerical) naming the iteration, the
//! threshold and the step; the dense matrices a completion needs are checked against the
//! machine's memory before any is allocated.
//! The CPU backend takes a full thin SVD each iteration (faer), O(m n min(m, n)) per step:
//! for matrices up to a few thousand on a side. The GPU backend (`gpu.rs`) finds the
//! leading triplets by a randomized range finder with cuBLAS GEMMs. The rank hint caps the
//! rank kept.
//!
//! Files: `request` (the request, its checks and defaults, the result), `cpu` (the full SVD
//! iteration), `gpu` (the randomized one with cuBLAS).

mod cpu;
mod gpu;
mod request;

pub use request::{Complete, Completion};

use crate::matrix::Csr;
use crate::ops::{Backend, Plan};
use crate::{Device, Result};

impl Complete {
    /// Completes on `device` (the GPU's randomized SVD, or the CPU's full one), with the plan.
    pub fn run_on(&self, device: &Device, observed: &Csr<f64>) -> Result<(Completion, Plan)> {
        let (tau, delta, m_norm) = self.resolve(observed)?;
        match device {
            Device::Cuda(gpu) => Ok((
                gpu::run(gpu, self, observed, tau, delta, m_norm)?,
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
}
