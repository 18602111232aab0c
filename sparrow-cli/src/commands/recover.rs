//! `sparrow recover`: sparse recovery of the columns of Y from y = Phi x.

use std::path::PathBuf;
use std::process::ExitCode;

use sparrow::matrix::io::{self, Normalize};
use sparrow::matrix::Dense;
use sparrow::solvers::cs::{Method, Recover};
use sparrow::{Error, Result};

#[derive(clap::Args)]
pub struct Args {
    /// The sensing matrix Phi: dense .npy (m x n) or sparse .npz / .mtx (densified).
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
    if let Some(k) = args.sparsity {
        req = req.sparsity(k);
    }
    if let Some(l) = args.lambda {
        req = req.lambda(l);
    }
    let phi: Dense<f64> = match args.phi.extension().and_then(|e| e.to_str()) {
        Some("npy") => io::read_dense(&args.phi)?,
        Some("npz") | Some("mtx") => {
            let a = io::read_sparse::<f64>(&args.phi, Normalize::SortAndSum)?;
            let mut d = Dense::filled(a.nrows(), a.ncols(), a.ncols(), 0.0)?;
            for i in 0..a.nrows() {
                for p in a.row_range(i) {
                    d.data_mut()[i * a.ncols() + a.col_idx()[p] as usize] = a.values()[p];
                }
            }
            d
        }
        _ => {
            return Err(Error::format(
                &args.phi,
                "expected a .npy, .npz or .mtx file",
            ))
        }
    };
    let y: Dense<f64> = io::read_dense(&args.y)?;
    req.validate(&phi, &y)?;
    let device = ctx.open_device()?;
    let t = std::time::Instant::now();
    let (rec, plan) = req.run(&device, &phi, &y)?;
    let secs = t.elapsed().as_secs_f64();
    if ctx.explain {
        eprintln!("plan: {plan}");
    }
    io::write_dense(&args.out, &rec.x)?;
    if ctx.json {
        println!(
            "{}",
            serde_json::json!({
                "method": method, "signals": y.ncols(), "seconds": secs,
                "iterations": rec.iterations, "stop": rec.stop, "residual_norm": rec.residual_norm,
                "support_sizes": rec.support.iter().map(|s| s.len()).collect::<Vec<_>>(),
                "plan": plan,
            })
        );
    } else {
        let max_it = rec.iterations.iter().copied().max().unwrap_or(0);
        let worst = rec.residual_norm.iter().copied().fold(0.0, f64::max);
        println!(
            "recover {:?}: {} signal(s) of length {} from {} measurements in {:.3} s; at most {max_it} iterations, largest residual {worst:.3e}; wrote {}",
            method,
            y.ncols(),
            phi.ncols(),
            phi.nrows(),
            secs,
            args.out.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
