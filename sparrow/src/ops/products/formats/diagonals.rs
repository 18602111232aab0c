//! Rows that repeat one pattern of diagonals (banded matrices, stencils on a grid): row `r`
//! holds exactly the columns `r + offsets[k]`. SpMV on such rows can compute each entry's
//! column instead of reading it (`spmv_diag` in spmm.cu): one thread a row walks the pattern,
//! so the warp's gathers of x are its rows' neighbours and no column index moves; wider
//! patterns take lanes of a row (`spmv_diagv`). The values stay where CSR keeps them; the
//! upload adds only the offsets and one bit a row that says whether the row follows the
//! pattern, and passes the longest run of such rows ([`longest_run`]) and a band's first
//! offset ([`consecutive`]) with the launch.

use rayon::prelude::*;

/// Rows a rayon task checks against a pattern: the checks of every row of every upload, run
/// across the cores.
const ROWS_PER_TASK: usize = 1 << 14;

/// Most diagonals a pattern may hold (`DIAG_MAX` in spmm.cu, the shared memory the kernel
/// keeps the offsets in), and most entries of any row where a pattern is found: a thread walks
/// each row.
pub const DIAG_MAX: usize = 128;

/// Least share of the entries in rows that follow the pattern; the rest take a slower loop.
pub const DIAG_SHARE: f64 = 0.75;

/// Whether row `r` holds exactly the columns `r + offsets[k]`.
pub fn follows(row_ptr: &[i64], col_idx: &[i32], r: usize, offsets: &[i32]) -> bool {
    let (s, e) = (row_ptr[r] as usize, row_ptr[r + 1] as usize);
    e - s == offsets.len()
        && col_idx[s..e]
            .iter()
            .zip(offsets)
            .all(|(&c, &o)| c as i64 == r as i64 + o as i64)
}

/// The pattern of diagonals that at least [`DIAG_SHARE`] of the entries follow; None when no
/// such pattern exists or a row holds more than [`DIAG_MAX`] entries. The candidates are the
/// patterns of a few rows of the most common length spread over the matrix, so the edge rows of
/// a grid or band do not hide it.
pub fn find(row_ptr: &[i64], col_idx: &[i32]) -> Option<Vec<i32>> {
    find_row(row_ptr, col_idx).map(|(_, offsets)| offsets)
}

/// Row `r`'s columns as offsets from `r` (None when one does not fit 32 bits).
pub fn offsets_at(row_ptr: &[i64], col_idx: &[i32], r: usize) -> Option<Vec<i32>> {
    let (s, e) = (row_ptr[r] as usize, row_ptr[r + 1] as usize);
    col_idx[s..e]
        .iter()
        .map(|&c| i32::try_from(c as i64 - r as i64).ok())
        .collect()
}

/// [`find`], with the row whose columns give the pattern ([`offsets_at`]), so the upload
/// reads the pattern off that row instead of searching again.
pub fn find_row(row_ptr: &[i64], col_idx: &[i32]) -> Option<(usize, Vec<i32>)> {
    let nrows = row_ptr.len().saturating_sub(1);
    let nnz = *row_ptr.last()? as usize;
    if nrows == 0 || nnz == 0 {
        return None;
    }
    let len = |r: usize| (row_ptr[r + 1] - row_ptr[r]) as usize;
    let mut counts = [0usize; DIAG_MAX + 1];
    for r in 0..nrows {
        *counts.get_mut(len(r))? += 1;
    }
    let modal = (1..=DIAG_MAX).max_by_key(|&l| (counts[l], l))?;
    if counts[modal] == 0 {
        return None;
    }
    let mut tried: Vec<Vec<i32>> = Vec::new();
    for from in [
        nrows / 2,
        nrows / 3,
        2 * nrows / 3,
        nrows / 4,
        3 * nrows / 4,
    ] {
        let Some(r) = (from..nrows).chain(0..from).find(|&r| len(r) == modal) else {
            continue;
        };
        let Some(offsets) = offsets_at(row_ptr, col_idx, r) else {
            continue;
        };
        if tried.contains(&offsets) {
            continue;
        }
        let covered: usize = (0..nrows)
            .into_par_iter()
            .with_min_len(ROWS_PER_TASK)
            .filter(|&q| follows(row_ptr, col_idx, q, &offsets))
            .map(len)
            .sum();
        if covered as f64 >= DIAG_SHARE * nnz as f64 {
            return Some((r, offsets));
        }
        tried.push(offsets);
    }
    None
}

/// One bit a row, 32 rows a word: bit `r % 32` of word `r / 32` says whether row `r` follows
/// `offsets`. Returns the words and the number of rows that follow.
pub fn follow_bits(row_ptr: &[i64], col_idx: &[i32], offsets: &[i32]) -> (Vec<u32>, usize) {
    let nrows = row_ptr.len().saturating_sub(1);
    let mut bits = vec![0u32; nrows.div_ceil(32)];
    let count = bits
        .par_iter_mut()
        .with_min_len(ROWS_PER_TASK / 32)
        .enumerate()
        .map(|(w, word)| {
            for r in 32 * w..(32 * w + 32).min(nrows) {
                if follows(row_ptr, col_idx, r, offsets) {
                    *word |= 1 << (r % 32);
                }
            }
            word.count_ones() as usize
        })
        .sum();
    (bits, count)
}

/// The longest run of consecutive rows that follow the pattern, as `lo..hi` (empty when none
/// does). Such rows hold the pattern's `d` entries each, so row `r` of the run starts at entry
/// `row_ptr[lo] + (r - lo) * d`: the vector diagonal kernel computes where a warp inside the
/// run starts instead of waiting on a load of its bits and row pointer.
pub fn longest_run(bits: &[u32], nrows: usize) -> std::ops::Range<usize> {
    let (mut best, mut from) = (0..0, 0);
    for r in 0..=nrows {
        let set = r < nrows && bits[r / 32] >> (r % 32) & 1 == 1;
        if !set {
            if r - from > best.len() {
                best = from..r;
            }
            from = r + 1;
        }
    }
    best
}

/// The first offset when the pattern's offsets are consecutive (`first + k`, a band): the
/// kernel then adds `k` to it instead of reading the offsets from memory.
pub fn consecutive(offsets: &[i32]) -> Option<i32> {
    let first = *offsets.first()?;
    offsets
        .iter()
        .enumerate()
        .all(|(k, &o)| o as i64 == first as i64 + k as i64)
        .then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::gen;

    fn from_rows(n: usize, rows: &[Vec<i32>]) -> crate::matrix::Csr<f32> {
        let (mut ri, mut ci) = (Vec::new(), Vec::new());
        for (r, cols) in rows.iter().enumerate() {
            for &c in cols {
                ri.push(r);
                ci.push(c as usize);
            }
        }
        let v = vec![1.0f32; ri.len()];
        crate::matrix::Csr::from_triplets(n, n, &ri, &ci, &v).unwrap()
    }

    /// The longest run is the longest stretch of set bits, found across word bounds, at either
    /// end and in the middle; ties keep the first.
    #[test]
    fn longest_run_of_rows() {
        let bits_of = |rows: &[bool]| {
            let mut b = vec![0u32; rows.len().div_ceil(32)];
            for (r, &on) in rows.iter().enumerate() {
                if on {
                    b[r / 32] |= 1 << (r % 32);
                }
            }
            b
        };
        let cases: Vec<(Vec<bool>, std::ops::Range<usize>)> = vec![
            (vec![], 0..0),
            (vec![false; 40], 0..0),
            (vec![true; 70], 0..70),
            ((0..70).map(|r| r != 31).collect(), 32..70),
            ((0..70).map(|r| r != 40).collect(), 0..40),
            ((0..100).map(|r| (20..90).contains(&r)).collect(), 20..90),
            ((0..10).map(|r| r % 3 != 2).collect(), 0..2),
        ];
        for (rows, want) in cases {
            assert_eq!(longest_run(&bits_of(&rows), rows.len()), want, "{rows:?}");
        }
    }

    /// Consecutive offsets give their first; a gap, a repeat or no offsets give none.
    #[test]
    fn consecutive_offsets() {
        assert_eq!(consecutive(&[-2, -1, 0, 1]), Some(-2));
        assert_eq!(consecutive(&[5]), Some(5));
        assert_eq!(consecutive(&[-1, 1]), None);
        assert_eq!(consecutive(&[0, 0]), None);
        assert_eq!(consecutive(&[]), None);
        let banded = gen::banded::<f32>(300, 64, 1).unwrap();
        let off = find(banded.row_ptr(), banded.col_idx()).unwrap();
        assert_eq!(consecutive(&off), Some(-32));
        let grid = gen::stencil_2d::<f32>(30, 20, 1).unwrap();
        let off = find(grid.row_ptr(), grid.col_idx()).unwrap();
        assert_eq!(consecutive(&off), None);
    }

    /// The bits name exactly the rows that follow the pattern.
    fn check_bits(a: &crate::matrix::Csr<f32>, off: &[i32], others: usize) {
        let (bits, count) = follow_bits(a.row_ptr(), a.col_idx(), off);
        assert_eq!(bits.len(), a.nrows().div_ceil(32));
        assert_eq!(count, a.nrows() - others);
        for r in 0..a.nrows() {
            let bit = bits[r / 32] >> (r % 32) & 1 == 1;
            assert_eq!(bit, follows(a.row_ptr(), a.col_idx(), r, off), "row {r}");
        }
    }

    #[test]
    fn finds_the_band_and_the_stencils() {
        let b = gen::banded::<f32>(5000, 64, 1).unwrap();
        let off = find(b.row_ptr(), b.col_idx()).expect("banded");
        assert_eq!(off, (-32..32).collect::<Vec<i32>>());
        // The 32 rows at the top and 31 at the bottom slide inward.
        check_bits(&b, &off, 63);

        let s = gen::stencil_2d::<f32>(70, 50, 2).unwrap();
        let off = find(s.row_ptr(), s.col_idx()).expect("2-D stencil");
        assert_eq!(off, vec![-70, -1, 0, 1, 70]);
        check_bits(&s, &off, 70 * 50 - 68 * 48);

        let s = gen::stencil_3d::<f32>(30, 3).unwrap();
        let off = find(s.row_ptr(), s.col_idx()).expect("3-D stencil");
        assert_eq!(off.len(), 27);
        check_bits(&s, &off, 30 * 30 * 30 - 28 * 28 * 28);

        // Rows over several tasks, not a whole number of words.
        let b = gen::banded::<f32>(70_001, 8, 1).unwrap();
        let off = find(b.row_ptr(), b.col_idx()).expect("long band");
        check_bits(&b, &off, 7);

        let id = from_rows(100, &(0..100).map(|r| vec![r]).collect::<Vec<_>>());
        let off = find(id.row_ptr(), id.col_idx()).unwrap();
        assert_eq!(off, vec![0]);
        check_bits(&id, &off, 0);
    }

    /// The bounds: a row of DIAG_MAX entries beside the pattern rows keeps the pattern, one more
    /// entry loses it; exactly DIAG_SHARE of the entries in pattern rows finds it, one fewer not.
    /// The row `find_row` names gives the pattern.
    #[test]
    fn pattern_bounds() {
        for (long, found) in [(DIAG_MAX, true), (DIAG_MAX + 1, false)] {
            let mut rows: Vec<Vec<i32>> = (0..1000).map(|r| vec![r]).collect();
            rows[3] = (0..long as i32).collect();
            let a = from_rows(1000, &rows);
            assert_eq!(find(a.row_ptr(), a.col_idx()).is_some(), found, "{long}");
        }
        for (follow, found) in [(300, true), (299, false)] {
            let rows: Vec<Vec<i32>> = (0..400)
                .map(|r| vec![if r < follow { r } else { (r + 1) % 400 }])
                .collect();
            let a = from_rows(400, &rows);
            assert_eq!(find(a.row_ptr(), a.col_idx()).is_some(), found, "{follow}");
        }
        let s = gen::stencil_2d::<f32>(70, 50, 2).unwrap();
        let (row, off) = find_row(s.row_ptr(), s.col_idx()).unwrap();
        assert_eq!(offsets_at(s.row_ptr(), s.col_idx(), row).unwrap(), off);
        assert!(follows(s.row_ptr(), s.col_idx(), row, &off));
    }

    #[test]
    fn other_matrices_have_no_pattern() {
        let u = gen::uniform::<f32>(4000, 4000, 16, 4).unwrap();
        assert_eq!(find(u.row_ptr(), u.col_idx()), None);
        let f = gen::fem_like::<f32>(4000, 6000, 5).unwrap();
        assert_eq!(find(f.row_ptr(), f.col_idx()), None);
        // A 3-D stencil on a grid of 12: 69 % of the entries in interior rows.
        let s = gen::stencil_3d::<f32>(12, 3).unwrap();
        assert_eq!(find(s.row_ptr(), s.col_idx()), None);
        let d = gen::block_diagonal::<f32>(100, 32, 6).unwrap();
        assert_eq!(find(d.row_ptr(), d.col_idx()), None);
        // Under the share: a band of 8 whose every other row loses its first entry.
        let rows: Vec<Vec<i32>> = (0..3000)
            .map(|r: i32| {
                let start = (r - 4).clamp(0, 3000 - 8);
                (start + r % 2..start + 8).collect()
            })
            .collect();
        let odd = from_rows(3000, &rows);
        assert_eq!(find(odd.row_ptr(), odd.col_idx()), None);
        // A pattern row beside a row of more than DIAG_MAX entries: no pattern.
        let mut rows: Vec<Vec<i32>> = (0..1000).map(|r| vec![r]).collect();
        rows[3] = (0..200).collect();
        let long = from_rows(1000, &rows);
        assert_eq!(find(long.row_ptr(), long.col_idx()), None);
    }
}
