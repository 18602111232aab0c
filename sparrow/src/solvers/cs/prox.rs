//! The elementwise steps of the solvers, as CPU references: the GPU kernels of these steps are
//! checked against exactly these functions.

/// Hard threshold: `|x| > t ? x : 0`.
pub fn hard_threshold(x: &[f64], t: f64) -> Vec<f64> {
    x.iter()
        .map(|&v| if v.abs() > t { v } else { 0.0 })
        .collect()
}

/// Soft threshold: `sign(x) max(|x| - lambda, 0)`.
pub fn soft_threshold(x: &[f64], lambda: f64) -> Vec<f64> {
    x.iter()
        .map(|&v| v.signum() * (v.abs() - lambda).max(0.0))
        .collect()
}

/// IHT step: `x + mu g`.
pub fn iht_step(x: &[f64], g: &[f64], mu: f64) -> Vec<f64> {
    x.iter().zip(g).map(|(a, b)| a + mu * b).collect()
}

/// AMP residual with the Onsager term: `z = y - Phi x + (||x||_0 / m) z_prev`, given `phi_x`.
pub fn amp_residual(y: &[f64], phi_x: &[f64], x: &[f64], z_prev: &[f64]) -> Vec<f64> {
    let m = y.len() as f64;
    let nnz = x.iter().filter(|v| **v != 0.0).count() as f64;
    y.iter()
        .zip(phi_x)
        .zip(z_prev)
        .map(|((y, p), z)| y - p + nnz / m * z)
        .collect()
}

/// Singular-value shrink `max(sigma - tau, 0)`, with the nuclear norm of the result.
pub fn sv_shrink(sigma: &[f64], tau: f64) -> (Vec<f64>, f64) {
    let s: Vec<f64> = sigma.iter().map(|&v| (v - tau).max(0.0)).collect();
    let nuc = s.iter().sum();
    (s, nuc)
}

/// Total-variation forward difference: `d[i] = x[i + 1] - x[i]`, last element 0.
pub fn tv_forward_difference(x: &[f64]) -> Vec<f64> {
    let mut d = vec![0.0; x.len()];
    for i in 0..x.len().saturating_sub(1) {
        d[i] = x[i + 1] - x[i];
    }
    d
}
