//! Key types and their order. Every key maps to an unsigned "radix" of its width whose
//! unsigned order is the selection order: NaN of any sign above +inf, -0.0 tied with +0.0,
//! signed integers by value. Selection compares radixes; outputs return the original bits.

use std::fmt::Debug;

use half::{bf16, f16};

/// A type that can be a key or a value of a top-k request.
pub trait Key: Copy + Debug + PartialEq + Send + Sync + Default + 'static {
    /// Short name, as in kernel modules and reports: `f32`, `bf16`, `u8`, ...
    const NAME: &'static str;
    /// Width in bits (8, 16, 32 or 64).
    const BITS: u32;
    /// The order-preserving radix (in the low `BITS` bits).
    fn radix(self) -> u64;
    /// The lowest value of the type (padding of largest-k outputs): -inf for floats.
    fn lowest() -> Self;
    /// The highest value of the type (padding of smallest-k outputs): +inf for floats.
    fn highest() -> Self;
    /// The raw bits, for byte-exact comparisons.
    fn to_bits(self) -> u64;
    /// The value with these raw bits (the low `BITS` of them).
    fn from_bits(bits: u64) -> Self;
}

/// The radix of a float given its bits, sign bit and width mask.
#[inline]
fn float_radix(bits: u64, sign: u64, mask: u64, is_nan: bool) -> u64 {
    if is_nan {
        return mask;
    }
    if bits & !sign == 0 {
        // -0.0 and +0.0 tie.
        return sign;
    }
    if bits & sign != 0 {
        !bits & mask
    } else {
        bits | sign
    }
}

macro_rules! float_key {
    ($t:ty, $name:expr, $bits:expr, $raw:ty, $to:expr, $nan:expr, $lo:expr, $hi:expr) => {
        impl Key for $t {
            const NAME: &'static str = $name;
            const BITS: u32 = $bits;
            #[inline]
            fn radix(self) -> u64 {
                let b = $to(self) as u64;
                float_radix(b, 1u64 << ($bits - 1), <$raw>::MAX as u64, $nan(self))
            }
            fn lowest() -> Self {
                $lo
            }
            fn highest() -> Self {
                $hi
            }
            fn to_bits(self) -> u64 {
                $to(self) as u64
            }
            fn from_bits(bits: u64) -> Self {
                <$t>::from_bits(bits as $raw)
            }
        }
    };
}

float_key!(
    f32,
    "f32",
    32,
    u32,
    f32::to_bits,
    f32::is_nan,
    f32::NEG_INFINITY,
    f32::INFINITY
);
float_key!(
    f64,
    "f64",
    64,
    u64,
    f64::to_bits,
    f64::is_nan,
    f64::NEG_INFINITY,
    f64::INFINITY
);
float_key!(
    f16,
    "f16",
    16,
    u16,
    f16::to_bits,
    f16::is_nan,
    f16::NEG_INFINITY,
    f16::INFINITY
);
float_key!(
    bf16,
    "bf16",
    16,
    u16,
    bf16::to_bits,
    bf16::is_nan,
    bf16::NEG_INFINITY,
    bf16::INFINITY
);

macro_rules! int_key {
    ($t:ty, $u:ty, $name:expr, $bits:expr, $signed:expr) => {
        impl Key for $t {
            const NAME: &'static str = $name;
            const BITS: u32 = $bits;
            #[inline]
            fn radix(self) -> u64 {
                let b = self as $u as u64;
                if $signed {
                    b ^ (1u64 << ($bits - 1))
                } else {
                    b
                }
            }
            fn lowest() -> Self {
                <$t>::MIN
            }
            fn highest() -> Self {
                <$t>::MAX
            }
            fn to_bits(self) -> u64 {
                self as $u as u64
            }
            fn from_bits(bits: u64) -> Self {
                bits as $u as $t
            }
        }
    };
}

int_key!(i8, u8, "i8", 8, true);
int_key!(u8, u8, "u8", 8, false);
int_key!(i16, u16, "i16", 16, true);
int_key!(u16, u16, "u16", 16, false);
int_key!(i32, u32, "i32", 32, true);
int_key!(u32, u32, "u32", 32, false);
int_key!(i64, u64, "i64", 64, true);
int_key!(u64, u64, "u64", 64, false);

/// The selection radix for a direction: smallest-k selects the largest complemented radix,
/// so every backend implements only "largest".
#[inline]
pub fn directed<K: Key>(key: K, largest: bool) -> u64 {
    let r = key.radix();
    if largest {
        r
    } else {
        !r & width_mask(K::BITS)
    }
}

/// All ones in the low `bits` bits.
#[inline]
pub fn width_mask(bits: u32) -> u64 {
    if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}
