//! The Donoho-Tanner phase-transition experiment: over a grid of undersampling delta = m / n and
//! sparsity rho = K / m, the fraction of random problems a method recovers (Gaussian Phi with
//! N(0, 1/m) entries, K-sparse x with random support; success when ||x_hat - x|| / ||x|| < 1e-3).

use super::data::{gaussian_phi, measure, sparse_signals};
use super::{Method, Recover};
use crate::{memory, Device, Error, Result};

/// The experiment's parameters.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PhaseConfig {
    /// The method.
    pub method: Method,
    /// Signal length.
    pub n: usize,
    /// delta values.
    pub deltas: Vec<f64>,
    /// rho values.
    pub rhos: Vec<f64>,
    /// Trials per cell (one batch per cell).
    pub trials: usize,
    /// +-1 entries (true) or Gaussian.
    pub signs: bool,
    /// Iteration cap of the solver.
    pub max_iter: usize,
}

/// The measured success fractions, `success[r][d]` for `rhos[r]`, `deltas[d]`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PhaseResult {
    /// The parameters.
    pub config: PhaseConfig,
    /// Success fraction per cell.
    pub success: Vec<Vec<f64>>,
}

/// The most values a delta or rho axis may hold: a grid is a batch of solves per cell, and
/// one past this is a mistyped step rather than an experiment.
pub const MAX_GRID_POINTS: usize = 10_000;

/// Parses `start:stop:step` (inclusive of stop within rounding) into values in (0, 1]; `arg`
/// names the axis in errors. Non-finite numbers, a step that is not positive and grids of more
/// than [`MAX_GRID_POINTS`] values are refused.
pub fn parse_range(arg: &str, s: &str) -> Result<Vec<f64>> {
    let parts: Vec<f64> = s
        .split(':')
        .map(|p| p.trim().parse::<f64>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| Error::invalid(arg, format!("{s:?} is not start:stop:step")))?;
    let [a, b, st] = parts[..] else {
        return Err(Error::invalid(arg, format!("{s:?} is not start:stop:step")));
    };
    if !(a > 0.0 && b < 1.0 + 1e-12 && a <= b && st > 0.0) {
        return Err(Error::invalid(
            arg,
            format!("{s:?} must satisfy 0 < start <= stop <= 1 and step > 0"),
        ));
    }
    if !st.is_finite() {
        return Err(Error::invalid(arg, format!("{s:?} needs a finite step")));
    }
    let count = ((b - a) / st + 1e-9).floor() + 1.0;
    if count > MAX_GRID_POINTS as f64 {
        return Err(Error::invalid(
            arg,
            format!(
                "{s:?} has {} values; an axis takes at most {MAX_GRID_POINTS} (use a larger step)",
                count as u64
            ),
        ));
    }
    Ok((0..count as usize)
        .map(|i| ((a + i as f64 * st) * 1e9).round() / 1e9)
        .collect())
}

/// Checks one axis: 1 to [`MAX_GRID_POINTS`] values, each finite in (0, 1].
fn check_axis(arg: &str, v: &[f64]) -> Result<()> {
    if v.is_empty() || v.len() > MAX_GRID_POINTS {
        return Err(Error::invalid(
            arg,
            format!(
                "has {} values; an axis needs 1 to {MAX_GRID_POINTS}",
                v.len()
            ),
        ));
    }
    if let Some(x) = v
        .iter()
        .find(|x| !(x.is_finite() && **x > 0.0 && **x <= 1.0))
    {
        return Err(Error::invalid(arg, format!("{x} is outside (0, 1]")));
    }
    Ok(())
}

impl PhaseConfig {
    /// Checks the experiment before any cell runs: both axes (1 to [`MAX_GRID_POINTS`] values
    /// in (0, 1]), n, the trials and the iteration cap, and that the largest cell's Phi and
    /// signals fit in memory.
    pub fn validate(&self) -> Result<()> {
        check_axis("delta", &self.deltas)?;
        check_axis("rho", &self.rhos)?;
        if self.n < 2 || self.trials == 0 {
            return Err(Error::invalid(
                "--n/--trials",
                "need n >= 2 and at least one trial",
            ));
        }
        if self.max_iter == 0 {
            return Err(Error::invalid("max-iter", "must be at least 1"));
        }
        let top = self.deltas.iter().fold(0f64, |a, &d| a.max(d));
        let m = ((top * self.n as f64).round() as usize).clamp(1, self.n);
        let (n, t) = (self.n, self.trials);
        // Phi and the solvers' copy of it; x, the estimates in two forms, y twice.
        let what = format!("a phase-transition cell (Phi {m} x {n} and {t} signal(s))");
        let total = [
            memory::bytes_of(&what, &[2, m, n], 8)?,
            memory::bytes_of(&what, &[3, n, t], 8)?,
            memory::bytes_of(&what, &[2, m, t], 8)?,
        ]
        .iter()
        .try_fold(0u64, |a, &b| a.checked_add(b));
        memory::ensure_fits(&what, total.unwrap_or(u64::MAX))?;
        memory::ensure_elems("the success grid", &[self.rhos.len(), self.deltas.len()], 8)?;
        Ok(())
    }
}

/// Runs every cell; `progress` is told each cell as it starts.
pub fn run(
    device: &Device,
    cfg: &PhaseConfig,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<PhaseResult> {
    cfg.validate()?;
    let total = cfg.deltas.len() * cfg.rhos.len();
    let mut success = vec![vec![0.0; cfg.deltas.len()]; cfg.rhos.len()];
    let mut cell = 0;
    for (r, &rho) in cfg.rhos.iter().enumerate() {
        for (d, &delta) in cfg.deltas.iter().enumerate() {
            progress(cell, total);
            cell += 1;
            let m = ((delta * cfg.n as f64).round() as usize).clamp(1, cfg.n);
            let k = ((rho * m as f64).round() as usize).clamp(1, m);
            let seed = (r * 1000 + d) as u64;
            let phi = gaussian_phi(m, cfg.n, seed)?;
            let x = sparse_signals(cfg.n, k, cfg.trials, cfg.signs, seed + 7_000_000)?;
            let y = measure(&phi, &x)?;
            let mut req = Recover::new(cfg.method).max_iter(cfg.max_iter).tol(1e-8);
            if cfg.method.needs_sparsity() {
                req = req.sparsity(k);
            }
            if cfg.method == Method::Fista {
                req = req.lambda(1e-4);
            }
            let (rec, _) = req.run(device, &phi, &y)?;
            let ok = (0..cfg.trials)
                .filter(|&b| {
                    let (mut e, mut s) = (0.0, 0.0);
                    for j in 0..cfg.n {
                        e += (rec.x.get(j, b) - x.get(j, b)).powi(2);
                        s += x.get(j, b).powi(2);
                    }
                    (e / s).sqrt() < 1e-3
                })
                .count();
            success[r][d] = ok as f64 / cfg.trials as f64;
        }
    }
    Ok(PhaseResult {
        config: cfg.clone(),
        success,
    })
}

/// The rho at which the success fraction crosses 1/2 for each delta (linear interpolation
/// between grid rows), None where it never crosses.
pub fn half_contour(res: &PhaseResult) -> Vec<Option<f64>> {
    let rhos = &res.config.rhos;
    (0..res.config.deltas.len())
        .map(|d| {
            for r in 1..rhos.len() {
                let (a, b) = (res.success[r - 1][d], res.success[r][d]);
                if a >= 0.5 && b < 0.5 {
                    let t = (a - 0.5) / (a - b);
                    return Some(rhos[r - 1] + t * (rhos[r] - rhos[r - 1]));
                }
            }
            None
        })
        .collect()
}

/// The complementary error function, by the Chebyshev-fitted expression of Numerical Recipes
/// (`erfcc`, relative error below 1.2e-7 everywhere): plenty for a phase-transition curve.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// The l1 (Donoho-Tanner, signed) phase-transition curve rho(delta), in the state-evolution
/// form of Donoho, Maleki and Montanari (2009): the maximum over z >= 0 of
/// (1 - (2 / delta) h(z)) / (1 + z^2 - 2 h(z)) with h(z) = (1 + z^2) Phi(-z) - z phi(z).
/// Evaluated on a fine grid of z (1e-3 to 10 in steps of 1e-3; at z = 0 the ratio is 0 / 0).
pub fn l1_curve(delta: f64) -> f64 {
    state_evolution_max(delta).0
}

/// The z at which [`l1_curve`]'s maximum is reached: AMP's minimax threshold multiplier for
/// undersampling delta, the tuning under which AMP's phase transition is the l1 curve.
pub fn minimax_tau(delta: f64) -> f64 {
    state_evolution_max(delta).1
}

/// (max, argmax) over the z grid of the state-evolution ratio.
fn state_evolution_max(delta: f64) -> (f64, f64) {
    let phi = |z: f64| (-z * z / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt();
    let cdf_neg = |z: f64| 0.5 * erfc(z / std::f64::consts::SQRT_2);
    (1..=10_000)
        .map(|i| {
            let z = i as f64 * 1e-3;
            let h = (1.0 + z * z) * cdf_neg(z) - z * phi(z);
            let den = 1.0 + z * z - 2.0 * h;
            let r = if den > 1e-6 {
                (1.0 - 2.0 / delta * h) / den
            } else {
                f64::NEG_INFINITY
            };
            (r, z)
        })
        .fold(
            (f64::NEG_INFINITY, 0.0),
            |a, b| if b.0 > a.0 { b } else { a },
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// More measurements need a lower threshold: the minimax multiplier falls as delta grows,
    /// and the curve's value is the ratio at that multiplier.
    #[test]
    fn minimax_tau_falls_with_delta() {
        let taus: Vec<f64> = (1..10).map(|i| minimax_tau(i as f64 / 10.0)).collect();
        assert!(taus.windows(2).all(|w| w[1] < w[0]), "{taus:?}");
        assert!(taus.iter().all(|&t| t > 0.0 && t < 3.0), "{taus:?}");
        assert!((l1_curve(0.5) - 0.3848).abs() < 2e-3, "{}", l1_curve(0.5));
    }
}
