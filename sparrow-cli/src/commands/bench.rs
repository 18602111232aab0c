//! `sparrow bench spmm|spmv`: a table, and JSON lines for machines.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use sparrow::bench::{matrices, BenchConfig, Record};
use sparrow::{Device, Error, Result};

#[derive(clap::Args)]
pub struct Args {
    /// spmm, spmv or topk.
    op: String,
    /// Comma-separated matrix names, or all: powerlaw, banded, empty90.
    #[arg(long, default_value = "all")]
    matrix: String,
    /// Comma-separated columns of B (SpMM).
    #[arg(long, default_value = "1,8,32,128")]
    n: String,
    /// Comma-separated value types.
    #[arg(long, default_value = "f32")]
    dtype: String,
    /// Timed repetitions (at least 10).
    #[arg(long, default_value_t = 20)]
    reps: usize,
    /// Also time the CPU backend.
    #[arg(long)]
    cpu: bool,
    /// Append the records as JSON lines to this file.
    #[arg(long)]
    jsonl: Option<PathBuf>,
}

/// Appends the records as JSON lines to `jsonl` when given, and prints them as JSON lines
/// when `--json` asked for machine output.
fn emit_json<R: serde::Serialize>(
    ctx: &super::Ctx,
    jsonl: Option<&std::path::Path>,
    records: &[R],
) -> Result<()> {
    let lines: Vec<String> = records
        .iter()
        .map(|r| serde_json::to_string(r).expect("record serializes"))
        .collect();
    if let Some(path) = jsonl {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        let mut w = std::io::BufWriter::new(f);
        for l in &lines {
            writeln!(w, "{l}").map_err(|e| Error::io(path, e))?;
        }
        w.flush().map_err(|e| Error::io(path, e))?;
    }
    if ctx.json {
        for l in &lines {
            println!("{l}");
        }
    }
    Ok(())
}

fn list(arg: &str, s: &str) -> Result<Vec<String>> {
    let v: Vec<String> = s
        .split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect();
    if v.is_empty() {
        return Err(Error::invalid(arg, "is empty"));
    }
    Ok(v)
}

pub fn run(ctx: &super::Ctx, args: Args) -> Result<ExitCode> {
    if args.op == "topk" {
        return topk(ctx, &args);
    }
    let mut names = list("--matrix", &args.matrix)?;
    if names == ["all"] {
        names = matrices::NAMES.iter().map(|s| s.to_string()).collect();
    }
    for n in &names {
        if !matrices::NAMES.contains(&n.as_str()) {
            return Err(Error::invalid(
                "--matrix",
                format!(
                    "unknown matrix {n:?}; choose from {} or all",
                    matrices::NAMES.join(", ")
                ),
            ));
        }
    }
    let ns = list("--n", &args.n)?
        .iter()
        .map(|s| match s.parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(Error::invalid(
                "--n",
                format!("{s:?} is not a positive integer"),
            )),
        })
        .collect::<Result<Vec<_>>>()?;
    let cfg = BenchConfig {
        op: args.op.clone(),
        matrices: names,
        ns,
        dtypes: list("--dtype", &args.dtype)?,
        reps: args.reps,
        cpu: args.cpu,
    };
    if cfg.op != "spmm" && cfg.op != "spmv" {
        return Err(Error::invalid(
            "op",
            format!("{:?} is not spmm or spmv", cfg.op),
        ));
    }
    let device = ctx.open_device()?;
    let Device::Cuda(gpu) = &device else {
        return Err(Error::unsupported(
            "bench compares GPU kernels with cuSPARSE and needs a GPU (--device cuda)",
        ));
    };
    let pb = super::spinner("bench");
    let records = sparrow::bench::run(gpu, &cfg, &mut |m| pb.set_message(m.to_string()))?;
    pb.finish_and_clear();
    super::report_compiles(&device);
    emit_json(ctx, args.jsonl.as_deref(), &records)?;
    if !ctx.json {
        print_table(&records);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_table(records: &[Record]) {
    if let Some(r) = records.first() {
        println!(
            "copy bandwidth measured in this run: {:.0} GB/s",
            r.copy_bw_gbs
        );
    }
    println!(
        "{:<9} {:>9} {:>4} {:<4} {:<9} {:<24} {:>9} {:>9} {:>8} {:>8} {:>6} {:>9} {:>9}",
        "matrix",
        "nnz",
        "N",
        "type",
        "backend",
        "variant",
        "median ms",
        "min ms",
        "GFLOP/s",
        "GB/s",
        "%copy",
        "vs cuSP",
        "agree"
    );
    for r in records {
        println!(
            "{:<9} {:>9} {:>4} {:<4} {:<9} {:<24} {:>9.4} {:>9.4} {:>8.1} {:>8.1} {:>5.1}% {:>9} {:>9}",
            r.matrix,
            r.nnz,
            r.n,
            r.dtype,
            r.backend,
            r.variant,
            r.median_ms,
            r.min_ms,
            r.gflops,
            r.gbs,
            100.0 * r.frac_copy_bw,
            r.speedup_vs_cusparse.map(|s| format!("{s:.2}x")).unwrap_or_default(),
            r.agreement.map(|s| format!("{s:.1e}")).unwrap_or_default(),
        );
    }
}

fn topk(ctx: &super::Ctx, args: &Args) -> Result<ExitCode> {
    let device = ctx.open_device()?;
    let Device::Cuda(gpu) = &device else {
        return Err(Error::unsupported(
            "bench topk times GPU kernels and needs a GPU (--device cuda)",
        ));
    };
    let pb = super::spinner("bench topk");
    pb.set_message("measuring copy bandwidth");
    let bw = sparrow::bench::copy_bandwidth(gpu, 1 << 30)?;
    let records = sparrow::bench::topk::run(
        gpu,
        &sparrow::bench::topk::SHAPES,
        args.reps,
        bw,
        &mut |m| pb.set_message(m.to_string()),
    )?;
    pb.finish_and_clear();
    super::report_compiles(&device);
    emit_json(ctx, args.jsonl.as_deref(), &records)?;
    if ctx.json {
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "copy bandwidth measured in this run: {bw:.0} GB/s; f32 uniform keys, largest, unsorted"
    );
    println!(
        "{:>11} {:>6} {:>8} {:>10} {:>10} {:>9} {:>6}",
        "length", "k", "segments", "median ms", "min ms", "key GB/s", "%copy"
    );
    for r in &records {
        println!(
            "{:>11} {:>6} {:>8} {:>10.4} {:>10.4} {:>9.1} {:>5.1}%",
            r.len,
            r.k,
            r.segments,
            r.median_ms,
            r.min_ms,
            r.key_gbs,
            100.0 * r.frac_copy_bw
        );
    }
    if let Some(r) = records.first() {
        println!("kernels: {}", r.variant);
    }
    Ok(ExitCode::SUCCESS)
}
