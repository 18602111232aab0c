//! Generators of the test and benchmark matrices, deterministic for a seed, so anyone can
//! rebuild the exact matrices a test or a benchmark used.

use super::rng::Rng;
use super::{Csr, Dense};
use crate::{Result, Scalar};

/// Values uniform in [-1, 1): random signs keep sums from growing with the row length, so
/// rounding error stays representative of real data.
fn value<T: Scalar>(rng: &mut Rng) -> T {
    T::from_f64(rng.range_f64(-1.0, 1.0))
}

fn from_rows<T: Scalar>(
    nrows: usize,
    ncols: usize,
    rows: Vec<Vec<i32>>,
    rng: &mut Rng,
) -> Result<Csr<T>> {
    let mut ptr = Vec::with_capacity(nrows + 1);
    ptr.push(0i64);
    let nnz: usize = rows.iter().map(|r| r.len()).sum();
    let mut cols = Vec::with_capacity(nnz);
    let mut vals = Vec::with_capacity(nnz);
    for r in rows {
        for c in r {
            cols.push(c);
            vals.push(value::<T>(rng));
        }
        ptr.push(cols.len() as i64);
    }
    Csr::new(nrows, ncols, ptr, cols, vals)
}

/// `len` distinct sorted columns drawn uniformly from `0..ncols`.
fn distinct_cols(rng: &mut Rng, len: usize, ncols: usize) -> Vec<i32> {
    let len = len.min(ncols);
    if len * 2 > ncols {
        // Dense row: choose which columns to skip instead.
        let mut keep = vec![true; ncols];
        let mut skip = ncols - len;
        while skip > 0 {
            let c = rng.below(ncols as u64) as usize;
            if keep[c] {
                keep[c] = false;
                skip -= 1;
            }
        }
        return (0..ncols).filter(|&c| keep[c]).map(|c| c as i32).collect();
    }
    let mut v: Vec<i32> = Vec::with_capacity(len);
    while v.len() < len {
        let need = len - v.len();
        v.extend((0..need).map(|_| rng.below(ncols as u64) as i32));
        v.sort_unstable();
        v.dedup();
    }
    v
}

/// A banded matrix: every row holds `per_row` consecutive columns around the diagonal
/// (the window slides inward at the edges so every row has exactly `per_row`).
pub fn banded<T: Scalar>(n: usize, per_row: usize, seed: u64) -> Result<Csr<T>> {
    let mut rng = Rng::new(seed);
    let w = per_row.min(n);
    let rows = (0..n)
        .map(|i| {
            let start = i.saturating_sub(w / 2).min(n - w);
            (start as i32..(start + w) as i32).collect()
        })
        .collect();
    from_rows(n, n, rows, &mut rng)
}

/// A power-law matrix: row lengths follow a Pareto law of shape `shape` (1.5 is heavy-tailed)
/// scaled to the mean `mean_len`, capped at `max_len`; columns uniform. The first row is
/// forced to `max_len` so the longest row is always present.
pub fn power_law<T: Scalar>(
    nrows: usize,
    ncols: usize,
    mean_len: f64,
    max_len: usize,
    shape: f64,
    seed: u64,
) -> Result<Csr<T>> {
    let mut rng = Rng::new(seed);
    // Pareto(xm, a) has mean xm * a / (a - 1).
    let xm = mean_len * (shape - 1.0) / shape;
    let rows = (0..nrows)
        .map(|i| {
            let len = if i == 0 {
                max_len
            } else {
                let u = 1.0 - rng.uniform();
                ((xm / u.powf(1.0 / shape)).floor() as usize).min(max_len)
            };
            distinct_cols(&mut rng, len, ncols)
        })
        .collect();
    from_rows(nrows, ncols, rows, &mut rng)
}

/// A matrix whose rows are empty with probability `empty_frac`; other rows hold `per_row`
/// uniform columns.
pub fn sparse_rows<T: Scalar>(
    nrows: usize,
    ncols: usize,
    empty_frac: f64,
    per_row: usize,
    seed: u64,
) -> Result<Csr<T>> {
    let mut rng = Rng::new(seed);
    let rows = (0..nrows)
        .map(|_| {
            if rng.uniform() < empty_frac {
                Vec::new()
            } else {
                distinct_cols(&mut rng, per_row, ncols)
            }
        })
        .collect();
    from_rows(nrows, ncols, rows, &mut rng)
}

/// Uniform random rows of exactly `per_row` columns each.
pub fn uniform<T: Scalar>(nrows: usize, ncols: usize, per_row: usize, seed: u64) -> Result<Csr<T>> {
    sparse_rows(nrows, ncols, 0.0, per_row, seed)
}

/// A dense `nrows x ncols` matrix with leading dimension `ld`, values uniform in [-1, 1);
/// padding holds NaN so a kernel that reads it poisons its result. Rows are filled in parallel,
/// each from its own stream seeded by `seed` and the row, so the result does not depend on the
/// thread count.
pub fn dense<T: Scalar>(nrows: usize, ncols: usize, ld: usize, seed: u64) -> Result<Dense<T>> {
    use rayon::prelude::*;
    let mut m = Dense::filled(nrows, ncols, ld, T::from_f64(f64::NAN))?;
    if ncols > 0 {
        m.data_mut()
            .par_chunks_mut(ld.max(1))
            .enumerate()
            .for_each(|(i, row)| {
                let mut rng = Rng::new(seed ^ (i as u64).wrapping_mul(0xd1b5_4a32_d192_ed03));
                for x in &mut row[..ncols] {
                    *x = value::<T>(&mut rng);
                }
            });
    }
    Ok(m)
}
