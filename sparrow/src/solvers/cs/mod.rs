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
//! max_iter 500), and reports which. An option the chosen method does not use (K for AMP and
//! FISTA, lambda but for FISTA, tau but for AMP) is refused rather than ignored.
//!
//! Scale: every method but FISTA solves with Phi's columns scaled to unit norm and scales the
//! estimate back, so its answer does not depend on the units of Phi's columns (AMP's threshold
//! and IHT's step assume unit columns). FISTA solves the LASSO as posed: lambda is in the units
//! of Phi^T y, so scaling Phi and y by c asks for lambda times c^2 to give the same x.
//!
//! Divergence: an iterate with a non-finite entry, or a residual ||y - Phi x|| past
//! [`DIVERGENCE_FACTOR`] times ||y||, ends the solve in [`Error::Numerical`] naming the method,
//! the signal and the iteration, with what to change; the CPU stops at that iteration, the GPU
//! stops the signal at the iteration its norms show it, and every backend's estimates and
//! residuals are checked again before they are returned.
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

use rayon::prelude::*;

use crate::matrix::Dense;
use crate::ops::{Backend, Plan};
use crate::{memory, Device, Error, Result, Scalar};
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

    /// The method's name as it is parsed: `iht`, `niht`, `htp`, `cosamp`, `sp`, `omp`, `amp`
    /// or `fista`.
    pub fn name(self) -> &'static str {
        match self {
            Method::Iht => "iht",
            Method::Niht => "niht",
            Method::Htp => "htp",
            Method::Cosamp => "cosamp",
            Method::Sp => "sp",
            Method::Omp => "omp",
            Method::Amp => "amp",
            Method::Fista => "fista",
        }
    }

    /// Whether the method solves with Phi's columns scaled to unit norm (all but FISTA, whose
    /// LASSO weight is defined against Phi as given).
    pub fn normalises_columns(self) -> bool {
        self != Method::Fista
    }

    /// What a user can change when this method's iterates diverge (`tau`: AMP's multiplier).
    fn divergence_advice(self, tau: f64) -> String {
        match self {
            Method::Iht => "IHT's fixed step (0.65 over the mean squared column norm of Phi) is too long for this Phi, whose columns are far from orthogonal; use niht, which chooses its step by a line search, or a smaller sparsity K".into(),
            Method::Niht | Method::Htp => "the line-search step is unstable for this Phi; use a smaller sparsity K, or cosamp or omp, which solve least squares on the support".into(),
            Method::Cosamp | Method::Sp | Method::Omp => "the least squares on the chosen supports are ill-conditioned, so Phi's columns are close to dependent; use a smaller sparsity K".into(),
            Method::Amp => format!("AMP converges for a Phi with roughly independent zero-mean entries (it scales the columns to unit norm itself), and this Phi is not one: use fista or cosamp, which do not rely on that; a larger threshold multiplier tau (it was {tau:.4}) helps only where the threshold was set too low"),
            Method::Fista => "FISTA's step 1 / ||Phi||^2 keeps the LASSO iteration stable, so Phi or y likely hold values near the limits of double precision; rescale them (lambda scales with the square of Phi's scale), or raise lambda".into(),
        }
    }
}

/// A residual ||y - Phi x|| larger than this multiple of ||y|| means the iteration diverges
/// (no solver's estimate legitimately explains y that badly: x = 0 leaves ||y||).
pub const DIVERGENCE_FACTOR: f64 = 1e6;

/// Checks one signal's iterate: every entry of `x` finite and the residual norm finite and at
/// most [`DIVERGENCE_FACTOR`] times `y_norm`. The error names the method, the signal and the
/// iteration, and says what to change. Used at every iteration on the CPU and on the estimates
/// every backend returns. `tau` is AMP's threshold multiplier, for the advice.
pub(crate) fn check_iterate(
    req: &Recover,
    tau: f64,
    signal: usize,
    iteration: usize,
    x: &[f64],
    r_norm: f64,
    y_norm: f64,
) -> Result<()> {
    let seen = if let Some(j) = x.iter().position(|v| !v.is_finite()) {
        format!("the estimate became non-finite (entry {j} is {})", x[j])
    } else if !r_norm.is_finite() {
        "the residual ||y - Phi x|| became non-finite".to_string()
    } else if r_norm > DIVERGENCE_FACTOR * y_norm {
        format!(
            "the residual ||y - Phi x|| reached {r_norm:.3e}, {:.1e} times ||y|| = {y_norm:.3e}, so the iteration diverges",
            r_norm / y_norm
        )
    } else {
        return Ok(());
    };
    Err(Error::numerical(
        format!("{} recovery of signal {signal}", req.method.name()),
        format!(
            "at iteration {iteration} {seen}; {}",
            req.method.divergence_advice(tau)
        ),
    ))
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

/// A recovery request: the method and its parameters; [`Recover::run`] solves every column
/// of Y at once.
///
/// ```
/// use sparrow::matrix::Dense;
/// use sparrow::{Method, Recover};
/// use sparrow::Device;
///
/// // Phi: 3 x 4; y = Phi x for x with two nonzeros (entries 1 and 3).
/// let phi = Dense::<f64>::from_rows(3, 4, vec![
///     1.0, 0.0, 0.5, 0.0,
///     0.0, 1.0, 0.5, 0.0,
///     0.0, 0.0, 0.5, 1.0,
/// ])?;
/// let y = Dense::from_rows(3, 1, vec![0.0, 2.0, -1.0])?;
/// let (rec, _plan) = Recover::new(Method::Omp).sparsity(2).run(&Device::Cpu, &phi, &y)?;
/// assert_eq!(rec.support[0], [1, 3]);
/// // Within the stop test's tolerance of the planted values.
/// assert!((rec.x.get(1, 0) - 2.0).abs() < 1e-9 && (rec.x.get(3, 0) + 1.0).abs() < 1e-9);
/// # Ok::<(), sparrow::Error>(())
/// ```
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
        let name = self.method.name();
        if !self.method.needs_sparsity() && self.sparsity.is_some() {
            return Err(Error::invalid(
                "sparsity",
                format!(
                    "{name} does not use sparsity; leave it unset ({})",
                    if self.method == Method::Amp {
                        "AMP's support follows from its threshold multiplier tau"
                    } else {
                        "the LASSO weight lambda sets how sparse FISTA's estimate is"
                    }
                ),
            ));
        }
        if self.method != Method::Fista && self.lambda.is_some() {
            return Err(Error::invalid(
                "lambda",
                format!(
                    "{name} does not use lambda; leave it unset (lambda is the LASSO weight of fista)"
                ),
            ));
        }
        if self.method != Method::Amp && self.tau.is_some() {
            return Err(Error::invalid(
                "tau",
                format!(
                    "{name} does not use tau; leave it unset (tau is the threshold multiplier of amp)"
                ),
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
            return Err(Error::invalid("max-iter", "must be at least 1"));
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
        self.ensure_memory::<T>(m, n, nb, plan.backend)?;
        // Every method but FISTA solves on unit columns: Phi' = Phi D^-1, x = D^-1 x'.
        let scale = if self.method.normalises_columns() {
            column_norms(phi)
        } else {
            vec![1.0; n]
        };
        let p = Phi {
            m,
            n,
            a: (0..m)
                .flat_map(|i| phi.row(i).iter().zip(&scale).map(|(v, c)| v.to_f64() / c))
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
        let ys: Vec<Vec<f64>> = (0..nb)
            .map(|b| (0..m).map(|i| y.get(i, b).to_f64()).collect())
            .collect();
        let tau = self.amp_tau(m, n);
        let mut results: Vec<cpu::Solved> = match device {
            Device::Cuda(g) if plan.backend == Backend::Cuda => {
                if T::NAME == "f32" {
                    gpu::solve::<f32>(g, self, m, n, &p.a, &ys, step)?
                } else {
                    gpu::solve::<f64>(g, self, m, n, &p.a, &ys, step)?
                }
            }
            _ => {
                let solved: Vec<Result<cpu::Solved>> = ys
                    .par_iter()
                    .enumerate()
                    .map(|(b, yb)| cpu::try_solve(self, &p, yb, step, b))
                    .collect();
                // The lowest failing signal's error, whatever order the threads ran in.
                solved.into_iter().collect::<Result<_>>()?
            }
        };
        // Back to Phi's units, then the check every backend's estimates pass.
        for (b, r) in results.iter_mut().enumerate() {
            for (v, c) in r.x.iter_mut().zip(&scale) {
                *v /= c;
            }
            let y_norm = linalg::norm(&ys[b]);
            check_iterate(self, tau, b, r.iterations, &r.x, r.residual_norm, y_norm)?;
        }
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

    /// Refuses, before any work, a batch whose working memory the machine cannot give: the
    /// solvers' f64 copy of Phi and of Y, the estimates (in f64 and in T), the GPU's host-side
    /// copies in T, and on the CPU the least squares of the signals solved at once (the support's
    /// columns and normal equations, per thread).
    fn ensure_memory<T: Scalar>(
        &self,
        m: usize,
        n: usize,
        nb: usize,
        backend: Backend,
    ) -> Result<()> {
        let t = std::mem::size_of::<T>();
        let what = format!("recovering {nb} signal(s) of length {n} from {m} measurements");
        let total = [
            memory::bytes_of(&what, &[m, n], 8)?,
            memory::bytes_of(&what, &[m, nb], 8)?,
            memory::bytes_of(&what, &[n, nb], 8 + t)?,
            if backend == Backend::Cuda {
                memory::bytes_of(&what, &[m, n + nb], t)?
            } else {
                0
            },
        ]
        .iter()
        .try_fold(0u64, |a, &b| a.checked_add(b));
        memory::ensure_fits(&what, total.unwrap_or(u64::MAX))?;
        let k = self.sparsity.unwrap_or(0);
        let s = match self.method {
            Method::Htp | Method::Omp => k,
            Method::Sp => 2 * k,
            Method::Cosamp => 3 * k,
            _ => 0,
        }
        .min(n);
        if s > 0 && backend == Backend::Cpu {
            let threads = rayon::current_num_threads().min(nb).max(1);
            let what = format!(
                "the least squares on supports of {s} columns ({threads} signal(s) at once)"
            );
            let per = s.checked_add(m).and_then(|v| v.checked_add(1));
            let bytes = memory::bytes_of(&what, &[threads, s, per.unwrap_or(usize::MAX)], 8)?;
            memory::ensure_fits(&what, bytes)?;
        }
        Ok(())
    }
}

/// The Euclidean norm of each column of Phi, scaled by the column's largest magnitude first so
/// tiny or huge entries neither underflow nor overflow.
fn column_norms<T: Scalar>(phi: &Dense<T>) -> Vec<f64> {
    let (m, n) = (phi.nrows(), phi.ncols());
    let mut big = vec![0f64; n];
    for i in 0..m {
        for (b, v) in big.iter_mut().zip(phi.row(i)) {
            *b = b.max(v.to_f64().abs());
        }
    }
    let mut sum = vec![0f64; n];
    for i in 0..m {
        for ((s, v), b) in sum.iter_mut().zip(phi.row(i)).zip(&big) {
            let r = v.to_f64() / b;
            *s += r * r;
        }
    }
    // `validate` refuses zero columns, so every `big` is positive.
    big.iter().zip(&sum).map(|(b, s)| b * s.sqrt()).collect()
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
