//! Benchmark of segmented top-k: f32 keys uniform in [1, 2), largest, unsorted, fast
//! tie-break, on the shapes torch.topk and CUB were measured on; time per call with CUDA
//! events around the enqueued kernels (inputs already on the GPU).

use super::timing::time_gpu;
use crate::device::Gpu;
use crate::ops::topk::data::{keys, Pattern};
use crate::ops::topk::{GpuTopK, Segments, TopK};
use crate::{Device, Result};

/// (segment length, k, segments): the shapes of the top-k performance targets.
pub const SHAPES: [(usize, usize, usize); 7] = [
    (131_072, 2_048, 64),
    (262_144, 64, 1_024),
    (262_144, 2_048, 1_024),
    (2_097_152, 1_024, 16),
    (1_024, 16, 100_000),
    (8_192, 256, 4_096),
    (268_435_456, 1_024, 1),
];

/// One measured shape.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TopkRecord {
    /// Keys per segment.
    pub len: usize,
    /// k.
    pub k: usize,
    /// Number of segments.
    pub segments: usize,
    /// The plan's kernels.
    pub variant: String,
    /// Median time per call, ms.
    pub median_ms: f64,
    /// Fastest call, ms.
    pub min_ms: f64,
    /// Repetitions.
    pub reps: usize,
    /// Key bytes read once / median time, GB/s.
    pub key_gbs: f64,
    /// `key_gbs` over the copy bandwidth measured in this run.
    pub frac_copy_bw: f64,
}

/// Times every shape in `shapes` on `gpu`.
pub fn run(
    gpu: &std::sync::Arc<Gpu>,
    shapes: &[(usize, usize, usize)],
    reps: usize,
    bw: f64,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<TopkRecord>> {
    let device = Device::Cuda(gpu.clone());
    let mut out = Vec::new();
    for &(len, k, segments) in shapes {
        progress(&format!("topk len {len} k {k} x {segments}"));
        let data: Vec<f32> = keys(len * segments, Pattern::Uniform, 21);
        let req = TopK::largest(k);
        let segs = Segments::Fixed {
            count: segments,
            len,
        };
        let layout = req.layout(data.len(), segs, None)?;
        let plan = req.plan::<f32>(&device, &layout)?;
        let t = GpuTopK::<f32, f32>::new(gpu, &req, &data, &layout, None)?;
        let timing = time_gpu(gpu, 2, reps.max(10), || t.enqueue())?;
        let gbs = (data.len() * 4) as f64 / (timing.median_ms * 1e-3) / 1e9;
        out.push(TopkRecord {
            len,
            k,
            segments,
            variant: plan.kernel.unwrap_or_default(),
            median_ms: timing.median_ms,
            min_ms: timing.min_ms,
            reps: timing.reps,
            key_gbs: gbs,
            frac_copy_bw: gbs / bw,
        });
    }
    Ok(out)
}
