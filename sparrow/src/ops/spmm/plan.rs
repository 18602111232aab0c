//! Every path SpMM can take, and the rule that picks one.
//!
//! On the CPU there is one backend. On a GPU:
//! - N <= 8 (SpMV included): `nnzsplit`, a group of G lanes splits each row's entries and keeps
//!   one partial sum per column; G is the smallest of 4, 8, 16, 32 that covers the mean row
//!   length, so short rows do not idle lanes and long rows get a full warp.
//! - N > 8: `colwarp`, lanes own columns of B, so each entry of A is read once per pass and
//!   B's rows are read coalesced; 16 lanes for N <= 16, else 32 lanes with 1, 2 or 4 columns
//!   per lane (up to 128 columns per pass over the row).

use crate::device::LaunchShape;
use crate::kernels::{colwarp_name, nnzsplit_name, COLWARP_SHAPES, NNZSPLIT_GROUPS, NNZSPLIT_NMAX};
use crate::matrix::RowStats;
use crate::{Error, Result};

/// Threads per block of every SpMM kernel (the kernels declare it in `__launch_bounds__`).
pub const BLOCK: u32 = 256;

/// A GPU kernel family with its compile-time shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum GpuPath {
    /// G lanes split a row's entries, up to `nmax` columns of B.
    NnzSplit {
        /// Columns of B the kernel can hold (N <= nmax).
        nmax: u32,
        /// Lanes per row.
        group: u32,
    },
    /// `lanes` lanes per row own `per_lane` columns each per pass.
    ColWarp {
        /// Lanes per row.
        lanes: u32,
        /// Columns per lane per pass.
        per_lane: u32,
    },
}

impl GpuPath {
    /// The kernel entry point for value type `ty`.
    pub fn kernel_name(&self, ty: &str) -> String {
        match *self {
            GpuPath::NnzSplit { nmax, group } => nnzsplit_name(ty, nmax, group),
            GpuPath::ColWarp { lanes, per_lane } => colwarp_name(ty, lanes, per_lane),
        }
    }

    /// Rows one block of [`BLOCK`] threads covers.
    pub fn rows_per_block(&self) -> u32 {
        match *self {
            GpuPath::NnzSplit { group, .. } => BLOCK / group,
            GpuPath::ColWarp { lanes, .. } => BLOCK / lanes,
        }
    }

    /// Whether this path computes N columns.
    pub fn supports(&self, n: usize) -> bool {
        match *self {
            GpuPath::NnzSplit { nmax, .. } => n <= nmax as usize,
            GpuPath::ColWarp { .. } => true,
        }
    }

    /// Every path there is, for tests that force each one.
    pub fn all() -> Vec<GpuPath> {
        let mut v = Vec::new();
        for nmax in NNZSPLIT_NMAX {
            for group in NNZSPLIT_GROUPS {
                v.push(GpuPath::NnzSplit { nmax, group });
            }
        }
        for (lanes, per_lane) in COLWARP_SHAPES {
            v.push(GpuPath::ColWarp { lanes, per_lane });
        }
        v
    }

    /// The launch shape for `nrows` rows.
    pub fn shape(&self, nrows: usize) -> Result<LaunchShape> {
        let blocks = nrows.div_ceil(self.rows_per_block() as usize);
        let blocks = u32::try_from(blocks)
            .map_err(|_| Error::unsupported(format!("{nrows} rows need more than 2^32 blocks")))?;
        Ok(LaunchShape::linear(blocks, BLOCK))
    }
}

/// The path the policy picks for these row statistics and N, with the reason.
pub fn choose(stats: &RowStats, n: usize) -> (GpuPath, String) {
    if n <= 8 {
        let nmax = NNZSPLIT_NMAX
            .into_iter()
            .find(|&m| m as usize >= n)
            .unwrap_or(8);
        let group = NNZSPLIT_GROUPS
            .into_iter()
            .find(|&g| g as f64 >= stats.mean_len)
            .unwrap_or(32);
        let why = format!(
            "N = {n} <= 8: entries of each row split over {group} lanes (mean row length {:.1}), {nmax} partial sums per lane",
            stats.mean_len
        );
        (GpuPath::NnzSplit { nmax, group }, why)
    } else {
        let (lanes, per_lane) = match n {
            9..=16 => (16, 1),
            17..=32 => (32, 1),
            33..=64 => (32, 2),
            _ => (32, 4),
        };
        let passes = n.div_ceil((lanes * per_lane) as usize);
        let why = format!(
            "N = {n} > 8: {lanes} lanes per row own columns of B, {per_lane} each, {passes} pass(es) over each row"
        );
        (GpuPath::ColWarp { lanes, per_lane }, why)
    }
}
