//! Top-k over host arrays (on the CPU, or on a GPU through the library's copies) and over
//! CUDA arrays in place.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use pyo3::prelude::*;
use pyo3::types::PyByteArray;
use sparrow::{Device, DeviceTopK, Key, Segments, TieBreak, TopK};

use crate::dlpack::{bytearray, view, Dtype, Place};
use crate::errors::{invalid, OrPy};

/// Runs `$body` with `$t` bound to the key type of `$dtype` (16-bit unsigned read as bfloat16
/// when `$bf16`): the one table from DLPack types to sparrow's keys.
macro_rules! with_key_type {
    ($dtype:expr, $bf16:expr, $t:ident => $body:expr) => {
        match $dtype {
            Dtype::U16 if $bf16 => {
                type $t = half::bf16;
                $body
            }
            Dtype::I8 => {
                type $t = i8;
                $body
            }
            Dtype::U8 => {
                type $t = u8;
                $body
            }
            Dtype::I16 => {
                type $t = i16;
                $body
            }
            Dtype::U16 => {
                type $t = u16;
                $body
            }
            Dtype::I32 => {
                type $t = i32;
                $body
            }
            Dtype::U32 => {
                type $t = u32;
                $body
            }
            Dtype::I64 => {
                type $t = i64;
                $body
            }
            Dtype::U64 => {
                type $t = u64;
                $body
            }
            Dtype::F16 => {
                type $t = half::f16;
                $body
            }
            Dtype::Bf16 => {
                type $t = half::bf16;
                $body
            }
            Dtype::F32 => {
                type $t = f32;
                $body
            }
            Dtype::F64 => {
                type $t = f64;
                $body
            }
        }
    };
}

/// Parses the Python spelling of a tie-break.
pub(crate) fn tie_break(tie: &str) -> PyResult<TieBreak> {
    match tie {
        "smaller-index" | "smaller_index" => Ok(TieBreak::SmallerIndex),
        "larger-index" | "larger_index" => Ok(TieBreak::LargerIndex),
        "fast" => Ok(TieBreak::Fast),
        _ => Err(invalid(
            "tie_break",
            format!("{tie:?} is not one of \"smaller-index\", \"larger-index\", \"fast\""),
        )),
    }
}

/// The request: one k for every segment, or one per segment.
pub(crate) fn request(
    k: Option<usize>,
    ks: Option<Vec<i64>>,
    largest: bool,
    sorted: bool,
    tie: &str,
) -> PyResult<TopK> {
    let req = match (k, ks) {
        (Some(k), None) => {
            if largest {
                TopK::largest(k)
            } else {
                TopK::smallest(k)
            }
        }
        (None, Some(ks)) => TopK::per_segment(ks, largest),
        _ => return Err(invalid("k", "give k or k_per_segment, not both")),
    };
    Ok(req.sorted(sorted).tie_break(tie_break(tie)?))
}

/// Selected keys (bytes of the key type), positions (int64 bytes) and the row width.
type Selected<'py> = (Bound<'py, PyByteArray>, Bound<'py, PyByteArray>, usize);

fn select<'py, K: Key>(
    py: Python<'py>,
    req: &TopK,
    device: &sparrow::Device,
    keys: &[K],
    rows: usize,
    length: usize,
    offsets: Option<&[i64]>,
) -> PyResult<Selected<'py>> {
    let segs = match offsets {
        Some(o) => Segments::Offsets(o),
        None => Segments::Fixed {
            count: rows,
            len: length,
        },
    };
    let (out, _plan) = py.detach(|| req.run_keys(device, keys, segs)).py()?;
    let idx: Vec<i64> = (0..out.indices.len()).map(|i| out.indices.get(i)).collect();
    Ok((bytearray(py, &out.keys), bytearray(py, &idx), out.width))
}

/// Top-k of the rows of a 2-D host array (`offsets` None) or of the segments of a 1-D one.
/// `bf16` reads 16-bit unsigned keys as bfloat16 (numpy holds them so).
#[pyfunction]
#[pyo3(signature = (keys, offsets, k, k_per_segment, largest, sorted, tie_break, device, bf16=false))]
#[allow(clippy::too_many_arguments)]
fn topk_host<'py>(
    py: Python<'py>,
    keys: &Bound<'py, PyAny>,
    offsets: Option<&Bound<'py, PyAny>>,
    k: Option<usize>,
    k_per_segment: Option<Vec<i64>>,
    largest: bool,
    sorted: bool,
    tie_break: &str,
    device: &str,
    bf16: bool,
) -> PyResult<Selected<'py>> {
    let req = request(k, k_per_segment, largest, sorted, tie_break)?;
    let name = if offsets.is_some() { "keys" } else { "x" };
    let kv = view(keys, None, name)?;
    if kv.place != Place::Host {
        return Err(invalid(name, "is on a GPU: call topk_cuda"));
    }
    let (rows, length) = match (kv.shape.as_slice(), offsets.is_some()) {
        ([r, l], false) => (*r, *l),
        ([n], true) => (1, *n),
        (s, false) => return Err(invalid("x", format!("has {} dimensions, not 2", s.len()))),
        (s, true) => {
            return Err(invalid(
                "keys",
                format!("has {} dimensions, not 1", s.len()),
            ))
        }
    };
    let ov = offsets.map(|o| view(o, None, "offsets")).transpose()?;
    let offs = match &ov {
        Some(v) if v.dtype != Dtype::I64 || v.shape.len() != 1 => {
            return Err(invalid("offsets", "must be a 1-D int64 array"))
        }
        // SAFETY: an int64 host view, held for the call.
        Some(v) => Some(unsafe { v.host::<i64>("offsets")? }),
        None => None,
    };
    let dev = crate::open_device(device)?;
    with_key_type!(kv.dtype, bf16, K => {
        // SAFETY: the view's type is K and the caller holds the array for the call.
        let ks = unsafe { kv.host::<K>(name)? };
        select::<K>(py, &req, dev, ks, rows, length, offs)
    })
}

/// A prepared device top-k of any key type, as the cache holds it.
trait DeviceRun: Send {
    /// # Safety
    /// As [`DeviceTopK::run`].
    unsafe fn run(
        &mut self,
        keys: u64,
        out_keys: u64,
        out_idx: u64,
        stream: usize,
    ) -> sparrow::Result<()>;
    fn width(&self) -> usize;
}

impl<K: Key> DeviceRun for DeviceTopK<'static, K> {
    unsafe fn run(
        &mut self,
        keys: u64,
        out_keys: u64,
        out_idx: u64,
        stream: usize,
    ) -> sparrow::Result<()> {
        unsafe { DeviceTopK::run(self, keys, out_keys, out_idx, stream) }
    }
    fn width(&self) -> usize {
        DeviceTopK::width(self)
    }
}

/// What a prepared device top-k is for: the GPU, the key type, the shape and the request.
type PlanKey = (usize, &'static str, usize, usize, usize, bool, bool, String);

/// Prepared device top-ks by shape, so a serving loop's calls allocate nothing after the
/// first; a few dozen shapes at most are kept.
fn cached(
    key: PlanKey,
    make: impl FnOnce() -> PyResult<Box<dyn DeviceRun>>,
) -> PyResult<std::sync::MutexGuard<'static, HashMap<PlanKey, Box<dyn DeviceRun>>>> {
    static PLANS: OnceLock<Mutex<HashMap<PlanKey, Box<dyn DeviceRun>>>> = OnceLock::new();
    let mut map = PLANS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if !map.contains_key(&key) {
        if map.len() >= 32 {
            map.clear();
        }
        map.insert(key, make()?);
    }
    Ok(map)
}

/// Top-k of the rows of a 2-D CUDA array into CUDA outputs the caller allocated (values of
/// x's type, int64 positions), ordered on the raw CUDA `stream`.
/// With `reps` above 1 the call runs that many times and waits for the stream, returning the
/// seconds per run instead of the width: the Rust side of `bench/python_overhead.py`.
#[pyfunction]
#[pyo3(signature = (x, values, indices, k, largest, sorted, tie_break, stream, reps=1))]
#[allow(clippy::too_many_arguments)]
fn topk_cuda<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    values: &Bound<'py, PyAny>,
    indices: &Bound<'py, PyAny>,
    k: usize,
    largest: bool,
    sorted: bool,
    tie_break: &str,
    stream: usize,
    reps: usize,
) -> PyResult<f64> {
    let req = request(Some(k), None, largest, sorted, tie_break)?;
    // No DLPack stream handshake: `stream` is the producer's current stream, and the fence
    // of the prepared top-k orders the work after it (the handshake would add about 9 us a
    // tensor in torch and order nothing more).
    let kv = view(x, None, "x")?;
    let Place::Cuda(id) = kv.place else {
        return Err(invalid("x", "is in host memory: call topk_host"));
    };
    let [rows, len] = kv.shape[..] else {
        return Err(invalid(
            "x",
            format!("has {} dimensions, not 2", kv.shape.len()),
        ));
    };
    let (vv, iv) = (
        view(values, None, "values")?,
        view(indices, None, "indices")?,
    );
    let w = k.min(len);
    for (v, name, t) in [(&vv, "values", kv.dtype), (&iv, "indices", Dtype::I64)] {
        if v.place != Place::Cuda(id) || v.dtype != t || v.shape != [rows, w] {
            return Err(invalid(
                name,
                format!("must be a {rows} x {w} {} array on cuda:{id}", t.name()),
            ));
        }
    }
    let device = crate::open_device(&format!("cuda:{id}"))?;
    let Device::Cuda(gpu) = device else {
        return Err(invalid("x", "its GPU could not be opened"));
    };
    let gpu: &'static sparrow::Gpu = gpu;
    if rows == 0 || w == 0 {
        return Ok(w as f64);
    }
    let key: PlanKey = (
        id,
        kv.dtype.name(),
        rows,
        len,
        k,
        largest,
        sorted,
        tie_break.to_string(),
    );
    let make: Box<dyn FnOnce() -> PyResult<Box<dyn DeviceRun>> + Send> = with_key_type!(kv.dtype, false, K => Box::new(move || -> PyResult<Box<dyn DeviceRun>> {
        Ok(Box::new(DeviceTopK::<K>::new(gpu, &req, rows, len).py()?))
    }));
    let (ka, va, ia) = (kv.addr as u64, vv.addr as u64, iv.addr as u64);
    py.detach(|| {
        let mut map = cached(key.clone(), make)?;
        let plan = map.get_mut(&key).expect("inserted above");
        if reps <= 1 {
            // SAFETY: the three views are CUDA arrays of cuda:{id} checked above for type and
            // shape, held by the caller past this call; the work is ordered on their stream.
            unsafe { plan.run(ka, va, ia, stream) }.py()?;
            return Ok(plan.width() as f64);
        }
        let t = std::time::Instant::now();
        for _ in 0..reps {
            // SAFETY: as above.
            unsafe { plan.run(ka, va, ia, stream) }.py()?;
        }
        // SAFETY: the caller's live stream of this context.
        unsafe { cudarc_sync(stream) }.py()?;
        Ok(t.elapsed().as_secs_f64() / reps as f64)
    })
}

/// Waits for the raw CUDA stream `stream`.
///
/// # Safety
/// `stream` must be a live stream of the current context.
unsafe fn cudarc_sync(stream: usize) -> sparrow::Result<()> {
    unsafe { sparrow::Gpu::synchronize_raw(stream) }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(topk_host, m)?)?;
    m.add_function(wrap_pyfunction!(topk_cuda, m)?)?;
    Ok(())
}
