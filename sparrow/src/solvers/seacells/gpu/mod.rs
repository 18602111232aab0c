//! SEACells on the GPU: the exact kNN (distance tiles in f64 with the CPU's arithmetic, then
//! sparrow's segmented top-k, so the neighbour lists are the CPU's bit for bit) and the B
//! update's gradient columns, G = M (M V) with V = B A A^T - A^T built a chunk of columns at a
//! time and reduced on the device to each archetype's argmin cell and duality-gap share.
//! Nothing of size n x n or n x N is held: the distance tile is bounded by [`TILE_KEYS`] and
//! the gradient chunk by [`B_CHUNK`] columns.
//!
//! The parts: [`knn`](knn()) builds the neighbour graph; [`Solver`] holds M and the scratch;
//! `a_update` and `b_update` are its two Frank-Wolfe updates, the B update either by SpMM
//! chunks or by the fused kernel of `b_fused` over the host layout of `b_layout`.

use cudarc::driver::CudaSlice;

use crate::device::{Args, Gpu, LaunchShape};
use crate::kernels::SEACELLS;
use crate::Result;

mod a_update;
mod b_fused;
mod b_layout;
mod b_update;
mod knn;
mod rowprod;
mod solver;

pub use a_update::A_MAX_METACELLS;
pub use b_fused::GpuSteps;
pub use b_layout::{max_metacells, tier, two_hop_bound, KatSource, SegRows};
pub use knn::{knn, knn_tiled, KNN_MAX_DIMS, TILE_KEYS};
pub use rowprod::ROW_MAX_COLS;
pub use solver::{b_chunk, kernel_products, BPath, Solver, B_CHUNK};

pub(super) const BLOCK: u32 = 256;


/// off[0..n] = the exclusive prefix sums of cnt[0..n], off[n] and total[0] their sum, by one
/// block of `seacells_scan`.
pub(super) fn scan_counts(
    gpu: &Gpu,
    cnt: &CudaSlice<i32>,
    n: usize,
    off: &CudaSlice<i64>,
    total: &CudaSlice<i64>,
) -> Result<()> {
    unsafe {
        gpu.launch(
            &gpu.kernel(&SEACELLS, "seacells_scan")?,
            LaunchShape::linear(1, 1024),
            Args::new()
                .ptr(gpu.ptr(cnt))
                .i64(n as i64)
                .ptr(gpu.ptr(off))
                .ptr(gpu.ptr(total)),
        )
    }
}

pub(super) fn grid_for(items: usize) -> LaunchShape {
    LaunchShape::linear(
        items.div_ceil(BLOCK as usize).clamp(1, 132 * 16) as u32,
        BLOCK,
    )
}
