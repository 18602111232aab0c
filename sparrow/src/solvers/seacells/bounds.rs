//! The B update's argmin over cells by a lower bound, on the CPU.
//!
//! Every entry of G = K B T - K A^T (T = A A^T) is a sum of non-negative products less one
//! K A^T entry, so G[i, c] >= -(K A^T)[i, c] even as rounded (a rounded sum of non-negative
//! terms is non-negative, and rounding is monotone). Once some cell of column c has a negative
//! G, only the cells whose bound does not exceed it can still win, and those are few: the cells
//! next to archetype c, where K A^T is large. So each column is read by evaluating G at a
//! couple of seed cells, then at the cells of K A^T's column whose bound can still beat the
//! best so far, instead of forming the whole n x N gradient at every step (at 50,000 cells and
//! 666 archetypes, the B update's gradient took 11.9 s instead of 18.3 s on 2 cores). Every G
//! entry is summed in the order a dense reading uses (the K B row's archetypes ascending, then
//! minus K A^T; the GPU's fused kernel sums so), so the picks and gaps are the same bits; a
//! column whose best is not negative is evaluated at the cells of its K A^T column (the only
//! ones where G can be negative), and at every cell only when none of those is (or any column
//! when T has a negative entry).

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use rayon::prelude::*;

use super::rows::{Aat, Layout, RowBlock, BLOCK_ROWS};
use super::sparse::SpVec;

/// Columns of T per transpose task.
const TILE: usize = 64;

/// T = A A^T by columns (row c holds column c of T), and whether every entry is non-negative,
/// which the bound needs. A column serves one G entry's dot product; T's rows ([`Aat`]) serve
/// `LANES` of a cell's entries at once (see `Ctx::g_lanes`).
pub struct TCols {
    t: Vec<f64>,
    nm: usize,
    nonneg: bool,
}

impl TCols {
    /// From T as the B update holds it: a transpose in tiles of [`TILE`] columns, one tile of
    /// T's columns per task, each read a row segment at a time (N x N is 1.4 GB at 13,333
    /// archetypes, too much for one thread on every B update).
    pub fn new(t: &Aat) -> Self {
        let nm = t.nm();
        let mut tt = vec![0.0f64; nm * nm];
        let nonneg = AtomicBool::new(true);
        tt.par_chunks_mut((nm * TILE).max(1))
            .enumerate()
            .for_each(|(k, out)| {
                let c0 = k * TILE;
                let mut neg = false;
                for r in 0..nm {
                    let seg = &t.row(r)[c0..c0 + out.len() / nm];
                    for (d, &x) in seg.iter().enumerate() {
                        out[d * nm + r] = x;
                        neg |= x < 0.0 || x.is_nan();
                    }
                }
                if neg {
                    nonneg.store(false, Relaxed);
                }
            });
        TCols {
            t: tt,
            nm,
            nonneg: nonneg.into_inner(),
        }
    }

    fn col(&self, c: usize) -> &[f64] {
        &self.t[c * self.nm..(c + 1) * self.nm]
    }

    /// T's columns one after another (`nm * nm`).
    pub fn data(&self) -> &[f64] {
        &self.t
    }

    /// Whether every entry of T is non-negative.
    pub fn nonneg(&self) -> bool {
        self.nonneg
    }
}

/// What a step's reading reads.
struct Ctx<'a> {
    kb: &'a [RowBlock],
    kat: &'a [RowBlock],
    t: &'a TCols,
    aat: &'a Aat,
    lay: &'a Layout,
}

impl Ctx<'_> {
    /// G[i, c] for the cell at layout position p, with (K A^T)[i, c] = `kat` (when stored),
    /// summed as a dense reading of the row would (archetypes ascending, then -K A^T).
    #[inline]
    fn g(&self, p: usize, c: usize, kat: Option<f64>) -> f64 {
        let (mc, mv) = self.kb[p / BLOCK_ROWS].row(p % BLOCK_ROWS);
        let tc = self.t.col(c);
        let mut s = 0.0f64;
        for (&m, &v) in mc.iter().zip(mv) {
            s += v * tc[m as usize];
        }
        match kat {
            Some(k) => s + -k,
            None => s,
        }
    }

    /// G[i, c] for the cell at layout position p and the N columns `cs`, with
    /// (K A^T)[i, c] = `kat[j]` for column `cs[j]`, into `out`: each entry summed in the order
    /// of [`Ctx::g`], so the same bits, but the N sums advance together through the K B row
    /// instead of one dependent chain of additions after another.
    #[inline(always)]
    fn g_lanes<const N: usize>(&self, p: usize, cs: &[u32], kat: &[Option<f64>], out: &mut [f64]) {
        let (mc, mv) = self.kb[p / BLOCK_ROWS].row(p % BLOCK_ROWS);
        let nm = self.t.nm;
        let mut at = [0usize; N];
        for (a, &c) in at.iter_mut().zip(cs) {
            *a = c as usize;
        }
        // Columns are archetypes, below T's side: checked once per call.
        assert!(at.iter().all(|&a| a < nm));
        let mut s = [0.0f64; N];
        for (&m, &v) in mc.iter().zip(mv) {
            let tr = self.aat.row(m as usize);
            for q in 0..N {
                s[q] += v * tr[at[q]];
            }
        }
        for q in 0..N {
            out[q] = match kat[q] {
                Some(k) => s[q] + -k,
                None => s[q],
            };
        }
    }

    /// For the cell at layout position p (cell i): G at every column of `cs` (with K A^T
    /// entries `kat`), each kept in `best` where it beats the column's best so far.
    fn offer_row(
        &self,
        p: usize,
        i: u32,
        cs: &[u32],
        kat: &[Option<f64>],
        best: &mut [(f64, u32)],
    ) {
        let mut g = [0.0f64; LANES];
        let mut at = 0;
        while at < cs.len() {
            let (c, k) = (&cs[at..], &kat[at..]);
            let n = match c.len() {
                l if l >= 8 => {
                    self.g_lanes::<8>(p, c, k, &mut g);
                    8
                }
                l if l >= 4 => {
                    self.g_lanes::<4>(p, c, k, &mut g);
                    4
                }
                l if l >= 2 => {
                    self.g_lanes::<2>(p, c, k, &mut g);
                    2
                }
                _ => {
                    self.g_lanes::<1>(p, c, k, &mut g);
                    1
                }
            };
            for (&c, &gv) in c[..n].iter().zip(&g) {
                let b = &mut best[c as usize];
                if better(gv, i, *b) {
                    *b = (gv, i);
                }
            }
            at += n;
        }
    }

    /// (K A^T)[i, c] for the cell at layout position p, if stored.
    fn kat_at(&self, p: usize, c: usize) -> Option<f64> {
        let (kc, kv) = self.kat[p / BLOCK_ROWS].row(p % BLOCK_ROWS);
        kc.binary_search(&(c as u32)).ok().map(|q| kv[q])
    }

    /// G[i, c] for cell i.
    fn g_cell(&self, i: u32, c: usize) -> f64 {
        let p = self.lay.pos[i as usize] as usize;
        self.g(p, c, self.kat_at(p, c))
    }
}

/// Most G entries of one cell evaluated together by [`Ctx::g_lanes`].
const LANES: usize = 8;

/// (value, cell) ordering: the smaller value, then the lower cell.
#[inline]
fn better(g: f64, i: u32, best: (f64, u32)) -> bool {
    g < best.0 || (g == best.0 && i < best.1)
}

/// One Frank-Wolfe step's reading of the B gradient G = K B T - K A^T (T = A A^T): per
/// column c, the lowest cell with the smallest G[i, c] (cells no product reaches are zeros) and
/// the duality-gap share sum_i B[i, c] G[i, c] - min_i G[i, c].
///
/// `kb` and `kat` are K B and K A^T in the layout's row blocks (both non-negative, as
/// products of the kernel's weights with convex combinations are), `b` is B as sorted
/// columns, `t` and `aat` are T by columns and by rows, `seeds` are cells to evaluate first for each column (such as the last step's
/// pick and the cell with the largest K A^T entry).
pub fn pick_bounded(
    kb: &[RowBlock],
    kat: &[RowBlock],
    b: &[SpVec],
    t: &TCols,
    aat: &Aat,
    seeds: &[Vec<u32>],
    lay: &Layout,
) -> Vec<(u32, f64)> {
    let cx = Ctx {
        kb,
        kat,
        t,
        aat,
        lay,
    };
    let nm = b.len();
    let n = lay.pos.len();
    // Per column: the gap's dot over B's cells, and the best of the seeds and B's cells,
    // whose value bounds which cells can still win.
    let first: Vec<(f64, (f64, u32))> = (0..nm)
        .into_par_iter()
        .map(|c| {
            let mut best = (f64::INFINITY, u32::MAX);
            let terms: Vec<f64> = b[c]
                .iter()
                .map(|&(i, w)| {
                    let g = cx.g_cell(i, c);
                    if better(g, i, best) {
                        best = (g, i);
                    }
                    w * g
                })
                .collect();
            for &i in seeds.get(c).map_or(&[][..], |s| &s[..]) {
                if (i as usize) < n {
                    let g = cx.g_cell(i, c);
                    if better(g, i, best) {
                        best = (g, i);
                    }
                }
            }
            (terms.iter().sum(), best)
        })
        .collect();
    let mut out: Vec<(f64, u32)> = first.iter().map(|f| f.1).collect();
    if t.nonneg {
        // A column whose best so far is negative is read by the bound: only cells with a
        // K A^T entry of at least -best can reach it. Any other column is first read at every
        // cell with a K A^T entry (a bound of 0), as only those can have a negative G.
        let bound: Vec<f64> = first.iter().map(|f| f.1 .0.min(0.0)).collect();
        merge_best(&mut out, &read_rows(&cx, Some(&bound), &[]));
    }
    // Columns still without a negative G (or any column when T has a negative entry): the
    // smallest may be at a cell without a K A^T entry, so every cell is read.
    let open: Vec<u32> = (0..nm as u32)
        .filter(|&c| !t.nonneg || out[c as usize].0 >= 0.0)
        .collect();
    if !open.is_empty() {
        merge_best(&mut out, &read_rows(&cx, None, &open));
    }
    out.iter()
        .zip(&first)
        .map(|(&(low, i), f)| (if i == u32::MAX { 0 } else { i }, f.0 - low))
        .collect()
}

/// Per column, the best G over the cells read: at each cell, the columns of its K A^T row
/// under `bound` (when given) and every column of `open`.
fn read_rows(cx: &Ctx, bound: Option<&[f64]>, open: &[u32]) -> Vec<(f64, u32)> {
    let nm = cx.t.nm;
    let parts: Vec<Vec<(f64, u32)>> = cx
        .kat
        .par_iter()
        .enumerate()
        .map(|(blk, kat_blk)| {
            let mut best = vec![(f64::INFINITY, u32::MAX); nm];
            let (mut cs, mut ks) = (Vec::new(), Vec::new());
            for r in 0..kat_blk.rows() {
                let p = blk * BLOCK_ROWS + r;
                let i = kat_blk.cells[r];
                if let Some(bound) = bound {
                    let (kc, kv) = kat_blk.row(r);
                    // Every entry written, the next slot advanced only for those under the
                    // bound: about one entry in ten passes, a branch the processor cannot
                    // predict.
                    cs.resize(kc.len(), 0);
                    ks.resize(kc.len(), None);
                    let mut n = 0;
                    for (&c, &k) in kc.iter().zip(kv) {
                        cs[n] = c;
                        ks[n] = Some(k);
                        n += (-k <= bound[c as usize]) as usize;
                    }
                    cx.offer_row(p, i, &cs[..n], &ks[..n], &mut best);
                }
                if !open.is_empty() {
                    ks.clear();
                    ks.extend(open.iter().map(|&c| cx.kat_at(p, c as usize)));
                    cx.offer_row(p, i, open, &ks, &mut best);
                }
            }
            best
        })
        .collect();
    let mut out = vec![(f64::INFINITY, u32::MAX); nm];
    for part in &parts {
        merge_best(&mut out, part);
    }
    out
}

/// Keeps in `out` the better of each column's two bests.
fn merge_best(out: &mut [(f64, u32)], other: &[(f64, u32)]) {
    for (o, &(g, i)) in out.iter_mut().zip(other) {
        if better(g, i, *o) {
            *o = (g, i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Rng;
    use crate::solvers::seacells::rows::tests::{case, columnwise};
    use crate::solvers::seacells::rows::{blocks_of, kat_blocks};
    use crate::solvers::seacells::sparse::kb_cols;
    use crate::solvers::seacells::rows::transpose;

    #[test]
    fn t_columns_are_the_transpose_across_tiles() {
        for nm in [1, 63, 64, 65, 130] {
            for nonneg in [true, false] {
                let t = random_t(nm, nonneg, nm as u64);
                let tc = TCols::new(&Aat::new(t.clone(), nm));
                for r in 0..nm {
                    for c in 0..nm {
                        assert_eq!(tc.col(c)[r], t[r * nm + c], "N {nm}, ({r}, {c})");
                    }
                }
                assert_eq!(tc.nonneg, t.iter().all(|&x| x >= 0.0), "N {nm}");
            }
        }
    }

    /// A random T: non-negative (the bound reads it) or with negative entries (every column
    /// read at every cell), with zeros as A A^T has where archetypes share no cell.
    fn random_t(nm: usize, nonneg: bool, seed: u64) -> Vec<f64> {
        let mut rng = Rng::new(seed);
        let low = if nonneg { 0.0 } else { -0.5 };
        (0..nm * nm)
            .map(|_| {
                if rng.below(3) == 0 {
                    0.0
                } else {
                    rng.range_f64(low, 1.0)
                }
            })
            .collect()
    }

    #[test]
    fn pick_bounded_is_the_columnwise_reading_bit_for_bit() {
        for (n, nm) in [(1300, 70), (600, 9), (40, 1)] {
            let (m, a, b) = case(n, nm);
            let lay = Layout::by_archetype(&a);
            let kb = kb_cols(&m, &b);
            let kat = kb_cols(&m, &transpose(&a, nm));
            let (kbb, katb) = (blocks_of(&kb, &lay), kat_blocks(&m, &a, nm, &lay));
            for nonneg in [true, false] {
                let t = random_t(nm, nonneg, 9);
                let want = columnwise(&kb, &kat, &b, &t, n);
                let aat = Aat::new(t.clone(), nm);
                let tc = TCols::new(&aat);
                assert_eq!(tc.nonneg, t.iter().all(|&x| x >= 0.0));
                assert!(nm < 9 || tc.nonneg == nonneg);
                // No seeds, good seeds (the answers), poor ones (the last cell), and seeds
                // past the last cell (ignored).
                let seed_sets: Vec<Vec<Vec<u32>>> = vec![
                    vec![],
                    want.iter().map(|w| vec![w.0]).collect(),
                    (0..nm).map(|_| vec![n as u32 - 1]).collect(),
                    (0..nm).map(|_| vec![n as u32 + 5, 0]).collect(),
                ];
                for seeds in &seed_sets {
                    let got = pick_bounded(&kbb, &katb, &b, &tc, &aat, seeds, &lay);
                    assert_eq!(got, want, "n {n}, N {nm}, non-negative {nonneg}");
                }
            }
        }
    }

    /// The bound's reading keeps the lowest cell among equal smallest values: two cells with
    /// the same K B and K A^T rows, far from each other in the layout.
    #[test]
    fn ties_under_the_bound_go_to_the_lowest_cell() {
        let (n, nm) = (1100, 12);
        let (m, a, b) = case(n, nm);
        let lay = Layout::by_archetype(&a);
        let mut kb = kb_cols(&m, &b);
        let mut kat = kb_cols(&m, &transpose(&a, nm));
        // Cell `hi`'s rows copied to cell `lo`, and both made every column's most negative.
        let (lo, hi) = (lay.order[n - 1], lay.order[0]);
        let (lo, hi) = (lo.min(hi), lo.max(hi));
        for col in kb.iter_mut() {
            let v = col.iter().find(|e| e.0 == hi).map(|e| e.1);
            col.retain(|e| e.0 != lo);
            if let Some(v) = v {
                col.push((lo, v));
            }
            col.sort_by_key(|e| e.0);
        }
        for col in kat.iter_mut() {
            col.retain(|e| e.0 != lo && e.0 != hi);
            col.extend([(lo, 1e6), (hi, 1e6)]);
            col.sort_by_key(|e| e.0);
        }
        let t = random_t(nm, true, 4);
        let want = columnwise(&kb, &kat, &b, &t, n);
        assert!(want.iter().all(|w| w.0 == lo), "{want:?}");
        let (kbb, katb) = (blocks_of(&kb, &lay), blocks_of(&kat, &lay));
        let aat = Aat::new(t, nm);
        let tc = TCols::new(&aat);
        for seeds in [vec![], vec![vec![hi]; nm]] {
            assert_eq!(pick_bounded(&kbb, &katb, &b, &tc, &aat, &seeds, &lay), want);
        }
    }

    /// K A^T stored as zeros: no G is negative, so after the cells of each K A^T column every
    /// cell is read, and the smallest (zero, at the lowest cell with a zero K B T entry) lies
    /// outside K A^T's columns for some archetypes.
    #[test]
    fn columns_without_a_negative_entry_are_read_at_every_cell() {
        let (n, nm) = (1300, 70);
        let (m, a, b) = case(n, nm);
        let lay = Layout::by_archetype(&a);
        let kb = kb_cols(&m, &b);
        let mut kat = kb_cols(&m, &transpose(&a, nm));
        kat.iter_mut().flatten().for_each(|e| e.1 = 0.0);
        let t = random_t(nm, true, 2);
        let want = columnwise(&kb, &kat, &b, &t, n);
        assert!(
            want.iter()
                .zip(&kat)
                .any(|(w, col)| col.iter().all(|e| e.0 != w.0)),
            "some pick lies outside its K A^T column"
        );
        let aat = Aat::new(t, nm);
        let tc = TCols::new(&aat);
        let (kbb, katb) = (blocks_of(&kb, &lay), blocks_of(&kat, &lay));
        assert_eq!(pick_bounded(&kbb, &katb, &b, &tc, &aat, &[], &lay), want);
    }

    /// A gradient of zeros everywhere: every column's argmin is the lowest cell, wherever the
    /// layout puts it.
    #[test]
    fn zeros_go_to_the_lowest_cell() {
        let (n, nm) = (1100, 12);
        let (m, a, b) = case(n, nm);
        let lay = Layout::by_archetype(&a);
        assert_ne!(lay.order[0], 0, "the layout moves cell 0");
        let empty: Vec<RowBlock> = blocks_of(&vec![Vec::new(); nm], &lay);
        let kb = blocks_of(&kb_cols(&m, &b), &lay);
        let aat = Aat::new(vec![0.0; nm * nm], nm);
        let tc = TCols::new(&aat);
        let got = pick_bounded(&kb, &empty, &b, &tc, &aat, &[], &lay);
        assert!(got.iter().all(|&(i, gap)| i == 0 && gap == 0.0), "{got:?}");
    }
}
