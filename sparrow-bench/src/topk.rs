//! Benchmark of segmented top-k, largest, unsorted, on the shapes torch.topk and CUB were
//! measured on; time per call with CUDA events around the enqueued kernels (inputs already on
//! the GPU). The targets are f32 keys uniform in [1, 2) with the fast tie-break; the other
//! cases (tie-breaks, adversarial patterns, bf16) are held to those times.

use super::timing::{time_cpu, time_gpu};
use half::bf16;
use sparrow::device::Gpu;
use sparrow::ops::topk::data::{keys, Pattern};
use sparrow::ops::topk::key::Key;
use sparrow::ops::topk::plan::cluster_ctas;
use sparrow::ops::topk::{GpuPath, GpuTopK, Segments, TieBreak, TopK};
use sparrow::{Device, Error, Result};

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

/// (segment length, k, segments): serving shapes, the small batches of long rows that model
/// serving runs (sampling over a 128K-256K vocabulary, a sparse-attention indexer picking 2,048
/// of 163,840 keys per query), where a call's latency matters more than its bandwidth.
pub const SERVING: [(usize, usize, usize); 5] = [
    (163_840, 2_048, 4),
    (131_072, 2_048, 1),
    (131_072, 50, 1),
    (131_072, 50, 64),
    (32_768, 2_048, 16),
];

/// The named shape sets of `bench topk --set`.
pub fn shape_set(name: &str) -> Result<&'static [(usize, usize, usize)]> {
    match name {
        "targets" => Ok(&SHAPES),
        "serving" => Ok(&SERVING),
        _ => Err(Error::invalid(
            "--set",
            format!("{name:?} is not targets or serving"),
        )),
    }
}

/// Key types the benchmark times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchKey {
    /// f32 keys.
    F32,
    /// bf16 keys.
    Bf16,
}

impl BenchKey {
    /// The key type named `name` (`--dtype`).
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "f32" => Ok(BenchKey::F32),
            "bf16" => Ok(BenchKey::Bf16),
            other => Err(Error::invalid(
                "--dtype",
                format!("bench topk times f32 or bf16 keys, not {other:?}"),
            )),
        }
    }

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            BenchKey::F32 => "f32",
            BenchKey::Bf16 => "bf16",
        }
    }
}

/// Patterns the benchmark generates, by name.
pub const PATTERNS: [(&str, Pattern); 6] = [
    ("uniform", Pattern::Uniform),
    ("all-equal", Pattern::AllEqual),
    ("two-values", Pattern::TwoValues),
    ("heavy-ties", Pattern::HeavyTies),
    ("ascending", Pattern::Ascending),
    ("shared-high-bits", Pattern::SharedHighBits),
];

/// The entry of [`PATTERNS`] named `name` (`--pattern`).
pub fn pattern(name: &str) -> Result<(&'static str, Pattern)> {
    PATTERNS
        .iter()
        .find(|(n, _)| *n == name)
        .copied()
        .ok_or_else(|| {
            let names: Vec<&str> = PATTERNS.iter().map(|(n, _)| *n).collect();
            Error::invalid(
                "--pattern",
                format!("unknown pattern {name:?}; choose from {}", names.join(", ")),
            )
        })
}

/// What is timed besides the shape.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    /// Key type.
    pub key: BenchKey,
    /// Key pattern: its name and the generator's pattern (an entry of [`PATTERNS`]).
    pub pattern: (&'static str, Pattern),
    /// Tie-break.
    pub tie: TieBreak,
}

/// One measured shape.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TopkRecord {
    /// Key type.
    pub key: String,
    /// Key pattern.
    pub pattern: String,
    /// Tie-break.
    pub tie: String,
    /// Keys per segment.
    pub len: usize,
    /// k.
    pub k: usize,
    /// Number of segments.
    pub segments: usize,
    /// The plan's kernels, or `cpu` for the CPU backend.
    pub variant: String,
    /// Median time per call, ms.
    pub median_ms: f64,
    /// Fastest call, ms.
    pub min_ms: f64,
    /// Repetitions.
    pub reps: usize,
    /// Key bytes read once / median time, GB/s.
    pub key_gbs: f64,
    /// `key_gbs` over the bandwidth measured in this run: the GPU's copy, or the host's read
    /// for the CPU backend ([`run_cpu`]).
    pub frac_copy_bw: f64,
}

/// Times every shape in `shapes` for every case in `cases` on `gpu`; with `sweep`, a plan on
/// the staged filter is timed again on the register filter (the crossover between them), and
/// a shape the cluster path takes on the filter too (or on the cluster, where the plan picks
/// another path).
pub fn run(
    gpu: &std::sync::Arc<Gpu>,
    shapes: &[(usize, usize, usize)],
    cases: &[Case],
    reps: usize,
    bw: f64,
    sweep: bool,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<TopkRecord>> {
    run_on(Some(gpu), shapes, cases, (reps, bw, sweep), progress)
}

/// Times every shape in `shapes` for every case in `cases` on the CPU backend: a whole call
/// on host keys, its outputs allocated as a caller's would be; `bw` is the host's read
/// bandwidth ([`host_read_bandwidth`](crate::host_read_bandwidth)).
pub fn run_cpu(
    shapes: &[(usize, usize, usize)],
    cases: &[Case],
    reps: usize,
    bw: f64,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<TopkRecord>> {
    run_on(None, shapes, cases, (reps, bw, false), progress)
}

/// [`run`] on `gpu`, or [`run_cpu`] without one.
fn run_on(
    gpu: Option<&std::sync::Arc<Gpu>>,
    shapes: &[(usize, usize, usize)],
    cases: &[Case],
    (reps, bw, sweep): (usize, f64, bool),
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<TopkRecord>> {
    let mut out = Vec::new();
    for &shape in shapes {
        for case in cases {
            let (len, k, segments) = shape;
            progress(&format!(
                "topk {} {} len {len} k {k} x {segments}{}",
                case.key.name(),
                case.pattern.0,
                if gpu.is_some() { "" } else { " on the CPU" }
            ));
            let n = len * segments;
            let pat = case.pattern.1;
            let t = (shape, *case, reps, bw, sweep);
            out.extend(match (case.key, gpu) {
                (BenchKey::F32, Some(g)) => one(g, t, &keys::<f32>(n, pat, 21))?,
                (BenchKey::Bf16, Some(g)) => one(g, t, &bf16_keys(n, pat))?,
                (BenchKey::F32, None) => vec![one_cpu(t, &keys::<f32>(n, pat, 21))?],
                (BenchKey::Bf16, None) => vec![one_cpu(t, &bf16_keys(n, pat))?],
            });
        }
    }
    Ok(out)
}

fn one_cpu<K: Key>(
    ((len, k, segments), case, reps, bw, _): Setup,
    data: &[K],
) -> Result<TopkRecord> {
    let req = TopK::largest(k).tie_break(case.tie);
    let segs = Segments::Fixed {
        count: segments,
        len,
    };
    let timing = time_cpu(1, reps.max(10), || {
        std::hint::black_box(req.run_keys(&Device::Cpu, data, segs)?);
        Ok(())
    })?;
    Ok(record(
        (len, k, segments),
        case,
        "cpu".to_string(),
        &timing,
        std::mem::size_of_val(data),
        bw,
    ))
}

/// bf16 keys of `pattern`; uniform ones are f32 uniform in [0, 1) rounded to bf16 (as a
/// framework's random bf16 tensor), since bf16 holds only 128 values in [1, 2).
fn bf16_keys(n: usize, pat: Pattern) -> Vec<bf16> {
    if pat == Pattern::Uniform {
        keys::<f32>(n, pat, 21)
            .into_iter()
            .map(|x| bf16::from_f32(x - 1.0))
            .collect()
    } else {
        keys::<bf16>(n, pat, 21)
    }
}

type Setup = ((usize, usize, usize), Case, usize, f64, bool);

fn one<K: Key>(
    gpu: &std::sync::Arc<Gpu>,
    ((len, k, segments), case, reps, bw, sweep): Setup,
    data: &[K],
) -> Result<Vec<TopkRecord>> {
    let device = Device::Cuda(gpu.clone());
    let req = TopK::largest(k).tie_break(case.tie);
    let segs = Segments::Fixed {
        count: segments,
        len,
    };
    let layout = req.layout(data.len(), segs, None)?;
    let plan = req.plan::<K>(&device, &layout)?;
    let mut reqs = vec![req.clone()];
    let kernels = plan.kernel.as_deref().unwrap_or("");
    if sweep && kernels.contains("filter_tma") {
        reqs.push(req.clone().staging(false));
    }
    // The cluster path against the filter, both ways round, where the cluster takes the shape.
    if sweep && cluster_ctas(len, gpu.limits()).is_some() {
        let other = if kernels.contains("cluster") {
            GpuPath::Filter
        } else {
            GpuPath::Cluster
        };
        reqs.push(req.force_path(Some(other)));
    }
    reqs.iter()
        .map(|req| {
            let plan = req.plan::<K>(&device, &layout)?;
            let t = GpuTopK::<K, K>::new(gpu, req, data, &layout, None)?;
            let timing = time_gpu(gpu, 2, reps.max(10), || t.enqueue())?;
            Ok(record(
                (len, k, segments),
                case,
                plan.kernel.unwrap_or_default(),
                &timing,
                std::mem::size_of_val(data),
                bw,
            ))
        })
        .collect()
}

fn record(
    (len, k, segments): (usize, usize, usize),
    case: Case,
    variant: String,
    timing: &crate::timing::Timing,
    bytes: usize,
    bw: f64,
) -> TopkRecord {
    let gbs = bytes as f64 / (timing.median_ms * 1e-3) / 1e9;
    TopkRecord {
        key: case.key.name().to_string(),
        pattern: case.pattern.0.to_string(),
        tie: format!("{:?}", case.tie),
        len,
        k,
        segments,
        variant,
        median_ms: timing.median_ms,
        min_ms: timing.min_ms,
        reps: timing.reps,
        key_gbs: gbs,
        frac_copy_bw: gbs / bw,
    }
}
