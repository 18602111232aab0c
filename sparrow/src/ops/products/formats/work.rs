//! The SpMV work blocks: the row pointers cut once, on the host, into pieces of nearly equal
//! work, so the GPU neither idles lanes on short rows nor waits on one group for a long row.

pub use crate::kernels::sizes::{STREAM_ITEMS_EVEN, STREAM_MAX_ROWS};

/// Entries of one block of short rows on skewed rows ([`RowStats::skewed`](crate::ops::products::RowStats::skewed)):
/// about 8 per thread of 256. A longer row is a long row.
pub const STREAM_ITEMS: usize = 2048;
// The kernel sizes its blocks for the larger.
const _: () = assert!(STREAM_ITEMS <= STREAM_ITEMS_EVEN);
/// Entries of one chunk of a long row (64 per thread).
pub const STREAM_CHUNK: usize = 16384;

/// Calls `emit` with each work block in order, as `[first row, end row, first entry, end
/// entry, first chunk block of the row, chunks of the row]`: a run of short rows (the last two
/// 0) holding at most `items` entries and [`STREAM_MAX_ROWS`] rows, or one chunk of a row
/// longer than `items` (chunk blocks of one row are consecutive, the first at the index given).
/// `items` is [`STREAM_ITEMS`] or [`STREAM_ITEMS_EVEN`]. Returns the number of blocks.
pub fn stream_partition(row_ptr: &[i64], items: usize, mut emit: impl FnMut([i64; 6])) -> usize {
    let nrows = row_ptr.len().saturating_sub(1);
    let mut count = 0usize;
    let mut r0 = 0usize;
    let flush = |r0: usize, r1: usize, count: &mut usize, emit: &mut dyn FnMut([i64; 6])| {
        if r1 > r0 {
            emit([r0 as i64, r1 as i64, row_ptr[r0], row_ptr[r1], 0, 0]);
            *count += 1;
        }
    };
    for r in 0..nrows {
        let (s, e) = (row_ptr[r], row_ptr[r + 1]);
        if (e - s) as usize > items {
            flush(r0, r, &mut count, &mut emit);
            let chunks = ((e - s) as usize).div_ceil(STREAM_CHUNK) as i64;
            let first = count as i64;
            let mut p = s;
            while p < e {
                let q = (p + STREAM_CHUNK as i64).min(e);
                emit([r as i64, r as i64 + 1, p, q, first, chunks]);
                count += 1;
                p = q;
            }
            r0 = r + 1;
        } else if (e - row_ptr[r0]) as usize > items || r - r0 >= STREAM_MAX_ROWS {
            flush(r0, r, &mut count, &mut emit);
            r0 = r;
        }
    }
    flush(r0, nrows, &mut count, &mut emit);
    count
}

/// Columns a work block may span for its packed form: its entries' offsets from its first
/// column fit 16 bits.
pub const PACKED_SPAN: usize = 1 << 16;

/// The columns a work block reaches: (first, last) column of its entries, None when it has
/// none. Rows are sorted, so a row's first and last entries bound it.
pub fn block_columns(row_ptr: &[i64], col_idx: &[i32], b: [i64; 6]) -> Option<(i32, i32)> {
    if b[2] == b[3] {
        return None;
    }
    if b[5] != 0 {
        return Some((col_idx[b[2] as usize], col_idx[b[3] as usize - 1]));
    }
    let (mut lo, mut hi) = (i32::MAX, i32::MIN);
    for r in b[0] as usize..b[1] as usize {
        let (s, e) = (row_ptr[r] as usize, row_ptr[r + 1] as usize);
        if e > s {
            lo = lo.min(col_idx[s]);
            hi = hi.max(col_idx[e - 1]);
        }
    }
    Some((lo, hi))
}

/// The packed form of a matrix's columns for SpMV (`spmv_packed` in spmm.cu), built once on
/// upload: each entry's column as a 16-bit offset from its work block's first column, and
/// each row's end as a 16-bit offset from its block's first entry. An f32 entry then moves 6
/// bytes instead of 8, and a row 2 bytes instead of 8.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedColumns {
    /// Column offset of each entry from its block's first column.
    pub cols: Vec<u16>,
    /// First column of each work block (0 for a block with no entries).
    pub base: Vec<i32>,
    /// End of each row in a block of short rows, relative to the block's first entry; 0 for
    /// the rows of long-row chunks, which the kernel does not read.
    pub ends: Vec<u16>,
}

/// Packs `col_idx` over the work blocks `work` (six i64 each, [`stream_partition`]'s order):
/// the upload's packed form, in one pass over the blocks. None when a block spans more than
/// [`PACKED_SPAN`] columns or holds more entries than a 16-bit row end can name.
pub fn pack_columns(row_ptr: &[i64], col_idx: &[i32], work: &[i64]) -> Option<PackedColumns> {
    let nrows = row_ptr.len().saturating_sub(1);
    let mut p = PackedColumns {
        cols: vec![0; col_idx.len()],
        base: Vec::with_capacity(work.len() / 6),
        ends: vec![0; nrows],
    };
    for w in work.chunks_exact(6) {
        let b: [i64; 6] = w.try_into().ok()?;
        if b[5] == 0 && b[3] - b[2] > i64::from(u16::MAX) {
            return None;
        }
        let first = match block_columns(row_ptr, col_idx, b) {
            Some((lo, hi)) if (hi as i64 - lo as i64) < PACKED_SPAN as i64 => lo,
            Some(_) => return None,
            None => 0,
        };
        p.base.push(first);
        let (s, e) = (b[2] as usize, b[3] as usize);
        for (o, &c) in p.cols[s..e].iter_mut().zip(&col_idx[s..e]) {
            *o = (c - first) as u16;
        }
        if b[5] == 0 {
            for r in b[0] as usize..b[1] as usize {
                p.ends[r] = (row_ptr[r + 1] - b[2]) as u16;
            }
        }
    }
    Some(p)
}

/// The rows by length, longest first and rows of one length in row order, with every row over
/// [`LONG_ROW`](crate::ops::products::stats::LONG_ROW) ahead of the rest: the row list of the sorted SpMM path,
/// whose bins (runs of this order) the plan reads off [`RowStats::len_classes`](crate::ops::products::RowStats::len_classes).
pub fn rows_by_length(row_ptr: &[i64]) -> Vec<i64> {
    let top = crate::ops::products::tuning::LONG_ROW + 1;
    let key = |r: usize| ((row_ptr[r + 1] - row_ptr[r]) as usize).min(top);
    let nrows = row_ptr.len().saturating_sub(1);
    let mut next = vec![0usize; top + 1];
    for r in 0..nrows {
        next[key(r)] += 1;
    }
    // Longest first: the rows of length l start after every row longer than l.
    let mut at = 0usize;
    for l in (0..=top).rev() {
        let c = next[l];
        next[l] = at;
        at += c;
    }
    let mut rows = vec![0i64; nrows];
    for r in 0..nrows {
        let k = key(r);
        rows[next[k]] = r as i64;
        next[k] += 1;
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks_of(row_ptr: &[i64], items: usize) -> Vec<[i64; 6]> {
        let mut v = Vec::new();
        let n = stream_partition(row_ptr, items, |b| v.push(b));
        assert_eq!(n, v.len());
        v
    }

    fn blocks(row_ptr: &[i64]) -> Vec<[i64; 6]> {
        blocks_of(row_ptr, STREAM_ITEMS)
    }

    /// Every row lands in exactly one run or in the chunks of its own row, in order, entries
    /// covered once, and no block exceeds its limits.
    #[test]
    fn blocks_cover_every_row_and_entry_once() {
        for items in [STREAM_ITEMS, STREAM_ITEMS_EVEN] {
            cover(items);
        }
    }

    fn cover(items: usize) {
        let mut rng = crate::matrix::Rng::new(3);
        let mut rp = vec![0i64];
        for i in 0..20_000 {
            let len = match i % 97 {
                0 => 40_000 + rng.below(5) as i64,
                1 => items as i64,
                2 => items as i64 + 1,
                3 => STREAM_ITEMS as i64 + 1,
                4..=40 => 0,
                _ => rng.below(40) as i64,
            };
            rp.push(rp.last().unwrap() + len);
        }
        let bl = blocks_of(&rp, items);
        let (mut row, mut entry) = (0i64, 0i64);
        for (i, b) in bl.iter().enumerate() {
            assert_eq!(b[2], entry, "block {i}");
            if b[5] == 0 {
                assert_eq!(b[0], row);
                assert!(b[1] > b[0]);
                assert!((b[3] - b[2]) as usize <= items);
                assert!((b[1] - b[0]) as usize <= STREAM_MAX_ROWS);
                assert_eq!((b[2], b[3]), (rp[b[0] as usize], rp[b[1] as usize]));
                row = b[1];
            } else {
                assert_eq!(b[1], b[0] + 1);
                assert!((rp[b[1] as usize] - rp[b[0] as usize]) as usize > items);
                assert!((b[3] - b[2]) as usize <= STREAM_CHUNK);
                let first = b[4] as usize;
                assert_eq!(bl[first][0], b[0]);
                assert_eq!(bl[first][2], rp[b[0] as usize]);
                if b[3] == rp[b[1] as usize] {
                    assert_eq!(i + 1 - first, b[5] as usize);
                    row = b[1];
                }
            }
            entry = b[3];
        }
        assert_eq!(row as usize, rp.len() - 1);
        assert_eq!(entry, *rp.last().unwrap());
    }

    #[test]
    fn rows_by_length_puts_long_rows_first_then_longest_first_stably() {
        let long = crate::ops::products::stats::LONG_ROW as i64;
        // Lengths: 2, 0, long + 5, 2, 7, long + 1, 0, and a row of exactly LONG_ROW, which is
        // not long: it follows the long rows.
        let lens = [2, 0, long + 5, 2, 7, long + 1, 0, long];
        let mut row_ptr = vec![0i64];
        for l in lens {
            row_ptr.push(row_ptr.last().unwrap() + l);
        }
        assert_eq!(rows_by_length(&row_ptr), vec![2, 5, 7, 4, 0, 3, 1, 6]);
        assert!(rows_by_length(&[0]).is_empty());
    }

    /// A block of STREAM_ITEMS_EVEN entries from the worst alignment (3 entries ahead of the
    /// first in its vector) fits the kernel's three 4-entry vectors per thread (its
    /// STREAM_VECS), and the kernels receive the size under the name they read.
    #[test]
    fn stream_items_fit_the_kernels_vectors() {
        let block = crate::kernels::sizes::SPMM_BLOCK as usize;
        assert!((3 + STREAM_ITEMS_EVEN).div_ceil(4) <= 3 * block);
        let defs = crate::kernels::sizes::spmm_defines();
        assert!(defs.contains(&format!("-DSTREAM_ITEMS={STREAM_ITEMS_EVEN}")));
        assert!(defs.contains(&format!("-DSTREAM_MAX_ROWS={STREAM_MAX_ROWS}")));
    }

    /// Every packed entry and row end decodes to the matrix's own column and row bound, on
    /// blocks of short rows, long-row chunks and empty rows; a block one column too wide
    /// refuses.
    #[test]
    fn packed_columns_decode_to_the_matrix() {
        let mut rng = crate::matrix::Rng::new(5);
        let (mut rp, mut cols) = (vec![0i64], Vec::new());
        for i in 0..3_000i64 {
            let len = match i % 211 {
                0 => 20_000,
                1..=20 => 0,
                _ => rng.below(30) as i64,
            };
            // Columns near the row, sorted and unique: a local matrix.
            let mut c: Vec<i32> = (0..len)
                .map(|_| (i * 4 + rng.below(50_000) as i64) as i32)
                .collect();
            c.sort_unstable();
            c.dedup();
            rp.push(rp.last().unwrap() + c.len() as i64);
            cols.extend(c);
        }
        for items in [STREAM_ITEMS, STREAM_ITEMS_EVEN] {
            let mut work = Vec::new();
            stream_partition(&rp, items, |b| work.extend_from_slice(&b));
            let p = pack_columns(&rp, &cols, &work).expect("every block spans under 2^16");
            assert_eq!(p.base.len(), work.len() / 6);
            for (i, w) in work.chunks_exact(6).enumerate() {
                let (s, e) = (w[2] as usize, w[3] as usize);
                for (k, (&o, &c)) in p.cols[s..e].iter().zip(&cols[s..e]).enumerate() {
                    assert_eq!(p.base[i] + o as i32, c, "entry {}", s + k);
                }
                if w[5] == 0 {
                    for r in w[0] as usize..w[1] as usize {
                        assert_eq!(w[2] + p.ends[r] as i64, rp[r + 1], "row {r}");
                    }
                }
            }
            // One block spanning exactly 2^16 columns: its last offset would not fit.
            let wide = [0i64, 2, 0, 2, 0, 0];
            assert!(pack_columns(&[0, 1, 2], &[3, 3 + PACKED_SPAN as i32 - 1], &wide).is_some());
            assert!(pack_columns(&[0, 1, 2], &[3, 3 + PACKED_SPAN as i32], &wide).is_none());
        }
    }

    #[test]
    fn empty_matrices_make_runs_of_rows() {
        assert!(blocks(&[0]).is_empty());
        let bl = blocks(&vec![0i64; 5001]);
        assert_eq!(bl.len(), 3);
        assert!(bl.iter().all(|b| b[5] == 0 && b[2] == 0 && b[3] == 0));
    }
}
