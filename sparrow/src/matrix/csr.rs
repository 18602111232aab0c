//! Compressed sparse row matrices: 64-bit row pointers so nnz may pass 2^31, 32-bit column
//! indices because every column count we serve fits and it halves index traffic on the GPU.

use crate::{Error, Result, Scalar};

/// A CSR matrix whose structure has been fully validated.
///
/// Invariants, checked by every constructor: `row_ptr` has `nrows + 1` entries, starts at 0,
/// never decreases and ends at `nnz`; every column index is in `0..ncols`; within a row the
/// column indices are strictly increasing (sorted and unique). Kernels rely on these, so no
/// public path builds a `Csr` without them.
#[derive(Clone, Debug, PartialEq)]
pub struct Csr<T> {
    nrows: usize,
    ncols: usize,
    row_ptr: Vec<i64>,
    col_idx: Vec<i32>,
    values: Vec<T>,
}

/// Rows longer than [`LONG_ROW`] entries are split into chunks of [`CHUNK`] entries for the GPU
/// products: one group of lanes on a 100,000-entry row would otherwise finish long after the
/// rest of the grid. 1024 keeps a row's loop to a few dozen iterations of a 16- or 32-lane
/// group, well under the time the whole grid takes on the matrices that have such rows.
pub const LONG_ROW: usize = 1024;
/// Entries per chunk of a long row.
pub const CHUNK: usize = 512;

/// Rows per block of the GPU SpMM path that stages the block's window of B in shared memory
/// (`WINDOW_ROWS` in spmm.cu).
pub const WINDOW_ROWS: usize = 32;

/// Statistics of the row lengths, used by plans to choose kernels.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct RowStats {
    /// Number of rows.
    pub nrows: usize,
    /// Number of columns.
    pub ncols: usize,
    /// Number of stored entries.
    pub nnz: usize,
    /// Length of the longest row.
    pub max_len: usize,
    /// Mean row length.
    pub mean_len: f64,
    /// Number of rows with no entries.
    pub empty_rows: usize,
    /// Number of rows longer than [`LONG_ROW`].
    pub long_rows: usize,
    /// Number of [`CHUNK`]-entry chunks those rows split into.
    pub long_chunks: usize,
    /// Entries of an SpMV work block of short rows at most: [`STREAM_ITEMS`](super::work::STREAM_ITEMS)
    /// on skewed rows ([`RowStats::skewed`]) or scattered columns ([`RowStats::scattered`]),
    /// else [`STREAM_ITEMS_EVEN`](super::work::STREAM_ITEMS_EVEN).
    pub stream_items: usize,
    /// Number of SpMV work blocks ([`work::stream_partition`](super::work::stream_partition)
    /// with `stream_items`).
    pub stream_blocks: usize,
    /// The widest column span (last column - first column + 1) of an SpMV work block: at most
    /// [`PACKED_SPAN`](super::work::PACKED_SPAN) and the matrix has a packed form
    /// ([`RowStats::packable`]).
    pub stream_span: usize,
    /// The widest column window (last column - first column + 1) of a block of
    /// [`WINDOW_ROWS`] consecutive rows, rows over [`LONG_ROW`] left out.
    pub window_max: usize,
    /// Entries of rows up to [`LONG_ROW`] per column of their blocks' windows: how often a
    /// row of B staged for a block is used.
    pub window_reuse: f64,
    /// Rows up to [`LONG_ROW`] by length class: class 0 holds the empty rows, class `j >= 1`
    /// the rows of `2^(j-1)` to `2^j - 1` entries.
    pub len_classes: [usize; LEN_CLASSES],
    /// How unevenly neighbouring rows fill a warp: over runs of [`SPREAD_RUN`] consecutive
    /// rows (rows over [`LONG_ROW`] counted empty, as the chunk kernels take them), the sum of
    /// the run's rows times its longest row over the sum of the lengths; 1 for equal rows.
    pub spread: f64,
    /// Distinct columns of the blocks of [`BLOCK_ROWS`](super::row_blocks::BLOCK_ROWS)
    /// consecutive rows, summed ([`union_len`](super::row_blocks::union_len)): what the
    /// row-block SpMM kernels load a row of B for, where the row kernels load one per entry.
    pub block_union: usize,
    /// The same sum over blocks of [`TALL_ROWS`](super::row_blocks::TALL_ROWS) rows, counted
    /// only where [`RowStats::blockable`] (0 elsewhere, which saves matrices that share no
    /// columns a second pass).
    pub tall_union: usize,
    /// Diagonals in the pattern that most rows repeat ([`diagonals::find`](super::diagonals::find)),
    /// 0 when there is none.
    pub diagonals: usize,
    /// Rows that follow that pattern (0 without one).
    pub diag_rows: usize,
    /// A row whose columns give the pattern ([`diagonals::find_row`](super::diagonals::find_row)).
    pub diag_row: usize,
    /// The farthest any stored entry lies from the diagonal: the largest |column - row|
    /// (0 without entries). Within [`NEAR_REACH`] the upload keeps 16-bit column offsets
    /// ([`RowStats::near`]).
    pub reach: usize,
    /// Row pieces of the column-slice layout: each row cut into pieces of at most
    /// [`SLICE_PIECE`](super::slices::SLICE_PIECE) entries, an empty row one piece.
    pub pieces: usize,
}

/// Widest [`RowStats::reach`] whose columns fit 16-bit offsets from their row (`i16`).
pub const NEAR_REACH: usize = i16::MAX as usize;

/// Widest [`RowStats::window_max`] (columns) at which a matrix's columns count as local: past
/// it a block of rows reads x (a 32-row window of over 512 KB in f32) beyond what an SM's L1
/// holds, so its reads are gathers from L2. Between the panel's local matrices (3-D stencil:
/// windows of about 20,000 columns) and its scattered ones (uniform random: about a million).
pub const SCATTER_WINDOW: usize = 1 << 17;

impl RowStats {
    /// Whether a block's columns are scattered beyond [`SCATTER_WINDOW`]: there SpMV's time
    /// goes to gathers of x, and more, smaller work items keep more of them in flight (f64
    /// vector-A lanes: 4 a row; planned blocks: [`STREAM_ITEMS`](super::work::STREAM_ITEMS)).
    pub fn scattered(&self) -> bool {
        self.window_max > SCATTER_WINDOW
    }

    /// Whether every SpMV work block's columns lie within [`PACKED_SPAN`](super::work::PACKED_SPAN),
    /// so its entries' columns fit 16-bit offsets (`spmv_packed`).
    pub fn packable(&self) -> bool {
        self.stream_span <= super::work::PACKED_SPAN
    }

    /// Whether every entry's column lies within [`NEAR_REACH`] of its row, so the upload keeps
    /// the columns as 16-bit offsets from the row (`spmv_near`).
    pub fn near(&self) -> bool {
        self.reach <= NEAR_REACH
    }

    /// Groups the column-slice layout deals the row pieces to:
    /// [`SLICE_GROUPS`](super::slices::SLICE_GROUPS), or more where the pieces need them.
    pub fn slice_groups(&self) -> usize {
        super::slices::SLICE_GROUPS.max(self.pieces.div_ceil(super::slices::SLICE_PIECES))
    }

    /// Blocks of the column-slice kernel: [`SLICE_MEMBERS`](super::slices::SLICE_MEMBERS) a
    /// group.
    pub fn slice_blocks(&self) -> usize {
        self.slice_groups() * super::slices::SLICE_MEMBERS
    }

    /// Whether SpMV takes the column-slice layout (`spmv_sliced`): scattered columns
    /// ([`RowStats::scattered`]) and the groups' copies of x, [`RowStats::slice_groups`] times
    /// the columns, at most [`SLICE_X_RATIO`](super::slices::SLICE_X_RATIO) times the entries.
    pub fn sliceable(&self) -> bool {
        self.scattered()
            && self.nnz > 0
            && self.slice_groups() as u128 * self.ncols as u128
                <= super::slices::SLICE_X_RATIO as u128 * self.nnz as u128
    }

    /// Whether values of `elem_bytes` bytes take the column slices: f32 where
    /// [`RowStats::sliceable`]. The policy, the upload and the memory estimate ask here; f64's
    /// slices of x hold half the columns, and on the H200 it ran 0.64-0.69x cuSPARSE on them
    /// (blocks without clusters).
    pub fn sliced_for(&self, elem_bytes: usize) -> bool {
        elem_bytes == 4 && self.sliceable()
    }

    /// Whether neighbouring rows share enough columns for the upload to build the row blocks
    /// ([`RowBlocks`](super::row_blocks::RowBlocks)): their union at most
    /// [`BLOCK_UNION_MAX`](super::row_blocks::BLOCK_UNION_MAX) of the entries.
    pub fn blockable(&self) -> bool {
        self.nnz > 0
            && self.block_union as f64 <= super::row_blocks::BLOCK_UNION_MAX * self.nnz as f64
    }

    /// Whether blocks of [`TALL_ROWS`](super::row_blocks::TALL_ROWS) rows share their columns
    /// so widely, at most [`TALL_UNION_MAX`](super::row_blocks::TALL_UNION_MAX) distinct
    /// columns per entry, that f32 SpMM takes them ([`RowStats::block_rows`]).
    pub fn tall(&self) -> bool {
        self.blockable()
            && self.tall_union as f64 <= super::row_blocks::TALL_UNION_MAX * self.nnz as f64
    }

    /// Rows per block of the row blocks the upload builds for values of `elem_bytes` bytes:
    /// [`TALL_ROWS`](super::row_blocks::TALL_ROWS) for f32 where [`RowStats::tall`],
    /// [`BLOCK_ROWS`](super::row_blocks::BLOCK_ROWS) where [`RowStats::blockable`], else none.
    /// f64 keeps four rows: on the H200 its tall blocks, whose lanes hold twice the 8-byte
    /// accumulators, ran banded rows 1.2x-1.4x slower from N = 64.
    pub fn block_rows(&self, elem_bytes: usize) -> Option<usize> {
        if elem_bytes == 4 && self.tall() {
            Some(super::row_blocks::TALL_ROWS)
        } else if self.blockable() {
            Some(super::row_blocks::BLOCK_ROWS)
        } else {
            None
        }
    }

    /// Distinct columns summed over the blocks of `rows` rows, for the heights
    /// [`RowStats::block_rows`] returns: [`RowStats::block_union`] for
    /// [`BLOCK_ROWS`](super::row_blocks::BLOCK_ROWS), [`RowStats::tall_union`] for
    /// [`TALL_ROWS`](super::row_blocks::TALL_ROWS); the statistics count no other height (0).
    pub fn union_for(&self, rows: usize) -> usize {
        match rows {
            super::row_blocks::BLOCK_ROWS => self.block_union,
            super::row_blocks::TALL_ROWS => self.tall_union,
            _ => 0,
        }
    }

    /// Whether rows are skewed for SpMV: a long row, a row far above the mean, or mostly empty
    /// rows. Skewed SpMV takes the planned blocks whatever the value type, in blocks of
    /// [`STREAM_ITEMS`](super::work::STREAM_ITEMS) entries.
    pub fn skewed(&self) -> bool {
        self.long_rows > 0
            || self.max_len as f64 > 16.0 * self.mean_len + 64.0
            || 2 * self.empty_rows > self.nrows
    }
}

/// Length classes of [`RowStats::len_classes`]: empty, then powers of two up to [`LONG_ROW`].
pub const LEN_CLASSES: usize = 12;

/// Rows per run of [`RowStats::spread`]: the rows a block of 256 threads holds at 32 lanes a
/// row.
pub const SPREAD_RUN: usize = 8;

/// Rows a task of the row statistics' pass takes: a whole number of [`WINDOW_ROWS`] and
/// [`SPREAD_RUN`], so no window or run straddles two tasks.
const PASS_ROWS: usize = 1 << 15;
const _: () =
    assert!(PASS_ROWS.is_multiple_of(WINDOW_ROWS) && PASS_ROWS.is_multiple_of(SPREAD_RUN));

/// What the row statistics' pass sums or takes the largest of over a run of rows.
#[derive(Default)]
struct RowPass {
    window_max: usize,
    span_sum: usize,
    max_len: usize,
    empty: usize,
    long_rows: usize,
    long_chunks: usize,
    len_classes: [usize; LEN_CLASSES],
    run_sum: usize,
    /// Entries of the rows of at most LONG_ROW (the windows' entries too: empty rows add none).
    short_sum: usize,
    reach: i64,
    pieces: usize,
}

impl RowPass {
    fn merge(mut a: Self, b: Self) -> Self {
        a.window_max = a.window_max.max(b.window_max);
        a.span_sum += b.span_sum;
        a.max_len = a.max_len.max(b.max_len);
        a.empty += b.empty;
        a.long_rows += b.long_rows;
        a.long_chunks += b.long_chunks;
        for (x, y) in a.len_classes.iter_mut().zip(b.len_classes) {
            *x += y;
        }
        a.run_sum += b.run_sum;
        a.short_sum += b.short_sum;
        a.reach = a.reach.max(b.reach);
        a.pieces += b.pieces;
        a
    }
}

/// The length class of a row of `len <= LONG_ROW` entries.
pub fn len_class(len: usize) -> usize {
    (usize::BITS - len.leading_zeros()) as usize
}

impl<T: Scalar> Csr<T> {
    /// Builds a matrix from its parts, requiring sorted, unique column indices within each row.
    pub fn new(
        nrows: usize,
        ncols: usize,
        row_ptr: Vec<i64>,
        col_idx: Vec<i32>,
        values: Vec<T>,
    ) -> Result<Self> {
        check_shape(nrows, ncols)?;
        check_row_ptr(nrows, &row_ptr, col_idx.len(), values.len())?;
        for r in 0..nrows {
            let (s, e) = (row_ptr[r] as usize, row_ptr[r + 1] as usize);
            let mut prev: i64 = -1;
            for (p, &c) in col_idx[s..e].iter().enumerate() {
                check_col(r, s + p, c, ncols)?;
                if (c as i64) <= prev {
                    let why = if c as i64 == prev {
                        "repeats the previous index"
                    } else {
                        "is smaller than the previous index"
                    };
                    return Err(Error::invalid(
                        "col_idx",
                        format!(
                            "row {r}: column index {c} at position {} {why}; rows must hold sorted, unique column indices",
                            s + p
                        ),
                    ));
                }
                prev = c as i64;
            }
        }
        Ok(Csr {
            nrows,
            ncols,
            row_ptr,
            col_idx,
            values,
        })
    }

    /// Builds a matrix from parts whose rows may be unsorted or hold duplicates: each row is
    /// sorted by column (stably) and duplicates are summed in that order. Everything else is
    /// validated as in [`Csr::new`]. The work is done in the given arrays, so a large matrix
    /// is never held twice.
    pub fn normalized(
        nrows: usize,
        ncols: usize,
        mut row_ptr: Vec<i64>,
        mut col_idx: Vec<i32>,
        mut values: Vec<T>,
    ) -> Result<Self> {
        check_shape(nrows, ncols)?;
        check_row_ptr(nrows, &row_ptr, col_idx.len(), values.len())?;
        for r in 0..nrows {
            let (s, e) = (row_ptr[r] as usize, row_ptr[r + 1] as usize);
            for (p, &c) in col_idx[s..e].iter().enumerate() {
                check_col(r, s + p, c, ncols)?;
            }
        }
        // Rows are compacted towards the front: a row is written no further than where it
        // was read from, so the rows after it are intact when their turn comes.
        let mut out = 0usize;
        let mut row: Vec<(i32, T)> = Vec::new();
        // Where the next row was read from, before its pointer is overwritten.
        let mut s = 0usize;
        for r in 0..nrows {
            let e = row_ptr[r + 1] as usize;
            row.clear();
            row.extend(
                col_idx[s..e]
                    .iter()
                    .copied()
                    .zip(values[s..e].iter().copied()),
            );
            row.sort_by_key(|&(c, _)| c);
            let start = out;
            for &(c, v) in row.iter() {
                if out > start && col_idx[out - 1] == c {
                    values[out - 1] += v;
                } else {
                    col_idx[out] = c;
                    values[out] = v;
                    out += 1;
                }
            }
            row_ptr[r + 1] = out as i64;
            s = e;
        }
        col_idx.truncate(out);
        values.truncate(out);
        col_idx.shrink_to_fit();
        values.shrink_to_fit();
        Ok(Csr {
            nrows,
            ncols,
            row_ptr,
            col_idx,
            values,
        })
    }

    /// Builds a matrix from the coordinate triplets that `emit` hands to its sink, duplicates
    /// summed as in [`Csr::from_triplets`] (the same matrix for the same stream). `emit` runs
    /// twice, to count each row's entries and then to place them, so the triplets are never
    /// stored: the matrix's own arrays are all the memory it takes. Both runs must hand over
    /// the same stream; a second run whose rows hold more or fewer entries is refused.
    pub fn from_triplet_stream(
        nrows: usize,
        ncols: usize,
        emit: impl Fn(&mut dyn FnMut(usize, usize, T)),
    ) -> Result<Self> {
        check_shape(nrows, ncols)?;
        // nrows comes from a file's size line in the readers: refuse what cannot be held.
        let mut counts = crate::memory::try_filled("the row pointers", nrows + 1, 0i64)?;
        let mut bad: Option<Error> = None;
        let mut k = 0usize;
        emit(&mut |r, c, _| {
            if bad.is_none() {
                if r >= nrows {
                    bad = Some(Error::invalid(
                        "rows",
                        format!("entry {k}: row index {r} is out of range for {nrows} rows"),
                    ));
                } else if c >= ncols {
                    bad = Some(Error::invalid(
                        "cols",
                        format!("entry {k}: column index {c} is out of range for {ncols} columns"),
                    ));
                } else {
                    counts[r + 1] += 1;
                }
            }
            k += 1;
        });
        if let Some(e) = bad {
            return Err(e);
        }
        for r in 0..nrows {
            counts[r + 1] += counts[r];
        }
        let total = counts[nrows] as usize;
        let mut next = counts.clone();
        let mut col_idx = vec![0i32; total];
        let mut values = vec![T::ZERO; total];
        let mut placed = 0usize;
        let mut differs = false;
        emit(&mut |r, c, v| {
            if r < nrows && c < ncols && next[r] < counts[r + 1] {
                let p = next[r] as usize;
                col_idx[p] = c as i32;
                values[p] = v;
                next[r] += 1;
                placed += 1;
            } else {
                differs = true;
            }
        });
        if differs || placed != total {
            return Err(Error::invalid(
                "triplets",
                "the second pass over the stream gave other entries than the first",
            ));
        }
        drop(next);
        Self::normalized(nrows, ncols, counts, col_idx, values)
    }

    /// Builds a matrix from coordinate triplets in any order; duplicates are summed.
    pub fn from_triplets(
        nrows: usize,
        ncols: usize,
        rows: &[usize],
        cols: &[usize],
        vals: &[T],
    ) -> Result<Self> {
        check_shape(nrows, ncols)?;
        if rows.len() != cols.len() || rows.len() != vals.len() {
            return Err(Error::invalid(
                "triplets",
                format!(
                    "rows, cols and vals have lengths {}, {} and {}",
                    rows.len(),
                    cols.len(),
                    vals.len()
                ),
            ));
        }
        Self::from_triplet_stream(nrows, ncols, |put| {
            for k in 0..rows.len() {
                put(rows[k], cols[k], vals[k]);
            }
        })
    }

    /// An `nrows x ncols` matrix with no entries.
    pub fn empty(nrows: usize, ncols: usize) -> Result<Self> {
        Self::new(nrows, ncols, vec![0; nrows + 1], vec![], vec![])
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.col_idx.len()
    }
    /// Row pointers, `nrows + 1` of them.
    pub fn row_ptr(&self) -> &[i64] {
        &self.row_ptr
    }
    /// Column indices, row by row.
    pub fn col_idx(&self) -> &[i32] {
        &self.col_idx
    }
    /// Stored values, row by row.
    pub fn values(&self) -> &[T] {
        &self.values
    }
    /// The range of entry positions of row `r`.
    pub fn row_range(&self, r: usize) -> std::ops::Range<usize> {
        self.row_ptr[r] as usize..self.row_ptr[r + 1] as usize
    }
    /// Consumes the matrix, returning `(row_ptr, col_idx, values)`.
    pub fn into_parts(self) -> (Vec<i64>, Vec<i32>, Vec<T>) {
        (self.row_ptr, self.col_idx, self.values)
    }

    /// Row-length statistics and the reach in one pass over the row pointers (rows are sorted,
    /// so a row's first and last column bound its distance from the diagonal), and the column
    /// windows of blocks of rows from each row's first and last column index; the pass runs
    /// across the cores, 32,768 rows a task.
    pub fn row_stats(&self) -> RowStats {
        use rayon::prelude::*;
        let p = (0..self.nrows.div_ceil(PASS_ROWS))
            .into_par_iter()
            .map(|c| self.row_pass(c * PASS_ROWS..((c + 1) * PASS_ROWS).min(self.nrows)))
            .reduce(RowPass::default, RowPass::merge);
        let RowPass {
            window_max,
            span_sum,
            max_len,
            empty,
            long_rows,
            long_chunks,
            len_classes,
            run_sum,
            short_sum,
            reach,
            pieces,
        } = p;
        let mut st = RowStats {
            nrows: self.nrows,
            ncols: self.ncols,
            nnz: self.nnz(),
            max_len,
            mean_len: if self.nrows == 0 {
                0.0
            } else {
                self.nnz() as f64 / self.nrows as f64
            },
            empty_rows: empty,
            long_rows,
            long_chunks,
            stream_items: 0,
            stream_blocks: 0,
            stream_span: 0,
            window_max,
            window_reuse: if span_sum == 0 {
                0.0
            } else {
                short_sum as f64 / span_sum as f64
            },
            len_classes,
            spread: if short_sum == 0 {
                1.0
            } else {
                run_sum as f64 / short_sum as f64
            },
            block_union: super::row_blocks::union_sum(
                &self.row_ptr,
                &self.col_idx,
                super::row_blocks::BLOCK_ROWS,
            ),
            tall_union: 0,
            diagonals: 0,
            diag_rows: 0,
            diag_row: 0,
            reach: reach as usize,
            pieces,
        };
        if st.blockable() {
            st.tall_union = super::row_blocks::union_sum(
                &self.row_ptr,
                &self.col_idx,
                super::row_blocks::TALL_ROWS,
            );
        }
        st.stream_items = if st.skewed() || st.scattered() {
            super::work::STREAM_ITEMS
        } else {
            super::work::STREAM_ITEMS_EVEN
        };
        let mut span = 0usize;
        st.stream_blocks = super::work::stream_partition(&self.row_ptr, st.stream_items, |b| {
            if let Some((lo, hi)) = super::work::block_columns(&self.row_ptr, &self.col_idx, b) {
                span = span.max((hi as i64 - lo as i64) as usize + 1);
            }
        });
        st.stream_span = span;
        if let Some((row, off)) = super::diagonals::find_row(&self.row_ptr, &self.col_idx) {
            st.diagonals = off.len();
            st.diag_row = row;
            st.diag_rows = super::diagonals::follow_bits(&self.row_ptr, &self.col_idx, &off).1;
        }
        st
    }

    /// The row statistics' pass over rows `rows` (starting on a multiple of [`PASS_ROWS`]):
    /// row lengths, the reach, and the column windows of blocks of [`WINDOW_ROWS`] rows (rows
    /// over [`LONG_ROW`] and empty ones left out; rows are sorted, so a row's first and last
    /// entries bound its columns).
    fn row_pass(&self, rows: std::ops::Range<usize>) -> RowPass {
        let mut p = RowPass::default();
        let mut run_max = 0usize;
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        for r in rows {
            let (s, e) = (self.row_ptr[r] as usize, self.row_ptr[r + 1] as usize);
            let len = e - s;
            p.max_len = p.max_len.max(len);
            p.pieces += super::slices::pieces_of(len);
            p.empty += (len == 0) as usize;
            if len > 0 {
                let first = i64::from(self.col_idx[s]);
                let last = i64::from(self.col_idx[e - 1]);
                p.reach = p.reach.max(r as i64 - first).max(last - r as i64);
                if len <= LONG_ROW {
                    lo = lo.min(first);
                    hi = hi.max(last);
                }
            }
            if len > LONG_ROW {
                p.long_rows += 1;
                p.long_chunks += len.div_ceil(CHUNK);
            } else {
                p.len_classes[len_class(len)] += 1;
                p.short_sum += len;
                run_max = run_max.max(len);
            }
            if r % SPREAD_RUN == SPREAD_RUN - 1 || r + 1 == self.nrows {
                p.run_sum += (r % SPREAD_RUN + 1) * run_max;
                run_max = 0;
            }
            if r % WINDOW_ROWS == WINDOW_ROWS - 1 || r + 1 == self.nrows {
                if hi >= lo {
                    let span = (hi - lo + 1) as usize;
                    p.window_max = p.window_max.max(span);
                    p.span_sum += span;
                }
                (lo, hi) = (i64::MAX, i64::MIN);
            }
        }
        p
    }

    /// The same structure with values converted to `U` (rounding when narrowing).
    pub fn cast<U: Scalar>(&self) -> Csr<U> {
        Csr {
            nrows: self.nrows,
            ncols: self.ncols,
            row_ptr: self.row_ptr.clone(),
            col_idx: self.col_idx.clone(),
            values: self
                .values
                .iter()
                .map(|v| U::from_f64(v.to_f64()))
                .collect(),
        }
    }
}

fn check_shape(nrows: usize, ncols: usize) -> Result<()> {
    if ncols > i32::MAX as usize {
        return Err(Error::invalid(
            "ncols",
            format!("{ncols} columns do not fit 32-bit column indices"),
        ));
    }
    if nrows > i64::MAX as usize / 2 {
        return Err(Error::invalid("nrows", format!("{nrows} rows is too many")));
    }
    Ok(())
}

fn check_row_ptr(nrows: usize, row_ptr: &[i64], n_idx: usize, n_val: usize) -> Result<()> {
    if row_ptr.len() != nrows + 1 {
        return Err(Error::invalid(
            "row_ptr",
            format!(
                "has {} entries; {nrows} rows need {}",
                row_ptr.len(),
                nrows + 1
            ),
        ));
    }
    if n_idx != n_val {
        return Err(Error::invalid(
            "values",
            format!("has {n_val} entries but col_idx has {n_idx}"),
        ));
    }
    if row_ptr[0] != 0 {
        return Err(Error::invalid(
            "row_ptr",
            format!("row 0: starts at {}, must start at 0", row_ptr[0]),
        ));
    }
    for r in 0..nrows {
        if row_ptr[r + 1] < row_ptr[r] {
            return Err(Error::invalid(
                "row_ptr",
                format!(
                    "row {r}: ends at {} before it starts at {}; row pointers must never decrease",
                    row_ptr[r + 1],
                    row_ptr[r]
                ),
            ));
        }
    }
    if row_ptr[nrows] != n_idx as i64 {
        return Err(Error::invalid(
            "row_ptr",
            format!(
                "last entry is {} but there are {n_idx} column indices (nnz)",
                row_ptr[nrows]
            ),
        ));
    }
    Ok(())
}

fn check_col(r: usize, p: usize, c: i32, ncols: usize) -> Result<()> {
    if c < 0 || c as usize >= ncols {
        return Err(Error::invalid(
            "col_idx",
            format!(
                "row {r}: column index {c} at position {p} is out of range for {ncols} columns"
            ),
        ));
    }
    Ok(())
}
