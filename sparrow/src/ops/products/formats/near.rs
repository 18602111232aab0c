//! Columns as 16-bit offsets from their row, for SpMV over matrices whose entries all lie near
//! the diagonal ([`RowStats::near`](crate::ops::products::RowStats::near)): FEM meshes numbered by locality,
//! banded rows. An f64 entry then moves 10 bytes instead of CSR's 12, and the offset needs no
//! row base beyond the row index the kernel already has.

use crate::ops::products::tuning::NEAR_REACH;

/// Each entry's column minus its row as an `i16`, or None when one lies beyond [`NEAR_REACH`].
pub fn near_offsets(row_ptr: &[i64], col_idx: &[i32]) -> Option<Vec<i16>> {
    let mut off = Vec::with_capacity(col_idx.len());
    for (r, w) in row_ptr.windows(2).enumerate() {
        for &c in &col_idx[w[0] as usize..w[1] as usize] {
            let d = i64::from(c) - r as i64;
            if d.unsigned_abs() > NEAR_REACH as u64 {
                return None;
            }
            off.push(d as i16);
        }
    }
    Some(off)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Csr;

    #[test]
    fn offsets_are_column_minus_row_up_to_the_reach() {
        let n = 70_000;
        let r = [0, 0, 1, 40_000, 40_000, 69_999];
        let c = [0, 32_767, 0, 7_233, 69_999, 37_232];
        let v = [1.0f64; 6];
        let a = Csr::from_triplets(n, n, &r, &c, &v).unwrap();
        assert_eq!(crate::ops::products::RowStats::of(&a).reach, 32_767);
        assert!(crate::ops::products::RowStats::of(&a).near());
        let off = near_offsets(a.row_ptr(), a.col_idx()).unwrap();
        assert_eq!(off, vec![0, 32_767, -1, -32_767, 29_999, -32_767]);
        // One column a step farther in either direction has no 16-bit offset.
        for (row, col) in [(0, 32_768), (40_000, 7_232)] {
            let b = Csr::from_triplets(n, n, &[row], &[col], &[1.0f64]).unwrap();
            assert_eq!(crate::ops::products::RowStats::of(&b).reach, 32_768);
            assert!(!crate::ops::products::RowStats::of(&b).near());
            assert_eq!(near_offsets(b.row_ptr(), b.col_idx()), None);
        }
    }

    #[test]
    fn empty_matrix_is_near() {
        let a = Csr::<f32>::from_triplets(5, 3, &[], &[], &[]).unwrap();
        assert_eq!(crate::ops::products::RowStats::of(&a).reach, 0);
        assert_eq!(near_offsets(a.row_ptr(), a.col_idx()), Some(vec![]));
    }
}
