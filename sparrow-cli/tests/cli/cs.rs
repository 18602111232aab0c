//! Compressed sensing from the command line: `recover` from files and `cs phase-transition`'s
//! JSON and SVG, with their bad arguments.

use sparrow::matrix::io;
use sparrow::matrix::Dense;

use super::{failure, s, sparrow, tmp};

#[test]
fn recover_from_files() {
    use sparrow::solvers::cs::data::{gaussian_phi, measure, sparse_signals};
    let phi = gaussian_phi(60, 120, 1).unwrap();
    let x = sparse_signals(120, 4, 3, true, 2).unwrap();
    let y = measure(&phi, &x).unwrap();
    let (pp, py, px) = (tmp("phi.npy"), tmp("y.npy"), tmp("x.npy"));
    io::write_dense(&pp, &phi).unwrap();
    io::write_dense(&py, &y).unwrap();
    let out = sparrow(&[
        "recover",
        "--device",
        "cpu",
        "--phi",
        s(&pp),
        "--y",
        s(&py),
        "--method",
        "cosamp",
        "--sparsity",
        "4",
        "--out",
        s(&px),
        "--json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["support_sizes"], serde_json::json!([4, 4, 4]));
    let got: Dense<f64> = io::read_dense(&px).unwrap();
    let err = got
        .data()
        .iter()
        .zip(x.data())
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(err < 1e-6, "{err}");
    let e = failure(&sparrow(&[
        "recover",
        "--device",
        "cpu",
        "--phi",
        s(&pp),
        "--y",
        s(&py),
        "--method",
        "omp",
        "--sparsity",
        "61",
        "--out",
        s(&px),
    ]));
    assert_eq!(
        e,
        "error: invalid argument `--sparsity`: K = 61 is larger than the 60 measurements"
    );
    let e = failure(&sparrow(&[
        "recover",
        "--device",
        "cpu",
        "--phi",
        s(&pp),
        "--y",
        s(&py),
        "--method",
        "l0",
        "--out",
        s(&px),
    ]));
    assert_eq!(e, "error: invalid argument `--method`: \"l0\" is not iht, niht, htp, cosamp, sp, omp, amp or fista");
}

#[test]
fn phase_transition_writes_json_and_svg() {
    let (pj, ps) = (tmp("pt.json"), tmp("pt.svg"));
    let out = sparrow(&[
        "cs",
        "phase-transition",
        "--device",
        "cpu",
        "--method",
        "omp",
        "--n",
        "60",
        "--delta",
        "0.3:0.6:0.3",
        "--rho",
        "0.1:0.9:0.8",
        "--trials",
        "4",
        "--out",
        s(&pj),
        "--plot",
        s(&ps),
    ]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&pj).unwrap()).unwrap();
    let success = v["result"]["success"].as_array().unwrap();
    assert_eq!(success.len(), 2);
    // OMP recovers a few spikes from 36 measurements, and not 32 spikes from 18.
    assert_eq!(success[0][1], 1.0);
    assert_eq!(success[1][0], 0.0);
    let svg = std::fs::read_to_string(&ps).unwrap();
    assert!(svg.starts_with("<svg") && svg.matches("<rect").count() >= 4);
    let e = failure(&sparrow(&[
        "cs",
        "phase-transition",
        "--device",
        "cpu",
        "--method",
        "omp",
        "--delta",
        "0.5:0.2:0.1",
        "--out",
        s(&pj),
    ]));
    assert_eq!(e, "error: invalid argument `--delta`: \"0.5:0.2:0.1\" must satisfy 0 < start <= stop <= 1 and step > 0");
}
