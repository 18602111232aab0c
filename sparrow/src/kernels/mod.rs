//! The CUDA C++ sources, embedded in the library and compiled by NVRTC at run time, and the
//! list of every entry point each exports. The kernel assembly test compiles every module for
//! sm_80 and sm_90 and checks that each listed entry point is in the cubin, so a name an op can
//! ask for is a name that exists.

pub mod sizes;

/// One `.cu` file with the headers it includes.
#[derive(Clone, Copy, Debug)]
pub struct KernelModule {
    /// Module name, also the source's file stem.
    pub name: &'static str,
    /// The CUDA C++ source.
    pub source: &'static str,
    /// `(include name, text)` of each header.
    pub headers: &'static [(&'static str, &'static str)],
    /// Extra NVRTC options: `-D` definitions that specialise a shared source or carry the
    /// sizes the host shares with it ([`sizes`]).
    pub options: fn() -> Vec<String>,
    /// Every `extern "C"` entry point the module exports.
    pub entry_points: fn() -> Vec<String>,
}

/// `common.cuh`, the PTX wrappers and integer types every module includes; a module built
/// outside the library (the benchmarks' own) includes it too.
pub const COMMON: (&str, &str) = ("common.cuh", include_str!("common.cuh"));

/// The headers spmm.cu includes: one per family of kernels.
const SPMM_HEADERS: [(&str, &str); 10] = [
    COMMON,
    ("products/vector.cuh", include_str!("products/vector.cuh")),
    ("products/rowvec.cuh", include_str!("products/rowvec.cuh")),
    ("products/window.cuh", include_str!("products/window.cuh")),
    ("products/rowblk.cuh", include_str!("products/rowblk.cuh")),
    (
        "products/long_rows.cuh",
        include_str!("products/long_rows.cuh"),
    ),
    ("products/stream.cuh", include_str!("products/stream.cuh")),
    ("products/diag.cuh", include_str!("products/diag.cuh")),
    ("products/near.cuh", include_str!("products/near.cuh")),
    ("products/sliced.cuh", include_str!("products/sliced.cuh")),
];

/// CSR SpMM and SpMV kernels.
pub const SPMM: KernelModule = KernelModule {
    name: "spmm",
    source: include_str!("spmm.cu"),
    headers: &SPMM_HEADERS,
    options: sizes::spmm_defines,
    entry_points: spmm_entry_points,
};

/// (column lanes, entry lanes, segments per column lane) of every row-vector SpMM kernel:
/// every pair of powers of two with at most 32 lanes in all, and 2 or 4 segments per lane
/// for 32 column lanes and for 8 column lanes of one entry lane each (short rows at N above
/// 64: four rows a warp, one pass of 128 f32 columns).
pub fn rowvec_shapes() -> Vec<(u32, u32, u32)> {
    let mut v = Vec::new();
    for c in [1u32, 2, 4, 8, 16, 32] {
        for k in [1u32, 2, 4, 8, 16, 32] {
            if c * k <= 32 {
                v.push((c, k, 1));
            }
        }
    }
    for c in [32, 8] {
        v.push((c, 1, 2));
        v.push((c, 1, 4));
    }
    v
}

/// (column lanes, segments per lane) of the long-row chunk kernels: one for each pair of
/// [`rowvec_shapes`], whose long rows they take; a chunk fills a warp with entry lanes.
pub fn rowvec_chunk_shapes() -> Vec<(u32, u32)> {
    let mut v: Vec<(u32, u32)> = rowvec_shapes()
        .into_iter()
        .map(|(c, _, t)| (c, t))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Name of a row-vector SpMM entry point; `deep` names the build with eight entries in flight
/// per lane (`_u8`, f32 one-segment shapes only: [`deep_exists`]).
pub fn rowvec_name(ty: &str, cols: u32, ksplit: u32, tiles: u32, deep: bool) -> String {
    format!(
        "spmm_rowvec_{ty}_c{cols}_k{ksplit}_t{tiles}{}",
        deep_suffix(deep)
    )
}

/// Whether spmm.cu builds the deep row kernels (`ROWVEC_DEEP_ALL`) for this value type and
/// segments per lane.
pub fn deep_exists(ty: &str, tiles: u32) -> bool {
    ty == "f32" && tiles == 1
}

fn deep_suffix(deep: bool) -> &'static str {
    if deep {
        "_u8"
    } else {
        ""
    }
}

/// (column lanes, entry lanes) of every window SpMM kernel (`WINDOW_ALL` in spmm.cu): at least
/// two column lanes, and 8 to 32 lanes per row so a block's rows at a time fit its
/// [`WINDOW_ROWS`](crate::ops::products::stats::WINDOW_ROWS).
pub fn window_shapes() -> Vec<(u32, u32)> {
    rowvec_shapes()
        .into_iter()
        .filter(|&(c, k, t)| t == 1 && c >= 2 && (8..=32).contains(&(c * k)))
        .map(|(c, k, _)| (c, k))
        .collect()
}

/// (column lanes, entry lanes, segments per column lane) of every row-block SpMM kernel
/// (`ROWBLK_ALL` in spmm.cu, for blocks of four rows and f32's tall blocks).
pub const ROWBLK_SHAPES: [(u32, u32, u32); 14] = [
    (1, 1, 1),
    (1, 4, 1),
    (2, 1, 1),
    (2, 4, 1),
    (4, 1, 1),
    (4, 2, 1),
    (8, 1, 1),
    (8, 2, 1),
    (16, 1, 1),
    (16, 2, 1),
    (32, 1, 1),
    (8, 1, 2),
    (16, 1, 2),
    (32, 1, 2),
];

/// Name of a row-block SpMM entry point over blocks of `rows` rows: `spmm_rowblk_*` for four
/// rows, `spmm_rowblk8_*` for the tall blocks (`ROWBLK8`, f32 only).
pub fn rowblk_name(ty: &str, rows: u32, cols: u32, ksplit: u32, tiles: u32) -> String {
    let h = if rows == 4 {
        String::new()
    } else {
        rows.to_string()
    };
    format!("spmm_rowblk{h}_{ty}_c{cols}_k{ksplit}_t{tiles}")
}

/// Name of a window SpMM entry point.
pub fn window_name(ty: &str, cols: u32, ksplit: u32) -> String {
    format!("spmm_window_{ty}_c{cols}_k{ksplit}")
}

/// Entry lanes per row of the SpMM kernels that read A as 4-entry vectors (`AVEC_ALL`).
pub const AVEC_SPLITS: [u32; 6] = [1, 2, 4, 8, 16, 32];

/// Name of a vector-A SpMM entry point.
pub fn avec_name(ty: &str, ksplit: u32) -> String {
    format!("spmm_avec_{ty}_k{ksplit}")
}

/// Name of a vector-A SpMV entry point (f32 only: the N = 1 body of [`avec_name`]'s kernel
/// alone, in fewer registers).
pub fn spmv_avec_name(ty: &str, ksplit: u32) -> String {
    format!("spmv_avec_{ty}_k{ksplit}")
}

/// Name of the long-row chunk kernel with a main path's column shape (and depth).
pub fn chunks_name(ty: &str, cols: u32, tiles: u32, deep: bool) -> String {
    format!(
        "spmm_chunks_rowvec_{ty}_c{cols}_t{tiles}{}",
        deep_suffix(deep)
    )
}

/// Name of the kernel that combines long rows' chunk partials.
pub fn combine_name(ty: &str) -> String {
    format!("spmm_combine_{ty}")
}

/// Name of the kernel that writes the empty rows of a row list (the sorted SpMM path).
pub fn fill_name(ty: &str) -> String {
    format!("spmm_fill_{ty}")
}

/// Name of the planned-block SpMV kernel.
pub fn stream_name(ty: &str) -> String {
    format!("spmv_stream_{ty}")
}

/// Name of the planned-block SpMV kernel over packed 16-bit column offsets.
pub fn packed_name(ty: &str) -> String {
    format!("spmv_packed_{ty}")
}

/// Name of the SpMV kernel over rows that repeat one pattern of diagonals.
pub fn diag_name(ty: &str) -> String {
    format!("spmv_diag_{ty}")
}

/// Shapes the vector diagonal kernels come in (`DIAGV_ALL` in spmm.cu): lanes a row, vectors a
/// lane per row, and rows a lane, all loaded at once. The policy's two
/// ([`diag_lanes_for`](crate::ops::products::plan::diag_lanes_for)) and their neighbours in each
/// dimension, for `bench --sweep`; the shapes that lost on every case are left out
/// (`bench/results/2026-12-04-h200-spmv-diagonal-vectors.txt`, rounds 6 and 9).
pub const DIAG_SHAPES: [(u32, u32, u32); 5] =
    [(4, 4, 1), (4, 4, 2), (8, 1, 1), (8, 2, 1), (16, 1, 1)];

/// Name of the SpMV kernel over rows that repeat one pattern of many diagonals: `lanes` lanes a
/// row read its values as 16-byte vectors, `vectors` a lane at once, `steps` rows a lane.
pub fn diagv_name(ty: &str, lanes: u32, vectors: u32, steps: u32) -> String {
    format!("spmv_diagv_{ty}_l{lanes}_c{vectors}_s{steps}")
}

/// Lanes a row the near-diagonal SpMV kernels come in (`NEAR_ALL` in spmm.cu).
pub const NEAR_LANES: [u32; 3] = [2, 4, 8];

/// Name of the SpMV kernel over 16-bit column offsets from the row with `lanes` lanes a row.
pub fn near_name(ty: &str, lanes: u32) -> String {
    format!("spmv_near_{ty}_k{lanes}")
}

/// Name of the SpMV kernel over the column-slice layout (f32 only).
pub fn sliced_name(ty: &str) -> String {
    format!("spmv_sliced_{ty}")
}

/// Name of the kernel that adds the cut rows' pieces of the column-slice layout.
pub fn cut_name(ty: &str) -> String {
    format!("spmv_cut_{ty}")
}

fn spmm_entry_points() -> Vec<String> {
    let mut v = Vec::new();
    for ty in ["f32", "f64"] {
        for (c, t) in rowvec_chunk_shapes() {
            v.push(chunks_name(ty, c, t, false));
            if deep_exists(ty, t) {
                v.push(chunks_name(ty, c, t, true));
            }
        }
        v.push(combine_name(ty));
        v.push(fill_name(ty));
        v.push(stream_name(ty));
        v.push(packed_name(ty));
        v.push(diag_name(ty));
        for (l, c, s) in DIAG_SHAPES {
            v.push(diagv_name(ty, l, c, s));
        }
        for k in NEAR_LANES {
            v.push(near_name(ty, k));
        }
        if ty == "f32" {
            v.push(sliced_name(ty));
            v.push(cut_name(ty));
        }
        for (c, k, t) in rowvec_shapes() {
            v.push(rowvec_name(ty, c, k, t, false));
            if deep_exists(ty, t) {
                v.push(rowvec_name(ty, c, k, t, true));
            }
        }
        for k in AVEC_SPLITS {
            v.push(avec_name(ty, k));
            if ty == "f32" {
                v.push(spmv_avec_name(ty, k));
            }
        }
        for (c, k) in window_shapes() {
            v.push(window_name(ty, c, k));
        }
        for (c, k, t) in ROWBLK_SHAPES {
            v.push(rowblk_name(ty, 4, c, k, t));
            if ty == "f32" {
                v.push(rowblk_name(ty, 8, c, k, t));
            }
        }
    }
    v
}

const TOPK_SRC: &str = include_str!("topk.cu");

/// The headers topk.cu includes: one per path, and the radix and selection code they share.
const TOPK_HEADERS: [(&str, &str); 11] = [
    COMMON,
    ("topk/radix.cuh", include_str!("topk/radix.cuh")),
    ("topk/select.cuh", include_str!("topk/select.cuh")),
    ("topk/tiled.cuh", include_str!("topk/tiled.cuh")),
    ("topk/block.cuh", include_str!("topk/block.cuh")),
    ("topk/warp.cuh", include_str!("topk/warp.cuh")),
    ("topk/filter.cuh", include_str!("topk/filter.cuh")),
    ("topk/rblock.cuh", include_str!("topk/rblock.cuh")),
    ("topk/candidates.cuh", include_str!("topk/candidates.cuh")),
    ("topk/output.cuh", include_str!("topk/output.cuh")),
    ("topk/cluster.cuh", include_str!("topk/cluster.cuh")),
];

/// Entry points of a top-k module, without the key-type suffix.
pub const TOPK_KERNELS: [&str; 33] = [
    "cluster_v8",
    "cluster_v12",
    "cluster_v16",
    "init",
    "hist",
    "pick",
    "count",
    "scan",
    "write",
    "pad",
    "sort",
    "gather_v0",
    "gather_v1",
    "gather_v2",
    "gather_v4",
    "gather_v8",
    "block",
    "rblock_v8",
    "rblock_v16",
    "rblock_v32",
    "warp",
    "thresh",
    "thresh_wide",
    "remap",
    "filter",
    "filter_tma",
    "cand",
    "cand_rad",
    "cand_wide",
    "values_v1",
    "values_v2",
    "values_v4",
    "values_v8",
];

/// Name of top-k kernel `kernel` (one of [`TOPK_KERNELS`]: `gather` and `values` with their
/// `_v<bytes>` suffix, `rblock` with `_v<keys per thread>`) for key type `ty`.
pub fn topk_name(kernel: &str, ty: &str) -> String {
    match kernel.split_once("_v") {
        Some((k, v)) => format!("topk_{k}_{ty}_v{v}"),
        None => format!("topk_{kernel}_{ty}"),
    }
}

macro_rules! topk_module {
    ($name:ident, $ty:literal, $u:literal, $kind:literal, $inf:literal) => {
        #[doc = concat!("Top-k kernels for ", $ty, " keys.")]
        pub const $name: KernelModule = KernelModule {
            name: concat!("topk_", $ty),
            source: TOPK_SRC,
            headers: &TOPK_HEADERS,
            options: || {
                let mut v = vec![
                    concat!("-DTOPK_U=", $u).to_string(),
                    concat!("-DTOPK_KIND=", $kind).to_string(),
                    concat!("-DTOPK_INF=", $inf).to_string(),
                    concat!("-DTOPK_NAME=", $ty).to_string(),
                ];
                v.extend(sizes::topk_defines());
                v
            },
            entry_points: || TOPK_KERNELS.iter().map(|k| topk_name(k, $ty)).collect(),
        };
    };
}

topk_module!(TOPK_F32, "f32", "u32", "0", "0x7f800000ull");
topk_module!(TOPK_F64, "f64", "u64", "0", "0x7ff0000000000000ull");
topk_module!(TOPK_F16, "f16", "u16", "0", "0x7c00ull");
topk_module!(TOPK_BF16, "bf16", "u16", "0", "0x7f80ull");
topk_module!(TOPK_I8, "i8", "u8", "1", "0ull");
topk_module!(TOPK_U8, "u8", "u8", "2", "0ull");
topk_module!(TOPK_I16, "i16", "u16", "1", "0ull");
topk_module!(TOPK_U16, "u16", "u16", "2", "0ull");
topk_module!(TOPK_I32, "i32", "u32", "1", "0ull");
topk_module!(TOPK_U32, "u32", "u32", "2", "0ull");
topk_module!(TOPK_I64, "i64", "u64", "1", "0ull");
topk_module!(TOPK_U64, "u64", "u64", "2", "0ull");

/// The top-k module for a key type name.
pub fn topk_module(ty: &str) -> Option<KernelModule> {
    Some(match ty {
        "f32" => TOPK_F32,
        "f64" => TOPK_F64,
        "f16" => TOPK_F16,
        "bf16" => TOPK_BF16,
        "i8" => TOPK_I8,
        "u8" => TOPK_U8,
        "i16" => TOPK_I16,
        "u16" => TOPK_U16,
        "i32" => TOPK_I32,
        "u32" => TOPK_U32,
        "i64" => TOPK_I64,
        "u64" => TOPK_U64,
        _ => return None,
    })
}

/// The compressed-sensing solvers' kernels, f32 and f64.
pub const CS: KernelModule = KernelModule {
    name: "cs",
    source: include_str!("cs.cu"),
    headers: &[COMMON],
    options: Vec::new,
    entry_points: cs_entry_points,
};

/// Every kernel of [`CS`] with an f32 and an f64 entry point, without the `cs_` prefix and
/// type suffix (`cs_correlate_fp8`, f32 only, `cs_union`, on indices, and `cs_svt_observe`, f64, are
/// the others).
pub const CS_KERNELS: [&str; 20] = [
    "omp_chol",
    "lsq",
    "mask_support",
    "abs_keys",
    "restrict",
    "omp_mask",
    "iht_step_async",
    "correlate_tma",
    "hard",
    "soft",
    "iht_step",
    "scatter",
    "amp_residual",
    "sv_shrink",
    "tv_grad",
    "correlate",
    "norms",
    "fista",
    "amp_step",
    "keep_running",
];

/// Name of compressed-sensing kernel `kernel` for scalar type `ty` (`f32` or `f64`).
pub fn cs_name(kernel: &str, ty: &str) -> String {
    format!("cs_{kernel}_{ty}")
}

fn cs_entry_points() -> Vec<String> {
    let mut v: Vec<String> = ["f32", "f64"]
        .iter()
        .flat_map(|t| CS_KERNELS.iter().map(move |k| cs_name(k, t)))
        .collect();
    v.push("cs_correlate_fp8".into());
    v.push("cs_union".into());
    v.push("cs_svt_observe".into());
    v
}

/// SEACells' kNN distance tiles and Frank-Wolfe update kernels (f64).
pub const SEACELLS: KernelModule = KernelModule {
    name: "seacells",
    source: include_str!("seacells.cu"),
    headers: &[COMMON],
    options: Vec::new,
    entry_points: seacells_entry_points,
};

/// Every entry point of [`SEACELLS`].
pub const SEACELLS_KERNELS: [&str; 25] = [
    "seacells_knn_dist",
    "seacells_b_rhs",
    "seacells_b_asub",
    "seacells_b_pick",
    "seacells_b_gap",
    "seacells_a_update",
    "seacells_b_grad_w1",
    "seacells_b_grad_w2",
    "seacells_b_grad_w4",
    "seacells_b_grad_w8",
    "seacells_b_grad_w16",
    "seacells_b_grad_w32",
    "seacells_b_final",
    "seacells_bb_seed",
    "seacells_bb_scan",
    "seacells_bb_final",
    "seacells_bb_open",
    "seacells_bb_open_final",
    "seacells_rowcomb",
    "seacells_rowcomb_big",
    "seacells_kb_expand",
    "seacells_scan",
    "seacells_kb_scatter",
    "seacells_kb_count",
    "seacells_kb_merge",
];

/// Columns per thread of each `seacells_b_grad_w*` kernel (256 threads per block).
pub const SEACELLS_B_TIERS: [usize; 6] = [1, 2, 4, 8, 16, 32];

/// Rows of a kNN distance tile one block computes (`KNN_ROWS` in seacells.cu).
pub const SEACELLS_KNN_ROWS: usize = 8;

fn seacells_entry_points() -> Vec<String> {
    SEACELLS_KERNELS.iter().map(|s| s.to_string()).collect()
}

/// Every kernel module of the library.
pub fn all_modules() -> Vec<KernelModule> {
    vec![
        SPMM, CS, SEACELLS, TOPK_F32, TOPK_F64, TOPK_F16, TOPK_BF16, TOPK_I8, TOPK_U8, TOPK_I16,
        TOPK_U16, TOPK_I32, TOPK_U32, TOPK_I64, TOPK_U64,
    ]
}
