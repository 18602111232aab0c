//! SEACells on the GPU: the exact kNN (distance tiles in f64 with the CPU's arithmetic, then
//! sparrow's segmented top-k, so the neighbour lists are the CPU's bit for bit) and the B
//! update's gradient columns, G = M (M V) with V = B A A^T - A^T built a chunk of columns at a
//! time and reduced on the device to each archetype's argmin cell and duality-gap share.
//! Nothing of size n x n or n x N is held: the distance tile is bounded by [`TILE_KEYS`] and
//! the gradient chunk by [`B_CHUNK`] columns.

use cudarc::driver::CudaSlice;

use super::fw::{a_at, kb_cols, update_b_with, BUpdate};
pub use super::gpu_b::KatSource;
use super::gpu_b::{expansion_fits, tier, two_hop_bound, GpuSteps};
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
/// Most gradient columns the B update computes per pass (three n x chunk f64 buffers); fewer
/// for many cells, so a chunk's SpMM input stays in L2 (see [`b_chunk`]).
pub const B_CHUNK: usize = 64;
/// Cells one partial argmin block scans.
const PICK_SPAN: usize = 4096;

/// Gradient columns per pass for n cells: 64 while a 64-column f64 chunk is at most 32 MiB,
/// then 32, then 16.
pub fn b_chunk(n: usize) -> usize {
    let mut c = B_CHUNK;
    while c > 16 && n * c * 8 > 32 << 20 {
        c /= 2;
    }
    c
}

fn grid_for(items: usize) -> LaunchShape {
    LaunchShape::linear(
        items.div_ceil(BLOCK as usize).clamp(1, 132 * 16) as u32,
        BLOCK,
    )
}
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
                pdl: false,
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

/// Largest archetype count whose A update runs on the GPU (two f64 vectors of it per block in
/// shared memory).
pub const A_MAX_METACELLS: usize = 12_000;
/// Cells per piece of the A update's download (0.6 MB at 50 atoms): small enough that the
/// GPU tests' 3,000 cells come back in three pieces, the last one short.
const A_DOWNLOAD_CELLS: usize = 1024;

/// Where the GPU B update reads its gradient.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BPath {
    /// One fused kernel per step over cells, K A^T from the given source.
    Fused(KatSource),
    /// G = M (M V) in column chunks by SpMM, reduced per column.
    Chunked,
}

/// The kernel M on the GPU and the B update's scratch, built once per fit.
pub struct Solver<'a> {
    pub(super) gpu: &'a Gpu,
    pub(super) m: DeviceCsr<f64>,
    pub(super) path: GpuPath,
    pub(super) n: usize,
    pub(super) chunk: usize,
    pub(super) v: CudaSlice<f64>,
    pub(super) w: CudaSlice<f64>,
    pub(super) g: CudaSlice<f64>,
    /// The most cells two hops from any cell (see [`super::gpu_b::two_hop_bound`]).
    pub(super) two_hop: usize,
}

/// A CSR by column of sparse columns, on the device: (ptr, cell, weight).
pub(super) struct Cols {
    pub(super) ptr: CudaSlice<i64>,
    pub(super) cell: CudaSlice<i32>,
    pub(super) w: CudaSlice<f64>,
}

/// Sparse columns as CSR arrays on the host, as the kernels read them; every array holds at
/// least one entry so an empty matrix still has a device address.
#[derive(Debug, PartialEq)]
struct HostCols {
    ptr: Vec<i64>,
    cell: Vec<i32>,
    w: Vec<f64>,
}

impl HostCols {
    /// `cols` as they are: column c lists its (index, value) pairs.
    fn of(cols: &[SpVec]) -> Self {
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
        cell.push(0);
        w.push(0.0);
        HostCols { ptr, cell, w }
    }

    /// The transpose of `cols` (n rows) by counting sort: row i lists (column, value) in
    /// ascending column, as `sparse::transpose` would, without a vector per row.
    fn transposed(cols: &[SpVec], n: usize) -> Self {
        let mut ptr = vec![0i64; n + 1];
        for col in cols {
            for &(i, _) in col {
                ptr[i as usize + 1] += 1;
            }
        }
        for i in 0..n {
            ptr[i + 1] += ptr[i];
        }
        let nnz = ptr[n] as usize;
        let mut next: Vec<i64> = ptr[..n].to_vec();
        let (mut cell, mut w) = (vec![0i32; nnz + 1], vec![0.0f64; nnz + 1]);
        for (c, col) in cols.iter().enumerate() {
            for &(i, v) in col {
                let p = next[i as usize] as usize;
                cell[p] = c as i32;
                w[p] = v;
                next[i as usize] += 1;
            }
        }
        HostCols { ptr, cell, w }
    }
}

impl Cols {
    fn upload_host(gpu: &Gpu, h: &HostCols) -> Result<Self> {
        Ok(Cols {
            ptr: gpu.upload(&h.ptr)?,
            cell: gpu.upload(&h.cell)?,
            w: gpu.upload(&h.w)?,
        })
    }

    pub(super) fn upload(gpu: &Gpu, cols: &[SpVec]) -> Result<Self> {
        Self::upload_host(gpu, &HostCols::of(cols))
    }

    fn upload_transposed(gpu: &Gpu, cols: &[SpVec], n: usize) -> Result<Self> {
        Self::upload_host(gpu, &HostCols::transposed(cols, n))
    }
}

impl<'a> Solver<'a> {
    /// Uploads M (n x n) and allocates the three gradient-chunk buffers.
    pub fn new(gpu: &'a Gpu, m: &Csr<f64>) -> Result<Self> {
        let n = m.nrows();
        let chunk = b_chunk(n);
        gpu.ensure_fits(
            (3 * n * chunk * 8 + m.nnz() * 12) as u64,
            "the SEACells B update",
        )?;
        let dm = DeviceCsr::upload(gpu, m)?;
        // One entry lane per row: each column's sum runs in entry order, as the CPU's does.
        // Window blocks and sorted bins may split rows over entry lanes, so their column
        // shape runs on the row kernel instead.
        let path = match choose(&dm.stats, chunk, 8).0 {
            GpuPath::RowVec {
                cols, tiles, deep, ..
            } => GpuPath::RowVec {
                cols,
                ksplit: 1,
                tiles,
                deep,
            },
            GpuPath::Sorted { cols, deep, .. } => GpuPath::RowVec {
                cols,
                ksplit: 1,
                tiles: 1,
                deep,
            },
            GpuPath::Window { cols, .. } => GpuPath::RowVec {
                cols,
                ksplit: 1,
                tiles: 1,
                deep: false,
            },
            other => other,
        };
        Ok(Solver {
            gpu,
            path,
            n,
            chunk,
            v: gpu.alloc_zeroed(n * chunk)?,
            w: gpu.alloc_zeroed(n * chunk)?,
            g: gpu.alloc_zeroed(n * chunk)?,
            m: dm,
            two_hop: two_hop_bound(m),
        })
    }

    /// The A update of [`super::fw::update_a`] on the GPU, one block per cell with the CPU's
    /// arithmetic: the same atoms bit for bit. `kb` is K B by archetype (the CPU takes its
    /// transpose); beyond [`A_MAX_METACELLS`] it runs on the CPU.
    pub fn update_a(
        &self,
        kb: &[SpVec],
        t1: &[f64],
        prev: Option<&[SpVec]>,
        steps: usize,
    ) -> Result<Vec<SpVec>> {
        let (gpu, n, nm) = (self.gpu, self.n, kb.len());
        if nm > A_MAX_METACELLS || n == 0 {
            let rows = super::sparse::transpose(kb, n);
            return Ok(super::fw::update_a(&rows, t1, nm, prev, steps));
        }
        // Each step adds at most one atom, and there are nm archetypes.
        let cap = steps.min(nm).max(1);
        let t1_d = gpu.upload(t1)?;
        let kb = Cols::upload_transposed(gpu, kb, n)?;
        let prev_d = match prev {
            Some(p) => Some(Cols::upload(gpu, p)?),
            None => None,
        };
        let w0: Vec<f64> = (0..nm)
            .map(|m| t1[m * nm..(m + 1) * nm].iter().sum::<f64>() / nm as f64)
            .collect();
        let w0_d = gpu.upload(&w0)?;
        let out_c = gpu.alloc_zeroed::<i32>(n * cap)?;
        let out_w = gpu.alloc_zeroed::<f64>(n * cap)?;
        let k = gpu.kernel(&SEACELLS, "seacells_a_update")?;
        let cells = u32::try_from(n)
            .map_err(|_| Error::unsupported(format!("{n} cells exceed 2^32 blocks")))?;
        gpu.launch(
            &k,
            LaunchShape::linear(cells, BLOCK).with_smem(((2 * nm + cap) * 8 + cap * 4) as u32),
            Args::new()
                .ptr(gpu.ptr(&t1_d))
                .i64(nm as i64)
                .ptr(gpu.ptr(&kb.ptr))
                .ptr(gpu.ptr(&kb.cell))
                .ptr(gpu.ptr(&kb.w))
                .ptr(prev_d.as_ref().map_or(0, |p| gpu.ptr(&p.ptr)))
                .ptr(prev_d.as_ref().map_or(0, |p| gpu.ptr(&p.cell)))
                .ptr(prev_d.as_ref().map_or(0, |p| gpu.ptr(&p.w)))
                .ptr(gpu.ptr(&w0_d))
                .i64(steps as i64)
                .f64(super::fw::PRUNE)
                .i64(cap as i64)
                .ptr(gpu.ptr(&out_c))
                .ptr(gpu.ptr(&out_w)),
        )?;
        // The atoms come back a slice of cells at a time: the host holds one slice of the
        // n x cap output beside A, not all of it (30 MB at 50,000 cells).
        let mut a = Vec::with_capacity(n);
        for c0 in (0..n).step_by(A_DOWNLOAD_CELLS) {
            let cn = A_DOWNLOAD_CELLS.min(n - c0);
            let cs: Vec<i32> = gpu.download_range(&out_c, c0 * cap, cn * cap)?;
            let ws: Vec<f64> = gpu.download_range(&out_w, c0 * cap, cn * cap)?;
            for i in 0..cn {
                // Counted first, so each cell's atoms are allocated at their size.
                let row = &cs[i * cap..(i + 1) * cap];
                let len = row.iter().take_while(|&&c| c >= 0).count();
                if len == 0 && steps > 0 {
                    return Err(Error::device(
                        "the GPU A update",
                        format!("cell {} came back without atoms", c0 + i),
                    ));
                }
                let mut atoms: SpVec = (0..len).map(|j| (row[j] as u32, ws[i * cap + j])).collect();
                atoms.sort_unstable_by_key(|a| a.0);
                a.push(atoms);
            }
        }
        Ok(a)
    }

    /// V[:, c0..c0 + nc] -= A^T's columns (A by cell), then G = M (M V) for those columns:
    /// the gradient chunk of the chunked path and K A^T's chunks for the fused one.
    pub(super) fn minus_a_then_mm(&self, a_d: &Cols, c0: usize, nc: usize) -> Result<()> {
        let (gpu, n, ch) = (self.gpu, self.n, self.chunk);
        gpu.launch(
            &gpu.kernel(&SEACELLS, "seacells_b_asub")?,
            grid_for(n),
            Args::new()
                .ptr(gpu.ptr(&a_d.ptr))
                .ptr(gpu.ptr(&a_d.cell))
                .ptr(gpu.ptr(&a_d.w))
                .i64(n as i64)
                .i64(c0 as i64)
                .i64(nc as i64)
                .i64(ch as i64)
                .ptr(gpu.ptr(&self.v)),
        )?;
        let (vp, wp, gp) = (gpu.ptr(&self.v), gpu.ptr(&self.w), gpu.ptr(&self.g));
        spmm_launch(gpu, self.path, &self.m, nc, vp, ch, wp, ch, 1.0, 0.0, true)?;
        spmm_launch(gpu, self.path, &self.m, nc, wp, ch, gp, ch, 1.0, 0.0, true)
    }

    /// How the B update runs for `nm` archetypes: the fused by-cell kernel with K B kept on
    /// the device up to [`super::gpu_b::max_metacells`] (and while M's two-hop
    /// neighbourhoods fit the K-column expansion), SpMM chunks beyond.
    pub fn b_path(&self, nm: usize) -> BPath {
        if tier(nm).is_some() && expansion_fits(self.two_hop) {
            BPath::Fused(KatSource::Device)
        } else {
            BPath::Chunked
        }
    }

    /// The B update of [`super::fw::update_b`] with its gradient read on the GPU, by the path
    /// [`Solver::b_path`] picks.
    pub fn update_b(
        &self,
        m: &Csr<f64>,
        a: &[SpVec],
        b_prev: &[SpVec],
        steps: usize,
        min_steps: usize,
        gap_tol: f64,
    ) -> Result<BUpdate> {
        let path = self.b_path(b_prev.len());
        self.update_b_on(path, m, a, b_prev, steps, min_steps, gap_tol)
    }

    /// [`Solver::update_b`] by a given path. The fused path takes the CPU's steps around
    /// each pick (so with [`KatSource::Host`] it is the CPU's update bit for bit); the chunked
    /// path's gradient sums run in another order, so near-ties may pick other cells.
    #[allow(clippy::too_many_arguments)]
    pub fn update_b_on(
        &self,
        path: BPath,
        m: &Csr<f64>,
        a: &[SpVec],
        b_prev: &[SpVec],
        steps: usize,
        min_steps: usize,
        gap_tol: f64,
    ) -> Result<BUpdate> {
        match path {
            BPath::Fused(src) => {
                let mut on = GpuSteps::new(self, b_prev.len(), src)?;
                update_b_with(m, a, b_prev, steps, min_steps, gap_tol, &mut on)
            }
            BPath::Chunked => self.update_b_chunked(m, a, b_prev, steps, min_steps, gap_tol),
        }
    }

    fn update_b_chunked(
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
        let ch = self.chunk;
        // t1 = A A^T, dense N x N (as the CPU forms it).
        let t1_d = gpu.upload(&a_at(a, nm))?;
        // A by cell, as given.
        let a_d = Cols::upload(gpu, a)?;
        let rhs = gpu.kernel(&SEACELLS, "seacells_b_rhs")?;
        let pick_k = gpu.kernel(&SEACELLS, "seacells_b_pick")?;
        let gap_k = gpu.kernel(&SEACELLS, "seacells_b_gap")?;
        // Partial argmins: PICK_SPAN cells per block.
        let parts = n.div_ceil(PICK_SPAN);
        let pv = gpu.alloc_zeroed::<f64>(ch * parts)?;
        let pi = gpu.alloc_zeroed::<i64>(ch * parts)?;
        let pick_d = gpu.upload(&vec![-1i32; nm])?;
        let gap_d = gpu.alloc_zeroed::<f64>(nm)?;
        let mut b: Vec<SpVec> = b_prev.to_vec();
        let (mut gap0, mut taken) = (0.0, 0);
        let elems = grid_for(n * ch);
        for t in 0..steps {
            // B by column (for the gap) and by cell (for V).
            let bc = Cols::upload(gpu, &b)?;
            let br = Cols::upload_transposed(gpu, &b, n)?;
            for c0 in (0..nm).step_by(ch) {
                let nc = ch.min(nm - c0);
                gpu.launch(
                    &rhs,
                    elems,
                    Args::new()
                        .ptr(gpu.ptr(&br.ptr))
                        .ptr(gpu.ptr(&br.cell))
                        .ptr(gpu.ptr(&br.w))
                        .ptr(gpu.ptr(&t1_d))
                        .i64(nm as i64)
                        .i64(n as i64)
                        .i64(c0 as i64)
                        .i64(nc as i64)
                        .i64(ch as i64)
                        .ptr(gpu.ptr(&self.v)),
                )?;
                self.minus_a_then_mm(&a_d, c0, nc)?;
                let gp = gpu.ptr(&self.g);
                gpu.launch(
                    &pick_k,
                    LaunchShape {
                        grid: [nc as u32, parts as u32, 1],
                        block: [BLOCK, 1, 1],
                        smem: 0,
                        cluster: None,
                        pdl: false,
                    },
                    Args::new()
                        .ptr(gp)
                        .i64(n as i64)
                        .i64(ch as i64)
                        .i64(PICK_SPAN as i64)
                        .ptr(gpu.ptr(&pv))
                        .ptr(gpu.ptr(&pi)),
                )?;
                gpu.launch(
                    &gap_k,
                    grid_for(nc),
                    Args::new()
                        .ptr(gp)
                        .i64(ch as i64)
                        .i64(c0 as i64)
                        .i64(nc as i64)
                        .i64(parts as i64)
                        .ptr(gpu.ptr(&pv))
                        .ptr(gpu.ptr(&pi))
                        .ptr(gpu.ptr(&bc.ptr))
                        .ptr(gpu.ptr(&bc.cell))
                        .ptr(gpu.ptr(&bc.w))
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
        // One part: the chunked path does not split its time.
        Ok(BUpdate {
            b,
            kb,
            steps: taken,
            parts: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::seacells::sparse::transpose;

    /// The counting-sort transpose the GPU A and B updates upload is the library's transpose
    /// in CSR form, empty rows and columns included.
    #[test]
    fn transposed_upload_is_the_transpose() {
        let cols: Vec<SpVec> = vec![
            vec![(0, 1.0), (3, 2.0), (6, 3.0)],
            vec![],
            vec![(3, 4.0), (5, 5.0)],
            vec![(0, 6.0), (6, 7.0)],
        ];
        for n in [7usize, 9] {
            assert_eq!(
                HostCols::transposed(&cols, n),
                HostCols::of(&transpose(&cols, n))
            );
        }
        assert_eq!(
            HostCols::transposed(&[], 3),
            HostCols::of(&[vec![], vec![], vec![]])
        );
    }

    /// The gradient chunk narrows as cells grow so three n x chunk f64 buffers stay within
    /// 32 MiB each, and never below 16 columns.
    #[test]
    fn b_chunk_at_its_bounds() {
        let cells_at = |c: usize| (32usize << 20) / (c * 8);
        assert_eq!(b_chunk(1), B_CHUNK);
        assert_eq!(b_chunk(cells_at(64)), 64);
        assert_eq!(b_chunk(cells_at(64) + 1), 32);
        assert_eq!(b_chunk(cells_at(32)), 32);
        assert_eq!(b_chunk(cells_at(32) + 1), 16);
        assert_eq!(b_chunk(10_000_000), 16);
    }
}
