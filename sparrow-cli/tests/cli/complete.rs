//! `complete`: matrix completion from observed entries on the CPU, and a bad rank hint.

use sparrow::matrix::io;
use sparrow::matrix::Dense;

use super::{failure, s, sparrow, tmp};

#[test]
fn complete_from_observed_entries() {
    use sparrow::matrix::{Csr, Rng};
    // A rank-1 matrix a_i b_j with 60% of its entries observed at random.
    let (m, n) = (30, 25);
    let mut rng = Rng::new(5);
    let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..m {
        for j in 0..n {
            if rng.uniform() < 0.6 {
                r.push(i);
                c.push(j);
                v.push((i + 1) as f64 * (j + 2) as f64);
            }
        }
    }
    let obs = Csr::from_triplets(m, n, &r, &c, &v).unwrap();
    let (po, px) = (tmp("obs.npz"), tmp("completed.npy"));
    io::write_npz_csr(&po, &obs).unwrap();
    let out = sparrow(&[
        "complete",
        "--device",
        "cpu",
        "--observed",
        s(&po),
        "--rank-hint",
        "3",
        "--max-iter",
        "2000",
        "--out",
        s(&px),
        "--json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let x: Dense<f64> = io::read_dense(&px).unwrap();
    let worst = (0..m)
        .flat_map(|i| (0..n).map(move |j| (i, j)))
        .map(|(i, j)| {
            ((x.get(i, j) - ((i + 1) * (j + 2)) as f64) / ((i + 1) * (j + 2)) as f64).abs()
        })
        .fold(0.0, f64::max);
    assert!(worst < 1e-2, "worst relative entry error {worst}");
    let e = failure(&sparrow(&[
        "complete",
        "--device",
        "cpu",
        "--observed",
        s(&po),
        "--rank-hint",
        "0",
        "--out",
        s(&px),
    ]));
    assert_eq!(
        e,
        "error: invalid argument `--rank-hint`: 0 must be in 1..=25"
    );
}
