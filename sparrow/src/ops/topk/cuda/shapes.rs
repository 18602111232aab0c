//! The launch shapes and flags every top-k kernel shares, and the byte views of keys the
//! copies use.

use super::super::{IndexType, TieBreak, TopK};
use crate::device::LaunchShape;
use crate::{Error, Result};

pub(super) const BLOCK: u32 = 256;

pub(super) fn as_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: plain-old-data keys and values (floats and integers), read as bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

pub(super) fn from_bytes<T: Copy + Default>(b: &[u8]) -> Vec<T> {
    let n = b.len() / std::mem::size_of::<T>();
    let mut v = vec![T::default(); n];
    // SAFETY: every bit pattern is a valid key or value type (floats and integers).
    unsafe {
        std::ptr::copy_nonoverlapping(
            b.as_ptr(),
            v.as_mut_ptr() as *mut u8,
            n * std::mem::size_of::<T>(),
        )
    };
    v
}

/// One block per segment, with `smem` bytes of dynamic shared memory.
pub(super) fn per_segment(n: usize, smem: usize) -> Result<LaunchShape> {
    per_segment_of(n, smem, BLOCK)
}

/// [`per_segment`] with `threads` per block.
pub(super) fn per_segment_of(n: usize, smem: usize, threads: u32) -> Result<LaunchShape> {
    Ok(LaunchShape::linear(
        u32::try_from(n).map_err(|_| Error::unsupported("too many segments for one launch"))?,
        threads,
    )
    .with_smem(smem as u32))
}

/// Whether the filter path keeps each tile's candidates in position order: every deterministic
/// tie-break, and sorted rows, whose sort orders equal keys by their slot (1); fast ties with
/// unsorted rows may place them in any order (0).
pub(super) fn ordered(req: &TopK) -> i32 {
    (req.tie() != TieBreak::Fast || req.is_sorted()) as i32
}

/// The launch flags every selection kernel takes: largest, 64-bit indices, larger-index ties.
pub(super) fn flags(req: &TopK) -> (i32, i32, i32) {
    (
        req.is_largest() as i32,
        (req.index() == IndexType::I64) as i32,
        (req.tie() == TieBreak::LargerIndex) as i32,
    )
}

pub(super) fn tiles_shape(nt: usize) -> Result<LaunchShape> {
    Ok(LaunchShape::linear(
        u32::try_from(nt.max(1))
            .map_err(|_| Error::unsupported(format!("{nt} tiles exceed the grid")))?,
        BLOCK,
    ))
}

pub(super) fn grid(items: usize) -> Result<LaunchShape> {
    let b = u32::try_from(items.div_ceil(BLOCK as usize).max(1)).map_err(|_| {
        Error::unsupported(format!("{items} work items need more than 2^32 blocks"))
    })?;
    Ok(LaunchShape::linear(b, BLOCK))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only fast ties with unsorted rows may leave the filter's candidates out of position
    /// order: the deterministic tie-breaks rank ties by position, and sorted rows order equal
    /// keys by their slot.
    #[test]
    fn candidates_keep_position_order_unless_fast_and_unsorted() {
        let cases = [
            (TieBreak::Fast, false, 0),
            (TieBreak::Fast, true, 1),
            (TieBreak::SmallerIndex, false, 1),
            (TieBreak::SmallerIndex, true, 1),
            (TieBreak::LargerIndex, false, 1),
            (TieBreak::LargerIndex, true, 1),
        ];
        for (tie, sorted, want) in cases {
            for req in [TopK::largest(8), TopK::smallest(8)] {
                let req = req.tie_break(tie).sorted(sorted);
                assert_eq!(ordered(&req), want, "{req:?}");
            }
        }
    }
}
