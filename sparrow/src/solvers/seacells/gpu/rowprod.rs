//! Sparse products with M on the device, by rows: K B and -K A^T as M (M X) in two calls of
//! `seacells_rowcomb`, so the B update neither builds K B on the host (and uploads it) nor
//! fills dense n x chunk columns for K A^T, whose cost grows as n N. A row's sums run in the
//! CPU's order (see seacells.cu), so with M symmetric the rows are those of
//! [`super::super::sparse::kb_cols`] bit for bit.

use cudarc::driver::CudaSlice;

use super::super::sparse::SpVec;
use super::scan_counts;
use super::solver::{Cols, Solver};
use crate::device::{Args, LaunchShape};
use crate::kernels::SEACELLS;
use crate::{Error, Result};

/// Warps per block of `seacells_rowcomb` (RC_WARPS in seacells.cu).
const WARPS: usize = 4;

/// Most columns of a product: a row past the hash set's load takes a dense row of 9 bytes a
/// column in the 227 KiB of shared memory a block may opt into.
pub const ROW_MAX_COLS: usize = 25_000;

/// A sparse matrix by rows on the device (CSR; every array holds at least one entry).
pub(super) struct DevRows {
    pub(super) ptr: CudaSlice<i64>,
    pub(super) col: CudaSlice<i32>,
    pub(super) val: CudaSlice<f64>,
    pub(super) nnz: usize,
}

/// A by-rows operand: (row offsets, column, value).
pub(super) type RowsRef<'x> = (&'x CudaSlice<i64>, &'x CudaSlice<i32>, &'x CudaSlice<f64>);

impl DevRows {
    pub(super) fn as_ref(&self) -> RowsRef<'_> {
        (&self.ptr, &self.col, &self.val)
    }
}

impl Solver<'_> {
    /// sign * M X by rows, X (n rows, `ncols` columns, each row's columns ascending) on the
    /// device; out row p is cell `order[p]`'s row, or cell p's without an order. Rows with more
    /// columns than the hash set holds take a dense row of `ncols` sums; more than
    /// [`ROW_MAX_COLS`] columns are an `Unsupported` error.
    pub(super) fn m_times(
        &self,
        x: RowsRef<'_>,
        ncols: usize,
        order: Option<&CudaSlice<u32>>,
        sign: f64,
    ) -> Result<DevRows> {
        let (gpu, n) = (self.gpu, self.n);
        if ncols > ROW_MAX_COLS {
            return Err(Error::unsupported(format!(
                "sparse products with M over {ncols} columns exceed {ROW_MAX_COLS}"
            )));
        }
        let dm = &self.m;
        let cnt = gpu.alloc_zeroed::<i32>(n.max(1))?;
        let big = gpu.alloc_zeroed::<i32>(n.max(1))?;
        let nbig = gpu.alloc_zeroed::<i32>(1)?;
        let off = gpu.alloc_zeroed::<i64>(n + 1)?;
        let total = gpu.alloc_zeroed::<i64>(1)?;
        let order_ptr = order.map_or(0, |o| gpu.ptr(o));
        let rc = gpu.kernel(&SEACELLS, "seacells_rowcomb")?;
        let rc_big = gpu.kernel(&SEACELLS, "seacells_rowcomb_big")?;
        let grid = LaunchShape::linear(
            n.div_ceil(WARPS).clamp(1, 132 * 32) as u32,
            (WARPS * 32) as u32,
        );
        // What both kernels read first: M, X and the row order.
        let mx_args = || -> Args {
            let mut a = Args::new();
            a.ptr(gpu.ptr(&dm.row_ptr))
                .ptr(gpu.ptr(&dm.col_idx))
                .ptr(gpu.ptr(&dm.values))
                .ptr(gpu.ptr(x.0))
                .ptr(gpu.ptr(x.1))
                .ptr(gpu.ptr(x.2))
                .ptr(order_ptr);
            a
        };
        let small = |fill: i32, out: (u64, u64, u64)| {
            unsafe {
                gpu.launch(
                    &rc,
                    grid,
                    mx_args()
                        .i64(n as i64)
                        .f64(sign)
                        .i32(fill)
                        .ptr(gpu.ptr(&cnt))
                        .ptr(gpu.ptr(&big))
                        .ptr(gpu.ptr(&nbig))
                        .ptr(out.0)
                        .ptr(out.1)
                        .ptr(out.2),
                )
            }
        };
        small(0, (0, 0, 0))?;
        let nb = gpu.download(&nbig, 1)?[0] as usize;
        let dense = |fill: i32, out: (u64, u64, u64)| {
            unsafe {
                gpu.launch(
                    &rc_big,
                    LaunchShape::linear(nb as u32, 256).with_smem((ncols * 9).next_multiple_of(8) as u32),
                    mx_args()
                        .ptr(gpu.ptr(&big))
                        .i64(ncols as i64)
                        .f64(sign)
                        .i32(fill)
                        .ptr(gpu.ptr(&cnt))
                        .ptr(out.0)
                        .ptr(out.1)
                        .ptr(out.2),
                )
            }
        };
        if nb > 0 {
            dense(0, (0, 0, 0))?;
        }
        scan_counts(gpu, &cnt, n, &off, &total)?;
        let nnz = gpu.download(&total, 1)?[0] as usize;
        gpu.ensure_fits((nnz * 12) as u64, "a sparse product with M")?;
        let col = gpu.alloc_zeroed::<i32>(nnz + 1)?;
        let val = gpu.alloc_zeroed::<f64>(nnz + 1)?;
        let out = (gpu.ptr(&off), gpu.ptr(&col), gpu.ptr(&val));
        small(1, out)?;
        if nb > 0 {
            dense(1, out)?;
        }
        Ok(DevRows {
            ptr: off,
            col,
            val,
            nnz,
        })
    }

    /// sign * M (M X) for X given by rows on the host (`rows`, entries by ascending column,
    /// `ncols` columns), out rows in `order` where given: the B update's products, brought
    /// back for tests.
    pub fn m_m_times_rows(
        &self,
        rows: &[SpVec],
        ncols: usize,
        order: Option<&[u32]>,
        sign: f64,
    ) -> Result<Vec<SpVec>> {
        let (gpu, n) = (self.gpu, self.n);
        if rows.len() != n {
            return Err(Error::invalid(
                "rows",
                format!("{} rows for {n} cells", rows.len()),
            ));
        }
        if let Some(o) = order {
            if o.len() != n || o.iter().any(|&i| i as usize >= n) {
                return Err(Error::invalid(
                    "order",
                    format!("must name {n} cells below {n}"),
                ));
            }
        }
        let x = Cols::upload(gpu, rows)?;
        let order_d = order.map(|o| gpu.upload(o)).transpose()?;
        let one = self.m_times((&x.ptr, &x.cell, &x.w), ncols, None, 1.0)?;
        let two = self.m_times(one.as_ref(), ncols, order_d.as_ref(), sign)?;
        two.download(gpu, n)
    }
}

impl DevRows {
    /// The rows on the host.
    pub(super) fn download(&self, gpu: &crate::device::Gpu, rows: usize) -> Result<Vec<SpVec>> {
        let ptr: Vec<i64> = gpu.download(&self.ptr, rows + 1)?;
        let col: Vec<i32> = gpu.download(&self.col, self.nnz)?;
        let val: Vec<f64> = gpu.download(&self.val, self.nnz)?;
        Ok((0..rows)
            .map(|r| {
                (ptr[r] as usize..ptr[r + 1] as usize)
                    .map(|q| (col[q] as u32, val[q]))
                    .collect()
            })
            .collect())
    }
}
