//! IHT, normalised IHT and HTP: a gradient step, the top K, and for HTP least squares on it.

use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;

use super::super::{Method, Recover};
use super::batch::{grid, Batch, BLOCK};
use super::progress::{Norms, Progress};
use super::Real;
use crate::device::{Args, LaunchShape};
use crate::{Error, Result};

/// IHT (one step for all signals), normalised IHT and HTP (each signal's exact line search
/// along g on its support, or on the top K of g while its estimate is zero); HTP then solves
/// least squares on the new support instead of keeping the thresholded step.
pub fn thresholding<'a, T: Real>(
    b: &Batch<'a, T>,
    req: &Recover,
    p: &mut Progress,
    step: f64,
) -> Result<CudaSlice<T>>
where
    CudaBlas: Gemm<T>,
{
    let (m, n, nb, gpu) = (b.m, b.n, b.nb, b.gpu);
    let k = req.sparsity.unwrap_or(1);
    let normalised = matches!(req.method, Method::Niht | Method::Htp);
    let normal = if req.method == Method::Htp {
        Some(b.normal(k)?)
    } else {
        None
    };
    let missing = || Error::unsupported("top-k of an empty batch");
    let top = b.selector(k)?;
    let zabs = top.input().ok_or_else(missing)?;
    let (mut x, mut xn) = (b.zeros(nb * n)?, b.zeros(nb * n)?);
    let (mut r, mut rn) = (b.zeros(nb * m)?, b.zeros(nb * m)?);
    b.copy(&b.y, &r, nb * m)?;
    let (mut g, z) = (b.zeros(nb * n)?, b.zeros(nb * n)?);
    let nr = Norms::new(gpu, nb)?;
    let mut running = gpu.upload(&p.flags())?;
    // The line search's scratch: g on the support, Phi times it, the top K of g, per-signal steps.
    let mut line = if normalised {
        Some((
            b.zeros(nb * n)?,
            b.zeros(nb * n)?,
            b.zeros(nb * m)?,
            b.selector(k)?,
            gpu.alloc_zeroed::<f64>(nb)?,
            gpu.alloc_zeroed::<f64>(nb)?,
        ))
    } else {
        None
    };
    let mut x_zero = vec![1i32; nb];
    for i in 1..=req.max_iter {
        if !p.any() {
            break;
        }
        b.correlate(&r, &mut g)?;
        let mus = match &mut line {
            None => None,
            Some((gs, gs2, pg, top_g, num, den)) => {
                b.launch(
                    "mask_support",
                    grid(nb * n),
                    Args::new()
                        .ptr(gpu.ptr(&g))
                        .ptr(gpu.ptr(&x))
                        .ptr(gpu.ptr(&*gs))
                        .i64((nb * n) as i64),
                )?;
                let dir = if x_zero.iter().any(|&z| z != 0) {
                    let idx = b.select(&*top_g, &g)?;
                    let zf = gpu.upload(&x_zero)?;
                    b.launch(
                        "restrict",
                        LaunchShape::linear(nb as u32, BLOCK),
                        Args::new()
                            .ptr(gpu.ptr(&g))
                            .ptr(idx)
                            .i64(k as i64)
                            .i64(n as i64)
                            .ptr(gpu.ptr(&zf))
                            .ptr(gpu.ptr(&*gs))
                            .ptr(gpu.ptr(&*gs2)),
                    )?;
                    &*gs2
                } else {
                    &*gs
                };
                b.apply(dir, pg, 1.0, 0.0)?;
                b.norms(dir, None, n, num, &nr.unused)?;
                b.norms(pg, None, m, den, &nr.unused)?;
                let (num, den) = (gpu.download(num, nb)?, gpu.download(den, nb)?);
                let mus: Vec<T> = num
                    .iter()
                    .zip(&den)
                    .map(|(&a, &d)| T::from_f64(if d > 0.0 { a / d } else { step }))
                    .collect();
                Some(gpu.upload(&mus)?)
            }
        };
        b.launch(
            "iht_step",
            grid(nb * n),
            Args::new()
                .ptr(gpu.ptr(&x))
                .ptr(gpu.ptr(&g))
                .scalar(T::from_f64(step))
                .ptr(mus.as_ref().map_or(0, |v| gpu.ptr(v)))
                .ptr(gpu.ptr(&z))
                .ptr(gpu.ptr(zabs))
                .ptr(gpu.ptr(&running))
                .i64(n as i64)
                .i64((nb * n) as i64),
        )?;
        top.enqueue()?;
        let idx = top.outputs().ok_or_else(missing)?.1;
        match &normal {
            Some(ne) => {
                b.copy(&x, &xn, nb * n)?;
                b.lsq(ne, gpu.ptr(idx), k, &running, &xn)?;
            }
            None => {
                gpu.fill_bytes(&xn, 0, nb * n * std::mem::size_of::<T>())?;
                b.launch(
                    "scatter",
                    grid(nb * k),
                    Args::new()
                        .ptr(gpu.ptr(&z))
                        .ptr(gpu.ptr(idx))
                        .i64(k as i64)
                        .i64(n as i64)
                        .i64(nb as i64)
                        .ptr(gpu.ptr(&xn)),
                )?;
            }
        }
        let (r2, x2, d2) = b.measure(&xn, &x, &mut rn, &nr)?;
        std::mem::swap(&mut x, &mut xn);
        std::mem::swap(&mut r, &mut rn);
        for (z, &v) in x_zero.iter_mut().zip(&x2) {
            *z = (v == 0.0) as i32;
        }
        if p.update(i, &r2, &x2, &d2) {
            running = gpu.upload(&p.flags())?;
        }
        if !p.any() {
            break;
        }
    }
    Ok(x)
}
