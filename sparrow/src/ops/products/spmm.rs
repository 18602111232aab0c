//! `C = alpha * A * B + beta * C` for CSR A and row-major dense B and C with leading
//! dimensions, in f32 or f64.
//!
//! Cost: `2 * nnz(A) * N` flops; at least `nnz * (4 + size_of::<T>())` bytes of A, B's
//! referenced rows and C once (twice when `beta != 0`). `beta == 0` never reads C.

use super::formats::Formats;
pub use super::path::GpuPath;
use super::PreparedCsr;
use super::{cpu, cuda, plan};
use crate::device::{DeviceDense, Gpu};
use crate::matrix::{Csr, Dense};
use crate::ops::products::stats::RowStats;
use crate::ops::{Backend, Plan};
use crate::{Device, Error, Result, Scalar};

/// An SpMM request: the scalars, and optionally a forced GPU path (tests use it to reach
/// every kernel).
///
/// ```
/// use sparrow::matrix::{Csr, Dense};
/// use sparrow::ops::spmm::Spmm;
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
        plan_for::<T>("spmm", device, stats, n, self.force, self.split)
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
                let plan = self.plan(device, &stats, b.ncols())?;
                let bytes =
                    device_bytes::<T>(a, &stats, b.data().len() + c.data().len(), b.ncols());
                gpu.ensure_fits(bytes, "this SpMM")?;
                let want = path_formats::<T>(gpu, self.force, &stats, b.ncols())?;
                let da = PreparedCsr::upload_for(gpu, a, stats, want)?;
                let db = DeviceDense::upload(gpu, b)?;
                // C travels even when beta == 0 so padding between ncols and ld survives.
                let mut dc = DeviceDense::upload(gpu, c)?;
                self.run_device(gpu, &da, &db, &mut dc)?;
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
        let Some((path, _)) = gpu_path_on::<T>(gpu, self.force, &a.stats, b.ncols)? else {
            return Ok(());
        };
        cuda::spmm(gpu, path, self.split, self.alpha, a, b, self.beta, c)
    }
}

/// Device memory an SpMM or SpMV on host data needs: A with its long-row chunk lists, SpMV
/// work blocks (and packed columns), a pattern of diagonals with its rows' bits, the 16-bit
/// column offsets of a matrix near its diagonal, the column-slice layout (f32), rows sorted by
/// length, row blocks, `dense_elems` elements of B and C, and the long rows' partial sums for
/// N columns.
pub fn device_bytes<T: Scalar>(a: &Csr<T>, st: &RowStats, dense_elems: usize, n: usize) -> u64 {
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
    let sliced = if st.sliced_for(s as usize) {
        let recs = a.nnz() as u64 + a.nnz() as u64 / 16 + 64 * st.slice_blocks() as u64;
        let stages = st.slice_groups() as u64
            * (a.ncols()
                .div_ceil(crate::ops::products::formats::slices::SLICE_COLS) as u64
                + 2)
            + a.nnz() as u64 / 1200;
        (4 + s) * recs
            + (4 + s) * st.pieces as u64
            + 4 * 36 * stages
            + 32 * st.slice_blocks() as u64
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
    gpu_path_tuned::<T>(force, stats, n, slices, &plan::SM90)
}

/// The GPU path for this request on this GPU with the reason, or None when there is nothing to
/// launch: the policy reads whether the GPU runs the column slices
/// ([`crate::ops::products::formats::slices::runs_on`]) and its architecture's tuning. The plan
/// and the launch both ask here, so what `--explain` prints is what runs.
pub(crate) fn gpu_path_on<T: Scalar>(
    gpu: &Gpu,
    force: Option<GpuPath>,
    stats: &RowStats,
    n: usize,
) -> Result<Option<(GpuPath, String)>> {
    let limits = gpu.limits();
    let slices = crate::ops::products::formats::slices::runs_on(limits);
    let tuning = plan::ProductsTuning::for_arch(limits.compute_capability);
    gpu_path_tuned::<T>(force, stats, n, slices, tuning)
}

fn gpu_path_tuned<T: Scalar>(
    force: Option<GpuPath>,
    stats: &RowStats,
    n: usize,
    slices: bool,
    tuning: &plan::ProductsTuning,
) -> Result<Option<(GpuPath, String)>> {
    if stats.nrows == 0 || n == 0 {
        return Ok(None);
    }
    let elem = std::mem::size_of::<T>();
    match force {
        Some(p) => match p.why_not(n, stats, elem) {
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
        None => Ok(Some(plan::choose_with(stats, n, elem, slices, tuning))),
    }
}

/// The formats the path [`gpu_path`] picks reads, for an upload that runs only that path.
pub(crate) fn path_formats<T: Scalar>(
    gpu: &Gpu,
    force: Option<GpuPath>,
    stats: &RowStats,
    n: usize,
) -> Result<Formats> {
    Ok(gpu_path_on::<T>(gpu, force, stats, n)?
        .map(|(p, _)| p.formats())
        .unwrap_or(Formats::NONE))
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
    force: Option<GpuPath>,
    split: bool,
) -> Result<Plan> {
    match device {
        Device::Cpu => Ok(cpu_plan(op)),
        Device::Cuda(gpu) => {
            let Some((path, mut reason)) = gpu_path_on::<T>(gpu, force, stats, n)? else {
                return Ok(Plan {
                    op,
                    backend: Backend::Cuda,
                    kernel: None,
                    shape: None,
                    reason: "the output is empty: nothing to launch".into(),
                });
            };
            let mut kernel = path.kernels(T::NAME, n, stats, split).join(" + ");
            if let Some(chunks) =
                cuda::chunk_kernel(path, T::NAME).filter(|_| split && stats.long_rows > 0)
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
                shape: Some(path.shape(stats, std::mem::size_of::<T>())?),
                reason,
            })
        }
    }
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
}
