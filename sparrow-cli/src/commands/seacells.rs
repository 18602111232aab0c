//! `sparrow seacells`: metacells from an embedding, with optional labels and counts.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};
use sparrow::matrix::io::{self, Normalize};
use sparrow::matrix::Csr;
use sparrow::solvers::seacells::fit::{
    aggregate_hard, aggregate_soft, fit_on, plan, soft_top, Config, Progress,
};
use sparrow::solvers::seacells::kernel::Symmetrize;
use sparrow::{Error, Result};

use super::files::Files;

#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct Args {
    /// The embedding: cells x dimensions (.npy, f32 or f64, read as f64), e.g. PCA coordinates.
    #[arg(long)]
    embedding: PathBuf,
    /// Number of metacells.
    #[arg(long)]
    n_metacells: usize,
    /// Neighbours of the kernel's kNN graph, the cell included.
    #[arg(long, default_value_t = 15)]
    knn: usize,
    /// Make the kNN graph symmetric by union or intersection.
    #[arg(long, default_value = "union")]
    graph: String,
    /// Seed of the initialisation.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// One label per line, one line per cell: purity per metacell goes into summary.json.
    #[arg(long)]
    labels: Option<PathBuf>,
    /// A cells x genes matrix (.npz scipy CSR, .mtx or .npy) to aggregate per metacell.
    #[arg(long)]
    counts: Option<PathBuf>,
    /// Outer iterations at least.
    #[arg(long, default_value_t = 10)]
    min_iter: usize,
    /// Outer iterations at most.
    #[arg(long, default_value_t = 100)]
    max_iter: usize,
    /// Converged when the RSS moves less than epsilon times its first value.
    #[arg(long, default_value_t = 1e-3)]
    epsilon: f64,
    /// Output folder (created): assignments.npy, archetypes.npy, soft.npz, summary.json, and
    /// metacell_counts.npz with --counts.
    #[arg(long)]
    out_dir: PathBuf,
}

/// Every file `seacells` writes into its folder: those this run does not write are removed
/// from it, so the folder never mixes two runs.
const OUTPUTS: [&str; 8] = [
    "assignments.npy",
    "archetypes.npy",
    "soft.npz",
    "soft_top5_index.npy",
    "soft_top5_weight.npy",
    "summary.json",
    "metacell_counts.npz",
    "metacell_soft_means.npz",
];

/// The outputs as (argument, path) pairs, with --counts' two only when it is given.
fn outputs(dir: &Path, counts: bool) -> Vec<(String, PathBuf)> {
    OUTPUTS
        .iter()
        .filter(|n| counts || !n.starts_with("metacell_"))
        .map(|n| (format!("--out-dir/{n}"), dir.join(n)))
        .collect()
}

/// Checks the inputs against the outputs before any work; a folder that does not exist yet is
/// checked as a new entry of its parent (it holds no input) and made after the fit.
fn check_files(args: &Args, inputs: &[(&str, Option<&Path>)]) -> Result<Option<Files>> {
    let d = &args.out_dir;
    if d.exists() && !d.is_dir() {
        return Err(Error::invalid(
            "--out-dir",
            format!("{} is a file; name a folder", d.display()),
        ));
    }
    if d.is_dir() {
        let outs = outputs(d, args.counts.is_some());
        let outs: Vec<(&str, Option<&Path>)> = outs
            .iter()
            .map(|(a, p)| (a.as_str(), Some(p.as_path())))
            .collect();
        Files::check(inputs, &outs).map(Some)
    } else {
        Files::check(inputs, &[("--out-dir", Some(d))])?;
        Ok(None)
    }
}

fn read_labels(path: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    Ok(text.lines().map(|l| l.trim().to_string()).collect())
}

fn read_counts(path: &Path) -> Result<Csr<f64>> {
    if path.extension().is_some_and(|e| e == "npy") {
        let d = io::read_dense::<f64>(path)?.to_packed();
        let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..d.nrows() {
            for (j, &x) in d.row(i).iter().enumerate() {
                if x != 0.0 {
                    r.push(i);
                    c.push(j);
                    v.push(x);
                }
            }
        }
        return Csr::from_triplets(d.nrows(), d.ncols(), &r, &c, &v);
    }
    io::read_sparse::<f64>(path, Normalize::SortAndSum)
}

/// Where a stage runs on `device`, for the progress line.
fn plan_where(device: &sparrow::Device, stage: &str) -> &'static str {
    match (device.gpu().is_some(), stage) {
        (false, _) => "CPU",
        (true, "knn") | (true, "fit") => "GPU",
        (true, _) => "CPU",
    }
}

pub fn run(ctx: &super::Ctx, args: Args) -> Result<ExitCode> {
    let inputs = [
        ("--embedding", Some(args.embedding.as_path())),
        ("--labels", args.labels.as_deref()),
        ("--counts", args.counts.as_deref()),
    ];
    let checked = check_files(&args, &inputs)?;
    let x = io::read_dense::<f64>(&args.embedding)?.to_packed();
    let labels = args.labels.as_deref().map(read_labels).transpose()?;
    if let Some(l) = &labels {
        if l.len() != x.nrows() {
            return Err(Error::invalid(
                "--labels",
                format!("{} labels for {} cells", l.len(), x.nrows()),
            ));
        }
    }
    let counts = args.counts.as_deref().map(read_counts).transpose()?;
    if let Some(c) = &counts {
        if c.nrows() != x.nrows() {
            return Err(Error::invalid(
                "--counts",
                format!("{} rows for {} cells", c.nrows(), x.nrows()),
            ));
        }
    }
    let mut cfg = Config::new(args.n_metacells);
    cfg.knn = args.knn;
    cfg.seed = args.seed;
    cfg.min_iter = args.min_iter;
    cfg.max_iter = args.max_iter;
    cfg.epsilon = args.epsilon;
    cfg.symmetrize = match args.graph.as_str() {
        "union" => Symmetrize::Union,
        "intersection" => Symmetrize::Intersection,
        g => {
            return Err(Error::invalid(
                "--graph",
                format!("{g:?}: choose union or intersection"),
            ))
        }
    };
    let device = ctx.open_device()?;
    if ctx.explain {
        eprintln!("plan: {}", plan(&device, x.ncols()));
    }
    // Stages by name, then the iterations with the RSS and the time left at most (max_iter
    // iterations at the pace so far); drawn only on a terminal.
    let pb = ProgressBar::new(cfg.max_iter as u64);
    pb.set_style(
        ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let stage_name = |s: &str| match s {
        "knn" => "kNN",
        "kernel" => "kernel",
        "diffusion" => "diffusion map",
        "initialise" => "initialisation",
        _ => "iterations",
    };
    let mut fit_start = std::time::Instant::now();
    let f = fit_on(&device, &x, &cfg, &mut |p| match p {
        Progress::Stage(s) => {
            if s == "fit" {
                fit_start = std::time::Instant::now();
            }
            pb.set_message(format!("{} ({})", stage_name(s), plan_where(&device, s)));
        }
        Progress::Iteration(it, rss) => {
            pb.set_position(it as u64);
            let per = fit_start.elapsed().as_secs_f64() / it as f64;
            let left = per * cfg.max_iter.saturating_sub(it) as f64;
            pb.set_message(format!("RSS {rss:.6e}, at most {left:.0} s left"));
        }
    })?;
    pb.finish_and_clear();
    if f.graph_components > 1 {
        eprintln!(
            "warning: the kNN graph has {} connected components; no metacell spans two of them, compactness and separation are computed within each one, and a larger --knn may join them",
            f.graph_components
        );
    }
    let nm = cfg.n_metacells;
    let d = &args.out_dir;
    let mut files = match checked {
        Some(files) => files,
        None => {
            std::fs::create_dir(d).map_err(|e| Error::io(d, e))?;
            check_files(&args, &inputs)?.expect("the folder now exists")
        }
    };
    files.replace_earlier(d, &OUTPUTS);
    let at = |n: &str| format!("--out-dir/{n}");
    io::write_npy(
        files.path(&at("assignments.npy")),
        &[f.assignments.len() as u64],
        &f.assignments,
    )?;
    io::write_npy(
        files.path(&at("archetypes.npy")),
        &[nm as u64],
        &f.archetypes,
    )?;
    io::write_npz_csr(files.path(&at("soft.npz")), &f.soft()?)?;
    let (ti, tw) = soft_top(&f.a, 5);
    let shape = [x.nrows() as u64, 5];
    io::write_npy(files.path(&at("soft_top5_index.npy")), &shape, &ti)?;
    io::write_npy(files.path(&at("soft_top5_weight.npy")), &shape, &tw)?;
    if let Some(c) = &counts {
        io::write_npz_csr(
            files.path(&at("metacell_counts.npz")),
            &aggregate_hard(c, &f.assignments, nm)?,
        )?;
        io::write_npz_csr(
            files.path(&at("metacell_soft_means.npz")),
            &aggregate_soft(c, &f.a, nm, 0.05)?,
        )?;
    }
    let s = f.summary(x.ncols(), labels.as_deref())?;
    let path = files.path(&at("summary.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&s).expect("json"))
        .map_err(|e| Error::io(d.join("summary.json"), e))?;
    files.commit()?;
    if ctx.json {
        println!("{s}");
    } else {
        println!(
            "seacells: {} cells x {} dims -> {nm} metacells: {} iterations ({}), RSS {:.6e} -> {:.6e}{}; {:.1} s; wrote {}",
            x.nrows(),
            x.ncols(),
            f.iterations,
            if f.converged { "converged" } else { "not converged" },
            f.rss[0],
            f.rss.last().copied().unwrap_or(f64::NAN),
            s.get("purity_mean")
                .map(|p| format!(", mean purity {:.4}", p.as_f64().unwrap_or(f64::NAN)))
                .unwrap_or_default(),
            s["seconds_total"].as_f64().unwrap_or(0.0),
            d.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
