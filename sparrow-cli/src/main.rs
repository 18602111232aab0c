//! The `sparrow` command line: parse arguments, read and write files, show progress, report.

mod commands;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

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
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Known before parsing, so that a parse error can be reported the way the user asked.
    let json = raw.iter().any(|a| a == "--json");
    let cli = match Cli::try_parse_from(&raw) {
        Ok(cli) => cli,
        Err(e) => return parse_error(e, json),
    };
    let path = subcommand_path(&cli.command);
    let device = match cli.device.parse() {
        Ok(d) => d,
        Err(e) => return report(&e, &path, json),
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
        Err(e) => report(&e, &path, json),
    }
}

/// The subcommand's names, outermost first, to find its flags.
fn subcommand_path(c: &Command) -> Vec<&'static str> {
    match c {
        Command::Info(_) => vec!["info"],
        Command::Spmv(_) => vec!["spmv"],
        Command::Spmm(_) => vec!["spmm"],
        Command::Topk(_) => vec!["topk"],
        Command::Seacells(_) => vec!["seacells"],
        Command::Recover(_) => vec!["recover"],
        Command::Cs(_) => vec!["cs", "phase-transition"],
        Command::Complete(_) => vec!["complete"],
        Command::Bench(_) => vec!["bench"],
        Command::Validate => vec!["validate"],
        Command::Demo(_) => vec!["demo"],
    }
}

/// The flag of the subcommand at `path` that a library argument name stands for (`sparsity`
/// is `--sparsity`, `rank hint` is `--rank-hint`), or the name as it is where none does.
fn flag_for(path: &[&str], arg: &str) -> String {
    if arg.starts_with('-') {
        return arg.to_string();
    }
    let long = arg.replace([' ', '_'], "-");
    let mut cmd = Cli::command();
    for name in path {
        match cmd.find_subcommand(name) {
            Some(c) => cmd = c.clone(),
            None => return arg.to_string(),
        }
    }
    let found = cmd
        .get_arguments()
        .chain(Cli::command().get_arguments())
        .any(|a| a.get_long() == Some(long.as_str()));
    if found {
        format!("--{long}")
    } else {
        arg.to_string()
    }
}

/// Prints a failed run's error, as one line or, under `--json`, as one JSON object on stdout.
fn report(e: &sparrow::Error, path: &[&str], json: bool) -> ExitCode {
    let (message, argument) = match e {
        sparrow::Error::InvalidArgument { arg, why } => {
            let flag = flag_for(path, arg);
            (format!("invalid argument `{flag}`: {why}"), Some(flag))
        }
        other => (other.to_string(), None),
    };
    if json {
        println!(
            "{}",
            serde_json::json!({"error": message, "argument": argument, "kind": e.kind()})
        );
    } else {
        eprintln!("error: {message}");
    }
    ExitCode::FAILURE
}

/// A command line clap refused: its own report, or under `--json` one JSON object.
fn parse_error(e: clap::Error, json: bool) -> ExitCode {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let shown = matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion);
    if !json || shown {
        e.exit()
    }
    let argument = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => s.split_whitespace().next().map(str::to_string),
        _ => None,
    };
    let text = e.render().to_string();
    let first = text
        .lines()
        .next()
        .unwrap_or("")
        .trim_start_matches("error: ");
    println!(
        "{}",
        serde_json::json!({"error": first, "argument": argument, "kind": "usage"})
    );
    ExitCode::from(2)
}
