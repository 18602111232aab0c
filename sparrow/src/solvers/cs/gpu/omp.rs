//! Orthogonal matching pursuit: one column per iteration, its Cholesky factor grown one row per column.

use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;

use super::super::{Recover, StopReason};
use super::batch::{grid, Batch, BLOCK};
use super::progress::{Norms, Progress};
use super::Real;
use crate::device::{Args, LaunchShape};
use crate::{Error, Result};

/// OMP: one column per iteration (the largest |g| not yet chosen), least squares on the
/// support so far by a Cholesky factor that grows one row per column, until the residual
/// test or K columns.
pub(super) fn omp<'a, T: Real>(
    b: &Batch<'a, T>,
    req: &Recover,
    p: &mut Progress,
) -> Result<CudaSlice<T>>
where
    CudaBlas: Gemm<T>,
{
    let (m, n, nb, gpu) = (b.m, b.n, b.nb, b.gpu);
    let k = req.sparsity.unwrap_or(1);
    let normal = b.normal(0)?;
    let top = b.selector(1)?;
    let keys = top
        .input()
        .ok_or_else(|| Error::unsupported("top-k of an empty batch"))?;
    gpu.ensure_fits((nb * (k * k + 2 * k) * 8) as u64, "OMP's Cholesky factors")?;
    let sup = gpu.upload(&vec![-1i32; nb * k])?;
    let factor = gpu.alloc_zeroed::<f64>(nb * k * k)?;
    let (v, z) = (
        gpu.alloc_zeroed::<f64>(nb * k)?,
        gpu.alloc_zeroed::<f64>(nb * k)?,
    );
    let x = b.zeros(nb * n)?;
    let mut r = b.zeros(nb * m)?;
    b.copy(&b.y, &r, nb * m)?;
    let mut g = b.zeros(nb * n)?;
    let nr = Norms::new(gpu, nb)?;
    let mut running = gpu.upload(&p.flags())?;
    let last = k.min(req.max_iter);
    for i in 1..=last {
        if !p.any() {
            break;
        }
        b.correlate(&r, &mut g)?;
        b.launch(
            "abs_keys",
            grid(nb * n),
            Args::new()
                .ptr(gpu.ptr(&g))
                .ptr(gpu.ptr(keys))
                .i64((nb * n) as i64),
        )?;
        if i > 1 {
            b.launch(
                "omp_mask",
                grid(nb * (i - 1)),
                Args::new()
                    .ptr(gpu.ptr(&sup))
                    .i64(k as i64)
                    .i64((i - 1) as i64)
                    .i64(n as i64)
                    .i64(nb as i64)
                    .ptr(gpu.ptr(keys)),
            )?;
        }
        top.enqueue()?;
        let pick = top
            .outputs()
            .ok_or_else(|| Error::unsupported("top-k of an empty batch"))?
            .1;
        b.launch(
            "omp_chol",
            LaunchShape::linear(nb.div_ceil(8) as u32, BLOCK),
            Args::new()
                .ptr(gpu.ptr(&normal.gram))
                .ptr(gpu.ptr(&normal.cy))
                .ptr(gpu.ptr(pick))
                .ptr(gpu.ptr(&sup))
                .i64(k as i64)
                .i64(i as i64)
                .i64(n as i64)
                .i64(nb as i64)
                .ptr(gpu.ptr(&running))
                .ptr(gpu.ptr(&factor))
                .ptr(gpu.ptr(&v))
                .ptr(gpu.ptr(&z))
                .ptr(gpu.ptr(&x)),
        )?;
        b.residual(&x, &mut r)?;
        b.norms(&r, None, m, &nr.r2, &nr.unused)?;
        let r2: Vec<f64> = gpu.download(&nr.r2, nb)?;
        if p.update_residual(i, &r2) {
            running = gpu.upload(&p.flags())?;
        }
    }
    for s in 0..nb {
        if p.running[s] {
            p.iterations[s] = last;
            p.stop[s] = if last >= k {
                StopReason::SparsityReached
            } else {
                StopReason::MaxIterations
            };
        }
    }
    Ok(x)
}
