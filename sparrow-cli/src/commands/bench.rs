//! `sparrow bench`: a table, and JSON lines for machines.

use std::path::PathBuf;
use std::process::ExitCode;

use sparrow::{Device, Error, Result};
use sparrow_bench::{matrices, BenchConfig, Record};

#[derive(clap::Args)]
pub struct Args {
    /// spmm, spmv, topk, cs, seacells, or analysis (the host half of an upload's analysis of
    /// each --matrix, on the CPUs: no GPU needed). With --device cpu (or auto where no GPU is
    /// usable), spmm, spmv and topk time the CPU backend alone against the host's read
    /// bandwidth.
    op: String,
    /// Comma-separated matrix names, or all (powerlaw, banded, empty90); see --suite.
    #[arg(long, default_value = "all")]
    matrix: String,
    /// Comma-separated columns of B (SpMM).
    #[arg(long, default_value = "1,8,32,128")]
    n: String,
    /// The performance panel: nine matrices (SpMM with N in 8, 32, 64, 128, 256 unless --n is
    /// given), with geometric means of the ratio to cuSPARSE.
    #[arg(long)]
    suite: bool,
    /// Draw the ratio to cuSPARSE per matrix and N into this SVG file.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Comma-separated value types.
    #[arg(long, default_value = "f32")]
    dtype: String,
    /// Timed repetitions (at least 10).
    #[arg(long, default_value_t = 20)]
    reps: usize,
    /// Also time the CPU backend (beside the GPU's kernels; on the CPU it is what is timed).
    #[arg(long)]
    cpu: bool,
    /// Also time every GPU path that computes each case (rows marked `sweep`; bench topk:
    /// a row on the register filter after each row on the staged one, and a row on the filter
    /// or the cluster path after each row the other takes, told apart by their kernels).
    #[arg(long)]
    sweep: bool,
    /// Sweep only the paths whose kernel names contain one of these comma-separated strings
    /// (bench spmm, spmv; implies --sweep).
    #[arg(long)]
    sweep_kernels: Option<String>,
    /// Empty the GPU's L2 cache before each timed repetition, ours and cuSPARSE's alike (bench
    /// spmm, spmv): a kernel reads a buffer four times the L2's size outside the timed events.
    /// Without it, back-to-back repetitions find part of a matrix smaller than the L2 in the
    /// cache, by an amount that depends on what ran before.
    #[arg(long)]
    cold: bool,
    /// Top-k shapes as LENxKxSEGMENTS, comma-separated (default: the set --set names).
    #[arg(long, conflicts_with = "set")]
    shapes: Option<String>,
    /// The embeddings bench seacells fits: mixture (Gaussian mixtures) or trajectories (a
    /// trunk that branches into 4 arms, a continuous manifold).
    #[arg(long, default_value = "mixture")]
    data: String,
    /// A named set of top-k shapes: targets (the seven bandwidth shapes, default) or serving
    /// (small batches of long rows, where latency counts).
    #[arg(long)]
    set: Option<String>,
    /// Comma-separated top-k key patterns: uniform, all-equal, two-values, heavy-ties,
    /// ascending, shared-high-bits (bench topk; keys are chosen with --dtype f32 or bf16).
    #[arg(long, default_value = "uniform")]
    pattern: String,
    /// Comma-separated top-k tie-breaks: fast, smaller-index, larger-index (bench topk).
    #[arg(long, default_value = "fast")]
    tie_break: String,
    /// Compressed-sensing shape as MxNxKxBATCH (bench cs).
    #[arg(long, default_value = "1024x4096x50x10000")]
    cs_shape: String,
    /// SEACells sizes as CELLSxDIMSxMETACELLS, comma-separated (bench seacells; default the
    /// three target sizes). With bench analysis: analyse SEACells' kernel matrix at these sizes.
    #[arg(long)]
    sizes: Option<String>,
    /// Outer iterations at most (bench seacells; the targets stop at 10).
    #[arg(long, default_value_t = 10)]
    max_iter: usize,
    /// Timed IHT iterations (bench cs).
    #[arg(long, default_value_t = 10)]
    iters: usize,
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
        super::files::append_lines(path, &lines)?;
    }
    if ctx.json {
        for l in &lines {
            println!("{l}");
        }
    }
    Ok(())
}

/// Every combination of the key types, patterns and tie-breaks asked for.
fn topk_cases(args: &Args) -> Result<Vec<sparrow_bench::topk::Case>> {
    use sparrow_bench::topk::{pattern, BenchKey, Case};
    let keys = list("--dtype", &args.dtype)?
        .iter()
        .map(|k| BenchKey::parse(k))
        .collect::<Result<Vec<_>>>()?;
    let patterns = list("--pattern", &args.pattern)?
        .iter()
        .map(|p| pattern(p))
        .collect::<Result<Vec<_>>>()?;
    let ties = list("--tie-break", &args.tie_break)?
        .iter()
        .map(|t| super::topk::tie_break(t))
        .collect::<Result<Vec<_>>>()?;
    let mut cases = Vec::new();
    for &key in &keys {
        for &pattern in &patterns {
            for &tie in &ties {
                cases.push(Case { key, pattern, tie });
            }
        }
    }
    Ok(cases)
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

/// One `AxBxC` item of `arg` as numbers (`form` names them in the error).
fn dims(arg: &str, item: &str, form: &str) -> Result<Vec<usize>> {
    item.split('x')
        .map(|p| p.trim().parse::<usize>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| Error::invalid(arg, format!("{item:?} is not {form}")))
}

pub fn run(ctx: &super::Ctx, args: Args) -> Result<ExitCode> {
    // Checked before any work; the plot is written through `plot_ratios`' own staging.
    super::files::Files::check(
        &[],
        &[
            ("--jsonl", args.jsonl.as_deref()),
            ("--plot", args.plot.as_deref()),
        ],
    )?;
    if args.cold && args.op != "spmm" && args.op != "spmv" {
        return Err(Error::invalid(
            "--cold",
            format!("applies to bench spmm and spmv, not {}", args.op),
        ));
    }
    if args.op == "seacells" {
        return seacells(ctx, &args);
    }
    if args.op == "cs" {
        return cs(ctx, &args);
    }
    if args.op == "topk" {
        return topk(ctx, &args);
    }
    let names = matrix_names(&args)?;
    if args.op == "analysis" {
        return analysis(ctx, &args, &names);
    }
    let n_arg = if args.suite && args.n == "1,8,32,128" {
        "8,32,64,128,256"
    } else {
        args.n.as_str()
    };
    let ns = list("--n", n_arg)?
        .iter()
        .map(|s| match s.parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(Error::invalid(
                "--n",
                format!("{s:?} is not a positive integer"),
            )),
        })
        .collect::<Result<Vec<_>>>()?;
    for &n in &ns {
        // B and C beside the widest panel matrix (2,000,000 rows), in f64.
        sparrow::memory::ensure_elems(&format!("--n {n}: B and C"), &[4_000_000, n], 8)?;
    }
    let cfg = BenchConfig {
        op: args.op.clone(),
        matrices: names,
        ns,
        dtypes: list("--dtype", &args.dtype)?,
        reps: args.reps,
        cpu: args.cpu,
        sweep: args.sweep || args.sweep_kernels.is_some(),
        sweep_kernels: match &args.sweep_kernels {
            Some(s) => list("--sweep-kernels", s)?,
            None => Vec::new(),
        },
        cold: args.cold,
    };
    if cfg.op != "spmm" && cfg.op != "spmv" {
        return Err(Error::invalid(
            "op",
            format!(
                "{:?} is not spmm, spmv, topk, cs, seacells or analysis",
                cfg.op
            ),
        ));
    }
    let device = ctx.open_device()?;
    let pb = super::spinner("bench");
    let records = match &device {
        Device::Cuda(gpu) => sparrow_bench::run(gpu, &cfg, &mut |m| pb.set_message(m.to_string()))?,
        Device::Cpu => {
            for (flag, given) in [
                ("--cold", args.cold),
                ("--sweep", cfg.sweep),
                ("--plot", args.plot.is_some()),
            ] {
                if given {
                    return Err(Error::invalid(
                        flag,
                        "applies to the GPU's kernels; on the CPU bench times the CPU backend alone",
                    ));
                }
            }
            sparrow_bench::run_cpu(&cfg, &mut |m| pb.set_message(m.to_string()))?
        }
    };
    pb.finish_and_clear();
    super::report_compiles(&device);
    emit_json(ctx, args.jsonl.as_deref(), &records)?;
    if !ctx.json {
        print_table(&records);
        print_geomeans(&records);
    }
    if let Some(p) = &args.plot {
        let mut files = super::files::Files::check(&[], &[("--plot", Some(p))])?;
        plot_ratios(&files.path("--plot"), &records)?;
        files.commit()?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The panel matrices `--matrix` and `--suite` name.
fn matrix_names(args: &Args) -> Result<Vec<String>> {
    let mut names = list("--matrix", &args.matrix)?;
    if args.suite {
        names = matrices::SUITE.iter().map(|s| s.to_string()).collect();
    } else if names == ["all"] {
        names = matrices::NAMES[..3].iter().map(|s| s.to_string()).collect();
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
    Ok(names)
}

/// The host half of each matrix's upload analysis, on this machine's CPUs (no GPU needed).
fn analysis(ctx: &super::Ctx, args: &Args, names: &[String]) -> Result<ExitCode> {
    for (flag, given) in [
        ("--n", args.n != "1,8,32,128"),
        ("--plot", args.plot.is_some()),
        ("--cpu", args.cpu),
        ("--sweep", args.sweep || args.sweep_kernels.is_some()),
    ] {
        if given {
            return Err(Error::invalid(
                flag,
                "applies to bench spmm and spmv, not analysis",
            ));
        }
    }
    if args.sizes.is_some() {
        return seacells_analysis(ctx, args);
    }
    let pb = super::spinner("bench analysis");
    let records = sparrow_bench::analysis::run(
        names,
        &list("--dtype", &args.dtype)?,
        args.reps.max(10),
        &mut |m| pb.set_message(m.to_string()),
    )?;
    pb.finish_and_clear();
    emit_json(ctx, args.jsonl.as_deref(), &records)?;
    if ctx.json {
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(r) = records.first() {
        println!(
            "the host half of the upload's analysis, {} threads, median of {} (statistics, then the rest)",
            r.threads, r.reps
        );
    }
    println!(
        "{:<14} {:<4} {:>9} {:>9} {:>9} {:>9}  built",
        "matrix", "type", "nnz", "stats ms", "rest ms", "min ms"
    );
    for r in &records {
        println!(
            "{:<14} {:<4} {:>9} {:>9.1} {:>9.1} {:>9.1}  {}",
            r.matrix,
            r.dtype,
            r.nnz,
            r.stats_ms,
            r.rest_ms,
            r.min_total_ms,
            r.built.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `bench analysis --sizes`: SEACells' kernel matrix at each size, every format's analysis
/// against the one its B update's path reads.
fn seacells_analysis(ctx: &super::Ctx, args: &Args) -> Result<ExitCode> {
    let sizes = seacells_sizes(args)?;
    for &(c, d, _) in &sizes {
        sparrow::memory::ensure_elems(
            &format!("--sizes {c}x{d}: the mixture and its kNN"),
            &[c, d + 64],
            8,
        )?;
    }
    let pb = super::spinner("bench analysis");
    let records =
        sparrow_bench::analysis::seacells_kernel(&sizes, args.reps.clamp(3, 10), &mut |m| {
            pb.set_message(m.to_string())
        })?;
    pb.finish_and_clear();
    emit_json(ctx, args.jsonl.as_deref(), &records)?;
    if ctx.json {
        return Ok(ExitCode::SUCCESS);
    }
    println!("SEACells' kernel matrix (f64): the upload's host analysis and device bytes beside CSR, every format against the B update's path's");
    println!(
        "{:>8} {:>10} {:>9} {:>9} {:>11} {:>11}  path; every format builds",
        "cells", "nnz", "all ms", "path ms", "all MB", "path MB"
    );
    for r in &records {
        println!(
            "{:>8} {:>10} {:>9.1} {:>9.1} {:>11.1} {:>11.1}  {}; {}",
            r.cells,
            r.nnz,
            r.all_ms,
            r.path_ms,
            r.all_bytes as f64 / 1e6,
            r.path_bytes as f64 / 1e6,
            r.path,
            r.built.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn print_table(records: &[Record]) {
    if let Some(r) = records.first() {
        let what = if records.iter().all(|r| r.backend == "cpu") {
            "the host's read bandwidth (the %copy column's base)"
        } else {
            "copy bandwidth"
        };
        println!("{what} measured in this run: {:.0} GB/s", r.copy_bw_gbs);
        if r.cold {
            println!("cold: the L2 was emptied before each GPU repetition");
        }
    }
    println!(
        "{:<9} {:>9} {:>4} {:<4} {:<9} {:<24} {:>9} {:>9} {:>8} {:>8} {:>6} {:>9} {:>9} {:>9}",
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
        "agree",
        "analysis"
    );
    for r in records {
        println!(
            "{:<9} {:>9} {:>4} {:<4} {:<9} {:<24} {:>9.4} {:>9.4} {:>8.1} {:>8.1} {:>5.1}% {:>9} {:>9} {:>9}",
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
            r.analysis_ms
                .map(|s| format!("{s:.1} ms"))
                .unwrap_or_default(),
        );
    }
}

/// `--sizes` as (cells, dims, metacells), or the SEACells targets.
fn seacells_sizes(args: &Args) -> Result<Vec<(usize, usize, usize)>> {
    Ok(match &args.sizes {
        None => sparrow_bench::seacells::SIZES.to_vec(),
        Some(s) => list("--sizes", s)?
            .iter()
            .map(|x| match dims("--sizes", x, "CELLSxDIMSxMETACELLS")?[..] {
                [c, d, m] if c >= 2 && d >= 1 && m >= 1 && m <= c => Ok((c, d, m)),
                _ => Err(Error::invalid(
                    "--sizes",
                    format!("{x:?} needs CELLS >= 2, DIMS >= 1 and 1 <= METACELLS <= CELLS"),
                )),
            })
            .collect::<Result<Vec<_>>>()?,
    })
}

fn seacells(ctx: &super::Ctx, args: &Args) -> Result<ExitCode> {
    let sizes = seacells_sizes(args)?;
    let data = sparrow_bench::seacells::Data::parse(&args.data)?;
    for &(c, d, _) in &sizes {
        // The mixture, its kNN lists and the fit's per-cell rows, in f64.
        sparrow::memory::ensure_elems(
            &format!("--sizes {c}x{d}: the mixture and its kNN"),
            &[c, d + 64],
            8,
        )?;
    }
    if args.max_iter == 0 {
        return Err(Error::invalid("--max-iter", "must be at least 1"));
    }
    let device = ctx.open_device()?;
    let backend = if device.gpu().is_some() { "GPU" } else { "CPU" };
    if ctx.explain {
        eprintln!(
            "plan: {}",
            sparrow::solvers::seacells::fit::plan(
                &device,
                sizes.iter().map(|s| s.1).max().unwrap_or(0)
            )
        );
    }
    let pb = super::spinner("bench seacells");
    let records = sparrow_bench::seacells::run(&device, data, &sizes, args.max_iter, &mut |m| {
        pb.set_message(m.to_string())
    })?;
    pb.finish_and_clear();
    emit_json(ctx, args.jsonl.as_deref(), &records)?;
    if ctx.json {
        return Ok(ExitCode::SUCCESS);
    }
    let what = match data {
        sparrow_bench::seacells::Data::Mixture => "Gaussian mixtures",
        sparrow_bench::seacells::Data::Trajectories => "branching trajectories",
    };
    println!(
        "SEACells on {what}, seed 0, at most {} iterations ({backend})",
        args.max_iter
    );
    for r in &records {
        let stages: Vec<String> = r
            .stages
            .iter()
            .map(|(n, s)| format!("{n} {s:.2}"))
            .collect();
        let timed = |v: &[(&'static str, f64)]| -> String {
            v.iter()
                .map(|(n, s)| format!("{n} {s:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        println!(
            "{} x {}, {} metacells ({} labels): {:.2} s [{}], {} iterations{} (B steps {:?}; B update by part [{}]; A update and products by part [{}]; diffusion map {} operator products), purity {:.4}, peak {}{}",
            r.cells,
            r.dims,
            r.metacells,
            r.clusters,
            r.seconds,
            stages.join(", "),
            r.iterations,
            if r.converged { " (converged)" } else { "" },
            r.b_steps,
            timed(&r.b_parts),
            timed(&r.fit_parts),
            r.diffusion_iterations,
            r.purity_mean,
            r.peak_mb.map_or("n/a".into(), |m| format!("{m:.0} MB")),
            r.gpu_peak_mb
                .map_or(String::new(), |m| format!(", GPU peak {m:.0} MB"))
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn cs(ctx: &super::Ctx, args: &Args) -> Result<ExitCode> {
    let device = ctx.open_device()?;
    let Device::Cuda(gpu) = &device else {
        return Err(Error::unsupported(
            "bench cs times the GPU solvers and needs a GPU (--device cuda)",
        ));
    };
    let v = dims("--cs-shape", &args.cs_shape, "MxNxKxBATCH")?;
    let [m, n, k, batch] = v[..] else {
        return Err(Error::invalid(
            "--cs-shape",
            format!("{:?} is not MxNxKxBATCH", args.cs_shape),
        ));
    };
    if m == 0 || n == 0 || k == 0 || k > m || k > n || batch == 0 {
        return Err(Error::invalid(
            "--cs-shape",
            format!("needs M, N, BATCH >= 1 and 1 <= K <= min(M, N); got {m}x{n}x{k}x{batch}"),
        ));
    }
    if args.iters == 0 {
        return Err(Error::invalid("--iters", "must be at least 1"));
    }
    // Phi twice (f32 and f64), the signals, estimates and gradients of the batch.
    let what = format!("--cs-shape {m}x{n}x{k}x{batch}");
    let phi = sparrow::memory::bytes_of(&what, &[m, n], 16)?;
    let batch_bytes = sparrow::memory::bytes_of(&what, &[m + 3 * n, batch], 8)?;
    sparrow::memory::ensure_fits(&what, phi.saturating_add(batch_bytes))?;
    let f64_too = args.dtype.split(',').any(|t| t.trim() == "f64");
    let pb = super::spinner("bench cs");
    let records = sparrow_bench::cs::run(
        gpu,
        m,
        n,
        k,
        batch,
        args.iters,
        if args.cpu { 32 } else { 0 },
        f64_too,
        &mut |msg| pb.set_message(msg.to_string()),
    )?;
    pb.finish_and_clear();
    super::report_compiles(&device);
    emit_json(ctx, args.jsonl.as_deref(), &records)?;
    if ctx.json {
        return Ok(ExitCode::SUCCESS);
    }
    println!("IHT, Gaussian Phi {m} x {n}, K = {k}, {batch} signals; per iteration");
    println!(
        "{:>5} {:>13} {:>13} {:>14} {:>16}",
        "dtype", "IHT ms/iter", "2 GEMMs ms", "IHT / GEMMs", "CPU ms/iter"
    );
    for r in &records {
        println!(
            "{:>5} {:>13.3} {:>13.3} {:>13.2}x {:>16}",
            r.dtype,
            r.gpu.iteration_ms,
            r.gpu.gemms_ms,
            r.ratio_to_gemms,
            r.cpu_iteration_ms
                .map(|c| format!("{c:.1} ({} sig.)", r.cpu_signals))
                .unwrap_or_else(|| "-".into())
        );
    }
    if let Some(k) = records.iter().find_map(|r| r.kernels.as_ref()) {
        let opt = |v: Option<f64>| v.map_or("n/a".to_string(), |t| format!("{t:.4}"));
        println!(
            "kernels (f32, ms): IHT step over {batch} x {n}: plain {:.4}, cp.async-staged {:.4}",
            k.iht_step_ms, k.iht_step_async_ms
        );
        println!(
            "correlate one signal ({m} x {n}): plain {:.4}, TMA-staged {}, FP8 e4m3 {}",
            k.correlate_ms,
            opt(k.correlate_tma_ms),
            opt(k.correlate_fp8_ms)
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn topk(ctx: &super::Ctx, args: &Args) -> Result<ExitCode> {
    // Arguments first, so a typo is reported before any device work.
    let shapes = match &args.shapes {
        None => sparrow_bench::topk::shape_set(args.set.as_deref().unwrap_or("targets"))?.to_vec(),
        Some(s) => list("--shapes", s)?
            .iter()
            .map(|x| match dims("--shapes", x, "LENxKxSEGMENTS")?[..] {
                [l, k, n] if l > 0 && n > 0 => {
                    // Keys in two types, positions and outputs.
                    sparrow::memory::ensure_elems(&format!("--shapes {x}"), &[l, n], 16)?;
                    Ok((l, k, n))
                }
                _ => Err(Error::invalid(
                    "--shapes",
                    format!("{x:?} is not LENxKxSEGMENTS with positive LEN and SEGMENTS"),
                )),
            })
            .collect::<Result<Vec<_>>>()?,
    };
    let cases = topk_cases(args)?;
    let device = ctx.open_device()?;
    if device.gpu().is_none() && args.sweep {
        return Err(Error::invalid(
            "--sweep",
            "applies to the GPU's kernels; on the CPU bench times the CPU backend alone",
        ));
    }
    let pb = super::spinner("bench topk");
    let (bw, records) = match &device {
        Device::Cuda(gpu) => {
            pb.set_message("measuring copy bandwidth");
            let bw = sparrow_bench::copy_bandwidth(gpu, 1 << 30)?;
            let mut progress = |m: &str| pb.set_message(m.to_string());
            let r = sparrow_bench::topk::run(
                gpu,
                &shapes,
                &cases,
                args.reps,
                bw,
                args.sweep,
                &mut progress,
            )?;
            (bw, r)
        }
        Device::Cpu => {
            pb.set_message("measuring the host's read bandwidth");
            let bw = sparrow_bench::host_read_bandwidth(1 << 29)?;
            let mut progress = |m: &str| pb.set_message(m.to_string());
            let r = sparrow_bench::topk::run_cpu(&shapes, &cases, args.reps, bw, &mut progress)?;
            (bw, r)
        }
    };
    pb.finish_and_clear();
    super::report_compiles(&device);
    emit_json(ctx, args.jsonl.as_deref(), &records)?;
    if ctx.json {
        return Ok(ExitCode::SUCCESS);
    }
    let what = if device.gpu().is_some() {
        "copy bandwidth"
    } else {
        "the host's read bandwidth (the %copy column's base)"
    };
    println!("{what} measured in this run: {bw:.0} GB/s; largest, unsorted");
    println!(
        "{:>4} {:>16} {:>12} {:>11} {:>6} {:>8} {:>10} {:>10} {:>9} {:>6}  kernels",
        "key",
        "pattern",
        "tie-break",
        "length",
        "k",
        "segments",
        "median ms",
        "min ms",
        "key GB/s",
        "%copy"
    );
    for r in &records {
        println!(
            "{:>4} {:>16} {:>12} {:>11} {:>6} {:>8} {:>10.4} {:>10.4} {:>9.1} {:>5.1}%  {}",
            r.key,
            r.pattern,
            r.tie,
            r.len,
            r.k,
            r.segments,
            r.median_ms,
            r.min_ms,
            r.key_gbs,
            100.0 * r.frac_copy_bw,
            r.variant
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Geometric mean of our speed-up over the best cuSPARSE algorithm, per value type, and the
/// slowest case.
fn print_geomeans(records: &[Record]) {
    let geomean = |v: &[f64]| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp();
    for dt in ["f32", "f64"] {
        let cases: Vec<&Record> = records
            .iter()
            .filter(|r| r.dtype == dt && r.speedup_vs_cusparse.is_some())
            .collect();
        let Some(worst) = cases.iter().min_by(|a, b| {
            a.speedup_vs_cusparse
                .unwrap_or(0.0)
                .total_cmp(&b.speedup_vs_cusparse.unwrap_or(0.0))
        }) else {
            continue;
        };
        let best: Vec<f64> = cases.iter().filter_map(|r| r.speedup_vs_cusparse).collect();
        let default: Vec<f64> = cases.iter().filter_map(|r| r.speedup_vs_default).collect();
        println!(
            "{dt}: geometric mean {:.2}x cuSPARSE (its fastest algorithm per case) over {} cases; slowest {:.2}x ({} N={}){}",
            geomean(&best),
            best.len(),
            worst.speedup_vs_cusparse.unwrap_or(0.0),
            worst.matrix,
            worst.n,
            if default.is_empty() {
                String::new()
            } else {
                format!(
                    "; {:.2}x its default algorithm (torch.sparse.mm's)",
                    geomean(&default)
                )
            }
        );
    }
}

/// One line per matrix and value type: speed-up over cuSPARSE against log2 N, with 1x marked.
fn plot_ratios(path: &std::path::Path, records: &[Record]) -> Result<()> {
    use plotters::prelude::*;
    let err = |e: String| Error::format(path, format!("drawing the plot: {e}"));
    let pts: Vec<(&Record, f64, f64)> = records
        .iter()
        .filter_map(|r| r.speedup_vs_cusparse.map(|s| (r, (r.n as f64).log2(), s)))
        .collect();
    if pts.is_empty() {
        return Err(Error::invalid(
            "--plot",
            "no ratios to draw (no cuSPARSE comparison ran)",
        ));
    }
    let xmax = pts.iter().map(|p| p.1).fold(0.0, f64::max) + 0.5;
    let ymax = pts.iter().map(|p| p.2).fold(1.0, f64::max) * 1.15;
    let root = SVGBackend::new(path, (800, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{}: speed-up over cuSPARSE", records[0].op),
            ("sans-serif", 20),
        )
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(-0.5..xmax, 0.0..ymax)
        .map_err(|e| err(e.to_string()))?;
    chart
        .configure_mesh()
        .x_desc("log2 N")
        .y_desc("cuSPARSE time / ours")
        .draw()
        .map_err(|e| err(e.to_string()))?;
    chart
        .draw_series(LineSeries::new(
            vec![(-0.5, 1.0), (xmax, 1.0)],
            BLACK.mix(0.5),
        ))
        .map_err(|e| err(e.to_string()))?;
    let mut keys: Vec<(String, String)> = pts
        .iter()
        .map(|p| (p.0.matrix.clone(), p.0.dtype.clone()))
        .collect();
    keys.sort();
    keys.dedup();
    for (i, (m, dt)) in keys.iter().enumerate() {
        let color = Palette99::pick(i);
        let line: Vec<(f64, f64)> = pts
            .iter()
            .filter(|p| &p.0.matrix == m && &p.0.dtype == dt)
            .map(|p| (p.1, p.2))
            .collect();
        chart
            .draw_series(LineSeries::new(line, color.stroke_width(2)))
            .map_err(|e| err(e.to_string()))?
            .label(format!("{m} {dt}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], Palette99::pick(i)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(|e| err(e.to_string()))?;
    root.present().map_err(|e| err(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(matrix: &str, n: usize, dtype: &str, speedup: Option<f64>) -> Record {
        Record {
            op: "spmm".into(),
            matrix: matrix.into(),
            nrows: 10,
            ncols: 10,
            nnz: 20,
            n,
            dtype: dtype.into(),
            backend: "sparrow".into(),
            variant: "k".into(),
            median_ms: 1.0,
            min_ms: 1.0,
            reps: 10,
            cold: false,
            gflops: 1.0,
            gbs: 1.0,
            frac_copy_bw: 0.1,
            copy_bw_gbs: 4000.0,
            speedup_vs_cusparse: speedup,
            speedup_vs_default: speedup,
            agreement: Some(0.0),
            analysis_ms: None,
        }
    }

    #[test]
    fn ratios_plot_one_line_per_matrix_and_type() {
        let records = vec![
            rec("banded", 8, "f32", Some(0.5)),
            rec("banded", 32, "f32", Some(2.0)),
            rec("fem", 8, "f64", Some(1.5)),
            rec("fem", 8, "f64", None),
        ];
        let p = std::env::temp_dir().join(format!("sparrow-plot-{}.svg", std::process::id()));
        plot_ratios(&p, &records).unwrap();
        let svg = std::fs::read_to_string(&p).unwrap();
        assert!(
            svg.contains("banded f32") && svg.contains("fem f64"),
            "legend names every line"
        );
        let e = plot_ratios(&p, &[rec("x", 8, "f32", None)])
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "invalid argument `--plot`: no ratios to draw (no cuSPARSE comparison ran)"
        );
    }
}
