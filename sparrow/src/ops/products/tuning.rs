//! Sizes the statistics, the formats and the kernels agree on, kept in one place below all of
//! them so none has to import another for a number.

/// Rows longer than [`LONG_ROW`] entries are split into chunks of [`CHUNK`] entries for the GPU
/// products: one group of lanes on a 100,000-entry row would otherwise finish long after the
/// rest of the grid. 1024 keeps a row's loop to a few dozen iterations of a 16- or 32-lane
/// group, well under the time the whole grid takes on the matrices that have such rows.
pub const LONG_ROW: usize = 1024;
/// Entries per chunk of a long row.
pub const CHUNK: usize = 512;
/// Widest [`RowStats::reach`](super::RowStats::reach) whose columns fit 16-bit offsets from their row (`i16`).
pub const NEAR_REACH: usize = i16::MAX as usize;
