//! Benchmark of the SEACells fit on Gaussian mixtures (one cluster per 13.3 cells per
//! metacell, as the peer's benchmark sizes them) or on branching trajectories (a continuous
//! manifold, the case SEACells is used for): the whole fit (kNN, kernel, diffusion,
//! initialisation, iterations) with each stage's seconds, the iterations, mean purity against
//! the generator's labels (clusters, or trajectory segments), the process's peak resident
//! memory and, on the GPU, the fit's peak device memory.

use std::time::Instant;

use sparrow::device::Device;
use sparrow::solvers::seacells::fit::{fit_on, gaussian_mixture, mean_purity, purity, Config};
use sparrow::solvers::seacells::synthetic::branching_trajectories;
use sparrow::{Error, Result};

/// The embeddings `bench seacells --data` generates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Data {
    /// Gaussian mixtures, a cluster per 13 metacells.
    Mixture,
    /// Branching trajectories: a trunk and 4 arms.
    Trajectories,
}

impl Data {
    /// The data named `name` (`--data`).
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "mixture" => Ok(Data::Mixture),
            "trajectories" => Ok(Data::Trajectories),
            _ => Err(Error::invalid(
                "--data",
                format!("{name:?} is not mixture or trajectories"),
            )),
        }
    }
}

/// Arms of the branching trajectories.
pub const BRANCHES: usize = 4;

/// The sizes of the performance targets: (cells, dims, metacells).
pub const SIZES: [(usize, usize, usize); 3] =
    [(20_000, 30, 266), (50_000, 50, 666), (100_000, 50, 1_333)];

/// One measured size.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SeacellsRecord {
    /// Cells.
    pub cells: usize,
    /// Embedding dimensions.
    pub dims: usize,
    /// Metacells.
    pub metacells: usize,
    /// The generator.
    pub data: Data,
    /// Labels of the generator: mixture clusters, or trajectory segments.
    pub clusters: usize,
    /// The whole fit, seconds.
    pub seconds: f64,
    /// Seconds per stage.
    pub stages: Vec<(&'static str, f64)>,
    /// Outer iterations.
    pub iterations: usize,
    /// Frank-Wolfe steps of each B update.
    pub b_steps: Vec<usize>,
    /// Products of the diffusion operator with the eigensolver's block.
    pub diffusion_iterations: usize,
    /// The B updates' seconds by part.
    pub b_parts: Vec<(&'static str, f64)>,
    /// The A updates' and the products' seconds by part.
    pub fit_parts: Vec<(&'static str, f64)>,
    /// Whether the RSS converged.
    pub converged: bool,
    /// Mean purity of the metacells against the mixture's labels.
    pub purity_mean: f64,
    /// Peak resident memory of the process so far (VmHWM), MB, where the OS reports it.
    pub peak_mb: Option<f64>,
    /// Peak GPU memory the fit added to what was in use before it, MB, sampled every
    /// millisecond (a fit on the GPU only).
    pub gpu_peak_mb: Option<f64>,
}

/// Runs `work` while a thread samples the GPU's memory in use every millisecond; returns its
/// result and the highest sample above the first, in MB. cuMemGetInfo counts every process
/// on the device, so the figure is the fit's on a GPU of its own.
fn with_gpu_peak<T>(
    gpu: &sparrow::device::Gpu,
    work: impl FnOnce() -> Result<T>,
) -> Result<(T, f64)> {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let base = gpu.memory_in_use()?;
    let (stop, peak) = (AtomicBool::new(false), AtomicU64::new(base));
    let out = std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                if let Ok(used) = gpu.memory_in_use() {
                    peak.fetch_max(used, Ordering::Relaxed);
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        });
        let out = work();
        stop.store(true, Ordering::Relaxed);
        out
    })?;
    let added = peak.load(Ordering::Relaxed).saturating_sub(base);
    Ok((out, added as f64 / (1024.0 * 1024.0)))
}

/// The process's peak resident set (Linux `VmHWM`), in MB.
pub fn peak_rss_mb() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Fits one embedding of `data` per size on `device` with `max_iter` iterations at most (the
/// targets stop at 10).
pub fn run(
    device: &Device,
    data: Data,
    sizes: &[(usize, usize, usize)],
    max_iter: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<SeacellsRecord>> {
    let mut out = Vec::new();
    for &(cells, dims, metacells) in sizes {
        progress(&format!("{cells} x {dims}, {metacells} metacells"));
        let (x, labels, clusters) = match data {
            Data::Mixture => {
                let clusters = (metacells / 13).max(2);
                let (x, l) = gaussian_mixture(cells, dims, clusters, 0);
                (x, l, clusters)
            }
            Data::Trajectories => {
                let (x, l) = branching_trajectories(cells, dims, BRANCHES, 0);
                (x, l, BRANCHES + 1)
            }
        };
        let mut cfg = Config::new(metacells);
        cfg.max_iter = max_iter;
        cfg.min_iter = cfg.min_iter.min(max_iter);
        let t0 = Instant::now();
        let (f, gpu_peak_mb) = match device.gpu() {
            Some(g) => {
                let (f, mb) = with_gpu_peak(g, || fit_on(device, &x, &cfg, &mut |_| {}))?;
                (f, Some(mb))
            }
            None => (fit_on(device, &x, &cfg, &mut |_| {})?, None),
        };
        let seconds = t0.elapsed().as_secs_f64();
        let names: Vec<String> = labels.iter().map(|l| l.to_string()).collect();
        let p = purity(&f.assignments, &names, metacells)?;
        out.push(SeacellsRecord {
            cells,
            dims,
            metacells,
            data,
            clusters,
            seconds,
            stages: f.stage_seconds.clone(),
            iterations: f.iterations,
            b_steps: f.b_steps.clone(),
            diffusion_iterations: f.diffusion_iterations,
            b_parts: f.b_parts.clone(),
            fit_parts: f.fit_parts.clone(),
            converged: f.converged,
            purity_mean: mean_purity(&p),
            peak_mb: peak_rss_mb(),
            gpu_peak_mb,
        });
    }
    Ok(out)
}
