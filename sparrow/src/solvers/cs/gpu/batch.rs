//! The batch on the device (Phi and the signals) and the products, launches and least squares
//! every GPU solver builds on.

use cudarc::cublas::sys::cublasOperation_t::{CUBLAS_OP_N, CUBLAS_OP_T};
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::CudaSlice;

use super::progress::Norms;
use super::{Real, LSQ_MAX};
use crate::device::{Args, Gpu, LaunchShape};
use crate::kernels::{cs_name, CS};
use crate::ops::topk::{GpuTopK, IndexType, Segments, TieBreak, TopK};
use crate::{Error, Result, Scalar};

pub(super) const BLOCK: u32 = 256;

pub(super) fn grid(items: usize) -> LaunchShape {
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
pub(crate) struct Normal<T> {
    pub(crate) gram: CudaSlice<T>,
    pub(crate) cy: CudaSlice<T>,
    pub(crate) scratch: Option<CudaSlice<f64>>,
}

/// The batch on the device and the handles every solver uses.
pub struct Batch<'a, T> {
    pub(crate) gpu: &'a Gpu,
    pub(crate) blas: CudaBlas,
    pub(crate) m: usize,
    pub(crate) n: usize,
    /// Signals in the batch.
    pub nb: usize,
    pub(crate) phi: CudaSlice<T>,
    pub(crate) y: CudaSlice<T>,
}

impl<'a, T: Real> Batch<'a, T>
where
    CudaBlas: Gemm<T>,
{
    /// Uploads Phi and the measurements in `T`.
    pub fn new(gpu: &'a Gpu, m: usize, n: usize, phi: &[f64], ys: &[Vec<f64>]) -> Result<Self> {
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

    /// A zeroed device buffer of `len` elements.
    pub fn zeros(&self, len: usize) -> Result<CudaSlice<T>> {
        self.gpu.alloc_zeroed(len)
    }

    /// out = alpha Phi X + beta out, for the whole batch.
    pub fn apply(
        &self,
        x: &CudaSlice<T>,
        out: &mut CudaSlice<T>,
        alpha: f64,
        beta: f64,
    ) -> Result<()> {
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
    pub fn correlate(&self, r: &CudaSlice<T>, out: &mut CudaSlice<T>) -> Result<()> {
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

    pub(crate) fn launch(&self, kernel: &str, shape: LaunchShape, args: &mut Args) -> Result<()> {
        let k = self
            .gpu
            .kernel(&CS, &cs_name(kernel, <T as Scalar>::NAME))?;
        // SAFETY: the solvers pass each kernel's arguments over this batch's buffers, sized by
        // its m, n and signal count.
        unsafe { self.gpu.launch(&k, shape, args) }
    }

    /// out = Y - Phi X.
    pub(crate) fn residual(&self, x: &CudaSlice<T>, out: &mut CudaSlice<T>) -> Result<()> {
        self.gpu
            .copy_bytes(&self.y, out, self.nb * self.m * std::mem::size_of::<T>())?;
        self.apply(x, out, -1.0, 1.0)
    }

    /// The normal equations' sources, Phi^T Phi (n x n) and Phi^T Y (n x B), and the global
    /// scratch of the least squares when supports of up to `smax` columns exceed shared
    /// memory: formed once per solve.
    pub(crate) fn normal(&self, smax: usize) -> Result<Normal<T>> {
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
    pub(crate) fn lsq(
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
    pub(crate) fn selector(&self, k: usize) -> Result<GpuTopK<'a, T, T>> {
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
    pub(crate) fn select(&self, top: &GpuTopK<'a, T, T>, src: &CudaSlice<T>) -> Result<u64> {
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

    pub(crate) fn copy(&self, src: &CudaSlice<T>, dst: &CudaSlice<T>, len: usize) -> Result<()> {
        self.gpu
            .copy_bytes(src, dst, len * std::mem::size_of::<T>())
    }

    /// dst = src for the signals flagged in `flags`.
    pub(crate) fn copy_flagged(
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
    pub(crate) fn measure(
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
    pub(crate) fn norms(
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
