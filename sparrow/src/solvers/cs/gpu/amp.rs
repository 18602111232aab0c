//! Approximate message passing: soft thresholding at a level set by the residual, with the Onsager term.

use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;

use super::super::Recover;
use super::batch::{grid, Batch, BLOCK};
use super::progress::{Norms, Progress};
use super::{settle, Real};
use crate::device::{Args, LaunchShape};
use crate::Result;

pub(super) fn amp<'a, T: Real>(
    b: &Batch<'a, T>,
    req: &Recover,
    p: &mut Progress,
) -> Result<CudaSlice<T>>
where
    CudaBlas: Gemm<T>,
{
    let (m, n, nb, gpu) = (b.m, b.n, b.nb, b.gpu);
    let (mut x, mut xn) = (b.zeros(nb * n)?, b.zeros(nb * n)?);
    let (z, zn, mut px) = (b.zeros(nb * m)?, b.zeros(nb * m)?, b.zeros(nb * m)?);
    gpu.copy_bytes(&b.y, &z, nb * m * std::mem::size_of::<T>())?;
    let mut g = b.zeros(nb * n)?;
    let nr = Norms::new(gpu, nb)?;
    let z2 = gpu.alloc_zeroed::<f64>(nb)?;
    let mut running = gpu.upload(&p.flags())?;
    let sqrt_m = (m as f64).sqrt();
    let tau = req.amp_tau(m, n);
    for i in 1..=req.max_iter {
        if !p.any() {
            break;
        }
        b.correlate(&z, &mut g)?;
        b.norms(&z, None, m, &z2, &nr.unused)?;
        let theta: Vec<T> = gpu
            .download(&z2, nb)?
            .iter()
            .map(|&s| T::from_f64(tau * s.sqrt() / sqrt_m))
            .collect();
        let theta = gpu.upload(&theta)?;
        b.launch(
            "amp_step",
            grid(nb * n),
            Args::new()
                .ptr(gpu.ptr(&x))
                .ptr(gpu.ptr(&g))
                .ptr(gpu.ptr(&theta))
                .ptr(gpu.ptr(&running))
                .i64(n as i64)
                .ptr(gpu.ptr(&xn))
                .i64((nb * n) as i64),
        )?;
        b.apply(&xn, &mut px, 1.0, 0.0)?;
        b.launch(
            "amp_residual",
            LaunchShape::linear(nb as u32, BLOCK),
            Args::new()
                .ptr(gpu.ptr(&b.y))
                .ptr(gpu.ptr(&px))
                .ptr(gpu.ptr(&xn))
                .ptr(gpu.ptr(&z))
                .ptr(gpu.ptr(&zn))
                .i64(m as i64)
                .i64(n as i64),
        )?;
        b.launch(
            "keep_running",
            grid(nb * m),
            Args::new()
                .ptr(gpu.ptr(&zn))
                .ptr(gpu.ptr(&z))
                .ptr(gpu.ptr(&running))
                .i64(m as i64)
                .i64((nb * m) as i64),
        )?;
        b.norms(&b.y, Some(&px), m, &nr.unused, &nr.r2)?;
        b.norms(&xn, Some(&x), n, &nr.x2, &nr.d2)?;
        std::mem::swap(&mut x, &mut xn);
        if !settle(b, p, &nr, i, &mut running)? {
            break;
        }
    }
    Ok(x)
}
