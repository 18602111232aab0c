//! Rows that repeat one pattern of diagonals (banded matrices, stencils on a grid): row `r`
//! holds exactly the columns `r + offsets[k]`. SpMV on such rows can compute each entry's
//! column from its position instead of reading it, so an f32 entry moves 4 bytes instead of 8
//! (`spmv_diag` in spmm.cu). The values stay where CSR keeps them; the upload adds only the
//! offsets, the runs of such rows and the list of the other rows.

use super::work::STREAM_MAX_ROWS;

/// Most diagonals a pattern may hold: the kernel's division of an entry's position by the
/// pattern's length is exact up to positions of `2^32 / DIAG_MAX`.
pub const DIAG_MAX: usize = 128;

/// Least share of the entries in rows that follow the pattern; the rest take a slower loop.
pub const DIAG_SHARE: f64 = 0.75;

/// Rows of the other rows' list a block takes, one per thread (`STREAM_BLOCK` in spmm.cu).
pub const REST_ROWS: usize = 256;

/// Most positions a block of pattern rows spans: a block's entries plus the 3 ahead of its
/// first aligned vector, below `2^32 / DIAG_MAX` so [`divide`] is exact.
const MAX_POSITION: u64 = 4096;
const _: () = assert!(MAX_POSITION * DIAG_MAX as u64 <= 1 << 32);
const _: () = assert!(super::work::STREAM_ITEMS_EVEN as u64 + 4 <= MAX_POSITION);

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
/// such pattern exists or a row holds more than [`DIAG_MAX`] entries (the other rows' loop
/// takes one row a thread). The
/// candidates are the patterns of a few rows of the most common length (up to [`DIAG_MAX`])
/// spread over the matrix, so the edge rows of a grid or band do not hide it.
pub fn find(row_ptr: &[i64], col_idx: &[i32]) -> Option<Vec<i32>> {
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
        let (s, e) = (row_ptr[r] as usize, row_ptr[r + 1] as usize);
        let offsets: Option<Vec<i32>> = col_idx[s..e]
            .iter()
            .map(|&c| i32::try_from(c as i64 - r as i64).ok())
            .collect();
        let Some(offsets) = offsets else { continue };
        if tried.contains(&offsets) {
            continue;
        }
        let covered: usize = (0..nrows)
            .filter(|&q| follows(row_ptr, col_idx, q, &offsets))
            .map(len)
            .sum();
        if covered as f64 >= DIAG_SHARE * nnz as f64 {
            return Some(offsets);
        }
        tried.push(offsets);
    }
    None
}

/// SpMV work over a pattern of diagonals: runs of rows that follow it, each as `[first row,
/// end row, first entry, end entry]` with at most `items` entries and
/// [`STREAM_MAX_ROWS`](super::work::STREAM_MAX_ROWS) rows, and every other row in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiagWork {
    /// The pattern: row `r` of a run holds columns `r + offsets[k]`.
    pub offsets: Vec<i32>,
    /// Four i64 per run.
    pub runs: Vec<i64>,
    /// The rows that do not follow the pattern, in order.
    pub rest: Vec<i64>,
}

impl DiagWork {
    /// Cuts the rows that follow `offsets` into runs of at most `items` entries and lists the
    /// others.
    pub fn plan(row_ptr: &[i64], col_idx: &[i32], offsets: &[i32], items: usize) -> Self {
        let nrows = row_ptr.len().saturating_sub(1);
        let per_run = (items / offsets.len().max(1)).clamp(1, STREAM_MAX_ROWS);
        let (mut runs, mut rest) = (Vec::new(), Vec::new());
        let mut start: Option<usize> = None;
        let flush = |s: usize, e: usize, runs: &mut Vec<i64>| {
            runs.extend_from_slice(&[s as i64, e as i64, row_ptr[s], row_ptr[e]]);
        };
        for r in 0..nrows {
            if follows(row_ptr, col_idx, r, offsets) {
                match start {
                    Some(s) if r - s == per_run => {
                        flush(s, r, &mut runs);
                        start = Some(r);
                    }
                    Some(_) => {}
                    None => start = Some(r),
                }
            } else {
                if let Some(s) = start.take() {
                    flush(s, r, &mut runs);
                }
                rest.push(r as i64);
            }
        }
        if let Some(s) = start {
            flush(s, nrows, &mut runs);
        }
        DiagWork {
            offsets: offsets.to_vec(),
            runs,
            rest,
        }
    }

    /// Number of runs.
    pub fn nruns(&self) -> usize {
        self.runs.len() / 4
    }

    /// Blocks of one launch: a block per run, then one per [`REST_ROWS`] other rows.
    pub fn blocks(&self) -> usize {
        self.nruns() + self.rest.len().div_ceil(REST_ROWS)
    }
}

/// The multiplier [`divide`] takes for the pattern length `d` (1 to [`DIAG_MAX`]).
pub fn magic(d: usize) -> u64 {
    (1u64 << 32) / d as u64 + 1
}

/// `e / d` for positions `e` below `2^32 / d` (asserted at compile time for every block), as
/// the kernel computes it: one multiply and a shift instead of a division.
pub fn divide(e: u32, magic: u64) -> u32 {
    ((e as u64 * magic) >> 32) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::{gen, work::STREAM_ITEMS_EVEN};

    #[test]
    fn divide_is_exact_for_every_length_and_position() {
        for d in 1..=DIAG_MAX {
            let m = magic(d);
            for e in 0..MAX_POSITION as u32 {
                assert_eq!(divide(e, m), e / d as u32, "e {e} d {d}");
            }
        }
    }

    /// Runs hold pattern rows only, in order, within their limits; with the rest list they
    /// cover every row once.
    fn check_cover(a: &crate::matrix::Csr<f32>, w: &DiagWork, items: usize) {
        let (rp, ci) = (a.row_ptr(), a.col_idx());
        let mut seen = vec![0u8; a.nrows()];
        for run in w.runs.chunks_exact(4) {
            let (r0, r1) = (run[0] as usize, run[1] as usize);
            assert!(r1 > r0 && r1 - r0 <= STREAM_MAX_ROWS);
            assert_eq!((run[2], run[3]), (rp[r0], rp[r1]));
            assert!((run[3] - run[2]) as usize <= items);
            for (r, s) in seen.iter_mut().enumerate().take(r1).skip(r0) {
                assert!(follows(rp, ci, r, &w.offsets), "row {r}");
                *s += 1;
            }
        }
        for &r in &w.rest {
            assert!(!follows(rp, ci, r as usize, &w.offsets));
            seen[r as usize] += 1;
        }
        assert!(seen.iter().all(|&s| s == 1));
        assert!(w.rest.windows(2).all(|p| p[0] < p[1]));
    }

    #[test]
    fn finds_the_band_and_the_stencils() {
        let b = gen::banded::<f32>(5000, 64, 1).unwrap();
        let off = find(b.row_ptr(), b.col_idx()).expect("banded");
        assert_eq!(off, (-32..32).collect::<Vec<i32>>());
        let w = DiagWork::plan(b.row_ptr(), b.col_idx(), &off, STREAM_ITEMS_EVEN);
        // The 32 rows at each edge slide inward and do not follow the pattern.
        assert_eq!(w.rest.len(), 63);
        check_cover(&b, &w, STREAM_ITEMS_EVEN);

        let s = gen::stencil_2d::<f32>(70, 50, 2).unwrap();
        let off = find(s.row_ptr(), s.col_idx()).expect("2-D stencil");
        assert_eq!(off, vec![-70, -1, 0, 1, 70]);
        let w = DiagWork::plan(s.row_ptr(), s.col_idx(), &off, 2048);
        assert_eq!(w.rest.len(), 70 * 50 - 68 * 48);
        check_cover(&s, &w, 2048);

        let s = gen::stencil_3d::<f32>(30, 3).unwrap();
        let off = find(s.row_ptr(), s.col_idx()).expect("3-D stencil");
        assert_eq!(off.len(), 27);
        let w = DiagWork::plan(s.row_ptr(), s.col_idx(), &off, 100);
        assert_eq!(w.rest.len(), 30 * 30 * 30 - 28 * 28 * 28);
        check_cover(&s, &w, 100);
    }

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

    #[test]
    fn runs_cut_at_their_entries_and_rows() {
        // The identity: a pattern of one diagonal, runs of STREAM_MAX_ROWS rows.
        let n = 5000;
        let id = from_rows(n, &(0..n as i32).map(|r| vec![r]).collect::<Vec<_>>());
        let off = find(id.row_ptr(), id.col_idx()).unwrap();
        assert_eq!(off, vec![0]);
        let w = DiagWork::plan(id.row_ptr(), id.col_idx(), &off, STREAM_ITEMS_EVEN);
        assert!(w.rest.is_empty());
        assert_eq!(w.nruns(), n.div_ceil(STREAM_MAX_ROWS));
        check_cover(&id, &w, STREAM_ITEMS_EVEN);
        assert_eq!(w.blocks(), w.nruns());
    }
}
