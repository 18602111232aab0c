//! Blocks of consecutive rows over the union of their columns, for the row-block SpMM kernels:
//! each distinct column of a block is listed once with one value per row of the block (zero
//! where the row lacks it), so a kernel loads that column's row of B once for all the block's
//! rows. Neighbouring rows of banded, stencil and block-diagonal matrices share most of their
//! columns, and there the union is a fraction of the entries. Blocks come in [`BLOCK_ROWS`]
//! rows, or [`TALL_ROWS`] where even that many rows share nearly all their columns.

use rayon::prelude::*;

use crate::{Error, Result, Scalar};

/// Rows per block (`RB` in spmm.cu, which reads a block's values as 4-value vectors).
pub const BLOCK_ROWS: usize = 4;

/// Rows per tall block: twice the values a listed column feeds per load of B, for twice the
/// accumulators a lane ([`RowStats::block_rows`](crate::ops::products::RowStats::block_rows) says where).
pub const TALL_ROWS: usize = 8;

/// Most distinct columns per entry for the upload to build a matrix's row blocks
/// ([`RowStats::blockable`](crate::ops::products::RowStats::blockable)): the widest share at which the SpMM
/// policy takes them (f32 SpMM from N = 64; `ROWBLK_SHARED` in the SpMM plan): wider rows ran
/// slower on them, so above it the upload spends neither the build nor the memory (two values
/// per entry at this bound). See docs/tuning/products.md#row-blocks.
pub const BLOCK_UNION_MAX: f64 = 0.55;

/// Most distinct columns per entry over blocks of [`TALL_ROWS`] for f32 matrices to take tall
/// blocks ([`RowStats::tall`](crate::ops::products::RowStats::tall)): rows that share this many
/// columns gained from eight rows a load of B, those that share fewer (the 3-D stencil) lost.
/// See docs/tuning/products.md#tall-row-blocks.
pub const TALL_UNION_MAX: f64 = 0.3;

/// Blocks per rayon task of the builders.
const TASK_BLOCKS: usize = 4096;

/// A matrix's row blocks: block `b` covers rows `b * rows..` and lists columns
/// `cols[ptr[b]..ptr[b + 1]]` (sorted), the value of row `b * rows + r` at listed column `i`
/// being `vals[i * rows + r]`.
#[derive(Clone, Debug, PartialEq)]
pub struct RowBlocks<T> {
    /// Rows per block: 1 to [`TALL_ROWS`] (the kernels take [`BLOCK_ROWS`] and [`TALL_ROWS`]).
    pub rows: usize,
    /// `nrows.div_ceil(rows) + 1` offsets into `cols`.
    pub ptr: Vec<i64>,
    /// The distinct columns of each block, ascending.
    pub cols: Vec<i32>,
    /// `rows` values per listed column.
    pub vals: Vec<T>,
}

/// Calls `visit(column, row in block, entry)` for the entries of rows `r0..r1` (at most
/// [`TALL_ROWS`]) in ascending column order, a column's rows together (each row's columns
/// sorted, as `Csr` holds them).
fn merge(
    row_ptr: &[i64],
    col_idx: &[i32],
    r0: usize,
    r1: usize,
    mut visit: impl FnMut(i32, usize, usize),
) {
    let mut head = [0usize; TALL_ROWS];
    let mut end = [0usize; TALL_ROWS];
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

/// Distinct columns of block `b` of `rows` rows. Counted by merging the rows in pairs, then
/// the pairs' unions in pairs, each merge of two sorted runs without branches on the data,
/// in `scratch` (kept by the caller across blocks): the statistics count every block of
/// every upload, and walking all the block's rows at once, column by column ([`merge`]), took
/// most of their time.
fn block_len(
    row_ptr: &[i64],
    col_idx: &[i32],
    rows: usize,
    b: usize,
    scratch: &mut Vec<i32>,
) -> usize {
    let nrows = row_ptr.len() - 1;
    let (r0, r1) = (b * rows, ((b + 1) * rows).min(nrows));
    let (lo, hi) = (row_ptr[r0] as usize, row_ptr[r1] as usize);
    let len = hi - lo;
    if r1 - r0 == 1 {
        return len;
    }
    scratch.clear();
    scratch.resize(2 * len, 0);
    let (mut src, mut dst) = scratch.split_at_mut(len);
    src.copy_from_slice(&col_idx[lo..hi]);
    // Run ends in `src`: one run a row to start.
    let mut ends = [0usize; TALL_ROWS];
    let mut n = r1 - r0;
    for (i, r) in (r0..r1).enumerate() {
        ends[i] = row_ptr[r + 1] as usize - lo;
    }
    while n > 1 {
        let (mut start, mut out, mut m) = (0usize, 0usize, 0usize);
        for k in (0..n).step_by(2) {
            let end = if k + 1 < n { ends[k + 1] } else { ends[k] };
            out = if k + 1 < n {
                merge_runs(&src[start..ends[k]], &src[ends[k]..end], dst, out)
            } else {
                dst[out..out + end - start].copy_from_slice(&src[start..end]);
                out + end - start
            };
            start = end;
            ends[m] = out;
            m += 1;
        }
        n = m;
        std::mem::swap(&mut src, &mut dst);
    }
    ends[0]
}

/// Writes the union of two ascending runs of distinct columns to `dst` from `out`, and
/// returns the end.
fn merge_runs(x: &[i32], y: &[i32], dst: &mut [i32], mut out: usize) -> usize {
    let (mut i, mut j) = (0, 0);
    while i < x.len() && j < y.len() {
        let (a, b) = (x[i], y[j]);
        dst[out] = a.min(b);
        i += (a <= b) as usize;
        j += (b <= a) as usize;
        out += 1;
    }
    let rest = if i < x.len() { &x[i..] } else { &y[j..] };
    dst[out..out + rest.len()].copy_from_slice(rest);
    out + rest.len()
}

fn check_rows(rows: usize) -> Result<()> {
    if (1..=TALL_ROWS).contains(&rows) {
        Ok(())
    } else {
        Err(Error::invalid(
            "rows",
            format!("row blocks hold 1 to {TALL_ROWS} rows, not {rows}"),
        ))
    }
}

/// The summed number of distinct columns over the blocks of `rows` (1 to [`TALL_ROWS`]; the
/// kernels take [`BLOCK_ROWS`] and [`TALL_ROWS`]) rows: what the row-block kernels load a row
/// of B for, against `nnz` for a row kernel.
pub fn union_len(row_ptr: &[i64], col_idx: &[i32], rows: usize) -> Result<usize> {
    check_rows(rows)?;
    Ok(union_sum(row_ptr, col_idx, rows))
}

/// [`union_len`] for a height the caller knows is in range.
pub(crate) fn union_sum(row_ptr: &[i64], col_idx: &[i32], rows: usize) -> usize {
    let nblk = row_ptr.len().saturating_sub(1).div_ceil(rows);
    (0..nblk)
        .into_par_iter()
        .with_min_len(TASK_BLOCKS)
        .map_init(Vec::new, |s, b| block_len(row_ptr, col_idx, rows, b, s))
        .sum()
}

/// Builds the blocks of `rows` (1 to [`TALL_ROWS`]) rows of a CSR matrix given
/// by its arrays (rows sorted, unique columns): the blocks' lengths first, then each task fills
/// its own part of arrays allocated once, so the build neither grows nor copies vectors.
pub fn row_blocks<T: Scalar>(
    row_ptr: &[i64],
    col_idx: &[i32],
    values: &[T],
    rows: usize,
) -> Result<RowBlocks<T>> {
    check_rows(rows)?;
    let nrows = row_ptr.len().saturating_sub(1);
    let nblk = nrows.div_ceil(rows);
    let lens: Vec<usize> = (0..nblk)
        .into_par_iter()
        .with_min_len(TASK_BLOCKS)
        .map_init(Vec::new, |s, b| block_len(row_ptr, col_idx, rows, b, s))
        .collect();
    let mut ptr = Vec::with_capacity(nblk + 1);
    ptr.push(0i64);
    for l in &lens {
        ptr.push(ptr.last().unwrap() + *l as i64);
    }
    let total = *ptr.last().unwrap() as usize;
    let mut cols = vec![0i32; total];
    let mut vals = vec![T::ZERO; total * rows];
    // Cut both arrays at task boundaries, one piece per task of TASK_BLOCKS blocks.
    let mut pieces = Vec::with_capacity(nblk.div_ceil(TASK_BLOCKS));
    let (mut crest, mut vrest) = (&mut cols[..], &mut vals[..]);
    for t in 0..nblk.div_ceil(TASK_BLOCKS) {
        let (b0, b1) = (t * TASK_BLOCKS, ((t + 1) * TASK_BLOCKS).min(nblk));
        let n = (ptr[b1] - ptr[b0]) as usize;
        let (c, cr) = std::mem::take(&mut crest).split_at_mut(n);
        let (v, vr) = std::mem::take(&mut vrest).split_at_mut(n * rows);
        (crest, vrest) = (cr, vr);
        pieces.push((b0..b1, c, v));
    }
    pieces.into_par_iter().for_each(|(blocks, c, v)| {
        let mut at = 0usize; // listed columns written so far in this piece
        for b in blocks {
            let (r0, r1) = (b * rows, ((b + 1) * rows).min(nrows));
            let first = at;
            merge(row_ptr, col_idx, r0, r1, |col, r, p| {
                if at == first || c[at - 1] != col {
                    c[at] = col;
                    at += 1;
                }
                v[(at - 1) * rows + r] = values[p];
            });
        }
    });
    Ok(RowBlocks {
        rows,
        ptr,
        cols,
        vals,
    })
}
