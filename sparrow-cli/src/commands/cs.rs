//! `sparrow cs phase-transition`: the Donoho-Tanner diagram of a recovery method.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use plotters::prelude::*;
use sparrow::solvers::cs::phase::{
    half_contour, l1_curve, parse_range, run as run_phase, PhaseConfig, PhaseResult,
};
use sparrow::solvers::cs::Method;
use sparrow::{Error, Result};

use super::files::Files;

#[derive(clap::Subcommand)]
pub enum Cs {
    /// Success rate over a grid of delta = m / n and rho = K / m.
    PhaseTransition(PhaseArgs),
}

#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct PhaseArgs {
    /// iht, niht, htp, cosamp, sp, omp, amp or fista.
    #[arg(long)]
    method: String,
    /// Signal length.
    #[arg(long, default_value_t = 1000)]
    n: usize,
    /// delta grid, start:stop:step.
    #[arg(long, default_value = "0.05:0.95:0.05")]
    delta: String,
    /// rho grid, start:stop:step.
    #[arg(long, default_value = "0.05:0.95:0.05")]
    rho: String,
    /// Trials per cell.
    #[arg(long, default_value_t = 20)]
    trials: usize,
    /// Gaussian signal entries instead of +-1.
    #[arg(long)]
    gaussian: bool,
    /// Iteration cap of the solver.
    #[arg(long, default_value_t = 500)]
    max_iter: usize,
    /// Where to write the result (.json).
    #[arg(long)]
    out: PathBuf,
    /// Where to draw the diagram (.svg).
    #[arg(long)]
    plot: Option<PathBuf>,
}

pub fn run(ctx: &super::Ctx, cmd: Cs) -> Result<ExitCode> {
    let Cs::PhaseTransition(args) = cmd;
    let mut files = Files::check(
        &[],
        &[("--out", Some(&args.out)), ("--plot", args.plot.as_deref())],
    )?;
    let method: Method = args.method.parse()?;
    let cfg = PhaseConfig {
        method,
        n: args.n,
        deltas: parse_range("--delta", &args.delta)?,
        rhos: parse_range("--rho", &args.rho)?,
        trials: args.trials,
        signs: !args.gaussian,
        max_iter: args.max_iter,
    };
    if cfg.n == 0 || cfg.trials == 0 || cfg.max_iter == 0 {
        let (arg, _) = [
            ("--n", cfg.n),
            ("--trials", cfg.trials),
            ("--max-iter", cfg.max_iter),
        ]
        .into_iter()
        .find(|&(_, v)| v == 0)
        .expect("one is zero");
        return Err(Error::invalid(arg, "must be at least 1"));
    }
    // The widest trial's Phi, m x n with m = delta n, in f64.
    let m = cfg.deltas.iter().copied().fold(0.0, f64::max) * cfg.n as f64;
    sparrow::memory::ensure_elems("a trial's Phi", &[m.ceil() as usize, cfg.n], 8)?;
    let device = ctx.open_device()?;
    let pb = indicatif::ProgressBar::new((cfg.deltas.len() * cfg.rhos.len()) as u64);
    pb.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} cells {elapsed}")
            .expect("valid template"),
    );
    let res = run_phase(&device, &cfg, &mut |i, _| pb.set_position(i as u64))?;
    pb.finish_and_clear();
    let contour = half_contour(&res);
    let l1: Vec<f64> = cfg.deltas.iter().map(|&d| l1_curve(d)).collect();
    let json = serde_json::json!({"result": res, "half_contour_rho": contour, "l1_curve_rho": l1});
    let out = files.path("--out");
    std::fs::write(
        &out,
        serde_json::to_string_pretty(&json).expect("serializes"),
    )
    .map_err(|e| Error::io(&args.out, e))?;
    if args.plot.is_some() {
        plot(&files.path("--plot"), &res, &contour, &l1)?;
    }
    files.commit()?;
    if ctx.json {
        println!("{json}");
    } else {
        println!(
            "{method:?} phase transition, n = {}, {} trials per cell; 50% success contour:",
            cfg.n, cfg.trials
        );
        for (d, c) in cfg.deltas.iter().zip(&contour) {
            match c {
                Some(r) => println!("  delta {d:.2}: rho {r:.3}"),
                None => println!("  delta {d:.2}: no crossing on the grid"),
            }
        }
        println!("wrote {}", args.out.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn plot(path: &Path, res: &PhaseResult, contour: &[Option<f64>], l1: &[f64]) -> Result<()> {
    let err = |e: String| Error::format(path, format!("drawing the plot: {e}"));
    let root = SVGBackend::new(path, (640, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
    let (dl, rl) = (&res.config.deltas, &res.config.rhos);
    let half = |v: &[f64], i: usize| if v.len() > 1 { (v[1] - v[0]) / 2.0 } else { 0.025 } * if i == 0 { -1.0 } else { 1.0 };
    let (x0, x1) = (dl[0] + half(dl, 0), dl[dl.len() - 1] + half(dl, 1));
    let (y0, y1) = (rl[0] + half(rl, 0), rl[rl.len() - 1] + half(rl, 1));
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{:?}: recovery rate, n = {}",
                res.config.method, res.config.n
            ),
            ("sans-serif", 20),
        )
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(|e| err(e.to_string()))?;
    chart
        .configure_mesh()
        .x_desc("delta = m / n")
        .y_desc("rho = K / m")
        .draw()
        .map_err(|e| err(e.to_string()))?;
    let (hx, hy) = (half(dl, 1), half(rl, 1));
    chart
        .draw_series(res.success.iter().enumerate().flat_map(|(r, row)| {
            row.iter().enumerate().map(move |(d, &s)| {
                let shade = (255.0 * (1.0 - s)) as u8;
                Rectangle::new(
                    [(dl[d] - hx, rl[r] - hy), (dl[d] + hx, rl[r] + hy)],
                    RGBColor(shade, shade, 255).filled(),
                )
            })
        }))
        .map_err(|e| err(e.to_string()))?;
    chart
        .draw_series(LineSeries::new(
            dl.iter()
                .zip(contour)
                .filter_map(|(&d, c)| c.map(|r| (d, r))),
            RED.stroke_width(2),
        ))
        .map_err(|e| err(e.to_string()))?
        .label("50% success")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED));
    chart
        .draw_series(LineSeries::new(
            dl.iter()
                .zip(l1)
                .map(|(&d, &r)| (d, r))
                .filter(|&(_, r)| r >= y0 && r <= y1),
            BLACK.stroke_width(2),
        ))
        .map_err(|e| err(e.to_string()))?
        .label("l1 (Donoho-Tanner)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(|e| err(e.to_string()))?;
    root.present().map_err(|e| err(e.to_string()))
}
