use sparrow::solvers::cs::phase::{run, PhaseConfig};
use sparrow::solvers::cs::{Method, Recover};
use sparrow::validate::registry;
use sparrow::Device;

fn dev() -> Device {
    Device::Cuda(super::gpu())
}

/// Runs the validation cases whose names start with `prefix` and fails on any failure.
fn cases(prefix: &str) {
    let d = dev();
    let mut failed = Vec::new();
    let mut ran = 0;
    for case in registry()
        .into_iter()
        .filter(|c| c.name.starts_with(prefix))
    {
        for o in (case.run)(&d).unwrap_or_else(|e| panic!("{}: {e}", case.name)) {
            ran += 1;
            if !o.pass {
                failed.push(format!(
                    "{} [{}]: max_rel {:.2e} > {:.1e} {}",
                    o.kernel, o.shapes, o.max_rel, o.tolerance, o.note
                ));
            }
        }
    }
    assert!(ran > 0, "no {prefix} cases ran");
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Every cs.cu kernel, f32 and f64, ragged (300 items, 256-thread blocks), outputs
/// NaN-filled first, against the CPU references.
#[test]
fn sanitize_cs_kernels() {
    cases("cs-kernels/");
}

/// Every GPU solver (IHT, normalised IHT, HTP, CoSaMP, SP, OMP, AMP, FISTA) against the CPU
/// on one batch: same supports, coefficients within 1e-4 (f32) or 1e-9 (f64) relative to
/// the largest.
#[test]
fn small_cs_gpu_solvers_match_the_cpu() {
    cases("cs-solvers/");
}

/// The recovery acceptance on the GPU: n = 1000, delta = 0.5, rho = 0.1, 100 trials, IHT,
/// AMP and CoSaMP each recovering at least 95.
#[test]
fn cs_recovery_rate_on_the_gpu() {
    let d = dev();
    for method in [Method::Iht, Method::Amp, Method::Cosamp] {
        let cfg = PhaseConfig {
            method,
            n: 1000,
            deltas: vec![0.5],
            rhos: vec![0.1],
            trials: 100,
            signs: false,
            max_iter: 500,
        };
        let r = run(&d, &cfg, &mut |_, _| {}).unwrap();
        assert!(
            r.success[0][0] >= 0.95,
            "{method:?}: {} of 100 recovered",
            r.success[0][0] * 100.0
        );
        let plan = Recover::new(method).sparsity(50).plan(&d, 1000);
        assert_eq!(plan.backend, sparrow::ops::Backend::Cuda, "{plan}");
    }
}
