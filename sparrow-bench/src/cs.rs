//! Benchmark of batched compressed sensing: IHT on B signals (Gaussian Phi, K-sparse planted
//! signals), time per iteration on the GPU beside the two cuBLAS GEMMs each iteration needs,
//! and the CPU backend's time per iteration on a subset of the signals, scaled to the batch
//! (the signals are independent, so the CPU's cost is linear in their number).

use std::time::Instant;

use cudarc::cublas::{CudaBlas, Gemm};

use super::timing::time_gpu;
use sparrow::device::Gpu;
use sparrow::solvers::cs::data::{gaussian_phi, sparse_signals};
use sparrow::solvers::cs::gpu::{Batch, Progress, Real};
use sparrow::solvers::cs::linalg::Phi;
use sparrow::solvers::cs::{cpu, Method, Recover};
use sparrow::Result;

/// One measured configuration.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CsRecord {
    /// Measurements per signal.
    pub m: usize,
    /// Signal length.
    pub n: usize,
    /// Sparsity.
    pub k: usize,
    /// Signals in the batch.
    pub batch: usize,
    /// The GPU's precision.
    pub dtype: &'static str,
    /// GPU times.
    pub gpu: IhtTiming,
    /// IHT iteration over the two GEMMs (target at most 1.5).
    pub ratio_to_gemms: f64,
    /// CPU time per iteration for the whole batch, ms (scaled from `cpu_signals`).
    pub cpu_iteration_ms: Option<f64>,
    /// Signals the CPU time was measured on.
    pub cpu_signals: usize,
    /// The architecture-specific kernels beside the plain ones (f32).
    pub kernels: Option<KernelTimes>,
}

/// The architecture-specific kernels beside their plain forms (ms, median of CUDA-event
/// timings): the IHT step over the whole batch, and correlate for one signal.
#[derive(Clone, Debug, serde::Serialize)]
pub struct KernelTimes {
    /// Plain IHT step (z = x + mu g and |z|) over B n items.
    pub iht_step_ms: f64,
    /// The same with x and g staged by cp.async.
    pub iht_step_async_ms: f64,
    /// Plain correlate (Phi^T r) of one signal.
    pub correlate_ms: f64,
    /// The same with rows staged by TMA bulk copies (sm_90), when the device has them.
    pub correlate_tma_ms: Option<f64>,
    /// The same from FP8 e4m3 Phi with per-row scales (sm_89+), when the device has them.
    pub correlate_fp8_ms: Option<f64>,
}

fn time_kernels(gpu: &Gpu, m: usize, n: usize, batch: usize, phi: &[f64]) -> Result<KernelTimes> {
    use sparrow::device::{Args, LaunchShape};
    use sparrow::kernels::CS;
    let items = batch * n;
    let x = gpu.upload(
        &(0..items)
            .map(|i| (i % 97) as f32 * 0.01)
            .collect::<Vec<f32>>(),
    )?;
    let g = gpu.upload(
        &(0..items)
            .map(|i| (i % 89) as f32 * -0.01)
            .collect::<Vec<f32>>(),
    )?;
    let (z, za) = (
        gpu.alloc_zeroed::<f32>(items)?,
        gpu.alloc_zeroed::<f32>(items)?,
    );
    let grid = LaunchShape::linear(items.div_ceil(256).min(1 << 20) as u32, 256);
    // Median ms of one kernel launched with the arguments `args` builds.
    let time = |name: &str, shape: LaunchShape, args: &dyn Fn(&mut Args)| -> Result<f64> {
        let k = gpu.kernel(&CS, name)?;
        Ok(time_gpu(gpu, 2, 20, || {
            let mut a = Args::new();
            args(&mut a);
            unsafe { gpu.launch(&k, shape, &mut a) }
        })?
        .median_ms)
    };
    let step = |name: &str, shape: LaunchShape| {
        time(name, shape, &|a: &mut Args| {
            a.ptr(gpu.ptr(&x))
                .ptr(gpu.ptr(&g))
                .f32(0.5)
                .ptr(0)
                .ptr(gpu.ptr(&z))
                .ptr(gpu.ptr(&za))
                .ptr(0)
                .i64(n as i64)
                .i64(items as i64);
        })
    };
    let iht_step_ms = step("cs_iht_step_f32", grid)?;
    // cp.async tiles hold 1,024 f32; eight blocks per SM stride over them.
    let tiles = items.div_ceil(1024);
    let async_grid =
        LaunchShape::linear(tiles.min(gpu.limits().sms as usize * 8).max(1) as u32, 256);
    let iht_step_async_ms = step("cs_iht_step_async_f32", async_grid)?;
    let pd = gpu.upload(&phi.iter().map(|&v| v as f32).collect::<Vec<f32>>())?;
    let r = gpu.upload(&(0..m).map(|i| (i % 13) as f32 * 0.1).collect::<Vec<f32>>())?;
    let o = gpu.alloc_zeroed::<f32>(n)?;
    let corr = |name: &str, shape: LaunchShape| {
        time(name, shape, &|a: &mut Args| {
            a.ptr(gpu.ptr(&pd))
                .ptr(gpu.ptr(&r))
                .ptr(gpu.ptr(&o))
                .i64(m as i64)
                .i64(n as i64);
        })
    };
    let correlate_ms = corr(
        "cs_correlate_f32",
        LaunchShape::linear(n.div_ceil(32) as u32, 256),
    )?;
    let cc = gpu.limits().compute_capability;
    let correlate_tma_ms = if cc >= (9, 0) && n.is_multiple_of(4) {
        Some(corr(
            "cs_correlate_tma_f32",
            LaunchShape::linear(n.div_ceil(256) as u32, 256),
        )?)
    } else {
        None
    };
    let correlate_fp8_ms = if cc >= (8, 9) {
        let (q, sc) = sparrow::solvers::cs::fp8::quantize_rows(phi, m, n);
        let (qd, sd) = (gpu.upload(&q)?, gpu.upload(&sc)?);
        Some(time(
            "cs_correlate_fp8",
            LaunchShape::linear(n.div_ceil(64) as u32, 256),
            &|a: &mut Args| {
                a.ptr(gpu.ptr(&qd))
                    .ptr(gpu.ptr(&sd))
                    .ptr(gpu.ptr(&r))
                    .ptr(gpu.ptr(&o))
                    .i64(m as i64)
                    .i64(n as i64);
            },
        )?)
    } else {
        None
    };
    Ok(KernelTimes {
        iht_step_ms,
        iht_step_async_ms,
        correlate_ms,
        correlate_tma_ms,
        correlate_fp8_ms,
    })
}

/// Runs the benchmark: `iters` timed GPU iterations, the CPU on `cpu_signals` signals (0 to
/// skip it).
#[allow(clippy::too_many_arguments)]
pub fn run(
    gpu: &Gpu,
    m: usize,
    n: usize,
    k: usize,
    batch: usize,
    iters: usize,
    cpu_signals: usize,
    f64_too: bool,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<CsRecord>> {
    progress("generating the problem");
    let phi = gaussian_phi(m, n, 5)?;
    let x = sparse_signals(n, k, batch, false, 6)?;
    let a: Vec<f64> = (0..m).flat_map(|i| phi.row(i).to_vec()).collect();
    // y = Phi x through each signal's support only.
    let ys: Vec<Vec<f64>> = (0..batch)
        .map(|b| {
            let mut y = vec![0.0; m];
            for j in (0..n).filter(|&j| x.get(j, b) != 0.0) {
                let v = x.get(j, b);
                for (i, yi) in y.iter_mut().enumerate() {
                    *yi += a[i * n + j] * v;
                }
            }
            y
        })
        .collect();
    let cpu_iteration_ms = if cpu_signals > 0 {
        progress("timing the CPU");
        let p = Phi { m, n, a: a.clone() };
        let col_energy = a.iter().map(|v| v * v).sum::<f64>() / n as f64;
        let step = 0.65 / col_energy;
        let sub = &ys[..cpu_signals.min(batch)];
        let wall = |max_iter: usize| {
            let req = Recover::new(Method::Iht)
                .sparsity(k)
                .max_iter(max_iter)
                .tol(1e-30);
            let t0 = Instant::now();
            use rayon::prelude::*;
            let its: usize = sub
                .par_iter()
                .map(|y| cpu::solve(&req, &p, y, step).iterations)
                .sum();
            (t0.elapsed().as_secs_f64() * 1e3, its)
        };
        let (t1, i1) = wall(1);
        let (t3, i3) = wall(3);
        // Wall time per signal-iteration with every core busy, times the batch.
        Some((t3 - t1) / (i3.saturating_sub(i1)).max(1) as f64 * batch as f64)
    } else {
        None
    };
    let mut out = Vec::new();
    let mut types = vec!["f32"];
    if f64_too {
        types.push("f64");
    }
    progress("timing the kernels");
    let kernels = time_kernels(gpu, m, n, batch, &a)?;
    for ty in types {
        progress(&format!("timing IHT on the GPU ({ty})"));
        let t = if ty == "f32" {
            time_iht::<f32>(gpu, m, n, &a, &ys, k, iters)?
        } else {
            time_iht::<f64>(gpu, m, n, &a, &ys, k, iters)?
        };
        out.push(CsRecord {
            m,
            n,
            k,
            batch,
            dtype: ty,
            gpu: t,
            ratio_to_gemms: t.iteration_ms / t.gemms_ms,
            cpu_iteration_ms,
            cpu_signals: if cpu_signals > 0 {
                cpu_signals.min(batch)
            } else {
                0
            },
            kernels: (ty == "f32").then(|| kernels.clone()),
        });
    }
    Ok(out)
}

/// Per-iteration cost of the batched IHT beside what bounds it, for `sparrow bench cs`.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct IhtTiming {
    /// Wall time per IHT iteration (every kernel and the per-signal stop tests), ms.
    pub iteration_ms: f64,
    /// The iteration's two GEMMs alone (Phi^T R and Phi X over the batch), CUDA events, ms.
    pub gemms_ms: f64,
    /// Iterations the timed solve ran.
    pub iterations: usize,
}

/// Times `iters` IHT iterations against one (the difference is per-iteration work, without
/// the uploads and allocations), and the two GEMMs on the same shapes.
pub fn time_iht<T: Real>(
    gpu: &Gpu,
    m: usize,
    n: usize,
    phi: &[f64],
    ys: &[Vec<f64>],
    k: usize,
    iters: usize,
) -> Result<IhtTiming>
where
    CudaBlas: Gemm<T>,
{
    let b = Batch::<T>::new(gpu, m, n, phi, ys)?;
    let col_energy = phi.iter().map(|v| v * v).sum::<f64>() / n as f64;
    let mu = 0.65 / col_energy;
    let wall = |max_iter: usize| -> Result<(f64, usize)> {
        let req = Recover::new(Method::Iht)
            .sparsity(k)
            .max_iter(max_iter)
            .tol(1e-30);
        let mut p = Progress::new(ys, req.tol, req.max_iter);
        gpu.synchronize()?;
        let t0 = std::time::Instant::now();
        sparrow::solvers::cs::gpu::thresholding(&b, &req, &mut p, mu)?;
        gpu.synchronize()?;
        let ran = p.iterations.iter().copied().max().unwrap_or(0);
        Ok((t0.elapsed().as_secs_f64() * 1e3, ran))
    };
    wall(2)?; // compiles and warms every kernel
    let (t1, i1) = wall(1)?;
    let (tn, i_n) = wall(1 + iters)?;
    let (mut r, mut g) = (b.zeros(b.nb * m)?, b.zeros(b.nb * n)?);
    let x = b.zeros(b.nb * n)?;
    let gemms = time_gpu(gpu, 2, 10, || {
        b.correlate(&r, &mut g)?;
        b.apply(&x, &mut r, -1.0, 1.0)
    })?;
    Ok(IhtTiming {
        iteration_ms: (tn - t1) / (i_n.saturating_sub(i1)).max(1) as f64,
        gemms_ms: gemms.median_ms,
        iterations: i_n,
    })
}
