//! Host side of the GPU SpMM: argument marshalling and the launch. Enqueues on the GPU's
//! stream and does not wait.

use super::path::{diag_lanes_rows, fill_blocks, stream_shape, GpuPath, BLOCK};
use super::PreparedCsr;
use crate::device::{Args, DeviceDense, Gpu, LaunchShape};
use crate::kernels::{
    chunks_name, combine_name, cut_name, fill_name, rowvec_name, sliced_name, SPMM,
};
use crate::ops::products::formats::slices::{self, SLICE_WARPS};
use crate::ops::products::plan::ProductsTuning;
use crate::ops::products::stats::{LONG_ROW, NEAR_REACH};

/// Threads of a column-slice block (`SLICE_THREADS` in spmm.cu): the summing warps and the
/// warp that copies the stages in.
const SLICE_THREADS: u32 = 32 * (SLICE_WARPS as u32 + 1);
use crate::{Error, Result, Scalar};

/// The chunk kernel for a main path: the same column shape, a full warp per chunk. SpMV's
/// stream path chunks its long rows itself.
pub(crate) fn chunk_kernel(path: GpuPath, ty: &str) -> Option<String> {
    match path {
        GpuPath::RowVec {
            cols, tiles, deep, ..
        } => Some(chunks_name(ty, cols, tiles, deep)),
        GpuPath::Sorted { cols, deep, .. } => Some(chunks_name(ty, cols, 1, deep)),
        GpuPath::Window { cols, .. } => Some(chunks_name(ty, cols, 1, false)),
        GpuPath::AVec { .. } => Some(chunks_name(ty, 1, 1, false)),
        GpuPath::Stream
        | GpuPath::Packed
        | GpuPath::Diag
        | GpuPath::DiagLanes { .. }
        | GpuPath::Near { .. }
        | GpuPath::Sliced
        | GpuPath::RowBlock { .. } => None,
    }
}

/// Whether 16-byte loads and stores may serve a matrix at device address `ptr` with leading
/// dimension `ld` elements of `T`.
fn aligned<T>(ptr: u64, ld: usize) -> bool {
    let s = std::mem::size_of::<T>();
    ptr.is_multiple_of(16) && (ld * s).is_multiple_of(16)
}

/// The kernels' `vec` flags: bit 0 when B, bit 1 when C takes 16-byte loads and stores.
fn vec_flags<T>(b: u64, ldb: usize, c: u64, ldc: usize) -> i32 {
    aligned::<T>(b, ldb) as i32 | (aligned::<T>(c, ldc) as i32) << 1
}

/// The arguments of a row-vector kernel (`SPMM_ARGS` in spmm.cu): `nitems` rows (entry ranges
/// from `starts`, rows over `long_len` skipped; `ends` 0, or a list of the rows to take) or
/// chunks (`starts` and `ends`), and the vector flags for B and C.
#[allow(clippy::too_many_arguments)]
fn rowvec_args<T: Scalar>(
    gpu: &Gpu,
    a: &PreparedCsr<T>,
    nitems: usize,
    n: usize,
    starts: u64,
    ends: u64,
    long_len: i64,
    b: u64,
    ldb: usize,
    c: u64,
    ldc: usize,
    alpha: T,
    beta: T,
) -> Args {
    let mut args = Args::new();
    args.i64(nitems as i64)
        .i32(n as i32)
        .ptr(starts)
        .ptr(ends)
        .i64(long_len)
        .ptr(gpu.ptr(&a.col_idx))
        .ptr(gpu.ptr(&a.values))
        .ptr(b)
        .i64(ldb as i64)
        .ptr(c)
        .i64(ldc as i64)
        .scalar(alpha)
        .scalar(beta)
        .i32(vec_flags::<T>(b, ldb, c, ldc));
    args
}

/// The layout a path needs from the upload, or the refusal naming `path` with `why`.
fn built<X>(layout: &Option<X>, why: impl Into<String>) -> Result<&X> {
    layout.as_ref().ok_or_else(|| Error::invalid("path", why))
}

/// Refuses N > 1 for a path that computes SpMV only; `what` names it with its verb.
fn spmv_only(what: &str, n: usize) -> Result<()> {
    if n != 1 {
        return Err(Error::invalid(
            "path",
            format!("{what} SpMV only, not N = {n}"),
        ));
    }
    Ok(())
}

/// The SpMV kernels' trailing arguments: x and y with their strides, alpha and beta.
fn vectors<T: Scalar>(args: &mut Args, b: u64, ldb: usize, c: u64, ldc: usize, alpha: T, beta: T) {
    args.ptr(b)
        .i64(ldb as i64)
        .ptr(c)
        .i64(ldc as i64)
        .scalar(alpha)
        .scalar(beta);
}

fn blocks(items: usize, per_block: usize) -> Result<LaunchShape> {
    let b = u32::try_from(items.div_ceil(per_block)).map_err(|_| {
        Error::unsupported(format!("{items} work items need more than 2^32 blocks"))
    })?;
    Ok(LaunchShape::linear(b, BLOCK))
}

/// Enqueues `C = alpha * A * B + beta * C` with the kernel of `path`. B and C are described by
/// raw device addresses and leading dimensions so SpMV can pass vectors.
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch<T: Scalar>(
    gpu: &Gpu,
    path: GpuPath,
    a: &PreparedCsr<T>,
    n: usize,
    b: u64,
    ldb: usize,
    c: u64,
    ldc: usize,
    alpha: T,
    beta: T,
    split: bool,
) -> Result<()> {
    if a.nrows == 0 || n == 0 {
        return Ok(());
    }
    let tuning = ProductsTuning::for_arch(gpu.limits().compute_capability);
    if matches!(path, GpuPath::Diag | GpuPath::DiagLanes { .. }) {
        spmv_only("the diagonal path computes", n)?;
        let dg = built(
            &a.diag,
            "the diagonal path needs a matrix whose rows repeat one pattern of diagonals",
        )?;
        let kernel = gpu.kernel(&SPMM, &path.kernel_name(T::NAME))?;
        let mut args = Args::new();
        args.i64(a.nrows as i64)
            .ptr(gpu.ptr(&a.row_ptr))
            .ptr(gpu.ptr(&a.col_idx))
            .ptr(gpu.ptr(&a.values))
            .ptr(gpu.ptr(&dg.bits))
            .ptr(gpu.ptr(&dg.offsets))
            .i32(dg.ndiag as i32);
        if let GpuPath::DiagLanes { .. } = path {
            args.i32(dg.first.is_some() as i32)
                .i32(dg.first.unwrap_or(0))
                .i64(dg.run.start as i64)
                .i64(dg.run.end as i64)
                .i64(dg.run_at);
        }
        vectors(&mut args, b, ldb, c, ldc, alpha, beta);
        let rows = match path {
            GpuPath::DiagLanes { lanes, steps, .. } => diag_lanes_rows(lanes, steps),
            _ => BLOCK as usize,
        };
        let shape = blocks(a.nrows, rows)?;
        return unsafe { gpu.launch(&kernel, shape, &mut args) };
    }
    if let GpuPath::Near { lanes } = path {
        spmv_only("the near path computes", n)?;
        let off = built(&a.near, format!(
                    "the near path needs a matrix whose columns all lie within {NEAR_REACH} of their row"
                ))?;
        let kernel = gpu.kernel(&SPMM, &path.kernel_name(T::NAME))?;
        let mut args = Args::new();
        args.i64(a.nrows as i64)
            .ptr(gpu.ptr(&a.row_ptr))
            .ptr(gpu.ptr(off))
            .ptr(gpu.ptr(&a.values));
        vectors(&mut args, b, ldb, c, ldc, alpha, beta);
        let shape = blocks(a.nrows, (BLOCK / lanes) as usize)?;
        return unsafe { gpu.launch(&kernel, shape, &mut args) };
    }
    if path == GpuPath::Sliced {
        spmv_only("the column slices compute", n)?;
        let sl = built(&a.slices, "the column slices need a matrix of scattered columns whose blocks' copies of x pay (RowStats::sliceable) on a GPU that runs their kernel")?;
        // Bulk copies read x as 16-byte vectors from its first element.
        let bulk = slices::bulk_on(gpu.limits()) && ldb == 1 && b.is_multiple_of(16);
        let kernel = gpu.kernel(&SPMM, &sliced_name(T::NAME))?;
        let mut args = Args::new();
        args.ptr(gpu.ptr(&sl.recs))
            .ptr(gpu.ptr(&sl.block_base))
            .ptr(gpu.ptr(&sl.stage0))
            .ptr(gpu.ptr(&sl.desc))
            .ptr(gpu.ptr(&sl.piece0))
            .ptr(gpu.ptr(&sl.piece_out))
            .ptr(b)
            .i64(a.ncols as i64)
            .i64(ldb as i64)
            .ptr(c)
            .i64(ldc as i64)
            .scalar(alpha)
            .scalar(beta)
            .ptr(gpu.ptr(&sl.slots))
            .i32(bulk as i32);
        // With bulk copies a group is a cluster of its members; without, a block.
        let shape = if bulk {
            LaunchShape::linear((sl.groups * slices::SLICE_MEMBERS) as u32, SLICE_THREADS)
                .with_cluster(slices::SLICE_MEMBERS as u32)
        } else {
            LaunchShape::linear(sl.groups as u32, SLICE_THREADS)
        }
        .with_smem(slices::smem_bytes(bulk) as u32);
        unsafe { gpu.launch(&kernel, shape, &mut args) }?;
        if sl.cut > 0 {
            let kernel = gpu.kernel(&SPMM, &cut_name(T::NAME))?;
            let mut args = Args::new();
            args.i64(sl.cut as i64)
                .ptr(gpu.ptr(&sl.cut_rows))
                .ptr(gpu.ptr(&sl.cut_start))
                .ptr(gpu.ptr(&sl.slots))
                .ptr(c)
                .i64(ldc as i64)
                .scalar(alpha)
                .scalar(beta);
            unsafe { gpu.launch(&kernel, blocks(sl.cut, (BLOCK / 32) as usize)?, &mut args) }?;
        }
        return Ok(());
    }
    if matches!(path, GpuPath::Stream | GpuPath::Packed) {
        spmv_only("the planned blocks compute", n)?;
        let st = built(
            &a.stream,
            "the planned blocks need the SpMV work blocks, which this upload did not build",
        )?;
        let kernel = gpu.kernel(&SPMM, &path.kernel_name(T::NAME))?;
        let mut args = Args::new();
        args.ptr(gpu.ptr(&st.work));
        if path == GpuPath::Packed {
            let p = built(
                &a.packed,
                "the packed blocks need a matrix whose work blocks each span under 2^16 columns",
            )?;
            args.ptr(gpu.ptr(&p.base))
                .ptr(gpu.ptr(&p.ends))
                .ptr(gpu.ptr(&p.cols));
        } else {
            args.ptr(gpu.ptr(&a.row_ptr)).ptr(gpu.ptr(&a.col_idx));
        }
        args.ptr(gpu.ptr(&a.values));
        vectors(&mut args, b, ldb, c, ldc, alpha, beta);
        args.ptr(gpu.ptr(&st.partial)).ptr(gpu.ptr(&st.counters));
        // One block per work block of the partition this matrix holds (its own count and
        // capacity, not the statistics': those were the caller's to give).
        let shape = stream_shape(st.nblocks, st.items, std::mem::size_of::<T>())?;
        return unsafe { gpu.launch(&kernel, shape, &mut args) };
    }
    if let GpuPath::RowBlock { rows, .. } = path {
        let rb = built(
            &a.row_blocks,
            "the row blocks need a matrix whose neighbouring rows share their columns",
        )?;
        if rb.rows != rows as usize {
            return Err(Error::invalid(
                "path",
                format!(
                    "runs blocks of {rows} rows; this matrix's upload built blocks of {}",
                    rb.rows
                ),
            ));
        }
        let kernel = gpu.kernel(&SPMM, &path.kernel_name(T::NAME))?;
        let mut args = Args::new();
        args.i64(rb.nblocks as i64)
            .i64(a.nrows as i64)
            .i32(n as i32)
            .ptr(gpu.ptr(&rb.ptr))
            .ptr(gpu.ptr(&rb.cols))
            .ptr(gpu.ptr(&rb.vals))
            .ptr(b)
            .i64(ldb as i64)
            .ptr(c)
            .i64(ldc as i64)
            .scalar(alpha)
            .scalar(beta)
            .i32(vec_flags::<T>(b, ldb, c, ldc));
        return unsafe {
            gpu.launch(
                &kernel,
                path.shape(&a.stats, std::mem::size_of::<T>(), tuning)?,
                &mut args,
            )
        };
    }
    let long = a.long_rows.as_ref().filter(|_| split);
    let rows = gpu.ptr(&a.row_ptr);
    if let GpuPath::Sorted { cols, deep, .. } = path {
        // One launch per bin; the row list leaves out the long rows when they are split.
        let list = gpu.ptr(built(
            &a.sorted_rows,
            "the sorted path needs the rows by length, which this upload did not build",
        )?);
        for bin in path.sorted_bins(&a.stats, split) {
            let at = list + 8 * bin.start as u64;
            if bin.ksplit == 0 {
                let kernel = gpu.kernel(&SPMM, &fill_name(T::NAME))?;
                let mut args = Args::new();
                args.i64(bin.count as i64)
                    .i32(n as i32)
                    .ptr(at)
                    .ptr(c)
                    .i64(ldc as i64)
                    .scalar(alpha)
                    .scalar(beta)
                    .i32(aligned::<T>(c, ldc) as i32);
                let shape = LaunchShape::linear(fill_blocks(bin.count) as u32, BLOCK);
                unsafe { gpu.launch(&kernel, shape, &mut args) }?;
                continue;
            }
            let kernel = gpu.kernel(&SPMM, &rowvec_name(T::NAME, cols, bin.ksplit, 1, deep))?;
            let mut args = rowvec_args(
                gpu,
                a,
                bin.count,
                n,
                rows,
                at,
                i64::MAX,
                b,
                ldb,
                c,
                ldc,
                alpha,
                beta,
            );
            let per_block = (BLOCK / (cols * bin.ksplit)) as usize;
            unsafe { gpu.launch(&kernel, blocks(bin.count, per_block)?, &mut args) }?;
        }
    } else {
        let kernel = gpu.kernel(&SPMM, &path.kernel_for(T::NAME, n))?;
        let long_len = if long.is_some() {
            LONG_ROW as i64
        } else {
            i64::MAX
        };
        let mut args = rowvec_args(
            gpu, a, a.nrows, n, rows, 0, long_len, b, ldb, c, ldc, alpha, beta,
        );
        if let GpuPath::Window { .. } = path {
            args.i32(path.window_rows(&a.stats) as i32);
        }
        unsafe {
            gpu.launch(
                &kernel,
                path.shape(&a.stats, std::mem::size_of::<T>(), tuning)?,
                &mut args,
            )
        }?;
    }
    let Some(long) = long else { return Ok(()) };
    // Partial sums of every chunk (alpha 1, beta 0), then the ordered combine. The scratch is
    // freed in stream order after both kernels.
    let partial = gpu.alloc_zeroed::<T>(long.nchunks * n)?;
    let name = chunk_kernel(path, T::NAME)
        .ok_or_else(|| Error::unsupported(format!("{path:?} has no chunk kernel")))?;
    let chunks = gpu.kernel(&SPMM, &name)?;
    let (starts, ends, pp) = (
        gpu.ptr(&long.starts),
        gpu.ptr(&long.ends),
        gpu.ptr(&partial),
    );
    let (one, zero) = (T::from_f64(1.0), T::ZERO);
    let mut args = rowvec_args(
        gpu,
        a,
        long.nchunks,
        n,
        starts,
        ends,
        i64::MAX,
        b,
        ldb,
        pp,
        n,
        one,
        zero,
    );
    unsafe {
        gpu.launch(
            &chunks,
            blocks(long.nchunks, (BLOCK / 32) as usize)?,
            &mut args,
        )
    }?;
    let combine = gpu.kernel(&SPMM, &combine_name(T::NAME))?;
    let mut args = Args::new();
    args.i64(long.nrows as i64)
        .i32(n as i32)
        .ptr(gpu.ptr(&long.rows))
        .ptr(gpu.ptr(&long.chunk_ptr))
        .ptr(gpu.ptr(&partial))
        .ptr(c)
        .i64(ldc as i64)
        .scalar(alpha)
        .scalar(beta);
    unsafe { gpu.launch(&combine, blocks(long.nrows * n, BLOCK as usize)?, &mut args) }
}

/// Enqueues SpMM on device-resident matrices.
#[allow(clippy::too_many_arguments)]
pub(crate) fn spmm<T: Scalar>(
    gpu: &Gpu,
    path: GpuPath,
    split: bool,
    alpha: T,
    a: &PreparedCsr<T>,
    b: &DeviceDense<T>,
    beta: T,
    c: &mut DeviceDense<T>,
) -> Result<()> {
    let (bp, cp) = (gpu.ptr(&b.buf), gpu.ptr(&c.buf));
    launch(
        gpu, path, a, b.ncols, bp, b.ld, cp, c.ld, alpha, beta, split,
    )
}
