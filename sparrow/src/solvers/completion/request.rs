//! A completion request: its arguments, their checks and defaults, and the result.

use crate::matrix::{Csr, Dense};
use crate::solvers::cs::{StopReason, DIVERGENCE_FACTOR};
use crate::{Error, Result};

/// A completion request: the rank cap and the SVT parameters; [`Complete::run_on`] fills in
/// the unobserved entries.
///
/// ```
/// use sparrow::matrix::Csr;
/// use sparrow::Complete;
/// use sparrow::Device;
///
/// // A rank-1 20 x 20 matrix u v^T with about 60 % of its entries observed.
/// let (u, v): (Vec<f64>, Vec<f64>) = (0..20).map(|i| (1.0 + i as f64 / 10.0, 2.0 - i as f64 / 20.0)).unzip();
/// let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
/// for i in 0..20 {
///     for j in 0..20 {
///         if (i * 7 + j * 3) % 5 < 3 {
///             rows.push(i);
///             cols.push(j);
///             vals.push(u[i] * v[j]);
///         }
///     }
/// }
/// let observed = Csr::from_triplets(20, 20, &rows, &cols, &vals)?;
/// let (done, _plan) = Complete::new(1).run_on(&Device::Cpu, &observed)?;
/// let err = (0..20).flat_map(|i| (0..20).map(move |j| (i, j)))
///     .map(|(i, j)| (done.x.get(i, j) - u[i] * v[j]).abs())
///     .fold(0.0, f64::max);
/// println!("rank {}, largest error {err:.2e}", done.rank);
/// assert!(err < 0.05);
/// # Ok::<(), sparrow::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Complete {
    /// Rank cap (the hint): at most this many singular triplets are kept.
    pub rank_hint: usize,
    /// Shrinkage (the threshold on the singular values), positive; None for 5 sqrt(m n) times
    /// the RMS of the observed entries.
    pub tau: Option<f64>,
    /// Step, in (0, 2) when given; None for 1.2 m n / |Omega|.
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

    /// Checks the request and resolves tau, delta and ||P_Omega(M)||_F.
    pub(crate) fn resolve(&self, observed: &Csr<f64>) -> Result<(f64, f64, f64)> {
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
        if self.max_iter == 0 {
            return Err(Error::invalid("max-iter", "must be at least 1"));
        }
        if !(self.tol.is_finite() && self.tol >= 0.0) {
            return Err(Error::invalid(
                "tol",
                format!("{} must be finite and non-negative", self.tol),
            ));
        }
        if let Some(t) = self.tau.filter(|t| !(t.is_finite() && *t > 0.0)) {
            return Err(Error::invalid(
                "tau",
                format!(
                    "{t} must be positive and finite (it is the threshold on the singular values)"
                ),
            ));
        }
        if let Some(d) = self
            .delta
            .filter(|d| !(d.is_finite() && *d > 0.0 && *d < 2.0))
        {
            return Err(Error::invalid(
                "delta",
                format!(
                    "{d} must lie in (0, 2), the steps for which SVT is guaranteed to converge"
                ),
            ));
        }
        let m_norm = norm2(observed.values());
        let tau = self.tau.unwrap_or_else(|| default_tau(m, n, omega, m_norm));
        let delta = self
            .delta
            .unwrap_or(1.2 * m as f64 * n as f64 / omega as f64);
        if !(tau > 0.0 && tau.is_finite()) {
            // Only the default can land here: every observed entry is zero.
            return Err(Error::invalid(
                "observed",
                "every observed entry is zero: there is nothing to complete",
            ));
        }
        Ok((tau, delta, m_norm))
    }

    /// The error for an iteration whose residual on the observed entries (`rel`, relative to
    /// their norm) is non-finite or past the divergence bound; None while it is not.
    pub(crate) fn diverged(
        &self,
        observed: &Csr<f64>,
        iteration: usize,
        rel: f64,
        tau: f64,
        delta: f64,
    ) -> Option<Error> {
        if rel.is_finite() && rel <= DIVERGENCE_FACTOR {
            return None;
        }
        let (m, n, omega) = (observed.nrows(), observed.ncols(), observed.nnz());
        let seen = if rel.is_finite() {
            format!("reached {rel:.2e} times their norm, so the iteration diverges")
        } else {
            "became non-finite".to_string()
        };
        let tau0 = default_tau(m, n, omega, norm2(observed.values()));
        Some(Error::numerical(
            "SVT",
            format!(
                "at iteration {iteration} the residual on the observed entries {seen}; the threshold tau is {tau:.4e} ({}) and the step delta is {delta:.4} ({}): raise the threshold tau toward the default, or take a step delta in (0, 2), where SVT is guaranteed to converge",
                if self.tau.is_some() {
                    format!("the default for these observations is {tau0:.4e}")
                } else {
                    "the default, 5 sqrt(m n) times the RMS of the observed entries".to_string()
                },
                if self.delta.is_some() {
                    "as given"
                } else {
                    "the default, 1.2 m n / |Omega|"
                }
            ),
        ))
    }
}

/// ||v||, scaled by the largest magnitude so it neither overflows nor underflows.
fn norm2(v: &[f64]) -> f64 {
    let big = v.iter().fold(0f64, |a, x| a.max(x.abs()));
    if big == 0.0 {
        return 0.0;
    }
    big * v.iter().map(|x| (x / big).powi(2)).sum::<f64>().sqrt()
}

/// The paper's threshold, 5 sqrt(m n), times the RMS of the observed entries.
fn default_tau(m: usize, n: usize, omega: usize, m_norm: f64) -> f64 {
    5.0 * (m as f64 * n as f64).sqrt() * m_norm / (omega as f64).sqrt()
}

/// The completion from X's entries, row-major; a non-finite entry is a numerical error (the
/// residual on the observed entries can stay bounded while the unobserved ones overflow).
pub(crate) fn completion(
    m: usize,
    n: usize,
    data: Vec<f64>,
    rank: usize,
    iterations: usize,
    stop: StopReason,
    rel: f64,
) -> Result<Completion> {
    if let Some(p) = data.iter().position(|v| !v.is_finite()) {
        return Err(Error::numerical(
            "SVT",
            format!(
                "after {iterations} iterations the completed entry ({}, {}) is {}; raise the threshold tau or take a step delta in (0, 2)",
                p / n,
                p % n,
                data[p]
            ),
        ));
    }
    Ok(Completion {
        x: Dense::from_rows(m, n, data)?,
        rank,
        iterations,
        stop,
        relative_residual: rel,
    })
}
