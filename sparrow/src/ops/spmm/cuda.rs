//! Host side of the GPU SpMM: argument marshalling and the launch. Enqueues on the GPU's
//! stream and does not wait.

use super::plan::GpuPath;
use crate::device::{Args, DeviceCsr, DeviceDense, Gpu};
use crate::kernels::SPMM;
use crate::{Result, Scalar};

/// Enqueues `C = alpha * A * B + beta * C` with the kernel of `path`. B and C are described by
/// raw device addresses and leading dimensions so SpMV can pass vectors.
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch<T: Scalar>(
    gpu: &Gpu,
    path: GpuPath,
    a: &DeviceCsr<T>,
    n: usize,
    b: u64,
    ldb: usize,
    c: u64,
    ldc: usize,
    alpha: T,
    beta: T,
) -> Result<()> {
    if a.nrows == 0 || n == 0 {
        return Ok(());
    }
    let kernel = gpu.kernel(&SPMM, &path.kernel_name(T::NAME))?;
    let shape = path.shape(a.nrows)?;
    let mut args = Args::new();
    args.i64(a.nrows as i64)
        .i32(n as i32)
        .ptr(gpu.ptr(&a.row_ptr))
        .ptr(gpu.ptr(&a.col_idx))
        .ptr(gpu.ptr(&a.values))
        .ptr(b)
        .i64(ldb as i64)
        .ptr(c)
        .i64(ldc as i64)
        .scalar(alpha)
        .scalar(beta);
    gpu.launch(&kernel, shape, &mut args)
}

/// Enqueues SpMM on device-resident matrices.
pub(crate) fn spmm<T: Scalar>(
    gpu: &Gpu,
    path: GpuPath,
    alpha: T,
    a: &DeviceCsr<T>,
    b: &DeviceDense<T>,
    beta: T,
    c: &mut DeviceDense<T>,
) -> Result<()> {
    let (bp, cp) = (gpu.ptr(&b.buf), gpu.ptr(&c.buf));
    launch(gpu, path, a, b.ncols, bp, b.ld, cp, c.ld, alpha, beta)
}
