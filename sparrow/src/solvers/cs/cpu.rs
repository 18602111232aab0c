//! The solvers for one signal, on the CPU in f64. Each returns the estimate, the iterations run
//! and why it stopped. Notation: y = Phi x, r the residual, g = Phi^T r the correlation.

use super::linalg::{norm, top_k_abs, Phi};
use super::prox::{amp_residual, iht_step, soft_threshold};
use super::{Method, Recover, StopReason};

/// The outcome for one signal.
pub struct Solved {
    /// The estimate, length n.
    pub x: Vec<f64>,
    /// Iterations run.
    pub iterations: usize,
    /// Why the solver stopped.
    pub stop: StopReason,
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

/// Solves one signal with the request's method. `step` is IHT's relaxed step or, for the
/// others, 1 / ||Phi||^2; computed once per batch.
pub fn solve(req: &Recover, phi: &Phi, y: &[f64], step: f64) -> Solved {
    let n = phi.n;
    let k = req.sparsity.unwrap_or(0);
    let y_norm = norm(y);
    let (tol, max_iter) = (req.tol, req.max_iter);
    let mut x = vec![0.0; n];
    if y_norm == 0.0 {
        return Solved {
            x,
            iterations: 0,
            stop: StopReason::Residual,
        };
    }
    match req.method {
        Method::Iht | Method::Niht | Method::Htp => {
            for it in 1..=max_iter {
                let r = residual(phi, y, &x);
                let g = phi.correlate(&r);
                let mu = match req.method {
                    Method::Iht => step,
                    _ => {
                        // Normalised step: exact line search on the current support (or on the
                        // top-K of g at the start).
                        let s: Vec<usize> = if x.iter().any(|v| *v != 0.0) {
                            (0..n).filter(|&j| x[j] != 0.0).collect()
                        } else {
                            top_k_abs(&g, k)
                        };
                        let gs = keep(&g, &s);
                        let num: f64 = gs.iter().map(|v| v * v).sum();
                        let den = norm(&phi.apply(&gs)).powi(2);
                        if den > 0.0 {
                            num / den
                        } else {
                            step
                        }
                    }
                };
                let z = iht_step(&x, &g, mu);
                let s = top_k_abs(&z, k);
                let new = if req.method == Method::Htp {
                    scatter(n, &s, &phi.lsq(&s, y))
                } else {
                    keep(&z, &s)
                };
                let r_new = residual(phi, y, &new);
                let stop = done(&r_new, y_norm, &new, &x, tol);
                x = new;
                if let Some(stop) = stop {
                    return Solved {
                        x,
                        iterations: it,
                        stop,
                    };
                }
            }
        }
        Method::Cosamp | Method::Sp => {
            let mut r = y.to_vec();
            let mut support: Vec<usize> = Vec::new();
            for it in 1..=max_iter {
                let g = phi.correlate(&r);
                let new_support;
                let new;
                if req.method == Method::Cosamp {
                    let t = union(&support, &top_k_abs(&g, 2 * k));
                    let b = scatter(n, &t, &phi.lsq(&t, y));
                    new_support = top_k_abs(&b, k);
                    new = keep(&b, &new_support);
                } else {
                    let t = union(&support, &top_k_abs(&g, k));
                    let b = scatter(n, &t, &phi.lsq(&t, y));
                    new_support = top_k_abs(&b, k);
                    new = scatter(n, &new_support, &phi.lsq(&new_support, y));
                }
                let r_new = residual(phi, y, &new);
                let stop = done(&r_new, y_norm, &new, &x, tol);
                // Subspace pursuit stops when the residual stops shrinking.
                let worse = req.method == Method::Sp && norm(&r_new) >= norm(&r) && it > 1;
                if !worse {
                    x = new;
                    r = r_new;
                    support = new_support;
                }
                if worse {
                    return Solved {
                        x,
                        iterations: it,
                        stop: StopReason::Stalled,
                    };
                }
                if let Some(stop) = stop {
                    return Solved {
                        x,
                        iterations: it,
                        stop,
                    };
                }
            }
        }
        Method::Omp => {
            let mut r = y.to_vec();
            let mut support: Vec<usize> = Vec::new();
            for it in 1..=k.min(max_iter) {
                let g = phi.correlate(&r);
                let j = (0..n)
                    .filter(|j| !support.contains(j))
                    .max_by(|&a, &b| g[a].abs().total_cmp(&g[b].abs()).then(b.cmp(&a)));
                let Some(j) = j else { break };
                support.push(j);
                let z = phi.lsq(&support, y);
                x = scatter(n, &support, &z);
                r = residual(phi, y, &x);
                if norm(&r) <= tol * y_norm {
                    return Solved {
                        x,
                        iterations: it,
                        stop: StopReason::Residual,
                    };
                }
            }
            let it = support.len();
            return Solved {
                x,
                iterations: it,
                stop: if it >= k {
                    StopReason::SparsityReached
                } else {
                    StopReason::MaxIterations
                },
            };
        }
        Method::Amp => {
            let m = phi.m as f64;
            let mut z = y.to_vec();
            for it in 1..=max_iter {
                let g = phi.correlate(&z);
                let sigma = norm(&z) / m.sqrt();
                let new = soft_threshold(&iht_step(&x, &g, 1.0), req.tau * sigma);
                z = amp_residual(y, &phi.apply(&new), &new, &z);
                let r = residual(phi, y, &new);
                let stop = done(&r, y_norm, &new, &x, tol);
                x = new;
                if let Some(stop) = stop {
                    return Solved {
                        x,
                        iterations: it,
                        stop,
                    };
                }
            }
        }
        Method::Fista => {
            let lambda = req.lambda.unwrap_or(0.0);
            let mut w = x.clone();
            let mut t = 1.0f64;
            for it in 1..=max_iter {
                let g = phi.correlate(&residual(phi, y, &w));
                let new = soft_threshold(&iht_step(&w, &g, step), lambda * step);
                let t_new = (1.0 + (1.0 + 4.0 * t * t).sqrt()) / 2.0;
                w = new
                    .iter()
                    .zip(&x)
                    .map(|(a, b)| a + (t - 1.0) / t_new * (a - b))
                    .collect();
                t = t_new;
                let r = residual(phi, y, &new);
                let stop = done(&r, y_norm, &new, &x, tol);
                x = new;
                if let Some(stop) = stop {
                    return Solved {
                        x,
                        iterations: it,
                        stop,
                    };
                }
            }
        }
    }
    Solved {
        x,
        iterations: max_iter,
        stop: StopReason::MaxIterations,
    }
}
