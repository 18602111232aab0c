//! Row statistics of a CSR matrix: one pass over its rows gives what the products' plans read
//! to choose a kernel and what the upload needs to size the formats the plan picks.

use super::tuning::ProductsTuning;
pub use super::tuning::{CHUNK, LONG_ROW, NEAR_REACH};
use crate::matrix::Csr;
use crate::Scalar;

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
    /// Entries of an SpMV work block of short rows at most: [`STREAM_ITEMS`](super::formats::work::STREAM_ITEMS)
    /// on skewed rows ([`RowStats::skewed`]) or scattered columns ([`RowStats::scattered`]),
    /// else [`STREAM_ITEMS_EVEN`](super::formats::work::STREAM_ITEMS_EVEN).
    pub stream_items: usize,
    /// Number of SpMV work blocks ([`work::stream_partition`](super::formats::work::stream_partition)
    /// with `stream_items`).
    pub stream_blocks: usize,
    /// The widest column span (last column - first column + 1) of an SpMV work block: at most
    /// [`PACKED_SPAN`](super::formats::work::PACKED_SPAN) and the matrix has a packed form
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
    /// Distinct columns of the blocks of [`BLOCK_ROWS`](super::formats::row_blocks::BLOCK_ROWS)
    /// consecutive rows, summed ([`union_len`](super::formats::row_blocks::union_len)): what the
    /// row-block SpMM kernels load a row of B for, where the row kernels load one per entry.
    pub block_union: usize,
    /// The same sum over blocks of [`TALL_ROWS`](super::formats::row_blocks::TALL_ROWS) rows, counted
    /// only where [`RowStats::blockable`] (0 elsewhere, which saves matrices that share no
    /// columns a second pass).
    pub tall_union: usize,
    /// Diagonals in the pattern that most rows repeat ([`diagonals::find`](super::formats::diagonals::find)),
    /// 0 when there is none.
    pub diagonals: usize,
    /// Rows that follow that pattern (0 without one).
    pub diag_rows: usize,
    /// A row whose columns give the pattern ([`diagonals::find_row`](super::formats::diagonals::find_row)).
    pub diag_row: usize,
    /// The farthest any stored entry lies from the diagonal: the largest |column - row|
    /// (0 without entries). Within [`NEAR_REACH`] the upload keeps 16-bit column offsets
    /// ([`RowStats::near`]).
    pub reach: usize,
    /// Row pieces of the column-slice layout: each row cut into pieces of at most
    /// [`SLICE_PIECE`](super::formats::slices::SLICE_PIECE) entries, an empty row one piece.
    pub pieces: usize,
}

/// Widest [`RowStats::window_max`] (columns) at which a matrix's columns count as local: past
/// it a block of rows reads x (a 32-row window of over 512 KB in f32) beyond what an SM's L1
/// holds, so its reads are gathers from L2. Between the panel's local matrices (3-D stencil:
/// windows of about 20,000 columns) and its scattered ones (uniform random: about a million).
pub const SCATTER_WINDOW: usize = 1 << 17;

impl RowStats {
    /// Whether a block's columns are scattered beyond [`SCATTER_WINDOW`]: there SpMV's time
    /// goes to gathers of x, and more, smaller work items keep more of them in flight (f64
    /// vector-A lanes: 4 a row; planned blocks: [`STREAM_ITEMS`](super::formats::work::STREAM_ITEMS)).
    pub fn scattered(&self) -> bool {
        self.window_max > SCATTER_WINDOW
    }

    /// Whether every SpMV work block's columns lie within [`PACKED_SPAN`](super::formats::work::PACKED_SPAN),
    /// so its entries' columns fit 16-bit offsets (`spmv_packed`).
    pub fn packable(&self) -> bool {
        self.stream_span <= super::formats::work::PACKED_SPAN
    }

    /// Whether every entry's column lies within [`NEAR_REACH`] of its row, so the upload keeps
    /// the columns as 16-bit offsets from the row (`spmv_near`).
    pub fn near(&self) -> bool {
        self.reach <= NEAR_REACH
    }

    /// Groups the column-slice layout deals the row pieces to on a GPU of this `tuning`: its
    /// [`ProductsTuning::slice_groups`], or more where the pieces need them.
    pub fn slice_groups(&self, tuning: &ProductsTuning) -> usize {
        tuning
            .slice_groups
            .max(self.pieces.div_ceil(super::formats::slices::SLICE_PIECES))
    }

    /// Blocks of the column-slice kernel on a GPU of this `tuning`:
    /// [`SLICE_MEMBERS`](super::formats::slices::SLICE_MEMBERS) a group.
    pub fn slice_blocks(&self, tuning: &ProductsTuning) -> usize {
        self.slice_groups(tuning) * super::formats::slices::SLICE_MEMBERS
    }

    /// Whether SpMV takes the column-slice layout (`spmv_sliced`) on a GPU of this `tuning`:
    /// scattered columns ([`RowStats::scattered`]) and the groups' copies of x,
    /// [`RowStats::slice_groups`] times the columns, at most
    /// [`SLICE_X_RATIO`](super::formats::slices::SLICE_X_RATIO) times the entries. The groups
    /// are the GPU's, since each copies the whole of x.
    pub fn sliceable(&self, tuning: &ProductsTuning) -> bool {
        self.scattered()
            && self.nnz > 0
            && self.slice_groups(tuning) as u128 * self.ncols as u128
                <= super::formats::slices::SLICE_X_RATIO as u128 * self.nnz as u128
    }

    /// Whether values of `elem_bytes` bytes take the column slices on a GPU of this `tuning`:
    /// f32 where [`RowStats::sliceable`]. The policy, the upload and the memory estimate ask
    /// here, with the same tuning, so they agree; f64's slices of x hold half the columns, and
    /// it lost to cuSPARSE on them (see docs/tuning/products.md#column-slices).
    pub fn sliced_for(&self, elem_bytes: usize, tuning: &ProductsTuning) -> bool {
        elem_bytes == 4 && self.sliceable(tuning)
    }

    /// Whether neighbouring rows share enough columns for the upload to build the row blocks
    /// ([`RowBlocks`](super::formats::row_blocks::RowBlocks)): their union at most
    /// [`BLOCK_UNION_MAX`](super::formats::row_blocks::BLOCK_UNION_MAX) of the entries.
    pub fn blockable(&self) -> bool {
        self.nnz > 0
            && self.block_union as f64
                <= super::formats::row_blocks::BLOCK_UNION_MAX * self.nnz as f64
    }

    /// Whether blocks of [`TALL_ROWS`](super::formats::row_blocks::TALL_ROWS) rows share their columns
    /// so widely, at most [`TALL_UNION_MAX`](super::formats::row_blocks::TALL_UNION_MAX) distinct
    /// columns per entry, that f32 SpMM takes them ([`RowStats::block_rows`]).
    pub fn tall(&self) -> bool {
        self.blockable()
            && self.tall_union as f64
                <= super::formats::row_blocks::TALL_UNION_MAX * self.nnz as f64
    }

    /// Rows per block of the row blocks the upload builds for values of `elem_bytes` bytes:
    /// [`TALL_ROWS`](super::formats::row_blocks::TALL_ROWS) for f32 where [`RowStats::tall`],
    /// [`BLOCK_ROWS`](super::formats::row_blocks::BLOCK_ROWS) where [`RowStats::blockable`], else none.
    /// f64 keeps four rows: its tall blocks' lanes hold twice the 8-byte accumulators, and they
    /// lost on banded rows (see docs/tuning/products.md#tall-row-blocks).
    pub fn block_rows(&self, elem_bytes: usize) -> Option<usize> {
        if elem_bytes == 4 && self.tall() {
            Some(super::formats::row_blocks::TALL_ROWS)
        } else if self.blockable() {
            Some(super::formats::row_blocks::BLOCK_ROWS)
        } else {
            None
        }
    }

    /// Distinct columns summed over the blocks of `rows` rows, for the heights
    /// [`RowStats::block_rows`] returns: [`RowStats::block_union`] for
    /// [`BLOCK_ROWS`](super::formats::row_blocks::BLOCK_ROWS), [`RowStats::tall_union`] for
    /// [`TALL_ROWS`](super::formats::row_blocks::TALL_ROWS); the statistics count no other height (0).
    pub fn union_for(&self, rows: usize) -> usize {
        match rows {
            super::formats::row_blocks::BLOCK_ROWS => self.block_union,
            super::formats::row_blocks::TALL_ROWS => self.tall_union,
            _ => 0,
        }
    }

    /// Whether rows are skewed for SpMV: a long row, a row far above the mean, or mostly empty
    /// rows. Skewed SpMV takes the planned blocks whatever the value type, in blocks of
    /// [`STREAM_ITEMS`](super::formats::work::STREAM_ITEMS) entries.
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

impl RowStats {
    /// Row-length statistics and the reach in one pass over the row pointers (rows are sorted,
    /// so a row's first and last column bound its distance from the diagonal), and the column
    /// windows of blocks of rows from each row's first and last column index; the pass runs
    /// across the cores, 32,768 rows a task.
    pub fn of<T: Scalar>(a: &Csr<T>) -> RowStats {
        use rayon::prelude::*;
        let p = (0..a.nrows().div_ceil(PASS_ROWS))
            .into_par_iter()
            .map(|c| Self::pass(a, c * PASS_ROWS..((c + 1) * PASS_ROWS).min(a.nrows())))
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
            nrows: a.nrows(),
            ncols: a.ncols(),
            nnz: a.nnz(),
            max_len,
            mean_len: if a.nrows() == 0 {
                0.0
            } else {
                a.nnz() as f64 / a.nrows() as f64
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
            block_union: super::formats::row_blocks::union_sum(
                a.row_ptr(),
                a.col_idx(),
                super::formats::row_blocks::BLOCK_ROWS,
            ),
            tall_union: 0,
            diagonals: 0,
            diag_rows: 0,
            diag_row: 0,
            reach: reach as usize,
            pieces,
        };
        if st.blockable() {
            st.tall_union = super::formats::row_blocks::union_sum(
                a.row_ptr(),
                a.col_idx(),
                super::formats::row_blocks::TALL_ROWS,
            );
        }
        st.stream_items = if st.skewed() || st.scattered() {
            super::formats::work::STREAM_ITEMS
        } else {
            super::formats::work::STREAM_ITEMS_EVEN
        };
        let mut span = 0usize;
        st.stream_blocks =
            super::formats::work::stream_partition(a.row_ptr(), st.stream_items, |b| {
                if let Some((lo, hi)) =
                    super::formats::work::block_columns(a.row_ptr(), a.col_idx(), b)
                {
                    span = span.max((hi as i64 - lo as i64) as usize + 1);
                }
            });
        st.stream_span = span;
        if let Some((row, off)) = super::formats::diagonals::find_row(a.row_ptr(), a.col_idx()) {
            st.diagonals = off.len();
            st.diag_row = row;
            st.diag_rows = super::formats::diagonals::follow_bits(a.row_ptr(), a.col_idx(), &off).1;
        }
        st
    }

    /// The row statistics' pass over rows `rows` (starting on a multiple of [`PASS_ROWS`]):
    /// row lengths, the reach, and the column windows of blocks of [`WINDOW_ROWS`] rows (rows
    /// over [`LONG_ROW`] and empty ones left out; rows are sorted, so a row's first and last
    /// entries bound its columns).
    fn pass<T: Scalar>(a: &Csr<T>, rows: std::ops::Range<usize>) -> RowPass {
        let mut p = RowPass::default();
        let mut run_max = 0usize;
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        for r in rows {
            let (s, e) = (a.row_ptr()[r] as usize, a.row_ptr()[r + 1] as usize);
            let len = e - s;
            p.max_len = p.max_len.max(len);
            p.pieces += super::formats::slices::pieces_of(len);
            p.empty += (len == 0) as usize;
            if len > 0 {
                let first = i64::from(a.col_idx()[s]);
                let last = i64::from(a.col_idx()[e - 1]);
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
            if r % SPREAD_RUN == SPREAD_RUN - 1 || r + 1 == a.nrows() {
                p.run_sum += (r % SPREAD_RUN + 1) * run_max;
                run_max = 0;
            }
            if r % WINDOW_ROWS == WINDOW_ROWS - 1 || r + 1 == a.nrows() {
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
}
