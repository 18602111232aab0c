//! Blocks of [`BLOCK_ROWS`] consecutive rows over the union of their columns, for the row-block
//! SpMM kernels: each distinct column of a block is listed once with one value per row of the
//! block (zero where the row lacks it), so a kernel loads that column's row of B once for all
//! the block's rows. Neighbouring rows of banded, stencil and block-diagonal matrices share most
//! of their columns, and there the union is a fraction of the entries.

use rayon::prelude::*;

use crate::Scalar;

/// Rows per block (`RB` in spmm.cu, which reads a block's values as one 4-value vector).
pub const BLOCK_ROWS: usize = 4;

/// Most distinct columns over entries for the upload to build a matrix's row blocks
/// ([`RowStats::blockable`](super::RowStats::blockable)): the values take `BLOCK_ROWS` slots
/// per listed column, so at this bound the blocks hold three values per entry of A.
pub const BLOCK_UNION_MAX: f64 = 0.75;

/// Blocks per rayon task of the builders.
const TASK_BLOCKS: usize = 4096;

/// A matrix's row blocks: block `b` covers rows `b * BLOCK_ROWS..` and lists columns
/// `cols[ptr[b]..ptr[b + 1]]` (sorted), the value of row `b * BLOCK_ROWS + r` at listed column
/// `i` being `vals[i * BLOCK_ROWS + r]`.
#[derive(Clone, Debug, PartialEq)]
pub struct RowBlocks<T> {
    /// `nrows.div_ceil(BLOCK_ROWS) + 1` offsets into `cols`.
    pub ptr: Vec<i64>,
    /// The distinct columns of each block, ascending.
    pub cols: Vec<i32>,
    /// `BLOCK_ROWS` values per listed column.
    pub vals: Vec<T>,
}

/// Calls `visit(column, row in block, entry)` for the entries of rows `r0..r1` in ascending
/// column order, a column's rows together (each row's columns sorted, as `Csr` holds them).
fn merge(
    row_ptr: &[i64],
    col_idx: &[i32],
    r0: usize,
    r1: usize,
    mut visit: impl FnMut(i32, usize, usize),
) {
    let mut head = [0usize; BLOCK_ROWS];
    let mut end = [0usize; BLOCK_ROWS];
    for r in r0..r1 {
        head[r - r0] = row_ptr[r] as usize;
        end[r - r0] = row_ptr[r + 1] as usize;
    }
    let rows = r1 - r0;
    loop {
        let mut c = i32::MAX;
        let mut any = false;
        for i in 0..rows {
            if head[i] < end[i] {
                c = c.min(col_idx[head[i]]);
                any = true;
            }
        }
        if !any {
            return;
        }
        for i in 0..rows {
            if head[i] < end[i] && col_idx[head[i]] == c {
                visit(c, i, head[i]);
                head[i] += 1;
            }
        }
    }
}

/// Distinct columns of each block of `blocks`, summed: the length of [`RowBlocks::cols`].
fn union_of(row_ptr: &[i64], col_idx: &[i32], blocks: std::ops::Range<usize>) -> usize {
    let nrows = row_ptr.len() - 1;
    let mut total = 0usize;
    for b in blocks {
        let (r0, r1) = (b * BLOCK_ROWS, ((b + 1) * BLOCK_ROWS).min(nrows));
        let mut last = None;
        merge(row_ptr, col_idx, r0, r1, |c, _, _| {
            if last != Some(c) {
                total += 1;
                last = Some(c);
            }
        });
    }
    total
}

/// The summed number of distinct columns over the blocks of [`BLOCK_ROWS`] rows: what the
/// row-block kernels load a row of B for, against `nnz` for a row kernel.
pub fn union_len(row_ptr: &[i64], col_idx: &[i32]) -> usize {
    let nblk = row_ptr.len().saturating_sub(1).div_ceil(BLOCK_ROWS);
    (0..nblk.div_ceil(TASK_BLOCKS))
        .into_par_iter()
        .map(|t| {
            union_of(
                row_ptr,
                col_idx,
                t * TASK_BLOCKS..((t + 1) * TASK_BLOCKS).min(nblk),
            )
        })
        .sum()
}

/// Builds the row blocks of a CSR matrix given by its arrays (rows sorted, unique columns).
pub fn row_blocks<T: Scalar>(row_ptr: &[i64], col_idx: &[i32], values: &[T]) -> RowBlocks<T> {
    let nrows = row_ptr.len().saturating_sub(1);
    let nblk = nrows.div_ceil(BLOCK_ROWS);
    let parts: Vec<(Vec<usize>, Vec<i32>, Vec<T>)> = (0..nblk.div_ceil(TASK_BLOCKS))
        .into_par_iter()
        .map(|t| {
            let (mut lens, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
            for b in t * TASK_BLOCKS..((t + 1) * TASK_BLOCKS).min(nblk) {
                let (r0, r1) = (b * BLOCK_ROWS, ((b + 1) * BLOCK_ROWS).min(nrows));
                let before = cols.len();
                merge(row_ptr, col_idx, r0, r1, |c, r, p| {
                    if cols.len() == before || *cols.last().unwrap() != c {
                        cols.push(c);
                        vals.extend([T::ZERO; BLOCK_ROWS]);
                    }
                    let at = vals.len() - BLOCK_ROWS + r;
                    vals[at] = values[p];
                });
                lens.push(cols.len() - before);
            }
            (lens, cols, vals)
        })
        .collect();
    let total: usize = parts.iter().map(|p| p.1.len()).sum();
    let mut out = RowBlocks {
        ptr: Vec::with_capacity(nblk + 1),
        cols: Vec::with_capacity(total),
        vals: Vec::with_capacity(total * BLOCK_ROWS),
    };
    out.ptr.push(0);
    for (lens, cols, vals) in parts {
        for l in lens {
            let last = *out.ptr.last().unwrap();
            out.ptr.push(last + l as i64);
        }
        out.cols.extend_from_slice(&cols);
        out.vals.extend_from_slice(&vals);
    }
    out
}
