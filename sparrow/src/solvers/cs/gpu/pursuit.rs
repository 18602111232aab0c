//! CoSaMP and subspace pursuit: widen the support by the top of the correlation, solve, prune.

use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;

use super::super::{Method, Recover};
use super::batch::{grid, Batch, BLOCK};
use super::progress::{Norms, Progress};
use super::Real;
use crate::device::{Args, LaunchShape};
use crate::kernels::CS;
use crate::{Error, Result};

/// CoSaMP (2K new columns, the estimate pruned to the top K of the least squares) and
/// subspace pursuit (K new columns, least squares again on the pruned support).
pub(super) fn pursuit<'a, T: Real>(
    b: &Batch<'a, T>,
    req: &Recover,
    p: &mut Progress,
) -> Result<CudaSlice<T>>
where
    CudaBlas: Gemm<T>,
{
    let (m, n, nb, gpu) = (b.m, b.n, b.nb, b.gpu);
    let k = req.sparsity.unwrap_or(1);
    let cosamp = req.method == Method::Cosamp;
    let widen = if cosamp { 2 * k } else { k };
    let smax = k + widen;
    let normal = b.normal(smax)?;
    let (top_g, top_b) = (b.selector(widen)?, b.selector(k)?);
    let support = gpu.upload(&vec![-1i32; nb * k])?;
    let merged = gpu.alloc_zeroed::<i32>(nb * smax)?;
    let (mut x, mut xn) = (b.zeros(nb * n)?, b.zeros(nb * n)?);
    let (mut r, mut rn) = (b.zeros(nb * m)?, b.zeros(nb * m)?);
    b.copy(&b.y, &r, nb * m)?;
    let (mut g, lsq_b) = (b.zeros(nb * n)?, b.zeros(nb * n)?);
    let nr = Norms::new(gpu, nb)?;
    let mut running = gpu.upload(&p.flags())?;
    let union = gpu.kernel(&CS, "cs_union")?;
    for i in 1..=req.max_iter {
        if !p.any() {
            break;
        }
        b.correlate(&r, &mut g)?;
        let idx_g = b.select(&top_g, &g)?;
        unsafe {
            gpu.launch(
                &union,
                grid(nb),
                Args::new()
                    .ptr(gpu.ptr(&support))
                    .i64(k as i64)
                    .ptr(idx_g)
                    .i64(widen as i64)
                    .i64(nb as i64)
                    .ptr(gpu.ptr(&merged))
                    .i64(smax as i64),
            )
        }?;
        b.lsq(&normal, gpu.ptr(&merged), smax, &running, &lsq_b)?;
        let idx_b = b.select(&top_b, &lsq_b)?;
        if cosamp {
            b.launch(
                "restrict",
                LaunchShape::linear(nb as u32, BLOCK),
                Args::new()
                    .ptr(gpu.ptr(&lsq_b))
                    .ptr(idx_b)
                    .i64(k as i64)
                    .i64(n as i64)
                    .ptr(gpu.ptr(&running))
                    .ptr(gpu.ptr(&x))
                    .ptr(gpu.ptr(&xn)),
            )?;
        } else {
            b.copy(&x, &xn, nb * n)?;
            b.lsq(&normal, idx_b, k, &running, &xn)?;
        }
        // The pruned support becomes the next iteration's (stopped signals no longer use it).
        let sel = top_b
            .outputs()
            .ok_or_else(|| Error::unsupported("top-k of an empty batch"))?
            .1;
        gpu.copy_bytes(sel, &support, nb * k * 4)?;
        let (r2, x2, d2) = b.measure(&xn, &x, &mut rn, &nr)?;
        let mut changed = false;
        if !cosamp {
            if let Some(flags) = p.sp_revert(i, &r2) {
                let f = gpu.upload(&flags)?;
                b.copy_flagged(&x, &xn, &f, n)?;
                b.copy_flagged(&r, &rn, &f, m)?;
                changed = true;
            }
        }
        changed |= p.update(i, &r2, &x2, &d2);
        if changed {
            running = gpu.upload(&p.flags())?;
        }
        std::mem::swap(&mut x, &mut xn);
        std::mem::swap(&mut r, &mut rn);
        if !p.any() {
            break;
        }
    }
    Ok(x)
}
