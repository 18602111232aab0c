//! Arrays from Python through DLPack: numpy (>= 1.22), torch and CuPy all export
//! `__dlpack__`, so one small checked reader serves host and GPU arrays alike. The capsule is
//! borrowed, not consumed: it stays named `dltensor` and alive beside the view, and the
//! producer's own capsule destructor releases the tensor when the view is dropped.

use std::ffi::c_void;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::invalid;

#[repr(C)]
#[derive(Clone, Copy)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *const i64,
    strides: *const i64,
    byte_offset: u64,
}

#[repr(C)]
struct DlManagedTensor {
    dl_tensor: DlTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensor)>,
}

/// DLPack 1.x's tensor (capsule `dltensor_versioned`): numpy exports read-only arrays only
/// this way.
#[repr(C)]
struct DlManagedTensorVersioned {
    version: [u32; 2],
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DlTensor,
}

const DL_CPU: i32 = 1;
const DL_CUDA: i32 = 2;
const DL_CUDA_HOST: i32 = 3;
const DL_CUDA_MANAGED: i32 = 13;

/// The element types sparrow reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F16,
    Bf16,
    F32,
    F64,
}

impl Dtype {
    fn from_dl(t: DlDataType) -> Option<Dtype> {
        if t.lanes != 1 {
            return None;
        }
        Some(match (t.code, t.bits) {
            (0, 8) => Dtype::I8,
            (0, 16) => Dtype::I16,
            (0, 32) => Dtype::I32,
            (0, 64) => Dtype::I64,
            (1, 8) => Dtype::U8,
            (1, 16) => Dtype::U16,
            (1, 32) => Dtype::U32,
            (1, 64) => Dtype::U64,
            (2, 16) => Dtype::F16,
            (2, 32) => Dtype::F32,
            (2, 64) => Dtype::F64,
            (4, 16) => Dtype::Bf16,
            _ => return None,
        })
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Dtype::I8 | Dtype::U8 => 1,
            Dtype::I16 | Dtype::U16 | Dtype::F16 | Dtype::Bf16 => 2,
            Dtype::I32 | Dtype::U32 | Dtype::F32 => 4,
            Dtype::I64 | Dtype::U64 | Dtype::F64 => 8,
        }
    }

    /// The numpy name.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::I8 => "int8",
            Dtype::U8 => "uint8",
            Dtype::I16 => "int16",
            Dtype::U16 => "uint16",
            Dtype::I32 => "int32",
            Dtype::U32 => "uint32",
            Dtype::I64 => "int64",
            Dtype::U64 => "uint64",
            Dtype::F16 => "float16",
            Dtype::Bf16 => "bfloat16",
            Dtype::F32 => "float32",
            Dtype::F64 => "float64",
        }
    }
}

/// Where an array's memory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Host memory (pinned host memory included).
    Host,
    /// GPU memory of CUDA device N (managed memory included).
    Cuda(usize),
}

/// A C-contiguous array borrowed from Python for the length of a call.
pub struct View<'py> {
    _capsule: Bound<'py, PyAny>,
    /// Address of the first element.
    pub addr: usize,
    /// Element type.
    pub dtype: Dtype,
    /// Extents, outermost first.
    pub shape: Vec<usize>,
    /// Where the memory is.
    pub place: Place,
}

impl View<'_> {
    /// Elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// The elements as a host slice of `T`, which must be the view's type.
    ///
    /// # Safety
    /// `T` must have the layout of `self.dtype`, and nothing may write the array while the
    /// slice lives (the Python caller holds it for the call).
    pub unsafe fn host<T>(&self, arg: &str) -> PyResult<&[T]> {
        if self.place != Place::Host {
            return Err(invalid(arg, "is on a GPU where host memory was needed"));
        }
        debug_assert_eq!(std::mem::size_of::<T>(), self.dtype.size());
        let n = self.len();
        if n == 0 {
            return Ok(&[]);
        }
        if !self.addr.is_multiple_of(std::mem::align_of::<T>()) {
            return Err(invalid(arg, "is not aligned to its element size"));
        }
        Ok(std::slice::from_raw_parts(self.addr as *const T, n))
    }
}

/// Borrows `obj` through `__dlpack__`, checking that it is C-contiguous and of a type sparrow
/// reads. `stream`, for a CUDA array, is the consumer's stream (DLPack's convention: the
/// producer orders its pending work before it); `arg` names the argument in errors.
pub fn view<'py>(obj: &Bound<'py, PyAny>, stream: Option<usize>, arg: &str) -> PyResult<View<'py>> {
    let py = obj.py();
    if !obj.hasattr("__dlpack__")? {
        return Err(invalid(
            arg,
            format!(
                "a {} has no __dlpack__: pass a numpy array, a torch tensor or a CuPy array",
                obj.get_type().name()?
            ),
        ));
    }
    let kwargs = PyDict::new(py);
    if let Some(s) = stream {
        kwargs.set_item("stream", s)?;
    }
    // DLPack 1.0 first (read-only numpy arrays need it), the legacy capsule from producers
    // that do not take `max_version`.
    let versioned = kwargs.copy()?;
    versioned.set_item("max_version", (1, 0))?;
    let capsule = match obj.call_method("__dlpack__", (), Some(&versioned)) {
        Ok(c) => c,
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) => obj
            .call_method("__dlpack__", (), Some(&kwargs))
            .map_err(|e| invalid(arg, format!("could not be exported through DLPack: {e}")))?,
        Err(e) => {
            return Err(invalid(
                arg,
                format!("could not be exported through DLPack: {e}"),
            ))
        }
    };
    // SAFETY: PyCapsule_IsValid and GetPointer check the object is a capsule of that name;
    // the capsule is kept alive in the view, so the tensor it holds outlives every use.
    let t: &DlTensor = unsafe {
        let cap = capsule.as_ptr();
        if pyo3::ffi::PyCapsule_IsValid(cap, c"dltensor_versioned".as_ptr()) == 1 {
            let m = pyo3::ffi::PyCapsule_GetPointer(cap, c"dltensor_versioned".as_ptr())
                as *const DlManagedTensorVersioned;
            if (*m).version[0] != 1 {
                return Err(invalid(
                    arg,
                    format!("has DLPack version {}, not 1", (*m).version[0]),
                ));
            }
            &(*m).dl_tensor
        } else if pyo3::ffi::PyCapsule_IsValid(cap, c"dltensor".as_ptr()) == 1 {
            let m = pyo3::ffi::PyCapsule_GetPointer(cap, c"dltensor".as_ptr())
                as *const DlManagedTensor;
            &(*m).dl_tensor
        } else {
            return Err(invalid(arg, "__dlpack__ gave no DLPack tensor capsule"));
        }
    };
    let dtype = Dtype::from_dl(t.dtype).ok_or_else(|| {
        invalid(
            arg,
            format!(
                "has a DLPack type (code {}, {} bits, {} lanes) sparrow does not read",
                t.dtype.code, t.dtype.bits, t.dtype.lanes
            ),
        )
    })?;
    let nd = t.ndim.max(0) as usize;
    let shape: Vec<i64> = if nd == 0 {
        Vec::new()
    } else {
        unsafe { std::slice::from_raw_parts(t.shape, nd) }.to_vec()
    };
    if shape.iter().any(|&e| e < 0) {
        return Err(invalid(arg, "has a negative extent"));
    }
    // Empty arrays may carry any strides (numpy gives 0).
    if !t.strides.is_null() && nd > 0 && !shape.contains(&0) {
        let strides = unsafe { std::slice::from_raw_parts(t.strides, nd) };
        let mut want = 1i64;
        for d in (0..nd).rev() {
            if shape[d] != 1 && strides[d] != want {
                return Err(invalid(
                    arg,
                    "is not C-contiguous (make it so with numpy.ascontiguousarray or .contiguous())",
                ));
            }
            want *= shape[d];
        }
    }
    let place = match t.device.device_type {
        DL_CPU | DL_CUDA_HOST => Place::Host,
        DL_CUDA | DL_CUDA_MANAGED => Place::Cuda(t.device.device_id.max(0) as usize),
        other => {
            return Err(invalid(
                arg,
                format!("lives on DLPack device type {other}; sparrow reads host and CUDA memory"),
            ))
        }
    };
    Ok(View {
        _capsule: capsule,
        addr: t.data as usize + t.byte_offset as usize,
        dtype,
        shape: shape.iter().map(|&e| e as usize).collect(),
        place,
    })
}

/// A vector's bytes as a Python `bytearray` (numpy wraps it without a copy).
pub fn bytearray<'py, T: Copy>(py: Python<'py>, v: &[T]) -> Bound<'py, pyo3::types::PyByteArray> {
    // SAFETY: plain-old-data elements; the bytes are copied into the bytearray.
    let bytes =
        unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) };
    pyo3::types::PyByteArray::new(py, bytes)
}
