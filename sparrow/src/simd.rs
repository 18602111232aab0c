//! One CPU loop compiled for several vector widths and picked at run time, so a portable
//! binary still uses AVX-512 or AVX2 where the CPU has them. The body is compiled without fused
//! multiply-adds in every version (Rust never contracts `a * b + c`), so each gives the same
//! bits as the portable one.

use std::sync::atomic::{AtomicU8, Ordering};

/// The widest version a dispatch may pick: 2 for AVX-512F, 1 for AVX2, 0 for the baseline.
/// Tests lower it to run every version on one machine; since every version gives the same
/// bits, a test running beside them is not affected.
pub(crate) static WIDEST: AtomicU8 = AtomicU8::new(2);

/// Whether a dispatch may pick the version of `level` (see [`WIDEST`]).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) fn allows(level: u8) -> bool {
    WIDEST.load(Ordering::Relaxed) >= level
}

/// Defines `fn $name(args) -> ret` (optionally generic: `fn $name<T: Bound>(..)`) whose body
/// is compiled for AVX-512F, AVX2 and the baseline, and dispatches on the running CPU's
/// features.
macro_rules! multiversion {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $crate::simd::multiversion! {
            $(#[$meta])* $vis fn $name<>($($arg: $ty),*) $(-> $ret)? $body
        }
    };
    ($(#[$meta:meta])* $vis:vis fn $name:ident<$($g:ident: $bound:path),*>($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$meta])*
        #[allow(clippy::too_many_arguments)]
        $vis fn $name<$($g: $bound),*>($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            fn body<$($g: $bound),*>($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                #[allow(clippy::too_many_arguments)]
                unsafe fn wide<$($g: $bound),*>($($arg: $ty),*) $(-> $ret)? {
                    body($($arg),*)
                }
                #[target_feature(enable = "avx2")]
                #[allow(clippy::too_many_arguments)]
                unsafe fn half<$($g: $bound),*>($($arg: $ty),*) $(-> $ret)? {
                    body($($arg),*)
                }
                if $crate::simd::allows(2) && std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU was just found to have AVX-512F.
                    return unsafe { wide($($arg),*) };
                }
                if $crate::simd::allows(1) && std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU was just found to have AVX2.
                    return unsafe { half($($arg),*) };
                }
            }
            body($($arg),*)
        }
    };
}

pub(crate) use multiversion;
