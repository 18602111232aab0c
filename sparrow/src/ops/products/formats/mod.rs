//! The acceleration formats the GPU paths read beside CSR, each built on the host from the row
//! pointers and columns and copied over with the matrix ([`analysis`](super::analysis) gathers
//! the host half). A prepared matrix builds only the formats its paths read ([`Formats`]), so a
//! caller that runs one path pays for one format.

pub mod diagonals;
pub mod near;
pub mod row_blocks;
pub mod slices;
pub mod work;

/// Which acceleration formats an upload builds. Each is built only where the statistics say the
/// matrix has it (a pattern of diagonals, rows near the diagonal, ...); a format left out here
/// is not built even then, and a path that reads it is refused with the reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Formats {
    /// The SpMV work blocks with their scratch (the planned-block paths).
    pub stream: bool,
    /// The columns packed over the work blocks (needs `stream`).
    pub packed: bool,
    /// The pattern of diagonals and the rows that follow it.
    pub diag: bool,
    /// Each column as a 16-bit offset from its row.
    pub near: bool,
    /// The column-slice layout.
    pub slices: bool,
    /// The rows by length, for the sorted path.
    pub sorted: bool,
    /// The row blocks.
    pub row_blocks: bool,
}

impl Formats {
    /// Every format the matrix has: for callers that will run several paths (forced paths,
    /// benchmark sweeps).
    pub const ALL: Formats = Formats {
        stream: true,
        packed: true,
        diag: true,
        near: true,
        slices: true,
        sorted: true,
        row_blocks: true,
    };
    /// None beyond the CSR arrays and the long rows' chunks: what the row kernels read.
    pub const NONE: Formats = Formats {
        stream: false,
        packed: false,
        diag: false,
        near: false,
        slices: false,
        sorted: false,
        row_blocks: false,
    };
}
