//! sparrow: sparse and selection work on NVIDIA GPUs, with a real CPU backend.
//!
//! The API is at the crate root: the data ([`Csr`], [`Dense`]), the device ([`Device`]), the
//! operations' requests ([`Spmv`], [`Spmm`], [`TopK`]) and the solvers ([`Recover`],
//! [`Complete`], [`seacells_fit`]). Each request validates its inputs completely, runs on the
//! device it is given and returns its [`Plan`]: the backend, the kernel and why.
//!
//! ```
//! use sparrow::{Csr, Device, DeviceSpec, Segments, Spmv, TopK};
//!
//! // The first usable GPU, else the CPU; `why` says which and why.
//! let (device, why) = Device::open(DeviceSpec::Auto)?;
//! let a = Csr::<f32>::from_triplets(3, 3, &[0, 1, 2, 2], &[0, 1, 0, 2], &[1.0, 2.0, 3.0, 4.0])?;
//! let mut y = vec![0.0f32; 3];
//! let plan = Spmv::new().run(&device, &a, &[1.0, 1.0, 1.0], &mut y)?;
//! assert_eq!(y, [1.0, 2.0, 7.0]);
//! let (top, _) = TopK::largest(1).run_keys(&device, &y, Segments::Fixed { count: 1, len: 3 })?;
//! assert_eq!((top.keys[0], top.indices.get(0)), (7.0, 2));
//! println!("{why}; {plan}");
//! # Ok::<(), sparrow::Error>(())
//! ```
//!
//! Everything else is crate-private: the layers below the API (the device, the kernels, the
//! operations' plans and formats, the solvers' pieces, `sparrow validate`) are public only
//! under the `internals` feature, which the CLI, the benchmarks and the tests turn on, and are
//! hidden from these docs; `docs/architecture.md` in the repository draws them. [`matrix`]
//! holds the data types and their files (`.npy`, `.npz`, Matrix Market).
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
// Without `internals` the parts only the CLI, the benchmarks and the tests call are unused.
#![cfg_attr(not(feature = "internals"), allow(dead_code, unused_imports))]

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

/// Declares a layer that is crate-private unless the `internals` feature (for the CLI, the
/// benchmarks and the tests) makes it public, hidden from the docs.
macro_rules! internal_mod {
    ($(#[$m:meta])* mod $name:ident;) => {
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        $(#[$m])*
        pub mod $name;
        #[cfg(not(feature = "internals"))]
        $(#[$m])*
        pub(crate) mod $name;
    };
}

internal_mod!(
    mod device;
);
mod error;
internal_mod!(
    mod kernels;
);
pub mod matrix;
internal_mod!(
    mod memory;
);
internal_mod!(
    mod ops;
);
mod scalar;
mod simd;
internal_mod!(
    mod solvers;
);
internal_mod!(
    mod validate;
);

pub use device::{Device, DeviceSpec, Gpu, LaunchShape, Limits};
pub use error::{Error, Result};
pub use scalar::Scalar;

// What a user calls, at the crate root: the data types, the operations' requests and the
// solvers, and the types their signatures name.
pub use matrix::{Csr, Dense};
pub use ops::products::spmm::SumOrder;
pub use ops::products::{PreparedCsr, Spmm, Spmv};
pub use ops::topk::{DeviceTopK, IndexType, Indices, Key, Segments, TieBreak, TopK, TopKOutput};
pub use ops::{Backend, Plan};
pub use solvers::completion::{Complete, Completion};
pub use solvers::cs::{Method, Recover, Recovery};
pub use solvers::seacells::fit::{
    fit_on as seacells_fit, Config as SeacellsConfig, Fit, Progress as SeacellsProgress,
};
pub use solvers::seacells::kernel::Symmetrize;
