//! The user's matrices resident on a GPU, so a sequence of ops can run without host round
//! trips. Operations that read a matrix through formats of their own wrap these (the products'
//! [`PreparedCsr`](crate::ops::products::prepared::PreparedCsr)).

use cudarc::driver::CudaSlice;

use super::Gpu;
use crate::matrix::{Csr, Dense};
use crate::{Error, Result, Scalar};

/// Entries the column indices and values of an uploaded CSR matrix are padded to a multiple of,
/// so kernels may read a row's entries as aligned 4-entry vectors (`spmm_avec_*`, the SpMV
/// work blocks) without running past the buffers.
pub const VEC_ENTRIES: usize = 4;

/// A CSR matrix's arrays on the GPU.
pub struct DeviceCsr<T> {
    /// Rows.
    pub nrows: usize,
    /// Columns.
    pub ncols: usize,
    /// Row pointers (`nrows + 1`).
    pub row_ptr: CudaSlice<i64>,
    /// Column indices, padded to a multiple of [`VEC_ENTRIES`].
    pub col_idx: CudaSlice<i32>,
    /// Values, padded like the column indices.
    pub values: CudaSlice<T>,
}

impl<T: Scalar> DeviceCsr<T> {
    /// Copies `a`'s arrays to the GPU.
    pub fn upload(gpu: &Gpu, a: &Csr<T>) -> Result<Self> {
        Ok(DeviceCsr {
            nrows: a.nrows(),
            ncols: a.ncols(),
            row_ptr: gpu.upload(a.row_ptr())?,
            col_idx: gpu.upload_padded(a.col_idx(), VEC_ENTRIES)?,
            values: gpu.upload_padded(a.values(), VEC_ENTRIES)?,
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
