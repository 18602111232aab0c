//! The rayon CPU backend: tasks of about equal work (`ops::products::row_work`), long rows in pieces added in
//! order; each row of C accumulated in register-sized chunks of columns so B's rows are read
//! contiguously, compiled for AVX-512 and AVX2 beside the baseline and picked at run time.
//! No version contracts `a * b + c` into a fused multiply-add, so all give the same bits.

use rayon::prelude::*;

use crate::matrix::{Csr, Dense};
use crate::ops::products::row_work::{Out, RowWork};
use crate::Scalar;

/// Columns of C accumulated at once: widths of 8 to 64 are unrolled with their sums in
/// registers; the rest of a row's columns go through the same loop at run-time width.
const COLS: usize = 64;

/// The operands every task reads.
struct Operands<'a, T> {
    cols: &'a [i32],
    vals: &'a [T],
    b: &'a [T],
    ldb: usize,
    n: usize,
}

/// `C = alpha * A * B + beta * C` on the CPU. Shapes are validated by the caller.
pub fn spmm<T: Scalar>(alpha: T, a: &Csr<T>, b: &Dense<T>, beta: T, c: &mut Dense<T>) {
    let n = b.ncols();
    if n == 0 || a.nrows() == 0 {
        return;
    }
    let ops = Operands {
        cols: a.col_idx(),
        vals: a.values(),
        b: b.data(),
        ldb: b.ld(),
        n,
    };
    let ldc = c.ld();
    let work = RowWork::of(a.row_ptr());
    let mut partial = vec![T::ZERO; work.slots() * n];
    let outs = work.outputs(c.data_mut(), ldc, &mut partial, n);
    outs.into_par_iter().for_each(|o| match o {
        Out::Rows(rows, cs) => {
            let ranges = rows.map(|i| a.row_range(i));
            for (r, crow) in ranges.zip(cs.chunks_mut(ldc)) {
                product(&ops, r, alpha, beta, &mut crow[..n]);
            }
        }
        Out::Piece(e, p) => product(&ops, e, T::from_f64(1.0), T::ZERO, p),
    });
    let data = c.data_mut();
    for (row, slots) in &work.long {
        let out = &mut data[row * ldc..row * ldc + n];
        for (j, o) in out.iter_mut().enumerate() {
            let s = slots
                .clone()
                .fold(T::ZERO, |acc, slot| acc + partial[slot * n + j]);
            *o = finish(alpha, beta, s, *o);
        }
    }
}

#[inline(always)]
fn finish<T: Scalar>(alpha: T, beta: T, s: T, old: T) -> T {
    if beta == T::ZERO {
        alpha * s
    } else {
        alpha * s + beta * old
    }
}

crate::simd::multiversion! {
/// `out = alpha * (entries of A) B + beta * out`, on the widest vectors the CPU has.
fn product<T: Scalar>(
    ops: &Operands<T>,
    entries: std::ops::Range<usize>,
    alpha: T,
    beta: T,
    out: &mut [T],
) {
    let (cols, vals) = (&ops.cols[entries.clone()], &ops.vals[entries]);
    let mut j0 = 0;
    while j0 < ops.n {
        let w = COLS.min(ops.n - j0);
        let o = &mut out[j0..j0 + w];
        match w {
            64 => fixed::<T, 64>(ops, cols, vals, j0, alpha, beta, o),
            32 => fixed::<T, 32>(ops, cols, vals, j0, alpha, beta, o),
            16 => fixed::<T, 16>(ops, cols, vals, j0, alpha, beta, o),
            8 => fixed::<T, 8>(ops, cols, vals, j0, alpha, beta, o),
            _ => {
                let mut acc = [T::ZERO; COLS];
                let acc = &mut acc[..w];
                for (&col, &av) in cols.iter().zip(vals) {
                    let start = col as usize * ops.ldb + j0;
                    for (x, &bv) in acc.iter_mut().zip(&ops.b[start..start + w]) {
                        *x += av * bv;
                    }
                }
                for (o, &s) in o.iter_mut().zip(acc.iter()) {
                    *o = finish(alpha, beta, s, *o);
                }
            }
        }
        j0 += w;
    }
}
}

/// [`product`] for W columns, W known at compile time so the sums stay in registers.
#[inline(always)]
fn fixed<T: Scalar, const W: usize>(
    ops: &Operands<T>,
    cols: &[i32],
    vals: &[T],
    j0: usize,
    alpha: T,
    beta: T,
    out: &mut [T],
) {
    let mut acc = [T::ZERO; W];
    for (&col, &av) in cols.iter().zip(vals) {
        let start = col as usize * ops.ldb + j0;
        let brow: &[T; W] = ops.b[start..start + W].try_into().expect("W columns");
        for k in 0..W {
            acc[k] += av * brow[k];
        }
    }
    for (o, &s) in out.iter_mut().zip(&acc) {
        *o = finish(alpha, beta, s, *o);
    }
}

#[cfg(test)]
mod tests {
    use super::spmm;
    use crate::matrix::{gen, Dense};
    use crate::simd::WIDEST;
    use std::sync::atomic::Ordering;

    /// Every vector width gives the bits of the baseline, at the unrolled widths and others.
    #[test]
    fn spmm_is_the_same_at_every_width() {
        let a = gen::power_law::<f32>(2_000, 3_000, 12.0, 2_000, 1.5, 5).unwrap();
        for n in [1, 8, 13, 64, 100] {
            let b = gen::dense::<f32>(a.ncols(), n, n + 1, 6).unwrap();
            let run = |widest: u8| {
                WIDEST.store(widest, Ordering::Relaxed);
                let mut c = Dense::filled(a.nrows(), n, n, 0.0f32).unwrap();
                spmm(1.5, &a, &b, 0.0, &mut c);
                WIDEST.store(2, Ordering::Relaxed);
                c.data().iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            };
            let base = run(0);
            assert!(base.iter().any(|&v| v != 0));
            for widest in [1, 2] {
                assert!(run(widest) == base, "N {n}, widest {widest}");
            }
        }
    }
}
