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

/// The thresholds of the products policy for one GPU architecture, and the layout sizes that
/// follow its count of SMs, a value in CUB's manner: the rules, the uploads and the memory
/// estimates read them from here, and a new architecture is a new value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProductsTuning {
    /// [`NEAR_MEAN_F32`](super::plan::NEAR_MEAN_F32).
    pub near_mean_f32: f64,
    /// [`STREAM_MEAN_F32`](super::plan::STREAM_MEAN_F32).
    pub stream_mean_f32: f64,
    /// [`F64_AVEC_LOCAL_MEAN`](super::plan::F64_AVEC_LOCAL_MEAN).
    pub f64_avec_local_mean: f64,
    /// Least mean row length for scattered f64 rows to take the vector-A lanes.
    pub f64_avec_scattered_mean: f64,
    /// [`SHORT_MEAN`](super::plan::SHORT_MEAN).
    pub short_mean: f64,
    /// [`ROWBLK_SHARED`](super::plan::ROWBLK_SHARED).
    pub rowblk_shared: f64,
    /// [`DIAG_THREAD_MAX`](super::plan::DIAG_THREAD_MAX).
    pub diag_thread_max: usize,
    /// [`DIAG_THREAD_MAX_F64`](super::plan::DIAG_THREAD_MAX_F64).
    pub diag_thread_max_f64: usize,
    /// [`DIAG_FEW_ROWS`](super::plan::DIAG_FEW_ROWS).
    pub diag_few_rows: usize,
    /// [`DEEP_MEAN`](super::plan::DEEP_MEAN).
    pub deep_mean: f64,
    /// [`SORT_SPREAD`](super::plan::SORT_SPREAD).
    pub sort_spread: f64,
    /// [`SORT_ROWS`](super::plan::SORT_ROWS).
    pub sort_rows: usize,
    /// [`WINDOW_REUSE`](super::plan::WINDOW_REUSE).
    pub window_reuse: f64,
    /// [`WINDOW_SPAN`](super::plan::WINDOW_SPAN).
    pub window_span: usize,
    /// Groups the column-slice layout deals the row pieces to (more where the pieces need
    /// them, [`RowStats::slice_groups`](super::RowStats::slice_groups)). A group is a cluster
    /// of [`SLICE_MEMBERS`](crate::kernels::sizes::SLICE_MEMBERS) blocks and an SM holds one
    /// block of that kernel's shared memory at a time, so the count is the SMs over the
    /// members: more groups would run in a second wave, fewer leave SMs idle. It also sets the
    /// copies of x the policy weighs against the entries
    /// ([`SLICE_X_RATIO`](super::formats::slices::SLICE_X_RATIO)).
    pub slice_groups: usize,
}
