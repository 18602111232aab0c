//! Matrices resident on a GPU, so a sequence of ops can run without host round trips.

use cudarc::driver::CudaSlice;

use super::Gpu;
use crate::matrix::{Csr, Dense, RowStats};
use crate::{Error, Result, Scalar};

/// A CSR matrix on the GPU, with the row statistics plans need (computed on upload).
pub struct DeviceCsr<T> {
    /// Rows.
    pub nrows: usize,
    /// Columns.
    pub ncols: usize,
    /// Row-length statistics.
    pub stats: RowStats,
    /// Row pointers (`nrows + 1`).
    pub row_ptr: CudaSlice<i64>,
    /// Column indices.
    pub col_idx: CudaSlice<i32>,
    /// Values.
    pub values: CudaSlice<T>,
}

impl<T: Scalar> DeviceCsr<T> {
    /// Copies `a` to the GPU.
    pub fn upload(gpu: &Gpu, a: &Csr<T>) -> Result<Self> {
        Ok(DeviceCsr {
            nrows: a.nrows(),
            ncols: a.ncols(),
            stats: a.row_stats(),
            row_ptr: gpu.upload(a.row_ptr())?,
            col_idx: gpu.upload(a.col_idx())?,
            values: gpu.upload(a.values())?,
        })
    }
}

/// A row-major dense matrix on the GPU with a leading dimension.
pub struct DeviceDense<T> {
    /// Rows.
    pub nrows: usize,
    /// Columns.
    pub ncols: usize,
    /// Leading dimension.
    pub ld: usize,
    /// The buffer (at least one element, so empty matrices have an address).
    pub buf: CudaSlice<T>,
}

impl<T: Scalar> DeviceDense<T> {
    /// Copies `m` to the GPU, padding included.
    pub fn upload(gpu: &Gpu, m: &Dense<T>) -> Result<Self> {
        Ok(DeviceDense {
            nrows: m.nrows(),
            ncols: m.ncols(),
            ld: m.ld(),
            buf: gpu.upload(m.data())?,
        })
    }

    /// Copies the matrix back (waits for the stream).
    pub fn download(&self, gpu: &Gpu) -> Result<Dense<T>> {
        let len = Dense::<T>::required_len(self.nrows, self.ncols, self.ld)
            .ok_or_else(|| Error::invalid("ld", "size overflows"))?;
        let data = gpu.download(&self.buf, len)?;
        Dense::new(self.nrows, self.ncols, self.ld, data)
    }
}
