//! Every path top-k can take.
//!
//! - CPU: radix select per segment; rayon over segments, and within segments of 1M keys or more.
//! - CUDA warp, every segment at most [`WARP_MAX`] keys: one warp per segment, radixes in
//!   registers.
//! - CUDA on-chip, every segment at most [`block_max`] keys: one block per segment does every
//!   digit pass and the ordered compaction on chip, reading the keys once; the radixes sit in
//!   registers up to [`RBLOCK_MAX`] keys ([`rblock_items`] per thread), in shared memory above.
//! - CUDA cluster (sm_90), few segments too long for one block, up to [`cluster_max_len`]
//!   keys: a thread-block cluster per segment, each block holding a slice in registers, the
//!   digit passes' histograms added over the cluster through distributed shared memory, each
//!   block writing its winners at its offset. One kernel, so a
//!   call's latency is one launch; [`TopkTuning::cluster_sm_percent`] bounds the segments.
//! - CUDA filter, longer segments whose winners are few: a threshold per segment from a
//!   sample of [`SAMPLE`] keys, one streaming pass that keeps the keys above it (in position
//!   order, [`FilterShape::ct`] slots per tile) and counts those equal to it, and an on-chip
//!   selection among those candidates. On sm_90 the pass stages the keys into shared memory
//!   by bulk copies ([`staged_filter`]); elsewhere, or with `TopK::staging` off, each thread
//!   holds the next tile's keys in registers. Tiles whose candidates overflow their slots (sorted
//!   keys) are filtered again from memory; when the candidates are fewer than k, the
//!   threshold's ties complete them (few distinct values), read from the tiles holding the
//!   tie-break's window only. A segment whose candidates still cannot hold the answer (a
//!   misleading sample) is selected from memory by its block. Reads the keys once on friendly
//!   data and little more on ties.
//! - CUDA tiled, otherwise: radix select over tiles of at most [`tile`] keys (a tile never
//!   spans two segments), one histogram pass per 8-bit digit with early stop, an ordered
//!   compaction.
//! - Sorted output: a bitonic sort per row in shared memory when the row fits ([`SORT_MAX`]);
//!   wider sorted rows are sorted on the host after the GPU selection.

use super::{Key, Layout, TopK};
use crate::device::LaunchShape;
use crate::kernels::sizes::{
    TOPK_CL_THREADS, TOPK_FT_MAX_STAGES, TOPK_FT_THREADS, TOPK_SAMPLE, TOPK_TILE_NARROW,
    TOPK_TILE_WIDE, TOPK_WARP_KPL,
};
use crate::ops::{Backend, Plan};
use crate::{Device, Result};

/// Keys per tile (one block of 256 threads) for keys of `key_bytes` (`TILE` in the kernels).
/// Keys of 16 bits or fewer take tiles of 8,192, so a tile's fixed costs (the stage hand-off,
/// the block barrier, the placement's warp scans) are paid per 16 KB as for 32-bit keys: at
/// 4,096 they held the filter of 16-bit keys to its issue rate, not to memory.
pub fn tile(key_bytes: usize) -> usize {
    if key_bytes <= 2 {
        TOPK_TILE_NARROW
    } else {
        TOPK_TILE_WIDE
    }
}
/// Widest row the GPU sorts in shared memory: 4096 slots of 12 bytes fill the 48 KiB every
/// block may use without opting in.
pub const SORT_MAX: usize = 4096;

/// Bytes of one radix in shared memory: 4 for keys of up to 32 bits, else 8 (`R` in topk.cu).
pub fn radix_bytes<K: Key>() -> usize {
    if K::BITS <= 32 {
        4
    } else {
        8
    }
}

/// The thresholds of the top-k policy for one GPU architecture, a value in CUB's manner; the
/// measurements behind them are in docs/tuning/topk.md. Sizes the kernels are built with
/// ([`WARP_MAX`], [`SAMPLE`], [`tile`]) are not here: they are the kernels' own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopkTuning {
    /// The architecture these values were measured on.
    pub arch: &'static str,
    /// Longest segment the on-chip path takes, whatever shared memory would hold: a block's
    /// passes stay short.
    pub on_chip_keys: usize,
    /// Filter blocks resident per SM, striding over the tiles.
    pub filter_blocks_per_sm: usize,
    /// Chunk lengths the split path tries, longest first.
    pub split_chunks: &'static [usize],
    /// A split chunk holds at least this many times the row width, so the second stage reads
    /// that fraction of the keys or less.
    pub split_ratio: usize,
    /// Keys a block of the cluster path aims to hold: a segment takes that many keys' worth of
    /// blocks, at least two and at most the device's largest cluster.
    pub cluster_slice: usize,
    /// Most keys a block of the cluster path holds in registers (16 a thread).
    pub cluster_slice_max: usize,
    /// The cluster path runs while its blocks (segments times blocks per cluster) are at most
    /// this percentage of the SMs: one block of 1,024 threads fits an SM, so past one wave
    /// the cluster's blocks queue while the filter streams more segments at bandwidth.
    pub cluster_sm_percent: usize,
}

/// sm_90 (H100, H200).
pub const SM90: TopkTuning = TopkTuning {
    arch: "sm_90",
    on_chip_keys: 16_384,
    filter_blocks_per_sm: 8,
    split_chunks: &SPLIT_CHUNKS,
    split_ratio: 8,
    cluster_slice: 8192,
    cluster_slice_max: 16_384,
    // docs/tuning/topk.md#cluster-path-sm_90: on the H100 the cluster beat the filter with
    // 16 and 64 blocks and lost fourfold with 1,024.
    cluster_sm_percent: 50,
};

/// sm_80 and other architectures: sm_90's values, as no other GPU has been measured.
pub const SM80: TopkTuning = TopkTuning {
    arch: "sm_80",
    ..SM90
};

impl TopkTuning {
    /// The tuning for a GPU of compute capability `cc`.
    pub fn for_arch(cc: (i32, i32)) -> &'static TopkTuning {
        if cc.0 >= 9 {
            &SM90
        } else {
            &SM80
        }
    }
}

/// A rule of the top-k policy: its name, which `--explain` opens its reason with, and the
/// path it picks when it applies to the facts.
pub struct Rule {
    /// The rule's name.
    pub name: &'static str,
    /// Whether it applies, given the longest segment, the on-chip limit and whether the
    /// filter's expected candidates fit on chip.
    pub applies: fn(&BaseFacts) -> bool,
    /// The path it picks.
    pub path: GpuPath,
}

/// What the base rules read.
pub struct BaseFacts {
    /// The longest segment.
    pub max_len: usize,
    /// The on-chip path's limit on this device ([`block_max`]).
    pub block_max: usize,
    /// Whether the filter's expected candidates fit on chip with room for their spread.
    pub filter_fits: bool,
    /// Whether the cluster path takes the layout: clusters exist, the longest segment fits one
    /// ([`cluster_ctas`]) and the segments are few enough
    /// ([`TopkTuning::cluster_sm_percent`]).
    pub cluster_fits: bool,
}

/// The base policy, first match wins; the split path refines `tiled` ([`gpu_path`]).
pub const TOPK_RULES: &[Rule] = &[
    Rule {
        name: "warp",
        applies: |f| f.max_len <= WARP_MAX,
        path: GpuPath::Warp,
    },
    // Past the register kernel's keys the on-chip path holds the segment in shared memory,
    // which ran 2.7 times slower than a cluster of two blocks (docs/tuning/topk.md).
    Rule {
        name: "cluster-before-shared",
        applies: |f| {
            f.cluster_fits && rblock_items(f.max_len).is_none() && f.max_len <= f.block_max
        },
        path: GpuPath::Cluster,
    },
    Rule {
        name: "on-chip",
        applies: |f| f.max_len <= f.block_max,
        path: GpuPath::OnChip,
    },
    Rule {
        name: "cluster",
        applies: |f| f.cluster_fits,
        path: GpuPath::Cluster,
    },
    Rule {
        name: "filter",
        applies: |f| f.filter_fits,
        path: GpuPath::Filter,
    },
    Rule {
        name: "tiled",
        applies: |_| true,
        path: GpuPath::Tiled,
    },
];

/// Threads per block of the cluster path (`CL_THREADS` in the kernels).
pub const CL_THREADS: u32 = TOPK_CL_THREADS;

/// Blocks per cluster of the cluster path for segments of at most `max_len` keys: enough for
/// [`TopkTuning::cluster_slice`] keys each, at least two and at most the device's largest
/// cluster; None without clusters (before sm_90) or where a slice would pass
/// [`TopkTuning::cluster_slice_max`].
pub fn cluster_ctas(max_len: usize, limits: &crate::device::Limits) -> Option<usize> {
    let t = TopkTuning::for_arch(limits.compute_capability);
    if limits.compute_capability.0 < 9 || limits.max_cluster < 2 {
        return None;
    }
    let c = max_len
        .div_ceil(t.cluster_slice)
        .clamp(2, limits.max_cluster as usize);
    (max_len.div_ceil(c) <= t.cluster_slice_max).then_some(c)
}

/// Whether the cluster rule takes `segments` segments of at most `max_len` keys under
/// `tuning`: the cluster holds the longest ([`cluster_ctas`]) and the blocks are at most
/// [`TopkTuning::cluster_sm_percent`] percent of the SMs (0 turns the rule off).
pub fn cluster_fits(
    segments: usize,
    max_len: usize,
    limits: &crate::device::Limits,
    tuning: &TopkTuning,
) -> bool {
    cluster_ctas(max_len, limits).is_some_and(|c| {
        segments.saturating_mul(c * 100) <= limits.sms as usize * tuning.cluster_sm_percent
    })
}

/// Longest segment the cluster path takes on this device (0 without clusters).
pub fn cluster_max_len(limits: &crate::device::Limits) -> usize {
    if cluster_ctas(2, limits).is_none() {
        return 0;
    }
    limits.max_cluster as usize * TopkTuning::for_arch(limits.compute_capability).cluster_slice_max
}

/// Keys per thread of the cluster kernel (`cluster_v{N}`) for slices of at most `slice` keys:
/// the fewest of 8, 12 and 16 that hold them over [`CL_THREADS`] threads.
pub fn cluster_items(slice: usize) -> Option<usize> {
    [8, 12, 16]
        .into_iter()
        .find(|&n| slice <= CL_THREADS as usize * n)
}

/// The cluster path's launch for `n` segments of at most `max_len` keys: clusters of
/// [`cluster_ctas`] blocks, a segment each, and the kernel's keys per thread
/// ([`cluster_items`]).
pub fn cluster_launch(
    n: usize,
    max_len: usize,
    limits: &crate::device::Limits,
) -> Option<(LaunchShape, usize)> {
    let c = cluster_ctas(max_len, limits)?;
    let items = cluster_items(max_len.div_ceil(c))?;
    Some((
        LaunchShape::linear((n * c) as u32, CL_THREADS).with_cluster(c as u32),
        items,
    ))
}

/// Blocks of the filter pass: [`TopkTuning::filter_blocks_per_sm`] resident per SM, striding
/// over the tiles.
pub fn filter_blocks(ntiles: usize, limits: &crate::device::Limits) -> usize {
    let per_sm = TopkTuning::for_arch(limits.compute_capability).filter_blocks_per_sm;
    ntiles.min(limits.sms as usize * per_sm).max(1)
}

/// Threads of the staged filter: eight filtering warps and one producer warp.
pub const FT_THREADS: u32 = TOPK_FT_THREADS;
/// Most stages of the staged filter. Eight stages of 4 KB already held 32 KB in flight per
/// block; more would have left compute-sanitizer no shared memory for its own bookkeeping.
/// (Every key width now has stages of 8 KB or more and fits at most six a block at four blocks
/// per SM.)
pub const FT_MAX_STAGES: usize = TOPK_FT_MAX_STAGES;
/// Shared memory the staged filter declares statically (its barriers, stage headers, warp
/// totals, each stage's counter, and up to four lists of 512 equal keys: about 4.6 KB), with
/// room to spare.
const FT_STATIC_SMEM: usize = 5120;
/// Shared memory the driver reserves per block on sm_80 and later.
const DRIVER_SMEM_PER_BLOCK: usize = 1024;

/// Launch of the staged filter (`topk_filter_tma`, sm_90): a persistent grid of `blocks`
/// (every SM holding `per_sm`, as many as the register budget of its launch bounds allows),
/// each with `stages` shared-memory stages of `stage_bytes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StagedFilter {
    /// Blocks of the grid.
    pub blocks: usize,
    /// Blocks resident per SM.
    pub per_sm: usize,
    /// Stages per block.
    pub stages: usize,
    /// Bytes per stage ([`stage_bytes`]).
    pub stage_bytes: usize,
}

impl StagedFilter {
    /// Dynamic shared memory per block.
    pub fn smem(&self) -> usize {
        self.stages * self.stage_bytes
    }
}

/// Bytes of one stage for keys of `key_bytes`: a tile, the up to 15 bytes its first key's
/// address sits past a 16-byte boundary (the bulk copy's alignment), rounded to 128 bytes.
pub fn stage_bytes(key_bytes: usize) -> usize {
    (tile(key_bytes) * key_bytes + 16).next_multiple_of(128)
}

/// The staged filter's launch for `ntiles` tiles of keys of `key_bytes`, or None where it does
/// not run: below compute capability 9.0 (no bulk copies) or where fewer than two stages fit
/// a block's share of an SM's shared memory (no copy would overlap the filtering).
pub fn staged_filter(
    ntiles: usize,
    key_bytes: usize,
    limits: &crate::device::Limits,
) -> Option<StagedFilter> {
    if limits.compute_capability.0 < 9 || ntiles == 0 {
        return None;
    }
    // The kernel's launch bounds: 4 blocks per SM for keys of up to 32 bits, 2 for 64.
    let per_sm = if key_bytes <= 4 { 4 } else { 2 };
    let share = (limits.smem_per_sm as usize / per_sm)
        .saturating_sub(DRIVER_SMEM_PER_BLOCK + FT_STATIC_SMEM)
        .min((limits.smem_per_block_optin as usize).saturating_sub(FT_STATIC_SMEM));
    let sb = stage_bytes(key_bytes);
    let stages = (share / sb).min(FT_MAX_STAGES);
    if stages < 2 {
        return None;
    }
    Some(StagedFilter {
        blocks: ntiles.min(limits.sms as usize * per_sm),
        per_sm,
        stages,
        stage_bytes: sb,
    })
}

/// The staged filter's launch for request `req` on `ntiles` tiles of keys `K`, or None for the
/// register filter (staging turned off, or [`staged_filter`] declines).
pub fn filter_staging<K: Key>(
    req: &TopK,
    ntiles: usize,
    limits: &crate::device::Limits,
) -> Option<StagedFilter> {
    if req.allows_staging() {
        staged_filter(ntiles, K::BITS as usize / 8, limits)
    } else {
        None
    }
}

/// Longest segment the warp path takes: 32 lanes of [`TOPK_WARP_KPL`] keys (`WARP_MAX` in the
/// kernels).
pub const WARP_MAX: usize = 32 * TOPK_WARP_KPL;

/// Keys sampled per segment for the filter's threshold (`SAMPLE` in the kernels).
pub const SAMPLE: usize = TOPK_SAMPLE;

/// Shared memory the 256-thread selection kernels declare statically, with room to spare.
const STATIC_SMEM: usize = 8192;
/// The same for the 512-thread candidate kernel (`cand_wide`, about 10 KB): the candidate
/// capacity leaves it room.
const WIDE_STATIC_SMEM: usize = 12_288;

/// Longest segment the on-chip path takes on this device: its radixes (8 bytes each) must fit
/// the opt-in shared memory beside the kernel's static scratch, capped at
/// [`TopkTuning::on_chip_keys`].
pub fn block_max(limits: &crate::device::Limits) -> usize {
    let fit = (limits.smem_per_block_optin as usize).saturating_sub(STATIC_SMEM) / 8;
    let cap = TopkTuning::for_arch(limits.compute_capability).on_chip_keys;
    fit.min(cap) / 256 * 256
}

/// Candidate blocks one SM holds by registers: `cand_rad` takes up to 128 registers per thread
/// (two 256-thread blocks), `cand` is capped for three (two for 64-bit keys).
const CAND_RAD_BLOCKS: usize = 2;

/// Whether the per-segment kernels of the filter path (threshold and candidates) take their
/// 512-thread builds (`thresh_wide`, `cand_wide`): while every segment has an SM to itself, a
/// 256-thread block leaves its SM mostly idle and the block's latency is the kernel's time.
pub fn wide_segments(segments: usize, limits: &crate::device::Limits) -> bool {
    segments <= limits.sms as usize
}

/// The threshold kernel's build for `segments` segments and its threads per block, which the
/// candidate kernel's build ([`cand_kernel`]) shares (see [`wide_segments`]).
pub fn thresh_kernel(segments: usize, limits: &crate::device::Limits) -> (&'static str, u32) {
    if wide_segments(segments, limits) {
        ("thresh_wide", 512)
    } else {
        ("thresh", 256)
    }
}

/// The candidate kernel's build for `segments` blocks of `cap` candidates, and its shared
/// memory per candidate. `cand_rad` keeps each candidate's radix beside its position and (up
/// to 32 bits) its key, so no selection pass converts keys: faster per block. `cand` keeps the
/// key and position only (8 bytes for a 32-bit key; 16-bit keys keep radix and position, 6
/// bytes, and recover the key from the radix), with fewer registers, so more blocks share an
/// SM (four for 16-bit keys, three for 32-bit, two for 64-bit); it runs only where that takes
/// fewer waves of blocks than `cand_rad` needs. `cand_wide` is `cand_rad` on 512 threads, for
/// [`wide_segments`].
pub fn cand_kernel<K: Key>(
    segments: usize,
    cap: usize,
    limits: &crate::device::Limits,
) -> (&'static str, usize) {
    let key = K::BITS as usize / 8;
    // Radixes of keys of up to 16 bits are stored in 16 bits (`RS` in topk.cu); the compact
    // build stores them in place of 16-bit keys.
    let stored = if K::BITS <= 16 { 2 } else { radix_bytes::<K>() };
    let rad = stored + 4 + if K::BITS <= 32 { key } else { 0 };
    let compact = if K::BITS == 16 { stored + 4 } else { key + 4 };
    if wide_segments(segments, limits) {
        return ("cand_wide", rad);
    }
    let per_sm = |bytes: usize, regs: usize| {
        let block = cap * bytes + STATIC_SMEM + DRIVER_SMEM_PER_BLOCK;
        (limits.smem_per_sm as usize / block).min(regs).max(1)
    };
    let waves = |per_sm: usize| segments.div_ceil(per_sm * (limits.sms as usize).max(1));
    let compact_regs = match K::BITS {
        64 => 2,
        16 => 4,
        _ => 3,
    };
    if waves(per_sm(compact, compact_regs)) < waves(per_sm(rad, CAND_RAD_BLOCKS)) {
        ("cand", compact)
    } else {
        ("cand_rad", rad)
    }
}

/// Whether some row keeps fewer than the row width (k above its segment's length, or a
/// per-segment k below the widest), so the padding kernel must run after the selection.
pub fn needs_padding(layout: &Layout) -> bool {
    layout.kk.iter().any(|&k| k as usize != layout.width)
}

/// Longest segment the on-chip path holds in registers: 256 threads of 32 keys.
pub const RBLOCK_MAX: usize = 256 * 32;

/// Keys per thread of the register on-chip kernel (`rblock_v{N}` in topk.cu) for segments
/// of at most `max_len` keys: the fewest of 8, 16 and 32 that hold them, or None above
/// [`RBLOCK_MAX`] (the shared-memory kernel takes those).
pub fn rblock_items(max_len: usize) -> Option<usize> {
    [8, 16, 32].into_iter().find(|&n| max_len <= 256 * n)
}

/// Most candidates the filter path selects among on chip (at most 12 bytes each in shared
/// memory, [`cand_kernel`]).
pub fn cand_cap(limits: &crate::device::Limits) -> usize {
    let fit = (limits.smem_per_block_optin as usize).saturating_sub(WIDE_STATIC_SMEM) / 12;
    fit.min(16_384) / 256 * 256
}

/// The sample rank of a segment's threshold: the expected rank of its kk-th key among `ns`
/// samples of `len`, plus four standard deviations and 4, so that fewer than kk keys reach
/// the threshold only with negligible probability. Must match `filter_rank` in `topk.cu`.
pub fn filter_rank(len: usize, kk: usize, ns: usize) -> usize {
    let e = kk as f64 * ns as f64 / len as f64;
    ((e + 4.0 * e.sqrt() + 4.0).ceil() as usize).min(ns)
}

/// The GPU path of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuPath {
    /// One warp per segment of at most [`WARP_MAX`] keys, the radixes in registers.
    Warp,
    /// One block per segment, the segment in shared memory.
    OnChip,
    /// Sampled threshold, one streaming filter pass, selection among the candidates.
    Filter,
    /// Multi-pass radix select over tiles.
    Tiled,
    /// A thread-block cluster per segment, one kernel (sm_90).
    Cluster,
    /// Two stages for segments too long for the filter: every segment cut into chunks of
    /// `chunk` keys (the last one takes the remainder), the top `width` of every chunk, then
    /// the top k of each segment's chunk winners.
    Split {
        /// Keys per chunk.
        chunk: usize,
    },
}

/// Chunk lengths the split path tries, longest first.
const SPLIT_CHUNKS: [usize; 5] = [1 << 20, 1 << 19, 1 << 18, 1 << 17, 1 << 16];

/// The split path's stages for `layout` cut into chunks of `chunk` keys. The first stage
/// keeps `width` keys of every chunk (all of a shorter segment); a cut segment's chunks each
/// hold at least `chunk` keys, so their rows are full and a segment's winners are contiguous.
#[derive(Clone, Debug)]
pub struct SplitStages {
    /// Chunks as segments of the keys, each keeping min(width, length).
    pub first: Layout,
    /// The winners of each segment's chunks as segments of the first stage's output rows,
    /// keeping the request's k.
    pub second: Layout,
    /// First key of each chunk relative to its segment's start.
    pub chunk_rel: Vec<i64>,
}

/// Cuts every segment of `layout` into chunks of `chunk` keys.
pub fn split_stages(layout: &Layout, chunk: usize) -> SplitStages {
    let w = layout.width;
    let (mut st, mut ln, mut kk, mut rel) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let n = layout.count();
    let (mut s2, mut l2) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for s in 0..n {
        let (a, l) = (layout.starts[s], layout.lens[s] as usize);
        let q = (l / chunk).max(usize::from(l > 0));
        s2.push((st.len() * w) as i64);
        let mut kept = 0;
        for i in 0..q {
            let e = if i + 1 == q { l } else { (i + 1) * chunk };
            st.push(a + (i * chunk) as i64);
            ln.push((e - i * chunk) as i64);
            kk.push((e - i * chunk).min(w) as i64);
            rel.push((i * chunk) as i64);
            kept += (e - i * chunk).min(w);
        }
        l2.push(kept as i64);
    }
    SplitStages {
        first: Layout {
            starts: st,
            lens: ln,
            kk,
            width: w,
        },
        second: Layout {
            starts: s2,
            lens: l2,
            kk: layout.kk.clone(),
            width: w,
        },
        chunk_rel: rel,
    }
}

/// The chunk of the split path for a layout the filter cannot take: the longest that cuts
/// some segment, leaves each chunk at least eight times the row width (so the second stage
/// reads an eighth of the keys or less), and lets the first stage run on chip or filter.
fn split_chunk(layout: &Layout, limits: &crate::device::Limits, tile: usize) -> Option<usize> {
    let max_len = layout.lens.iter().copied().max().unwrap_or(0) as usize;
    let tuning = TopkTuning::for_arch(limits.compute_capability);
    tuning
        .split_chunks
        .iter()
        .copied()
        .filter(|&c| c >= tuning.split_ratio * layout.width && 2 * c <= max_len)
        .find(|&c| {
            let first = split_stages(layout, c).first;
            base_path(&first, limits, tile).0 != GpuPath::Tiled
        })
}

/// The on-chip, filter or tiled choice for a layout.
fn base_path(
    layout: &Layout,
    limits: &crate::device::Limits,
    tile: usize,
) -> (GpuPath, FilterShape) {
    let max_len = layout.lens.iter().copied().max().unwrap_or(0) as usize;
    let (shape, fits) = filter_shape(layout, cand_cap(limits), tile);
    let tuning = TopkTuning::for_arch(limits.compute_capability);
    let cluster_fits = cluster_fits(layout.count(), max_len, limits, tuning);
    let facts = BaseFacts {
        max_len,
        block_max: block_max(limits),
        filter_fits: fits,
        cluster_fits,
    };
    let rule = TOPK_RULES
        .iter()
        .find(|r| (r.applies)(&facts))
        .expect("the last rule always applies");
    (rule.path, shape)
}

/// Sizes of the filter path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FilterShape {
    /// Candidate slots per tile: twice the largest expected count plus 32, a power of two.
    pub ct: usize,
    /// Candidates one block selects among on chip: twice the expected count, within what
    /// the device's shared memory holds.
    pub cap: usize,
    /// The largest expected candidate count of a segment.
    pub expected: usize,
}

/// The filter's sizes for this layout and tiles of `tile` keys, and whether its expected
/// candidates fit on chip with room for their spread (half the capacity).
fn filter_shape(layout: &Layout, cap: usize, tile: usize) -> (FilterShape, bool) {
    let (mut per_tile, mut expected) = (0f64, 0usize);
    for (&l, &k) in layout.lens.iter().zip(&layout.kk) {
        let (l, k) = (l as usize, k as usize);
        if l == 0 {
            continue;
        }
        let ns = l.min(SAMPLE);
        let r = filter_rank(l, k.max(1), ns);
        expected = expected.max((r as f64 * l as f64 / ns as f64).ceil() as usize);
        per_tile = per_tile.max(tile as f64 * r as f64 / ns as f64);
    }
    let ct = ((2.0 * per_tile.min(tile as f64)) as usize + 32)
        .next_power_of_two()
        .min(tile);
    // Shared memory for twice the expected candidates, so more blocks share an SM.
    let fits = expected <= cap / 2;
    let cap = if fits {
        (2 * expected).next_multiple_of(1024).clamp(1024, cap)
    } else {
        cap
    };
    (FilterShape { ct, cap, expected }, fits)
}

/// The path the GPU takes for this layout of keys of `key_bytes` (the forced one, when the
/// request forces one), and the filter's sizes. Shared by the plan and the launches so they
/// never disagree.
pub fn gpu_path(
    req: &TopK,
    layout: &Layout,
    limits: &crate::device::Limits,
    key_bytes: usize,
) -> Result<(GpuPath, FilterShape)> {
    let max_len = layout.lens.iter().copied().max().unwrap_or(0) as usize;
    let bmax = block_max(limits);
    let tile = tile(key_bytes);
    let (auto, shape) = base_path(layout, limits, tile);
    let path = match req.forced_path() {
        Some(GpuPath::OnChip) if max_len > bmax => {
            return Err(crate::Error::unsupported(format!(
                "the on-chip top-k path takes segments of at most {bmax} keys on this device; the longest is {max_len}"
            )))
        }
        Some(GpuPath::Warp) if max_len > WARP_MAX => {
            return Err(crate::Error::unsupported(format!(
                "the warp top-k path takes segments of at most {WARP_MAX} keys; the longest is {max_len}"
            )))
        }
        Some(GpuPath::Cluster) if cluster_ctas(max_len, limits).is_none() => {
            let most = cluster_max_len(limits);
            return Err(crate::Error::unsupported(if most == 0 {
                "the cluster top-k path needs thread-block clusters (compute capability 9.0 or later)".to_string()
            } else {
                format!("the cluster top-k path takes segments of at most {most} keys on this device; the longest is {max_len}")
            }));
        }
        Some(GpuPath::Split { chunk }) if chunk < layout.width.max(1) => {
            return Err(crate::Error::invalid(
                "chunk",
                format!(
                    "the split top-k path needs chunks of at least k = {} keys, not {chunk}",
                    layout.width
                ),
            ))
        }
        Some(p) => p,
        None if auto == GpuPath::Tiled => split_chunk(layout, limits, tile)
            .map(|chunk| GpuPath::Split { chunk })
            .unwrap_or(GpuPath::Tiled),
        None => auto,
    };
    Ok((path, shape))
}

/// Tiles of at most `tile` keys of every segment, in segment order: `(segment, start, end)` as
/// absolute key positions.
pub fn tiles(layout: &Layout, tile: usize) -> (Vec<i32>, Vec<i64>, Vec<i64>, Vec<i64>) {
    let (mut seg, mut st, mut en) = (Vec::new(), Vec::new(), Vec::new());
    let mut ptr = Vec::with_capacity(layout.count() + 1);
    ptr.push(0i64);
    for s in 0..layout.count() {
        let (a, l) = (layout.starts[s], layout.lens[s]);
        let mut x = a;
        while x < a + l {
            let e = (x + tile as i64).min(a + l);
            seg.push(s as i32);
            st.push(x);
            en.push(e);
            x = e;
        }
        ptr.push(seg.len() as i64);
    }
    (seg, st, en, ptr)
}

/// The plan for `req` on `device`.
pub fn plan<K: Key>(req: &TopK, device: &Device, layout: &Layout) -> Result<Plan> {
    if let Device::Cpu = device {
        return Ok(Plan {
            op: "topk",
            backend: Backend::Cpu,
            kernel: None,
            shape: None,
            reason: "the device is the CPU: radix select per segment, rayon over segments and within segments of 1M keys or more".into(),
        });
    }
    let n = layout.count();
    if n == 0 || layout.width == 0 {
        return Ok(Plan {
            op: "topk",
            backend: Backend::Cuda,
            kernel: None,
            shape: None,
            reason: "the output is empty: nothing to launch".into(),
        });
    }
    let tile = tile(K::BITS as usize / 8);
    let ntiles: usize = layout
        .lens
        .iter()
        .map(|&l| (l as usize).div_ceil(tile))
        .sum();
    let max_len = layout.lens.iter().copied().max().unwrap_or(0) as usize;
    let all_or_none = layout
        .kk
        .iter()
        .zip(&layout.lens)
        .all(|(&k, &l)| k == 0 || k == l);
    let Device::Cuda(gpu) = device else {
        unreachable!("the CPU returned above")
    };
    let bmax = block_max(gpu.limits());
    let (path, fs) = gpu_path(req, layout, gpu.limits(), K::BITS as usize / 8)?;
    let forced = if req.forced_path().is_some() {
        " (forced)"
    } else {
        ""
    };
    let staged = filter_staging::<K>(req, ntiles, gpu.limits());
    let pass = match staged {
        Some(f) => format!(
            "one pass over the keys, staged by bulk copies through {} shared-memory stages per block, keeping those that reach it",
            f.stages
        ),
        None => "one pass over the keys keeping those that reach it".to_string(),
    };
    let mut reason = match path {
        GpuPath::Warp => format!(
            "warp{forced}: every segment (longest {max_len}) fits one warp's registers (up to {WARP_MAX} keys): one warp per segment, for k <= 32 a prefilter to the keys at or above the k-th largest lane maximum, a bitwise radix select with warp sums from the first bit the keys differ in, early stop, ballot compaction in position order"
        ),
        GpuPath::OnChip => match rblock_items(max_len) {
            Some(items) => format!(
                "on-chip{forced}: every segment (longest {max_len}) fits one block's registers ({items} keys per thread, up to {RBLOCK_MAX}): one block per segment, digit passes over registers from the first bit the keys differ in, early stop, compaction in position order by block scans"
            ),
            None => format!(
                "on-chip{forced}: every segment (longest {max_len}) fits one block's shared memory (up to {bmax} keys): one block per segment, digit passes on chip from the first bit the keys differ in, early stop, ordered compaction"
            ),
        },
        GpuPath::Cluster => {
            let c = cluster_ctas(max_len, gpu.limits()).unwrap_or(0);
            format!(
                "cluster{forced}: {n} segment(s), longest {max_len} (on-chip limit {bmax}, cluster limit {}): one kernel, a cluster of {c} blocks per segment, each holding a slice of up to {} keys in registers ({} a thread); digit passes over registers from the first bit the keys differ in, the cluster's histograms added through distributed shared memory (with those of the blocks before, which place each block's winners), early stop; each block writes its winners in position order",
                cluster_max_len(gpu.limits()),
                max_len.div_ceil(c.max(1)),
                cluster_launch(n, max_len, gpu.limits()).map_or(0, |c| c.1)
            )
        }
        GpuPath::Filter => format!(
            "filter{forced}: {n} segment(s), longest {max_len} (on-chip limit {bmax}); k is small beside the segments (at most {} candidates expected per segment, {} fit on chip): a threshold from {SAMPLE} sampled keys per segment, {pass} ({} slots per tile of {tile}), selection among the candidates on chip (tiles whose candidates overflow their slots filtered again from memory; the threshold's ties completing too few candidates); segments whose candidates still miss are selected from memory",
            fs.expected, fs.cap, fs.ct
        ),
        GpuPath::Tiled => format!(
            "tiled{forced}: {n} segment(s) (longest {max_len}, on-chip limit {bmax}; up to {} candidates expected per segment, {} fit on chip) cut into {ntiles} tile(s) of at most {tile} keys; up to {} 8-bit digit passes over memory with early stop, then an ordered compaction",
            fs.expected,
            fs.cap,
            K::BITS / 8
        ),
        GpuPath::Split { chunk } => {
            let st = split_stages(layout, chunk);
            let (p1, _) = base_path(&st.first, gpu.limits(), tile);
            format!(
                "split{forced}: {n} segment(s), longest {max_len}, too long for the filter (up to {} candidates expected per segment, {} fit on chip): cut into {} chunk(s) of {chunk} keys or more; the first stage keeps the top {} of every chunk ({p1:?} path), the second selects each segment's k among its chunks' {} winners",
                fs.expected,
                fs.cap,
                st.first.count(),
                layout.width,
                st.second.lens.iter().copied().max().unwrap_or(0)
            )
        }
    };
    if all_or_none {
        reason
            .push_str("; every segment keeps all or none of its keys, so the passes stop at once");
    }
    let pad = if needs_padding(layout) { ",pad" } else { "" };
    let mut kernel = match path {
        GpuPath::Warp => format!("topk_{{warp{pad}}}_{}", K::NAME),
        GpuPath::OnChip => match rblock_items(max_len) {
            Some(items) => format!("topk_{{rblock{pad}}}_{}_v{items}", K::NAME),
            None => format!("topk_{{block{pad}}}_{}", K::NAME),
        },
        GpuPath::Filter => format!(
            "topk_{{{},{},{}{pad}}}_{}",
            thresh_kernel(layout.count(), gpu.limits()).0,
            if staged.is_some() {
                "filter_tma"
            } else {
                "filter"
            },
            cand_kernel::<K>(layout.count(), fs.cap, gpu.limits()).0,
            K::NAME
        ),
        GpuPath::Tiled => format!("topk_{{init,hist,pick,count,scan,write{pad}}}_{}", K::NAME),
        GpuPath::Cluster => format!(
            "topk_{{cluster{pad}}}_{}_v{}",
            K::NAME,
            cluster_launch(n, max_len, gpu.limits()).map_or(0, |c| c.1)
        ),
        GpuPath::Split { .. } => format!("two top-k stages + topk_{{remap{pad}}}_{}", K::NAME),
    };
    if req.is_sorted() {
        if layout.width <= SORT_MAX {
            kernel.push_str(&format!(" + topk_{{sort,gather}}_{}", K::NAME));
            reason.push_str("; rows sorted by a bitonic sort in shared memory");
        } else {
            reason.push_str(&format!(
                "; rows of {} > {SORT_MAX} sorted on the host",
                layout.width
            ));
        }
    }
    Ok(Plan {
        op: "topk",
        backend: Backend::Cuda,
        kernel: Some(kernel),
        shape: Some(match path {
            GpuPath::Warp => LaunchShape::linear((n * 32).div_ceil(256) as u32, 256),
            GpuPath::OnChip if rblock_items(max_len).is_some() => {
                LaunchShape::linear(n as u32, 256)
            }
            GpuPath::OnChip => LaunchShape::linear(n as u32, 256)
                .with_smem((max_len.max(1) * radix_bytes::<K>()) as u32),
            GpuPath::Filter => match staged {
                Some(f) => {
                    LaunchShape::linear(f.blocks as u32, FT_THREADS).with_smem(f.smem() as u32)
                }
                None => LaunchShape::linear(filter_blocks(ntiles, gpu.limits()) as u32, 256),
            },
            GpuPath::Tiled => LaunchShape::linear(ntiles.max(1) as u32, 256),
            GpuPath::Cluster => {
                cluster_launch(n, max_len, gpu.limits())
                    .expect("gpu_path checked that the cluster takes the layout")
                    .0
            }
            GpuPath::Split { chunk } => {
                LaunchShape::linear(split_stages(layout, chunk).first.count() as u32, 256)
            }
        }),
        reason,
    })
}

#[cfg(test)]
mod tests;
