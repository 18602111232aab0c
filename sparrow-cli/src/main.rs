//! The `sparrow` command line: parse arguments, read and write files, show progress, report.

mod commands;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Sparse and selection work on NVIDIA GPUs, with a real CPU backend.
#[derive(Parser)]
#[command(name = "sparrow", version, about)]
struct Cli {
    /// Where to run: auto (a GPU when usable, else the CPU), cpu, cuda or cuda:N.
    #[arg(long, global = true, default_value = "auto")]
    device: String,
    /// Print the plan: which backend and kernel run, and why.
    #[arg(long, global = true)]
    explain: bool,
    /// Machine-readable JSON output instead of tables.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Devices, driver and NVRTC versions, architecture, SMs, memory.
    Info(commands::info::Args),
    /// y = alpha * A * x + beta * y.
    Spmv(commands::products::SpmvArgs),
    /// C = alpha * A * B + beta * C.
    Spmm(commands::products::SpmmArgs),
    /// Complete a low-rank matrix from observed entries (singular value thresholding).
    Complete(commands::complete::Args),
    /// Compressed-sensing experiments.
    #[command(subcommand)]
    Cs(commands::cs::Cs),
    /// Recover sparse signals from y = Phi x.
    Recover(commands::recover::Args),
    /// SEACells metacells from an embedding (kernel archetypal analysis).
    Seacells(commands::seacells::Args),
    /// The k largest or smallest keys of every segment.
    Topk(commands::topk::Args),
    /// Time our kernels beside cuSPARSE (and optionally the CPU) on the same data; without a GPU,
    /// time the CPU backend.
    Bench(commands::bench::Args),
    /// Run every GPU kernel against its reference and print a table.
    Validate,
    /// Build a sparse problem, run it on the chosen device, check it against the CPU.
    Demo(commands::demo::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let device = match cli.device.parse() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let ctx = commands::Ctx {
        device,
        explain: cli.explain,
        json: cli.json,
    };
    let result = match cli.command {
        Command::Info(a) => commands::info::run(&ctx, a),
        Command::Spmv(a) => commands::products::spmv(&ctx, a),
        Command::Spmm(a) => commands::products::spmm(&ctx, a),
        Command::Topk(a) => commands::topk::run(&ctx, a),
        Command::Seacells(a) => commands::seacells::run(&ctx, a),
        Command::Recover(a) => commands::recover::run(&ctx, a),
        Command::Cs(c) => commands::cs::run(&ctx, c),
        Command::Complete(a) => commands::complete::run(&ctx, a),
        Command::Bench(a) => commands::bench::run(&ctx, a),
        Command::Validate => commands::validate::run(&ctx),
        Command::Demo(a) => commands::demo::run(&ctx, a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
