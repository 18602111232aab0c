//! Where work runs: the CPU or a CUDA GPU. Opening a GPU checks the driver, NVRTC and the
//! device, and every failure says which of these is missing.

mod buffers;
pub mod compile;
mod fence;
mod gpu;
pub mod launch;
mod limits;

use std::str::FromStr;
use std::sync::Arc;

pub use buffers::{DeviceCsr, DeviceDense, VEC_ENTRIES};
pub use fence::Fence;
pub use gpu::{device_count, driver_present, driver_version, CompileStats, Gpu};
pub use launch::{Args, Kernel, LaunchShape};
pub use limits::Limits;

use crate::{Error, Result};

/// A device to run on.
#[derive(Clone, Debug)]
pub enum Device {
    /// The host CPU (rayon).
    Cpu,
    /// An opened CUDA GPU.
    Cuda(Arc<Gpu>),
}

/// What the user asked for with `--device`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceSpec {
    /// The first GPU when one is usable, else the CPU.
    Auto,
    /// The CPU.
    Cpu,
    /// CUDA GPU number N.
    Cuda(usize),
}

impl FromStr for DeviceSpec {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(DeviceSpec::Auto),
            "cpu" => Ok(DeviceSpec::Cpu),
            "cuda" => Ok(DeviceSpec::Cuda(0)),
            _ => match s.strip_prefix("cuda:").map(|n| n.parse::<usize>()) {
                Some(Ok(n)) => Ok(DeviceSpec::Cuda(n)),
                _ => Err(Error::invalid(
                    "--device",
                    format!("{s:?} is not one of auto, cpu, cuda, cuda:N"),
                )),
            },
        }
    }
}

impl Device {
    /// Opens the device `spec` names and says why it was chosen. `Auto` falls back to the CPU
    /// with the reason; an explicit `cuda` that cannot be opened is an error.
    pub fn open(spec: DeviceSpec) -> Result<(Device, String)> {
        match spec {
            DeviceSpec::Cpu => Ok((Device::Cpu, "the CPU was asked for".into())),
            DeviceSpec::Cuda(n) => {
                let gpu = Gpu::open(n)
                    .map_err(|e| Error::unsupported(format!("--device cuda:{n}: {e}")))?;
                let why = format!("CUDA device {n} was asked for: {}", gpu.limits().name);
                Ok((Device::Cuda(gpu), why))
            }
            DeviceSpec::Auto => match Gpu::open(0) {
                Ok(gpu) => {
                    let why = format!(
                        "auto: found {} ({})",
                        gpu.limits().name,
                        gpu.limits().arch()
                    );
                    Ok((Device::Cuda(gpu), why))
                }
                Err(e) => Ok((
                    Device::Cpu,
                    format!("auto: no usable GPU ({e}); using the CPU"),
                )),
            },
        }
    }

    /// Number of CUDA GPUs the driver sees; an error says why none can be counted (no driver).
    pub fn gpu_count() -> Result<usize> {
        gpu::device_count()
    }

    /// A short name: `cpu` or `cuda:N (name)`.
    pub fn describe(&self) -> String {
        match self {
            Device::Cpu => "cpu".into(),
            Device::Cuda(g) => format!("cuda:{} ({})", g.context().ordinal(), g.limits().name),
        }
    }

    /// The GPU, if this is one.
    pub fn gpu(&self) -> Option<&Arc<Gpu>> {
        match self {
            Device::Cuda(g) => Some(g),
            Device::Cpu => None,
        }
    }
}
