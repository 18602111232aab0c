//! `y = alpha * A * x + beta * y` for CSR A, in f32 or f64.
//!
//! Cost: `2 * nnz` flops and at least `nnz * (4 + size_of::<T>())` bytes of A plus x and y
//! once; the GPU path is SpMM's nnz-split kernel with one column. `beta == 0` never reads y.

use super::cpu;
use super::spmm::{cuda_plan, gpu_path_on, plan_for, Choice, GpuPath};
use super::PreparedCsr;
use crate::device::Gpu;
use crate::matrix::Csr;
use crate::ops::products::plan::ProductsTuning;
use crate::ops::products::stats::RowStats;
use crate::ops::Plan;
use crate::{Device, Error, Result, Scalar};

/// An SpMV request: the scalars, then [`Spmv::run`] on host data (on a GPU it copies in,
/// computes and copies back) or [`Spmv::run_device`] on a prepared matrix.
///
/// ```
/// use sparrow::matrix::Csr;
/// use sparrow::Spmv;
/// use sparrow::Device;
///
/// // A = [[2, 0], [1, 3]]; y = 2 A x + y
/// let a = Csr::<f64>::from_triplets(2, 2, &[0, 1, 1], &[0, 0, 1], &[2.0, 1.0, 3.0])?;
/// let mut y = vec![1.0, 1.0];
/// let plan = Spmv::new().alpha(2.0).beta(1.0).run(&Device::Cpu, &a, &[1.0, 1.0], &mut y)?;
/// assert_eq!(y, [5.0, 9.0]);
/// println!("{plan}"); // the backend and kernel, and why
/// # Ok::<(), sparrow::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Spmv<T> {
    alpha: T,
    beta: T,
    force: Option<GpuPath>,
    split: bool,
}

impl<T: Scalar> Default for Spmv<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Scalar> Spmv<T> {
    /// `y = A * x` (alpha 1, beta 0).
    pub fn new() -> Self {
        Spmv {
            alpha: T::from_f64(1.0),
            beta: T::ZERO,
            force: None,
            split: true,
        }
    }
    /// Sets alpha.
    pub fn alpha(mut self, alpha: T) -> Self {
        self.alpha = alpha;
        self
    }
    /// Sets beta; 0 means y is not read.
    pub fn beta(mut self, beta: T) -> Self {
        self.beta = beta;
        self
    }
    testing_hook! {
        /// Forces a GPU path (an nnz-split shape) instead of the policy's choice.
        fn force_path(mut self, path: GpuPath) -> Self {
            self.force = Some(path);
            self
        }
    }

    testing_hook! {
        /// Whether long rows are split into chunks on the GPU (default true).
        fn split_long_rows(mut self, split: bool) -> Self {
            self.split = split;
            self
        }
    }

    /// Checks lengths and scalars completely, before any work.
    pub fn validate(&self, a: &Csr<T>, x_len: usize, y_len: usize) -> Result<()> {
        if x_len != a.ncols() {
            return Err(Error::invalid(
                "x",
                format!("has {x_len} elements but A has {} columns", a.ncols()),
            ));
        }
        if y_len != a.nrows() {
            return Err(Error::invalid(
                "y",
                format!("has {y_len} elements but A has {} rows", a.nrows()),
            ));
        }
        for (name, v) in [("alpha", self.alpha), ("beta", self.beta)] {
            if !v.to_f64().is_finite() {
                return Err(Error::invalid(name, format!("{v:?} is not finite")));
            }
        }
        Ok(())
    }

    /// Which backend and kernel would run.
    pub fn plan(&self, device: &Device, stats: &RowStats) -> Result<Plan> {
        plan_for::<T>("spmv", device, stats, 1, self.choice(), self.split)
    }

    /// Runs on host data.
    pub fn run(&self, device: &Device, a: &Csr<T>, x: &[T], y: &mut [T]) -> Result<Plan> {
        self.validate(a, x.len(), y.len())?;
        match device {
            // The CPU's plan reads no statistics: their pass would cost as much as the product.
            Device::Cpu => {
                cpu::spmv(self.alpha, a, x, self.beta, y);
                Ok(super::spmm::cpu_plan("spmv"))
            }
            Device::Cuda(gpu) => {
                let stats = crate::ops::products::RowStats::of(a);
                let tuning = ProductsTuning::for_arch(gpu.limits().compute_capability);
                // One choice serves the plan, the upload's formats and the launch.
                let path = gpu_path_on::<T>(gpu, self.choice(), &stats, 1)?;
                let plan = cuda_plan::<T>("spmv", &stats, 1, path.clone(), self.split, tuning)?;
                let dense = x.len() + y.len();
                let bytes = super::spmm::device_bytes::<T>(a, &stats, dense, 1, tuning);
                gpu.ensure_fits(bytes, "this SpMV")?;
                let want = path
                    .as_ref()
                    .map_or(super::formats::Formats::NONE, |(p, _)| p.formats());
                let da = PreparedCsr::upload_for(gpu, a, stats, want)?;
                let dx = gpu.upload(x)?;
                let dy = gpu.upload(y)?;
                if let Some((p, _)) = path {
                    self.launch(gpu, p, &da, &dx, &dy)?;
                }
                y.copy_from_slice(&gpu.download(&dy, y.len())?);
                Ok(plan)
            }
        }
    }

    /// Enqueues SpMV on device-resident data; does not wait. `x` and `y` must hold at least
    /// `ncols` and `nrows` elements.
    pub fn run_device(
        &self,
        gpu: &Gpu,
        a: &PreparedCsr<T>,
        x: &cudarc::driver::CudaSlice<T>,
        y: &cudarc::driver::CudaSlice<T>,
    ) -> Result<()> {
        if x.len() < a.ncols {
            return Err(Error::invalid(
                "x",
                format!("has {} elements but A has {} columns", x.len(), a.ncols),
            ));
        }
        if y.len() < a.nrows {
            return Err(Error::invalid(
                "y",
                format!("has {} elements but A has {} rows", y.len(), a.nrows),
            ));
        }
        let Some((path, _)) = gpu_path_on::<T>(gpu, self.choice(), &a.stats, 1)? else {
            return Ok(());
        };
        self.launch(gpu, path, a, x, y)
    }

    /// [`Spmv::run_device`] on device memory the caller owns: `x` holds `a.ncols` values and
    /// `y` `a.nrows`, ordered after the work queued on `stream` and before the work queued
    /// there next, as [`crate::Spmm::run_on_stream`].
    ///
    /// # Safety
    /// As [`crate::Spmm::run_on_stream`].
    pub unsafe fn run_on_stream(
        &self,
        gpu: &Gpu,
        a: &PreparedCsr<T>,
        x: u64,
        y: u64,
        stream: usize,
    ) -> Result<()> {
        let Some((path, _)) = gpu_path_on::<T>(gpu, self.choice(), &a.stats, 1)? else {
            return Ok(());
        };
        let fence = crate::device::Fence::new(gpu)?;
        unsafe {
            fence.after(gpu, stream)?;
            super::cuda::launch(
                gpu, path, a, 1, x, 1, y, 1, self.alpha, self.beta, self.split,
            )?;
            fence.before(gpu, stream)
        }
    }

    fn choice(&self) -> Choice {
        Choice {
            force: self.force,
            ..Choice::default()
        }
    }

    fn launch(
        &self,
        gpu: &Gpu,
        path: GpuPath,
        a: &PreparedCsr<T>,
        x: &cudarc::driver::CudaSlice<T>,
        y: &cudarc::driver::CudaSlice<T>,
    ) -> Result<()> {
        super::cuda::launch(
            gpu,
            path,
            a,
            1,
            gpu.ptr(x),
            1,
            gpu.ptr(y),
            1,
            self.alpha,
            self.beta,
            self.split,
        )
    }
}
