//! `sparrow demo`: the main job on built-in data. Builds a power-law sparse matrix, runs SpMV
//! and SpMM on the chosen device, checks both against the naive oracle and the CPU backend;
//! selects the top 100 of 2,000 segments of random keys and checks them against the oracle and
//! the CPU; recovers sparse signals from Gaussian measurements; prints results and timings.

use std::process::ExitCode;
use std::time::Instant;

use sparrow::matrix::{gen, Dense};
use sparrow::ops::check::{compare, tolerance};
use sparrow::ops::products::oracle as spmm_oracle;
use sparrow::ops::products::oracle as spmv_oracle;
use sparrow::ops::spmm::Spmm;
use sparrow::ops::spmv::Spmv;
use sparrow::{Device, Result};

#[derive(clap::Args)]
pub struct Args {
    /// Rows (and columns) of the generated matrix.
    #[arg(long, default_value_t = 200_000)]
    rows: usize,
    /// Columns of B in the SpMM.
    #[arg(long, default_value_t = 32)]
    n: usize,
}

pub fn run(ctx: &super::Ctx, args: Args) -> Result<ExitCode> {
    for (flag, v) in [("--rows", args.rows), ("--n", args.n)] {
        if v == 0 {
            return Err(sparrow::Error::invalid(flag, "must be at least 1"));
        }
    }
    // The matrix (16 entries a row on average, of 8 bytes with their columns), and B and the
    // three C's of the SpMM check.
    let what = format!("the demo's {} rows with N = {}", args.rows, args.n);
    let matrix = sparrow::memory::bytes_of(&what, &[args.rows, 16], 8)?;
    let dense = sparrow::memory::bytes_of(&what, &[args.rows, args.n], 4 * 4 + 8)?;
    sparrow::memory::ensure_fits(&what, matrix.saturating_add(dense))?;
    let device = ctx.open_device()?;
    let t = Instant::now();
    let a = gen::power_law::<f32>(args.rows, args.rows, 16.0, (args.rows / 20).max(1), 1.5, 42)?;
    let st = sparrow::ops::products::RowStats::of(&a);
    println!(
        "matrix: {} x {} power-law, {} nonzeros (mean row {:.1}, longest {}, {} empty), built in {:.2} s",
        a.nrows(),
        a.ncols(),
        a.nnz(),
        st.mean_len,
        st.max_len,
        st.empty_rows,
        t.elapsed().as_secs_f64()
    );
    let cpu = Device::Cpu;
    let tol = tolerance::<f32>();
    let mut all_pass = true;

    // SpMV: y = 2 A x - y.
    let x = gen::dense::<f32>(a.ncols(), 1, 1, 1)?.into_data();
    let y0 = gen::dense::<f32>(a.nrows(), 1, 1, 2)?.into_data();
    let op = Spmv::<f32>::new().alpha(2.0).beta(-1.0);
    let (want, scale) = spmv_oracle::spmv(2.0, &a, &x, -1.0, &y0);
    let mut y = y0.clone();
    let t = Instant::now();
    let plan = op.run(&device, &a, &x, &mut y)?;
    let first = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut y2 = y0.clone();
    op.run(&device, &a, &x, &mut y2)?;
    let second = t.elapsed().as_secs_f64();
    let mut ycpu = y0.clone();
    let t = Instant::now();
    op.run(&cpu, &a, &x, &mut ycpu)?;
    let tcpu = t.elapsed().as_secs_f64();
    if ctx.explain {
        println!("plan: {plan}");
    }
    let c = compare(
        &y.iter().map(|&v| v as f64).collect::<Vec<_>>(),
        &want,
        &scale,
        tol,
    );
    let agree = compare(
        &y.iter().map(|&v| v as f64).collect::<Vec<_>>(),
        &ycpu.iter().map(|&v| v as f64).collect::<Vec<_>>(),
        &scale,
        2.0 * tol,
    );
    all_pass &= c.pass && agree.pass;
    println!(
        "spmv on {}: first run {:.2} ms (on a GPU this includes loading the kernels), second {:.2} ms; CPU {:.2} ms; vs oracle max rel err {:.1e}, vs CPU {:.1e}: {}",
        device.describe(),
        first * 1e3,
        second * 1e3,
        tcpu * 1e3,
        c.max_rel,
        agree.max_rel,
        if c.pass && agree.pass { "ok" } else { "MISMATCH" }
    );
    println!("  y[0..4] = {:?}", &y[..y.len().min(4)]);

    // SpMM: C = A B.
    let n = args.n;
    let b = gen::dense::<f32>(a.ncols(), n, n, 3)?;
    let c0 = Dense::filled(a.nrows(), n, n, f32::NAN)?;
    let op = Spmm::<f32>::new();
    let (want, scale) = spmm_oracle::spmm(1.0, &a, &b, 0.0, &c0);
    let mut cm = c0.clone();
    let t = Instant::now();
    let plan = op.run(&device, &a, &b, &mut cm)?;
    let tdev = t.elapsed().as_secs_f64();
    let mut ccpu = c0.clone();
    let t = Instant::now();
    op.run(&cpu, &a, &b, &mut ccpu)?;
    let tcpu = t.elapsed().as_secs_f64();
    if ctx.explain {
        println!("plan: {plan}");
    }
    let got: Vec<f64> = cm.data().iter().map(|&v| v as f64).collect();
    let c = compare(&got, &want, &scale, tol);
    let agree = compare(
        &got,
        &ccpu.data().iter().map(|&v| v as f64).collect::<Vec<_>>(),
        &scale,
        2.0 * tol,
    );
    all_pass &= c.pass && agree.pass;
    println!(
        "spmm N={n} on {}: {:.2} ms (with transfers), {:.1} GFLOP/s; CPU {:.2} ms; vs oracle max rel err {:.1e}, vs CPU {:.1e}: {}",
        device.describe(),
        tdev * 1e3,
        2.0 * a.nnz() as f64 * n as f64 / tdev / 1e9,
        tcpu * 1e3,
        c.max_rel,
        agree.max_rel,
        if c.pass && agree.pass { "ok" } else { "MISMATCH" }
    );
    println!("  C[0, 0..4] = {:?}", &cm.row(0)[..n.min(4)]);
    all_pass &= topk_demo(&device)?;
    all_pass &= recovery_demo(&device)?;
    all_pass &= seacells_demo(&device)?;
    super::report_compiles(&device);
    Ok(if all_pass {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Top-k: 2,000 segments of 5,000 f32 keys with heavy ties, deterministic tie-break, sorted.
fn topk_demo(device: &Device) -> Result<bool> {
    use sparrow::ops::topk::check::{same_bytes, verify};
    use sparrow::ops::topk::data::{keys, Pattern};
    use sparrow::ops::topk::{Segments, TieBreak, TopK};
    let (count, len) = (2_000, 5_000);
    let k: Vec<f32> = keys(count * len, Pattern::HeavyTies, 7);
    let req = TopK::largest(100)
        .tie_break(TieBreak::SmallerIndex)
        .sorted(true);
    let segs = Segments::Fixed { count, len };
    let t = Instant::now();
    let (out, _) = req.run_keys(device, &k, segs)?;
    let tdev = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let (cpu, _) = req.run_keys(&Device::Cpu, &k, segs)?;
    let tcpu = t.elapsed().as_secs_f64();
    let layout = req.layout(k.len(), segs, None)?;
    let ok = verify(&req, &k, &layout, None::<&[f32]>, &out).is_ok() && same_bytes(&out, &cpu);
    println!(
        "topk 100 of {count} x {len} (ties by smaller index, sorted) on {}: {:.2} ms (with transfers); CPU {:.2} ms; vs oracle and CPU: {}",
        device.describe(),
        tdev * 1e3,
        tcpu * 1e3,
        if ok { "identical" } else { "MISMATCH" }
    );
    println!(
        "  row 0: keys {:?} at {:?}",
        &out.keys[..3],
        (0..3).map(|j| out.indices.get(j)).collect::<Vec<_>>()
    );
    Ok(ok)
}

/// Recovery: 16 signals of length 1,000 with 50 spikes from 500 Gaussian measurements, CoSaMP.
fn recovery_demo(device: &Device) -> Result<bool> {
    use sparrow::solvers::cs::data::{gaussian_phi, measure, sparse_signals};
    use sparrow::solvers::cs::{Method, Recover};
    let (m, n, k, batch) = (500, 1000, 50, 16);
    let phi = gaussian_phi(m, n, 1)?;
    let x = sparse_signals(n, k, batch, true, 2)?;
    let y = measure(&phi, &x)?;
    let t = Instant::now();
    let (rec, plan) = Recover::new(Method::Cosamp)
        .sparsity(k)
        .run(device, &phi, &y)?;
    let secs = t.elapsed().as_secs_f64();
    let worst = (0..batch)
        .map(|b| {
            let (mut e, mut s) = (0.0, 0.0);
            for j in 0..n {
                e += (rec.x.get(j, b) - x.get(j, b)).powi(2);
                s += x.get(j, b).powi(2);
            }
            (e / s).sqrt()
        })
        .fold(0.0, f64::max);
    let ok = worst < 1e-3;
    println!(
        "recover {batch} signals (n {n}, m {m}, K {k}) by CoSaMP on {:?}: {:.2} ms; worst relative error {worst:.1e}: {}",
        plan.backend,
        secs * 1e3,
        if ok { "ok" } else { "FAILED" }
    );
    Ok(ok)
}

/// SEACells: 3,000 cells of a 10-cluster Gaussian mixture in 20 dimensions, 100 metacells on
/// the chosen device; every metacell should hold one cluster's cells.
fn seacells_demo(device: &Device) -> Result<bool> {
    use sparrow::solvers::seacells::fit::{fit_on, gaussian_mixture, mean_purity, purity, Config};
    let (cells, dims, clusters, nm) = (3_000, 20, 10, 100);
    let (x, labels) = gaussian_mixture(cells, dims, clusters, 5);
    let t = Instant::now();
    let f = fit_on(device, &x, &Config::new(nm), &mut |_| {})?;
    let secs = t.elapsed().as_secs_f64();
    let names: Vec<String> = labels.iter().map(|l| l.to_string()).collect();
    let mean = mean_purity(&purity(&f.assignments, &names, nm)?);
    let ok = mean >= 0.95;
    println!(
        "seacells {nm} metacells of {cells} cells ({clusters}-cluster mixture, {dims} dims) on {}: {:.2} s, {} iterations{}, RSS {:.3} -> {:.3}, mean purity {mean:.3}: {}",
        device.describe(),
        secs,
        f.iterations,
        if f.converged { " (converged)" } else { "" },
        f.rss[0],
        f.rss[f.rss.len() - 1],
        if ok { "ok" } else { "FAILED" }
    );
    Ok(ok)
}
