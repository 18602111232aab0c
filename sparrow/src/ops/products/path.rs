//! The GPU paths of the products: each kernel family with its compile-time shape, its kernel
//! names, the matrices it can run on (and why not), and its launch shape. Which path runs is
//! the policy's choice ([`super::plan`]); this file says only what each path is.

use crate::device::LaunchShape;
use crate::kernels::{
    avec_name, cut_name, deep_exists, diag_name, diagv_name, fill_name, near_name, packed_name,
    rowblk_name, rowvec_name, rowvec_shapes, sliced_name, spmv_avec_name, stream_name, window_name,
    window_shapes, AVEC_SPLITS, DIAG_SHAPES, NEAR_LANES, ROWBLK_SHAPES,
};
use crate::ops::products::formats::diagonals::{DIAG_MAX, DIAG_SHARE};
use crate::ops::products::formats::row_blocks::{
    BLOCK_ROWS, BLOCK_UNION_MAX, TALL_ROWS, TALL_UNION_MAX,
};
use crate::ops::products::formats::slices::{
    smem_bytes, SLICE_MEMBERS, SLICE_WARPS, SLICE_X_RATIO,
};
use crate::ops::products::formats::work::PACKED_SPAN;
use crate::ops::products::plan::ProductsTuning;
use crate::ops::products::stats::{RowStats, LEN_CLASSES, NEAR_REACH, SCATTER_WINDOW, WINDOW_ROWS};
use crate::{Error, Result};

/// Threads per block of every SpMM kernel (the kernels declare it in `__launch_bounds__`).
pub const BLOCK: u32 = crate::kernels::sizes::SPMM_BLOCK;

/// Rows a block of the vector diagonal kernel with `lanes` lanes a row and `steps` rows a lane
/// takes.
pub fn diag_lanes_rows(lanes: u32, steps: u32) -> usize {
    (BLOCK / 32) as usize * (32 / lanes as usize) * steps as usize
}

/// Most dynamic shared memory a window block takes (B's window rows, 16 bytes per column lane
/// each): two blocks still fit on an SM of 227 KB at the widest windows.
pub const WINDOW_SMEM: usize = 96 * 1024;

/// Why a forced deep row path cannot run on values of type `ty`.
fn deep_refusal(ty: &str) -> String {
    format!("keeps eight entries in flight per lane, a build for f32 values only, one segment a lane; these values are {ty}")
}

/// Rows of B a window block with `cols` column lanes can stage.
pub fn window_cap(cols: u32) -> usize {
    WINDOW_SMEM / (16 * cols as usize)
}

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
        /// Eight entries in flight per lane instead of four (f32, one segment a lane).
        deep: bool,
    },
    /// SpMV over the planned work blocks (N = 1 only).
    Stream,
    /// The planned blocks over the matrix's packed columns: 16-bit offsets from each block's
    /// first column and 16-bit row ends (N = 1, and only matrices
    /// [`RowStats::packable`] describes).
    Packed,
    /// SpMV over rows that repeat one pattern of diagonals ([`RowStats::diagonals`]): a thread
    /// a row, which computes the columns of a row that follows the pattern instead of reading
    /// them (N = 1 only).
    Diag,
    /// SpMV over rows that repeat one pattern of many diagonals: `lanes` lanes a row read its
    /// values as 16-byte vectors, `vectors` a lane at once per row, over `steps` rows a lane
    /// with all their loads in flight (N = 1 only).
    DiagLanes {
        /// Lanes a row ([`DIAG_SHAPES`]).
        lanes: u32,
        /// Vectors a lane loads at once per row.
        vectors: u32,
        /// Rows a lane takes, their loads all in flight at once.
        steps: u32,
    },
    /// SpMV over rows whose entries all lie within [`NEAR_REACH`] of the diagonal
    /// ([`RowStats::near`]): `lanes` lanes a row read each column as a 16-bit offset from the
    /// row, four entries a lane at once (N = 1 only).
    Near {
        /// Lanes a row ([`NEAR_LANES`]).
        lanes: u32,
    },
    /// f32 SpMV over the column-slice layout ([`RowStats::sliceable`]): entries sorted by slice
    /// of columns, each slice of x copied into shared memory by one block of a cluster, the row
    /// pieces' sums there, added over the cluster; rows cut into pieces summed in order by a
    /// second kernel (N = 1 only).
    Sliced,
    /// One column lane whose `ksplit` entry lanes read A's indices and values as aligned
    /// 4-entry vectors.
    AVec {
        /// Lanes that split a row's entries.
        ksplit: u32,
    },
    /// The row-vector lanes over blocks of [`WINDOW_ROWS`] rows that stage their window of B in
    /// shared memory (blocks whose window does not fit read B from global memory).
    Window {
        /// Lanes that own 16-byte column segments of B.
        cols: u32,
        /// Lanes that split a row's entries.
        ksplit: u32,
    },
    /// The row-vector lanes over the rows sorted by length, one launch per bin of rows
    /// ([`GpuPath::sorted_bins`]).
    Sorted {
        /// Lanes that own 16-byte column segments of B.
        cols: u32,
        /// Entries per entry lane a bin's rows get at least: a row of `L` entries takes
        /// `L / lane_entries` entry lanes rounded down to a power of two (1 to `32 / cols`).
        lane_entries: u32,
        /// Eight entries in flight per lane instead of four (f32 only).
        deep: bool,
    },
    /// The row-vector lanes over blocks of consecutive rows and the union of their columns,
    /// each listed column's row of B loaded once for the block's rows (the row blocks the
    /// upload builds, [`RowStats::block_rows`]). Long rows are not split.
    RowBlock {
        /// Rows per block: [`BLOCK_ROWS`], or [`TALL_ROWS`] (f32 only).
        rows: u32,
        /// Lanes that own 16-byte column segments of B.
        cols: u32,
        /// Lanes that split a block's listed columns.
        ksplit: u32,
        /// Segments per column lane per pass.
        tiles: u32,
    },
}

/// One launch of the sorted path: `ksplit` entry lanes per row for the `count` rows at
/// `start` of the sorted row list; `ksplit` 0 for the empty rows at its tail, which the fill
/// kernel writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortedBin {
    /// Lanes that split a row's entries (0: the empty rows).
    pub ksplit: u32,
    /// First position in the sorted row list.
    pub start: usize,
    /// Rows.
    pub count: usize,
}

/// Column-lane counts the sorted path comes in.
pub const SORTED_COLS: [u32; 6] = [1, 2, 4, 8, 16, 32];

/// Entries per entry lane the sorted path comes in: the policy's 8 (N <= 8) and 32.
pub const SORTED_LANE_ENTRIES: [u32; 2] = [8, 32];

impl GpuPath {
    /// The kernel entry point for value type `ty` (the sorted path: that of its bin with one
    /// entry lane; [`GpuPath::kernels`] lists all of a launch's).
    pub fn kernel_name(&self, ty: &str) -> String {
        match *self {
            GpuPath::RowVec {
                cols,
                ksplit,
                tiles,
                deep,
            } => rowvec_name(ty, cols, ksplit, tiles, deep),
            GpuPath::Stream => stream_name(ty),
            GpuPath::Packed => packed_name(ty),
            GpuPath::Diag => diag_name(ty),
            GpuPath::DiagLanes {
                lanes,
                vectors,
                steps,
            } => diagv_name(ty, lanes, vectors, steps),
            GpuPath::Near { lanes } => near_name(ty, lanes),
            GpuPath::Sliced => sliced_name(ty),
            GpuPath::AVec { ksplit } => avec_name(ty, ksplit),
            GpuPath::Window { cols, ksplit } => window_name(ty, cols, ksplit),
            GpuPath::Sorted { cols, deep, .. } => rowvec_name(ty, cols, 1, 1, deep),
            GpuPath::RowBlock {
                rows,
                cols,
                ksplit,
                tiles,
            } => rowblk_name(ty, rows, cols, ksplit, tiles),
        }
    }

    /// This path's column shape on the row kernel with one entry lane a row, which adds each
    /// row's products in entry order whatever N and the matrix are (rows over
    /// [`LONG_ROW`](crate::ops::products::stats::LONG_ROW) still go to the chunk kernels when
    /// split, their chunks added in order). The paths that split rows over lanes, stage B in
    /// windows, sum over a block's column union or serve N = 1 only keep their column lanes and
    /// give up the rest. [`SumOrder::Entry`](super::spmm::SumOrder) runs this.
    pub fn in_entry_order(self) -> GpuPath {
        let row = |cols, tiles, deep| GpuPath::RowVec {
            cols,
            ksplit: 1,
            tiles,
            deep,
        };
        match self {
            GpuPath::RowVec {
                cols, tiles, deep, ..
            } => row(cols, tiles, deep),
            GpuPath::Sorted { cols, deep, .. } => row(cols, 1, deep),
            GpuPath::Window { cols, .. } | GpuPath::RowBlock { cols, .. } => row(cols, 1, false),
            GpuPath::Stream
            | GpuPath::Packed
            | GpuPath::Diag
            | GpuPath::DiagLanes { .. }
            | GpuPath::Near { .. }
            | GpuPath::Sliced
            | GpuPath::AVec { .. } => row(1, 1, false),
        }
    }

    /// The kernel a launch over `n` columns runs: f32 SpMV on the vector-A path has its own
    /// build ([`spmv_avec_name`]), the rest [`GpuPath::kernel_name`].
    pub fn kernel_for(&self, ty: &str, n: usize) -> String {
        match *self {
            GpuPath::AVec { ksplit } if n == 1 && ty == "f32" => spmv_avec_name(ty, ksplit),
            _ => self.kernel_name(ty),
        }
    }

    /// Every kernel a launch over `n` columns runs for a matrix with these statistics, in
    /// launch order (the long rows' chunk kernels aside).
    pub fn kernels(&self, ty: &str, n: usize, stats: &RowStats, split: bool) -> Vec<String> {
        match *self {
            GpuPath::Sorted { cols, deep, .. } => self
                .sorted_bins(stats, split)
                .iter()
                .map(|b| match b.ksplit {
                    0 => fill_name(ty),
                    k => rowvec_name(ty, cols, k, 1, deep),
                })
                .collect(),
            GpuPath::Sliced => vec![sliced_name(ty), cut_name(ty)],
            _ => vec![self.kernel_for(ty, n)],
        }
    }

    /// The launches of the sorted path: bins of rows by entry lanes, widest first, then the
    /// empty rows (none for the other paths). The row list holds the rows by length, longest
    /// first, the rows over [`LONG_ROW`](crate::ops::products::stats::LONG_ROW) at its head: `split` leaves
    /// them to the chunk kernels.
    pub fn sorted_bins(&self, stats: &RowStats, split: bool) -> Vec<SortedBin> {
        let GpuPath::Sorted {
            cols, lane_entries, ..
        } = *self
        else {
            return Vec::new();
        };
        // Rows of at least t entries (t a power of two), rows over LONG_ROW aside.
        let at_least = |t: usize| -> usize {
            (1..LEN_CLASSES)
                .filter(|&j| 1usize << (j - 1) >= t)
                .map(|j| stats.len_classes[j])
                .sum()
        };
        let short = stats.nrows - stats.long_rows;
        let mut start = if split { stats.long_rows } else { 0 };
        let mut bins = Vec::new();
        let kmax = (32 / cols.max(1)).max(1);
        let mut k = kmax;
        let mut covered = 0usize; // short rows in the bins so far
        while k >= 1 {
            let upto = if k == 1 {
                short - stats.len_classes[0]
            } else {
                at_least(k as usize * lane_entries as usize)
            };
            let mut count = upto - covered;
            covered = upto;
            if !split && k == kmax {
                count += stats.long_rows;
            }
            if count > 0 {
                bins.push(SortedBin {
                    ksplit: k,
                    start,
                    count,
                });
                start += count;
            }
            k /= 2;
        }
        if stats.len_classes[0] > 0 {
            bins.push(SortedBin {
                ksplit: 0,
                start,
                count: stats.len_classes[0],
            });
        }
        bins
    }

    /// The formats this path reads beside the CSR arrays and the long rows' chunks.
    pub fn formats(&self) -> crate::ops::products::formats::Formats {
        use crate::ops::products::formats::Formats;
        match *self {
            GpuPath::Stream => Formats {
                stream: true,
                ..Formats::NONE
            },
            GpuPath::Packed => Formats {
                stream: true,
                packed: true,
                ..Formats::NONE
            },
            GpuPath::Diag | GpuPath::DiagLanes { .. } => Formats {
                diag: true,
                ..Formats::NONE
            },
            GpuPath::Near { .. } => Formats {
                near: true,
                ..Formats::NONE
            },
            GpuPath::Sliced => Formats {
                slices: true,
                ..Formats::NONE
            },
            GpuPath::Sorted { .. } => Formats {
                sorted: true,
                ..Formats::NONE
            },
            GpuPath::RowBlock { .. } => Formats {
                row_blocks: true,
                ..Formats::NONE
            },
            GpuPath::RowVec { .. } | GpuPath::AVec { .. } | GpuPath::Window { .. } => Formats::NONE,
        }
    }

    /// Whether this path computes N columns.
    pub fn supports(&self, n: usize) -> bool {
        match *self {
            GpuPath::RowVec { .. }
            | GpuPath::AVec { .. }
            | GpuPath::Window { .. }
            | GpuPath::Sorted { .. }
            | GpuPath::RowBlock { .. } => true,
            GpuPath::Stream
            | GpuPath::Packed
            | GpuPath::Diag
            | GpuPath::DiagLanes { .. }
            | GpuPath::Near { .. }
            | GpuPath::Sliced => n == 1,
        }
    }

    /// Whether this path computes N columns of a matrix with these statistics and values of
    /// `elem_bytes` bytes on a GPU of this `tuning` ([`GpuPath::why_not`] says why not).
    pub fn applies(
        &self,
        n: usize,
        stats: &RowStats,
        elem_bytes: usize,
        tuning: &ProductsTuning,
    ) -> bool {
        self.why_not(n, stats, elem_bytes, tuning).is_none()
    }

    /// Why this path cannot compute N columns of a matrix with these statistics and values of
    /// `elem_bytes` bytes on a GPU of this `tuning`, or None when it can: the planned blocks,
    /// the diagonal and the near paths compute N = 1 only, the packed blocks need a packable
    /// matrix, the diagonal path a pattern of diagonals ([`RowStats::diagonals`]), the near path
    /// every column within [`NEAR_REACH`] of its row ([`RowStats::near`]), the column slices
    /// the layout the upload builds for that GPU ([`RowStats::sliceable`]), the row blocks the
    /// height the upload builds ([`RowStats::block_rows`]), the deep row kernels f32 values and
    /// one segment a lane.
    pub fn why_not(
        &self,
        n: usize,
        stats: &RowStats,
        elem_bytes: usize,
        tuning: &ProductsTuning,
    ) -> Option<String> {
        let ty = if elem_bytes == 4 { "f32" } else { "f64" };
        if !self.supports(n) {
            return Some(format!("cannot compute N = {n} columns"));
        }
        match *self {
            GpuPath::Packed if !stats.packable() => Some(format!(
                "needs every SpMV work block within {PACKED_SPAN} columns; one spans {}",
                stats.stream_span
            )),
            GpuPath::Diag | GpuPath::DiagLanes { .. } if stats.diagonals == 0 => Some(format!(
                "needs rows that repeat one pattern of at most {DIAG_MAX} diagonals in {:.0} % of the entries; this matrix has none",
                100.0 * DIAG_SHARE
            )),
            GpuPath::Near { .. } if !stats.near() => Some(format!(
                "needs every entry's column within {NEAR_REACH} of its row; one lies {} away",
                stats.reach
            )),
            GpuPath::Sliced if elem_bytes != 4 => Some(format!(
                "runs f32 values only: {ty}'s slices of x are twice the bytes, and on the H200 it ran 0.64-0.69x cuSPARSE (blocks without clusters)"
            )),
            GpuPath::Sliced if !stats.sliceable(tuning) => Some(format!(
                "needs scattered columns (a block of {WINDOW_ROWS} rows spanning over {SCATTER_WINDOW}; here {}) and {} groups' copies of x ({} columns each) at most {SLICE_X_RATIO} times the {} entries",
                stats.window_max,
                stats.slice_groups(tuning),
                stats.ncols,
                stats.nnz
            )),
            GpuPath::RowBlock { rows, .. }
                if stats.block_rows(elem_bytes) != Some(rows as usize) =>
            {
                let built = match stats.block_rows(elem_bytes) {
                    Some(r) => format!("blocks of {r} rows"),
                    None => "no row blocks".to_string(),
                };
                // The tall count exists only where blocks of four are built (RowStats::tall_union).
                let tall = if stats.blockable() {
                    format!(" and {} over {TALL_ROWS}", stats.tall_union)
                } else {
                    String::new()
                };
                Some(format!(
                    "runs blocks of {rows} rows, but for {ty} values of this matrix the upload builds {built}: {} distinct columns over blocks of {BLOCK_ROWS} rows{tall} for {} entries (blocks of {BLOCK_ROWS} up to {BLOCK_UNION_MAX} distinct columns per entry, of {TALL_ROWS} for f32 up to {TALL_UNION_MAX})",
                    stats.block_union, stats.nnz
                ))
            }
            GpuPath::RowVec {
                deep: true, tiles, ..
            } if !deep_exists(ty, tiles) => Some(deep_refusal(ty)),
            GpuPath::Sorted { deep: true, .. } if !deep_exists(ty, 1) => Some(deep_refusal(ty)),
            _ => None,
        }
    }

    /// Every path there is, for tests that force each one.
    pub fn all() -> Vec<GpuPath> {
        let mut v: Vec<GpuPath> = rowvec_shapes()
            .into_iter()
            .flat_map(|(cols, ksplit, tiles)| {
                let deeps: &[bool] = if deep_exists("f32", tiles) {
                    &[false, true]
                } else {
                    &[false]
                };
                deeps.iter().map(move |&deep| GpuPath::RowVec {
                    cols,
                    ksplit,
                    tiles,
                    deep,
                })
            })
            .collect();
        v.push(GpuPath::Stream);
        v.push(GpuPath::Packed);
        v.push(GpuPath::Diag);
        v.extend(
            DIAG_SHAPES
                .iter()
                .map(|&(lanes, vectors, steps)| GpuPath::DiagLanes {
                    lanes,
                    vectors,
                    steps,
                }),
        );
        v.extend(NEAR_LANES.iter().map(|&lanes| GpuPath::Near { lanes }));
        v.push(GpuPath::Sliced);
        v.extend(AVEC_SPLITS.iter().map(|&ksplit| GpuPath::AVec { ksplit }));
        v.extend(
            window_shapes()
                .into_iter()
                .map(|(cols, ksplit)| GpuPath::Window { cols, ksplit }),
        );
        for cols in SORTED_COLS {
            for deep in [false, true] {
                v.extend(
                    SORTED_LANE_ENTRIES
                        .iter()
                        .map(|&lane_entries| GpuPath::Sorted {
                            cols,
                            lane_entries,
                            deep,
                        }),
                );
            }
        }
        v.extend(
            [BLOCK_ROWS as u32, TALL_ROWS as u32]
                .into_iter()
                .flat_map(|rows| ROWBLK_SHAPES.iter().map(move |&s| (rows, s)))
                .map(|(rows, (cols, ksplit, tiles))| GpuPath::RowBlock {
                    rows,
                    cols,
                    ksplit,
                    tiles,
                }),
        );
        v
    }

    /// The launch shape for a matrix with these statistics and values of `elem_bytes` bytes on
    /// a GPU of this `tuning` (the sorted path: the blocks of all its launches, long rows split;
    /// the planned blocks: shared memory for a block's products, as the launch gives them; the
    /// column slices: the groups that GPU's upload deals rows to).
    pub fn shape(
        &self,
        stats: &RowStats,
        elem_bytes: usize,
        tuning: &ProductsTuning,
    ) -> Result<LaunchShape> {
        if *self == GpuPath::Sliced {
            // The layout's blocks with bulk copies (sm_90: every stage in shared memory, a
            // cluster a group).
            let blocks = u32::try_from(stats.slice_blocks(tuning)).map_err(|_| {
                Error::unsupported(format!(
                    "{} row pieces need more than 2^32 blocks",
                    stats.pieces
                ))
            })?;
            return Ok(LaunchShape::linear(blocks, 32 * (SLICE_WARPS as u32 + 1))
                .with_cluster(SLICE_MEMBERS as u32)
                .with_smem(smem_bytes(true) as u32));
        }
        let blocks = match *self {
            GpuPath::RowVec { cols, ksplit, .. } => {
                stats.nrows.div_ceil((BLOCK / (cols * ksplit)) as usize)
            }
            GpuPath::Stream | GpuPath::Packed => {
                return stream_shape(stats.stream_blocks, stats.stream_items, elem_bytes)
            }
            GpuPath::Diag => stats.nrows.div_ceil(BLOCK as usize),
            GpuPath::DiagLanes { lanes, steps, .. } => {
                stats.nrows.div_ceil(diag_lanes_rows(lanes, steps))
            }
            GpuPath::AVec { ksplit } => stats.nrows.div_ceil((BLOCK / ksplit) as usize),
            GpuPath::Near { lanes } => stats.nrows.div_ceil((BLOCK / lanes) as usize),
            GpuPath::Sliced => 0, // shaped above
            GpuPath::Window { .. } => stats.nrows.div_ceil(WINDOW_ROWS),
            GpuPath::Sorted { cols, .. } => self
                .sorted_bins(stats, true)
                .iter()
                .map(|b| match b.ksplit {
                    0 => fill_blocks(b.count),
                    k => b.count.div_ceil((BLOCK / (cols * k)) as usize),
                })
                .sum(),
            GpuPath::RowBlock {
                rows, cols, ksplit, ..
            } => stats
                .nrows
                .div_ceil(rows as usize)
                .div_ceil((BLOCK / (cols * ksplit)) as usize),
        };
        let blocks = u32::try_from(blocks).map_err(|_| {
            Error::unsupported(format!("{} rows need more than 2^32 blocks", stats.nrows))
        })?;
        let shape = LaunchShape::linear(blocks, BLOCK);
        Ok(match *self {
            GpuPath::Window { cols, .. } => shape.with_smem(self.window_rows(stats) * cols * 16),
            _ => shape,
        })
    }

    /// Columns of B one pass of this path covers for values of `elem_bytes` bytes (1 for the
    /// SpMV-only planned blocks).
    pub fn pass_width(&self, elem_bytes: usize) -> usize {
        let vec = 16 / elem_bytes;
        match *self {
            GpuPath::Stream
            | GpuPath::Packed
            | GpuPath::Diag
            | GpuPath::DiagLanes { .. }
            | GpuPath::Near { .. }
            | GpuPath::Sliced => 1,
            GpuPath::RowVec { cols, tiles, .. } | GpuPath::RowBlock { cols, tiles, .. } => {
                cols as usize * vec * tiles as usize
            }
            GpuPath::Window { cols, .. } | GpuPath::Sorted { cols, .. } => cols as usize * vec,
            GpuPath::AVec { .. } => vec,
        }
    }

    /// Rows of B each block of a window path stages: the widest window, up to what
    /// [`WINDOW_SMEM`] holds (0 for the other paths).
    pub fn window_rows(&self, stats: &RowStats) -> u32 {
        match *self {
            GpuPath::Window { cols, .. } => stats.window_max.min(window_cap(cols)) as u32,
            _ => 0,
        }
    }
}

/// The planned blocks' launch: a block per work block, with shared memory for a block's
/// `items` products of `elem_bytes` bytes each. The plan gives it the statistics' partition,
/// the launch the partition the uploaded matrix holds.
pub fn stream_shape(nblocks: usize, items: usize, elem_bytes: usize) -> Result<LaunchShape> {
    let blocks = u32::try_from(nblocks).map_err(|_| {
        Error::unsupported(format!("{nblocks} SpMV work blocks exceed 2^32 blocks"))
    })?;
    Ok(LaunchShape::linear(blocks, BLOCK).with_smem((items * elem_bytes) as u32))
}

/// Most blocks of a fill launch (`spmm_fill`, whose grid strides over its rows): a few waves of
/// 256-thread blocks on the largest GPUs.
pub const FILL_BLOCKS: usize = 4096;

/// Blocks of a fill launch over `rows` rows: one row per thread at most, up to [`FILL_BLOCKS`].
pub fn fill_blocks(rows: usize) -> usize {
    rows.div_ceil(BLOCK as usize).min(FILL_BLOCKS)
}
