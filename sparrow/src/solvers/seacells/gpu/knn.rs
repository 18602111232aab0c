//! The exact kNN on the GPU: distance tiles in f64 with the CPU's arithmetic, then the
//! segmented top-k per row, so the neighbour lists are the CPU's bit for bit.

use super::super::kernel::check_embedding;
use super::BLOCK;
use crate::device::{Args, Gpu, LaunchShape};
use crate::kernels::{SEACELLS, SEACELLS_KNN_ROWS};
use crate::matrix::Dense;
use crate::ops::topk::{GpuTopK, IndexType, Segments, TieBreak, TopK};
use crate::{Error, Result, Scalar};

/// Largest distance tile (rows x n keys) the kNN selects from at once: 1 GiB of f64.
pub const TILE_KEYS: usize = 1 << 27;
/// Largest embedding width the distance kernel holds in shared memory (8 rows of it).
pub const KNN_MAX_DIMS: usize = 2048;

/// Exact kNN on the GPU, the same lists as [`super::super::kernel::knn`]: per cell `k` (cell,
/// squared distance) pairs in ascending distance, ties by the smaller index, the cell first.
pub fn knn<T: Scalar>(gpu: &Gpu, x: &Dense<T>, k: usize) -> Result<Vec<Vec<(u32, f64)>>> {
    knn_tiled(gpu, x, k, TILE_KEYS)
}

/// [`knn`] with distance tiles of at most `tile_keys` keys (at least one row), so tests can
/// reach several tiles and a short last one on small inputs.
pub fn knn_tiled<T: Scalar>(
    gpu: &Gpu,
    x: &Dense<T>,
    k: usize,
    tile_keys: usize,
) -> Result<Vec<Vec<(u32, f64)>>> {
    check_embedding(x, k)?;
    let (n, d) = (x.nrows(), x.ncols());
    if d > KNN_MAX_DIMS {
        return Err(Error::unsupported(format!(
            "a {d}-dimensional embedding exceeds the GPU kNN's {KNN_MAX_DIMS} dimensions"
        )));
    }
    let mut xt = vec![0.0f64; n * d];
    for i in 0..n {
        for (j, v) in x.row(i).iter().enumerate() {
            xt[j * n + i] = v.to_f64();
        }
    }
    let tile = (tile_keys / n.max(1)).clamp(1, n);
    gpu.ensure_fits(
        ((n * d + 2 * tile * n) * 8) as u64,
        "the kNN's distance tile",
    )?;
    let xt_d = gpu.upload(&xt)?;
    let dist_k = gpu.kernel(&SEACELLS, "seacells_knn_dist")?;
    let sel = TopK::smallest(k)
        .tie_break(TieBreak::SmallerIndex)
        .index_type(IndexType::I32);
    let mut out = Vec::with_capacity(n);
    let mut top: Option<(usize, GpuTopK<'_, f64, f64>)> = None;
    for r0 in (0..n).step_by(tile) {
        let rows = tile.min(n - r0);
        if top.as_ref().map(|t| t.0) != Some(rows) {
            let layout = sel.layout(
                rows * n,
                Segments::Fixed {
                    count: rows,
                    len: n,
                },
                None,
            )?;
            top = Some((rows, GpuTopK::on_device(gpu, &sel, rows * n, &layout)?));
        }
        let t = &top.as_ref().expect("selector built above").1;
        let keys = t
            .input()
            .ok_or_else(|| Error::unsupported("top-k of an empty tile"))?;
        unsafe {
            gpu.launch(
                &dist_k,
                LaunchShape {
                    grid: [
                        n.div_ceil(BLOCK as usize) as u32,
                        rows.div_ceil(SEACELLS_KNN_ROWS) as u32,
                        1,
                    ],
                    block: [BLOCK, 1, 1],
                    smem: (SEACELLS_KNN_ROWS * d * 8) as u32,
                    cluster: None,
                    pdl: false,
                },
                Args::new()
                    .ptr(gpu.ptr(&xt_d))
                    .i64(n as i64)
                    .i64(d as i64)
                    .i64(r0 as i64)
                    .i64(rows as i64)
                    .ptr(gpu.ptr(keys)),
            )
        }?;
        t.enqueue()?;
        let (ok, oi, _, _) = t
            .outputs()
            .ok_or_else(|| Error::unsupported("top-k of an empty tile"))?;
        let kb: Vec<u8> = gpu.download(ok, rows * k * 8)?;
        let ib: Vec<u8> = gpu.download(oi, rows * k * 4)?;
        for r in 0..rows {
            let mut row: Vec<(u32, f64)> = (0..k)
                .map(|e| {
                    let p = r * k + e;
                    let d2 = f64::from_le_bytes(kb[p * 8..p * 8 + 8].try_into().expect("8 bytes"));
                    let j = i32::from_le_bytes(ib[p * 4..p * 4 + 4].try_into().expect("4 bytes"));
                    (j as u32, d2)
                })
                .collect();
            // The selection is unsorted: order by (distance, index) as the CPU does; the
            // cell itself (written as -1) comes first and gets its distance 0 back.
            row.sort_unstable_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            if row.first().is_some_and(|e| e.1 < 0.0) {
                row[0].1 = 0.0;
            } else {
                return Err(Error::device(
                    "the GPU kNN",
                    format!("cell {} is missing from its own neighbours", r0 + r),
                ));
            }
            out.push(row);
        }
    }
    Ok(out)
}
