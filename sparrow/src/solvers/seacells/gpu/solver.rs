//! The kernel matrix on the GPU and the gradient-chunk scratch every B update shares.

use cudarc::driver::CudaSlice;

use super::super::sparse::SpVec;
use super::b_layout::{two_hop_bound, KatSource};
use super::grid_for;
use crate::device::{Args, Gpu};
use crate::kernels::SEACELLS;
use crate::matrix::Csr;
use crate::ops::products::spmm::SumOrder;
use crate::ops::products::{PreparedCsr, RowStats, Spmm};
use crate::Result;

/// Most gradient columns the B update computes per pass (three n x chunk f64 buffers); fewer
/// for many cells, so a chunk's SpMM input stays in L2 (see [`b_chunk`]).
pub const B_CHUNK: usize = 64;
/// Gradient columns per pass for n cells: 64 while a 64-column f64 chunk is at most 32 MiB,
/// then 32, then 16.
pub fn b_chunk(n: usize) -> usize {
    let mut c = B_CHUNK;
    while c > 16 && n * c * 8 > 32 << 20 {
        c /= 2;
    }
    c
}

/// The B update's products with M: each column's sums in entry order, as the CPU fit's.
pub fn kernel_products() -> Spmm<f64> {
    Spmm::new().order(SumOrder::Entry)
}

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
    pub(super) m: PreparedCsr<f64>,
    pub(super) mm: Spmm<f64>,
    pub(super) n: usize,
    pub(super) chunk: usize,
    pub(super) v: CudaSlice<f64>,
    pub(super) w: CudaSlice<f64>,
    pub(super) g: CudaSlice<f64>,
    /// The most cells two hops from any cell (see [`super::b_layout::two_hop_bound`]).
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

    pub(super) fn upload_transposed(gpu: &Gpu, cols: &[SpVec], n: usize) -> Result<Self> {
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
        let stats = RowStats::of(m);
        let mm = kernel_products();
        // Only the formats its path reads: the row kernels read none beyond the CSR arrays.
        let formats = mm.formats_on(gpu, &stats, chunk)?;
        let dm = PreparedCsr::upload_for(gpu, m, stats, formats)?;
        Ok(Solver {
            gpu,
            mm,
            n,
            chunk,
            v: gpu.alloc_zeroed(n * chunk)?,
            w: gpu.alloc_zeroed(n * chunk)?,
            g: gpu.alloc_zeroed(n * chunk)?,
            m: dm,
            two_hop: two_hop_bound(m),
        })
    }

    /// V[:, c0..c0 + nc] -= A^T's columns (A by cell), then G = M (M V) for those columns:
    /// the gradient chunk of the chunked path and K A^T's chunks for the fused one.
    pub(super) fn minus_a_then_mm(&self, a_d: &Cols, c0: usize, nc: usize) -> Result<()> {
        let (gpu, n, ch) = (self.gpu, self.n, self.chunk);
        unsafe {
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
            )
        }?;
        let (v, w, g) = ((&self.v, ch), (&self.w, ch), (&self.g, ch));
        self.mm.run_device_cols(gpu, &self.m, nc, v, w)?;
        self.mm.run_device_cols(gpu, &self.m, nc, w, g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::seacells::rows::transpose;

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
