//! Every path SpMM can take, and the rule that picks one.
//!
//! On the CPU there is one backend. On a GPU:
//! - N = 1 (SpMV) on skewed rows: `stream`, work blocks planned on the host from the row
//!   pointers: runs of short rows holding at most [`STREAM_ITEMS`] entries, whose loads are all
//!   issued at once and whose rows are then summed from shared memory, and chunks of long rows.
//! - N > 1, and SpMV on even rows: `rowvec`, a group of lanes per row: `cols` column lanes own
//!   16-byte segments of B's columns (`tiles` segments each per pass), `ksplit` entry lanes
//!   split the row's entries; each lane keeps several rows of B in flight. The column lanes
//!   cover N up to a pass width and the entry lanes get many entries each (see [`choose`]),
//!   so a warp holds several rows: on the H200 that beat more lanes per row.

use crate::device::LaunchShape;
use crate::kernels::{rowvec_name, rowvec_shapes, stream_name};
use crate::matrix::RowStats;
use crate::{Error, Result};

/// Threads per block of every SpMM kernel (the kernels declare it in `__launch_bounds__`).
pub const BLOCK: u32 = 256;

pub use crate::matrix::work::STREAM_ITEMS;

/// A GPU kernel family with its compile-time shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum GpuPath {
    /// A group of `cols * ksplit` lanes per row.
    RowVec {
        /// Lanes that own 16-byte column segments of B.
        cols: u32,
        /// Lanes that split a row's entries.
        ksplit: u32,
        /// Segments per column lane per pass over the row.
        tiles: u32,
    },
    /// SpMV over the planned work blocks (N = 1 only).
    Stream,
}

impl GpuPath {
    /// The kernel entry point for value type `ty`.
    pub fn kernel_name(&self, ty: &str) -> String {
        match *self {
            GpuPath::RowVec {
                cols,
                ksplit,
                tiles,
            } => rowvec_name(ty, cols, ksplit, tiles),
            GpuPath::Stream => stream_name(ty),
        }
    }

    /// Whether this path computes N columns.
    pub fn supports(&self, n: usize) -> bool {
        match *self {
            GpuPath::RowVec { .. } => true,
            GpuPath::Stream => n == 1,
        }
    }

    /// Every path there is, for tests that force each one.
    pub fn all() -> Vec<GpuPath> {
        let mut v: Vec<GpuPath> = rowvec_shapes()
            .into_iter()
            .map(|(cols, ksplit, tiles)| GpuPath::RowVec {
                cols,
                ksplit,
                tiles,
            })
            .collect();
        v.push(GpuPath::Stream);
        v
    }

    /// The launch shape for a matrix with these statistics.
    pub fn shape(&self, stats: &RowStats) -> Result<LaunchShape> {
        let blocks = match *self {
            GpuPath::RowVec { cols, ksplit, .. } => {
                stats.nrows.div_ceil((BLOCK / (cols * ksplit)) as usize)
            }
            GpuPath::Stream => stats.stream_blocks,
        };
        let blocks = u32::try_from(blocks).map_err(|_| {
            Error::unsupported(format!("{} rows need more than 2^32 blocks", stats.nrows))
        })?;
        Ok(LaunchShape::linear(blocks, BLOCK))
    }
}

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
/// The constants come from timing every path on the benchmark panel (`bench --sweep`) on an
/// H200: more rows per warp beat more lanes per row, so one pass covers at most 64 columns
/// (128 when the mean row has 32 entries or more) and each entry lane gets about 32 entries
/// (8 when N <= 8). SpMV takes the planned blocks when rows are skewed (long rows, a row
/// far above the mean, or mostly empty rows), else one column lane and about 8 entries per
/// entry lane.
pub fn choose(stats: &RowStats, n: usize, elem_bytes: usize) -> (GpuPath, String) {
    let filled = stats.nrows - stats.empty_rows;
    let mean = if filled == 0 {
        0.0
    } else {
        stats.nnz as f64 / filled as f64
    };
    if n == 1 {
        let skewed = stats.long_rows > 0
            || stats.max_len as f64 > 16.0 * stats.mean_len + 64.0
            || 2 * stats.empty_rows > stats.nrows;
        if skewed {
            return (
                GpuPath::Stream,
                format!(
                    "N = 1, skewed rows (longest {}, mean {:.1}, {} empty): {} planned blocks of short rows (up to {STREAM_ITEMS} entries each, summed from shared memory) and long-row chunks",
                    stats.max_len, stats.mean_len, stats.empty_rows, stats.stream_blocks
                ),
            );
        }
        let ksplit = pow2_floor(mean / 8.0);
        return (
            GpuPath::RowVec {
                cols: 1,
                ksplit,
                tiles: 1,
            },
            format!(
                "N = 1, even rows (mean {mean:.1}, longest {}): {ksplit} lanes split each row",
                stats.max_len
            ),
        );
    }
    let vec = (16 / elem_bytes).max(1);
    let wcap = if mean >= 32.0 { 128 } else { 64 };
    let cols = n.min(wcap).div_ceil(vec).next_power_of_two().min(32) as u32;
    let ksplit = pow2_floor(mean / if n <= 8 { 8.0 } else { 32.0 }).min(32 / cols);
    let per_pass = cols as usize * vec;
    let why = format!(
        "N = {n}: {cols} lanes own {vec}-column segments of B ({} pass(es) of {per_pass} columns), {ksplit} lanes split each row's entries (mean non-empty row {mean:.1})",
        n.div_ceil(per_pass)
    );
    (
        GpuPath::RowVec {
            cols,
            ksplit,
            tiles: 1,
        },
        why,
    )
}
