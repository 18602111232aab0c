//! The Frank-Wolfe updates of SEACells, with every n x N matrix sparse.
//!
//! B (n x N) is held as sparse columns (cells per archetype), A (N x n) as sparse columns
//! (archetypes per cell), K B as sparse columns over cells; N x N matrices (A A^T, B^T K B)
//! are dense. As the reference, both solves restart from a vertex: the first step has
//! gamma = 2 / (0 + 2) = 1, so the previous iterate only sets the first gradient.

use std::collections::HashMap;
use std::time::Instant;

use rayon::prelude::*;

use super::bounds::{pick_bounded, TCols};
use super::rows::{blend_blocks, blocks_of, cols_of, kat_blocks, Aat, Layout, RowBlock};
pub use super::sparse::kb_cols;
use super::rows::transpose;
use super::sparse::{add_k_col, blend, lookup, Accum, SpVec};
use crate::matrix::Csr;
use crate::Result;

/// Atoms lighter than this are dropped from an A column (and the rest renormalised).
pub const PRUNE: f64 = 1e-7;

/// t1 = B^T (K B), dense N x N row-major; `b_rows` holds B by cells (archetype, weight).
pub fn btkb(kb: &[SpVec], b_rows: &[SpVec]) -> Vec<f64> {
    let nm = kb.len();
    let cols: Vec<Vec<f64>> = kb
        .par_iter()
        .map(|col| {
            let mut t = vec![0.0; nm];
            for &(i, v) in col {
                for &(m, w) in &b_rows[i as usize] {
                    t[m as usize] += w * v;
                }
            }
            t
        })
        .collect();
    let mut out = vec![0.0; nm * nm];
    for (c, col) in cols.iter().enumerate() {
        for (m, &v) in col.iter().enumerate() {
            out[m * nm + c] = v;
        }
    }
    out
}

/// The A update: for every cell, `steps` Frank-Wolfe steps on the archetypes,
/// `argmin_c (w[c] - (K B)[cell, c])` with `w = t1 a` (ties to the lowest c), atoms pruned below
/// [`PRUNE`]. `prev` is the previous A (per cell); `None` starts every cell from uniform
/// weights over the archetypes.
pub fn update_a(
    kb_rows: &[SpVec],
    t1: &[f64],
    nm: usize,
    prev: Option<&[SpVec]>,
    steps: usize,
) -> Vec<SpVec> {
    let w0: Vec<f64> = (0..nm)
        .map(|m| t1[m * nm..(m + 1) * nm].iter().sum::<f64>() / nm as f64)
        .collect();
    (0..kb_rows.len())
        .into_par_iter()
        .map_init(
            || (vec![0.0; nm], vec![0.0; nm]),
            |(w, kb), i| {
                match prev {
                    Some(p) => {
                        w.iter_mut().for_each(|x| *x = 0.0);
                        for &(a, wt) in &p[i] {
                            let row = &t1[a as usize * nm..(a as usize + 1) * nm];
                            w.iter_mut().zip(row).for_each(|(x, t)| *x += wt * t);
                        }
                    }
                    None => w.copy_from_slice(&w0),
                }
                for &(c, v) in &kb_rows[i] {
                    kb[c as usize] = v;
                }
                let atoms = a_steps(w, kb, t1, nm, steps);
                for &(c, _) in &kb_rows[i] {
                    kb[c as usize] = 0.0;
                }
                atoms
            },
        )
        .collect()
}

crate::simd::multiversion! {
/// One cell's Frank-Wolfe steps of [`update_a`] from the gradient state `w` (changed) and
/// the cell's K B row `kb` (dense): the atoms, sorted.
fn a_steps(w: &mut [f64], kb: &[f64], t1: &[f64], nm: usize, steps: usize) -> Vec<(u32, f64)> {
    let mut atoms: Vec<(u32, f64)> = Vec::new();
    for t in 0..steps {
        let c = argmin_diff(w, kb);
        let gamma = 2.0 / (t as f64 + 2.0);
        for a in atoms.iter_mut() {
            a.1 *= 1.0 - gamma;
        }
        match atoms.iter_mut().find(|a| a.0 as usize == c) {
            Some(a) => a.1 += gamma,
            None => atoms.push((c as u32, gamma)),
        }
        let row = &t1[c * nm..(c + 1) * nm];
        w.iter_mut()
            .zip(row)
            .for_each(|(x, tv)| *x = (1.0 - gamma) * *x + gamma * tv);
        if atoms.iter().any(|a| a.1 < PRUNE) {
            // Drop the light atoms with their rank-1 terms, then renormalise.
            for a in atoms.iter().filter(|a| a.1 < PRUNE) {
                let r = &t1[a.0 as usize * nm..(a.0 as usize + 1) * nm];
                w.iter_mut().zip(r).for_each(|(x, tv)| *x -= a.1 * tv);
            }
            atoms.retain(|a| a.1 >= PRUNE);
            let s: f64 = atoms.iter().map(|a| a.1).sum();
            atoms.iter_mut().for_each(|a| a.1 /= s);
            w.iter_mut().for_each(|x| *x /= s);
        }
    }
    atoms.sort_unstable_by_key(|a| a.0);
    atoms.shrink_to_fit();
    atoms
}
}

/// A A^T, dense N x N row-major, from A by cells (the B update's t1, on both backends). Rows
/// are summed in parallel, each over its archetype's cells in ascending order, the order of a
/// serial pass over the cells.
pub fn a_at(a: &[SpVec], nm: usize) -> Vec<f64> {
    let by_arch = transpose(a, nm);
    let mut aat = vec![0.0; nm * nm];
    aat.par_chunks_mut(nm.max(1))
        .zip(by_arch.par_iter())
        .for_each(|(row, cells)| {
            for &(i, wp) in cells {
                for &(q, wq) in &a[i as usize] {
                    row[q as usize] += wp * wq;
                }
            }
        });
    aat
}

/// The lowest c with the smallest w[c] - kb[c] (0 when none is below +inf), as a serial scan
/// with a strict comparison finds it: eight interleaved lanes each keep their smallest value
/// and the first c that reached it, so the scan vectorises in one pass; the answer is the
/// lowest such c among the lanes that hold the overall smallest.
#[inline(always)]
fn argmin_diff(w: &[f64], kb: &[f64]) -> usize {
    let mut m = [f64::INFINITY; 8];
    let mut at = [0u64; 8];
    let mut chunks = w.chunks_exact(8).zip(kb.chunks_exact(8));
    let mut base = 0u64;
    for (a, b) in &mut chunks {
        for q in 0..8 {
            let g = a[q] - b[q];
            let take = g < m[q];
            m[q] = if take { g } else { m[q] };
            at[q] = if take { base + q as u64 } else { at[q] };
        }
        base += 8;
    }
    let tail = w.len() - w.len() % 8;
    for c in tail..w.len() {
        let g = w[c] - kb[c];
        if g < m[0] {
            m[0] = g;
            at[0] = c as u64;
        }
    }
    let low = m
        .iter()
        .fold(f64::INFINITY, |x, &y| if y < x { y } else { x });
    if low == f64::INFINITY {
        return 0;
    }
    m.iter()
        .zip(&at)
        .filter(|(&v, _)| v == low)
        .map(|(_, &c)| c)
        .min()
        .unwrap_or(0) as usize
}

/// What the B update did.
#[derive(Clone, Debug)]
pub struct BUpdate {
    /// B's columns (cells per archetype).
    pub b: Vec<SpVec>,
    /// K B's columns for the new B.
    pub kb: Vec<SpVec>,
    /// Steps taken.
    pub steps: usize,
    /// Seconds by part (see [`BSteps::parts`]).
    pub parts: Vec<(&'static str, f64)>,
}

/// The B update: per archetype, Frank-Wolfe on G = K B (A A^T) - K A^T over the cells (ties
/// to the lowest cell; cells where G has no entry are zeros), stopped when the duality gap
/// sum(B * G) - sum_c min_i G[i, c] falls below `gap_tol` of its first value after at least
/// `min_steps` steps, or after `steps`.
pub fn update_b(
    m: &Csr<f64>,
    a: &[SpVec],
    b_prev: &[SpVec],
    steps: usize,
    min_steps: usize,
    gap_tol: f64,
) -> BUpdate {
    update_b_with(
        m,
        a,
        b_prev,
        steps,
        min_steps,
        gap_tol,
        &mut CpuSteps::default(),
    )
    .expect("the CPU's reading of the gradient does not fail")
}

/// Where the B update's steps run: each step reads the gradient G = K B (A A^T) - K A^T to
/// every archetype's lowest cell with the smallest G[i, c] and its gap share
/// sum_i B[i, c] G[i, c] - min_i G[i, c] (see [`pick_bounded`]), then blends K B with the picked
/// cells' columns of K. B itself and the stop rule stay with [`update_b_with`], the same on
/// every backend.
pub trait BSteps {
    /// Called before the first step of every B update with A, the starting B, A A^T and the
    /// cell layout; it builds K A^T and the starting K B where its steps read them.
    fn begin(
        &mut self,
        m: &Csr<f64>,
        a: &[SpVec],
        b: &[SpVec],
        aat: &Aat,
        lay: &Layout,
    ) -> Result<()>;
    /// One step's picks for B (sorted columns).
    fn pick(&mut self, b: &[SpVec], aat: &Aat, lay: &Layout) -> Result<Vec<(u32, f64)>>;
    /// K B <- (1 - gamma) K B + gamma K[:, picks], as [`blend_blocks`].
    fn advance(
        &mut self,
        m: &Csr<f64>,
        picks: &[(u32, f64)],
        gamma: f64,
        lay: &Layout,
    ) -> Result<()>;
    /// K B's columns after the last step.
    fn finish(&mut self, lay: &Layout, nm: usize) -> Result<Vec<SpVec>>;
    /// Seconds by part since this was made; by default none, and the update reports "begin",
    /// "gradient", "kb-blend" and "finish" as it timed them (after its own "prepare-aat",
    /// "prepare-layout" and "b-blend").
    fn parts(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
}

/// [`BSteps`] on the CPU: K A^T and K B in row blocks, [`pick_bounded`] and [`blend_blocks`].
#[derive(Default)]
pub struct CpuSteps {
    kat: Vec<RowBlock>,
    t: Option<TCols>,
    kb: Vec<RowBlock>,
    spare: Vec<RowBlock>,
    /// Per archetype, the cells read first: the cell with the largest K A^T entry and the last
    /// step's pick.
    seeds: Vec<Vec<u32>>,
    /// K's columns of the cells picked since `begin`, by cell: Frank-Wolfe returns to cells
    /// it picked before (about two picks in three on the benchmark mixtures), and a column
    /// costs two hops through M.
    kcols: HashMap<u32, SpVec>,
}

/// Cached K columns per archetype at most; past that the cache starts again, so it stays a
/// small multiple of K B.
const KCOLS_PER_ARCHETYPE: usize = 16;

impl BSteps for CpuSteps {
    fn begin(
        &mut self,
        m: &Csr<f64>,
        a: &[SpVec],
        b: &[SpVec],
        aat: &Aat,
        lay: &Layout,
    ) -> Result<()> {
        self.kat = kat_blocks(m, a, aat.nm(), lay);
        self.t = Some(TCols::new(aat));
        self.kb = blocks_of(&kb_cols(m, b), lay);
        self.spare = Vec::new();
        self.kcols.clear();
        let mut top = vec![(f64::NEG_INFINITY, u32::MAX); aat.nm()];
        for blk in &self.kat {
            for (r, &i) in blk.cells.iter().enumerate() {
                let (kc, kv) = blk.row(r);
                for (&c, &k) in kc.iter().zip(kv) {
                    if k > top[c as usize].0 {
                        top[c as usize] = (k, i);
                    }
                }
            }
        }
        self.seeds = top
            .iter()
            .map(|&(_, i)| if i == u32::MAX { vec![] } else { vec![i] })
            .collect();
        Ok(())
    }

    fn pick(&mut self, b: &[SpVec], aat: &Aat, lay: &Layout) -> Result<Vec<(u32, f64)>> {
        let t = self.t.get_or_insert_with(|| TCols::new(aat));
        Ok(pick_bounded(
            &self.kb,
            &self.kat,
            b,
            t,
            aat,
            &self.seeds,
            lay,
        ))
    }

    fn advance(
        &mut self,
        m: &Csr<f64>,
        picks: &[(u32, f64)],
        gamma: f64,
        lay: &Layout,
    ) -> Result<()> {
        // The picked cells' K columns, blended into K B's rows block by block.
        for (s, p) in self.seeds.iter_mut().zip(picks) {
            s.truncate(1);
            s.push(p.0);
        }
        let mut cells: Vec<u32> = picks.iter().map(|p| p.0).collect();
        cells.sort_unstable();
        cells.dedup();
        if self.kcols.len() + cells.len() > KCOLS_PER_ARCHETYPE * picks.len().max(1) {
            self.kcols.clear();
        }
        let missing: Vec<u32> = cells
            .into_iter()
            .filter(|c| !self.kcols.contains_key(c))
            .collect();
        let n = m.nrows();
        let fresh: Vec<(u32, SpVec)> = missing
            .par_iter()
            .map_init(
                || Accum::new(n),
                |acc, &cell| {
                    add_k_col(m, cell as usize, 1.0, acc);
                    (cell, acc.take_unsorted())
                },
            )
            .collect();
        self.kcols.extend(fresh);
        let kcols: Vec<&SpVec> = picks.iter().map(|p| &self.kcols[&p.0]).collect();
        blend_blocks(&mut self.kb, &mut self.spare, &kcols, gamma, lay);
        Ok(())
    }

    fn finish(&mut self, lay: &Layout, nm: usize) -> Result<Vec<SpVec>> {
        self.spare = Vec::new();
        self.kcols = HashMap::new();
        Ok(cols_of(&self.kb, lay, nm))
    }
}

/// [`update_b`] with its steps run by `steps_on`.
pub fn update_b_with(
    m: &Csr<f64>,
    a: &[SpVec],
    b_prev: &[SpVec],
    steps: usize,
    min_steps: usize,
    gap_tol: f64,
    steps_on: &mut dyn BSteps,
) -> Result<BUpdate> {
    let nm = b_prev.len();
    let clock = Instant::now();
    let aat = Aat::new(a_at(a, nm), nm);
    let t_aat = clock.elapsed().as_secs_f64();
    let clock = Instant::now();
    // K B and K A^T by cells, the cells laid out by their heaviest archetype.
    let lay = Layout::by_archetype(a);
    let t_layout = clock.elapsed().as_secs_f64();
    let mut b: Vec<SpVec> = b_prev.to_vec();
    let clock = Instant::now();
    steps_on.begin(m, a, &b, &aat, &lay)?;
    let t_begin = clock.elapsed().as_secs_f64();
    let mut gap0 = 0.0;
    let mut taken = 0;
    let (mut t_pick, mut t_blend, mut t_bblend) = (0.0, 0.0, 0.0);
    for t in 0..steps {
        // Per archetype: the argmin cell and its share of the gap.
        let clock = Instant::now();
        let picks = steps_on.pick(&b, &aat, &lay)?;
        t_pick += clock.elapsed().as_secs_f64();
        let gap: f64 = picks.iter().map(|p| p.1).sum();
        if t == 0 {
            gap0 = gap;
        }
        if t >= min_steps && gap <= gap_tol * gap0 {
            break;
        }
        let clock = Instant::now();
        let gamma = 2.0 / (t as f64 + 2.0);
        b.par_iter_mut()
            .zip(picks.par_iter())
            .for_each(|(bc, pick)| {
                *bc = blend(bc, &[(pick.0, 1.0)], gamma);
            });
        t_bblend += clock.elapsed().as_secs_f64();
        let clock = Instant::now();
        steps_on.advance(m, &picks, gamma, &lay)?;
        t_blend += clock.elapsed().as_secs_f64();
        taken = t + 1;
    }
    let clock = Instant::now();
    let kb = steps_on.finish(&lay, nm)?;
    let t_finish = clock.elapsed().as_secs_f64();
    let mut parts = vec![
        ("prepare-aat", t_aat),
        ("prepare-layout", t_layout),
        ("b-blend", t_bblend),
    ];
    let own = parts.len();
    parts.extend(steps_on.parts());
    if parts.len() == own {
        parts.extend([
            ("begin", t_begin),
            ("gradient", t_pick),
            ("kb-blend", t_blend),
            ("finish", t_finish),
        ]);
    }
    Ok(BUpdate {
        b,
        kb,
        steps: taken,
        parts,
    })
}

/// ||M - M B A||_F by the trace identity (M symmetric, K = M M):
/// tr(K) - 2 tr(K B A) + tr(A^T (B^T K B) A), accumulated in f64.
pub fn rss(tr_k: f64, kb: &[SpVec], a: &[SpVec], t1: &[f64]) -> f64 {
    let nm = kb.len();
    // Per-cell terms summed in cell order, so the result does not depend on the threads.
    let terms: Vec<(f64, f64)> = a
        .par_iter()
        .enumerate()
        .map(|(i, col)| {
            let mut cross = 0.0;
            let mut quad = 0.0;
            for &(c, w) in col {
                cross += w * lookup(&kb[c as usize], i as u32);
                for &(d, v) in col {
                    quad += w * v * t1[c as usize * nm + d as usize];
                }
            }
            (cross, quad)
        })
        .collect();
    let (cross, quad) = terms.iter().fold((0.0, 0.0), |x, y| (x.0 + y.0, x.1 + y.1));
    (tr_k - 2.0 * cross + quad).max(0.0).sqrt()
}

/// tr(K) = ||M||_F^2.
pub fn trace_k(m: &Csr<f64>) -> f64 {
    m.values().iter().map(|v| v * v).sum()
}

#[cfg(test)]
mod tests {
    use super::{a_at, argmin_diff, SpVec};

    /// The serial scan it replaces: strict comparison from +inf, index 0 when nothing is below.
    fn serial(w: &[f64], kb: &[f64]) -> usize {
        let mut best = (0usize, f64::INFINITY);
        for c in 0..w.len() {
            let g = w[c] - kb[c];
            if g < best.1 {
                best = (c, g);
            }
        }
        best.0
    }

    /// The row-parallel A A^T is the serial pass over the cells bit for bit.
    #[test]
    fn a_at_is_the_serial_pass() {
        let nm = 9;
        let a: Vec<SpVec> = (0..200u32)
            .map(|i| {
                let mut v: SpVec = (0..1 + i % 4)
                    .map(|k| {
                        (
                            (i * 7 + k * 3) % nm as u32,
                            0.1 + ((i * 13 + k) % 17) as f64 / 7.0,
                        )
                    })
                    .collect();
                v.sort_by_key(|e| e.0);
                v.dedup_by_key(|e| e.0);
                v
            })
            .collect();
        let mut want = vec![0.0; nm * nm];
        for col in &a {
            for &(p, wp) in col {
                for &(q, wq) in col {
                    want[p as usize * nm + q as usize] += wp * wq;
                }
            }
        }
        assert_eq!(a_at(&a, nm), want);
    }

    #[test]
    fn argmin_diff_is_the_serial_scan() {
        let cases: Vec<Vec<f64>> = vec![
            vec![3.0, 1.0, 2.0, 1.0, 5.0, 1.0, 0.5, 0.5, 9.0],
            vec![0.0, -0.0, 1.0, -0.0, 0.0],
            vec![f64::NAN, 2.0, f64::NAN, 2.0, 7.0, 2.0],
            vec![f64::NAN, f64::INFINITY, f64::NAN],
            vec![4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, -1.0],
            vec![2.0],
            vec![],
        ];
        for w in cases {
            let kb = vec![0.0; w.len()];
            assert_eq!(argmin_diff(&w, &kb), serial(&w, &kb), "{w:?}");
        }
        // Small integers, so minima repeat within and across lanes and in the tail.
        let mut rng = crate::matrix::Rng::new(5);
        for len in 0..70 {
            for _ in 0..20 {
                let w: Vec<f64> = (0..len).map(|_| rng.below(4) as f64).collect();
                let kb: Vec<f64> = (0..len).map(|_| rng.below(3) as f64).collect();
                assert_eq!(argmin_diff(&w, &kb), serial(&w, &kb), "{w:?} {kb:?}");
            }
        }
    }
}
