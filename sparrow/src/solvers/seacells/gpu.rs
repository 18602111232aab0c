//! SEACells on the GPU: the exact kNN (distance tiles in f64 with the CPU's arithmetic, then
//! sparrow's segmented top-k, so the neighbour lists are the CPU's bit for bit) and the B
//! update's gradient columns, G = M (M V) with V = B A A^T - A^T built a chunk of columns at a
//! time and reduced on the device to each archetype's argmin cell and duality-gap share.
//! Nothing of size n x n or n x N is held: the distance tile is bounded by [`TILE_KEYS`] and
//! the gradient chunk by [`B_CHUNK`] columns.

use cudarc::driver::CudaSlice;

use super::fw::{kb_cols, BUpdate};
use super::kernel::check_embedding;
use super::sparse::{blend, SpVec};
use crate::device::{Args, DeviceCsr, Gpu, LaunchShape};
use crate::kernels::{SEACELLS, SEACELLS_KNN_ROWS};
use crate::matrix::{Csr, Dense};
use crate::ops::spmm::cuda::launch as spmm_launch;
use crate::ops::spmm::plan::{choose, GpuPath};
use crate::ops::topk::{GpuTopK, IndexType, Segments, TieBreak, TopK};
use crate::{Error, Result, Scalar};

/// Largest distance tile (rows x n keys) the kNN selects from at once: 1 GiB of f64.
pub const TILE_KEYS: usize = 1 << 27;
/// Gradient columns the B update computes per pass (three n x B_CHUNK f64 buffers).
pub const B_CHUNK: usize = 128;
/// Largest embedding width the distance kernel holds in shared memory (8 rows of it).
pub const KNN_MAX_DIMS: usize = 2048;

const BLOCK: u32 = 256;

/// Exact kNN on the GPU, the same lists as [`super::kernel::knn`]: per cell `k` (cell,
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
            },
            Args::new()
                .ptr(gpu.ptr(&xt_d))
                .i64(n as i64)
                .i64(d as i64)
                .i64(r0 as i64)
                .i64(rows as i64)
                .ptr(gpu.ptr(keys)),
        )?;
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

/// The kernel M on the GPU and the B update's scratch, built once per fit.
pub struct BSolver<'a> {
    gpu: &'a Gpu,
    m: DeviceCsr<f64>,
    path: GpuPath,
    n: usize,
    v: CudaSlice<f64>,
    w: CudaSlice<f64>,
    g: CudaSlice<f64>,
}

/// A CSR by column of sparse columns, on the device: (ptr, cell, weight).
struct Cols {
    ptr: CudaSlice<i64>,
    cell: CudaSlice<i32>,
    w: CudaSlice<f64>,
}

impl Cols {
    fn upload(gpu: &Gpu, cols: &[SpVec]) -> Result<Self> {
        let mut ptr = Vec::with_capacity(cols.len() + 1);
        let (mut cell, mut w) = (Vec::new(), Vec::new());
        ptr.push(0i64);
        for col in cols {
            for &(i, v) in col {
                cell.push(i as i32);
                w.push(v);
            }
            ptr.push(cell.len() as i64);
        }
        // At least one entry, so an empty matrix still has an address.
        cell.push(0);
        w.push(0.0);
        Ok(Cols {
            ptr: gpu.upload(&ptr)?,
            cell: gpu.upload(&cell)?,
            w: gpu.upload(&w)?,
        })
    }
}

impl<'a> BSolver<'a> {
    /// Uploads M (n x n) and allocates the three gradient-chunk buffers.
    pub fn new(gpu: &'a Gpu, m: &Csr<f64>) -> Result<Self> {
        let n = m.nrows();
        gpu.ensure_fits(
            (3 * n * B_CHUNK * 8 + m.nnz() * 12) as u64,
            "the SEACells B update",
        )?;
        let dm = DeviceCsr::upload(gpu, m)?;
        let (path, _) = choose(&dm.stats, B_CHUNK);
        Ok(BSolver {
            gpu,
            path,
            n,
            v: gpu.alloc_zeroed(n * B_CHUNK)?,
            w: gpu.alloc_zeroed(n * B_CHUNK)?,
            g: gpu.alloc_zeroed(n * B_CHUNK)?,
            m: dm,
        })
    }

    /// The B update of [`super::fw::update_b`] with the gradient columns on the GPU: the same
    /// steps, stop rule and B bookkeeping; the gradient's sums run in another order, so
    /// near-ties may pick other cells than the CPU's.
    pub fn update_b(
        &self,
        m: &Csr<f64>,
        a: &[SpVec],
        b_prev: &[SpVec],
        steps: usize,
        min_steps: usize,
        gap_tol: f64,
    ) -> Result<BUpdate> {
        let (gpu, n) = (self.gpu, self.n);
        let nm = b_prev.len();
        // t1 = A A^T by rows (symmetric), only its non-zeros.
        let mut aat = vec![0.0; nm * nm];
        for col in a {
            for &(p, wp) in col {
                for &(q, wq) in col {
                    aat[p as usize * nm + q as usize] += wp * wq;
                }
            }
        }
        let t1: Vec<SpVec> = (0..nm)
            .map(|r| {
                (0..nm)
                    .filter(|&c| aat[r * nm + c] != 0.0)
                    .map(|c| (c as u32, aat[r * nm + c]))
                    .collect()
            })
            .collect();
        let t1_d = Cols::upload(gpu, &t1)?;
        // A^T by archetype: the cells and weights of each.
        let mut by_arch: Vec<SpVec> = vec![Vec::new(); nm];
        for (j, col) in a.iter().enumerate() {
            for &(c, w) in col {
                by_arch[c as usize].push((j as u32, w));
            }
        }
        let at_d = Cols::upload(gpu, &by_arch)?;
        let rhs = gpu.kernel(&SEACELLS, "seacells_b_rhs")?;
        let pick_k = gpu.kernel(&SEACELLS, "seacells_b_pick")?;
        let pick_d = gpu.upload(&vec![-1i32; nm])?;
        let gap_d = gpu.alloc_zeroed::<f64>(nm)?;
        let mut b: Vec<SpVec> = b_prev.to_vec();
        let (mut gap0, mut taken) = (0.0, 0);
        for t in 0..steps {
            let b_d = Cols::upload(gpu, &b)?;
            for c0 in (0..nm).step_by(B_CHUNK) {
                let nc = B_CHUNK.min(nm - c0);
                gpu.fill_bytes(&self.v, 0, n * B_CHUNK * 8)?;
                gpu.launch(
                    &rhs,
                    LaunchShape::linear(nc as u32, BLOCK),
                    Args::new()
                        .ptr(gpu.ptr(&t1_d.ptr))
                        .ptr(gpu.ptr(&t1_d.cell))
                        .ptr(gpu.ptr(&t1_d.w))
                        .ptr(gpu.ptr(&b_d.ptr))
                        .ptr(gpu.ptr(&b_d.cell))
                        .ptr(gpu.ptr(&b_d.w))
                        .ptr(gpu.ptr(&at_d.ptr))
                        .ptr(gpu.ptr(&at_d.cell))
                        .ptr(gpu.ptr(&at_d.w))
                        .i64(c0 as i64)
                        .i64(B_CHUNK as i64)
                        .ptr(gpu.ptr(&self.v)),
                )?;
                let (vp, wp, gp) = (gpu.ptr(&self.v), gpu.ptr(&self.w), gpu.ptr(&self.g));
                spmm_launch(
                    gpu, self.path, &self.m, nc, vp, B_CHUNK, wp, B_CHUNK, 1.0, 0.0, true,
                )?;
                spmm_launch(
                    gpu, self.path, &self.m, nc, wp, B_CHUNK, gp, B_CHUNK, 1.0, 0.0, true,
                )?;
                gpu.launch(
                    &pick_k,
                    LaunchShape::linear(nc as u32, BLOCK),
                    Args::new()
                        .ptr(gp)
                        .i64(n as i64)
                        .i64(B_CHUNK as i64)
                        .i64(c0 as i64)
                        .ptr(gpu.ptr(&b_d.ptr))
                        .ptr(gpu.ptr(&b_d.cell))
                        .ptr(gpu.ptr(&b_d.w))
                        .ptr(gpu.ptr(&pick_d))
                        .ptr(gpu.ptr(&gap_d)),
                )?;
            }
            let picks: Vec<i32> = gpu.download(&pick_d, nm)?;
            let gaps: Vec<f64> = gpu.download(&gap_d, nm)?;
            if let Some(c) = picks.iter().position(|&p| p < 0 || p as usize >= n) {
                return Err(Error::device(
                    "the GPU B update",
                    format!("archetype {c} got no cell (pick {})", picks[c]),
                ));
            }
            let gap: f64 = gaps.iter().sum();
            if t == 0 {
                gap0 = gap;
            }
            if t >= min_steps && gap <= gap_tol * gap0 {
                break;
            }
            let gamma = 2.0 / (t as f64 + 2.0);
            for (col, &p) in b.iter_mut().zip(&picks) {
                *col = blend(col, &[(p as u32, 1.0)], gamma);
            }
            taken = t + 1;
        }
        let kb = kb_cols(m, &b);
        Ok(BUpdate {
            b,
            kb,
            steps: taken,
        })
    }
}
