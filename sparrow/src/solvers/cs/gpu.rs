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

use cudarc::cublas::sys::cublasOperation_t::{CUBLAS_OP_N, CUBLAS_OP_T};
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::CudaSlice;

use super::cpu::Solved;
use super::{Method, Recover, StopReason};
use crate::device::{Args, Gpu, LaunchShape};
use crate::kernels::{cs_name, CS};
use crate::ops::topk::{GpuTopK, IndexType, Key, Segments, TieBreak, TopK};
use crate::{Error, Result, Scalar};

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

const BLOCK: u32 = 256;

fn grid(items: usize) -> LaunchShape {
    LaunchShape::linear(
        items.div_ceil(BLOCK as usize).clamp(1, 1 << 20) as u32,
        BLOCK,
    )
}

/// C (rows x cols, column-major, leading dimension rows) = alpha op(A) op(B) + beta C with k
/// the inner dimension; op transposes where the flag says. The one cuBLAS call of the solvers.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm<T: Real>(
    blas: &CudaBlas,
    (ta, tb): (bool, bool),
    (rows, cols, k): (usize, usize, usize),
    (a, lda): (&CudaSlice<T>, usize),
    (b, ldb): (&CudaSlice<T>, usize),
    (alpha, beta): (f64, f64),
    c: &mut CudaSlice<T>,
) -> std::result::Result<(), cudarc::cublas::result::CublasError>
where
    CudaBlas: Gemm<T>,
{
    let op = |t: bool| if t { CUBLAS_OP_T } else { CUBLAS_OP_N };
    let cfg = GemmConfig {
        transa: op(ta),
        transb: op(tb),
        m: rows as i32,
        n: cols as i32,
        k: k as i32,
        alpha: T::from_f64(alpha),
        lda: lda as i32,
        ldb: ldb as i32,
        beta: T::from_f64(beta),
        ldc: rows as i32,
    };
    // SAFETY: every caller sizes A, B and C for the shapes and leading dimensions it passes.
    unsafe { blas.gemm(cfg, a, b, c) }
}

/// Phi^T Phi, Phi^T Y and the least squares' global scratch (see `Batch::normal`).
struct Normal<T> {
    gram: CudaSlice<T>,
    cy: CudaSlice<T>,
    scratch: Option<CudaSlice<f64>>,
}

/// The batch on the device and the handles every solver uses.
struct Batch<'a, T> {
    gpu: &'a Gpu,
    blas: CudaBlas,
    m: usize,
    n: usize,
    nb: usize,
    phi: CudaSlice<T>,
    y: CudaSlice<T>,
}

impl<'a, T: Real> Batch<'a, T>
where
    CudaBlas: Gemm<T>,
{
    fn new(gpu: &'a Gpu, m: usize, n: usize, phi: &[f64], ys: &[Vec<f64>]) -> Result<Self> {
        let nb = ys.len();
        gpu.ensure_fits(
            ((m * n + 4 * nb * (m + 2 * n)) * std::mem::size_of::<T>()) as u64,
            "this recovery batch",
        )?;
        let blas = CudaBlas::new(gpu.stream().clone()).map_err(|e| {
            Error::device("creating the cuBLAS handle (is libcublas installed?)", e)
        })?;
        let phi_t: Vec<T> = phi.iter().map(|&v| T::from_f64(v)).collect();
        let y_t: Vec<T> = ys.iter().flatten().map(|&v| T::from_f64(v)).collect();
        Ok(Batch {
            gpu,
            blas,
            m,
            n,
            nb,
            phi: gpu.upload(&phi_t)?,
            y: gpu.upload(&y_t)?,
        })
    }

    fn zeros(&self, len: usize) -> Result<CudaSlice<T>> {
        self.gpu.alloc_zeroed(len)
    }

    /// out = alpha Phi X + beta out, for the whole batch.
    fn apply(&self, x: &CudaSlice<T>, out: &mut CudaSlice<T>, alpha: f64, beta: f64) -> Result<()> {
        let (m, n, nb) = (self.m, self.n, self.nb);
        gemm(
            &self.blas,
            (true, false),
            (m, nb, n),
            (&self.phi, n),
            (x, n),
            (alpha, beta),
            out,
        )
        .map_err(|e| Error::device("cuBLAS GEMM Phi X", e))
    }

    /// out = Phi^T R, for the whole batch.
    fn correlate(&self, r: &CudaSlice<T>, out: &mut CudaSlice<T>) -> Result<()> {
        let (m, n, nb) = (self.m, self.n, self.nb);
        gemm(
            &self.blas,
            (false, false),
            (n, nb, m),
            (&self.phi, n),
            (r, m),
            (1.0, 0.0),
            out,
        )
        .map_err(|e| Error::device("cuBLAS GEMM Phi^T R", e))
    }

    fn launch(&self, kernel: &str, shape: LaunchShape, args: &mut Args) -> Result<()> {
        let k = self
            .gpu
            .kernel(&CS, &cs_name(kernel, <T as Scalar>::NAME))?;
        self.gpu.launch(&k, shape, args)
    }

    /// out = Y - Phi X.
    fn residual(&self, x: &CudaSlice<T>, out: &mut CudaSlice<T>) -> Result<()> {
        self.gpu
            .copy_bytes(&self.y, out, self.nb * self.m * std::mem::size_of::<T>())?;
        self.apply(x, out, -1.0, 1.0)
    }

    /// The normal equations' sources, Phi^T Phi (n x n) and Phi^T Y (n x B), and the global
    /// scratch of the least squares when supports of up to `smax` columns exceed shared
    /// memory: formed once per solve.
    fn normal(&self, smax: usize) -> Result<Normal<T>> {
        let (m, n) = (self.m, self.n);
        let mut gram = self.zeros(n * n)?;
        gemm(
            &self.blas,
            (false, true),
            (n, n, m),
            (&self.phi, n),
            (&self.phi, n),
            (1.0, 0.0),
            &mut gram,
        )
        .map_err(|e| Error::device("cuBLAS GEMM Phi^T Phi", e))?;
        let mut cy = self.zeros(self.nb * n)?;
        self.correlate(&self.y, &mut cy)?;
        let scratch = if smax > LSQ_MAX {
            let len = self.nb * (smax * smax + smax);
            self.gpu
                .ensure_fits((len * 8) as u64, "the least squares on large supports")?;
            Some(self.gpu.alloc_zeroed::<f64>(len)?)
        } else {
            None
        };
        Ok(Normal { gram, cy, scratch })
    }

    /// x = the least-squares coefficients on each running signal's support (smax slots per
    /// signal, -1 padded, smax at most what `normal` was sized for), zero elsewhere; stopped
    /// signals keep x.
    fn lsq(
        &self,
        ne: &Normal<T>,
        idx: u64,
        smax: usize,
        running: &CudaSlice<i32>,
        x: &CudaSlice<T>,
    ) -> Result<()> {
        let scratch = match (&ne.scratch, smax > LSQ_MAX) {
            (_, false) => None,
            (Some(s), true) => Some(s),
            (None, true) => {
                return Err(Error::unsupported(format!(
                    "least squares on {smax} columns without global scratch"
                )))
            }
        };
        let per = smax * smax + smax;
        self.launch(
            "lsq",
            LaunchShape::linear(self.nb as u32, BLOCK).with_smem(if scratch.is_some() {
                0
            } else {
                (per * 8) as u32
            }),
            Args::new()
                .ptr(self.gpu.ptr(&ne.gram))
                .ptr(self.gpu.ptr(&ne.cy))
                .ptr(idx)
                .i64(smax as i64)
                .i64(self.n as i64)
                .ptr(self.gpu.ptr(running))
                .ptr(self.gpu.ptr(x))
                .ptr(scratch.map_or(0, |s| self.gpu.ptr(s))),
        )
    }

    /// A largest-k selection over the B signals' n magnitudes, ties to the smaller index.
    fn selector(&self, k: usize) -> Result<GpuTopK<'a, T, T>> {
        let sel = TopK::largest(k)
            .tie_break(TieBreak::SmallerIndex)
            .index_type(IndexType::I32);
        let layout = sel.layout(
            self.nb * self.n,
            Segments::Fixed {
                count: self.nb,
                len: self.n,
            },
            None,
        )?;
        GpuTopK::on_device(self.gpu, &sel, self.nb * self.n, &layout)
    }

    /// |src| into the selector's input, then the selection; returns the indices' address.
    fn select(&self, top: &GpuTopK<'a, T, T>, src: &CudaSlice<T>) -> Result<u64> {
        let missing = || Error::unsupported("top-k of an empty batch");
        let keys = top.input().ok_or_else(missing)?;
        self.launch(
            "abs_keys",
            grid(self.nb * self.n),
            Args::new()
                .ptr(self.gpu.ptr(src))
                .ptr(self.gpu.ptr(keys))
                .i64((self.nb * self.n) as i64),
        )?;
        top.enqueue()?;
        Ok(self.gpu.ptr(top.outputs().ok_or_else(missing)?.1))
    }

    fn copy(&self, src: &CudaSlice<T>, dst: &CudaSlice<T>, len: usize) -> Result<()> {
        self.gpu
            .copy_bytes(src, dst, len * std::mem::size_of::<T>())
    }

    /// dst = src for the signals flagged in `flags`.
    fn copy_flagged(
        &self,
        src: &CudaSlice<T>,
        dst: &CudaSlice<T>,
        flags: &CudaSlice<i32>,
        per: usize,
    ) -> Result<()> {
        self.launch(
            "keep_running",
            grid(self.nb * per),
            Args::new()
                .ptr(self.gpu.ptr(src))
                .ptr(self.gpu.ptr(dst))
                .ptr(self.gpu.ptr(flags))
                .i64(per as i64)
                .i64((self.nb * per) as i64),
        )
    }

    /// The new estimate's residual rn = Y - Phi xn and the stop tests' squared norms per
    /// signal: of rn, of xn, and of its step from x.
    #[allow(clippy::type_complexity)]
    fn measure(
        &self,
        xn: &CudaSlice<T>,
        x: &CudaSlice<T>,
        rn: &mut CudaSlice<T>,
        nr: &Norms,
    ) -> Result<(Vec<f64>, Vec<f64>, Vec<f64>)> {
        self.residual(xn, rn)?;
        self.norms(rn, None, self.m, &nr.r2, &nr.unused)?;
        self.norms(xn, Some(x), self.n, &nr.x2, &nr.d2)?;
        nr.take(self.gpu, self.nb)
    }

    /// Per signal of `per` entries: sum a^2 and, with c, sum (a - c)^2.
    fn norms(
        &self,
        a: &CudaSlice<T>,
        c: Option<&CudaSlice<T>>,
        per: usize,
        sq: &CudaSlice<f64>,
        dsq: &CudaSlice<f64>,
    ) -> Result<()> {
        self.launch(
            "norms",
            LaunchShape::linear(self.nb as u32, BLOCK),
            Args::new()
                .ptr(self.gpu.ptr(a))
                .ptr(c.map_or(0, |c| self.gpu.ptr(c)))
                .i64(per as i64)
                .ptr(self.gpu.ptr(sq))
                .ptr(self.gpu.ptr(dsq)),
        )
    }
}

/// The per-signal stop tests of the CPU solvers, applied to the norms of each iteration.
struct Progress {
    running: Vec<bool>,
    iterations: Vec<usize>,
    stop: Vec<StopReason>,
    r_norm: Vec<f64>,
    y_norm: Vec<f64>,
    tol: f64,
}

impl Progress {
    fn new(ys: &[Vec<f64>], tol: f64, max_iter: usize) -> Self {
        let y_norm: Vec<f64> = ys.iter().map(|y| super::linalg::norm(y)).collect();
        Progress {
            running: y_norm.iter().map(|&v| v != 0.0).collect(),
            iterations: y_norm
                .iter()
                .map(|&v| if v == 0.0 { 0 } else { max_iter })
                .collect(),
            stop: vec![StopReason::MaxIterations; ys.len()]
                .into_iter()
                .zip(&y_norm)
                .map(|(s, &v)| if v == 0.0 { StopReason::Residual } else { s })
                .collect(),
            r_norm: y_norm.clone(),
            y_norm,
            tol,
        }
    }

    /// Stops signal `b` at iteration `i` when its residual norm or its estimate's squared norm
    /// is non-finite or the residual is past the divergence bound: the estimate stays frozen
    /// as it is and `Recover::run`'s check of the returned estimates reports it, naming this
    /// iteration. Returns whether it stopped.
    fn diverged(&mut self, b: usize, i: usize, x2: f64) -> bool {
        let r = self.r_norm[b];
        if r.is_finite() && x2.is_finite() && r <= super::DIVERGENCE_FACTOR * self.y_norm[b] {
            return false;
        }
        if !x2.is_finite() {
            self.r_norm[b] = f64::INFINITY;
        }
        self.running[b] = false;
        self.iterations[b] = i;
        true
    }

    /// Takes iteration `i`'s squared norms (residual, new estimate, step); says whether any
    /// signal stopped.
    fn update(&mut self, i: usize, r2: &[f64], x2: &[f64], d2: &[f64]) -> bool {
        let mut changed = false;
        for b in 0..self.running.len() {
            if !self.running[b] {
                continue;
            }
            self.r_norm[b] = r2[b].sqrt();
            if self.diverged(b, i, x2[b]) {
                changed = true;
                continue;
            }
            let stop = if self.r_norm[b] <= self.tol * self.y_norm[b] {
                Some(StopReason::Residual)
            } else if d2[b].sqrt() <= self.tol * x2[b].sqrt().max(f64::MIN_POSITIVE) {
                Some(StopReason::Stalled)
            } else {
                None
            };
            if let Some(s) = stop {
                self.running[b] = false;
                self.iterations[b] = i;
                self.stop[b] = s;
                changed = true;
            }
        }
        changed
    }

    /// OMP's test: only the residual (returns whether a signal stopped).
    fn update_residual(&mut self, i: usize, r2: &[f64]) -> bool {
        let mut changed = false;
        for (b, &rr) in r2.iter().enumerate() {
            if self.running[b] {
                self.r_norm[b] = rr.sqrt();
                if self.diverged(b, i, 0.0) {
                    changed = true;
                } else if self.r_norm[b] <= self.tol * self.y_norm[b] {
                    self.running[b] = false;
                    self.iterations[b] = i;
                    self.stop[b] = StopReason::Residual;
                    changed = true;
                }
            }
        }
        changed
    }

    /// Subspace pursuit's stop: from the second iteration, a signal whose residual did not
    /// shrink stops and keeps its previous estimate. Returns the flags of those signals.
    fn sp_revert(&mut self, i: usize, r2: &[f64]) -> Option<Vec<i32>> {
        if i == 1 {
            return None;
        }
        let mut flags = vec![0i32; self.running.len()];
        let mut any = false;
        for b in 0..self.running.len() {
            if self.running[b] && r2[b].sqrt() >= self.r_norm[b] {
                self.running[b] = false;
                self.iterations[b] = i;
                self.stop[b] = StopReason::Stalled;
                flags[b] = 1;
                any = true;
            }
        }
        any.then_some(flags)
    }

    fn flags(&self) -> Vec<i32> {
        self.running.iter().map(|&r| r as i32).collect()
    }

    fn any(&self) -> bool {
        self.running.iter().any(|&r| r)
    }
}

/// Per-iteration device scratch for the norms.
struct Norms {
    r2: CudaSlice<f64>,
    x2: CudaSlice<f64>,
    d2: CudaSlice<f64>,
    unused: CudaSlice<f64>,
}

impl Norms {
    fn new(gpu: &Gpu, nb: usize) -> Result<Self> {
        Ok(Norms {
            r2: gpu.alloc_zeroed(nb)?,
            x2: gpu.alloc_zeroed(nb)?,
            d2: gpu.alloc_zeroed(nb)?,
            unused: gpu.alloc_zeroed(nb)?,
        })
    }

    fn take(&self, gpu: &Gpu, nb: usize) -> Result<(Vec<f64>, Vec<f64>, Vec<f64>)> {
        Ok((
            gpu.download(&self.r2, nb)?,
            gpu.download(&self.x2, nb)?,
            gpu.download(&self.d2, nb)?,
        ))
    }
}

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
        Method::Amp => amp(&b, req, &mut p)?,
        Method::Fista => fista(&b, req, &mut p, step)?,
        Method::Cosamp | Method::Sp => pursuit(&b, req, &mut p)?,
        Method::Omp => omp(&b, req, &mut p)?,
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

/// IHT (one step for all signals), normalised IHT and HTP (each signal's exact line search
/// along g on its support, or on the top K of g while its estimate is zero); HTP then solves
/// least squares on the new support instead of keeping the thresholded step.
fn thresholding<'a, T: Real>(
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

/// CoSaMP (2K new columns, the estimate pruned to the top K of the least squares) and
/// subspace pursuit (K new columns, least squares again on the pruned support).
fn pursuit<'a, T: Real>(b: &Batch<'a, T>, req: &Recover, p: &mut Progress) -> Result<CudaSlice<T>>
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
        )?;
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

/// OMP: one column per iteration (the largest |g| not yet chosen), least squares on the
/// support so far by a Cholesky factor that grows one row per column, until the residual
/// test or K columns.
fn omp<'a, T: Real>(b: &Batch<'a, T>, req: &Recover, p: &mut Progress) -> Result<CudaSlice<T>>
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

fn amp<'a, T: Real>(b: &Batch<'a, T>, req: &Recover, p: &mut Progress) -> Result<CudaSlice<T>>
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

fn fista<'a, T: Real>(
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
        thresholding(&b, &req, &mut p, mu)?;
        gpu.synchronize()?;
        let ran = p.iterations.iter().copied().max().unwrap_or(0);
        Ok((t0.elapsed().as_secs_f64() * 1e3, ran))
    };
    wall(2)?; // compiles and warms every kernel
    let (t1, i1) = wall(1)?;
    let (tn, i_n) = wall(1 + iters)?;
    let (mut r, mut g) = (b.zeros(b.nb * m)?, b.zeros(b.nb * n)?);
    let x = b.zeros(b.nb * n)?;
    let gemms = crate::bench::timing::time_gpu(gpu, 2, 10, || {
        b.correlate(&r, &mut g)?;
        b.apply(&x, &mut r, -1.0, 1.0)
    })?;
    Ok(IhtTiming {
        iteration_ms: (tn - t1) / (i_n.saturating_sub(i1)).max(1) as f64,
        gemms_ms: gemms.median_ms,
        iterations: i_n,
    })
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
