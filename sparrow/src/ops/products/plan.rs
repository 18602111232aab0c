//! The policy that picks the products' GPU path: an ordered list of named rules for SpMV
//! ([`SPMV_RULES`]) and for SpMM ([`SPMM_RULES`]) over the matrix's facts, the first that
//! applies wins, and `--explain` prints its name with the facts it read. The thresholds are a
//! value per architecture ([`ProductsTuning`]); the measurements behind them are in
//! docs/tuning/products.md, and each path itself is described in [`super::path`].
//!
//! On the CPU there is one backend. On a GPU:
//! - N = 1 (SpMV) on rows that repeat one pattern of diagonals (stencils; [`DIAG_THREAD_MAX`]
//!   diagonals at most in f32, [`DIAG_THREAD_MAX_F64`] in f64): `diag`, a thread a row that
//!   computes the columns of a row that follows the pattern instead of reading them; on wider
//!   patterns (banded rows, the f64 3-D stencil) `diagv`, lanes of a row that read its values
//!   as 16-byte vectors ([`diag_lanes_for`]).
//! - N = 1 (SpMV) on even rows whose entries all lie within [`NEAR_REACH`] of the diagonal
//!   (FEM-like, dense diagonal blocks; in f32 rows of [`NEAR_MEAN_F32`] entries or more on
//!   average): `near`, lanes of a row that read each column as a 16-bit offset from the row
//!   (built on upload), four entries a lane at once ([`near_lanes`]).
//! - f32 SpMV on scattered columns where the row groups' copies of x stay within
//!   [`SLICE_X_RATIO`] times the entries ([`RowStats::sliceable`]: uniform and power-law rows):
//!   `sliced`, entries sorted by slice of columns (built on upload), each slice of x copied
//!   into shared memory by one block of its group's cluster, the rows' sums there, added over
//!   the cluster at the end ([`crate::ops::products::formats::slices`]).
//! - N = 1 (SpMV) on skewed rows, and f32 SpMV on rows shorter than [`STREAM_MEAN_F32`] on
//!   average: `stream`, work blocks planned on the host from the row pointers: runs of short
//!   rows holding at most [`STREAM_ITEMS`] entries ([`STREAM_ITEMS_EVEN`] on even rows with
//!   local columns), read as aligned 4-entry vectors with all loads issued at once, their
//!   products then summed row by row from shared memory; and chunks of long rows. Where every
//!   block's columns lie within [`PACKED_SPAN`] (local columns: stencils, FEM-like and banded
//!   matrices, any matrix under 65,537 columns) it runs `packed`, the same blocks over 16-bit
//!   column offsets and 16-bit row ends built on upload: 6 bytes an f32 entry instead of 8.
//! - N > 1, and SpMV on even rows: `rowvec`, a group of lanes per row: `cols` column lanes own
//!   16-byte segments of B's columns (`tiles` segments each per pass), `ksplit` entry lanes
//!   split the row's entries; each lane keeps several rows of B in flight. The column lanes
//!   cover N up to a pass width and the entry lanes get many entries each (see [`choose`]),
//!   so a warp holds several rows, which beat more lanes per row (see
//!   docs/tuning/products.md#row-kernels). f32 rows of scattered columns keep eight entries in
//!   flight per lane instead of four (`deep`, [`DEEP_MEAN`]).
//! - SpMV on even rows: `avec`, one column lane whose entry lanes read A's indices and values
//!   as aligned 4-entry vectors (f32 rows of 32 entries or more, in a build of its own for
//!   N = 1, and f64 rows of 24 or more on local columns, 12 on scattered ones), else `rowvec`.
//! - N > 1 on rows of uneven length side by side (power-law rows, mostly empty rows):
//!   `sorted`, the rowvec kernels over the rows sorted by length (the row list each uploaded
//!   matrix keeps), one launch per bin of rows that take the same number of entry lanes, so
//!   a warp's groups finish together instead of idling beside the warp's longest row.
//! - N > 1 on blocks of [`WINDOW_ROWS`] rows whose columns lie within a narrow window (dense
//!   diagonal blocks): `window`, the rowvec lanes with each block copying its window of B's
//!   rows into shared memory once so its entries read B there rather than from L2.
//! - N > 1 where neighbouring rows share most of their columns (banded, dense diagonal blocks,
//!   and in f32 from N = 64 the 3-D stencil): `rowblk`, a group of lanes per block of
//!   [`BLOCK_ROWS`] rows over the union of their columns (built on upload), so a row of B is
//!   loaded once for the block's rows instead of once per row ([`ROWBLK_SHARED`]); in f32,
//!   where even [`TALL_ROWS`] rows share nearly all their columns (banded rows, dense diagonal
//!   blocks), blocks of that many rows ([`RowStats::tall`]).

use crate::ops::products::formats::row_blocks::TALL_ROWS;
#[cfg(doc)]
use crate::ops::products::formats::row_blocks::{BLOCK_ROWS, BLOCK_UNION_MAX};
use crate::ops::products::formats::slices::{
    SLICE_COLS, SLICE_MEMBERS, SLICE_PIECE, SLICE_X_RATIO,
};
use crate::ops::products::stats::{RowStats, NEAR_REACH, SCATTER_WINDOW, SPREAD_RUN, WINDOW_ROWS};

use super::path::{window_cap, GpuPath};
pub use super::tuning::ProductsTuning;

pub use crate::ops::products::formats::work::{PACKED_SPAN, STREAM_ITEMS, STREAM_ITEMS_EVEN};

/// Least entries per staged row of B ([`RowStats::window_reuse`]) for the policy to stage.
pub const WINDOW_REUSE: f64 = 4.0;

/// Widest window the policy stages, in block rows: wider windows (banded rows) overlap their
/// neighbours', so L1 and L2 already serve the reuse, and they cut the blocks per SM. See
/// docs/tuning/products.md#window.
pub const WINDOW_SPAN: usize = 2;

/// f32 SpMV over rows near the diagonal ([`RowStats::near`]) takes the near path from this
/// many entries a row on average (non-empty rows); shorter rows keep the planned blocks, which
/// run them as fast, while f64 gains at any mean. See docs/tuning/products.md#near-the-diagonal.
pub const NEAR_MEAN_F32: f64 = 8.0;

/// f32 SpMV on rows shorter than this on average (non-empty rows) takes the planned blocks
/// even when rows are even: they beat the vector-A lanes on shorter rows and lost on rows of 32
/// and more. See docs/tuning/products.md#planned-work-blocks.
pub const STREAM_MEAN_F32: f64 = 32.0;

/// f64 SpMV on local columns takes the vector-A lanes from rows this long on average (on
/// scattered columns from 12), shorter rows the row lanes reading one entry at a time, which
/// ran them faster; local rows of 24 or more take about 6 entries a vector-A lane, at most 4.
/// See docs/tuning/products.md#vector-a-and-row-lanes.
pub const F64_AVEC_LOCAL_MEAN: f64 = 24.0;

/// SpMM above N = 64 on even rows shorter than this on average takes eight column lanes of
/// several segments each (four rows a warp) instead of wider lanes of one segment, since short
/// rows gain more from rows a warp than from wider passes. In f32 (80 registers against 48) only
/// on local columns: rows gathering B from DRAM need the occupancy more. See
/// docs/tuning/products.md#short-rows.
pub const SHORT_MEAN: f64 = 8.0;

/// SpMM (N > 1) on rows whose blocks of [`BLOCK_ROWS`] list at most this share of the entries
/// as distinct columns ([`RowStats::block_union`]) takes the row blocks, since a load of B
/// then serves several rows. f32 from N = 64 takes them on any matrix that has them (up to
/// [`BLOCK_UNION_MAX`]), where it measured faster; f64's blocks, at 80 registers against 48,
/// did not. See docs/tuning/products.md#row-blocks.
pub const ROWBLK_SHARED: f64 = 0.3;

/// Most diagonals of a pattern for f32 SpMV to take the diagonal path with a thread a row (more
/// take the vector diagonal path, [`diag_lanes_for`]): the stencils' 5 and 27 diagonals ran
/// faster a thread a row, the banded rows' 64 on lanes of a row. See
/// docs/tuning/products.md#diagonals.
pub const DIAG_THREAD_MAX: usize = 32;

/// The same bound for f64: the 2-D stencil still ran faster a thread a row, the 3-D stencil's
/// 27 diagonals on the vector diagonal path. See docs/tuning/products.md#diagonals.
pub const DIAG_THREAD_MAX_F64: usize = 8;

/// Rows below which the vector diagonal path takes 8 lanes a row with 2 vectors a lane rather
/// than 4 with 4, so a launch over few rows still fills the GPU. See
/// docs/tuning/products.md#vector-diagonals.
pub const DIAG_FEW_ROWS: usize = 250_000;

/// Least mean row length (non-empty rows) at which f32 rows of scattered columns take the deep
/// row kernels (eight entries in flight per lane instead of four, 60-odd registers against 48):
/// longer scattered rows gained from more loads a warp, rows of about 5 lost. See
/// docs/tuning/products.md#deep-row-kernels.
pub const DEEP_MEAN: f64 = 8.0;

/// Least [`RowStats::spread`] for the policy to sort rows by length (N > 1): runs of
/// [`SPREAD_RUN`] neighbouring rows take twice the lane time their entries need.
pub const SORT_SPREAD: f64 = 2.0;

/// Least rows for the policy to sort them: below, the extra launches cost more than idle
/// lanes.
pub const SORT_ROWS: usize = 1 << 14;

/// The largest power of two at most `x` (1 below 2).
fn pow2_floor(x: f64) -> u32 {
    let mut p = 1u32;
    while p < 32 && f64::from(2 * p) <= x {
        p *= 2;
    }
    p
}

/// The path the policy picks for these row statistics, N and value size, with the reason.
///
/// The constants come from timing every path on the benchmark panel (`bench --sweep`; see
/// docs/tuning/products.md): more rows per warp beat more lanes per row, so one pass covers at
/// most 32 columns up to N = 64 (16 in f64 up to N = 32), and above that 64 in f32 (128 when the
/// mean row has 32 entries or more) and 128 in f64, two segments per lane; each entry lane gets
/// about 32 entries (8 when N <= 8). Rows of uneven length side by side run sorted by length.
/// SpMV on rows that repeat a pattern of at most [`DIAG_THREAD_MAX`] diagonals
/// ([`DIAG_THREAD_MAX_F64`] in f64) takes the diagonal path with a thread a row, wider patterns
/// the vector diagonal path ([`diag_lanes_for`]); even rows whose entries all lie within
/// [`NEAR_REACH`] of the diagonal take the near path ([`near_lanes`]; f32 from
/// [`NEAR_MEAN_F32`] entries a row); otherwise it takes the planned blocks when rows are skewed
/// (long rows, a row far above the mean, or mostly empty rows) and for f32 rows shorter than
/// [`STREAM_MEAN_F32`] on average, else one column lane: reading A as 4-entry vectors with about
/// 6 entries per entry lane and at most 4 lanes a row (f32, and f64 rows of
/// [`F64_AVEC_LOCAL_MEAN`] entries or more on local columns, 12 or more on scattered ones,
/// [`RowStats::scattered`], where f64 takes about 4 entries a lane), or one entry at a time with
/// about 8 per lane (shorter f64 rows, where the vectors lost). The f64 planned blocks, at more
/// registers, lost to the row lanes on even rows. Planned blocks over packed columns where the
/// matrix packs ([`RowStats::packable`]), which read fewer bytes. SpMM on rows whose blocks of
/// [`BLOCK_ROWS`] share most columns takes the row blocks ([`ROWBLK_SHARED`]) ahead of the
/// window and row kernels, and f32 the tall blocks wherever the upload built them. f32 rows of
/// scattered columns with at least [`DEEP_MEAN`] entries on average run the deep row kernels.
pub fn choose(stats: &RowStats, n: usize, elem_bytes: usize) -> (GpuPath, String) {
    choose_on(stats, n, elem_bytes, true)
}

/// [`choose`] on a GPU that runs the column-slice kernel (`slices`,
/// [`crate::ops::products::formats::slices::runs_on`]) or not: f32 SpMV on scattered columns takes the slices
/// where [`RowStats::sliceable`] and the GPU runs them. f64 keeps its path: its slices of x
/// are twice the bytes, and it lost to cuSPARSE on them (docs/tuning/products.md#column-slices).
pub fn choose_on(stats: &RowStats, n: usize, elem_bytes: usize, slices: bool) -> (GpuPath, String) {
    choose_with(stats, n, elem_bytes, slices, &SM90)
}

/// [`choose_on`] with the tuning of the GPU's architecture ([`ProductsTuning::for_arch`]): the
/// first rule of [`SPMV_RULES`] (N = 1) or [`SPMM_RULES`] that applies, its reason the rule's
/// name and the facts it read.
pub fn choose_with(
    stats: &RowStats,
    n: usize,
    elem_bytes: usize,
    slices: bool,
    tuning: &ProductsTuning,
) -> (GpuPath, String) {
    let filled = stats.nrows - stats.empty_rows;
    let mean = if filled == 0 {
        0.0
    } else {
        stats.nnz as f64 / filled as f64
    };
    let facts = Facts {
        stats,
        n,
        elem_bytes,
        mean,
        slices,
        tuning,
    };
    let rules = if n == 1 { SPMV_RULES } else { SPMM_RULES };
    for rule in rules {
        if let Some((path, why)) = (rule.applies)(&facts) {
            return (path, format!("rule {}: {why}", rule.name));
        }
    }
    unreachable!("the last rule of each list always applies")
}

/// sm_90 (H100, H200), where every threshold was measured (docs/tuning/products.md).
pub const SM90: ProductsTuning = ProductsTuning {
    near_mean_f32: NEAR_MEAN_F32,
    stream_mean_f32: STREAM_MEAN_F32,
    f64_avec_local_mean: F64_AVEC_LOCAL_MEAN,
    f64_avec_scattered_mean: 12.0,
    short_mean: SHORT_MEAN,
    rowblk_shared: ROWBLK_SHARED,
    diag_thread_max: DIAG_THREAD_MAX,
    diag_thread_max_f64: DIAG_THREAD_MAX_F64,
    diag_few_rows: DIAG_FEW_ROWS,
    deep_mean: DEEP_MEAN,
    sort_spread: SORT_SPREAD,
    sort_rows: SORT_ROWS,
    window_reuse: WINDOW_REUSE,
    window_span: WINDOW_SPAN,
    // 66: the H200's 132 SMs, each holding one block.
    slice_groups: 132 / SLICE_MEMBERS,
};

/// sm_80 and sm_89 (A100, L40): not measured there yet, so sm_90's values, the slice groups
/// too (a count from the H200's 132 SMs, not theirs); a measurement on one of them lands here.
pub const SM80: ProductsTuning = SM90;

impl ProductsTuning {
    /// The tuning for a GPU of compute capability `cc`.
    pub fn for_arch(cc: (i32, i32)) -> &'static ProductsTuning {
        if cc.0 >= 9 {
            &SM90
        } else {
            &SM80
        }
    }
}

/// What the rules read: the matrix's statistics, N, the value size, the mean non-empty row,
/// whether the GPU runs the column slices, and the architecture's tuning.
pub struct Facts<'a> {
    /// Row statistics.
    pub stats: &'a RowStats,
    /// Columns of B.
    pub n: usize,
    /// Bytes per value.
    pub elem_bytes: usize,
    /// Mean length of the non-empty rows.
    pub mean: f64,
    /// Whether the GPU runs the column-slice kernel.
    pub slices: bool,
    /// The architecture's thresholds.
    pub tuning: &'a ProductsTuning,
}

/// A named rule of the policy: the path and the facts behind it where it applies.
pub struct Rule {
    /// The name `--explain` prints.
    pub name: &'static str,
    /// The path with its facts, or None where the rule does not apply.
    pub applies: fn(&Facts) -> Option<(GpuPath, String)>,
}

/// SpMV's rules in order; the last always applies.
pub const SPMV_RULES: &[Rule] = &[
    Rule {
        name: "diagonals",
        applies: rule_diag,
    },
    Rule {
        name: "vector-diagonals",
        applies: rule_diag_lanes,
    },
    Rule {
        name: "near-the-diagonal",
        applies: rule_near,
    },
    Rule {
        name: "column-slices",
        applies: rule_sliced,
    },
    Rule {
        name: "planned-blocks-skewed",
        applies: rule_stream_skewed,
    },
    Rule {
        name: "planned-blocks-short",
        applies: rule_stream_short,
    },
    Rule {
        name: "vector-a",
        applies: rule_avec,
    },
    Rule {
        name: "row-lanes",
        applies: rule_spmv_rows,
    },
];

/// SpMM's rules (N > 1) in order; the last always applies.
pub const SPMM_RULES: &[Rule] = &[
    Rule {
        name: "row-blocks",
        applies: rule_rowblk,
    },
    Rule {
        name: "window",
        applies: rule_window,
    },
    Rule {
        name: "sorted",
        applies: rule_sorted,
    },
    Rule {
        name: "row-kernels",
        applies: rule_rows,
    },
];

fn rule_diag(f: &Facts) -> Option<(GpuPath, String)> {
    let st = f.stats;
    let most = if f.elem_bytes == 4 {
        f.tuning.diag_thread_max
    } else {
        f.tuning.diag_thread_max_f64
    };
    (st.diagonals > 0 && st.diagonals <= most).then(|| {
        (
            GpuPath::Diag,
            format!(
                "N = 1, {} of {} rows repeat one pattern of {} diagonals: a thread a row walks the pattern, computing the columns instead of reading them",
                st.diag_rows, st.nrows, st.diagonals,
            ),
        )
    })
}

fn rule_diag_lanes(f: &Facts) -> Option<(GpuPath, String)> {
    let st = f.stats;
    match diag_lanes_tuned(st.diagonals, st.nrows, f.elem_bytes, f.tuning) {
        Some(path @ GpuPath::DiagLanes { lanes, vectors, .. }) => Some((
            path,
            format!(
                "N = 1, {} of {} rows repeat one pattern of {} diagonals: {lanes} lanes a row read its values as 16-byte vectors, {vectors} a lane at once, and compute the columns instead of reading them",
                st.diag_rows, st.nrows, st.diagonals,
            ),
        )),
        _ => None,
    }
}

fn rule_near(f: &Facts) -> Option<(GpuPath, String)> {
    let (st, mean) = (f.stats, f.mean);
    (st.near() && !st.skewed() && (f.elem_bytes == 8 || mean >= f.tuning.near_mean_f32)).then(
        || {
            let lanes = near_lanes(mean, f.elem_bytes);
            (
                GpuPath::Near { lanes },
                format!(
                    "N = 1, even rows (mean {mean:.1}, longest {}) within {} columns of the diagonal (at most {NEAR_REACH}): {lanes} lanes a row read each column as a 16-bit offset from the row, 4 entries a lane at once",
                    st.max_len, st.reach
                ),
            )
        },
    )
}

fn rule_sliced(f: &Facts) -> Option<(GpuPath, String)> {
    let st = f.stats;
    (f.slices && st.sliced_for(f.elem_bytes, f.tuning)).then(|| {
        (
            GpuPath::Sliced,
            format!(
                "N = 1, scattered columns (blocks of {WINDOW_ROWS} rows span up to {}) and {} groups' copies of x ({} columns each) within {SLICE_X_RATIO} times the {} entries: entries sorted by slice of {} columns, each slice of x copied into shared memory by one of a group's {SLICE_MEMBERS} blocks (a cluster), {} row pieces' sums there (rows over {SLICE_PIECE} entries cut into pieces, summed in order by a second kernel)",
                st.window_max,
                st.slice_groups(f.tuning),
                st.ncols,
                st.nnz,
                SLICE_COLS,
                st.pieces,
            ),
        )
    })
}

/// The planned blocks, over packed columns where the matrix packs.
fn stream_or_packed(st: &RowStats, why: String) -> (GpuPath, String) {
    if st.packable() {
        (
            GpuPath::Packed,
            format!(
                "{why}; every block's columns lie within {} (at most {PACKED_SPAN}), so they are read as 16-bit column offsets with 16-bit row ends",
                st.stream_span
            ),
        )
    } else {
        (GpuPath::Stream, why)
    }
}

fn rule_stream_skewed(f: &Facts) -> Option<(GpuPath, String)> {
    let st = f.stats;
    st.skewed().then(|| {
        stream_or_packed(
            st,
            format!(
                "N = 1, skewed rows (longest {}, mean {:.1}, {} empty): {} planned blocks of short rows (up to {} entries each, summed from shared memory) and long-row chunks",
                st.max_len, st.mean_len, st.empty_rows, st.stream_blocks, st.stream_items
            ),
        )
    })
}

fn rule_stream_short(f: &Facts) -> Option<(GpuPath, String)> {
    let (st, mean) = (f.stats, f.mean);
    let limit = f.tuning.stream_mean_f32;
    (f.elem_bytes == 4 && mean < limit).then(|| {
        stream_or_packed(
            st,
            format!(
                "N = 1, f32 rows of mean {mean:.1} (below {limit}): {} planned blocks of up to {} entries, read as 4-entry vectors and summed from shared memory",
                st.stream_blocks, st.stream_items
            ),
        )
    })
}

fn rule_avec(f: &Facts) -> Option<(GpuPath, String)> {
    let (st, mean) = (f.stats, f.mean);
    let scattered = st.scattered();
    let f64_avec = if scattered {
        f.tuning.f64_avec_scattered_mean
    } else {
        f.tuning.f64_avec_local_mean
    };
    if f.elem_bytes != 4 && mean < f64_avec {
        return None;
    }
    // Scattered f64 rows take more lanes (about 4 entries each), which ran them faster;
    // see docs/tuning/products.md#vector-a-and-row-lanes.
    let ksplit = if f.elem_bytes == 8 && scattered {
        pow2_floor(mean / 4.0).min(4)
    } else {
        pow2_floor(mean / 6.0).min(4)
    };
    let reach = if scattered {
        format!("columns scattered over windows up to {}", st.window_max)
    } else {
        format!("columns within windows of {}", st.window_max)
    };
    Some((
        GpuPath::AVec { ksplit },
        format!(
            "N = 1, even rows (mean {mean:.1}, longest {}, {reach}): {ksplit} lanes split each row, reading its indices and values 4 at a time",
            st.max_len
        ),
    ))
}

fn rule_spmv_rows(f: &Facts) -> Option<(GpuPath, String)> {
    let mean = f.mean;
    let ksplit = pow2_floor(mean / 8.0);
    Some((
        GpuPath::RowVec {
            cols: 1,
            ksplit,
            tiles: 1,
            deep: false,
        },
        format!(
            "N = 1, even rows (mean {mean:.1}, longest {}): {ksplit} lanes split each row",
            f.stats.max_len
        ),
    ))
}

/// The column lanes, entry lanes and columns a pass of the row kernels for N columns: a pass
/// covers up to 64 columns (128 on rows of 32 or more), entry lanes about 32 entries each (8 at
/// N <= 8).
fn lane_shape(f: &Facts) -> (u32, u32, usize, usize) {
    let (n, mean) = (f.n, f.mean);
    let vec = (16 / f.elem_bytes).max(1);
    let wcap = if mean >= 32.0 { 128 } else { 64 };
    let cols = n.min(wcap).div_ceil(vec).next_power_of_two().min(32) as u32;
    let ksplit = pow2_floor(mean / if n <= 8 { 8.0 } else { 32.0 }).min(32 / cols);
    (cols, ksplit, vec, cols as usize * vec)
}

fn rule_rowblk(f: &Facts) -> Option<(GpuPath, String)> {
    // The upload builds blocks of four rows up to BLOCK_UNION_MAX, the widest share f32 takes
    // from N = 64; tall ones (f32) only where they share nearly all columns, and they win there.
    let st = f.stats;
    let rows = st.block_rows(f.elem_bytes).filter(|_| st.long_rows == 0)?;
    let shared = st.union_for(rows) as f64 / st.nnz as f64;
    (rows == TALL_ROWS || shared <= f.tuning.rowblk_shared || (f.elem_bytes == 4 && f.n >= 64))
        .then(|| choose_rowblk(f.n, rows, shared, f.elem_bytes))
}

fn rule_window(f: &Facts) -> Option<(GpuPath, String)> {
    let (st, n) = (f.stats, f.n);
    let (cols, ksplit, vec, per_pass) = lane_shape(f);
    let window = cols >= 2
        && st.window_reuse >= f.tuning.window_reuse
        && st.window_max <= f.tuning.window_span * WINDOW_ROWS
        && st.window_max <= window_cap(cols);
    window.then(|| {
        let ksplit = ksplit.max(8 / cols);
        let why = format!(
            "N = {n}: blocks of {WINDOW_ROWS} rows stage their window of B (at most {} rows, each used {:.1} times) in shared memory; {cols} lanes own {vec}-column segments ({} pass(es) of {per_pass} columns), {ksplit} lanes split each row's entries",
            st.window_max,
            st.window_reuse,
            n.div_ceil(per_pass)
        );
        (GpuPath::Window { cols, ksplit }, why)
    })
}

/// The deep row kernels' note in a reason, where they run.
fn depth(f: &Facts) -> Option<String> {
    deep_tuned(f.stats, f.mean, f.elem_bytes, f.tuning).then(|| {
        format!(
            "; columns scattered over windows up to {} and rows of {:.1} on average: 8 entries in flight per lane",
            f.stats.window_max, f.mean
        )
    })
}

fn rule_sorted(f: &Facts) -> Option<(GpuPath, String)> {
    let (st, n) = (f.stats, f.n);
    if st.spread < f.tuning.sort_spread || st.nrows < f.tuning.sort_rows {
        return None;
    }
    let (cols, _, vec, per_pass) = lane_shape(f);
    let depth = depth(f);
    let lane_entries = if n <= 8 { 8 } else { 32 };
    let why = format!(
        "N = {n}: rows of uneven length side by side (runs of {SPREAD_RUN} rows take {:.1}x the lane time of their entries) run sorted by length, a launch per bin of rows with one entry lane per {lane_entries} entries (up to {}); {cols} lanes own {vec}-column segments ({} pass(es) of {per_pass} columns){}",
        st.spread,
        32 / cols,
        n.div_ceil(per_pass),
        depth.as_deref().unwrap_or("")
    );
    Some((
        GpuPath::Sorted {
            cols,
            lane_entries,
            deep: depth.is_some(),
        },
        why,
    ))
}

fn rule_rows(f: &Facts) -> Option<(GpuPath, String)> {
    let (st, n, mean, elem_bytes) = (f.stats, f.n, f.mean, f.elem_bytes);
    let (cols, _, vec, _) = lane_shape(f);
    // The row kernels' passes: from 9 to 64 columns a pass covers at most 32 columns (16 in
    // f64 up to N = 32), so a warp holds more rows, each a chain of dependent loads; above 64,
    // f64 passes take 128 columns as two segments per lane, one pass where there were two.
    // Short rows above 64 take eight lanes of several segments each, four rows a warp
    // (`SHORT_MEAN`). See docs/tuning/products.md#row-kernels.
    let short = f.tuning.short_mean;
    let (cols, tiles) = if n <= 8 {
        (cols, 1)
    } else if n <= 64 {
        let lanes = if elem_bytes == 8 && n <= 32 {
            8
        } else {
            32 / vec
        };
        (cols.min(lanes as u32), 1)
    } else if mean < short && elem_bytes == 8 {
        (8, 2)
    } else if mean < short && st.window_max <= SCATTER_WINDOW {
        (8, 4)
    } else if elem_bytes == 8 {
        (32, 2)
    } else {
        (cols, 1)
    };
    let ksplit = pow2_floor(mean / if n <= 8 { 8.0 } else { 32.0 }).min(32 / cols);
    let per_pass = cols as usize * vec * tiles as usize;
    let depth = depth(f).filter(|_| tiles == 1);
    let why = format!(
        "N = {n}: {cols} lanes own {tiles} {vec}-column segment(s) of B each ({} pass(es) of {per_pass} columns), {ksplit} lanes split each row's entries (mean non-empty row {mean:.1}){}",
        n.div_ceil(per_pass),
        depth.as_deref().unwrap_or("")
    );
    Some((
        GpuPath::RowVec {
            cols,
            ksplit,
            tiles,
            deep: depth.is_some(),
        },
        why,
    ))
}

/// Lanes a row of the near path for rows of `mean` entries: about 6 entries a lane in f32 and
/// 4 in f64 (a lane's first batch of 4 loads covers most of a row), 2 to 8 lanes: the rule's
/// lanes ran fastest, or near it, on every panel matrix. See
/// docs/tuning/products.md#near-the-diagonal.
pub fn near_lanes(mean: f64, elem_bytes: usize) -> u32 {
    let per_lane = if elem_bytes == 4 { 6.0 } else { 4.0 };
    pow2_floor(mean / per_lane).clamp(2, 8)
}

/// The vector diagonal path for SpMV over `nrows` rows with a pattern of `d` diagonals too many
/// for a thread a row, or None (no pattern, or one a thread a row takes): below
/// [`DIAG_FEW_ROWS`] rows 8 lanes a row with 2 vectors a lane, so the launch still fills the
/// GPU, else 4 lanes with 4 vectors; longer rows read the rest after them.
pub fn diag_lanes_for(d: usize, nrows: usize, elem_bytes: usize) -> Option<GpuPath> {
    diag_lanes_tuned(d, nrows, elem_bytes, &SM90)
}

fn diag_lanes_tuned(
    d: usize,
    nrows: usize,
    elem_bytes: usize,
    t: &ProductsTuning,
) -> Option<GpuPath> {
    let most = if elem_bytes == 4 {
        t.diag_thread_max
    } else {
        t.diag_thread_max_f64
    };
    if d <= most {
        return None;
    }
    let (lanes, vectors) = if nrows < t.diag_few_rows {
        (8, 2)
    } else {
        (4, 4)
    };
    Some(GpuPath::DiagLanes {
        lanes,
        vectors,
        steps: 1,
    })
}

/// Whether the row kernels keep eight entries in flight per lane ([`GpuPath::RowVec`]'s and
/// [`GpuPath::Sorted`]'s `deep`): f32 rows of scattered columns ([`RowStats::scattered`]) with
/// at least [`DEEP_MEAN`] entries on average.
pub fn deep_rows(stats: &RowStats, mean: f64, elem_bytes: usize) -> bool {
    deep_tuned(stats, mean, elem_bytes, &SM90)
}

fn deep_tuned(stats: &RowStats, mean: f64, elem_bytes: usize, t: &ProductsTuning) -> bool {
    elem_bytes == 4 && stats.scattered() && mean >= t.deep_mean
}

/// The row-block shape for N columns, the fastest in the sweeps (see
/// docs/tuning/products.md#row-blocks): one pass over N where the shapes allow; N <= 8 four
/// lanes split a block's columns with one or two column lanes, wider N one or two segments per
/// column lane (f32 up to 32 columns one, above two; f64 two above 8).
fn choose_rowblk(n: usize, rows: usize, shared: f64, elem_bytes: usize) -> (GpuPath, String) {
    let vec = 16 / elem_bytes;
    let segs = n.div_ceil(vec).next_power_of_two();
    let (cols, ksplit, tiles) = if n <= 8 {
        (segs.min(2) as u32, 4, 1)
    } else if elem_bytes == 4 && n <= 32 {
        (segs as u32, 1, 1)
    } else {
        (segs.div_ceil(2).clamp(8, 32) as u32, 1, 2)
    };
    let per_pass = cols as usize * vec * tiles as usize;
    let why = format!(
        "N = {n}: blocks of {rows} rows share their columns ({shared:.2} distinct columns per entry), so each block loads a listed column's row of B once for its rows; {cols} lanes own {tiles} {vec}-column segment(s) each ({} pass(es) of {per_pass} columns), {ksplit} lanes split each block's columns",
        n.div_ceil(per_pass)
    );
    (
        GpuPath::RowBlock {
            rows: rows as u32,
            cols,
            ksplit,
            tiles,
        },
        why,
    )
}
