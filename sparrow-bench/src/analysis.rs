//! `sparrow bench analysis`: the host half of a GPU upload's analysis ([`HostAnalysis`]),
//! timed on this machine's CPUs. It needs no GPU, so its one-off cost per matrix can be
//! measured and tuned anywhere; on a GPU host `bench spmm|spmv` reports it with the copies
//! (`analysis` column).

use super::{matrices, time_cpu};
use sparrow::ops::products::analysis::HostAnalysis;
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
    let h = HostAnalysis::of(&a, &stats, true)?;
    let mut built = Vec::new();
    for (b, what) in [
        (h.packed.is_some(), "packed columns"),
        (h.diag.is_some(), "diagonals"),
        (h.near.is_some(), "column offsets"),
        (h.slices.is_some(), "column slices"),
        (h.row_blocks.is_some(), "row blocks"),
    ] {
        if b {
            built.push(what);
        }
    }
    drop(h);
    let st = time_cpu(0, reps, || {
        std::hint::black_box(sparrow::ops::products::RowStats::of(&a));
        Ok(())
    })?;
    let rest = time_cpu(0, reps, || {
        std::hint::black_box(HostAnalysis::of(&a, &stats, true)?);
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
