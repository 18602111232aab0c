//! The solvers for one signal, on the CPU in f64. Each returns the estimate, the iterations run
//! and why it stopped, or, when an iterate turns non-finite or its residual grows past
//! [`DIVERGENCE_FACTOR`](super::DIVERGENCE_FACTOR) times ||y||, a numerical error at that
//! iteration. Notation: y = Phi x, r the residual, g = Phi^T r the correlation.

use super::linalg::{norm, top_k_abs, GrowingCholesky, Phi};
use super::prox::{amp_residual, iht_step, soft_threshold};
use super::{check_iterate, Method, Recover, StopReason};
use crate::Result;

/// The outcome for one signal.
pub struct Solved {
    /// The estimate, length n.
    pub x: Vec<f64>,
    /// Iterations run.
    pub iterations: usize,
    /// Why the solver stopped.
    pub stop: StopReason,
    /// ||y - Phi x|| of the returned estimate.
    pub residual_norm: f64,
}

fn residual(phi: &Phi, y: &[f64], x: &[f64]) -> Vec<f64> {
    let px = phi.apply(x);
    y.iter().zip(&px).map(|(a, b)| a - b).collect()
}

fn keep(x: &[f64], support: &[usize]) -> Vec<f64> {
    let mut out = vec![0.0; x.len()];
    for &j in support {
        out[j] = x[j];
    }
    out
}

fn scatter(n: usize, support: &[usize], vals: &[f64]) -> Vec<f64> {
    let mut x = vec![0.0; n];
    for (&j, &v) in support.iter().zip(vals) {
        x[j] = v;
    }
    x
}

fn union(a: &[usize], b: &[usize]) -> Vec<usize> {
    let mut u: Vec<usize> = a.iter().chain(b).copied().collect();
    u.sort_unstable();
    u.dedup();
    u
}

/// The stop test shared by the iterative solvers: residual small against y, or the estimate
/// no longer moving.
fn done(r: &[f64], y_norm: f64, x_new: &[f64], x_old: &[f64], tol: f64) -> Option<StopReason> {
    if norm(r) <= tol * y_norm {
        return Some(StopReason::Residual);
    }
    let dx: f64 = x_new
        .iter()
        .zip(x_old)
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        .sqrt();
    if dx <= tol * norm(x_new).max(f64::MIN_POSITIVE) {
        return Some(StopReason::Stalled);
    }
    None
}

/// Solves one signal without reporting divergence, for timings: where the iteration diverges
/// (see [`try_solve`]) the estimate and residual norm are NaN, never plausible numbers.
pub fn solve(req: &Recover, phi: &Phi, y: &[f64], step: f64) -> Solved {
    try_solve(req, phi, y, step, 0).unwrap_or_else(|_| Solved {
        x: vec![f64::NAN; phi.n],
        iterations: 0,
        stop: StopReason::MaxIterations,
        residual_norm: f64::NAN,
    })
}

/// Solves signal `signal` (for the error message) with the request's method. `step` is IHT's
/// relaxed step or, for the others, 1 / ||Phi||^2; computed once per batch. Every iterate is
/// checked: a non-finite entry or a residual past the divergence bound stops the solve with
/// [`Error::Numerical`](crate::Error::Numerical) naming the method, the signal and the iteration.
pub fn try_solve(req: &Recover, phi: &Phi, y: &[f64], step: f64, signal: usize) -> Result<Solved> {
    let n = phi.n;
    let y_norm = norm(y);
    if y_norm == 0.0 {
        return Ok(Solved {
            x: vec![0.0; n],
            iterations: 0,
            stop: StopReason::Residual,
            residual_norm: 0.0,
        });
    }
    let mut it = Iterate {
        x: vec![0.0; n],
        r: y.to_vec(),
        y_norm,
        tol: req.tol,
        guard: Guard {
            req,
            tau: req.amp_tau(phi.m, phi.n),
            signal,
        },
    };
    let k = req.sparsity.unwrap_or(0);
    let mut stop = None;
    let mut count = 0;
    match req.method {
        Method::Iht | Method::Niht | Method::Htp => {
            for i in 1..=req.max_iter {
                count = i;
                let g = phi.correlate(&it.r);
                let mu = if req.method == Method::Iht {
                    step
                } else {
                    normalised_step(phi, &it.x, &g, k, step)
                };
                let z = iht_step(&it.x, &g, mu);
                let s = top_k_abs(&z, k);
                let new = if req.method == Method::Htp {
                    scatter(n, &s, &phi.lsq(&s, y))
                } else {
                    keep(&z, &s)
                };
                let r_new = residual(phi, y, &new);
                stop = it.accept(new, r_new, i)?;
                if stop.is_some() {
                    break;
                }
            }
        }
        Method::Cosamp | Method::Sp => {
            let mut support: Vec<usize> = Vec::new();
            for i in 1..=req.max_iter {
                count = i;
                let g = phi.correlate(&it.r);
                let widen = if req.method == Method::Cosamp {
                    2 * k
                } else {
                    k
                };
                let t = union(&support, &top_k_abs(&g, widen));
                let b = scatter(n, &t, &phi.lsq(&t, y));
                let new_support = top_k_abs(&b, k);
                let new = if req.method == Method::Cosamp {
                    keep(&b, &new_support)
                } else {
                    scatter(n, &new_support, &phi.lsq(&new_support, y))
                };
                let r_new = residual(phi, y, &new);
                // Subspace pursuit stops, keeping its estimate, when the residual stops shrinking.
                if req.method == Method::Sp && i > 1 && norm(&r_new) >= norm(&it.r) {
                    stop = Some(StopReason::Stalled);
                    break;
                }
                support = new_support;
                stop = it.accept(new, r_new, i)?;
                if stop.is_some() {
                    break;
                }
            }
        }
        Method::Omp => {
            let mut support: Vec<usize> = Vec::new();
            let mut cols: Vec<Vec<f64>> = Vec::new();
            let mut chol = GrowingCholesky::default();
            let dot = |a: &[f64], b: &[f64]| -> f64 { a.iter().zip(b).map(|(x, y)| x * y).sum() };
            for i in 1..=k.min(req.max_iter) {
                let g = phi.correlate(&it.r);
                let j = (0..n)
                    .filter(|j| !support.contains(j))
                    .max_by(|&a, &b| g[a].abs().total_cmp(&g[b].abs()).then(b.cmp(&a)));
                let Some(j) = j else { break };
                count = i;
                let col = phi.column(j);
                let cross: Vec<f64> = cols.iter().map(|c| dot(c, &col)).collect();
                chol.push(&cross, dot(&col, &col), dot(&col, y));
                support.push(j);
                cols.push(col);
                it.x = scatter(n, &support, &chol.solve());
                it.r = residual(phi, y, &it.x);
                it.guard.check(i, &it.x, norm(&it.r), y_norm)?;
                if norm(&it.r) <= req.tol * y_norm {
                    stop = Some(StopReason::Residual);
                    break;
                }
            }
            if stop.is_none() && count >= k {
                stop = Some(StopReason::SparsityReached);
            }
        }
        Method::Amp => {
            let m = phi.m as f64;
            let tau = req.amp_tau(phi.m, phi.n);
            let mut z = y.to_vec();
            for i in 1..=req.max_iter {
                count = i;
                let g = phi.correlate(&z);
                let sigma = norm(&z) / m.sqrt();
                let new = soft_threshold(&iht_step(&it.x, &g, 1.0), tau * sigma);
                let px = phi.apply(&new);
                z = amp_residual(y, &px, &new, &z);
                let r_new = y.iter().zip(&px).map(|(a, b)| a - b).collect();
                stop = it.accept(new, r_new, i)?;
                if stop.is_some() {
                    break;
                }
            }
        }
        Method::Fista => {
            let lambda = req.lambda.unwrap_or(0.0);
            let mut w = it.x.clone();
            let mut t = 1.0f64;
            for i in 1..=req.max_iter {
                count = i;
                let g = phi.correlate(&residual(phi, y, &w));
                let new = soft_threshold(&iht_step(&w, &g, step), lambda * step);
                let t_new = (1.0 + (1.0 + 4.0 * t * t).sqrt()) / 2.0;
                w = new
                    .iter()
                    .zip(&it.x)
                    .map(|(a, b)| a + (t - 1.0) / t_new * (a - b))
                    .collect();
                t = t_new;
                let r_new = residual(phi, y, &new);
                stop = it.accept(new, r_new, i)?;
                if stop.is_some() {
                    break;
                }
            }
        }
    }
    Ok(Solved {
        residual_norm: norm(&it.r),
        x: it.x,
        iterations: count,
        stop: stop.unwrap_or(StopReason::MaxIterations),
    })
}

/// What the per-iteration check needs to name a failure.
struct Guard<'a> {
    req: &'a Recover,
    tau: f64,
    signal: usize,
}

impl Guard<'_> {
    fn check(&self, iteration: usize, x: &[f64], r_norm: f64, y_norm: f64) -> Result<()> {
        check_iterate(
            self.req,
            self.tau,
            self.signal,
            iteration,
            x,
            r_norm,
            y_norm,
        )
    }
}

/// The estimate and its residual, carried between iterations so each residual is formed once.
struct Iterate<'a> {
    x: Vec<f64>,
    r: Vec<f64>,
    y_norm: f64,
    tol: f64,
    guard: Guard<'a>,
}

impl Iterate<'_> {
    /// Takes iteration `i`'s `new` (with its residual) as the estimate; says whether to stop,
    /// or fails when the new iterate is non-finite or diverges.
    fn accept(&mut self, new: Vec<f64>, r_new: Vec<f64>, i: usize) -> Result<Option<StopReason>> {
        self.guard.check(i, &new, norm(&r_new), self.y_norm)?;
        let stop = done(&r_new, self.y_norm, &new, &self.x, self.tol);
        self.x = new;
        self.r = r_new;
        Ok(stop)
    }
}

/// Normalised IHT's step: exact line search along g restricted to the current support (or the
/// top-K of g at the start).
fn normalised_step(phi: &Phi, x: &[f64], g: &[f64], k: usize, fallback: f64) -> f64 {
    let s: Vec<usize> = if x.iter().any(|v| *v != 0.0) {
        (0..x.len()).filter(|&j| x[j] != 0.0).collect()
    } else {
        top_k_abs(g, k)
    };
    let gs = keep(g, &s);
    let num: f64 = gs.iter().map(|v| v * v).sum();
    let den = norm(&phi.apply(&gs)).powi(2);
    if den > 0.0 {
        num / den
    } else {
        fallback
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    fn phi(m: usize, n: usize) -> Phi {
        let a = (0..m * n)
            .map(|e| ((e * 7919 % 101) as f64 / 50.0) - 1.0)
            .collect();
        Phi { m, n, a }
    }

    fn request(method: Method) -> Recover {
        let r = Recover::new(method);
        match method {
            Method::Amp => r,
            Method::Fista => r.lambda(1e-3),
            _ => r.sparsity(3),
        }
    }

    /// A NaN in Phi (which `Recover::validate` refuses, so only a direct call can pass one)
    /// turns every method's first iterate non-finite: each stops there with a numerical error
    /// naming the method, the signal and iteration 1, never with the NaN estimate.
    #[test]
    fn every_method_stops_at_the_first_non_finite_iterate() {
        let mut p = phi(20, 40);
        p.a[5 * 40 + 11] = f64::NAN;
        let y: Vec<f64> = (0..20).map(|i| (i as f64 * 0.37).sin()).collect();
        for method in [
            Method::Iht,
            Method::Niht,
            Method::Htp,
            Method::Cosamp,
            Method::Sp,
            Method::Omp,
            Method::Amp,
            Method::Fista,
        ] {
            match try_solve(&request(method), &p, &y, 0.1, 3) {
                Err(Error::Numerical { what, why }) => {
                    assert_eq!(what, format!("{} recovery of signal 3", method.name()));
                    assert!(
                        why.starts_with("at iteration 1 the estimate became non-finite"),
                        "{method:?}: {why}"
                    );
                }
                Err(e) => panic!("{method:?}: {e}"),
                Ok(s) => panic!("{method:?} returned {:?}", &s.x[..5]),
            }
            let s = solve(&request(method), &p, &y, 0.1);
            assert!(s.x.iter().all(|v| v.is_nan()) && s.residual_norm.is_nan());
        }
    }

    /// FISTA with a step 100 times 1 / ||Phi||^2 grows geometrically: stopped once the
    /// residual passes the divergence bound, with the advice for FISTA.
    #[test]
    fn a_growing_residual_is_divergence() {
        let p = phi(20, 40);
        let y: Vec<f64> = (0..20).map(|i| (i as f64 * 0.37).sin()).collect();
        let s = p.spectral_norm();
        let req = Recover::new(Method::Fista).lambda(1e-6);
        match try_solve(&req, &p, &y, 100.0 / (s * s), 0) {
            Err(Error::Numerical { what, why }) => {
                assert_eq!(what, "fista recovery of signal 0");
                assert!(why.contains("times ||y||"), "{why}");
                assert!(why.contains("lambda"), "{why}");
            }
            Err(e) => panic!("{e}"),
            Ok(s) => panic!("returned after {} iterations", s.iterations),
        }
        // The step FISTA is given converges on the same problem.
        assert!(try_solve(&req, &p, &y, 1.0 / (s * s), 0).is_ok());
    }
}
