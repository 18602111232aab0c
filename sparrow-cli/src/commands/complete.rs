//! `sparrow complete`: matrix completion by singular value thresholding.

use std::path::PathBuf;
use std::process::ExitCode;

use sparrow::matrix::io::{self, Normalize};
use sparrow::solvers::completion::Complete;
use sparrow::Result;

use super::files::Files;

#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct Args {
    /// The observed entries: a sparse .npz (scipy CSR, f32 or f64) or .mtx; stored entries are
    /// the observations. The completion runs and is written in f64.
    #[arg(long)]
    observed: PathBuf,
    /// The largest rank to keep.
    #[arg(long)]
    rank_hint: usize,
    /// Shrinkage tau (default 5 sqrt(m n) times the RMS of the observations).
    #[arg(long)]
    tau: Option<f64>,
    /// Step delta, in (0, 2) (default 1.2 m n / |Omega|, the paper's, which can pass 2 when few
    /// entries are observed).
    #[arg(long)]
    delta: Option<f64>,
    /// Iteration cap.
    #[arg(long, default_value_t = 500)]
    max_iter: usize,
    /// Relative tolerance on the observed entries.
    #[arg(long, default_value_t = 1e-4)]
    tol: f64,
    /// Where to write the completed matrix (.npy).
    #[arg(long)]
    out: PathBuf,
}

pub fn run(ctx: &super::Ctx, args: Args) -> Result<ExitCode> {
    let mut files = Files::check(
        &[("--observed", Some(&args.observed))],
        &[("--out", Some(&args.out))],
    )?;
    let obs = io::read_sparse::<f64>(&args.observed, Normalize::SortAndSum)?;
    let mut req = Complete::new(args.rank_hint);
    req.tau = args.tau;
    req.delta = args.delta;
    req.max_iter = args.max_iter;
    req.tol = args.tol;
    let device = ctx.open_device()?;
    let (c, plan) = req.run_on(&device, &obs)?;
    if ctx.explain {
        eprintln!("plan: {plan}");
    }
    io::write_dense(files.path("--out"), &c.x)?;
    files.commit()?;
    if ctx.json {
        println!(
            "{}",
            serde_json::json!({"rank": c.rank, "iterations": c.iterations, "stop": c.stop, "relative_residual": c.relative_residual})
        );
    } else {
        println!(
            "complete: {} x {} from {} observations: rank {}, {} iterations ({:?}), relative residual {:.2e}; wrote {}",
            obs.nrows(),
            obs.ncols(),
            obs.nnz(),
            c.rank,
            c.iterations,
            c.stop,
            c.relative_residual,
            args.out.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
