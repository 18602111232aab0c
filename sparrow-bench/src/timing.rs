//! Timing: CUDA events around each repetition on the GPU, a monotonic clock on the CPU;
//! warm-up first, then the median and minimum of the repetitions.

use std::time::Instant;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::CudaSlice;

use sparrow::device::{Args, Gpu, LaunchShape};
use sparrow::kernels::{KernelModule, COMMON};
use sparrow::{Error, Result};

/// The benchmarks' own kernels: the L2 flush of cold-cache timing. They live here, not in the
/// library, because only benchmarks launch them.
pub const BENCH: KernelModule = KernelModule {
    name: "bench",
    source: include_str!("flush.cu"),
    headers: &[COMMON],
    options: Vec::new,
    entry_points: || vec!["l2_flush".to_string()],
};

/// Empties the GPU's L2 of what a timed call reads, before each repetition of cold-cache
/// timing: back-to-back repetitions find part of a working set below the L2's size in it, by
/// an amount that depends on what ran before: on the H200 the same SpMV on the same buffers
/// (the 2-D stencil's packed blocks) measured 15.4-17.0 us right after the matrix's upload
/// and 17.8-19.0 us after other kernels, and 19.5-20.0 us wherever it ran with this flush.
pub struct L2Flush {
    buf: CudaSlice<u8>,
    sink: CudaSlice<u32>,
    words: usize,
}

impl L2Flush {
    /// A zeroed buffer of four times the L2 (at least 64 MiB), read once so that its lines
    /// are clean in DRAM before the first timed flush.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        let bytes = (4 * gpu.limits().l2_bytes as usize).max(64 << 20);
        let f = L2Flush {
            buf: gpu.alloc_zeroed(bytes)?,
            sink: gpu.alloc_zeroed(1)?,
            words: bytes / 16,
        };
        f.enqueue(gpu)?;
        gpu.synchronize()?;
        Ok(f)
    }

    /// Enqueues the read of the whole buffer.
    pub fn enqueue(&self, gpu: &Gpu) -> Result<()> {
        let k = gpu.kernel(&BENCH, "l2_flush")?;
        let blocks = (self.words.div_ceil(256) as u32).min(gpu.limits().sms * 8);
        let mut args = Args::new();
        args.ptr(gpu.ptr(&self.buf))
            .i64(self.words as i64)
            .ptr(gpu.ptr(&self.sink));
        unsafe { gpu.launch(&k, LaunchShape::linear(blocks, 256), &mut args) }
    }
}

/// Times of one benchmarked call.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Timing {
    /// Median over the repetitions, milliseconds.
    pub median_ms: f64,
    /// Fastest repetition, milliseconds.
    pub min_ms: f64,
    /// Repetitions timed.
    pub reps: usize,
}

fn summarize(mut v: Vec<f64>) -> Timing {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    };
    Timing {
        median_ms: median,
        min_ms: v[0],
        reps: n,
    }
}

/// Times `f` (which enqueues work on `gpu`'s stream) with events around each repetition.
pub fn time_gpu(
    gpu: &Gpu,
    warmup: usize,
    reps: usize,
    f: impl FnMut() -> Result<()>,
) -> Result<Timing> {
    time_gpu_flushed(gpu, warmup, reps, None, f)
}

/// [`time_gpu`], with `flush` enqueued before each timed repetition, outside its events.
pub fn time_gpu_flushed(
    gpu: &Gpu,
    warmup: usize,
    reps: usize,
    flush: Option<&L2Flush>,
    mut f: impl FnMut() -> Result<()>,
) -> Result<Timing> {
    let reps = reps.max(1);
    for _ in 0..warmup {
        f()?;
    }
    gpu.synchronize()?;
    let ctx = gpu.context();
    let ev = |_| {
        ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| Error::device("cuEventCreate", e))
    };
    let starts: Vec<_> = (0..reps).map(ev).collect::<Result<_>>()?;
    let ends: Vec<_> = (0..reps).map(ev).collect::<Result<_>>()?;
    for i in 0..reps {
        if let Some(fl) = flush {
            fl.enqueue(gpu)?;
        }
        starts[i]
            .record(gpu.stream())
            .map_err(|e| Error::device("cuEventRecord", e))?;
        f()?;
        ends[i]
            .record(gpu.stream())
            .map_err(|e| Error::device("cuEventRecord", e))?;
    }
    gpu.synchronize()?;
    let times = (0..reps)
        .map(|i| {
            starts[i]
                .elapsed_ms(&ends[i])
                .map(|t| t as f64)
                .map_err(|e| Error::device("cuEventElapsedTime", e))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(summarize(times))
}

/// Times a CPU call with a monotonic clock.
pub fn time_cpu(warmup: usize, reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<Timing> {
    for _ in 0..warmup {
        f()?;
    }
    let mut v = Vec::with_capacity(reps.max(1));
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        f()?;
        v.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(summarize(v))
}

/// The host's read bandwidth in GB/s: a sum over `bytes` across rayon's threads, median of
/// 10. A read, not a copy, because the products mostly read, and a copy's writes cost the host
/// a read of each line first that a count of bytes read plus written leaves out. The buffer is
/// written first, so no read finds a page the system has not mapped yet.
pub fn host_read_bandwidth(bytes: usize) -> Result<f64> {
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 17;
    let words = (bytes / 8).max(CHUNK);
    let src: Vec<u64> = (0..words as u64).into_par_iter().collect();
    let mut sum = 0u64;
    let t = time_cpu(2, 10, || {
        sum = src
            .par_chunks(CHUNK)
            .map(|c| c.iter().fold(0u64, |a, &w| a.wrapping_add(w)))
            .reduce(|| 0, u64::wrapping_add);
        Ok(())
    })?;
    std::hint::black_box(sum);
    Ok((words * 8) as f64 / (t.median_ms * 1e-3) / 1e9)
}

/// The device's copy bandwidth in GB/s: a device-to-device copy of `bytes`, counting bytes
/// read plus bytes written, median of 10.
pub fn copy_bandwidth(gpu: &Gpu, bytes: usize) -> Result<f64> {
    let src = gpu.alloc_zeroed::<u8>(bytes)?;
    let mut dst = gpu.alloc_zeroed::<u8>(bytes)?;
    let t = time_gpu(gpu, 2, 10, || {
        gpu.stream()
            .memcpy_dtod(&src, &mut dst)
            .map_err(|e| Error::device("cuMemcpyDtoD", e))
    })?;
    Ok(2.0 * bytes as f64 / (t.median_ms * 1e-3) / 1e9)
}
