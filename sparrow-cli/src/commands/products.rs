//! `sparrow spmv` and `sparrow spmm`: read A, B (or x), optionally C (or y), compute, write.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use sparrow::matrix::io::{self, Normalize};
use sparrow::matrix::Dense;
use sparrow::ops::spmm::Spmm;
use sparrow::ops::spmv::Spmv;
use sparrow::{Error, Result, Scalar};

use super::files::Files;

#[derive(clap::Args)]
pub struct Common {
    /// The sparse matrix A: a scipy .npz (CSR) or a MatrixMarket .mtx file.
    #[arg(long)]
    a: PathBuf,
    /// alpha in alpha * A * B + beta * C.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    alpha: f64,
    /// beta; 0 means C is not read.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    beta: f64,
    /// Value type: f32, f64, or auto (the widest float type the input files store; f64 when
    /// none says).
    #[arg(long, default_value = "auto")]
    dtype: String,
    /// Sort each row of A and sum duplicates instead of refusing unsorted rows.
    #[arg(long)]
    normalize: bool,
    /// Where to write the result (.npy).
    #[arg(long)]
    out: PathBuf,
}

#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct SpmvArgs {
    #[command(flatten)]
    common: Common,
    /// The dense vector x (.npy, 1-D or one column).
    #[arg(long)]
    x: PathBuf,
    /// The vector y to accumulate into (needed when beta is not 0).
    #[arg(long)]
    y: Option<PathBuf>,
}

#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct SpmmArgs {
    #[command(flatten)]
    common: Common,
    /// The dense matrix B (.npy, 2-D, row-major).
    #[arg(long)]
    b: PathBuf,
    /// The matrix C to accumulate into (needed when beta is not 0).
    #[arg(long)]
    c: Option<PathBuf>,
}

/// The value type: forced by --dtype, else the widest the inputs (A, then the dense ones) store.
fn dtype_of(c: &Common, dense: &[Option<&Path>]) -> Result<&'static str> {
    match c.dtype.as_str() {
        "f32" => Ok("f32"),
        "f64" => Ok("f64"),
        "auto" => {
            let mut stored = vec![super::stored_type(&c.a)?];
            for p in dense.iter().flatten() {
                stored.push(super::stored_type(p)?);
            }
            Ok(super::wider(&stored))
        }
        other => Err(Error::invalid(
            "--dtype",
            format!("{other:?} is not f32, f64 or auto"),
        )),
    }
}

fn scalar<T: Scalar>(name: &str, v: f64) -> Result<T> {
    let t = T::from_f64(v);
    if !t.to_f64().is_finite() {
        return Err(Error::invalid(
            name,
            format!("{v} is not finite in {}", T::NAME),
        ));
    }
    Ok(t)
}

fn read_a<T: Scalar>(c: &Common) -> Result<sparrow::matrix::Csr<T>> {
    if c.normalize {
        return io::read_sparse(&c.a, Normalize::SortAndSum);
    }
    io::read_sparse(&c.a, Normalize::Require).map_err(|e| {
        // Readable once sorted: the rows' order was all that was wrong, which a flag mends.
        match io::read_sparse::<T>(&c.a, Normalize::SortAndSum) {
            Ok(_) => Error::format(
                &c.a,
                format!("{e}; --normalize sorts each row and sums duplicate entries"),
            ),
            Err(_) => e,
        }
    })
}

fn accumulate_into<T: Scalar>(
    arg: &str,
    path: Option<&Path>,
    beta: f64,
    rows: usize,
    cols: usize,
) -> Result<Dense<T>> {
    match path {
        Some(p) => {
            let m: Dense<T> = io::read_dense(p)?;
            if m.nrows() != rows || m.ncols() != cols {
                return Err(Error::invalid(
                    arg,
                    format!(
                        "{} is {} x {}, the result is {rows} x {cols}",
                        p.display(),
                        m.nrows(),
                        m.ncols()
                    ),
                ));
            }
            Ok(m)
        }
        None if beta != 0.0 => Err(Error::invalid(
            arg,
            format!("beta is {beta}, so {arg} must be given"),
        )),
        None => Dense::filled(rows, cols, cols, T::ZERO),
    }
}

pub fn spmm(ctx: &super::Ctx, args: SpmmArgs) -> Result<ExitCode> {
    let files = Files::check(
        &[
            ("--a", Some(&args.common.a)),
            ("--b", Some(&args.b)),
            ("--c", args.c.as_deref()),
        ],
        &[("--out", Some(&args.common.out))],
    )?;
    match dtype_of(&args.common, &[Some(&args.b), args.c.as_deref()])? {
        "f32" => spmm_t::<f32>(ctx, args, files),
        _ => spmm_t::<f64>(ctx, args, files),
    }
}

fn spmm_t<T: Scalar>(ctx: &super::Ctx, args: SpmmArgs, mut files: Files) -> Result<ExitCode> {
    let c = &args.common;
    let op = Spmm::<T>::new()
        .alpha(scalar("--alpha", c.alpha)?)
        .beta(scalar("--beta", c.beta)?);
    let a = read_a::<T>(c)?;
    let b: Dense<T> = io::read_dense(&args.b)?;
    sparrow::memory::ensure_elems(
        "the result C",
        &[a.nrows(), b.ncols()],
        std::mem::size_of::<T>(),
    )?;
    let mut out = accumulate_into::<T>("--c", args.c.as_deref(), c.beta, a.nrows(), b.ncols())?;
    op.validate(&a, &b, &out)?;
    let device = ctx.open_device()?;
    let t = Instant::now();
    let plan = op.run(&device, &a, &b, &mut out)?;
    let secs = t.elapsed().as_secs_f64();
    if ctx.explain {
        eprintln!("plan: {plan}");
    }
    super::report_compiles(&device);
    io::write_dense(files.path("--out"), &out)?;
    files.commit()?;
    report(
        ctx,
        "spmm",
        &plan,
        a.nrows(),
        b.ncols(),
        a.nnz(),
        secs,
        &c.out,
    );
    Ok(ExitCode::SUCCESS)
}

pub fn spmv(ctx: &super::Ctx, args: SpmvArgs) -> Result<ExitCode> {
    let files = Files::check(
        &[
            ("--a", Some(&args.common.a)),
            ("--x", Some(&args.x)),
            ("--y", args.y.as_deref()),
        ],
        &[("--out", Some(&args.common.out))],
    )?;
    match dtype_of(&args.common, &[Some(&args.x), args.y.as_deref()])? {
        "f32" => spmv_t::<f32>(ctx, args, files),
        _ => spmv_t::<f64>(ctx, args, files),
    }
}

fn spmv_t<T: Scalar>(ctx: &super::Ctx, args: SpmvArgs, mut files: Files) -> Result<ExitCode> {
    let c = &args.common;
    let op = Spmv::<T>::new()
        .alpha(scalar("--alpha", c.alpha)?)
        .beta(scalar("--beta", c.beta)?);
    let a = read_a::<T>(c)?;
    let x: Dense<T> = io::read_dense(&args.x)?;
    if x.ncols() != 1 {
        return Err(Error::invalid(
            "--x",
            format!(
                "{} is {} x {}; x must be a vector",
                args.x.display(),
                x.nrows(),
                x.ncols()
            ),
        ));
    }
    let mut y = accumulate_into::<T>("--y", args.y.as_deref(), c.beta, a.nrows(), 1)?.into_data();
    let x = x.into_data();
    op.validate(&a, x.len(), y.len())?;
    let device = ctx.open_device()?;
    let t = Instant::now();
    let plan = op.run(&device, &a, &x, &mut y)?;
    let secs = t.elapsed().as_secs_f64();
    if ctx.explain {
        eprintln!("plan: {plan}");
    }
    super::report_compiles(&device);
    io::write_npy(files.path("--out"), &[y.len() as u64], &y)?;
    files.commit()?;
    report(ctx, "spmv", &plan, a.nrows(), 1, a.nnz(), secs, &c.out);
    Ok(ExitCode::SUCCESS)
}

#[allow(clippy::too_many_arguments)]
fn report(
    ctx: &super::Ctx,
    op: &str,
    plan: &sparrow::ops::Plan,
    rows: usize,
    n: usize,
    nnz: usize,
    secs: f64,
    out: &Path,
) {
    if ctx.json {
        println!(
            "{}",
            serde_json::json!({"op": op, "rows": rows, "n": n, "nnz": nnz, "seconds": secs, "out": out.display().to_string(), "plan": plan})
        );
    } else {
        println!(
            "{op}: {rows} x {n} result from {nnz} nonzeros in {:.3} ms (with transfers); wrote {}",
            secs * 1e3,
            out.display()
        );
    }
}
