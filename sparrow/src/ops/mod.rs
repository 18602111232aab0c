//! Operations: each has a request type that validates its inputs, a plan that picks a
//! backend from the request and the device and says why, and a backend per device kind.

pub mod check;
pub mod products;
pub mod topk;

pub use products::{spmm, spmv};

/// Which backend a plan chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Backend {
    /// The naive reference: only for tests and `validate`.
    Oracle,
    /// The rayon CPU backend.
    Cpu,
    /// A CUDA kernel.
    Cuda,
}

/// What an op will do: the backend, the kernel and launch shape on a GPU, and why.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Plan {
    /// The operation, such as `spmm`.
    pub op: &'static str,
    /// The chosen backend.
    pub backend: Backend,
    /// The GPU kernel, when the backend is CUDA and there is work to launch.
    pub kernel: Option<String>,
    /// The launch shape of that kernel.
    pub shape: Option<crate::device::LaunchShape>,
    /// Why this backend and kernel.
    pub reason: String,
}

impl std::fmt::Display for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {:?}", self.op, self.backend)?;
        if let Some(k) = &self.kernel {
            write!(f, " kernel {k}")?;
        }
        if let Some(s) = &self.shape {
            write!(f, " [{s}]")?;
        }
        write!(f, "; {}", self.reason)
    }
}
