//! The naive reference: a plain triple loop in f64, with the magnitude of every output's sum
//! (`|alpha| sum |a||b| + |beta| |c|`) so comparisons can scale their tolerance.

use crate::matrix::{Csr, Dense};
use crate::Scalar;

/// `(want, scale)` for `alpha * A * B + beta * C`, packed `nrows x n`. With `beta == 0`, C is
/// not read.
pub fn spmm<T: Scalar>(
    alpha: T,
    a: &Csr<T>,
    b: &Dense<T>,
    beta: T,
    c: &Dense<T>,
) -> (Vec<f64>, Vec<f64>) {
    let n = b.ncols();
    let (al, be) = (alpha.to_f64(), beta.to_f64());
    let mut want = vec![0.0; a.nrows() * n];
    let mut scale = vec![0.0; a.nrows() * n];
    for i in 0..a.nrows() {
        for j in 0..n {
            let (mut s, mut m) = (0.0f64, 0.0f64);
            for p in a.row_range(i) {
                let av = a.values()[p].to_f64();
                let bv = b.get(a.col_idx()[p] as usize, j).to_f64();
                s += av * bv;
                m += (av * bv).abs();
            }
            let mut w = al * s;
            let mut sc = al.abs() * m;
            if be != 0.0 {
                let cv = c.get(i, j).to_f64();
                w += be * cv;
                sc += (be * cv).abs();
            }
            want[i * n + j] = w;
            scale[i * n + j] = sc;
        }
    }
    (want, scale)
}
