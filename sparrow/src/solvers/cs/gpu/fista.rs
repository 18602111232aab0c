//! FISTA: soft-thresholded gradient steps with Nesterov momentum.

use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;

use super::super::Recover;
use super::batch::{grid, Batch};
use super::progress::{Norms, Progress};
use super::{settle, Real};
use crate::device::Args;
use crate::Result;

pub(super) fn fista<'a, T: Real>(
    b: &Batch<'a, T>,
    req: &Recover,
    p: &mut Progress,
    step: f64,
) -> Result<CudaSlice<T>>
where
    CudaBlas: Gemm<T>,
{
    let (m, n, nb, gpu) = (b.m, b.n, b.nb, b.gpu);
    let lambda = req.lambda.unwrap_or(0.0);
    let (mut x, mut xn) = (b.zeros(nb * n)?, b.zeros(nb * n)?);
    let (mut w, mut wn) = (b.zeros(nb * n)?, b.zeros(nb * n)?);
    let (mut rw, mut px, mut g) = (b.zeros(nb * m)?, b.zeros(nb * m)?, b.zeros(nb * n)?);
    let nr = Norms::new(gpu, nb)?;
    let mut running = gpu.upload(&p.flags())?;
    let mut t = 1.0f64;
    for i in 1..=req.max_iter {
        if !p.any() {
            break;
        }
        b.residual(&w, &mut rw)?;
        b.correlate(&rw, &mut g)?;
        let t_new = (1.0 + (1.0 + 4.0 * t * t).sqrt()) / 2.0;
        b.launch(
            "fista",
            grid(nb * n),
            Args::new()
                .ptr(gpu.ptr(&w))
                .ptr(gpu.ptr(&g))
                .ptr(gpu.ptr(&x))
                .scalar(T::from_f64(step))
                .scalar(T::from_f64(lambda))
                .scalar(T::from_f64((t - 1.0) / t_new))
                .ptr(gpu.ptr(&running))
                .i64(n as i64)
                .ptr(gpu.ptr(&xn))
                .ptr(gpu.ptr(&wn))
                .i64((nb * n) as i64),
        )?;
        t = t_new;
        b.apply(&xn, &mut px, 1.0, 0.0)?;
        b.norms(&b.y, Some(&px), m, &nr.unused, &nr.r2)?;
        b.norms(&xn, Some(&x), n, &nr.x2, &nr.d2)?;
        std::mem::swap(&mut x, &mut xn);
        std::mem::swap(&mut w, &mut wn);
        if !settle(b, p, &nr, i, &mut running)? {
            break;
        }
    }
    Ok(x)
}
