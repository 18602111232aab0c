//! The acceleration formats the GPU paths read beside CSR, each built on the host from the row
//! pointers and columns and copied over with the matrix ([`analysis`](super::analysis) gathers the host half).

pub mod diagonals;
pub mod near;
pub mod row_blocks;
pub mod slices;
pub mod work;
