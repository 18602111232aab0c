//! SpMV and SpMM on host operands. A is given by its CSR arrays (the Python side reads them
//! from scipy, torch or CuPy); rows may be unsorted or hold duplicates, which are summed as
//! scipy does.

use pyo3::prelude::*;
use pyo3::types::PyByteArray;
use sparrow::{Csr, Dense, Device, Gpu, PreparedCsr, Scalar, Spmm, Spmv};

use crate::dlpack::{bytearray, view, Dtype, Place, View};
use crate::errors::{invalid, OrPy};

/// The CSR arrays of A, borrowed for the call.
struct Parts<'py> {
    shape: (usize, usize),
    indptr: View<'py>,
    indices: View<'py>,
    data: View<'py>,
}

impl<'py> Parts<'py> {
    fn of(
        shape: (usize, usize),
        indptr: &Bound<'py, PyAny>,
        indices: &Bound<'py, PyAny>,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Self> {
        let p = Parts {
            shape,
            indptr: view(indptr, None, "A.indptr")?,
            indices: view(indices, None, "A.indices")?,
            data: view(data, None, "A.data")?,
        };
        if p.indptr.dtype != Dtype::I64 || p.indices.dtype != Dtype::I32 {
            return Err(invalid("A", "indptr must be int64 and indices int32"));
        }
        Ok(p)
    }

    /// The arrays as slices, for building the matrix without the GIL.
    fn slices<T: Scalar>(&self) -> PyResult<(&[i64], &[i32], &[T])> {
        // SAFETY: types checked in `of` and by the caller's dispatch on `data.dtype`; the
        // arrays are held by the caller for the call.
        unsafe {
            Ok((
                self.indptr.host::<i64>("A.indptr")?,
                self.indices.host::<i32>("A.indices")?,
                self.data.host::<T>("A.data")?,
            ))
        }
    }
}

/// The matrix, sorted within rows and duplicates summed (copies of the arrays).
fn csr<T: Scalar>(
    shape: (usize, usize),
    (ip, ix, v): (&[i64], &[i32], &[T]),
) -> sparrow::Result<Csr<T>> {
    Csr::normalized(shape.0, shape.1, ip.to_vec(), ix.to_vec(), v.to_vec())
}

fn spmv_t<'py, T: Scalar>(
    py: Python<'py>,
    a: &Parts<'py>,
    x: &View<'py>,
    y: Option<&View<'py>>,
    alpha: f64,
    beta: f64,
    device: &str,
) -> PyResult<Bound<'py, PyByteArray>> {
    let (shape, parts) = (a.shape, a.slices::<T>()?);
    // SAFETY: x's and y's types were checked against A's by the caller.
    let xs = unsafe { x.host::<T>("x")? };
    let y0 = y.map(|y| unsafe { y.host::<T>("y") }).transpose()?;
    let dev = crate::open_device(device)?;
    let req = Spmv::new()
        .alpha(T::from_f64(alpha))
        .beta(T::from_f64(beta));
    let ys = py
        .detach(|| -> sparrow::Result<Vec<T>> {
            let a = csr(shape, parts)?;
            let mut ys = y0.map_or_else(|| vec![T::ZERO; a.nrows()], <[T]>::to_vec);
            req.run(dev, &a, xs, &mut ys)?;
            Ok(ys)
        })
        .py()?;
    Ok(bytearray(py, &ys))
}

/// `alpha A x + beta y` on host vectors; returns y's bytes.
#[pyfunction]
#[pyo3(signature = (shape, indptr, indices, data, x, y, alpha, beta, device))]
#[allow(clippy::too_many_arguments)]
fn spmv_host<'py>(
    py: Python<'py>,
    shape: (usize, usize),
    indptr: &Bound<'py, PyAny>,
    indices: &Bound<'py, PyAny>,
    data: &Bound<'py, PyAny>,
    x: &Bound<'py, PyAny>,
    y: Option<&Bound<'py, PyAny>>,
    alpha: f64,
    beta: f64,
    device: &str,
) -> PyResult<Bound<'py, PyByteArray>> {
    let a = Parts::of(shape, indptr, indices, data)?;
    let x = view(x, None, "x")?;
    let y = y.map(|y| view(y, None, "y")).transpose()?;
    same_types(&a, &[("x", Some(&x)), ("y", y.as_ref())])?;
    match a.data.dtype {
        Dtype::F32 => spmv_t::<f32>(py, &a, &x, y.as_ref(), alpha, beta, device),
        _ => spmv_t::<f64>(py, &a, &x, y.as_ref(), alpha, beta, device),
    }
}

/// Refuses operands whose element type differs from A's, or an A that is not f32 or f64.
fn same_types(a: &Parts<'_>, others: &[(&str, Option<&View<'_>>)]) -> PyResult<()> {
    let t = a.data.dtype;
    if t != Dtype::F32 && t != Dtype::F64 {
        return Err(invalid(
            "A",
            format!(
                "holds {}; sparrow's products take float32 or float64",
                t.name()
            ),
        ));
    }
    for (name, v) in others {
        if let Some(v) = v {
            if v.dtype != t {
                return Err(invalid(
                    name,
                    format!(
                        "is {} but A is {}: give both the same type",
                        v.dtype.name(),
                        t.name()
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn spmm_t<'py, T: Scalar>(
    py: Python<'py>,
    a: &Parts<'py>,
    b: &View<'py>,
    c: Option<&View<'py>>,
    alpha: f64,
    beta: f64,
    device: &str,
) -> PyResult<Bound<'py, PyByteArray>> {
    let (shape, parts) = (a.shape, a.slices::<T>()?);
    let (k, n) = dims2(b, "B")?;
    // SAFETY: B's and C's types were checked against A's by the caller.
    let bs = unsafe { b.host::<T>("B")? };
    let c0 = match c {
        Some(c) => Some((dims2(c, "C")?, unsafe { c.host::<T>("C")? })),
        None => None,
    };
    let dev = crate::open_device(device)?;
    let req = Spmm::new()
        .alpha(T::from_f64(alpha))
        .beta(T::from_f64(beta));
    let out = py
        .detach(|| -> sparrow::Result<Dense<T>> {
            let a = csr(shape, parts)?;
            let b = Dense::from_rows(k, n, bs.to_vec())?;
            let mut c = match c0 {
                Some(((m, nc), cs)) => Dense::from_rows(m, nc, cs.to_vec())?,
                None => Dense::from_rows(a.nrows(), n, vec![T::ZERO; a.nrows() * n])?,
            };
            req.run(dev, &a, &b, &mut c)?;
            Ok(c)
        })
        .py()?;
    Ok(bytearray(py, out.data()))
}

fn dims2(v: &View<'_>, arg: &str) -> PyResult<(usize, usize)> {
    match v.shape.as_slice() {
        [r, c] => Ok((*r, *c)),
        s => Err(invalid(arg, format!("has {} dimensions, not 2", s.len()))),
    }
}

/// `alpha A B + beta C` on host matrices (row-major); returns C's bytes.
#[pyfunction]
#[pyo3(signature = (shape, indptr, indices, data, b, c, alpha, beta, device))]
#[allow(clippy::too_many_arguments)]
fn spmm_host<'py>(
    py: Python<'py>,
    shape: (usize, usize),
    indptr: &Bound<'py, PyAny>,
    indices: &Bound<'py, PyAny>,
    data: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    c: Option<&Bound<'py, PyAny>>,
    alpha: f64,
    beta: f64,
    device: &str,
) -> PyResult<Bound<'py, PyByteArray>> {
    let a = Parts::of(shape, indptr, indices, data)?;
    let b = view(b, None, "B")?;
    let c = c.map(|c| view(c, None, "C")).transpose()?;
    same_types(&a, &[("B", Some(&b)), ("C", c.as_ref())])?;
    match a.data.dtype {
        Dtype::F32 => spmm_t::<f32>(py, &a, &b, c.as_ref(), alpha, beta, device),
        _ => spmm_t::<f64>(py, &a, &b, c.as_ref(), alpha, beta, device),
    }
}

/// A analysed and uploaded to one GPU, for products with operands in GPU memory.
enum Uploaded {
    F32(PreparedCsr<f32>),
    F64(PreparedCsr<f64>),
}

/// A sparse matrix prepared on a GPU (`sparrow.prepare(A, device="cuda:N")`, or a CUDA
/// operand's first product): its layouts are built once and every later product reuses them.
#[pyclass(frozen)]
struct GpuCsr {
    gpu: &'static Gpu,
    id: usize,
    a: Uploaded,
}

impl GpuCsr {
    fn dtype(&self) -> Dtype {
        match self.a {
            Uploaded::F32(_) => Dtype::F32,
            Uploaded::F64(_) => Dtype::F64,
        }
    }

    /// A CUDA operand of A's type on A's GPU with `shape`, C-contiguous.
    fn operand<'py>(
        &self,
        obj: &Bound<'py, PyAny>,
        arg: &str,
        shape: &[usize],
    ) -> PyResult<View<'py>> {
        // No DLPack stream handshake: the product's fence orders it after the operands'
        // current stream, which the caller passes.
        let v = view(obj, None, arg)?;
        if v.place != Place::Cuda(self.id) {
            return Err(invalid(
                arg,
                format!("must be on cuda:{}, where A was prepared", self.id),
            ));
        }
        if v.dtype != self.dtype() {
            return Err(invalid(
                arg,
                format!(
                    "is {} but A is {}: give both the same type",
                    v.dtype.name(),
                    self.dtype().name()
                ),
            ));
        }
        if v.shape != shape {
            return Err(invalid(
                arg,
                format!("has shape {:?}, not {shape:?}", v.shape),
            ));
        }
        Ok(v)
    }
}

#[pymethods]
impl GpuCsr {
    /// Analyses A (host CSR arrays) and uploads it to CUDA device `device_index`.
    #[new]
    fn new(
        py: Python<'_>,
        shape: (usize, usize),
        indptr: &Bound<'_, PyAny>,
        indices: &Bound<'_, PyAny>,
        data: &Bound<'_, PyAny>,
        device_index: usize,
    ) -> PyResult<Self> {
        let parts = Parts::of(shape, indptr, indices, data)?;
        same_types(&parts, &[])?;
        let Device::Cuda(gpu) = crate::open_device(&format!("cuda:{device_index}"))? else {
            return Err(invalid("device", "did not open a GPU"));
        };
        let gpu: &'static Gpu = gpu;
        let a = match parts.data.dtype {
            Dtype::F32 => {
                let p = parts.slices::<f32>()?;
                Uploaded::F32(
                    py.detach(|| PreparedCsr::upload(gpu, &csr(shape, p)?))
                        .py()?,
                )
            }
            _ => {
                let p = parts.slices::<f64>()?;
                Uploaded::F64(
                    py.detach(|| PreparedCsr::upload(gpu, &csr(shape, p)?))
                        .py()?,
                )
            }
        };
        Ok(GpuCsr {
            gpu,
            id: device_index,
            a,
        })
    }

    /// `alpha A x + beta y` with x and y in GPU memory, ordered on the raw CUDA `stream`.
    fn spmv(
        &self,
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        y: &Bound<'_, PyAny>,
        alpha: f64,
        beta: f64,
        stream: usize,
    ) -> PyResult<()> {
        let (m, k) = self.shape();
        let (xv, yv) = (self.operand(x, "x", &[k])?, self.operand(y, "y", &[m])?);
        let (xa, ya) = (xv.addr as u64, yv.addr as u64);
        let gpu = self.gpu;
        // SAFETY: x and y are CUDA arrays of A's GPU, type and length, held by the caller
        // for the call; the product is ordered on their stream.
        py.detach(|| match &self.a {
            Uploaded::F32(a) => unsafe {
                Spmv::new()
                    .alpha(alpha as f32)
                    .beta(beta as f32)
                    .run_on_stream(gpu, a, xa, ya, stream)
            },
            Uploaded::F64(a) => unsafe {
                Spmv::new()
                    .alpha(alpha)
                    .beta(beta)
                    .run_on_stream(gpu, a, xa, ya, stream)
            },
        })
        .py()
    }

    /// `alpha A B + beta C` with B and C (row-major) in GPU memory, ordered on `stream`.
    #[allow(clippy::too_many_arguments)]
    fn spmm(
        &self,
        py: Python<'_>,
        b: &Bound<'_, PyAny>,
        c: &Bound<'_, PyAny>,
        alpha: f64,
        beta: f64,
        stream: usize,
    ) -> PyResult<()> {
        let (m, k) = self.shape();
        let n = view(b, None, "B")?.shape.get(1).copied().unwrap_or(0);
        let (bv, cv) = (
            self.operand(b, "B", &[k, n])?,
            self.operand(c, "C", &[m, n])?,
        );
        let (ba, ca) = (bv.addr as u64, cv.addr as u64);
        let gpu = self.gpu;
        // SAFETY: B and C are C-contiguous CUDA arrays of A's GPU and type with the shapes
        // checked above, held by the caller for the call; ordered on their stream.
        py.detach(|| match &self.a {
            Uploaded::F32(a) => unsafe {
                Spmm::new()
                    .alpha(alpha as f32)
                    .beta(beta as f32)
                    .run_on_stream(gpu, a, n, (ba, n), (ca, n), stream)
            },
            Uploaded::F64(a) => unsafe {
                Spmm::new().alpha(alpha).beta(beta).run_on_stream(
                    gpu,
                    a,
                    n,
                    (ba, n),
                    (ca, n),
                    stream,
                )
            },
        })
        .py()
    }

    /// (rows, columns).
    fn shape(&self) -> (usize, usize) {
        match &self.a {
            Uploaded::F32(a) => (a.stats.nrows, a.stats.ncols),
            Uploaded::F64(a) => (a.stats.nrows, a.stats.ncols),
        }
    }

    /// "float32" or "float64".
    #[getter]
    fn dtype_name(&self) -> &'static str {
        self.dtype().name()
    }

    /// The CUDA device index.
    #[getter]
    fn device_index(&self) -> usize {
        self.id
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<GpuCsr>()?;
    m.add_function(wrap_pyfunction!(spmv_host, m)?)?;
    m.add_function(wrap_pyfunction!(spmm_host, m)?)?;
    Ok(())
}
