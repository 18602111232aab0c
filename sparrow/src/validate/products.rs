//! Validation cases of SpMM and SpMV: every GPU path forced on a skewed matrix with long rows,
//! on one with 90% empty rows and on a banded one, N chosen to be ragged for each path, B and C padded with
//! NaN past their columns, C prefilled with NaN when beta is 0. On the CPU, the rayon backend.

use super::{Case, Outcome, Reference};
use crate::kernels::{DIAG_SHAPES, NEAR_LANES};
use crate::matrix::{gen, Csr, Dense};
use crate::ops::check::{compare, padding_is_nan, tolerance};
use crate::ops::products::oracle as spmm_oracle;
use crate::ops::products::oracle as spmv_oracle;
use crate::ops::products::plan::ProductsTuning;
use crate::ops::spmm::{GpuPath, Spmm};
use crate::ops::spmv::Spmv;
use crate::{Device, Result, Scalar};

pub(super) fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "spmm/f32",
            run: spmm_case::<f32>,
        },
        Case {
            name: "spmm/f64",
            run: spmm_case::<f64>,
        },
        Case {
            name: "spmv/f32",
            run: spmv_case::<f32>,
        },
        Case {
            name: "spmv/f64",
            run: spmv_case::<f64>,
        },
    ]
}

fn matrices<T: Scalar>() -> Result<Vec<(&'static str, Csr<T>)>> {
    Ok(vec![
        (
            "powerlaw 20000x15000 max row 5000",
            gen::power_law(20_000, 15_000, 16.0, 5_000, 1.5, 101)?,
        ),
        (
            "90% empty rows 20000x20000",
            gen::sparse_rows(20_000, 20_000, 0.9, 24, 102)?,
        ),
        (
            "banded 20000x20000, 48 per row (windows of B fit in shared memory)",
            gen::banded(20_000, 48, 103)?,
        ),
        (
            "2-D stencil on a 150 x 130 grid (rows repeat 5 diagonals)",
            gen::stencil_2d(150, 130, 104)?,
        ),
    ])
}

/// A ragged N for each path: not a multiple of its group or column tile.
fn n_for(path: GpuPath) -> usize {
    // A ragged N that fills all but part of the path's last column segment (4 columns of f32,
    // 2 of f64 per segment; the same N serves both).
    path.pass_width(4).saturating_sub(1).max(1)
}

fn outcome(
    kernel: String,
    shapes: String,
    got: Vec<f64>,
    want: &[f64],
    scale: &[f64],
    tol: f64,
) -> Outcome {
    let c = compare(&got, want, scale, tol);
    let note = match c.worst {
        Some(i) if !c.pass => format!("first bad element {i}: got {} want {}", got[i], want[i]),
        _ => String::new(),
    };
    Outcome {
        kernel,
        reference: Reference::NaiveOracle,
        shapes,
        max_rel: c.max_rel,
        max_abs: c.max_abs,
        tolerance: tol,
        pass: c.pass,
        note,
    }
}

fn packed<T: Scalar>(c: &Dense<T>) -> Vec<f64> {
    c.to_packed().data().iter().map(|v| v.to_f64()).collect()
}

fn spmm_case<T: Scalar>(device: &Device) -> Result<Vec<Outcome>> {
    let tol = tolerance::<T>();
    let mut out = Vec::new();
    for (mname, a) in matrices::<T>()? {
        let st = crate::ops::products::RowStats::of(&a);
        let paths: Vec<Option<GpuPath>> = match device {
            Device::Cpu => vec![None],
            Device::Cuda(gpu) => {
                let tuning = ProductsTuning::for_arch(gpu.limits().compute_capability);
                GpuPath::all()
                    .into_iter()
                    .filter(|p| p.applies(n_for(*p), &st, std::mem::size_of::<T>(), tuning))
                    .map(Some)
                    .collect()
            }
        };
        let splits: &[bool] = if st.long_rows > 0 {
            &[true, false]
        } else {
            &[true]
        };
        for (path, &split) in paths
            .iter()
            .flat_map(|p| splits.iter().map(move |s| (*p, s)))
        {
            let n = path.map(n_for).unwrap_or(37);
            // beta 0 with leading dimensions of whole 16-byte segments (vector loads and
            // stores), beta -0.5 with odd ones (element by element).
            for (beta, seed) in [(0.0, 1u64), (-0.5, 2)] {
                let (ldb, ldc) = if beta == 0.0 {
                    ((n + 3).next_multiple_of(4), (n + 5).next_multiple_of(4))
                } else {
                    ((n + 3) | 1, (n + 5) | 1)
                };
                let b = gen::dense::<T>(a.ncols(), n, ldb, seed)?;
                let mut c = if beta == 0.0 {
                    Dense::filled(a.nrows(), n, ldc, T::from_f64(f64::NAN))?
                } else {
                    gen::dense::<T>(a.nrows(), n, ldc, seed + 10)?
                };
                let mut op = Spmm::<T>::new()
                    .alpha(T::from_f64(1.5))
                    .beta(T::from_f64(beta))
                    .split_long_rows(split);
                if let Some(p) = path {
                    op = op.force_path(p);
                }
                let (want, scale) =
                    spmm_oracle::spmm(T::from_f64(1.5), &a, &b, T::from_f64(beta), &c);
                let plan = op.run(device, &a, &b, &mut c)?;
                let kernel = plan.kernel.unwrap_or_else(|| "spmm cpu (rayon)".into());
                let mut o = outcome(
                    kernel,
                    format!(
                        "{mname}, N={n}, beta={beta}{}",
                        if split { "" } else { ", unsplit" }
                    ),
                    packed(&c),
                    &want,
                    &scale,
                    tol,
                );
                // Padding past the last column must still be the NaN it was filled with.
                if !padding_is_nan(&c) {
                    o.pass = false;
                    o.note = "wrote into C's padding past its columns".into();
                }
                out.push(o);
            }
        }
    }
    Ok(out)
}

fn spmv_case<T: Scalar>(device: &Device) -> Result<Vec<Outcome>> {
    let tol = tolerance::<T>();
    let mut out = Vec::new();
    let mut mats = matrices::<T>()?;
    // Scattered columns wide enough for the column slices (f32 SpMV; the SpMM paths have the
    // smaller power law).
    mats.push((
        "powerlaw 150000x150000 max row 5000 (column slices)",
        gen::power_law(150_000, 150_000, 16.0, 5_000, 1.5, 105)?,
    ));
    for (mname, a) in mats {
        let paths: Vec<Option<GpuPath>> = match device {
            Device::Cpu => vec![None],
            Device::Cuda(gpu) => {
                let mut v = vec![None, Some(GpuPath::Stream)];
                let st = crate::ops::products::RowStats::of(&a);
                let tuning = ProductsTuning::for_arch(gpu.limits().compute_capability);
                if st.packable() {
                    v.push(Some(GpuPath::Packed));
                }
                if st.near() {
                    v.extend(NEAR_LANES.map(|lanes| Some(GpuPath::Near { lanes })));
                }
                if st.sliced_for(std::mem::size_of::<T>(), tuning) {
                    v.push(Some(GpuPath::Sliced));
                }
                if st.diagonals > 0 {
                    v.push(Some(GpuPath::Diag));
                    v.extend(DIAG_SHAPES.iter().map(|&(lanes, vectors, steps)| {
                        Some(GpuPath::DiagLanes {
                            lanes,
                            vectors,
                            steps,
                        })
                    }));
                }
                v.extend([1, 4, 32].map(|ksplit| {
                    Some(GpuPath::RowVec {
                        cols: 1,
                        ksplit,
                        tiles: 1,
                        deep: false,
                    })
                }));
                v
            }
        };
        for path in paths {
            for (beta, seed) in [(0.0, 3u64), (-0.5, 4)] {
                let x = gen::dense::<T>(a.ncols(), 1, 1, seed)?.into_data();
                let mut y = if beta == 0.0 {
                    vec![T::from_f64(f64::NAN); a.nrows()]
                } else {
                    gen::dense::<T>(a.nrows(), 1, 1, seed + 10)?.into_data()
                };
                let mut op = Spmv::<T>::new()
                    .alpha(T::from_f64(-2.0))
                    .beta(T::from_f64(beta));
                if let Some(p) = path {
                    op = op.force_path(p);
                }
                let (want, scale) =
                    spmv_oracle::spmv(T::from_f64(-2.0), &a, &x, T::from_f64(beta), &y);
                let plan = op.run(device, &a, &x, &mut y)?;
                let kernel = match (plan.kernel, path) {
                    (Some(k), None) => format!("{k} (policy)"),
                    (Some(k), Some(_)) => k,
                    (None, _) => "spmv cpu (rayon)".into(),
                };
                out.push(outcome(
                    kernel,
                    format!("{mname}, beta={beta}"),
                    y.iter().map(|v| v.to_f64()).collect(),
                    &want,
                    &scale,
                    tol,
                ));
            }
        }
    }
    Ok(out)
}
