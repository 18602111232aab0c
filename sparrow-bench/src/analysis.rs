//! `sparrow bench analysis`: the host half of a GPU upload's analysis ([`HostAnalysis`]),
//! timed on this machine's CPUs. It needs no GPU, so its one-off cost per matrix can be
//! measured and tuned anywhere; on a GPU host `bench spmm|spmv` reports it with the copies
//! (`analysis` column).

use super::{matrices, time_cpu};
use sparrow::ops::products::analysis::HostAnalysis;
use sparrow::ops::products::plan::SM90;
use sparrow::{Error, Result, Scalar};

/// One matrix's analysis in one value type.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AnalysisRecord {
    /// Always `analysis`.
    pub op: &'static str,
    /// Panel matrix.
    pub matrix: String,
    /// Value type.
    pub dtype: String,
    /// Rows.
    pub nrows: usize,
    /// Entries.
    pub nnz: usize,
    /// Threads the analysis ran on (rayon's pool).
    pub threads: usize,
    /// Row statistics, median milliseconds.
    pub stats_ms: f64,
    /// The rest of the analysis, median milliseconds.
    pub rest_ms: f64,
    /// Fastest statistics plus rest, milliseconds.
    pub min_total_ms: f64,
    /// What the analysis built beside the work blocks, row order and long rows' chunks.
    pub built: Vec<&'static str>,
    /// Timed repetitions.
    pub reps: usize,
}

/// Times each matrix's statistics and the rest of its analysis, `reps` times each (after one
/// untimed run), as an upload to a GPU that runs the column-slice kernel (every GPU of sm_80
/// and newer) would do them.
pub fn run(
    names: &[String],
    dtypes: &[String],
    reps: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<AnalysisRecord>> {
    let mut out = Vec::new();
    for dt in dtypes {
        for name in names {
            progress(&format!("analysis {name} {dt}"));
            out.push(match dt.as_str() {
                "f32" => one::<f32>(name, reps)?,
                "f64" => one::<f64>(name, reps)?,
                other => {
                    return Err(Error::invalid(
                        "--dtype",
                        format!("{other:?} is not f32 or f64"),
                    ))
                }
            });
        }
    }
    Ok(out)
}

fn one<T: Scalar>(name: &str, reps: usize) -> Result<AnalysisRecord> {
    let a = matrices::build::<T>(name)?;
    let stats = sparrow::ops::products::RowStats::of(&a);
    // What an upload to an sm_90 GPU, where the slices were measured, builds.
    let h = HostAnalysis::of(&a, &stats, Some(&SM90))?;
    // Beside the work blocks, row order and long rows' chunks every full analysis builds.
    let built: Vec<_> = built(&h)
        .into_iter()
        .filter(|w| !matches!(*w, "work blocks" | "rows by length"))
        .collect();
    drop(h);
    let st = time_cpu(0, reps, || {
        std::hint::black_box(sparrow::ops::products::RowStats::of(&a));
        Ok(())
    })?;
    let rest = time_cpu(0, reps, || {
        std::hint::black_box(HostAnalysis::of(&a, &stats, Some(&SM90))?);
        Ok(())
    })?;
    Ok(AnalysisRecord {
        op: "analysis",
        matrix: name.to_string(),
        dtype: T::NAME.to_string(),
        nrows: a.nrows(),
        nnz: a.nnz(),
        threads: rayon::current_num_threads(),
        stats_ms: st.median_ms,
        rest_ms: rest.median_ms,
        min_total_ms: st.min_ms + rest.min_ms,
        built,
        reps,
    })
}

/// SEACells' kernel matrix M at one size: the host analysis and the bytes an upload of every
/// format builds, against what an upload for the B update's path builds.
#[derive(Clone, Debug, serde::Serialize)]
pub struct KernelFormatsRecord {
    /// Always `analysis-seacells`.
    pub op: &'static str,
    /// Cells (rows and columns of M).
    pub cells: usize,
    /// Embedding dimensions.
    pub dims: usize,
    /// Entries of M.
    pub nnz: usize,
    /// The B update's SpMM path on M.
    pub path: String,
    /// Every format's analysis, median milliseconds.
    pub all_ms: f64,
    /// The path's formats' analysis, median milliseconds.
    pub path_ms: f64,
    /// Bytes every format adds to the GPU beside the CSR arrays.
    pub all_bytes: u64,
    /// Bytes the path's formats add.
    pub path_bytes: u64,
    /// What an upload of every format builds beside the long rows' chunks.
    pub built: Vec<&'static str>,
    /// Timed repetitions.
    pub reps: usize,
}

/// Builds SEACells' kernel matrix for each `(cells, dims, metacells)` the way `bench seacells`
/// does (the same mixture, its exact kNN on the CPU, the adaptive Gaussian kernel) and times
/// both analyses of it, f64 as the fit uploads it.
pub fn seacells_kernel(
    sizes: &[(usize, usize, usize)],
    reps: usize,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<KernelFormatsRecord>> {
    use sparrow::solvers::seacells::fit::{gaussian_mixture, Config};
    use sparrow::solvers::seacells::gpu::{b_chunk, kernel_products};
    use sparrow::solvers::seacells::kernel::kernel;
    let mut out = Vec::new();
    for &(cells, dims, metacells) in sizes {
        progress(&format!("kernel matrix of {cells} x {dims}"));
        let (x, _) = gaussian_mixture(cells, dims, (metacells / 13).max(2), 0);
        let cfg = Config::new(metacells);
        let m = kernel(&x, cfg.knn, cfg.symmetrize)?;
        let stats = sparrow::ops::products::RowStats::of(&m);
        let sm90 = &SM90;
        let products = kernel_products();
        let (path, _) = products
            .gpu_path_with(&stats, b_chunk(cells), true, sm90)?
            .ok_or_else(|| sparrow::Error::invalid("--sizes", "an empty kernel matrix"))?;
        progress(&format!(
            "analysis of {cells} x {cells}, {} entries",
            m.nnz()
        ));
        let all = HostAnalysis::of(&m, &stats, Some(sm90))?;
        let one = HostAnalysis::of_formats(&m, &stats, Some(sm90), path.formats())?;
        let built = built(&all);
        let (all_bytes, path_bytes) = (all.device_bytes(), one.device_bytes());
        drop((all, one));
        let all_t = time_cpu(0, reps, || {
            std::hint::black_box(HostAnalysis::of(&m, &stats, Some(sm90))?);
            Ok(())
        })?;
        let path_t = time_cpu(0, reps, || {
            std::hint::black_box(HostAnalysis::of_formats(
                &m,
                &stats,
                Some(sm90),
                path.formats(),
            )?);
            Ok(())
        })?;
        out.push(KernelFormatsRecord {
            op: "analysis-seacells",
            cells,
            dims,
            nnz: m.nnz(),
            path: format!("{path:?}"),
            all_ms: all_t.median_ms,
            path_ms: path_t.median_ms,
            all_bytes,
            path_bytes,
            built,
            reps,
        });
    }
    Ok(out)
}

/// The formats an analysis built, by name.
fn built<T>(h: &HostAnalysis<T>) -> Vec<&'static str> {
    let mut out = Vec::new();
    for (b, what) in [
        (h.formats.stream, "work blocks"),
        (h.packed.is_some(), "packed columns"),
        (h.diag.is_some(), "diagonals"),
        (h.near.is_some(), "column offsets"),
        (h.slices.is_some(), "column slices"),
        (h.formats.sorted, "rows by length"),
        (h.row_blocks.is_some(), "row blocks"),
    ] {
        if b {
            out.push(what);
        }
    }
    out
}
