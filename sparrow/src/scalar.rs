//! The value types the sparse products accept, with what each backend needs to know of them.

use std::fmt::Debug;

/// A floating-point value type of matrices and vectors: `f32` or `f64`.
///
/// Sealed: kernels exist for exactly these types.
pub trait Scalar:
    Copy
    + Debug
    + Default
    + PartialEq
    + PartialOrd
    + Send
    + Sync
    + std::ops::Add<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::AddAssign
    + npyz::Deserialize
    + npyz::Serialize
    + npyz::AutoSerialize
    + cudarc::driver::DeviceRepr
    + cudarc::driver::ValidAsZeroBits
    + sealed::Sealed
    + 'static
{
    /// The short name used in kernel entry points and reports: `f32` or `f64`.
    const NAME: &'static str;
    /// Machine epsilon.
    const EPSILON: f64;
    /// Zero.
    const ZERO: Self;
    /// Converts from f64, rounding.
    fn from_f64(v: f64) -> Self;
    /// Converts to f64 exactly.
    fn to_f64(self) -> f64;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

impl Scalar for f32 {
    const NAME: &'static str = "f32";
    const EPSILON: f64 = f32::EPSILON as f64;
    const ZERO: Self = 0.0;
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}

impl Scalar for f64 {
    const NAME: &'static str = "f64";
    const EPSILON: f64 = f64::EPSILON;
    const ZERO: Self = 0.0;
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
}
