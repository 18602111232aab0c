//! `sparrow recover`: sparse recovery of the columns of Y from y = Phi x.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use sparrow::matrix::io::{self, Normalize};
use sparrow::matrix::Dense;
use sparrow::solvers::cs::{Method, Recover};
use sparrow::{Error, Result, Scalar};

use super::files::Files;

#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct Args {
    /// The sensing matrix Phi: dense .npy (m x n) or sparse .npz / .mtx (densified). Phi and Y
    /// are read as f32 when both files hold f32, else as f64; X is written in that type.
    #[arg(long)]
    phi: PathBuf,
    /// The measurements Y (.npy, m x B, one signal per column; or a 1-D vector).
    #[arg(long)]
    y: PathBuf,
    /// iht, niht, htp, cosamp, sp, omp, amp or fista.
    #[arg(long)]
    method: String,
    /// The sparsity K (every method but amp and fista).
    #[arg(long)]
    sparsity: Option<usize>,
    /// The LASSO weight (fista).
    #[arg(long)]
    lambda: Option<f64>,
    /// AMP's threshold multiplier (default: the minimax threshold for delta = m / n).
    #[arg(long)]
    tau: Option<f64>,
    /// Iteration cap.
    #[arg(long, default_value_t = 500)]
    max_iter: usize,
    /// Relative tolerance of the stop tests.
    #[arg(long, default_value_t = 1e-6)]
    tol: f64,
    /// Where to write the estimates (.npy, n x B).
    #[arg(long)]
    out: PathBuf,
}

pub fn run(ctx: &super::Ctx, args: Args) -> Result<ExitCode> {
    let method: Method = args.method.parse()?;
    let mut req = Recover::new(method).max_iter(args.max_iter).tol(args.tol);
    req.tau = args.tau;
    req.sparsity = args.sparsity;
    req.lambda = args.lambda;
    let files = Files::check(
        &[("--phi", Some(&args.phi)), ("--y", Some(&args.y))],
        &[("--out", Some(&args.out))],
    )?;
    match super::wider(&[super::stored_type(&args.phi)?, super::stored_type(&args.y)?]) {
        "f32" => run_t::<f32>(ctx, &args, req, files),
        _ => run_t::<f64>(ctx, &args, req, files),
    }
}

/// Phi from a dense file, or a sparse one made dense (the solvers work on dense Phi).
fn read_phi<T: Scalar>(path: &Path) -> Result<Dense<T>> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("npy") => io::read_dense(path),
        Some("npz") | Some("mtx") => {
            let a = io::read_sparse::<T>(path, Normalize::SortAndSum)?;
            sparrow::memory::ensure_elems(
                "Phi made dense",
                &[a.nrows(), a.ncols()],
                std::mem::size_of::<T>(),
            )?;
            let mut d = Dense::filled(a.nrows(), a.ncols(), a.ncols(), T::ZERO)?;
            for i in 0..a.nrows() {
                for p in a.row_range(i) {
                    d.data_mut()[i * a.ncols() + a.col_idx()[p] as usize] = a.values()[p];
                }
            }
            Ok(d)
        }
        _ => Err(Error::format(path, "expected a .npy, .npz or .mtx file")),
    }
}

fn run_t<T: Scalar>(
    ctx: &super::Ctx,
    args: &Args,
    req: Recover,
    mut files: Files,
) -> Result<ExitCode> {
    let method = req.method;
    let phi: Dense<T> = read_phi(&args.phi)?;
    let y: Dense<T> = io::read_dense(&args.y)?;
    req.validate(&phi, &y)?;
    sparrow::memory::ensure_elems(
        "the estimates",
        &[phi.ncols(), y.ncols()],
        std::mem::size_of::<T>(),
    )?;
    let device = ctx.open_device()?;
    let t = std::time::Instant::now();
    let (rec, plan) = req.run(&device, &phi, &y)?;
    let secs = t.elapsed().as_secs_f64();
    if ctx.explain {
        eprintln!("plan: {plan}");
    }
    io::write_dense(files.path("--out"), &rec.x)?;
    files.commit()?;
    if ctx.json {
        println!(
            "{}",
            serde_json::json!({
                "method": method, "signals": y.ncols(), "seconds": secs, "dtype": T::NAME,
                "iterations": rec.iterations, "stop": rec.stop, "residual_norm": rec.residual_norm,
                "support_sizes": rec.support.iter().map(|s| s.len()).collect::<Vec<_>>(),
                "plan": plan,
            })
        );
    } else {
        let max_it = rec.iterations.iter().copied().max().unwrap_or(0);
        let worst = rec.residual_norm.iter().copied().fold(0.0, f64::max);
        println!(
            "recover {:?}: {} signal(s) of length {} from {} measurements in {:.3} s ({}); at most {max_it} iterations, largest residual {worst:.3e}; wrote {}",
            method,
            y.ncols(),
            phi.ncols(),
            phi.nrows(),
            secs,
            T::NAME,
            args.out.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
