//! The rayon CPU backend for SpMV: tasks of about equal work (`ops::products::row_work`), long rows in pieces
//! added in order; four independent partial sums per row or piece so the adds pipeline instead
//! of waiting on one another.

use rayon::prelude::*;

use crate::matrix::Csr;
use crate::ops::products::row_work::{Out, RowWork};
use crate::Scalar;

/// `y = alpha * A * x + beta * y` on the CPU. Shapes are validated by the caller.
pub fn spmv<T: Scalar>(alpha: T, a: &Csr<T>, x: &[T], beta: T, y: &mut [T]) {
    let work = RowWork::of(a.row_ptr());
    let mut partial = vec![T::ZERO; work.slots()];
    let (cols, vals) = (a.col_idx(), a.values());
    let finish = |s: T, out: &mut T| {
        *out = if beta == T::ZERO {
            alpha * s
        } else {
            alpha * s + beta * *out
        };
    };
    let outs = work.outputs(y, 1, &mut partial, 1);
    outs.into_par_iter().for_each(|o| match o {
        Out::Rows(rows, ys) => {
            for (i, out) in rows.zip(ys) {
                let r = a.row_range(i);
                finish(dot(&cols[r.clone()], &vals[r], x), out);
            }
        }
        Out::Piece(e, p) => p[0] = dot(&cols[e.clone()], &vals[e], x),
    });
    for (row, slots) in &work.long {
        let s = partial[slots.clone()]
            .iter()
            .fold(T::ZERO, |acc, &p| acc + p);
        finish(s, &mut y[*row]);
    }
}

/// Sum of `vals[k] * x[cols[k]]` in four interleaved partial sums.
#[inline]
fn dot<T: Scalar>(cols: &[i32], vals: &[T], x: &[T]) -> T {
    let zero = T::ZERO;
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
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}
