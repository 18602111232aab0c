//! Sizes the kernels and the host share: the SpMM kernels' planned work blocks and column
//! slices, and top-k's tiles, samples and staged filter. They are defined once, here, and
//! passed to NVRTC as `-D` definitions ([`spmm_defines`], [`topk_defines`]; the kernel sources
//! define none of them), so the host and the kernels cannot disagree. The formats and plans
//! re-export them where they are used.

/// Threads per block of every SpMM kernel (`STREAM_BLOCK` in the kernels).
pub const SPMM_BLOCK: u32 = 256;
/// Entries of one block of short rows on even rows: the most three aligned 4-entry vectors per
/// thread of 256 cover from any alignment (`STREAM_ITEMS` in the kernels, which size a block's
/// products for it). Even rows gained from the longer blocks; skewed rows, which would spread
/// fewer blocks over their random gathers or runs of empty rows, keep [`STREAM_ITEMS`](crate::ops::products::formats::work::STREAM_ITEMS). See
/// docs/tuning/products.md#planned-work-blocks.
pub const STREAM_ITEMS_EVEN: usize = 3068;
/// Rows of one block at most, so runs of empty rows still spread over the GPU.
pub const STREAM_MAX_ROWS: usize = 2048;
/// Blocks of a group (a cluster), sharing its pieces and taking its stages in turn.
pub const SLICE_MEMBERS: usize = 2;
/// Warps of a block that sum entries; one more copies the stages in.
pub const SLICE_WARPS: usize = 31;
/// Records a stage holds.
pub const SLICE_STAGE: usize = 2560;
/// Words of a stage's descriptor: each warp's first record with its step width above
/// [`SS_SHIFT`], the end of the last warp's records, the stage's padded end, its slice, and
/// two zero words so a descriptor is whole 16-byte vectors for the bulk copies
/// (`SLICE_DESC` in spmm.cu).
pub const DESC_WORDS: usize = 36;
/// Bit of a descriptor word where a warp's step width starts.
pub const SS_SHIFT: u32 = 26;
/// Row of a padding record (no piece).
pub const PAD_ROW: u32 = 0xffff;
/// Columns of x a stage holds: 32 KB of f32, the values the kernel runs (`SLICE_COLS` in
/// spmm.cu). Layouts of other value types (the unit tests') use the same slices.
pub const SLICE_COLS: usize = 8192;
/// Stages in flight in shared memory with bulk copies (`SLICE_XB` in spmm.cu).
pub const SLICE_STAGES: usize = 3;

/// The `-D` definitions of these sizes, under the names the kernels use.
pub fn spmm_defines() -> Vec<String> {
    vec![
        format!("-DSTREAM_BLOCK={SPMM_BLOCK}"),
        format!("-DSTREAM_ITEMS={STREAM_ITEMS_EVEN}"),
        format!("-DSTREAM_MAX_ROWS={STREAM_MAX_ROWS}"),
        format!("-DSLICE_WARPS={SLICE_WARPS}"),
        format!("-DSLICE_MEMBERS={SLICE_MEMBERS}"),
        format!("-DSLICE_STAGE={SLICE_STAGE}"),
        format!("-DSLICE_DESC={DESC_WORDS}"),
        format!("-DSLICE_SS_SHIFT={SS_SHIFT}"),
        format!("-DSLICE_POS={}u", (1u32 << SS_SHIFT) - 1),
        format!("-DSLICE_PAD={PAD_ROW}u"),
        format!("-DSLICE_COLS={SLICE_COLS}"),
        format!("-DSLICE_XB={SLICE_STAGES}"),
    ]
}

/// Keys per tile (one block of 256 threads) for keys of 16 bits or fewer (`TILE_NARROW`):
/// a tile's fixed costs are then paid per 16 KB, as for 32-bit keys.
pub const TOPK_TILE_NARROW: usize = 8192;
/// Keys per tile for keys of 32 and 64 bits (`TILE_WIDE`).
pub const TOPK_TILE_WIDE: usize = 4096;
/// Keys sampled per segment for the filter's threshold (`SAMPLE`).
pub const TOPK_SAMPLE: usize = 4096;
/// Keys per lane of the warp path (`WARP_KPL`): a warp holds 32 times as many.
pub const TOPK_WARP_KPL: usize = 32;
/// Threads of the staged filter (`FT_THREADS`): eight filtering warps and one that issues the
/// bulk copies.
pub const TOPK_FT_THREADS: u32 = 288;
/// Most stages of the staged filter (`FT_MAX_STAGES`).
pub const TOPK_FT_MAX_STAGES: usize = 8;

/// Threads per block of the cluster path (`CL_THREADS`): a slice's keys spread over 32 warps, so
/// each pass's latency is hidden on an SM that holds only this block.
pub const TOPK_CL_THREADS: u32 = 1024;

/// The `-D` definitions of top-k's sizes, under the names the kernels use.
pub fn topk_defines() -> Vec<String> {
    vec![
        format!("-DTILE_NARROW={TOPK_TILE_NARROW}"),
        format!("-DTILE_WIDE={TOPK_TILE_WIDE}"),
        format!("-DSAMPLE={TOPK_SAMPLE}"),
        format!("-DWARP_KPL={TOPK_WARP_KPL}"),
        format!("-DFT_THREADS={TOPK_FT_THREADS}"),
        format!("-DFT_MAX_STAGES={TOPK_FT_MAX_STAGES}"),
        format!("-DCL_THREADS={TOPK_CL_THREADS}"),
    ]
}
