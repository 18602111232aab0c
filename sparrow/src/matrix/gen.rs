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

/// A block-diagonal matrix of dense `b x b` blocks (`nblocks` of them).
pub fn block_diagonal<T: Scalar>(nblocks: usize, b: usize, seed: u64) -> Result<Csr<T>> {
    let mut rng = Rng::new(seed);
    let n = nblocks * b;
    let rows = (0..n)
        .map(|i| {
            let s = (i / b * b) as i32;
            (s..s + b as i32).collect()
        })
        .collect();
    from_rows(n, n, rows, &mut rng)
}

/// `n` x `ncols` with `long` rows of `long_len` uniform columns at evenly spaced positions and
/// every other row holding `short_len`: the case where one row outweighs thousands of blocks.
pub fn long_rows<T: Scalar>(
    n: usize,
    ncols: usize,
    long: usize,
    long_len: usize,
    short_len: usize,
    seed: u64,
) -> Result<Csr<T>> {
    let mut rng = Rng::new(seed);
    let every = (n / long.max(1)).max(1);
    let rows = (0..n)
        .map(|i| {
            let len = if i % every == every / 2 && i / every < long {
                long_len
            } else {
                short_len
            };
            distinct_cols(&mut rng, len, ncols)
        })
        .collect();
    from_rows(n, ncols, rows, &mut rng)
}

/// The 5-point Laplacian stencil on an `nx x ny` grid (natural ordering).
pub fn stencil_2d<T: Scalar>(nx: usize, ny: usize, seed: u64) -> Result<Csr<T>> {
    let mut rng = Rng::new(seed);
    let rows = (0..nx * ny)
        .map(|p| {
            let (x, y) = ((p % nx) as i64, (p / nx) as i64);
            let mut r = Vec::with_capacity(5);
            for (dx, dy) in [(0, -1), (-1, 0), (0, 0), (1, 0), (0, 1)] {
                let (a, b) = (x + dx, y + dy);
                if a >= 0 && b >= 0 && (a as usize) < nx && (b as usize) < ny {
                    r.push((b as usize * nx + a as usize) as i32);
                }
            }
            r
        })
        .collect();
    from_rows(nx * ny, nx * ny, rows, &mut rng)
}

/// The 27-point stencil on an `n x n x n` grid (natural ordering).
pub fn stencil_3d<T: Scalar>(n: usize, seed: u64) -> Result<Csr<T>> {
    let mut rng = Rng::new(seed);
    let rows = (0..n * n * n)
        .map(|p| {
            let (x, y, z) = ((p % n) as i64, (p / n % n) as i64, (p / (n * n)) as i64);
            let mut r = Vec::with_capacity(27);
            for dz in -1..=1 {
                for dy in -1..=1 {
                    for dx in -1..=1 {
                        let (a, b, c) = (x + dx, y + dy, z + dz);
                        let inside = |v: i64| v >= 0 && (v as usize) < n;
                        if inside(a) && inside(b) && inside(c) {
                            r.push(((c as usize * n + b as usize) * n + a as usize) as i32);
                        }
                    }
                }
            }
            r
        })
        .collect();
    from_rows(n * n * n, n * n * n, rows, &mut rng)
}

/// A symmetric FEM-like matrix: `nelems` random elements of 4 nodes within a window of 64
/// consecutive nodes (a mesh numbered by locality), each adding a random symmetric 4 x 4
/// element matrix; overlapping contributions sum, as in assembly.
pub fn fem_like<T: Scalar>(nnodes: usize, nelems: usize, seed: u64) -> Result<Csr<T>> {
    let mut rng = Rng::new(seed);
    let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
    let window = 64.min(nnodes.max(1));
    for _ in 0..nelems {
        let base = rng.below((nnodes - window + 1) as u64) as usize;
        let mut nodes = [0usize; 4];
        for x in nodes.iter_mut() {
            *x = base + rng.below(window as u64) as usize;
        }
        for a in 0..4 {
            for b in a..4 {
                let val = rng.range_f64(-1.0, 1.0);
                r.push(nodes[a]);
                c.push(nodes[b]);
                v.push(T::from_f64(val));
                if nodes[a] != nodes[b] {
                    r.push(nodes[b]);
                    c.push(nodes[a]);
                    v.push(T::from_f64(val));
                }
            }
        }
    }
    Csr::from_triplets(nnodes, nnodes, &r, &c, &v)
}
