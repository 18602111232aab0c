//! The GPU solvers against the CPU solvers on one batch with planted sparse signals, and SVT's
//! completion on the GPU against the CPU's; without a GPU, the CPU's solvers against the
//! planted signals.

use super::outcome;
use crate::matrix::{Dense, Rng};
use crate::solvers::cs::data::{gaussian_phi, measure, sparse_signals};
use crate::solvers::cs::gpu::Real;
use crate::solvers::cs::{Method, Recover};
use crate::validate::{Outcome, Reference};
use crate::{Device, Result, Scalar};

/// A batch with planted K-sparse signals: m = 128, n = 256, K = 8, 24 signals.
fn problem(seed: u64) -> Result<(Dense<f64>, Dense<f64>, Dense<f64>)> {
    let (m, n, k, nb) = (128, 256, 8, 24);
    let phi = gaussian_phi(m, n, seed)?;
    let x = sparse_signals(n, k, nb, false, seed + 1)?;
    let y = measure(&phi, &x)?;
    Ok((phi, x, y))
}

fn convert<T: Scalar>(a: &Dense<f64>) -> Result<Dense<T>> {
    Dense::from_rows(
        a.nrows(),
        a.ncols(),
        (0..a.nrows())
            .flat_map(|i| a.row(i).iter().map(|&v| T::from_f64(v)))
            .collect(),
    )
}

/// The GPU solvers against the CPU solvers on the same batch: the same support per signal and
/// coefficients within 1e-4 relative (f32) or 1e-9 (f64) of the largest.
pub(super) fn solvers<T: Real>(device: &Device) -> Result<Vec<Outcome>> {
    let (phi, planted, y) = problem(41)?;
    let (phi_t, y_t) = (convert::<T>(&phi)?, convert::<T>(&y)?);
    let tol = if <T as Scalar>::NAME == "f32" {
        1e-4
    } else {
        1e-9
    };
    let mut out = Vec::new();
    if let (Device::Cuda(_), "f64") = (device, <T as Scalar>::NAME) {
        out.push(svt_agreement(device)?);
    }
    let mut methods = vec![(Method::Iht, Recover::new(Method::Iht).sparsity(8))];
    for m in [
        Method::Niht,
        Method::Htp,
        Method::Cosamp,
        Method::Sp,
        Method::Omp,
    ] {
        methods.push((m, Recover::new(m).sparsity(8)));
    }
    // AMP and FISTA shrink their estimates, so only their agreement with the CPU is exact.
    if let Device::Cuda(_) = device {
        methods.push((Method::Amp, Recover::new(Method::Amp)));
        methods.push((
            Method::Fista,
            Recover::new(Method::Fista).lambda(0.01).max_iter(300),
        ));
    }
    for (method, req) in methods {
        let (cpu, _) = req.run(&Device::Cpu, &phi_t, &y_t)?;
        let (got, plan, reference, want) = match device {
            Device::Cuda(_) => {
                let (g, plan) = req.run(device, &phi_t, &y_t)?;
                // Every method runs on the GPU at this size; one that fell back to the CPU
                // would be compared with itself.
                if plan.backend != crate::ops::Backend::Cuda {
                    let mut o = outcome(
                        format!("recover {method:?}"),
                        "m = 128, n = 256, K = 8, 24 signals",
                        &[],
                        &[],
                        &[],
                        tol,
                    );
                    o.pass = false;
                    o.note = format!("ran on the CPU: {}", plan.reason);
                    out.push(o);
                    continue;
                }
                (g, plan, Reference::CrossBackend, cpu)
            }
            Device::Cpu => {
                let planted_t = convert::<T>(&planted)?;
                let support = (0..planted.ncols())
                    .map(|b| {
                        (0..planted.nrows())
                            .filter(|&j| planted.get(j, b) != 0.0)
                            .collect()
                    })
                    .collect();
                let want = crate::solvers::cs::Recovery {
                    x: planted_t,
                    support,
                    residual_norm: Vec::new(),
                    iterations: Vec::new(),
                    stop: Vec::new(),
                };
                (
                    cpu,
                    req.plan(device, phi.ncols()),
                    Reference::Rederivation,
                    want,
                )
            }
        };
        let flat = |d: &Dense<T>| -> Vec<f64> {
            (0..d.nrows())
                .flat_map(|i| d.row(i).iter().map(|v| v.to_f64()).collect::<Vec<_>>())
                .collect()
        };
        let (got_x, want_x) = (flat(&got.x), flat(&want.x));
        let scale = want_x.iter().map(|v| v.abs()).fold(0.0, f64::max);
        // IHT's support is exact. AMP and FISTA soft-threshold, so an entry at the threshold
        // may be zero in one precision and a rounding above it in the other: their supports
        // are compared on the entries above the tolerance.
        let support_ok = if method == Method::Iht {
            got.support == want.support
        } else {
            let sig =
                |x: &[f64]| -> Vec<bool> { x.iter().map(|v| v.abs() > tol * scale).collect() };
            sig(&got_x) == sig(&want_x)
        };
        let mut o = outcome(
            format!(
                "recover {method:?} [{}]",
                plan.reason.split(':').next().unwrap_or("")
            ),
            "m = 128, n = 256, K = 8, 24 signals",
            &got_x,
            &want_x,
            &vec![scale; want_x.len()],
            if reference == Reference::Rederivation {
                1e-3
            } else {
                tol
            },
        );
        o.reference = reference;
        if !support_ok {
            o.pass = false;
            o.note = "supports differ".into();
        }
        out.push(o);
    }
    Ok(out)
}

/// SVT on the GPU (randomized SVD) against the CPU (full SVD): a rank-3 60 x 50 matrix with
/// half its entries observed; the completions agree within 1e-3 of the largest entry.
fn svt_agreement(device: &Device) -> Result<Outcome> {
    use crate::matrix::Csr;
    use crate::solvers::completion::Complete;
    let (m, n, r) = (60usize, 50usize, 3usize);
    let mut rng = Rng::new(23);
    let u: Vec<f64> = (0..m * r).map(|_| rng.range_f64(-1.0, 1.0)).collect();
    let v: Vec<f64> = (0..n * r).map(|_| rng.range_f64(-1.0, 1.0)).collect();
    let full = |i: usize, j: usize| (0..r).map(|k| u[i * r + k] * v[j * r + k]).sum::<f64>();
    let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..m {
        for j in 0..n {
            if rng.uniform() < 0.5 {
                rows.push(i);
                cols.push(j);
                vals.push(full(i, j));
            }
        }
    }
    let obs = Csr::from_triplets(m, n, &rows, &cols, &vals)?;
    let req = Complete::new(10);
    let cpu = req.run(&obs)?;
    let (gpu, plan) = req.run_on(device, &obs)?;
    let flat = |d: &Dense<f64>| -> Vec<f64> { (0..m).flat_map(|i| d.row(i).to_vec()).collect() };
    let (got, want) = (flat(&gpu.x), flat(&cpu.x));
    let top = want.iter().fold(0f64, |x, v| x.max(v.abs()));
    let mut o = outcome(
        format!(
            "complete (SVT) [{}]",
            plan.reason.split(':').next().unwrap_or("")
        ),
        "60 x 50, rank 3, half observed",
        &got,
        &want,
        &vec![top; m * n],
        1e-3,
    );
    o.reference = Reference::CrossBackend;
    if gpu.rank != cpu.rank {
        o.pass = false;
        o.note = format!("rank {} on the GPU, {} on the CPU", gpu.rank, cpu.rank);
    } else {
        o.note = format!(
            "{} GPU and {} CPU iterations, rank {}",
            gpu.iterations, cpu.iterations, gpu.rank
        );
    }
    Ok(o)
}
