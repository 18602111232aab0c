//! The rayon CPU backend for SpMV: rows in parallel, four independent partial sums per row so
//! the adds pipeline instead of waiting on one another.

use rayon::prelude::*;

use crate::matrix::Csr;
use crate::Scalar;

/// `y = alpha * A * x + beta * y` on the CPU. Shapes are validated by the caller.
pub fn spmv<T: Scalar>(alpha: T, a: &Csr<T>, x: &[T], beta: T, y: &mut [T]) {
    let zero = T::ZERO;
    y.par_iter_mut()
        .enumerate()
        .with_min_len(256)
        .for_each(|(i, out)| {
            let r = a.row_range(i);
            let (cols, vals) = (&a.col_idx()[r.clone()], &a.values()[r]);
            let mut acc = [zero; 4];
            let mut ch_c = cols.chunks_exact(4);
            let mut ch_v = vals.chunks_exact(4);
            for (c4, v4) in (&mut ch_c).zip(&mut ch_v) {
                for k in 0..4 {
                    acc[k] += v4[k] * x[c4[k] as usize];
                }
            }
            for (&c, &v) in ch_c.remainder().iter().zip(ch_v.remainder()) {
                acc[0] += v * x[c as usize];
            }
            let s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
            *out = if beta == zero {
                alpha * s
            } else {
                alpha * s + beta * *out
            };
        });
}
