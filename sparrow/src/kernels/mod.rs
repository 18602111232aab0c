//! The CUDA C++ sources, embedded in the library and compiled by NVRTC at run time, and the
//! list of every entry point each exports. The kernel assembly test compiles every module for
//! sm_80 and sm_90 and checks that each listed entry point is in the cubin, so a name an op can
//! ask for is a name that exists.

/// One `.cu` file with the headers it includes.
#[derive(Clone, Copy, Debug)]
pub struct KernelModule {
    /// Module name, also the source's file stem.
    pub name: &'static str,
    /// The CUDA C++ source.
    pub source: &'static str,
    /// `(include name, text)` of each header.
    pub headers: &'static [(&'static str, &'static str)],
    /// Every `extern "C"` entry point the module exports.
    pub entry_points: fn() -> Vec<String>,
}

const COMMON: (&str, &str) = ("common.cuh", include_str!("common.cuh"));

/// CSR SpMM and SpMV kernels.
pub const SPMM: KernelModule = KernelModule {
    name: "spmm",
    source: include_str!("spmm.cu"),
    headers: &[COMMON],
    entry_points: spmm_entry_points,
};

/// Group widths of the nnz-split kernels.
pub const NNZSPLIT_GROUPS: [u32; 4] = [4, 8, 16, 32];
/// Column capacities of the nnz-split kernels.
pub const NNZSPLIT_NMAX: [u32; 4] = [1, 2, 4, 8];
/// (lanes per row, columns per lane) of the column-warp kernels.
pub const COLWARP_SHAPES: [(u32, u32); 4] = [(16, 1), (32, 1), (32, 2), (32, 4)];

/// Name of an nnz-split SpMM entry point.
pub fn nnzsplit_name(ty: &str, nmax: u32, group: u32) -> String {
    format!("spmm_nnzsplit_{ty}_n{nmax}_g{group}")
}

/// Name of a column-warp SpMM entry point.
pub fn colwarp_name(ty: &str, lanes: u32, per_lane: u32) -> String {
    format!("spmm_colwarp_{ty}_l{lanes}_t{per_lane}")
}

/// Name of the long-row chunk kernel that matches a main path's column shape: nnz-split chunks
/// with the same column capacity, or 32-lane column chunks with the same columns per lane.
pub fn chunks_name(ty: &str, nnzsplit_nmax: Option<u32>, per_lane: u32) -> String {
    match nnzsplit_nmax {
        Some(nmax) => format!("spmm_chunks_nnzsplit_{ty}_n{nmax}"),
        None => format!("spmm_chunks_colwarp_{ty}_t{per_lane}"),
    }
}

/// Name of the kernel that combines long rows' chunk partials.
pub fn combine_name(ty: &str) -> String {
    format!("spmm_combine_{ty}")
}

fn spmm_entry_points() -> Vec<String> {
    let mut v = Vec::new();
    for ty in ["f32", "f64"] {
        for nmax in NNZSPLIT_NMAX {
            v.push(chunks_name(ty, Some(nmax), 1));
        }
        for per_lane in [1, 2, 4] {
            v.push(chunks_name(ty, None, per_lane));
        }
        v.push(combine_name(ty));
        for n in NNZSPLIT_NMAX {
            for g in NNZSPLIT_GROUPS {
                v.push(nnzsplit_name(ty, n, g));
            }
        }
        for (l, t) in COLWARP_SHAPES {
            v.push(colwarp_name(ty, l, t));
        }
    }
    v
}

/// Every kernel module of the project.
pub fn all_modules() -> Vec<KernelModule> {
    vec![SPMM]
}
