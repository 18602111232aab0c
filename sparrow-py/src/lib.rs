//! The extension module `sparrow._native`: thin calls into the sparrow crate's public API,
//! taking arrays through DLPack ([`dlpack`]) and releasing the GIL while they work. The
//! Python package around it (`python/sparrow`) gives the friendly signatures, converts scipy,
//! torch, CuPy and AnnData objects, and allocates the outputs.

mod dlpack;
mod errors;
mod products;
mod solvers;
mod topk;

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Mutex, OnceLock};

use pyo3::prelude::*;
use pyo3::types::PyDict;
use sparrow::{Device, DeviceSpec};

use errors::{invalid, OrPy};

/// Opens the device `spec` names ("auto", "cpu", "cuda", "cuda:N"), once per process: a GPU
/// keeps its compiled kernels between calls.
/// Devices live for the process, so prepared GPU work can borrow them.
pub(crate) fn open_device(spec: &str) -> PyResult<&'static Device> {
    static OPENED: OnceLock<Mutex<HashMap<String, &'static Device>>> = OnceLock::new();
    let parsed = DeviceSpec::from_str(spec).map_err(|_| {
        invalid(
            "device",
            format!("{spec:?} is not one of None, \"cpu\", \"cuda\", \"cuda:N\""),
        )
    })?;
    let mut map = OPENED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(d) = map.get(spec) {
        return Ok(d);
    }
    let (device, _why) = Device::open(parsed).py()?;
    // One per spelling of a device (a handful per process), never freed.
    let device: &'static Device = Box::leak(Box::new(device));
    map.insert(spec.to_string(), device);
    Ok(device)
}

/// The GPUs sparrow can use, each as a dict; an empty list without a driver.
#[pyfunction]
fn devices(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let count = Device::gpu_count().unwrap_or(0);
    let mut out = Vec::new();
    for i in 0..count {
        let d = PyDict::new(py);
        d.set_item("device", format!("cuda:{i}"))?;
        match open_device(&format!("cuda:{i}")) {
            Ok(Device::Cuda(g)) => {
                let l = g.limits();
                d.set_item("name", &l.name)?;
                d.set_item("arch", l.arch())?;
                d.set_item("memory", l.total_memory)?;
                d.set_item("sms", l.sms)?;
                d.set_item("usable", true)?;
            }
            Ok(Device::Cpu) => unreachable!("a cuda spec opens a GPU"),
            Err(e) => {
                d.set_item("usable", false)?;
                d.set_item("why", e.to_string())?;
            }
        }
        out.push(d);
    }
    Ok(out)
}

/// Where `device` resolves: "cpu" or "cuda:N".
#[pyfunction]
fn resolve_device(device: &str) -> PyResult<String> {
    Ok(match open_device(device)? {
        Device::Cpu => "cpu".to_string(),
        Device::Cuda(g) => format!("cuda:{}", g.context().ordinal()),
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_device, m)?)?;
    topk::register(m)?;
    products::register(m)?;
    solvers::register(m)?;
    Ok(())
}
