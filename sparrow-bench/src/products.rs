//! Benchmarks of SpMM and SpMV.

use std::sync::Arc;

use super::matrices;
use super::timing::{
    copy_bandwidth, host_read_bandwidth, time_cpu, time_gpu_flushed, L2Flush, Timing,
};
use crate::baselines::cusparse::{
    CsrDescr, Cusparse, Enqueue, SpmmCall, SpmvCall, SPMM_ALGS, SPMV_ALGS,
};
use sparrow::device::{DeviceDense, Gpu};
use sparrow::matrix::{gen, Csr, Dense};
use sparrow::ops::products::cpu as spmm_cpu;
use sparrow::ops::products::cpu as spmv_cpu;
use sparrow::ops::products::plan::ProductsTuning;
use sparrow::ops::products::PreparedCsr;
use sparrow::ops::spmm::{GpuPath, Spmm};
use sparrow::ops::spmv::Spmv;
use sparrow::{Device, Error, Result, Scalar};

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// `spmm` or `spmv`.
    pub op: String,
    /// Matrix names (see [`matrices::NAMES`]).
    pub matrices: Vec<String>,
    /// Columns of B (SpMM only).
    pub ns: Vec<usize>,
    /// `f32` or `f64`.
    pub dtypes: Vec<String>,
    /// Timed repetitions (at least 10 are used).
    pub reps: usize,
    /// Also time the CPU backend.
    pub cpu: bool,
    /// Also time every GPU path that computes the case (backend `sweep`), to tune the policy.
    pub sweep: bool,
    /// With `sweep`, time only the paths whose kernel names contain one of these (all when
    /// empty).
    pub sweep_kernels: Vec<String>,
    /// Empty the L2 before each timed GPU repetition ([`L2Flush`]), ours and cuSPARSE's alike.
    pub cold: bool,
}

/// One measured row.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Record {
    /// `spmm` or `spmv`.
    pub op: String,
    /// Matrix name.
    pub matrix: String,
    /// Rows of A.
    pub nrows: usize,
    /// Columns of A.
    pub ncols: usize,
    /// Entries of A.
    pub nnz: usize,
    /// Columns of B (1 for SpMV).
    pub n: usize,
    /// Value type.
    pub dtype: String,
    /// `sparrow`, `cusparse` or `cpu`.
    pub backend: String,
    /// Kernel or algorithm.
    pub variant: String,
    /// Median time, ms.
    pub median_ms: f64,
    /// Fastest time, ms.
    pub min_ms: f64,
    /// Repetitions.
    pub reps: usize,
    /// Whether the L2 was emptied before each repetition ([`BenchConfig::cold`]).
    pub cold: bool,
    /// 2 nnz N / median time.
    pub gflops: f64,
    /// Minimum bytes moved (A, B and C once each) / median time.
    pub gbs: f64,
    /// `gbs` over `copy_bw_gbs`.
    pub frac_copy_bw: f64,
    /// The bandwidth measured in this run, GB/s: the GPU's copy, or the host's read where only
    /// the CPU backend was timed ([`run_cpu`]).
    pub copy_bw_gbs: f64,
    /// Best cuSPARSE median over ours (above 1: we are faster); on sparrow rows only.
    pub speedup_vs_cusparse: Option<f64>,
    /// cuSPARSE's default algorithm (what `torch.sparse.mm` calls) over ours; sparrow rows only.
    pub speedup_vs_default: Option<f64>,
    /// Largest |ours - cuSPARSE| / max |cuSPARSE| (cross-backend agreement); sparrow rows only.
    pub agreement: Option<f64>,
    /// Host time of the matrix's one-off analysis (statistics, long-row chunks, SpMV work
    /// blocks), ms; sparrow rows only.
    pub analysis_ms: Option<f64>,
}

fn min_bytes<T: Scalar>(a: &Csr<T>, n: usize) -> f64 {
    let s = std::mem::size_of::<T>() as f64;
    a.nnz() as f64 * (4.0 + s)
        + (a.nrows() + 1) as f64 * 8.0
        + (a.ncols() * n) as f64 * s
        + (a.nrows() * n) as f64 * s
}

/// Runs the benchmark on `gpu`, calling `progress` before each case.
pub fn run(
    gpu: &Arc<Gpu>,
    cfg: &BenchConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<Record>> {
    check_op(&cfg.op)?;
    progress("measuring copy bandwidth");
    let bw = copy_bandwidth(gpu, 1 << 30)?;
    let mut out = Vec::new();
    for dt in &cfg.dtypes {
        match dt.as_str() {
            "f32" => run_typed::<f32>(gpu, cfg, bw, progress, &mut out)?,
            "f64" => run_typed::<f64>(gpu, cfg, bw, progress, &mut out)?,
            other => return Err(bad_dtype(other)),
        }
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn record<T: Scalar>(
    cfg: &BenchConfig,
    name: &str,
    a: &Csr<T>,
    n: usize,
    backend: &str,
    variant: &str,
    t: Timing,
    bw: f64,
) -> Record {
    let secs = t.median_ms * 1e-3;
    let gbs = min_bytes(a, n) / secs / 1e9;
    Record {
        op: cfg.op.clone(),
        matrix: name.to_string(),
        nrows: a.nrows(),
        ncols: a.ncols(),
        nnz: a.nnz(),
        n,
        dtype: T::NAME.to_string(),
        backend: backend.to_string(),
        variant: variant.to_string(),
        median_ms: t.median_ms,
        min_ms: t.min_ms,
        reps: t.reps,
        cold: cfg.cold,
        gflops: 2.0 * a.nnz() as f64 * n as f64 / secs / 1e9,
        gbs,
        frac_copy_bw: gbs / bw,
        copy_bw_gbs: bw,
        speedup_vs_cusparse: None,
        speedup_vs_default: None,
        agreement: None,
        analysis_ms: None,
    }
}

fn agreement<T: Scalar>(ours: &[T], theirs: &[T]) -> f64 {
    let mut scale = 0.0f64;
    let mut diff = 0.0f64;
    for (a, b) in ours.iter().zip(theirs) {
        scale = scale.max(b.to_f64().abs());
        let d = (a.to_f64() - b.to_f64()).abs();
        diff = if d.is_nan() {
            f64::INFINITY
        } else {
            diff.max(d)
        };
    }
    diff / scale.max(f64::MIN_POSITIVE)
}

/// Times a prepared cuSPARSE call; None when cuSPARSE refuses the algorithm for this layout.
fn time_call<C: Enqueue>(
    gpu: &Gpu,
    reps: usize,
    flush: Option<&L2Flush>,
    make: impl FnOnce() -> Result<C>,
) -> Result<Option<Timing>> {
    match make() {
        Ok(call) => time_gpu_flushed(gpu, 3, reps, flush, || call.enqueue()).map(Some),
        Err(Error::Unsupported { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

fn run_typed<T: Scalar>(
    gpu: &Arc<Gpu>,
    cfg: &BenchConfig,
    bw: f64,
    progress: &mut dyn FnMut(&str),
    out: &mut Vec<Record>,
) -> Result<()> {
    let reps = cfg.reps.max(10);
    let flush = if cfg.cold {
        Some(L2Flush::new(gpu)?)
    } else {
        None
    };
    let flush = flush.as_ref();
    let cs = Cusparse::new(gpu.clone())?;
    let device = Device::Cuda(gpu.clone());
    for name in &cfg.matrices {
        progress(&format!("building {name} ({})", T::NAME));
        let a: Csr<T> = matrices::build(name)?;
        let da = PreparedCsr::upload(gpu, &a)?;
        let descr = CsrDescr::new(gpu, &a, &da)?;
        let ns: Vec<usize> = if cfg.op == "spmv" {
            vec![1]
        } else {
            cfg.ns.clone()
        };
        for &n in &ns {
            progress(&format!("{} {name} N={n} {}", cfg.op, T::NAME));
            let b = gen::dense::<T>(a.ncols(), n, n, 7)?;
            let db = DeviceDense::upload(gpu, &b)?;
            let c0 = Dense::filled(a.nrows(), n, n, T::ZERO)?;
            let mut dc = DeviceDense::upload(gpu, &c0)?;
            let first = out.len();
            // Ours.
            let (ours_t, variant, ours_c) = if cfg.op == "spmm" {
                let op = Spmm::<T>::new();
                let plan = op.plan(&device, &da.stats, n)?;
                let t = time_gpu_flushed(gpu, 3, reps, flush, || {
                    op.run_device(gpu, &da, &db, &mut dc)
                })?;
                (
                    t,
                    plan.kernel.unwrap_or_default(),
                    dc.download(gpu)?.into_data(),
                )
            } else {
                let op = Spmv::<T>::new();
                let plan = op.plan(&device, &da.stats)?;
                let t = time_gpu_flushed(gpu, 3, reps, flush, || {
                    op.run_device(gpu, &da, &db.buf, &dc.buf)
                })?;
                (
                    t,
                    plan.kernel.unwrap_or_default(),
                    dc.download(gpu)?.into_data(),
                )
            };
            out.push(record(cfg, name, &a, n, "sparrow", &variant, ours_t, bw));
            out[first].analysis_ms = Some(da.analysis_ms);
            if cfg.sweep {
                let tuning = ProductsTuning::for_arch(gpu.limits().compute_capability);
                for path in GpuPath::all().into_iter().filter(|p| {
                    let k = p.kernels(T::NAME, n, &da.stats, true).join(" ");
                    p.applies(n, &da.stats, std::mem::size_of::<T>(), tuning)
                        && (cfg.sweep_kernels.is_empty()
                            || cfg.sweep_kernels.iter().any(|f| k.contains(f.as_str())))
                }) {
                    let t = if cfg.op == "spmm" {
                        let op = Spmm::<T>::new().force_path(path);
                        time_gpu_flushed(gpu, 3, reps, flush, || {
                            op.run_device(gpu, &da, &db, &mut dc)
                        })?
                    } else {
                        let op = Spmv::<T>::new().force_path(path);
                        time_gpu_flushed(gpu, 3, reps, flush, || {
                            op.run_device(gpu, &da, &db.buf, &dc.buf)
                        })?
                    };
                    let mut v = path.kernels(T::NAME, n, &da.stats, true).join(" + ");
                    if let GpuPath::Sorted { lane_entries, .. } = path {
                        v = format!("sorted_e{lane_entries}: {v}");
                    }
                    out.push(record(cfg, name, &a, n, "sweep", &v, t, bw));
                }
            }
            // cuSPARSE, every algorithm it accepts for this layout.
            let mut best: Option<f64> = None;
            let mut best_c: Option<Vec<T>> = None;
            let mut dc2 = DeviceDense::upload(gpu, &c0)?;
            let (one, zero) = (T::from_f64(1.0), T::ZERO);
            let names: Vec<&str> = if cfg.op == "spmm" {
                SPMM_ALGS.iter().map(|a| a.0).collect()
            } else {
                SPMV_ALGS.iter().map(|a| a.0).collect()
            };
            for (i, alg_name) in names.into_iter().enumerate() {
                let t = if cfg.op == "spmm" {
                    time_call(gpu, reps, flush, || {
                        SpmmCall::new(&cs, &descr, &db, &mut dc2, one, zero, SPMM_ALGS[i].1)
                    })?
                } else {
                    time_call(gpu, reps, flush, || {
                        SpmvCall::new(
                            &cs,
                            &descr,
                            &db.buf,
                            &mut dc2.buf,
                            one,
                            zero,
                            SPMV_ALGS[i].1,
                        )
                    })?
                };
                let Some(t) = t else { continue };
                out.push(record(cfg, name, &a, n, "cusparse", alg_name, t, bw));
                if alg_name == "default" {
                    out[first].speedup_vs_default = Some(t.median_ms / ours_t.median_ms);
                }
                if best.is_none_or(|b| t.median_ms < b) {
                    best = Some(t.median_ms);
                    best_c = Some(dc2.download(gpu)?.into_data());
                }
            }
            if let (Some(b), Some(bc)) = (best, best_c) {
                out[first].speedup_vs_cusparse = Some(b / ours_t.median_ms);
                out[first].agreement = Some(agreement(&ours_c[..bc.len().min(ours_c.len())], &bc));
            }
            if cfg.cpu {
                let t = time_cpu_case(&cfg.op, &a, &b, reps)?;
                out.push(record(cfg, name, &a, n, "cpu", CPU_VARIANT, t, bw));
            }
        }
    }
    Ok(())
}

/// How the CPU backend's rows are named in the records.
const CPU_VARIANT: &str = "rayon";

/// Times the CPU backend's `C = A B` (SpMM) or `y = A x` (SpMV, B's one column as x).
fn time_cpu_case<T: Scalar>(op: &str, a: &Csr<T>, b: &Dense<T>, reps: usize) -> Result<Timing> {
    let one = T::from_f64(1.0);
    if op == "spmm" {
        let mut c = Dense::filled(a.nrows(), b.ncols(), b.ncols(), T::ZERO)?;
        time_cpu(1, reps, || {
            spmm_cpu::spmm(one, a, b, T::ZERO, &mut c);
            Ok(())
        })
    } else {
        let x = b.data().to_vec();
        let mut y = vec![T::ZERO; a.nrows()];
        time_cpu(1, reps, || {
            spmv_cpu::spmv(one, a, &x, T::ZERO, &mut y);
            Ok(())
        })
    }
}

/// Times the CPU backend alone (no GPU needed) on `cfg`'s matrices, against the host's read
/// bandwidth measured in the same run; calls `progress` before each case. `cfg.cpu`, `sweep`
/// and `cold` do not apply and are ignored.
pub fn run_cpu(cfg: &BenchConfig, progress: &mut dyn FnMut(&str)) -> Result<Vec<Record>> {
    check_op(&cfg.op)?;
    progress("measuring the host's read bandwidth");
    let bw = host_read_bandwidth(1 << 29)?;
    let cfg = BenchConfig {
        cold: false,
        ..cfg.clone()
    };
    let mut out = Vec::new();
    for dt in &cfg.dtypes {
        match dt.as_str() {
            "f32" => run_cpu_typed::<f32>(&cfg, bw, progress, &mut out)?,
            "f64" => run_cpu_typed::<f64>(&cfg, bw, progress, &mut out)?,
            other => return Err(bad_dtype(other)),
        }
    }
    Ok(out)
}

fn run_cpu_typed<T: Scalar>(
    cfg: &BenchConfig,
    bw: f64,
    progress: &mut dyn FnMut(&str),
    out: &mut Vec<Record>,
) -> Result<()> {
    for name in &cfg.matrices {
        progress(&format!("building {name} ({})", T::NAME));
        let a: Csr<T> = matrices::build(name)?;
        let ns = if cfg.op == "spmv" {
            vec![1]
        } else {
            cfg.ns.clone()
        };
        for n in ns {
            progress(&format!("{} {name} N={n} {} on the CPU", cfg.op, T::NAME));
            let b = gen::dense::<T>(a.ncols(), n, n, 7)?;
            let t = time_cpu_case(&cfg.op, &a, &b, cfg.reps.max(10))?;
            out.push(record(cfg, name, &a, n, "cpu", CPU_VARIANT, t, bw));
        }
    }
    Ok(())
}

fn check_op(op: &str) -> Result<()> {
    if op != "spmm" && op != "spmv" {
        return Err(Error::invalid("op", format!("{op:?} is not spmm or spmv")));
    }
    Ok(())
}

fn bad_dtype(dt: &str) -> Error {
    Error::invalid("--dtype", format!("{dt:?} is not f32 or f64"))
}
