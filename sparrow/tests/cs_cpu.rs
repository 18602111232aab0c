//! Compressed-sensing recovery on the CPU: every solver recovers K-sparse signals from Gaussian
//! measurements in its regime, the elementwise steps match their definitions, and bad requests
//! (K larger than m, a zero column of Phi, NaN in y, mismatched shapes) are clear errors.

#[cfg(not(feature = "internals"))]
compile_error!("the library's integration tests use its layers: run `cargo test --workspace`, or `cargo test -p sparrow --features testing`");

use sparrow::matrix::Dense;
use sparrow::solvers::cs::data::{gaussian_phi, measure, sparse_signals};
use sparrow::solvers::cs::prox::{
    amp_residual, hard_threshold, soft_threshold, sv_shrink, tv_forward_difference,
};
use sparrow::solvers::cs::{Method, Recover, StopReason};
use sparrow::Device;

/// Largest ||x_hat - x|| / ||x|| over the batch.
fn worst_error(xh: &Dense<f64>, x: &Dense<f64>) -> f64 {
    (0..x.ncols())
        .map(|b| {
            let (mut e, mut s) = (0.0, 0.0);
            for j in 0..x.nrows() {
                e += (xh.get(j, b) - x.get(j, b)).powi(2);
                s += x.get(j, b).powi(2);
            }
            (e / s).sqrt()
        })
        .fold(0.0, f64::max)
}

#[test]
fn greedy_and_thresholding_solvers_recover_sparse_signals() {
    let (m, n, k, batch) = (128, 256, 8, 6);
    let phi = gaussian_phi(m, n, 1).unwrap();
    let x = sparse_signals(n, k, batch, true, 2).unwrap();
    let y = measure(&phi, &x).unwrap();
    for method in [
        Method::Iht,
        Method::Niht,
        Method::Htp,
        Method::Cosamp,
        Method::Sp,
        Method::Omp,
    ] {
        let req = Recover::new(method).sparsity(k).max_iter(3000).tol(1e-9);
        let (rec, plan) = req.run(&Device::Cpu, &phi, &y).unwrap();
        let err = worst_error(&rec.x, &x);
        assert!(
            err < 1e-3,
            "{method:?}: relative error {err}, stops {:?}",
            rec.stop
        );
        assert!(
            rec.support.iter().all(|s| s.len() <= k),
            "{method:?} returned more than K entries"
        );
        assert_eq!(plan.reason, "the device is the CPU: rayon over signals");
    }
}

#[test]
fn amp_and_fista_recover_in_their_regimes() {
    let (m, n, k, batch) = (250, 500, 10, 4);
    let phi = gaussian_phi(m, n, 3).unwrap();
    let x = sparse_signals(n, k, batch, true, 4).unwrap();
    let y = measure(&phi, &x).unwrap();
    let (rec, _) = Recover::new(Method::Amp)
        .max_iter(500)
        .tol(1e-10)
        .run(&Device::Cpu, &phi, &y)
        .unwrap();
    let err = worst_error(&rec.x, &x);
    assert!(
        err < 1e-3,
        "AMP: relative error {err}, stops {:?}",
        rec.stop
    );
    // The LASSO solution is biased by lambda; with a small lambda it lands close to x.
    let (rec, _) = Recover::new(Method::Fista)
        .lambda(1e-4)
        .max_iter(5000)
        .tol(1e-10)
        .run(&Device::Cpu, &phi, &y)
        .unwrap();
    let err = worst_error(&rec.x, &x);
    assert!(
        err < 1e-2,
        "FISTA: relative error {err}, stops {:?}",
        rec.stop
    );
}

#[test]
fn omp_stops_at_k_and_reports_why() {
    let phi = gaussian_phi(40, 80, 5).unwrap();
    let x = sparse_signals(80, 3, 2, true, 6).unwrap();
    let y = measure(&phi, &x).unwrap();
    let (rec, _) = Recover::new(Method::Omp)
        .sparsity(3)
        .run(&Device::Cpu, &phi, &y)
        .unwrap();
    for (s, st) in rec.support.iter().zip(&rec.stop) {
        assert_eq!(s.len(), 3);
        assert!(
            matches!(st, StopReason::Residual | StopReason::SparsityReached),
            "{st:?}"
        );
    }
    let zero = Dense::filled(40, 1, 1, 0.0).unwrap();
    let (rec, _) = Recover::new(Method::Iht)
        .sparsity(3)
        .run(&Device::Cpu, &phi, &zero)
        .unwrap();
    assert_eq!(
        (rec.iterations[0], rec.stop[0], rec.support[0].len()),
        (0, StopReason::Residual, 0)
    );
}

#[test]
fn failure_modes_are_clear_errors() {
    let phi = gaussian_phi(20, 40, 7).unwrap();
    let y = Dense::filled(20, 2, 2, 1.0).unwrap();
    let err = |r: Recover, phi: &Dense<f64>, y: &Dense<f64>| {
        r.run(&Device::Cpu, phi, y).unwrap_err().to_string()
    };
    assert_eq!(
        err(Recover::new(Method::Cosamp).sparsity(21), &phi, &y),
        "invalid argument `sparsity`: K = 21 is larger than the 20 measurements"
    );
    assert_eq!(
        err(Recover::new(Method::Iht), &phi, &y),
        "invalid argument `sparsity`: Iht needs the sparsity K"
    );
    assert_eq!(
        err(Recover::new(Method::Fista), &phi, &y),
        "invalid argument `lambda`: FISTA needs lambda"
    );
    let mut z = phi.clone();
    for i in 0..20 {
        z.data_mut()[i * 40 + 17] = 0.0;
    }
    assert_eq!(
        err(Recover::new(Method::Omp).sparsity(3), &z, &y),
        "invalid argument `phi`: column 17 is zero: that coefficient cannot be recovered"
    );
    let mut bad = y.clone();
    bad.data_mut()[5 * 2 + 1] = f64::NAN;
    assert_eq!(
        err(Recover::new(Method::Amp), &phi, &bad),
        "invalid argument `y`: signal 1 has a non-finite measurement at row 5"
    );
    let short = Dense::filled(19, 2, 2, 1.0).unwrap();
    assert_eq!(
        err(Recover::new(Method::Amp), &phi, &short),
        "invalid argument `y`: has 19 rows but Phi has 20"
    );
    assert_eq!("lasso".parse::<Method>().unwrap_err().to_string(), "invalid argument `--method`: \"lasso\" is not iht, niht, htp, cosamp, sp, omp, amp or fista");
}

#[test]
fn elementwise_steps_match_their_definitions() {
    assert_eq!(
        hard_threshold(&[0.5, -2.0, 1.0, -1.0], 1.0),
        vec![0.0, -2.0, 0.0, 0.0]
    );
    assert_eq!(soft_threshold(&[0.5, -2.0, 3.0], 1.0), vec![0.0, -1.0, 2.0]);
    assert_eq!(
        tv_forward_difference(&[1.0, 4.0, 2.0]),
        vec![3.0, -2.0, 0.0]
    );
    assert_eq!(sv_shrink(&[5.0, 2.0, 0.5], 1.0), (vec![4.0, 1.0, 0.0], 5.0));
    // Onsager term: ||x||_0 / m of the previous residual.
    assert_eq!(
        amp_residual(&[1.0, 2.0], &[0.5, 0.5], &[0.0, 3.0, 0.0, 1.0], &[2.0, 4.0]),
        vec![2.5, 5.5]
    );
}

/// The regime of the recovery target: n = 1000, delta = m / n = 0.5, rho = K / m = 0.1, +-1
/// entries; IHT, CoSaMP and AMP must each succeed (relative error below 1e-3) in at least 95%
/// of the trials.
#[test]
fn iht_cosamp_amp_succeed_at_delta_half_rho_tenth() {
    let (m, n, k, batch) = (500, 1000, 50, 20);
    let phi = gaussian_phi(m, n, 11).unwrap();
    let x = sparse_signals(n, k, batch, true, 12).unwrap();
    let y = measure(&phi, &x).unwrap();
    for method in [Method::Iht, Method::Cosamp, Method::Amp] {
        // AMP takes no sparsity (it would be refused as an option it ignores).
        let mut req = Recover::new(method).max_iter(1000).tol(1e-8);
        if method.needs_sparsity() {
            req = req.sparsity(k);
        }
        let (rec, _) = req.run(&Device::Cpu, &phi, &y).unwrap();
        let ok = (0..batch)
            .filter(|&b| {
                let (mut e, mut s) = (0.0, 0.0);
                for j in 0..n {
                    e += (rec.x.get(j, b) - x.get(j, b)).powi(2);
                    s += x.get(j, b).powi(2);
                }
                (e / s).sqrt() < 1e-3
            })
            .count();
        assert!(
            ok * 100 >= 95 * batch,
            "{method:?}: {ok} of {batch} recovered"
        );
    }
}

#[test]
fn l1_phase_transition_curve() {
    use sparrow::solvers::cs::phase::l1_curve;
    let v: Vec<f64> = [0.1, 0.3, 0.5, 0.7, 0.9]
        .iter()
        .map(|&d| l1_curve(d))
        .collect();
    eprintln!("{v:?}");
    assert!(
        v.windows(2).all(|w| w[0] < w[1]),
        "rho(delta) increases: {v:?}"
    );
    // The published weak threshold of the cross-polytope at delta = 0.5 is about 0.385.
    assert!((v[2] - 0.385).abs() < 0.01, "rho(0.5) = {}", v[2]);
}

#[test]
fn svt_completes_a_low_rank_matrix() {
    use sparrow::matrix::{Csr, Rng};
    use sparrow::solvers::completion::Complete;
    let (m, n, r) = (60, 50, 3);
    let u = gaussian_phi(m, r, 21).unwrap();
    let v = gaussian_phi(n, r, 22).unwrap();
    let full = |i: usize, j: usize| (0..r).map(|k| u.get(i, k) * v.get(j, k)).sum::<f64>();
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
    let obs = Csr::from_triplets(m, n, &rows, &cols, &vals).unwrap();
    let c = Complete::new(10).run(&obs).unwrap();
    let (mut e, mut s) = (0.0, 0.0);
    for i in 0..m {
        for j in 0..n {
            e += (c.x.get(i, j) - full(i, j)).powi(2);
            s += full(i, j).powi(2);
        }
    }
    let rel = (e / s).sqrt();
    assert!(
        rel < 1e-2,
        "relative error {rel} after {} iterations ({:?}), rank {}",
        c.iterations,
        c.stop,
        c.rank
    );
    assert_eq!(c.rank, r);
    let e = Complete::new(51).run(&obs).unwrap_err().to_string();
    assert_eq!(e, "invalid argument `rank hint`: 51 must be in 1..=50");
    let e = Complete::new(2)
        .run(&Csr::empty(3, 3).unwrap())
        .unwrap_err()
        .to_string();
    assert_eq!(e, "invalid argument `observed`: has no observed entries");
}
