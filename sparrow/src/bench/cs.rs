//! Benchmark of batched compressed sensing: IHT on B signals (Gaussian Phi, K-sparse planted
//! signals), time per iteration on the GPU beside the two cuBLAS GEMMs each iteration needs,
//! and the CPU backend's time per iteration on a subset of the signals, scaled to the batch
//! (the signals are independent, so the CPU's cost is linear in their number).

use std::time::Instant;

use crate::device::Gpu;
use crate::solvers::cs::data::{gaussian_phi, sparse_signals};
use crate::solvers::cs::gpu::{time_iht, IhtTiming};
use crate::solvers::cs::linalg::Phi;
use crate::solvers::cs::{cpu, Method, Recover};
use crate::Result;

/// One measured configuration.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CsRecord {
    /// Measurements per signal.
    pub m: usize,
    /// Signal length.
    pub n: usize,
    /// Sparsity.
    pub k: usize,
    /// Signals in the batch.
    pub batch: usize,
    /// The GPU's precision.
    pub dtype: &'static str,
    /// GPU times.
    pub gpu: IhtTiming,
    /// IHT iteration over the two GEMMs (target at most 1.5).
    pub ratio_to_gemms: f64,
    /// CPU time per iteration for the whole batch, ms (scaled from `cpu_signals`).
    pub cpu_iteration_ms: Option<f64>,
    /// Signals the CPU time was measured on.
    pub cpu_signals: usize,
}

/// Runs the benchmark: `iters` timed GPU iterations, the CPU on `cpu_signals` signals (0 to
/// skip it).
#[allow(clippy::too_many_arguments)]
pub fn run(
    gpu: &Gpu,
    m: usize,
    n: usize,
    k: usize,
    batch: usize,
    iters: usize,
    cpu_signals: usize,
    f64_too: bool,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<CsRecord>> {
    progress("generating the problem");
    let phi = gaussian_phi(m, n, 5)?;
    let x = sparse_signals(n, k, batch, false, 6)?;
    let a: Vec<f64> = (0..m).flat_map(|i| phi.row(i).to_vec()).collect();
    // y = Phi x through each signal's support only.
    let ys: Vec<Vec<f64>> = (0..batch)
        .map(|b| {
            let mut y = vec![0.0; m];
            for j in (0..n).filter(|&j| x.get(j, b) != 0.0) {
                let v = x.get(j, b);
                for (i, yi) in y.iter_mut().enumerate() {
                    *yi += a[i * n + j] * v;
                }
            }
            y
        })
        .collect();
    let cpu_iteration_ms = if cpu_signals > 0 {
        progress("timing the CPU");
        let p = Phi { m, n, a: a.clone() };
        let col_energy = a.iter().map(|v| v * v).sum::<f64>() / n as f64;
        let step = 0.65 / col_energy;
        let sub = &ys[..cpu_signals.min(batch)];
        let wall = |max_iter: usize| {
            let req = Recover::new(Method::Iht)
                .sparsity(k)
                .max_iter(max_iter)
                .tol(1e-30);
            let t0 = Instant::now();
            use rayon::prelude::*;
            let its: usize = sub
                .par_iter()
                .map(|y| cpu::solve(&req, &p, y, step).iterations)
                .sum();
            (t0.elapsed().as_secs_f64() * 1e3, its)
        };
        let (t1, i1) = wall(1);
        let (t3, i3) = wall(3);
        // Wall time per signal-iteration with every core busy, times the batch.
        Some((t3 - t1) / (i3.saturating_sub(i1)).max(1) as f64 * batch as f64)
    } else {
        None
    };
    let mut out = Vec::new();
    let mut types = vec!["f32"];
    if f64_too {
        types.push("f64");
    }
    for ty in types {
        progress(&format!("timing IHT on the GPU ({ty})"));
        let t = if ty == "f32" {
            time_iht::<f32>(gpu, m, n, &a, &ys, k, iters)?
        } else {
            time_iht::<f64>(gpu, m, n, &a, &ys, k, iters)?
        };
        out.push(CsRecord {
            m,
            n,
            k,
            batch,
            dtype: ty,
            gpu: t,
            ratio_to_gemms: t.iteration_ms / t.gemms_ms,
            cpu_iteration_ms,
            cpu_signals: if cpu_signals > 0 {
                cpu_signals.min(batch)
            } else {
                0
            },
        });
    }
    Ok(out)
}
