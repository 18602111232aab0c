//! The naive reference for SpMV in f64, with each output's summed magnitude.

use crate::matrix::Csr;
use crate::Scalar;

/// `(want, scale)` for `alpha * A * x + beta * y`; with `beta == 0`, y is not read.
pub fn spmv<T: Scalar>(alpha: T, a: &Csr<T>, x: &[T], beta: T, y: &[T]) -> (Vec<f64>, Vec<f64>) {
    let (al, be) = (alpha.to_f64(), beta.to_f64());
    let mut want = vec![0.0; a.nrows()];
    let mut scale = vec![0.0; a.nrows()];
    for i in 0..a.nrows() {
        let (mut s, mut m) = (0.0f64, 0.0f64);
        for p in a.row_range(i) {
            let t = a.values()[p].to_f64() * x[a.col_idx()[p] as usize].to_f64();
            s += t;
            m += t.abs();
        }
        want[i] = al * s;
        scale[i] = al.abs() * m;
        if be != 0.0 {
            want[i] += be * y[i].to_f64();
            scale[i] += (be * y[i].to_f64()).abs();
        }
    }
    (want, scale)
}
