//! Compressed-sensing recovery, matrix completion and SEACells on host arrays.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use sparrow::{Complete, Csr, Dense, Method, Recover, Scalar, SeacellsConfig};

use crate::dlpack::{bytearray, view, Dtype, View};
use crate::errors::{invalid, OrPy};

/// A 2-D host view as a dense matrix of `T` (copied).
fn dense<T: Scalar>(v: &View<'_>, arg: &str) -> PyResult<Dense<T>> {
    let (r, c) = match v.shape.as_slice() {
        [r, c] => (*r, *c),
        s => return Err(invalid(arg, format!("has {} dimensions, not 2", s.len()))),
    };
    // SAFETY: the caller dispatched on the view's type.
    Dense::from_rows(r, c, unsafe { v.host::<T>(arg)? }.to_vec()).py()
}

fn recover_t<'py, T: Scalar>(
    py: Python<'py>,
    req: &Recover,
    phi: &View<'py>,
    y: &View<'py>,
    device: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let (phi, y) = (dense::<T>(phi, "phi")?, dense::<T>(y, "y")?);
    let dev = crate::open_device(device)?;
    let (rec, _plan) = py.detach(|| req.run(dev, &phi, &y)).py()?;
    let d = PyDict::new(py);
    d.set_item("x", bytearray(py, rec.x.to_packed().data()))?;
    d.set_item("support", rec.support)?;
    d.set_item("residual_norm", rec.residual_norm)?;
    d.set_item("iterations", rec.iterations)?;
    let stops: Vec<String> = rec.stop.iter().map(|s| format!("{s:?}")).collect();
    d.set_item("stop", stops)?;
    Ok(d)
}

/// Recovers the columns of Y (m x B) from Phi (m x n); returns X's bytes (n x B, row-major)
/// and what each signal's solver did.
#[pyfunction]
#[pyo3(signature = (phi, y, method, sparsity, lam, max_iter, tol, device))]
#[allow(clippy::too_many_arguments)]
fn recover<'py>(
    py: Python<'py>,
    phi: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    method: &str,
    sparsity: Option<usize>,
    lam: Option<f64>,
    max_iter: usize,
    tol: f64,
    device: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let m: Method = method.parse().map_err(|_| {
        invalid(
            "method",
            format!("{method:?} is not one of iht, niht, htp, cosamp, sp, omp, amp, fista"),
        )
    })?;
    let mut req = Recover::new(m).max_iter(max_iter).tol(tol);
    if let Some(k) = sparsity {
        req = req.sparsity(k);
    }
    if let Some(l) = lam {
        req = req.lambda(l);
    }
    let (pv, yv) = (view(phi, None, "phi")?, view(y, None, "y")?);
    if pv.dtype != yv.dtype {
        return Err(invalid(
            "y",
            format!("is {} but phi is {}", yv.dtype.name(), pv.dtype.name()),
        ));
    }
    match pv.dtype {
        Dtype::F32 => recover_t::<f32>(py, &req, &pv, &yv, device),
        Dtype::F64 => recover_t::<f64>(py, &req, &pv, &yv, device),
        t => Err(invalid(
            "phi",
            format!("holds {}; give float32 or float64", t.name()),
        )),
    }
}

/// Completes an m x n matrix from its observed entries (CSR arrays, float64); returns the
/// dense estimate's bytes and what the solver did.
#[pyfunction]
#[pyo3(signature = (shape, indptr, indices, data, rank_hint, max_iter, tol, device))]
#[allow(clippy::too_many_arguments)]
fn complete<'py>(
    py: Python<'py>,
    shape: (usize, usize),
    indptr: &Bound<'py, PyAny>,
    indices: &Bound<'py, PyAny>,
    data: &Bound<'py, PyAny>,
    rank_hint: usize,
    max_iter: usize,
    tol: f64,
    device: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let (ip, ix, v) = (
        view(indptr, None, "observed.indptr")?,
        view(indices, None, "observed.indices")?,
        view(data, None, "observed.data")?,
    );
    if ip.dtype != Dtype::I64 || ix.dtype != Dtype::I32 || v.dtype != Dtype::F64 {
        return Err(invalid(
            "observed",
            "indptr must be int64, indices int32, data float64",
        ));
    }
    // SAFETY: the types are checked above; the arrays are held for the call.
    let obs = unsafe {
        Csr::normalized(
            shape.0,
            shape.1,
            ip.host::<i64>("observed.indptr")?.to_vec(),
            ix.host::<i32>("observed.indices")?.to_vec(),
            v.host::<f64>("observed.data")?.to_vec(),
        )
    }
    .py()?;
    let mut req = Complete::new(rank_hint);
    req.max_iter = max_iter;
    req.tol = tol;
    let dev = crate::open_device(device)?;
    let (c, _plan) = py.detach(|| req.run_on(dev, &obs)).py()?;
    let d = PyDict::new(py);
    d.set_item("x", bytearray(py, c.x.to_packed().data()))?;
    d.set_item("rank", c.rank)?;
    d.set_item("iterations", c.iterations)?;
    d.set_item("stop", format!("{:?}", c.stop))?;
    d.set_item("relative_residual", c.relative_residual)?;
    Ok(d)
}

/// Fits SEACells to a cells x dims embedding (float32 or float64, read as float64 as the CLI
/// reads its `.npy`). Ctrl-C stops the fit after the iteration under way.
#[pyfunction]
#[pyo3(signature = (x, n_metacells, knn, graph, min_iter, max_iter, epsilon, seed, device, labels, progress))]
#[allow(clippy::too_many_arguments)]
fn seacells<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    n_metacells: usize,
    knn: usize,
    graph: &str,
    min_iter: usize,
    max_iter: usize,
    epsilon: f64,
    seed: u64,
    device: &str,
    labels: Option<Vec<String>>,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let xv = view(x, None, "data")?;
    let x: Dense<f64> = match xv.dtype {
        Dtype::F64 => dense::<f64>(&xv, "data")?,
        Dtype::F32 => {
            let d = dense::<f32>(&xv, "data")?;
            let vals = d.data().iter().map(|&v| v as f64).collect();
            Dense::from_rows(d.nrows(), d.ncols(), vals).py()?
        }
        t => {
            return Err(invalid(
                "data",
                format!("holds {}; give float32 or float64", t.name()),
            ))
        }
    };
    drop(xv);
    if let Some(l) = &labels {
        if l.len() != x.nrows() {
            return Err(invalid(
                "labels",
                format!("{} labels for {} cells", l.len(), x.nrows()),
            ));
        }
    }
    let mut cfg = SeacellsConfig::new(n_metacells);
    cfg.knn = knn;
    cfg.seed = seed;
    cfg.min_iter = min_iter;
    cfg.max_iter = max_iter;
    cfg.epsilon = epsilon;
    cfg.symmetrize = match graph {
        "union" => sparrow::Symmetrize::Union,
        "intersection" => sparrow::Symmetrize::Intersection,
        g => {
            return Err(invalid(
                "graph",
                format!("{g:?}: choose \"union\" or \"intersection\""),
            ))
        }
    };
    let cancel = Arc::new(AtomicBool::new(false));
    cfg.cancel = Some(cancel.clone());
    let dev = crate::open_device(device)?;
    let progress = progress.map(|p| p.unbind());
    let mut raised: Option<PyErr> = None;
    let dims = x.ncols();
    let result = py.detach(|| -> sparrow::Result<_> {
        let f = sparrow::seacells_fit(dev, &x, &cfg, &mut |p| {
            Python::attach(|py| {
                // Ctrl-C is seen at every stage and iteration; `progress` hears iterations.
                let r = py.check_signals().and_then(|_| match (&progress, p) {
                    (Some(f), sparrow::SeacellsProgress::Iteration(it, rss)) => {
                        f.call1(py, (it, rss)).map(|_| ())
                    }
                    _ => Ok(()),
                });
                if let Err(e) = r {
                    raised = Some(e);
                    cancel.store(true, Ordering::Relaxed);
                }
            })
        })?;
        let soft = f.soft()?;
        let summary = f.summary(dims, labels.as_deref())?;
        Ok((f, soft, summary))
    });
    let (f, soft, summary) = match (result, raised) {
        (Err(sparrow::Error::Interrupted { .. }), Some(e)) => return Err(e),
        (r, _) => r.py()?,
    };
    let d = PyDict::new(py);
    d.set_item("assignments", bytearray(py, &f.assignments))?;
    d.set_item("archetypes", bytearray(py, &f.archetypes))?;
    d.set_item("soft_indptr", bytearray(py, soft.row_ptr()))?;
    d.set_item("soft_indices", bytearray(py, soft.col_idx()))?;
    d.set_item("soft_data", bytearray(py, soft.values()))?;
    d.set_item("rss", f.rss.clone())?;
    d.set_item("iterations", f.iterations)?;
    d.set_item("converged", f.converged)?;
    d.set_item("summary", summary.to_string())?;
    Ok(d)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(recover, m)?)?;
    m.add_function(wrap_pyfunction!(complete, m)?)?;
    m.add_function(wrap_pyfunction!(seacells, m)?)?;
    Ok(())
}
