//! Top-k over host arrays (on the CPU, or on a GPU through the library's copies) and over
//! CUDA arrays in place.

use pyo3::prelude::*;
use pyo3::types::PyByteArray;
use sparrow::{Key, Segments, TieBreak, TopK};

use crate::dlpack::{bytearray, view, Dtype, Place};
use crate::errors::{invalid, OrPy};

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
    macro_rules! go {
        ($t:ty) => {{
            // SAFETY: the view's type is $t and the caller holds the array for the call.
            let ks = unsafe { kv.host::<$t>(name)? };
            select::<$t>(py, &req, &dev, ks, rows, length, offs)
        }};
    }
    match kv.dtype {
        Dtype::U16 if bf16 => go!(half::bf16),
        Dtype::I8 => go!(i8),
        Dtype::U8 => go!(u8),
        Dtype::I16 => go!(i16),
        Dtype::U16 => go!(u16),
        Dtype::I32 => go!(i32),
        Dtype::U32 => go!(u32),
        Dtype::I64 => go!(i64),
        Dtype::U64 => go!(u64),
        Dtype::F16 => go!(half::f16),
        Dtype::Bf16 => go!(half::bf16),
        Dtype::F32 => go!(f32),
        Dtype::F64 => go!(f64),
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(topk_host, m)?)?;
    Ok(())
}
