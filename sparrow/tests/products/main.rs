//! SpMM and SpMV: the CPU backend against the naive oracle over random shapes, leading
//! dimensions, scalars and adversarial contents (empty rows, empty matrices, NaN in C with
//! beta = 0); request validation; and the plan's choices.
//!
//! One binary, a module per topic: `cpu` (the CPU backend against the oracle, request
//! validation), `stats` (row statistics, generators, device memory), `policy` (the GPU plan by
//! N, row length and column windows), `sorted` (uneven and scattered rows), `row_blocks`
//! (rows that share columns) and `spmv` (SpMV's structured and scattered paths).

#[cfg(not(feature = "internals"))]
compile_error!("the library's integration tests use its layers: run `cargo test --workspace`, or `cargo test -p sparrow --features testing`");

use sparrow::matrix::Csr;
use sparrow::ops::products::RowStats;
use sparrow::Scalar;

#[macro_use]
mod device {
    include!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/shared/device.rs"
    ));
}

mod cpu;
mod policy;
mod row_blocks;
mod sorted;
mod spmv;
mod stats;

/// The row statistics of a matrix, in method position for the chains below.
trait Stats {
    fn row_stats(&self) -> RowStats;
}

impl<T: Scalar> Stats for Csr<T> {
    fn row_stats(&self) -> RowStats {
        RowStats::of(self)
    }
}
