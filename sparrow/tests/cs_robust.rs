//! Recovery and completion never hand back garbage with success: iterates that diverge or
//! become non-finite end in a numerical error naming the method, the signal and the iteration;
//! AMP (and every method but FISTA, whose lambda has Phi's units) gives the same answer for any
//! column scale of Phi; options a method ignores, SVT steps outside (0, 2), enormous
//! completions and enormous phase-transition grids are refused up front.

#[cfg(not(feature = "internals"))]
compile_error!("the library's integration tests use its layers: run `cargo test --workspace`, or `cargo test -p sparrow --features testing`");

use sparrow::matrix::{Csr, Dense, Rng};
use sparrow::solvers::completion::Complete;
use sparrow::solvers::cs::data::{gaussian_phi, measure, sparse_signals};
use sparrow::solvers::cs::phase::{parse_range, run as run_phase, PhaseConfig};
use sparrow::solvers::cs::{Method, Recover};
use sparrow::{Device, Error};

/// Phi with its columns scaled to unit norm.
fn unit_columns(phi: &Dense<f64>) -> Dense<f64> {
    let (m, n) = (phi.nrows(), phi.ncols());
    let norms: Vec<f64> = (0..n)
        .map(|j| (0..m).map(|i| phi.get(i, j).powi(2)).sum::<f64>().sqrt())
        .collect();
    scale_columns(phi, &norms.iter().map(|c| 1.0 / c).collect::<Vec<_>>())
}

/// Phi diag(s).
fn scale_columns(phi: &Dense<f64>, s: &[f64]) -> Dense<f64> {
    let (m, n) = (phi.nrows(), phi.ncols());
    Dense::from_rows(
        m,
        n,
        (0..m)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .map(|(i, j)| phi.get(i, j) * s[j])
            .collect(),
    )
    .unwrap()
}

/// Every entry times c.
fn times(d: &Dense<f64>, c: f64) -> Dense<f64> {
    let (r, k) = (d.nrows(), d.ncols());
    Dense::from_rows(
        r,
        k,
        (0..r)
            .flat_map(|i| (0..k).map(move |j| (i, j)))
            .map(|(i, j)| d.get(i, j) * c)
            .collect(),
    )
    .unwrap()
}

/// Row j of x divided by s[j] (the signal that Phi diag(s) maps to the same y).
fn divide_rows(x: &Dense<f64>, s: &[f64]) -> Dense<f64> {
    let (n, nb) = (x.nrows(), x.ncols());
    Dense::from_rows(
        n,
        nb,
        (0..n)
            .flat_map(|j| (0..nb).map(move |b| (j, b)))
            .map(|(j, b)| x.get(j, b) / s[j])
            .collect(),
    )
    .unwrap()
}

/// Largest ||a - b|| / ||b|| over the columns.
fn worst(a: &Dense<f64>, b: &Dense<f64>) -> f64 {
    (0..b.ncols())
        .map(|c| {
            let (mut e, mut s) = (0.0, 0.0);
            for j in 0..b.nrows() {
                e += (a.get(j, c) - b.get(j, c)).powi(2);
                s += b.get(j, c).powi(2);
            }
            (e / s).sqrt()
        })
        .fold(0.0, f64::max)
}

/// Per-column factors drawn log-uniformly from [0.1, 10].
fn factors(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| 10f64.powf(rng.range_f64(-1.0, 1.0)))
        .collect()
}

fn numerical(e: Error) -> (String, String) {
    match e {
        Error::Numerical { what, why } => (what, why),
        other => panic!("expected a numerical error, got {other:?}: {other}"),
    }
}

fn invalid(e: Error) -> (String, String) {
    match e {
        Error::InvalidArgument { arg, why } => (arg, why),
        other => panic!("expected an invalid argument, got {other:?}: {other}"),
    }
}

/// The reported case: AMP solves a problem with unit-norm Gaussian columns, and must solve it
/// to the same x with Phi and y both scaled by 10 and by 0.1, and with Phi's columns scaled by
/// per-column factors in [0.1, 10] (the true x divided by them).
#[test]
fn amp_gives_the_same_x_for_any_column_scale() {
    let (m, n, k, batch) = (250, 500, 10, 3);
    let phi = unit_columns(&gaussian_phi(m, n, 3).unwrap());
    let x = sparse_signals(n, k, batch, true, 4).unwrap();
    let y = measure(&phi, &x).unwrap();
    let req = Recover::new(Method::Amp).max_iter(500).tol(1e-10);
    let (base, _) = req.run(&Device::Cpu, &phi, &y).unwrap();
    assert!(
        worst(&base.x, &x) < 1e-3,
        "unit columns: {}",
        worst(&base.x, &x)
    );
    for c in [10.0, 0.1] {
        let (rec, _) = req
            .run(&Device::Cpu, &times(&phi, c), &times(&y, c))
            .unwrap_or_else(|e| panic!("scale {c}: {e}"));
        let (d, t) = (worst(&rec.x, &base.x), worst(&rec.x, &x));
        assert!(
            d < 1e-6 && t < 1e-3,
            "scale {c}: {d} from the unit solve, {t} from x"
        );
    }
    let s = factors(n, 9);
    let (rec, _) = req.run(&Device::Cpu, &scale_columns(&phi, &s), &y).unwrap();
    let want = divide_rows(&x, &s);
    let t = worst(&rec.x, &want);
    let d = worst(&rec.x, &divide_rows(&base.x, &s));
    assert!(
        d < 1e-6 && t < 1e-3,
        "column factors: {d} from the unit solve, {t} from x"
    );
}

/// The methods with a sparsity K recover the same signals whatever the column scales of Phi.
#[test]
fn every_sparsity_method_is_indifferent_to_column_scale() {
    let (m, n, k, batch) = (128, 256, 8, 4);
    let phi = gaussian_phi(m, n, 1).unwrap();
    let x = sparse_signals(n, k, batch, true, 2).unwrap();
    let y = measure(&phi, &x).unwrap();
    let s = factors(n, 5);
    let (phi_s, x_s) = (scale_columns(&phi, &s), divide_rows(&x, &s));
    for method in [
        Method::Iht,
        Method::Niht,
        Method::Htp,
        Method::Cosamp,
        Method::Sp,
        Method::Omp,
    ] {
        let req = Recover::new(method).sparsity(k).max_iter(3000).tol(1e-9);
        for c in [10.0, 0.1] {
            let (rec, _) = req
                .run(&Device::Cpu, &times(&phi, c), &times(&y, c))
                .unwrap();
            let e = worst(&rec.x, &x);
            assert!(e < 1e-3, "{method:?} at scale {c}: relative error {e}");
        }
        let (rec, _) = req.run(&Device::Cpu, &phi_s, &y).unwrap();
        let e = worst(&rec.x, &x_s);
        assert!(
            e < 1e-3,
            "{method:?} with column factors: relative error {e}"
        );
    }
}

/// FISTA solves the LASSO as posed: lambda is in the units of Phi^T y, so scaling Phi and y by
/// c and lambda by c^2 gives the same x.
#[test]
fn fista_lambda_carries_the_units_of_phi() {
    let (m, n, k) = (128, 256, 6);
    let phi = gaussian_phi(m, n, 13).unwrap();
    let x = sparse_signals(n, k, 2, true, 14).unwrap();
    let y = measure(&phi, &x).unwrap();
    let run = |c: f64| {
        Recover::new(Method::Fista)
            .lambda(1e-3 * c * c)
            .max_iter(3000)
            .tol(1e-12)
            .run(&Device::Cpu, &times(&phi, c), &times(&y, c))
            .unwrap()
            .0
    };
    let base = run(1.0);
    for c in [10.0, 0.1] {
        let d = worst(&run(c).x, &base.x);
        assert!(d < 1e-6, "scale {c}: {d}");
    }
}

/// Phi whose columns all share one direction (ones plus a little noise): IHT's fixed step is
/// far too long for it, and the iterates grow without bound. Signal 0 is zero (solved at
/// once); signal 1 diverges, and the error names IHT, signal 1 and the iteration.
#[test]
fn iht_divergence_is_an_error_naming_method_signal_and_iteration() {
    let (m, n, k) = (60, 120, 6);
    let noise = gaussian_phi(m, n, 17).unwrap();
    let phi = Dense::from_rows(
        m,
        n,
        (0..m)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .map(|(i, j)| 1.0 + 0.01 * noise.get(i, j))
            .collect(),
    )
    .unwrap();
    let x = sparse_signals(n, k, 2, true, 18).unwrap();
    let mut y = measure(&phi, &x).unwrap();
    for i in 0..m {
        y.data_mut()[i * 2] = 0.0;
    }
    let e = Recover::new(Method::Iht)
        .sparsity(k)
        .run(&Device::Cpu, &phi, &y)
        .unwrap_err();
    let text = e.to_string();
    let (what, why) = numerical(e);
    assert_eq!(what, "iht recovery of signal 1", "{text}");
    assert!(why.starts_with("at iteration "), "{text}");
    assert!(
        why.contains("niht"),
        "names a method that chooses its step: {text}"
    );
    assert!(
        !text.contains("--"),
        "no CLI flags in library messages: {text}"
    );
}

/// AMP assumes roughly zero-mean entries; on a Phi whose entries share a large mean its
/// iterates blow up (within a few iterations), and that is an error naming AMP, what to use
/// instead and the threshold multiplier.
#[test]
fn amp_divergence_is_an_error_naming_tau() {
    let (m, n, k) = (100, 200, 10);
    let noise = gaussian_phi(m, n, 21).unwrap();
    let phi = Dense::from_rows(
        m,
        n,
        (0..m)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .map(|(i, j)| 0.5 + noise.get(i, j))
            .collect(),
    )
    .unwrap();
    let x = sparse_signals(n, k, 1, true, 22).unwrap();
    let y = measure(&phi, &x).unwrap();
    let e = Recover::new(Method::Amp)
        .run(&Device::Cpu, &phi, &y)
        .unwrap_err();
    let text = e.to_string();
    let (what, why) = numerical(e);
    assert_eq!(what, "amp recovery of signal 0", "{text}");
    assert!(why.contains("threshold multiplier tau"), "{text}");
    assert!(why.contains("fista or cosamp"), "{text}");
    assert!(!text.contains("--"), "{text}");
}

/// Options the chosen method ignores are refused, naming the method; so are a non-finite or
/// negative tolerance and a zero iteration cap.
#[test]
fn options_a_method_ignores_are_refused() {
    let phi = gaussian_phi(20, 40, 7).unwrap();
    let y = Dense::filled(20, 2, 2, 1.0).unwrap();
    let err = |r: Recover| invalid(r.run(&Device::Cpu, &phi, &y).unwrap_err());
    let (arg, why) = err(Recover::new(Method::Amp).sparsity(3));
    assert_eq!(arg, "sparsity");
    assert!(why.starts_with("amp does not use sparsity; "), "{why}");
    let (arg, why) = err(Recover::new(Method::Fista).lambda(0.1).sparsity(3));
    assert_eq!(arg, "sparsity");
    assert!(why.starts_with("fista does not use sparsity; "), "{why}");
    for m in [
        Method::Iht,
        Method::Niht,
        Method::Htp,
        Method::Cosamp,
        Method::Sp,
        Method::Omp,
    ] {
        let (arg, why) = err(Recover::new(m).sparsity(3).lambda(0.1));
        assert_eq!(arg, "lambda", "{m:?}");
        assert!(why.contains("does not use lambda"), "{why}");
        let mut r = Recover::new(m).sparsity(3);
        r.tau = Some(1.5);
        let (arg, why) = err(r);
        assert_eq!(arg, "tau", "{m:?}");
        assert!(why.contains("does not use tau"), "{why}");
    }
    let (arg, why) = err(Recover::new(Method::Amp).lambda(0.1));
    assert_eq!(
        (arg.as_str(), why.starts_with("amp does not use lambda; ")),
        ("lambda", true),
        "{why}"
    );
    let mut r = Recover::new(Method::Fista).lambda(0.1);
    r.tau = Some(1.5);
    let (arg, why) = err(r);
    assert_eq!(
        (arg.as_str(), why.starts_with("fista does not use tau; ")),
        ("tau", true),
        "{why}"
    );
    for t in [f64::NAN, f64::INFINITY, -1e-6] {
        let (arg, _) = err(Recover::new(Method::Amp).tol(t));
        assert_eq!(arg, "tol", "{t}");
    }
    let (arg, why) = err(Recover::new(Method::Amp).max_iter(0));
    assert_eq!(
        (arg.as_str(), why.as_str()),
        ("max-iter", "must be at least 1")
    );
    // What each method does use is still accepted.
    let mut amp = Recover::new(Method::Amp);
    amp.tau = Some(1.5);
    assert!(amp.run(&Device::Cpu, &phi, &y).is_ok());
}

/// The rank-3, half-observed completion of the CPU tests, its entries times `scale`.
fn low_rank(scale: f64) -> (Csr<f64>, impl Fn(usize, usize) -> f64) {
    let (m, n, r) = (60, 50, 3);
    let u = gaussian_phi(m, r, 21).unwrap();
    let v = gaussian_phi(n, r, 22).unwrap();
    let full =
        move |i: usize, j: usize| scale * (0..r).map(|k| u.get(i, k) * v.get(j, k)).sum::<f64>();
    let mut rng = Rng::new(23);
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
    (Csr::from_triplets(m, n, &rows, &cols, &vals).unwrap(), full)
}

/// The reported case: a threshold tau of 1 (far below the default, 778 for these entries)
/// with the default step 1.2 m n / |Omega| = 2.4 made SVT's iterates grow without bound and
/// return them. That is now a numerical error that names the threshold and the step; a step
/// in (0, 2) is what SVT is guaranteed to converge with, and an explicit one outside it is
/// refused up front.
#[test]
fn svt_refuses_bad_steps_and_reports_divergence() {
    let (obs, _) = low_rank(100.0);
    let mut req = Complete::new(10);
    req.tau = Some(1.0);
    let out = req.run(&obs);
    let e = match out {
        Ok(c) => panic!(
            "SVT with tau = 1 returned success: entries up to {:e}, {} iterations",
            c.x.data().iter().fold(0f64, |a, v| a.max(v.abs())),
            c.iterations
        ),
        Err(e) => e,
    };
    let text = e.to_string();
    let (what, why) = numerical(e);
    assert_eq!(what, "SVT", "{text}");
    assert!(why.starts_with("at iteration "), "{text}");
    assert!(
        why.contains("threshold tau") && why.contains("step delta"),
        "{text}"
    );
    assert!(!text.contains("--"), "{text}");
    for d in [0.0, -1.0, 2.0, 2.5, f64::NAN, f64::INFINITY] {
        let mut r = Complete::new(10);
        r.delta = Some(d);
        let (arg, why) = invalid(r.run(&obs).unwrap_err());
        assert_eq!(arg, "delta", "{d}");
        assert!(why.contains("(0, 2)"), "{why}");
    }
    for t in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let mut r = Complete::new(10);
        r.tau = Some(t);
        let (arg, _) = invalid(r.run(&obs).unwrap_err());
        assert_eq!(arg, "tau", "{t}");
    }
    let mut r = Complete::new(10);
    r.max_iter = 0;
    assert_eq!(invalid(r.run(&obs).unwrap_err()).0, "max-iter");
    let mut r = Complete::new(10);
    r.tol = f64::NAN;
    assert_eq!(invalid(r.run(&obs).unwrap_err()).0, "tol");
}

/// The same small threshold with a step inside (0, 2) does not diverge.
#[test]
fn svt_with_a_step_below_two_does_not_diverge_for_a_small_tau() {
    let (obs, _) = low_rank(100.0);
    let mut req = Complete::new(10);
    req.tau = Some(1.0);
    req.delta = Some(1.0);
    let c = req.run(&obs).unwrap();
    assert!(
        c.relative_residual < 1.0 && c.x.data().iter().all(|v| v.is_finite()),
        "relative residual {}",
        c.relative_residual
    );
}

/// A 100,000 x 100,000 completion needs hundreds of GiB of dense matrices: refused before
/// anything is allocated, saying how much it needs.
#[test]
fn an_enormous_completion_is_too_large_not_a_panic() {
    let obs = Csr::from_triplets(100_000, 100_000, &[0, 5], &[0, 7], &[1.0, 2.0]).unwrap();
    let e = Complete::new(1).run(&obs).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, Error::TooLarge { .. }), "{text}");
    assert!(text.contains("GiB"), "{text}");
}

/// Phase-transition grids: a step that is not positive, a non-finite bound, or a grid of more
/// than 10,000 points per axis are refused, naming the axis.
#[test]
fn enormous_or_malformed_phase_grids_are_refused() {
    assert_eq!(
        parse_range("delta", "0.1:0.5:0.2").unwrap(),
        vec![0.1, 0.3, 0.5]
    );
    for s in [
        "0.1:0.9:1e-9",
        "0.1:0.9:0",
        "0.1:0.9:-0.1",
        "0.1:inf:0.1",
        "nan:0.5:0.1",
        "0.1:0.5:inf",
        "0.1:0.5:nan",
    ] {
        let (arg, why) = invalid(parse_range("delta", s).unwrap_err());
        assert_eq!(arg, "delta", "{s}: {why}");
    }
    let (_, why) = invalid(parse_range("rho", "0.00001:1:0.00001").unwrap_err());
    assert!(why.contains("10000") || why.contains("10,000"), "{why}");
    let cfg = |deltas: Vec<f64>, rhos: Vec<f64>| PhaseConfig {
        method: Method::Iht,
        n: 50,
        deltas,
        rhos,
        trials: 1,
        signs: true,
        max_iter: 10,
    };
    let run = |c: PhaseConfig| invalid(run_phase(&Device::Cpu, &c, &mut |_, _| {}).unwrap_err());
    assert_eq!(run(cfg(vec![0.5; 10_001], vec![0.1])).0, "delta");
    assert_eq!(run(cfg(vec![0.5], vec![f64::NAN])).0, "rho");
    assert_eq!(run(cfg(vec![1.5], vec![0.1])).0, "delta");
    assert_eq!(run(cfg(vec![], vec![0.1])).0, "delta");
}
