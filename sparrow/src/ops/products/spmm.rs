//! `C = alpha * A * B + beta * C` for CSR A and row-major dense B and C with leading
//! dimensions, in f32 or f64.
//!
//! Cost: `2 * nnz(A) * N` flops; at least `nnz * (4 + size_of::<T>())` bytes of A, B's
//! referenced rows and C once (twice when `beta != 0`). `beta == 0` never reads C.

use super::formats::Formats;
pub use super::path::GpuPath;
use super::PreparedCsr;
use super::{cpu, cuda, plan};
use cudarc::driver::CudaSlice;

use crate::device::{DeviceDense, Gpu};
use crate::matrix::{Csr, Dense};
use crate::ops::products::stats::RowStats;
use crate::ops::{Backend, Plan};
use crate::{Device, Error, Result, Scalar};

/// How a GPU SpMM orders the additions of each output element.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum SumOrder {
    /// The fastest path's order: rows may be split over lanes whose partial sums are combined,
    /// so the last bits of a sum may differ between paths, and so between N and matrices.
    #[default]
    Fast,
    /// One lane a row adds the row's products in entry order on every path
    /// (`GpuPath::in_entry_order`), the CPU backend's order, so a column's sums do not
    /// depend on N, the matrix's shape or the path: an iterative solver (SEACells' B update)
    /// sees the same sums in every chunk. Slower where the policy would split rows.
    Entry,
}

/// An SpMM request: the scalars, the summation order, and optionally a forced GPU path (tests
/// use it to reach every kernel).
///
/// ```
/// use sparrow::matrix::{Csr, Dense};
/// use sparrow::Spmm;
/// use sparrow::Device;
///
/// // A = [[2, 0], [1, 3]] times B = [[1, 10], [1, 20]]
/// let a = Csr::<f32>::from_triplets(2, 2, &[0, 1, 1], &[0, 0, 1], &[2.0, 1.0, 3.0])?;
/// let b = Dense::from_rows(2, 2, vec![1.0, 10.0, 1.0, 20.0])?;
/// let mut c = Dense::from_rows(2, 2, vec![0.0; 4])?;
/// Spmm::new().run(&Device::Cpu, &a, &b, &mut c)?;
/// assert_eq!((c.get(0, 1), c.get(1, 0), c.get(1, 1)), (20.0, 4.0, 70.0));
/// # Ok::<(), sparrow::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Spmm<T> {
    alpha: T,
    beta: T,
    force: Option<GpuPath>,
    split: bool,
    order: SumOrder,
}

impl<T: Scalar> Default for Spmm<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Scalar> Spmm<T> {
    /// `C = A * B` (alpha 1, beta 0).
    pub fn new() -> Self {
        Spmm {
            alpha: T::from_f64(1.0),
            beta: T::ZERO,
            force: None,
            split: true,
            order: SumOrder::Fast,
        }
    }
    /// Sets alpha.
    pub fn alpha(mut self, alpha: T) -> Self {
        self.alpha = alpha;
        self
    }
    /// Sets beta; 0 means C is not read.
    pub fn beta(mut self, beta: T) -> Self {
        self.beta = beta;
        self
    }
    /// Sets the summation order on the GPU (default [`SumOrder::Fast`]).
    pub fn order(mut self, order: SumOrder) -> Self {
        self.order = order;
        self
    }
    testing_hook! {
        /// Forces a GPU path instead of the policy's choice.
        fn force_path(mut self, path: GpuPath) -> Self {
            self.force = Some(path);
            self
        }
    }
    testing_hook! {
        /// Whether the GPU path splits rows longer than [`LONG_ROW`](crate::ops::products::stats::LONG_ROW) into
        /// chunks (default true); tests turn it off to reach the row kernels on long rows.
        fn split_long_rows(mut self, split: bool) -> Self {
            self.split = split;
            self
        }
    }
    /// The scalars `(alpha, beta)`.
    pub fn scalars(&self) -> (T, T) {
        (self.alpha, self.beta)
    }

    /// Checks shapes and scalars completely, before any work.
    pub fn validate(&self, a: &Csr<T>, b: &Dense<T>, c: &Dense<T>) -> Result<()> {
        check_shapes(
            a.nrows(),
            a.ncols(),
            (b.nrows(), b.ncols()),
            (c.nrows(), c.ncols()),
        )?;
        self.check_scalars()
    }

    fn check_scalars(&self) -> Result<()> {
        if !self.alpha.to_f64().is_finite() {
            return Err(Error::invalid(
                "alpha",
                format!("{:?} is not finite", self.alpha),
            ));
        }
        if !self.beta.to_f64().is_finite() {
            return Err(Error::invalid(
                "beta",
                format!("{:?} is not finite", self.beta),
            ));
        }
        Ok(())
    }

    /// Which backend and kernel would run for an A with these statistics and N columns.
    pub fn plan(&self, device: &Device, stats: &RowStats, n: usize) -> Result<Plan> {
        plan_for::<T>("spmm", device, stats, n, self.choice(), self.split)
    }

    /// The GPU path this request takes for these statistics and N on a GPU of `tuning` that runs
    /// the column slices or not, with its reason; None when there is nothing to launch. For tools
    /// that plan without a GPU, as [`Spmm::plan`] does with one.
    pub fn gpu_path_with(
        &self,
        stats: &RowStats,
        n: usize,
        slices: bool,
        tuning: &plan::ProductsTuning,
    ) -> Result<Option<(GpuPath, String)>> {
        gpu_path_tuned::<T>(self.choice(), stats, n, slices, tuning)
    }

    fn choice(&self) -> Choice {
        Choice {
            force: self.force,
            order: self.order,
        }
    }

    /// Runs on host data: on a GPU, copies in, computes, copies back.
    pub fn run(&self, device: &Device, a: &Csr<T>, b: &Dense<T>, c: &mut Dense<T>) -> Result<Plan> {
        self.validate(a, b, c)?;
        match device {
            // The CPU's plan reads no statistics: their pass would cost as much as the product.
            Device::Cpu => {
                cpu::spmm(self.alpha, a, b, self.beta, c);
                Ok(cpu_plan("spmm"))
            }
            Device::Cuda(gpu) => {
                let stats = crate::ops::products::RowStats::of(a);
                let tuning = plan::ProductsTuning::for_arch(gpu.limits().compute_capability);
                // One choice serves the plan, the upload's formats and the launch.
                let path = gpu_path_on::<T>(gpu, self.choice(), &stats, b.ncols())?;
                let plan =
                    cuda_plan::<T>("spmm", &stats, b.ncols(), path.clone(), self.split, tuning)?;
                let dense = b.data().len() + c.data().len();
                let bytes = device_bytes::<T>(a, &stats, dense, b.ncols(), tuning);
                gpu.ensure_fits(bytes, "this SpMM")?;
                let want = path.as_ref().map_or(Formats::NONE, |(p, _)| p.formats());
                let da = PreparedCsr::upload_for(gpu, a, stats, want)?;
                let db = DeviceDense::upload(gpu, b)?;
                // C travels even when beta == 0 so padding between ncols and ld survives.
                let mut dc = DeviceDense::upload(gpu, c)?;
                if let Some((p, _)) = path {
                    cuda::spmm(gpu, p, self.split, self.alpha, &da, &db, self.beta, &mut dc)?;
                }
                *c = dc.download(gpu)?;
                Ok(plan)
            }
        }
    }

    /// Enqueues the product on device-resident matrices with the path [`Spmm::plan`] names;
    /// does not wait for the stream.
    pub fn run_device(
        &self,
        gpu: &Gpu,
        a: &PreparedCsr<T>,
        b: &DeviceDense<T>,
        c: &mut DeviceDense<T>,
    ) -> Result<()> {
        check_shapes(a.nrows, a.ncols, (b.nrows, b.ncols), (c.nrows, c.ncols))?;
        self.check_scalars()?;
        let Some((path, _)) = gpu_path_on::<T>(gpu, self.choice(), &a.stats, b.ncols)? else {
            return Ok(());
        };
        cuda::spmm(gpu, path, self.split, self.alpha, a, b, self.beta, c)
    }

    /// [`Spmm::run_device`] on the first `n` columns of row-major device buffers with leading
    /// dimensions `ldb` and `ldc`, for solvers that keep their operands in column chunks of
    /// larger scratch. The caller guarantees the buffers hold `a.ncols` rows of `ldb` and
    /// `a.nrows` rows of `ldc` elements and `n` is at most both.
    pub(crate) fn run_device_cols(
        &self,
        gpu: &Gpu,
        a: &PreparedCsr<T>,
        n: usize,
        b: (&CudaSlice<T>, usize),
        c: (&CudaSlice<T>, usize),
    ) -> Result<()> {
        self.check_scalars()?;
        for (name, (buf, ld), rows) in [("b", b, a.ncols), ("c", c, a.nrows)] {
            if n > ld || buf.len() < rows * ld {
                return Err(Error::invalid(
                    name,
                    format!(
                        "holds {} elements, not {rows} rows of leading dimension {ld} for {n} columns",
                        buf.len()
                    ),
                ));
            }
        }
        let Some((path, _)) = gpu_path_on::<T>(gpu, self.choice(), &a.stats, n)? else {
            return Ok(());
        };
        let (bp, cp) = (gpu.ptr(b.0), gpu.ptr(c.0));
        cuda::launch(
            gpu, path, a, n, bp, b.1, cp, c.1, self.alpha, self.beta, self.split,
        )
    }

    /// [`Spmm::run_device`] on row-major device memory the caller owns (a torch or CuPy
    /// tensor): `b` = (address, leading dimension) of `a.ncols` x `n`, `c` likewise of
    /// `a.nrows` x `n`, after the work queued on `stream` (a raw `CUstream` of this GPU's
    /// context; 0 is the legacy default stream) and before the work queued there next. Does
    /// not wait for the GPU.
    ///
    /// # Safety
    /// The addresses must be device memory of this GPU's context holding those matrices of
    /// `T`, valid until the work on `stream` has run, and `stream` a live stream of the context.
    pub unsafe fn run_on_stream(
        &self,
        gpu: &Gpu,
        a: &PreparedCsr<T>,
        n: usize,
        b: (u64, usize),
        c: (u64, usize),
        stream: usize,
    ) -> Result<()> {
        self.check_scalars()?;
        if n > b.1 || n > c.1 {
            return Err(Error::invalid(
                "n",
                format!(
                    "{n} columns exceed the leading dimensions {} and {}",
                    b.1, c.1
                ),
            ));
        }
        let Some((path, _)) = gpu_path_on::<T>(gpu, self.choice(), &a.stats, n)? else {
            return Ok(());
        };
        let fence = crate::device::Fence::new(gpu)?;
        unsafe {
            fence.after(gpu, stream)?;
            cuda::launch(
                gpu, path, a, n, b.0, b.1, c.0, c.1, self.alpha, self.beta, self.split,
            )?;
            fence.before(gpu, stream)
        }
    }

    /// The formats the path this request takes for these statistics and N reads: an upload
    /// that runs only this request builds only these.
    pub fn formats_on(&self, gpu: &Gpu, stats: &RowStats, n: usize) -> Result<Formats> {
        Ok(gpu_path_on::<T>(gpu, self.choice(), stats, n)?
            .map_or(Formats::NONE, |(p, _)| p.formats()))
    }
}

/// What a request asks of the policy: a forced path (tests), or the policy's choice in a
/// summation order.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Choice {
    pub(crate) force: Option<GpuPath>,
    pub(crate) order: SumOrder,
}

/// Device memory an SpMM or SpMV on host data needs on a GPU of this `tuning`: A with its
/// long-row chunk lists, SpMV work blocks (and packed columns), a pattern of diagonals with its
/// rows' bits, the 16-bit column offsets of a matrix near its diagonal, the column-slice layout
/// (f32, where it pays with that GPU's groups), rows sorted by length, row blocks,
/// `dense_elems` elements of B and C, and the long rows' partial sums for N columns.
pub fn device_bytes<T: Scalar>(
    a: &Csr<T>,
    st: &RowStats,
    dense_elems: usize,
    n: usize,
    tuning: &plan::ProductsTuning,
) -> u64 {
    let s = std::mem::size_of::<T>() as u64;
    let a_bytes = 8 * (2 * a.nrows() as u64 + 1) + (4 + s) * a.nnz() as u64;
    let long = 8 * (2 * st.long_rows as u64 + 1) + 16 * st.long_chunks as u64;
    let stream = (48 + s + 4) * st.stream_blocks as u64;
    let packed = if st.packable() {
        2 * (a.nnz() + a.nrows()) as u64 + 4 * st.stream_blocks as u64
    } else {
        0
    };
    let diag = if st.diagonals > 0 {
        4 * (st.diagonals + st.nrows.div_ceil(32)) as u64
    } else {
        0
    };
    let near = if st.near() { 2 * a.nnz() as u64 } else { 0 };
    // The column slices: a second copy of the entries (4 + s bytes each, with under 1/16 more
    // padding), a piece's row, stage descriptors and the cut rows' sums.
    let sliced = if st.sliced_for(s as usize, tuning) {
        let recs = a.nnz() as u64 + a.nnz() as u64 / 16 + 64 * st.slice_blocks(tuning) as u64;
        let stages = st.slice_groups(tuning) as u64
            * (a.ncols()
                .div_ceil(crate::ops::products::formats::slices::SLICE_COLS) as u64
                + 2)
            + a.nnz() as u64 / 1200;
        (4 + s) * recs
            + (4 + s) * st.pieces as u64
            + 4 * 36 * stages
            + 32 * st.slice_blocks(tuning) as u64
    } else {
        0
    };
    let blocks = match st.block_rows(s as usize) {
        Some(rows) => {
            8 * (a.nrows().div_ceil(rows) + 1) as u64
                + (4 + s * rows as u64) * st.union_for(rows) as u64
        }
        None => 0,
    };
    a_bytes
        + long
        + stream
        + packed
        + diag
        + near
        + sliced
        + blocks
        + s * dense_elems as u64
        + s * (st.long_chunks * n) as u64
}

/// Checks that B is k x n and C is m x n for an m x k A.
pub fn check_shapes(m: usize, k: usize, b: (usize, usize), c: (usize, usize)) -> Result<()> {
    if b.0 != k {
        return Err(Error::invalid(
            "b",
            format!("has {} rows but A has {k} columns", b.0),
        ));
    }
    if c.0 != m || c.1 != b.1 {
        return Err(Error::invalid(
            "c",
            format!("is {} x {} but A * B is {m} x {}", c.0, c.1, b.1),
        ));
    }
    Ok(())
}

/// [`gpu_path_on`] for a GPU of sm_90's tuning that runs the column slices or not (`slices`),
/// so tests ask without a GPU.
#[cfg(test)]
fn gpu_path<T: Scalar>(
    force: Option<GpuPath>,
    stats: &RowStats,
    n: usize,
    slices: bool,
) -> Result<Option<(GpuPath, String)>> {
    let choice = Choice {
        force,
        order: SumOrder::Fast,
    };
    gpu_path_tuned::<T>(choice, stats, n, slices, &plan::SM90)
}

/// The GPU path for this request on this GPU with the reason, or None when there is nothing to
/// launch: the policy reads whether the GPU runs the column slices
/// ([`crate::ops::products::formats::slices::runs_on`]) and its architecture's tuning. The plan
/// and the launch both ask here, so what `--explain` prints is what runs.
pub(crate) fn gpu_path_on<T: Scalar>(
    gpu: &Gpu,
    choice: Choice,
    stats: &RowStats,
    n: usize,
) -> Result<Option<(GpuPath, String)>> {
    let limits = gpu.limits();
    let slices = crate::ops::products::formats::slices::runs_on(limits);
    let tuning = plan::ProductsTuning::for_arch(limits.compute_capability);
    gpu_path_tuned::<T>(choice, stats, n, slices, tuning)
}

fn gpu_path_tuned<T: Scalar>(
    choice: Choice,
    stats: &RowStats,
    n: usize,
    slices: bool,
    tuning: &plan::ProductsTuning,
) -> Result<Option<(GpuPath, String)>> {
    if stats.nrows == 0 || n == 0 {
        return Ok(None);
    }
    let elem = std::mem::size_of::<T>();
    match choice.force {
        Some(p) => match p.why_not(n, stats, elem, tuning) {
            Some(why) => Err(Error::invalid("path", format!("forced path {p:?} {why}"))),
            None if p == GpuPath::Sliced && !slices => Err(Error::invalid(
                "path",
                format!(
                    "forced path Sliced needs blocks of 1,024 threads with {} bytes of shared memory, more than this GPU allows",
                    crate::ops::products::formats::slices::smem_bytes(false)
                ),
            )),
            None => Ok(Some((p, format!("path forced to {p:?}")))),
        },
        None => {
            let (path, why) = plan::choose_with(stats, n, elem, slices, tuning);
            match choice.order {
                SumOrder::Fast => Ok(Some((path, why))),
                SumOrder::Entry if path.in_entry_order() == path => Ok(Some((path, why))),
                SumOrder::Entry => {
                    let row = path.in_entry_order();
                    Ok(Some((
                        row,
                        format!("{why}; in entry order, its columns on the row kernel: {row:?}"),
                    )))
                }
            }
        }
    }
}

/// The CPU backend's plan, the same for every matrix.
pub(crate) fn cpu_plan(op: &'static str) -> Plan {
    Plan {
        op,
        backend: Backend::Cpu,
        kernel: None,
        shape: None,
        reason: format!(
            "the device is the CPU: rayon over rows in tasks of about {} entries, longer rows in pieces of that many",
            crate::ops::products::row_work::PIECE
        ),
    }
}

pub(crate) fn plan_for<T: Scalar>(
    op: &'static str,
    device: &Device,
    stats: &RowStats,
    n: usize,
    choice: Choice,
    split: bool,
) -> Result<Plan> {
    match device {
        Device::Cpu => Ok(cpu_plan(op)),
        Device::Cuda(gpu) => {
            let path = gpu_path_on::<T>(gpu, choice, stats, n)?;
            let tuning = plan::ProductsTuning::for_arch(gpu.limits().compute_capability);
            cuda_plan::<T>(op, stats, n, path, split, tuning)
        }
    }
}

/// The GPU plan of the path a request chose (None: nothing to launch) on a GPU of this
/// `tuning`.
pub(crate) fn cuda_plan<T: Scalar>(
    op: &'static str,
    stats: &RowStats,
    n: usize,
    path: Option<(GpuPath, String)>,
    split: bool,
    tuning: &plan::ProductsTuning,
) -> Result<Plan> {
    let Some((path, mut reason)) = path else {
        return Ok(Plan {
            op,
            backend: Backend::Cuda,
            kernel: None,
            shape: None,
            reason: "the output is empty: nothing to launch".into(),
        });
    };
    let mut kernel = path.kernels(T::NAME, n, stats, split).join(" + ");
    if let Some(chunks) = cuda::chunk_kernel(path, T::NAME).filter(|_| split && stats.long_rows > 0)
    {
        kernel = format!(
            "{kernel} + {chunks} + {}",
            crate::kernels::combine_name(T::NAME)
        );
        reason = format!(
            "{reason}; {} row(s) longer than {} split into {} chunks of {}, combined in order by a second kernel",
            stats.long_rows,
            crate::ops::products::stats::LONG_ROW,
            stats.long_chunks,
            crate::ops::products::stats::CHUNK
        );
    }
    Ok(Plan {
        op,
        backend: Backend::Cuda,
        kernel: Some(kernel),
        shape: Some(path.shape(stats, std::mem::size_of::<T>(), tuning)?),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::gen;

    fn refusal<T: Scalar>(a: &Csr<T>, rows: u32) -> String {
        let p = GpuPath::RowBlock {
            rows,
            cols: 8,
            ksplit: 1,
            tiles: 2,
        };
        match gpu_path::<T>(Some(p), &crate::ops::products::RowStats::of(a), 64, true) {
            Err(e) => e.to_string(),
            Ok(r) => panic!("{p:?} accepted: {r:?}"),
        }
    }

    /// A forced row-block path runs only on the height the upload builds for the matrix and
    /// value type, and the refusal names both counts and what is built.
    #[test]
    fn forced_row_blocks_of_a_height_not_built_are_refused() {
        let (b32, b64) = (
            gen::banded::<f32>(2_001, 64, 41).unwrap(),
            gen::banded::<f64>(2_001, 64, 41).unwrap(),
        );
        let ok = |p| {
            matches!(
                gpu_path::<f32>(Some(p), &crate::ops::products::RowStats::of(&b32), 64, true),
                Ok(Some(_))
            )
        };
        assert!(ok(GpuPath::RowBlock {
            rows: 8,
            cols: 8,
            ksplit: 1,
            tiles: 2
        }));
        let e = refusal(&b32, 4);
        assert!(
            e.contains("forced path") && e.contains("distinct columns"),
            "{e}"
        );
        assert!(
            e.contains("builds blocks of 8 rows") && e.contains("f32"),
            "{e}"
        );
        let e = refusal(&b64, 8);
        assert!(
            e.contains("builds blocks of 4 rows") && e.contains("f64"),
            "{e}"
        );
        let u = gen::uniform::<f32>(2_001, 2_001, 16, 43).unwrap();
        for rows in [4, 8] {
            let e = refusal(&u, rows);
            assert!(e.contains("no row blocks") && !e.contains(" over 8"), "{e}");
        }
    }

    /// The deep row kernels exist for f32 only: forced on f64 values, refused by name.
    #[test]
    fn forced_deep_row_kernels_take_f32_only() {
        let u32s = gen::uniform::<f32>(2_001, 2_001, 16, 43).unwrap();
        let u64s = gen::uniform::<f64>(2_001, 2_001, 16, 43).unwrap();
        let deep = [
            GpuPath::RowVec {
                cols: 8,
                ksplit: 1,
                tiles: 1,
                deep: true,
            },
            GpuPath::Sorted {
                cols: 8,
                lane_entries: 32,
                deep: true,
            },
        ];
        for p in deep {
            assert!(matches!(
                gpu_path::<f32>(
                    Some(p),
                    &crate::ops::products::RowStats::of(&u32s),
                    32,
                    true
                ),
                Ok(Some(_))
            ));
            let e = gpu_path::<f64>(
                Some(p),
                &crate::ops::products::RowStats::of(&u64s),
                32,
                true,
            )
            .unwrap_err()
            .to_string();
            assert!(
                e.contains("path") && e.contains("f32 values only") && e.contains("f64"),
                "{e}"
            );
        }
        let two = GpuPath::RowVec {
            cols: 8,
            ksplit: 1,
            tiles: 2,
            deep: true,
        };
        let e = gpu_path::<f32>(
            Some(two),
            &crate::ops::products::RowStats::of(&u32s),
            128,
            true,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("one segment a lane"), "{e}");
    }

    /// Entry order leaves every matrix on a row kernel with one entry lane a row, and keeps
    /// the policy's choice where it already is one.
    #[test]
    fn entry_order_runs_one_entry_lane_a_row() {
        let mats = [
            gen::banded::<f64>(4_001, 64, 41).unwrap(),
            gen::uniform::<f64>(4_001, 4_001, 16, 43).unwrap(),
            gen::power_law::<f64>(4_001, 4_001, 12.0, 900, 1.2, 47).unwrap(),
            gen::block_diagonal::<f64>(100, 40, 5).unwrap(),
            gen::stencil_2d::<f64>(60, 60, 3).unwrap(),
        ];
        let (fast, entry) = (
            Spmm::<f64>::new(),
            Spmm::<f64>::new().order(SumOrder::Entry),
        );
        let mut moved = 0;
        for a in &mats {
            let st = RowStats::of(a);
            for n in [1, 2, 4, 8, 16, 32, 64, 128] {
                let (f, _) = fast
                    .gpu_path_with(&st, n, true, &plan::SM90)
                    .unwrap()
                    .unwrap();
                let (e, why) = entry
                    .gpu_path_with(&st, n, true, &plan::SM90)
                    .unwrap()
                    .unwrap();
                assert!(
                    matches!(e, GpuPath::RowVec { ksplit: 1, .. }),
                    "n {n}: {e:?} ({why})"
                );
                assert_eq!(e.why_not(n, &st, 8, &plan::SM90), None, "n {n}: {e:?}");
                if f == e {
                    assert!(!why.contains("entry order"), "{why}");
                } else {
                    moved += 1;
                    assert!(why.contains(&format!("{e:?}")), "{why}");
                }
            }
        }
        assert!(moved > 0, "no case left its path: the test reaches nothing");
    }
}
