//! sparrow: sparse and selection work on NVIDIA GPUs, with a real CPU backend.
//!
//! Layers, from the bottom: [`matrix`] (validated CSR and dense matrices, their files),
//! [`device`] (the CPU or a CUDA GPU: context, buffers, NVRTC compilation, launches),
//! kernels (CUDA C++ sources compiled at run time), [`ops`] (one public API per operation,
//! each with a plan that picks a backend and says why), [`solvers`] built on them, and on top
//! [`validate`]. The benchmarks live in the `sparrow-bench` crate.
//!
//! # Numeric semantics
//!
//! - `beta == 0` means the output is not read: NaN or garbage in C never reaches the result.
//! - Products accumulate in the value type (f32 or f64). Results are compared with the oracle
//!   relative to `|alpha| |A| |B| + |beta| |C|` elementwise, so the tolerance scales with the
//!   magnitudes that were summed rather than with a possibly cancelled result.
//! - Selection order of floats (used by the selection ops): NaN of any sign ranks above +inf;
//!   -0.0 and +0.0 tie; the original bits are returned.
#![warn(missing_docs)]

/// Declares a test hook: a method that forces a choice the library otherwise makes itself
/// (a GPU path, the long-row split, the top-k staging). It is public only under the `testing`
/// feature, which the integration tests and `sparrow-bench` turn on; elsewhere it is
/// crate-private, for `validate`.
macro_rules! testing_hook {
    ($(#[$m:meta])* fn $name:ident $($rest:tt)*) => {
        #[cfg(feature = "testing")]
        $(#[$m])*
        pub fn $name $($rest)*
        #[cfg(not(feature = "testing"))]
        $(#[$m])*
        #[allow(dead_code)]
        pub(crate) fn $name $($rest)*
    };
}

pub mod device;
mod error;
pub mod kernels;
pub mod matrix;
pub mod memory;
pub mod ops;
mod scalar;
mod simd;
pub mod solvers;
pub mod validate;

pub use device::Device;
pub use error::{Error, Result};
pub use scalar::Scalar;
