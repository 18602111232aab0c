//! Compressed sensing: recover sparse x from y = Phi x (+ noise), for a batch of signals (the
//! columns of Y) at once.
//!
//! Methods: IHT (step 0.65 / the mean squared column norm, the relaxation Maleki and Donoho
//! found best for Gaussian matrices; the safe 1 / ||Phi||^2 leaves IHT stuck on wrong supports),
//! normalised IHT, HTP, CoSaMP, subspace pursuit and OMP
//! need the sparsity K; AMP uses the threshold tau * sigma_hat (sigma_hat = ||z|| / sqrt(m)),
//! tau by default the minimax threshold for delta = m / n ([`phase::minimax_tau`]), under
//! which AMP's phase transition is the l1 one;
//! FISTA solves the LASSO with lambda. Every solver stops when ||r|| <= tol ||y||, when the
//! estimate moves less than tol relative to its norm, or at `max_iter` (defaults: tol 1e-6,
//! max_iter 500), and reports which.
//!
//! Backends: the CPU (rayon over signals, f64 arithmetic) runs every method; on a GPU device
//! every method runs batched on the GPU in the data's precision ([`gpu`]), up to the limits
//! [`gpu::supported`] names; past them the plan says so and the CPU runs it.

pub mod cpu;
pub mod data;
pub mod fp8;
pub mod gpu;
pub mod linalg;
pub mod phase;
pub mod prox;
pub mod svt;
pub mod svt_gpu;

use rayon::prelude::*;

use crate::matrix::Dense;
use crate::ops::{Backend, Plan};
use crate::{Device, Error, Result, Scalar};
use linalg::Phi;

/// A recovery algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Method {
    /// Iterative hard thresholding.
    Iht,
    /// Normalised IHT (exact line search on the support).
    Niht,
    /// Hard thresholding pursuit.
    Htp,
    /// CoSaMP.
    Cosamp,
    /// Subspace pursuit.
    Sp,
    /// Orthogonal matching pursuit.
    Omp,
    /// Approximate message passing with soft thresholds.
    Amp,
    /// FISTA for the LASSO.
    Fista,
}

impl std::str::FromStr for Method {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "iht" => Method::Iht,
            "niht" => Method::Niht,
            "htp" => Method::Htp,
            "cosamp" => Method::Cosamp,
            "sp" => Method::Sp,
            "omp" => Method::Omp,
            "amp" => Method::Amp,
            "fista" => Method::Fista,
            _ => {
                return Err(Error::invalid(
                    "--method",
                    format!("{s:?} is not iht, niht, htp, cosamp, sp, omp, amp or fista"),
                ))
            }
        })
    }
}

impl Method {
    /// Whether the method needs the sparsity K.
    pub fn needs_sparsity(self) -> bool {
        !matches!(self, Method::Amp | Method::Fista)
    }
}

/// Why a solver stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum StopReason {
    /// ||r|| <= tol ||y||.
    Residual,
    /// The estimate stopped moving (or, for subspace pursuit, the residual stopped shrinking).
    Stalled,
    /// OMP selected K columns.
    SparsityReached,
    /// The iteration cap was reached.
    MaxIterations,
}

/// A recovery request.
#[derive(Clone, Debug)]
pub struct Recover {
    /// The algorithm.
    pub method: Method,
    /// K, for the methods that need it.
    pub sparsity: Option<usize>,
    /// The LASSO weight, for FISTA.
    pub lambda: Option<f64>,
    /// AMP's threshold multiplier; None for the minimax one at the problem's delta.
    pub tau: Option<f64>,
    /// Iteration cap.
    pub max_iter: usize,
    /// Relative tolerance of the stop tests.
    pub tol: f64,
}

impl Recover {
    /// A request with the documented defaults.
    pub fn new(method: Method) -> Self {
        Recover {
            method,
            sparsity: None,
            lambda: None,
            tau: None,
            max_iter: 500,
            tol: 1e-6,
        }
    }
    /// Sets K.
    pub fn sparsity(mut self, k: usize) -> Self {
        self.sparsity = Some(k);
        self
    }
    /// Sets lambda.
    pub fn lambda(mut self, l: f64) -> Self {
        self.lambda = Some(l);
        self
    }
    /// Sets the iteration cap.
    pub fn max_iter(mut self, n: usize) -> Self {
        self.max_iter = n;
        self
    }
    /// Sets the tolerance.
    pub fn tol(mut self, t: f64) -> Self {
        self.tol = t;
        self
    }

    /// Checks the request against Phi (m x n) and Y (m x B) completely, before any work.
    pub fn validate<T: Scalar>(&self, phi: &Dense<T>, y: &Dense<T>) -> Result<()> {
        let (m, n) = (phi.nrows(), phi.ncols());
        if m == 0 || n == 0 {
            return Err(Error::invalid(
                "phi",
                format!("is {m} x {n}; it needs rows and columns"),
            ));
        }
        if y.nrows() != m {
            return Err(Error::invalid(
                "y",
                format!("has {} rows but Phi has {m}", y.nrows()),
            ));
        }
        if self.method.needs_sparsity() {
            match self.sparsity {
                None => {
                    return Err(Error::invalid(
                        "sparsity",
                        format!("{:?} needs the sparsity K", self.method),
                    ))
                }
                Some(0) => return Err(Error::invalid("sparsity", "K must be at least 1")),
                Some(k) if k > m => {
                    return Err(Error::invalid(
                        "sparsity",
                        format!("K = {k} is larger than the {m} measurements"),
                    ))
                }
                Some(k) if k > n => {
                    return Err(Error::invalid(
                        "sparsity",
                        format!("K = {k} is larger than the signal length {n}"),
                    ))
                }
                _ => {}
            }
        }
        if self.method == Method::Fista {
            match self.lambda {
                Some(l) if l.is_finite() && l >= 0.0 => {}
                Some(l) => {
                    return Err(Error::invalid(
                        "lambda",
                        format!("{l} must be finite and non-negative"),
                    ))
                }
                None => return Err(Error::invalid("lambda", "FISTA needs lambda")),
            }
        }
        if let Some(tau) = self.tau.filter(|t| !(t.is_finite() && *t > 0.0)) {
            return Err(Error::invalid("tau", format!("{tau} must be positive")));
        }
        if !(self.tol.is_finite() && self.tol >= 0.0) {
            return Err(Error::invalid(
                "tol",
                format!("{} must be finite and non-negative", self.tol),
            ));
        }
        if self.max_iter == 0 {
            return Err(Error::invalid("max_iter", "must be at least 1"));
        }
        for i in 0..m {
            if let Some(j) = phi.row(i).iter().position(|v| !v.to_f64().is_finite()) {
                return Err(Error::invalid(
                    "phi",
                    format!("entry ({i}, {j}) is not finite"),
                ));
            }
        }
        for j in 0..n {
            if (0..m).all(|i| phi.get(i, j).to_f64() == 0.0) {
                return Err(Error::invalid(
                    "phi",
                    format!("column {j} is zero: that coefficient cannot be recovered"),
                ));
            }
        }
        for b in 0..y.ncols() {
            if let Some(i) = (0..m).find(|&i| !y.get(i, b).to_f64().is_finite()) {
                return Err(Error::invalid(
                    "y",
                    format!("signal {b} has a non-finite measurement at row {i}"),
                ));
            }
        }
        Ok(())
    }

    /// AMP's threshold multiplier for an m x n problem: the request's, or the minimax one.
    pub fn amp_tau(&self, m: usize, n: usize) -> f64 {
        self.tau
            .unwrap_or_else(|| phase::minimax_tau(m as f64 / n as f64))
    }

    /// The backend that will run for signals of length `n`.
    pub fn plan(&self, device: &Device, n: usize) -> Plan {
        let gpu = gpu::supported(self.method, self.sparsity, n);
        Plan {
            op: "recover",
            backend: match device {
                Device::Cuda(_) if gpu.is_ok() => Backend::Cuda,
                _ => Backend::Cpu,
            },
            kernel: None,
            shape: None,
            reason: match device {
                Device::Cpu => "the device is the CPU: rayon over signals".into(),
                Device::Cuda(_) => match &gpu {
                    Ok(()) => format!(
                        "GPU: batched {:?}, every product with Phi a cuBLAS GEMM over all signals, fused cs_* kernels{}{}, per-signal stop tests each iteration",
                        self.method,
                        if matches!(self.method, Method::Amp | Method::Fista) {
                            ""
                        } else {
                            ", the segmented top-k for every K-largest selection"
                        },
                        if matches!(self.method, Method::Htp | Method::Cosamp | Method::Sp | Method::Omp) {
                            ", least squares from Phi^T Phi by Cholesky per signal"
                        } else {
                            ""
                        }
                    ),
                    Err(why) => format!(
                        "no GPU solver for {:?} here ({why}): the CPU runs, rayon over signals",
                        self.method
                    ),
                },
            },
        }
    }

    /// Recovers every column of Y.
    pub fn run<T: Scalar>(
        &self,
        device: &Device,
        phi: &Dense<T>,
        y: &Dense<T>,
    ) -> Result<(Recovery<T>, Plan)> {
        self.validate(phi, y)?;
        let plan = self.plan(device, phi.ncols());
        let (m, n, nb) = (phi.nrows(), phi.ncols(), y.ncols());
        let p = Phi {
            m,
            n,
            a: (0..m)
                .flat_map(|i| phi.row(i).iter().map(|v| v.to_f64()))
                .collect(),
        };
        let s = p.spectral_norm();
        // FISTA needs 1 / L; IHT takes the relaxed step on the mean column energy.
        let lipschitz_step = 1.0 / (s * s);
        let col_energy = p.a.iter().map(|v| v * v).sum::<f64>() / n as f64;
        let step = if self.method == Method::Iht {
            0.65 / col_energy
        } else {
            lipschitz_step
        };
        let results: Vec<cpu::Solved> = match device {
            Device::Cuda(g) if plan.backend == Backend::Cuda => {
                let ys: Vec<Vec<f64>> = (0..nb)
                    .map(|b| (0..m).map(|i| y.get(i, b).to_f64()).collect())
                    .collect();
                if T::NAME == "f32" {
                    gpu::solve::<f32>(g, self, m, n, &p.a, &ys, step)?
                } else {
                    gpu::solve::<f64>(g, self, m, n, &p.a, &ys, step)?
                }
            }
            _ => (0..nb)
                .into_par_iter()
                .map(|b| {
                    let yb: Vec<f64> = (0..m).map(|i| y.get(i, b).to_f64()).collect();
                    cpu::solve(self, &p, &yb, step)
                })
                .collect(),
        };
        let mut x = Dense::filled(n, nb, nb, T::ZERO)?;
        let mut support = Vec::with_capacity(nb);
        let mut residual_norm = Vec::with_capacity(nb);
        for (b, r) in results.iter().enumerate() {
            for (j, &v) in r.x.iter().enumerate() {
                x.data_mut()[j * nb + b] = T::from_f64(v);
            }
            support.push((0..n).filter(|&j| r.x[j] != 0.0).collect());
            residual_norm.push(r.residual_norm);
        }
        Ok((
            Recovery {
                x,
                support,
                residual_norm,
                iterations: results.iter().map(|r| r.iterations).collect(),
                stop: results.iter().map(|r| r.stop).collect(),
            },
            plan,
        ))
    }
}

/// The result for a batch.
#[derive(Clone, Debug)]
pub struct Recovery<T> {
    /// Estimates, n x B (column b is signal b).
    pub x: Dense<T>,
    /// Support of each estimate, ascending.
    pub support: Vec<Vec<usize>>,
    /// ||y - Phi x|| of each signal.
    pub residual_norm: Vec<f64>,
    /// Iterations of each signal.
    pub iterations: Vec<usize>,
    /// Why each signal's solver stopped.
    pub stop: Vec<StopReason>,
}
