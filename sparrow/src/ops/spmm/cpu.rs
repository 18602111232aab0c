//! The rayon CPU backend: rows of C in parallel, each row accumulated in registers-sized
//! chunks of columns so B's rows are read contiguously.

use rayon::prelude::*;

use crate::matrix::{Csr, Dense};
use crate::Scalar;

/// Columns of C accumulated at once: small enough for the accumulators to stay in registers
/// or L1, large enough to read B's rows in long runs.
const COLS: usize = 64;

/// `C = alpha * A * B + beta * C` on the CPU. Shapes are validated by the caller.
pub fn spmm<T: Scalar>(alpha: T, a: &Csr<T>, b: &Dense<T>, beta: T, c: &mut Dense<T>) {
    let n = b.ncols();
    if n == 0 || a.nrows() == 0 {
        return;
    }
    let (ldb, ldc) = (b.ld(), c.ld());
    let bd = b.data();
    let zero = T::ZERO;
    let nrows = a.nrows();
    // Rows of C are ld apart; the last one may end at ncols, so chunks of ld cover it.
    let rows = c.data_mut().par_chunks_mut(ldc).take(nrows);
    rows.enumerate().with_min_len(64).for_each(|(i, crow)| {
        let range = a.row_range(i);
        let cols = &a.col_idx()[range.clone()];
        let vals = &a.values()[range];
        let mut acc = [zero; COLS];
        let mut j0 = 0;
        while j0 < n {
            let w = COLS.min(n - j0);
            acc[..w].fill(zero);
            for (&col, &av) in cols.iter().zip(vals) {
                let brow = &bd[col as usize * ldb + j0..col as usize * ldb + j0 + w];
                for (x, &bv) in acc[..w].iter_mut().zip(brow) {
                    *x += av * bv;
                }
            }
            for (out, &x) in crow[j0..j0 + w].iter_mut().zip(&acc[..w]) {
                *out = if beta == zero {
                    alpha * x
                } else {
                    alpha * x + beta * *out
                };
            }
            j0 += w;
        }
    });
}
