//! Sparse-dense products: `y = alpha A x + beta y` ([`Spmv`]) and `C = alpha A B + beta C`
//! ([`Spmm`]) for CSR A, in f32 or f64.
//!
//! A request validates its inputs; its plan reads the matrix's row statistics ([`RowStats`])
//! and the device, and picks a backend and, on a GPU, one of the paths [`GpuPath`] lists, with
//! the rule that chose it. The GPU paths read CSR through acceleration formats ([`formats`]:
//! work blocks, packed columns, diagonals, near offsets, column slices, row blocks) built from
//! the matrix on upload. The CPU backend is rayon over rows of about equal work; the oracle is a
//! plain loop in f64 for tests and `validate`.

pub mod analysis;
pub mod cpu;
pub(crate) mod cuda;
pub mod formats;
pub mod oracle;
pub mod path;
pub mod plan;
pub mod prepared;
pub(crate) mod row_work;
pub mod spmm;
pub mod spmv;
pub mod stats;
pub mod tuning;

pub use path::GpuPath;
pub use prepared::PreparedCsr;
pub use spmm::Spmm;
pub use spmv::Spmv;
pub use stats::RowStats;
