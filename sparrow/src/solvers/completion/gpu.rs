//! Singular value thresholding on the GPU, in f64: Y dense on the device (column-major); its
//! leading singular triplets by a randomized range finder (l = rank hint + 10 columns, two
//! power iterations, each block re-orthonormalised by a thin QR on the host), the small
//! l x n SVD on the host (faer); X = U_r S_r V_r^T by one GEMM; the residual and step on the
//! observed entries by one kernel. Every product with Y is a cuBLAS GEMM.

use cudarc::cublas::CudaBlas;
use cudarc::driver::CudaSlice;
use faer::Mat;

use super::request::{completion, Complete, Completion};
use crate::device::{Args, Gpu, LaunchShape};
use crate::kernels::CS;
use crate::matrix::{Csr, Rng};
use crate::solvers::cs::StopReason;
use crate::{memory, Error, Result};

/// Extra columns of the range finder beyond the rank hint.
const OVERSAMPLE: usize = 10;
/// Power iterations of the range finder.
const POWER: usize = 2;

struct Dev<'a> {
    gpu: &'a Gpu,
    blas: CudaBlas,
}

impl Dev<'_> {
    /// C (rows x cols) = op(A) op(B), column-major, k the inner dimension.
    #[allow(clippy::too_many_arguments)]
    fn gemm(
        &self,
        ta: bool,
        tb: bool,
        dims: (usize, usize, usize),
        a: &CudaSlice<f64>,
        lda: usize,
        b: &CudaSlice<f64>,
        ldb: usize,
        c: &mut CudaSlice<f64>,
    ) -> Result<()> {
        crate::solvers::cs::gpu::gemm(
            &self.blas,
            (ta, tb),
            dims,
            (a, lda),
            (b, ldb),
            (1.0, 0.0),
            c,
        )
        .map_err(|e| Error::device("cuBLAS GEMM (SVT)", e))
    }

    /// Thin QR's Q of a column-major rows x cols device matrix, on the host.
    fn orthonormalise(
        &self,
        z: &CudaSlice<f64>,
        rows: usize,
        cols: usize,
    ) -> Result<CudaSlice<f64>> {
        let h = self.gpu.download(z, rows * cols)?;
        let q = Mat::from_fn(rows, cols, |i, j| h[i + j * rows])
            .qr()
            .compute_thin_Q();
        let flat: Vec<f64> = (0..cols)
            .flat_map(|j| (0..rows).map(move |i| (i, j)))
            .map(|(i, j)| q[(i, j)])
            .collect();
        self.gpu.upload(&flat)
    }
}

/// Runs the request's SVT on `gpu`; `tau` and `delta` are resolved, `m_norm` is
/// ||P_Omega(M)||_F.
pub fn run(
    gpu: &Gpu,
    req: &Complete,
    observed: &Csr<f64>,
    tau: f64,
    delta: f64,
    m_norm: f64,
) -> Result<Completion> {
    let (m, n) = (observed.nrows(), observed.ncols());
    let l = (req.rank_hint + OVERSAMPLE).min(m.min(n));
    // On the host: the downloaded X and the returned matrix, the Gaussian test block and the
    // range finder's blocks.
    let what = format!("a {m} x {n} completion on the GPU (host copies of X)");
    let host = memory::bytes_of(&what, &[2, m, n], 8)?.saturating_add(memory::bytes_of(
        &what,
        &[4, m.saturating_add(n), l],
        8,
    )?);
    memory::ensure_fits(&what, host)?;
    let device_bytes = memory::bytes_of("this completion", &[2, m, n], 8)?
        .saturating_add(memory::bytes_of(
            "this completion",
            &[3, m.saturating_add(n), l],
            8,
        )?)
        .saturating_add(memory::bytes_of(
            "this completion",
            &[2, observed.nnz()],
            8,
        )?);
    gpu.ensure_fits(device_bytes, "this completion")?;
    let d = Dev {
        gpu,
        blas: CudaBlas::new(gpu.stream().clone()).map_err(|e| {
            Error::device("creating the cuBLAS handle (is libcublas installed?)", e)
        })?,
    };
    let (mut rows, mut cols) = (Vec::new(), Vec::new());
    for i in 0..m {
        for p in observed.row_range(i) {
            rows.push(i as i32);
            cols.push(observed.col_idx()[p]);
        }
    }
    let nnz = rows.len();
    let (rd, cd, vd) = (
        gpu.upload(&rows)?,
        gpu.upload(&cols)?,
        gpu.upload(observed.values())?,
    );
    let mut rng = Rng::new(17);
    let g: Vec<f64> = (0..n * l)
        .map(|_| {
            let (u1, u2) = (rng.uniform().max(1e-300), rng.uniform());
            (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
        })
        .collect();
    let gd = gpu.upload(&g)?;
    let y = gpu.alloc_zeroed::<f64>(m * n)?;
    let mut x = gpu.alloc_zeroed::<f64>(m * n)?;
    let (mut z, mut w) = (
        gpu.alloc_zeroed::<f64>(m * l)?,
        gpu.alloc_zeroed::<f64>(n * l)?,
    );
    let res = gpu.alloc_zeroed::<f64>(1)?;
    let observe = gpu.kernel(&CS, "cs_svt_observe")?;
    let (mut rank, mut rel) = (0, 1.0);
    for it in 1..=req.max_iter {
        if it > 1 {
            // The range of Y: Z = Y G, then (Y Y^T) Z twice, orthonormal after each product.
            d.gemm(false, false, (m, l, n), &y, m, &gd, n, &mut z)?;
            let mut q = d.orthonormalise(&z, m, l)?;
            for _ in 0..POWER {
                d.gemm(true, false, (n, l, m), &y, m, &q, m, &mut w)?;
                let wq = d.orthonormalise(&w, n, l)?;
                d.gemm(false, false, (m, l, n), &y, m, &wq, n, &mut z)?;
                q = d.orthonormalise(&z, m, l)?;
            }
            // B^T = Y^T Q (n x l); B = U_b S V^T with U_b = (right factor of B^T's SVD).
            d.gemm(true, false, (n, l, m), &y, m, &q, m, &mut w)?;
            let bt = gpu.download(&w, n * l)?;
            let svd = Mat::from_fn(n, l, |i, j| bt[i + j * n])
                .thin_svd()
                .map_err(|e| Error::device("SVD (faer)", format!("{e:?}")))?;
            let s: Vec<f64> = (0..l).map(|i| svd.S()[i]).collect();
            rank = s
                .iter()
                .take(req.rank_hint)
                .filter(|&&v| v - tau > 0.0)
                .count();
            if rank == 0 {
                gpu.fill_bytes(&x, 0, m * n * 8)?;
            } else {
                // U_r = Q Ub_r (m x r); V_r S_r shrunk (n x r); X = U_r (V_r S_r)^T.
                let (vb, ub) = (svd.U(), svd.V());
                let ubr: Vec<f64> = (0..rank)
                    .flat_map(|r| (0..l).map(move |i| (i, r)))
                    .map(|(i, r)| ub[(i, r)])
                    .collect();
                let vs: Vec<f64> = (0..rank)
                    .flat_map(|r| (0..n).map(move |j| (j, r)))
                    .map(|(j, r)| vb[(j, r)] * (s[r] - tau))
                    .collect();
                let (ubd, vsd) = (gpu.upload(&ubr)?, gpu.upload(&vs)?);
                let mut u = gpu.alloc_zeroed::<f64>(m * rank)?;
                d.gemm(false, false, (m, rank, l), &q, m, &ubd, l, &mut u)?;
                d.gemm(false, true, (m, n, rank), &u, m, &vsd, n, &mut x)?;
            }
        }
        gpu.fill_bytes(&res, 0, 8)?;
        unsafe {
            gpu.launch(
                &observe,
                LaunchShape::linear(nnz.div_ceil(256).clamp(1, 4096) as u32, 256),
                Args::new()
                    .ptr(gpu.ptr(&rd))
                    .ptr(gpu.ptr(&cd))
                    .ptr(gpu.ptr(&vd))
                    .i64(nnz as i64)
                    .i64(m as i64)
                    .ptr(gpu.ptr(&x))
                    .ptr(gpu.ptr(&y))
                    .f64(delta)
                    .ptr(gpu.ptr(&res)),
            )
        }?;
        rel = gpu.download(&res, 1)?[0].sqrt() / m_norm.max(f64::MIN_POSITIVE);
        if let Some(e) = req.diverged(observed, it, rel, tau, delta) {
            return Err(e);
        }
        if rel <= req.tol {
            return finish(gpu, &x, m, n, rank, it, StopReason::Residual, rel);
        }
    }
    finish(
        gpu,
        &x,
        m,
        n,
        rank,
        req.max_iter,
        StopReason::MaxIterations,
        rel,
    )
}

#[allow(clippy::too_many_arguments)]
fn finish(
    gpu: &Gpu,
    x: &CudaSlice<f64>,
    m: usize,
    n: usize,
    rank: usize,
    iterations: usize,
    stop: StopReason,
    rel: f64,
) -> Result<Completion> {
    let h = gpu.download(x, m * n)?;
    let data = (0..m)
        .flat_map(|i| (0..n).map(move |j| (i, j)))
        .map(|(i, j)| h[i + j * m])
        .collect();
    completion(m, n, data, rank, iterations, stop, rel)
}
