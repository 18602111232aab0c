//! What the fused B update reads, laid out on the host: the kernel tier for the archetype
//! count, A A^T's per-thread segments, B by cells, and the bound on a K column's cells.

use cudarc::driver::CudaSlice;
use rayon::prelude::*;

use super::super::rows::{Aat, RowBlock};
use super::super::sparse::SpVec;
use crate::kernels::SEACELLS_B_TIERS;
use crate::matrix::Csr;

/// Threads per block of the fused kernel (`257` segment bounds per row of A A^T).
pub(super) const THREADS: usize = 256;
/// A step goes to the fused kernel when more than one column in this many is open to the
/// bound (each open column is then read at every cell by a block of its own).
pub(super) const OPEN_SHARE: usize = 8;
/// Fewest K B rows one block of the fused kernel takes.
pub(super) const MIN_SPAN: usize = 16;

/// Columns per thread for `nm` archetypes: the narrowest tier that holds them, or `None`
/// beyond the widest (the B update then runs in SpMM chunks).
pub fn tier(nm: usize) -> Option<usize> {
    SEACELLS_B_TIERS
        .iter()
        .copied()
        .find(|&w| w * THREADS >= nm)
}

/// Most archetypes the fused kernel takes.
pub fn max_metacells() -> usize {
    SEACELLS_B_TIERS[SEACELLS_B_TIERS.len() - 1] * THREADS
}

/// Where the fused kernel's K A^T and starting K B come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KatSource {
    /// Built on the GPU, M (M X) by rows with the CPU's order of sums.
    Device,
    /// The CPU's row blocks, uploaded: the reference for the device's.
    Host,
}

/// A A^T as sparse rows (zeros dropped) with, per row m and thread t, the first entry at a
/// column of at least t w: `seg[m * 257 + t]`, so thread t's run of row m is
/// `seg[m * 257 + t]..seg[m * 257 + t + 1]`.
#[derive(Debug, PartialEq)]
pub struct SegRows {
    /// 257 bounds per row.
    pub seg: Vec<i32>,
    /// Column of each non-zero, rows one after another.
    pub col: Vec<i32>,
    /// Value of each non-zero.
    pub val: Vec<f64>,
}

impl SegRows {
    /// Rows of `t` for threads owning `w` columns each: every row's non-zeros found in
    /// parallel (the scan reads all N x N entries), then laid end to end.
    pub fn new(t: &Aat, w: usize) -> Self {
        let nm = t.nm();
        let rows: Vec<(Vec<i32>, Vec<f64>, Vec<i32>)> = (0..nm)
            .into_par_iter()
            .map(|m| {
                let (mut col, mut val) = (Vec::new(), Vec::new());
                for (c, &x) in t.row(m).iter().enumerate() {
                    if x != 0.0 {
                        col.push(c as i32);
                        val.push(x);
                    }
                }
                // Each thread's first entry, relative to the row.
                let mut seg = Vec::with_capacity(THREADS + 1);
                let mut k = 0;
                for th in 0..=THREADS {
                    while k < col.len() && (col[k] as usize) < th * w {
                        k += 1;
                    }
                    seg.push(k as i32);
                }
                (col, val, seg)
            })
            .collect();
        let nnz: usize = rows.iter().map(|r| r.0.len()).sum();
        let mut seg = Vec::with_capacity(nm * (THREADS + 1));
        let (mut col, mut val) = (Vec::with_capacity(nnz + 1), Vec::with_capacity(nnz + 1));
        for (c, v, s) in rows {
            let start = col.len() as i32;
            seg.extend(s.iter().map(|&k| start + k));
            col.extend(c);
            val.extend(v);
        }
        // Every array holds an entry, so an all-zero T still has device addresses.
        col.push(0);
        val.push(0.0);
        SegRows { seg, col, val }
    }
}

/// K B's row blocks as one CSR in layout order: (row offsets, column, value).
pub(super) fn flatten(kb: &[RowBlock]) -> (Vec<i64>, Vec<i32>, Vec<f64>) {
    let rows: usize = kb.iter().map(|b| b.rows()).sum();
    let mut ptr = Vec::with_capacity(rows + 1);
    let mut starts = Vec::with_capacity(kb.len());
    let mut at = 0usize;
    ptr.push(0i64);
    for blk in kb {
        starts.push(at);
        for r in 0..blk.rows() {
            ptr.push((at + blk.ptr[r + 1]) as i64);
        }
        at += blk.col.len();
    }
    let (mut col, mut val) = (vec![0i32; at + 1], vec![0.0f64; at + 1]);
    let mut cs: Vec<&mut [i32]> = Vec::with_capacity(kb.len());
    let mut vs: Vec<&mut [f64]> = Vec::with_capacity(kb.len());
    let (mut cr, mut vr) = (&mut col[..at], &mut val[..at]);
    for blk in kb {
        let (c, rest) = std::mem::take(&mut cr).split_at_mut(blk.col.len());
        let (v, vrest) = std::mem::take(&mut vr).split_at_mut(blk.col.len());
        cs.push(c);
        vs.push(v);
        cr = rest;
        vr = vrest;
    }
    cs.into_par_iter()
        .zip(vs)
        .zip(kb)
        .for_each(|((c, v), blk)| {
            for (d, &x) in c.iter_mut().zip(&blk.col) {
                *d = x as i32;
            }
            v.copy_from_slice(&blk.val);
        });
    (ptr, col, val)
}

/// B by cells for the gap terms: row offsets, archetype, the entry's place in B's column-major
/// order, weight; and the column offsets of that order.
pub(super) struct BRows {
    pub(super) ptr: Vec<i64>,
    pub(super) col: Vec<i32>,
    pub(super) pos: Vec<i32>,
    pub(super) w: Vec<f64>,
    pub(super) at: Vec<i64>,
}

impl BRows {
    pub(super) fn new(b: &[SpVec], n: usize) -> Self {
        let mut at = Vec::with_capacity(b.len() + 1);
        at.push(0i64);
        let mut ptr = vec![0i64; n + 1];
        for col in b {
            at.push(at.last().unwrap() + col.len() as i64);
            for &(i, _) in col {
                ptr[i as usize + 1] += 1;
            }
        }
        for i in 0..n {
            ptr[i + 1] += ptr[i];
        }
        let nnz = ptr[n] as usize;
        let mut next = ptr[..n].to_vec();
        let (mut cc, mut pos, mut w) =
            (vec![0i32; nnz + 1], vec![0i32; nnz + 1], vec![0.0; nnz + 1]);
        for (c, col) in b.iter().enumerate() {
            for (q, &(i, x)) in col.iter().enumerate() {
                let p = next[i as usize] as usize;
                cc[p] = c as i32;
                pos[p] = (at[c] + q as i64) as i32;
                w[p] = x;
                next[i as usize] += 1;
            }
        }
        BRows {
            ptr,
            col: cc,
            pos,
            w,
            at,
        }
    }
}

/// -K A^T packed by cells (row offsets by cell, columns ascending).
pub(super) struct NegKat {
    pub(super) ptr: CudaSlice<i64>,
    pub(super) col: CudaSlice<i32>,
    pub(super) val: CudaSlice<f64>,
}

/// Largest hash set (slots) of the K-column expansion: with a sum per slot, 192 KiB of
/// shared memory.
pub(super) const MAX_HASH: usize = 16_384;

/// The most distinct cells two hops from one cell through M (with itself): the bound on one
/// K column's entries.
pub fn two_hop_bound(m: &Csr<f64>) -> usize {
    let n = m.nrows();
    let cols = m.col_idx();
    (0..n)
        .into_par_iter()
        .map_init(
            || (vec![false; n], Vec::new()),
            |(seen, list), p| {
                for q in m.row_range(p) {
                    for r in m.row_range(cols[q] as usize) {
                        let l = cols[r] as usize;
                        if !seen[l] {
                            seen[l] = true;
                            list.push(l);
                        }
                    }
                }
                let k = list.len();
                for &l in list.iter() {
                    seen[l] = false;
                }
                list.clear();
                k
            },
        )
        .max()
        .unwrap_or(0)
        .max(1)
}

/// Whether the K-column expansion's hash set holds a column of at most `bound` cells at three
/// quarters load.
pub fn expansion_fits(bound: usize) -> bool {
    4 * bound <= 3 * MAX_HASH
}

/// Hash slots for columns of at most `bound` cells: a power of two at most three quarters full.
pub(super) fn hash_slots(bound: usize) -> usize {
    (4 * bound)
        .div_ceil(3)
        .next_power_of_two()
        .clamp(256, MAX_HASH)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The narrowest tier holds the archetypes; none beyond 32 columns a thread.
    #[test]
    fn tiers_at_their_bounds() {
        assert_eq!(tier(1), Some(1));
        assert_eq!(tier(256), Some(1));
        assert_eq!(tier(257), Some(2));
        assert_eq!(tier(1_333), Some(8));
        assert_eq!(tier(8_192), Some(32));
        assert_eq!(tier(8_193), None);
        assert_eq!(max_metacells(), 8_192);
    }

    /// The two-hop bound counts each cell once: a path graph's middle cells reach five.
    #[test]
    fn two_hop_bound_of_a_path() {
        let n = 7usize;
        let (mut r, mut c) = (Vec::new(), Vec::new());
        for i in 0..n {
            for j in i.saturating_sub(1)..(i + 2).min(n) {
                r.push(i);
                c.push(j);
            }
        }
        let m = Csr::from_triplets(n, n, &r, &c, &vec![1.0f64; r.len()]).unwrap();
        assert_eq!(two_hop_bound(&m), 5);
        assert!(expansion_fits(3 * MAX_HASH / 4) && !expansion_fits(3 * MAX_HASH / 4 + 1));
        assert_eq!(hash_slots(1), 256);
        assert_eq!(hash_slots(3 * MAX_HASH / 4), MAX_HASH);
        assert!(hash_slots(1_000) >= 1_334);
    }

    /// Each thread's segment of a row holds exactly the row's non-zeros in its columns.
    #[test]
    fn segments_bracket_each_threads_columns() {
        let nm = 700;
        let mut t = vec![0.0; nm * nm];
        for r in 0..nm {
            for c in (r % 5..nm).step_by(3 + r % 7) {
                t[r * nm + c] = 1.0 + (r * nm + c) as f64;
            }
        }
        let p = Aat::new(t.clone(), nm);
        for w in [1usize, 3, 4, 8] {
            let s = SegRows::new(&p, w);
            for r in 0..nm {
                for th in 0..THREADS {
                    let (a, b) = (
                        s.seg[r * 257 + th] as usize,
                        s.seg[r * 257 + th + 1] as usize,
                    );
                    let want: Vec<(i32, f64)> = (th * w..((th + 1) * w).min(nm))
                        .filter(|&c| t[r * nm + c] != 0.0)
                        .map(|c| (c as i32, t[r * nm + c]))
                        .collect();
                    let got: Vec<(i32, f64)> = (a..b).map(|q| (s.col[q], s.val[q])).collect();
                    assert_eq!(got, want, "w {w} row {r} thread {th}");
                }
            }
        }
    }

    /// Flattened row blocks keep every row's entries in order.
    #[test]
    fn flatten_keeps_rows() {
        let blk = |cells: Vec<u32>, ptr: Vec<usize>, col: Vec<u32>| RowBlock {
            cells,
            ptr,
            val: col.iter().map(|&c| c as f64 + 0.5).collect(),
            col,
        };
        let kb = vec![
            blk(vec![3, 0], vec![0, 2, 2], vec![1, 4]),
            blk(vec![], vec![0], vec![]),
            blk(vec![1, 2], vec![0, 1, 3], vec![0, 2, 5]),
        ];
        let (ptr, col, val) = flatten(&kb);
        assert_eq!(ptr, vec![0, 2, 2, 3, 5]);
        assert_eq!(&col[..5], &[1, 4, 0, 2, 5]);
        assert_eq!(&val[..5], &[1.5, 4.5, 0.5, 2.5, 5.5]);
    }

    /// B by cells: each entry's place in the column-major order and the column offsets.
    #[test]
    fn b_rows_place_entries() {
        let b: Vec<SpVec> = vec![vec![(2, 0.5), (0, 0.5)], vec![], vec![(2, 1.0)]];
        let r = BRows::new(&b, 3);
        assert_eq!(r.at, vec![0, 2, 2, 3]);
        assert_eq!(r.ptr, vec![0, 1, 1, 3]);
        assert_eq!(&r.col[..3], &[0, 0, 2]);
        assert_eq!(&r.pos[..3], &[1, 0, 2]);
        assert_eq!(&r.w[..3], &[0.5, 0.5, 1.0]);
    }
}
