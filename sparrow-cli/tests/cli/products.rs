//! `spmm` and `spmv` from files on the CPU, against the library.

use sparrow::matrix::io;
use sparrow::matrix::{gen, Dense};

use super::{s, sparrow, tmp};

#[test]
fn spmm_and_spmv_from_files_match_the_library() {
    let a = gen::power_law::<f64>(500, 300, 6.0, 100, 1.5, 1).unwrap();
    let (pa, pb, pc, pout) = (tmp("a.npz"), tmp("b.npy"), tmp("c.npy"), tmp("out.npy"));
    io::write_npz_csr(&pa, &a).unwrap();
    let b = gen::dense::<f64>(300, 7, 7, 2).unwrap();
    let c = gen::dense::<f64>(500, 7, 7, 3).unwrap();
    io::write_dense(&pb, &b).unwrap();
    io::write_dense(&pc, &c).unwrap();
    let out = sparrow(&[
        "spmm",
        "--device",
        "cpu",
        "--a",
        s(&pa),
        "--b",
        s(&pb),
        "--c",
        s(&pc),
        "--alpha",
        "2",
        "--beta",
        "-0.5",
        "--out",
        s(&pout),
        "--explain",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("plan: spmm: Cpu"));
    let got: Dense<f64> = io::read_dense(&pout).unwrap();
    let mut want = c.clone();
    sparrow::ops::spmm::Spmm::new()
        .alpha(2.0)
        .beta(-0.5)
        .run(&sparrow::Device::Cpu, &a, &b, &mut want)
        .unwrap();
    assert_eq!(got, want);

    let px = tmp("x.npy");
    io::write_npy(&px, &[300], &b.to_packed().data()[..300]).unwrap();
    let out = sparrow(&[
        "spmv",
        "--device",
        "cpu",
        "--a",
        s(&pa),
        "--x",
        s(&px),
        "--out",
        s(&pout),
        "--json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["op"], "spmv");
    assert_eq!(v["plan"]["backend"], "Cpu");
    let y = io::read_npy(&pout).unwrap();
    assert_eq!(y.shape, vec![500]);
}
