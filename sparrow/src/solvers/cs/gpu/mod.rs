//! The batched solvers on the GPU: IHT, HTP, CoSaMP, subspace pursuit, OMP, AMP and FISTA
//! (normalised IHT runs on the CPU; see [`supported`]).
//! Their iterations are products with Phi over the whole batch (cuBLAS GEMMs) and fused
//! kernels (`cs.cu`); every top-K selection is sparrow's segmented top-k on magnitudes, one
//! segment per signal, ties to the smaller index as on the CPU. Least squares on a support
//! (HTP, CoSaMP, SP, OMP) gathers its normal equations from Phi^T Phi and Phi^T Y, formed once
//! per batch by two GEMMs, and solves them by Cholesky in f64 in one block per signal. Every signal stops on its own under the CPU solvers' tests
//! (the per-signal norms come back each iteration), and a stopped signal's estimate is
//! frozen, so each signal runs the iterations its CPU solve runs.
//!
//! Storage: Phi row-major (m x n), which cuBLAS sees as the column-major Phi^T (ld n); signals
//! one after another (signal b's n entries at b n, its m measurements at b m), which cuBLAS
//! sees as column-major n x B and m x B matrices.

use cudarc::cublas::{CudaBlas, Gemm};
use cudarc::driver::CudaSlice;

use super::cpu::Solved;
use super::{Method, Recover};
use crate::device::Gpu;
use crate::ops::topk::Key;
use crate::{Result, Scalar};

/// Largest support whose normal equations (in f64) the GPU solves in shared memory (160^2
/// doubles is 200 KiB); larger ones are solved in global memory, slower.
pub const LSQ_MAX: usize = 160;
/// Largest support the GPU least squares takes at all.
pub const LSQ_GLOBAL_MAX: usize = 4096;
/// Longest signal whose Gram matrix Phi^T Phi (n x n) the GPU forms.
pub const GRAM_MAX_N: usize = 16_384;

/// Whether `method` runs on the GPU for sparsity `k` and signal length `n`, or why not.
pub fn supported(method: Method, k: Option<usize>, n: usize) -> std::result::Result<(), String> {
    let k = k.unwrap_or(0);
    let support = match method {
        Method::Iht | Method::Niht | Method::Amp | Method::Fista => return Ok(()),
        Method::Htp | Method::Omp => k,
        Method::Sp => 2 * k,
        Method::Cosamp => 3 * k,
    };
    if support > LSQ_GLOBAL_MAX {
        return Err(format!(
            "its least squares on {support} columns exceed the GPU's {LSQ_GLOBAL_MAX}"
        ));
    }
    if n > GRAM_MAX_N {
        return Err(format!(
            "its Gram matrix for n = {n} exceeds the GPU's n <= {GRAM_MAX_N}"
        ));
    }
    Ok(())
}

/// The scalar types the GPU solvers run in.
pub trait Real: Scalar + Key {}
impl Real for f32 {}
impl Real for f64 {}

mod amp;
mod batch;
mod fista;
mod omp;
mod progress;
mod pursuit;
mod thresholding;

pub(crate) use batch::gemm;
use progress::Norms;
#[cfg(not(feature = "testing"))]
pub(crate) use {batch::Batch, progress::Progress, thresholding::thresholding};
/// The batch, its stop tests and the thresholding loop, which `sparrow bench cs` times alone.
#[cfg(feature = "testing")]
pub use {batch::Batch, progress::Progress, thresholding::thresholding};

/// Solves every signal (`ys[b]`, m measurements each) with the request's method on the GPU in
/// precision `T`. `phi` is row-major m x n; `step` is IHT's relaxed step or FISTA's 1 / L.
pub fn solve<T: Real>(
    gpu: &Gpu,
    req: &Recover,
    m: usize,
    n: usize,
    phi: &[f64],
    ys: &[Vec<f64>],
    step: f64,
) -> Result<Vec<Solved>>
where
    CudaBlas: Gemm<T>,
{
    let b = Batch::<T>::new(gpu, m, n, phi, ys)?;
    let mut p = Progress::new(ys, req.tol, req.max_iter);
    let x = match req.method {
        Method::Iht | Method::Niht | Method::Htp => thresholding(&b, req, &mut p, step)?,
        Method::Amp => amp::amp(&b, req, &mut p)?,
        Method::Fista => fista::fista(&b, req, &mut p, step)?,
        Method::Cosamp | Method::Sp => pursuit::pursuit(&b, req, &mut p)?,
        Method::Omp => omp::omp(&b, req, &mut p)?,
    };
    let x: Vec<T> = gpu.download(&x, b.nb * n)?;
    Ok((0..b.nb)
        .map(|s| Solved {
            x: x[s * n..(s + 1) * n].iter().map(|v| v.to_f64()).collect(),
            iterations: p.iterations[s],
            stop: p.stop[s],
            residual_norm: p.r_norm[s],
        })
        .collect())
}

/// Downloads the iteration's norms, applies the stop tests and re-uploads the flags when a
/// signal stopped. Returns false when every signal has stopped.
fn settle(
    b: &Batch<'_, impl Real>,
    p: &mut Progress,
    nr: &Norms,
    i: usize,
    running: &mut CudaSlice<i32>,
) -> Result<bool> {
    let (r2, x2, d2) = nr.take(b.gpu, b.nb)?;
    if p.update(i, &r2, &x2, &d2) {
        *running = b.gpu.upload(&p.flags())?;
    }
    Ok(p.any())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host-side stop tests (no GPU needed): a signal whose residual norm is NaN, past the
    /// divergence bound, or whose estimate's norm overflowed stops at that iteration, so the
    /// estimates' check in `Recover::run` reports it there; the others run on.
    #[test]
    fn diverging_signals_stop_at_their_iteration() {
        let ys = vec![vec![1.0, 0.0], vec![3.0, 4.0], vec![0.0, 2.0]];
        let mut p = Progress::new(&ys, 1e-6, 100);
        assert!(p.update(2, &[f64::NAN, 1.0, 1.0], &[1.0; 3], &[1.0; 3]));
        assert_eq!(p.running, vec![false, true, true]);
        assert_eq!(p.iterations[0], 2);
        assert!(p.r_norm[0].is_nan());
        let far = (5.0 * 2.0 * super::super::DIVERGENCE_FACTOR).powi(2);
        assert!(p.update(3, &[0.0, far, 1.0], &[1.0, 1.0, f64::INFINITY], &[1.0; 3]));
        assert_eq!(p.running, vec![false, false, false]);
        assert_eq!((p.iterations[1], p.iterations[2]), (3, 3));
        assert!(p.r_norm[1] > 5.0 * super::super::DIVERGENCE_FACTOR);
        assert_eq!(p.r_norm[2], f64::INFINITY);
        // A residual within the bound that does not shrink keeps running.
        let mut p = Progress::new(&ys, 1e-6, 100);
        assert!(!p.update(1, &[4.0, 100.0, 9.0], &[1.0; 3], &[1.0; 3]));
        assert!(p.update_residual(2, &[f64::INFINITY, 1.0, 1.0]));
        assert_eq!(p.running, vec![false, true, true]);
        assert_eq!(p.iterations[0], 2);
    }

    /// The GPU takes every method up to the least squares' and the Gram matrix's limits, at
    /// them exactly, and names the limit one past them.
    #[test]
    fn supported_at_its_bounds() {
        for m in [Method::Iht, Method::Niht, Method::Amp, Method::Fista] {
            assert!(supported(m, Some(10_000), 1 << 20).is_ok(), "{m:?}");
        }
        let k = LSQ_GLOBAL_MAX / 3;
        assert!(supported(Method::Cosamp, Some(k), 1000).is_ok());
        let e = supported(Method::Cosamp, Some(k + 1), 1000).unwrap_err();
        assert!(e.contains(&format!("{}", 3 * (k + 1))), "{e}");
        assert!(supported(Method::Sp, Some(LSQ_GLOBAL_MAX / 2), 1000).is_ok());
        assert!(supported(Method::Sp, Some(LSQ_GLOBAL_MAX / 2 + 1), 1000).is_err());
        assert!(supported(Method::Omp, Some(LSQ_GLOBAL_MAX), 1000).is_ok());
        assert!(supported(Method::Htp, Some(LSQ_GLOBAL_MAX + 1), 1000).is_err());
        assert!(supported(Method::Htp, Some(8), GRAM_MAX_N).is_ok());
        let e = supported(Method::Htp, Some(8), GRAM_MAX_N + 1).unwrap_err();
        assert!(e.contains(&format!("{}", GRAM_MAX_N + 1)), "{e}");
    }
}
