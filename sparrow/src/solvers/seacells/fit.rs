//! The SEACells fit: kNN, kernel, diffusion map, initial archetypes, then alternating A and B
//! updates until the RSS settles; and what users take from it (hard and soft assignments,
//! per-metacell aggregates of a counts matrix, purity, compactness, separation).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::diffusion::{diffusion_kernel, diffusion_map, multiscale, multiscale_by_piece};
use super::fw::{btkb, kb_cols, rss, trace_k, update_a, update_b};
use super::gpu;
use super::graph::connected_components;
use super::init::{initial_archetypes, initial_archetypes_by_piece};
use super::kernel::{kernel_from_knn, knn, Symmetrize};
use super::rows::transpose;
use super::sparse::SpVec;
use crate::device::Device;
use crate::matrix::{Csr, Dense, Rng};
use crate::{Error, Result, Scalar};

/// Settings of a fit; `Config::new(n_metacells)` gives the documented defaults.
#[derive(Clone, Debug)]
pub struct Config {
    /// Metacells N, in 1..=cells.
    pub n_metacells: usize,
    /// Neighbours of the kernel's kNN graph, the cell included (default 15).
    pub knn: usize,
    /// Seed of the waypoint starts and the eigensolver (default 0).
    pub seed: u64,
    /// Outer iterations at least (default 10) and at most (default 100).
    pub min_iter: usize,
    /// See `min_iter`.
    pub max_iter: usize,
    /// Converged when |RSS_prev - RSS| < epsilon * RSS_0 (default 1e-3); 0 never stops early,
    /// so the fit runs max_iter iterations.
    pub epsilon: f64,
    /// Frank-Wolfe steps per update (default 50).
    pub fw_steps: usize,
    /// How the kNN graph is made symmetric (default union).
    pub symmetrize: Symmetrize,
    /// Read after each stage's and each outer iteration's report to `progress`: once set, the
    /// fit stops with
    /// [`Error::Interrupted`]. A front end sets it from another thread or from its progress
    /// callback, such as Python's Ctrl-C (default none).
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Config {
    /// The defaults for `n_metacells` metacells.
    pub fn new(n_metacells: usize) -> Self {
        Config {
            n_metacells,
            knn: 15,
            seed: 0,
            min_iter: 10,
            max_iter: 100,
            epsilon: 1e-3,
            fw_steps: 50,
            symmetrize: Symmetrize::Union,
            cancel: None,
        }
    }

    /// Refuses settings and an embedding no fit can use, before any work, with
    /// [`Error::InvalidArgument`] naming the argument as the CLI spells it without dashes
    /// (`embedding`, `n_metacells`, `knn`, `min_iter`, `max_iter`, `epsilon`, `fw_steps`).
    /// `fit` and [`fit_on`] call it first; a front end may call it earlier. The checks, in
    /// order: at least 2 cells (and no more than 32-bit cell indices reach), at least 1
    /// dimension, n_metacells in 1..=cells, knn in 2..=cells (the cell and a neighbour),
    /// max_iter positive, min_iter <= max_iter, epsilon finite and >= 0, fw_steps positive,
    /// then every value of the embedding finite (the first bad cell and dimension named).
    pub fn validate<T: Scalar>(&self, x: &Dense<T>) -> Result<()> {
        let (n, d) = (x.nrows(), x.ncols());
        if n < 2 {
            return Err(Error::invalid(
                "embedding",
                format!("{n} cells: at least 2 are needed"),
            ));
        }
        if d == 0 {
            return Err(Error::invalid(
                "embedding",
                format!("{n} cells x 0 dimensions: at least 1 dimension is needed"),
            ));
        }
        if self.n_metacells == 0 || self.n_metacells > n {
            return Err(Error::invalid(
                "n_metacells",
                format!(
                    "{} must be in 1..={n} (the number of cells)",
                    self.n_metacells
                ),
            ));
        }
        if self.knn < 2 || self.knn > n {
            return Err(Error::invalid(
                "knn",
                format!(
                    "{} must be in 2..={n} (the cell itself and at least one neighbour, at most the number of cells)",
                    self.knn
                ),
            ));
        }
        if self.max_iter == 0 {
            return Err(Error::invalid("max_iter", "0 must be positive"));
        }
        if self.min_iter > self.max_iter {
            return Err(Error::invalid(
                "min_iter",
                format!("{} exceeds max_iter = {}", self.min_iter, self.max_iter),
            ));
        }
        if !(self.epsilon.is_finite() && self.epsilon >= 0.0) {
            return Err(Error::invalid(
                "epsilon",
                format!(
                    "{} must be finite and at least 0 (0 runs max_iter iterations)",
                    self.epsilon
                ),
            ));
        }
        if self.fw_steps == 0 {
            return Err(Error::invalid("fw_steps", "0 must be positive"));
        }
        // The kNN's own checks: 32-bit cell indices and finite entries.
        super::kernel::check_embedding(x, self.knn)
    }
}

/// Neighbours and bandwidth of the diffusion map, as SEACells' palantir call.
const DIFFUSION_KNN: usize = 30;
const DIFFUSION_ADAPTIVE: usize = 10;
const DIFFUSION_EIGS: usize = 10;
/// The B update's stop: the duality gap under this fraction of its first value, after at least
/// this many steps (SEACells' values).
const B_GAP_TOL: f64 = 1e-3;
const B_MIN_STEPS: usize = 10;

/// A fitted model.
#[derive(Clone, Debug)]
pub struct Fit {
    /// Per cell, the metacell with the largest weight in its A column (lowest on ties).
    pub assignments: Vec<i32>,
    /// Per metacell, the cell with the largest weight in its B column (lowest on ties).
    pub archetypes: Vec<i64>,
    /// The initial archetype cells (waypoints, then greedy centres).
    pub initial_archetypes: Vec<i64>,
    /// A by cells: (metacell, weight), weights summing to 1.
    pub a: Vec<SpVec>,
    /// RSS after the first A update and after every iteration.
    pub rss: Vec<f64>,
    /// Outer iterations run.
    pub iterations: usize,
    /// Whether the RSS settled within max_iter.
    pub converged: bool,
    /// Seconds per stage, in order.
    pub stage_seconds: Vec<(&'static str, f64)>,
    /// The scaled diffusion components (for the metrics), one vector of n values per
    /// component. When the diffusion map's graph falls apart, each of its connected components
    /// (`diffusion_labels`) has its own map, written on its cells (see
    /// `super::diffusion::multiscale_by_piece`): compare cells only within one.
    pub components: Vec<Vec<f64>>,
    /// Connected components of the kernel's kNN graph (`knn` neighbours, symmetrised as
    /// configured; edges of positive weight): 1 on a connected graph. Above 1, K = M M is 0
    /// between cells of different components, so no archetype stands for cells of two of them,
    /// and each component needs metacells of its own: worth a warning, or a larger `knn`.
    pub graph_components: usize,
    /// Per cell, its connected component of the diffusion map's graph (30 neighbours), numbered
    /// from 0 in order of their lowest cell; all 0 (one component, and the map of the whole
    /// graph, as before) when that graph is connected. [`Fit::separation`] compares metacells
    /// only within one component.
    pub diffusion_labels: Vec<u32>,
    /// Frank-Wolfe steps of each B update.
    pub b_steps: Vec<usize>,
    /// Products of the diffusion operator with the eigensolver's block, summed over the pieces.
    pub diffusion_iterations: usize,
    /// The B updates' seconds by part, summed over the updates (see `super::fw::BUpdate`).
    pub b_parts: Vec<(&'static str, f64)>,
    /// The GPU A updates' seconds by part (see `super::gpu::Solver::update_a_timed`; none on
    /// the CPU), then the products between the updates: "t1" (B^T K B) and "rss".
    pub fit_parts: Vec<(&'static str, f64)>,
}

/// Adds `s` seconds to the part `name`, appended where it is new.
pub fn add_part(parts: &mut Vec<(&'static str, f64)>, name: &'static str, s: f64) {
    match parts.iter_mut().find(|p| p.0 == name) {
        Some(p) => p.1 += s,
        None => parts.push((name, s)),
    }
}

/// What a fit reports as it goes: the stage it starts, and each outer iteration with its RSS.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Progress {
    /// A stage begins: "knn", "kernel", "diffusion", "initialise", then "fit" (the iterations).
    Stage(&'static str),
    /// Outer iteration `0` (from 1) ended with RSS `1`.
    Iteration(usize, f64),
}

/// Fits SEACells to an n x d embedding on the CPU; `progress` hears each stage and iteration.
pub fn fit<T: Scalar>(
    x: &Dense<T>,
    cfg: &Config,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fit> {
    fit_on(&Device::Cpu, x, cfg, progress)
}

/// Where each stage of a fit on `device` runs, and why.
pub fn plan(device: &Device, d: usize) -> String {
    match device {
        Device::Cpu => {
            "seacells: Cpu; exact kNN, sparse Frank-Wolfe updates over rayon threads".into()
        }
        Device::Cuda(_) => {
            let knn = if d <= gpu::KNN_MAX_DIMS {
                "exact kNN on the GPU (f64 distance tiles with the CPU's arithmetic, segmented top-k)".to_string()
            } else {
                format!(
                    "exact kNN on the CPU ({d} dimensions exceed the GPU kernel's {})",
                    gpu::KNN_MAX_DIMS
                )
            };
            format!(
                "seacells: Cuda; {knn}; A update on the GPU (one block per cell, the CPU's arithmetic; up to {} metacells); B update on the GPU with K B kept and blended there and K A^T built there once per update, each step's argmin read through the bound G >= -K A^T and by one fused kernel over every cell when more than one column in eight stays open (up to {} metacells), beyond that as M (M V) in chunks of up to {} archetypes by SpMM; kernel, diffusion map, initialisation and RSS on the CPU",
                gpu::A_MAX_METACELLS,
                gpu::max_metacells(),
                gpu::B_CHUNK
            )
        }
    }
}

/// Fits SEACells on `device`: on a GPU the kNN, the A update and the B update's gradient run
/// there, the rest on the CPU (see `plan`).
///
/// ```
/// use sparrow::{seacells_fit, Dense, Device, SeacellsConfig};
///
/// // 300 cells in 10 dimensions around 3 centres, summarised by 12 metacells.
/// let (n, d) = (300, 10);
/// let cell = |i: usize, j: usize| 10.0 * (i % 3) as f64 + ((i * 31 + j * 17) % 13) as f64 / 13.0;
/// let x = Dense::from_rows(n, d, (0..n * d).map(|e| cell(e / d, e % d)).collect())?;
/// let fit = seacells_fit(&Device::Cpu, &x, &SeacellsConfig::new(12), &mut |_progress| {})?;
/// assert_eq!(fit.assignments.len(), 300);
/// assert!(fit.assignments.iter().all(|&m| (0..12).contains(&m)));
/// assert!(fit.rss.last() <= fit.rss.first());
/// # Ok::<(), sparrow::Error>(())
/// ```
pub fn fit_on<T: Scalar>(
    device: &Device,
    x: &Dense<T>,
    cfg: &Config,
    progress: &mut dyn FnMut(Progress),
) -> Result<Fit> {
    cfg.validate(x)?;
    let gpu_dev = device.gpu().map(|g| &**g);
    let n = x.nrows();
    let mut stages = Vec::new();
    let mut clock = Instant::now();
    let mut lap = |name: &'static str, stages: &mut Vec<(&'static str, f64)>| {
        stages.push((name, clock.elapsed().as_secs_f64()));
        clock = Instant::now();
    };
    announce(progress, cfg, Progress::Stage("knn"))?;
    let kk = cfg.knn.max(DIFFUSION_KNN).min(n);
    let nb = match gpu_dev {
        Some(g) if x.ncols() <= gpu::KNN_MAX_DIMS => gpu::knn(g, x, kk)?,
        _ => knn(x, kk)?,
    };
    lap("knn", &mut stages);
    announce(progress, cfg, Progress::Stage("kernel"))?;
    let m = kernel_from_knn(&nb, cfg.knn, cfg.symmetrize)?;
    lap("kernel", &mut stages);
    announce(progress, cfg, Progress::Stage("diffusion"))?;
    let w = diffusion_kernel(&nb, DIFFUSION_KNN, DIFFUSION_ADAPTIVE)?;
    // The neighbour lists, the diffusion kernel and the eigenvectors are not needed past this
    // point; freed now, they are not held through the fit (about 50 MB at 50,000 cells).
    drop(nb);
    // Eigenvalue 1 comes once per connected component of the diffusion graph, and
    // lambda / (1 - lambda) would scale the eigenvectors past the first by up to 1e9; a graph
    // that falls apart gets one map per component instead (see `multiscale_by_piece`). A
    // connected graph takes the map of the whole graph, as it always has.
    let pieces = connected_components(&w);
    let (components, diffusion_iterations) = if pieces.count <= 1 {
        let dm = diffusion_map(&w, DIFFUSION_EIGS.min(n), cfg.seed)?;
        (multiscale(&dm), dm.iterations)
    } else {
        multiscale_by_piece(&w, &pieces, DIFFUSION_EIGS.min(n), cfg.seed)?
    };
    drop(w);
    let graph_components = connected_components(&m).count;
    lap("diffusion", &mut stages);
    announce(progress, cfg, Progress::Stage("initialise"))?;
    let init = if pieces.count <= 1 {
        initial_archetypes(&m, &components, cfg.n_metacells, cfg.seed)
    } else {
        initial_archetypes_by_piece(
            &m,
            &components,
            &pieces.members(),
            cfg.n_metacells,
            cfg.seed,
        )
    };
    lap("initialise", &mut stages);
    announce(progress, cfg, Progress::Stage("fit"))?;

    let nm = cfg.n_metacells;
    let tr_k = trace_k(&m);
    let mut b: Vec<SpVec> = init.iter().map(|&c| vec![(c as u32, 1.0)]).collect();
    let mut kb = kb_cols(&m, &b);
    let mut t1 = btkb(&kb, &transpose(&b, n));
    let solver = match gpu_dev {
        Some(g) => Some(gpu::Solver::new(g, &m)?),
        None => None,
    };
    // The fit's time split into its A updates, B updates and the products between them.
    let (mut t_a, mut t_b) = (0.0, 0.0);
    // The CPU's A update reads K B by cell; the GPU's transposes it on upload.
    let mut fit_parts: Vec<(&'static str, f64)> = Vec::new();
    let run_a = |kb: &[SpVec],
                 t1: &[f64],
                 prev: Option<&[SpVec]>,
                 t: &mut f64,
                 parts: &mut Vec<(&'static str, f64)>| {
        let c = Instant::now();
        let r = match &solver {
            Some(sv) => sv.update_a_timed(kb, t1, prev, cfg.fw_steps, parts),
            None => Ok(update_a(&transpose(kb, n), t1, nm, prev, cfg.fw_steps)),
        };
        *t += c.elapsed().as_secs_f64();
        r
    };
    let mut a = run_a(&kb, &t1, None, &mut t_a, &mut fit_parts)?;
    let mut rss_hist = vec![rss(tr_k, &kb, &a, &t1)];
    let mut b_steps = Vec::new();
    let mut b_parts: Vec<(&'static str, f64)> = Vec::new();
    let mut converged = false;
    let mut iterations = 0;
    while iterations < cfg.max_iter {
        a = run_a(&kb, &t1, Some(&a), &mut t_a, &mut fit_parts)?;
        // The B update builds K B afresh from B; the old one is not held beside it.
        drop(std::mem::take(&mut kb));
        let c = Instant::now();
        let up = match &solver {
            Some(sv) => sv.update_b(&m, &a, &b, cfg.fw_steps, B_MIN_STEPS, B_GAP_TOL)?,
            None => update_b(&m, &a, &b, cfg.fw_steps, B_MIN_STEPS, B_GAP_TOL),
        };
        t_b += c.elapsed().as_secs_f64();
        b = up.b;
        kb = up.kb;
        b_steps.push(up.steps);
        for (name, s) in &up.parts {
            add_part(&mut b_parts, name, *s);
        }
        let c = Instant::now();
        t1 = btkb(&kb, &transpose(&b, n));
        add_part(&mut fit_parts, "t1", c.elapsed().as_secs_f64());
        let c = Instant::now();
        let r = rss(tr_k, &kb, &a, &t1);
        add_part(&mut fit_parts, "rss", c.elapsed().as_secs_f64());
        rss_hist.push(r);
        iterations += 1;
        announce(progress, cfg, Progress::Iteration(iterations, r))?;
        let k = rss_hist.len();
        if (rss_hist[k - 2] - rss_hist[k - 1]).abs() < cfg.epsilon * rss_hist[0]
            && iterations >= cfg.min_iter
        {
            converged = true;
            break;
        }
    }
    lap("fit", &mut stages);
    // "fit" becomes its three parts, so the stages still sum to the whole.
    if let Some(last) = stages.pop() {
        let rest = (last.1 - t_a - t_b).max(0.0);
        stages.extend([("a-update", t_a), ("b-update", t_b), ("fit-products", rest)]);
    }
    let argmax = |v: &[(u32, f64)]| {
        v.iter()
            .fold(None, |best: Option<(u32, f64)>, &(i, w)| match best {
                Some((_, bw)) if bw >= w => best,
                _ => Some((i, w)),
            })
            .map(|p| p.0)
    };
    let assignments = a
        .iter()
        .map(|col| argmax(col).map_or(-1, |c| c as i32))
        .collect();
    let archetypes = b
        .iter()
        .map(|col| argmax(col).map_or(-1, |c| c as i64))
        .collect();
    Ok(Fit {
        assignments,
        archetypes,
        initial_archetypes: init.iter().map(|&c| c as i64).collect(),
        a,
        rss: rss_hist,
        iterations,
        converged,
        stage_seconds: stages,
        components,
        graph_components,
        diffusion_labels: pieces.labels,
        b_steps,
        diffusion_iterations,
        b_parts,
        fit_parts,
    })
}

/// Reports `event`, then stops the fit if its cancel flag was set meanwhile.
fn announce(progress: &mut dyn FnMut(Progress), cfg: &Config, event: Progress) -> Result<()> {
    progress(event);
    if cfg
        .cancel
        .as_ref()
        .is_some_and(|c| c.load(Ordering::Relaxed))
    {
        return Err(Error::Interrupted {
            what: "the SEACells fit".into(),
            when: match event {
                Progress::Stage(s) => format!("before its {s} stage"),
                Progress::Iteration(i, _) => format!("after iteration {i}"),
            },
        });
    }
    Ok(())
}

impl Fit {
    /// The summary the CLI writes as `summary.json` (and Python returns as `summary`):
    /// convergence, stage times and the metrics, with purity where `labels` (one per cell)
    /// are given.
    pub fn summary(&self, dims: usize, labels: Option<&[String]>) -> Result<serde_json::Value> {
        let nm = self.archetypes.len();
        let times = |v: &[(&'static str, f64)]| -> serde_json::Map<String, serde_json::Value> {
            v.iter()
                .map(|(k, v)| (k.to_string(), serde_json::json!(v)))
                .collect()
        };
        let total: f64 = self.stage_seconds.iter().map(|s| s.1).sum();
        let mut s = serde_json::json!({
            "cells": self.assignments.len(),
            "dims": dims,
            "n_metacells": nm,
            "rss": self.rss,
            "iterations": self.iterations,
            "converged": self.converged,
            "seconds": times(&self.stage_seconds),
            "seconds_total": total,
            "b_update_steps": self.b_steps,
            "b_update_seconds": times(&self.b_parts),
            "fit_seconds_by_part": times(&self.fit_parts),
            "diffusion_iterations": self.diffusion_iterations,
            "initial_archetypes": self.initial_archetypes,
            "compactness": self.compactness(),
            "separation": self.separation(),
            "graph_components": self.graph_components,
        });
        if let Some(l) = labels {
            let p = purity(&self.assignments, l, nm)?;
            let vals: Vec<f64> = p.iter().flatten().copied().collect();
            s["purity"] = serde_json::json!(p);
            s["purity_mean"] = serde_json::json!(mean_purity(&p));
            s["purity_min"] = serde_json::json!(vals.iter().copied().fold(f64::INFINITY, f64::min));
        }
        Ok(s)
    }

    /// The soft assignments A as a cells x metacells CSR, each row's weights summing to 1.
    pub fn soft(&self) -> Result<Csr<f64>> {
        soft_matrix(&self.a, self.archetypes.len())
    }

    /// `compactness` of the fit's hard assignments in its diffusion components, per
    /// metacell. On a diffusion graph that falls apart, a metacell within one of its components
    /// gets the value SEACells' evaluation gives on that component alone.
    pub fn compactness(&self) -> Vec<Option<f64>> {
        compactness(&self.assignments, &self.components, self.archetypes.len())
    }

    /// `separation_within` of the fit's hard assignments, each metacell compared only with
    /// the metacells of its own component of the diffusion graph (all of them when that graph
    /// is connected, which is `separation`).
    pub fn separation(&self) -> Vec<Option<f64>> {
        separation_among(
            &self.assignments,
            &self.components,
            Some(&self.diffusion_labels),
            self.archetypes.len(),
        )
    }
}

/// The `top` heaviest metacells of each cell with their weights (index -1 and weight 0 past a
/// cell's atoms), heaviest first, ties to the lower metacell; row-major n x top.
pub fn soft_top(a: &[SpVec], top: usize) -> (Vec<i32>, Vec<f64>) {
    let mut idx = vec![-1i32; a.len() * top];
    let mut wts = vec![0.0; a.len() * top];
    for (i, col) in a.iter().enumerate() {
        let mut v = col.clone();
        v.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
        for (j, &(c, w)) in v.iter().take(top).enumerate() {
            idx[i * top + j] = c as i32;
            wts[i * top + j] = w;
        }
    }
    (idx, wts)
}

/// A as a cells x metacells CSR.
pub fn soft_matrix(a: &[SpVec], nm: usize) -> Result<Csr<f64>> {
    let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
    for (i, col) in a.iter().enumerate() {
        for &(m, w) in col {
            r.push(i);
            c.push(m as usize);
            v.push(w);
        }
    }
    Csr::from_triplets(a.len(), nm, &r, &c, &v)
}

fn check_rows(counts: &Csr<f64>, cells: usize) -> Result<()> {
    if counts.nrows() != cells {
        return Err(Error::invalid(
            "counts",
            format!("{} rows for {cells} cells", counts.nrows()),
        ));
    }
    Ok(())
}

/// Sums of counts per metacell (hard assignments): N x genes.
pub fn aggregate_hard(counts: &Csr<f64>, assign: &[i32], nm: usize) -> Result<Csr<f64>> {
    check_rows(counts, assign.len())?;
    let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
    for (i, &m) in assign.iter().enumerate() {
        if m < 0 {
            continue;
        }
        for p in counts.row_range(i) {
            r.push(m as usize);
            c.push(counts.col_idx()[p] as usize);
            v.push(counts.values()[p]);
        }
    }
    Csr::from_triplets(nm, counts.ncols(), &r, &c, &v)
}

/// Weighted means of counts per metacell (soft assignments): each cell's weights below
/// `min_weight` dropped and the rest renormalised; metacell c gets
/// sum_i w_ic x_i / sum_i w_ic. N x genes.
pub fn aggregate_soft(
    counts: &Csr<f64>,
    a: &[SpVec],
    nm: usize,
    min_weight: f64,
) -> Result<Csr<f64>> {
    check_rows(counts, a.len())?;
    let mut total = vec![0.0; nm];
    let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
    for (i, col) in a.iter().enumerate() {
        let kept: Vec<(u32, f64)> = col.iter().copied().filter(|x| x.1 >= min_weight).collect();
        let s: f64 = kept.iter().map(|x| x.1).sum();
        if s <= 0.0 {
            continue;
        }
        for &(m, w) in &kept {
            let w = w / s;
            total[m as usize] += w;
            for p in counts.row_range(i) {
                r.push(m as usize);
                c.push(counts.col_idx()[p] as usize);
                v.push(w * counts.values()[p]);
            }
        }
    }
    for (k, &m) in r.iter().enumerate() {
        v[k] /= total[m];
    }
    Csr::from_triplets(nm, counts.ncols(), &r, &c, &v)
}

/// Per metacell, the fraction of its cells that carry its most common label (None when it
/// has no cells).
pub fn purity(assign: &[i32], labels: &[String], nm: usize) -> Result<Vec<Option<f64>>> {
    if labels.len() != assign.len() {
        return Err(Error::invalid(
            "labels",
            format!("{} labels for {} cells", labels.len(), assign.len()),
        ));
    }
    let mut per: Vec<std::collections::BTreeMap<&str, usize>> = vec![Default::default(); nm];
    for (&m, l) in assign.iter().zip(labels) {
        if m >= 0 {
            *per[m as usize].entry(l.as_str()).or_default() += 1;
        }
    }
    Ok(per
        .iter()
        .map(|h| {
            let tot: usize = h.values().sum();
            (tot > 0).then(|| *h.values().max().unwrap() as f64 / tot as f64)
        })
        .collect())
}

/// The mean of [`purity`] over the metacells that hold cells.
pub fn mean_purity(per_metacell: &[Option<f64>]) -> f64 {
    let vals: Vec<f64> = per_metacell.iter().flatten().copied().collect();
    vals.iter().sum::<f64>() / vals.len().max(1) as f64
}

fn centroids(assign: &[i32], comps: &[Vec<f64>], nm: usize) -> (Vec<Vec<f64>>, Vec<usize>) {
    let mut cen = vec![vec![0.0; comps.len()]; nm];
    let mut cnt = vec![0usize; nm];
    for (i, &m) in assign.iter().enumerate() {
        if m >= 0 {
            cnt[m as usize] += 1;
            for (d, c) in comps.iter().enumerate() {
                cen[m as usize][d] += c[i];
            }
        }
    }
    for (c, &k) in cen.iter_mut().zip(&cnt) {
        if k > 0 {
            c.iter_mut().for_each(|x| *x /= k as f64);
        }
    }
    (cen, cnt)
}

/// Per metacell, the mean over diffusion components of the variance of its cells (lower is
/// more compact; None when it has no cells).
pub fn compactness(assign: &[i32], comps: &[Vec<f64>], nm: usize) -> Vec<Option<f64>> {
    let (cen, cnt) = centroids(assign, comps, nm);
    let mut var = vec![0.0; nm];
    for (i, &m) in assign.iter().enumerate() {
        if m >= 0 {
            for (d, c) in comps.iter().enumerate() {
                var[m as usize] += (c[i] - cen[m as usize][d]).powi(2);
            }
        }
    }
    (0..nm)
        .map(|m| (cnt[m] > 0).then(|| var[m] / (cnt[m] as f64 * comps.len().max(1) as f64)))
        .collect()
}

/// Per metacell, the distance in diffusion-component space from its centroid to the nearest
/// other metacell's centroid (higher is better separated; None without cells or peers).
pub fn separation(assign: &[i32], comps: &[Vec<f64>], nm: usize) -> Vec<Option<f64>> {
    separation_among(assign, comps, None, nm)
}

/// [`separation`] with peers only within a group: each metacell belongs to the group most of
/// its cells are in (the lowest on ties), `groups` giving each cell's (the diffusion graph's
/// components, [`Fit::diffusion_labels`]), and is compared only with the metacells of its
/// group (None without peers there). Coordinates of different components of a graph that falls
/// apart come from different maps, so distances across them mean nothing.
pub fn separation_within(
    assign: &[i32],
    comps: &[Vec<f64>],
    groups: &[u32],
    nm: usize,
) -> Result<Vec<Option<f64>>> {
    if groups.len() != assign.len() {
        return Err(Error::invalid(
            "groups",
            format!("{} groups for {} cells", groups.len(), assign.len()),
        ));
    }
    Ok(separation_among(assign, comps, Some(groups), nm))
}

/// Each metacell's group: the one most of its cells are in, the lowest on ties.
fn majority_groups(assign: &[i32], groups: &[u32], nm: usize) -> Vec<u32> {
    let mut pairs: Vec<(i32, u32)> = assign
        .iter()
        .zip(groups)
        .filter(|p| *p.0 >= 0)
        .map(|(&m, &g)| (m, g))
        .collect();
    pairs.sort_unstable();
    let mut best = vec![(0usize, 0u32); nm];
    for run in pairs.chunk_by(|a, b| a == b) {
        let (m, g) = run[0];
        let b = &mut best[m as usize];
        // Runs come in ascending group order, so a tie keeps the lower group.
        if run.len() > b.0 {
            *b = (run.len(), g);
        }
    }
    best.into_iter().map(|b| b.1).collect()
}

fn separation_among(
    assign: &[i32],
    comps: &[Vec<f64>],
    groups: Option<&[u32]>,
    nm: usize,
) -> Vec<Option<f64>> {
    let (cen, cnt) = centroids(assign, comps, nm);
    let group = groups.map(|g| majority_groups(assign, g, nm));
    (0..nm)
        .map(|m| {
            if cnt[m] == 0 {
                return None;
            }
            (0..nm)
                .filter(|&o| o != m && cnt[o] > 0)
                .filter(|&o| group.as_ref().is_none_or(|g| g[o] == g[m]))
                .map(|o| {
                    cen[m]
                        .iter()
                        .zip(&cen[o])
                        .map(|(a, b)| (a - b).powi(2))
                        .sum::<f64>()
                        .sqrt()
                })
                .min_by(f64::total_cmp)
        })
        .collect()
}

/// A Gaussian mixture for tests, demos and benchmarks: `clusters` centres uniform in
/// [-10, 10]^d, cells spread N(0, 1) around them round-robin; returns the embedding and each
/// cell's cluster.
pub fn gaussian_mixture(
    n: usize,
    d: usize,
    clusters: usize,
    seed: u64,
) -> (Dense<f64>, Vec<usize>) {
    let mut rng = Rng::new(seed);
    let centres: Vec<Vec<f64>> = (0..clusters.max(1))
        .map(|_| (0..d).map(|_| rng.range_f64(-10.0, 10.0)).collect())
        .collect();
    let mut data = Vec::with_capacity(n * d);
    let mut labels = Vec::with_capacity(n);
    for i in 0..n {
        let c = i % centres.len();
        labels.push(c);
        for &mu in &centres[c] {
            // Box-Muller.
            let (u1, u2) = (rng.uniform().max(1e-300), rng.uniform());
            data.push(mu + (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos());
        }
    }
    (Dense::from_rows(n, d, data).expect("n x d fits"), labels)
}
