//! n x N sparse matrices held by cells, in blocks of rows, for the B update's gradient.
//!
//! Each cell's gradient row is summed in registers over the rows of A A^T its K B row names,
//! instead of scattering every K B column into an n-long buffer per archetype; cells are laid
//! out by their heaviest archetype in A, so neighbouring cells read the same rows of A A^T
//! while they are in cache. The layout and the block size do not depend on the thread count,
//! and every sum keeps the order the column-wise products had, so the result is the same on any
//! machine.

use rayon::prelude::*;

use super::fw::kb_cols;
use super::sparse::{blend_runs, SpVec};
use crate::matrix::Csr;

/// Cells per block.
pub const BLOCK_ROWS: usize = 512;

/// Which block and row hold each cell.
#[derive(Clone, Debug)]
pub struct Layout {
    /// The cells, block by block.
    pub order: Vec<u32>,
    /// Each cell's place in `order`.
    pub pos: Vec<u32>,
}

impl Layout {
    /// Cells ordered by their heaviest archetype in A (lowest on ties; cells without atoms
    /// last), then by index.
    pub fn by_archetype(a: &[SpVec]) -> Self {
        let key = |col: &SpVec| {
            col.iter()
                .fold(None, |best: Option<(u32, f64)>, &(c, w)| match best {
                    Some((_, bw)) if bw >= w => best,
                    _ => Some((c, w)),
                })
                .map_or(u32::MAX, |p| p.0)
        };
        // Each cell's key once, then a sort of (key, cell) pairs.
        let mut keyed: Vec<(u32, u32)> = a
            .par_iter()
            .enumerate()
            .map(|(i, col)| (key(col), i as u32))
            .collect();
        keyed.par_sort_unstable();
        let order: Vec<u32> = keyed.into_iter().map(|p| p.1).collect();
        let mut pos = vec![0u32; a.len()];
        for (p, &i) in order.iter().enumerate() {
            pos[i as usize] = p as u32;
        }
        Layout { order, pos }
    }

    fn blocks(&self) -> usize {
        self.order.len().div_ceil(BLOCK_ROWS)
    }

    /// The cells of block `b`.
    fn cells(&self, b: usize) -> &[u32] {
        &self.order[b * BLOCK_ROWS..((b + 1) * BLOCK_ROWS).min(self.order.len())]
    }
}

/// Rows of a sparse matrix for the cells `cells`, each row's entries in ascending column.
#[derive(Clone, Debug, Default)]
pub struct RowBlock {
    /// The cell of each row.
    pub cells: Vec<u32>,
    /// Row offsets into `col` and `val`.
    pub ptr: Vec<usize>,
    /// Column of each entry.
    pub col: Vec<u32>,
    /// Value of each entry.
    pub val: Vec<f64>,
}

impl RowBlock {
    /// Entries of row `r`.
    #[inline]
    pub fn row(&self, r: usize) -> (&[u32], &[f64]) {
        let (a, b) = (self.ptr[r], self.ptr[r + 1]);
        (&self.col[a..b], &self.val[a..b])
    }

    /// Rows in the block.
    pub fn rows(&self) -> usize {
        self.cells.len()
    }
}

/// Entries (row in block, column, value) of sorted sparse columns, bucketed by block; within
/// a bucket, columns ascend.
fn bucket(cols: &[SpVec], lay: &Layout) -> Vec<Vec<(u32, u32, f64)>> {
    let mut out = vec![Vec::new(); lay.blocks()];
    for (c, col) in cols.iter().enumerate() {
        for &(i, v) in col {
            let p = lay.pos[i as usize] as usize;
            out[p / BLOCK_ROWS].push(((p % BLOCK_ROWS) as u32, c as u32, v));
        }
    }
    out
}

/// A block from its bucket, by a stable counting sort on the row.
fn block_from(cells: &[u32], entries: &[(u32, u32, f64)]) -> RowBlock {
    let rows = cells.len();
    let mut ptr = vec![0usize; rows + 1];
    for e in entries {
        ptr[e.0 as usize + 1] += 1;
    }
    for r in 0..rows {
        ptr[r + 1] += ptr[r];
    }
    let mut next = ptr[..rows].to_vec();
    let (mut col, mut val) = (vec![0u32; entries.len()], vec![0.0f64; entries.len()]);
    for e in entries {
        let p = &mut next[e.0 as usize];
        col[*p] = e.1;
        val[*p] = e.2;
        *p += 1;
    }
    RowBlock {
        cells: cells.to_vec(),
        ptr,
        col,
        val,
    }
}

/// The transpose of sorted sparse columns, in the layout's row blocks.
pub fn blocks_of(cols: &[SpVec], lay: &Layout) -> Vec<RowBlock> {
    bucket(cols, lay)
        .into_par_iter()
        .enumerate()
        .map(|(b, e)| block_from(lay.cells(b), &e))
        .collect()
}

/// The columns (`ncols` of them, sorted by cell) of a matrix held in row blocks.
pub fn cols_of(blocks: &[RowBlock], lay: &Layout, ncols: usize) -> Vec<SpVec> {
    let mut cols: Vec<SpVec> = vec![Vec::new(); ncols];
    for (i, &p) in lay.pos.iter().enumerate() {
        let (p, blk) = (p as usize, &blocks[p as usize / BLOCK_ROWS]);
        let (c, v) = blk.row(p % BLOCK_ROWS);
        for (&j, &x) in c.iter().zip(v) {
            cols[j as usize].push((i as u32, x));
        }
    }
    cols
}

/// K A^T = M (M A^T) in the layout's row blocks, each row computed on its own (M^T's rows give
/// every cell's in-neighbours with M's stored weights): entry (l, c) sums, over j ascending,
/// M[j, l] (sum over i ascending of M[i, j] A[c, i]), the order and the entries of the
/// column-wise product [`super::fw::kb_cols`].
pub fn kat_blocks(m: &Csr<f64>, a: &[SpVec], nm: usize, lay: &Layout) -> Vec<RowBlock> {
    let n = lay.pos.len();
    let mut by_arch: Vec<SpVec> = vec![Vec::new(); nm];
    for (j, col) in a.iter().enumerate() {
        for &(c, w) in col {
            by_arch[c as usize].push((j as u32, w));
        }
    }
    // Two passes over chunks of columns: count each row's entries, then fill the blocks, so
    // only one chunk's columns exist beside the blocks.
    let mut blocks: Vec<RowBlock> = (0..lay.blocks())
        .map(|b| RowBlock {
            cells: lay.cells(b).to_vec(),
            ptr: vec![0; lay.cells(b).len() + 1],
            col: Vec::new(),
            val: Vec::new(),
        })
        .collect();
    // The count needs only each column's support: two hops through M's pattern, no values.
    let n_cells = lay.pos.len();
    for chunk in by_arch.chunks(KAT_CHUNK) {
        let supports: Vec<Vec<u32>> = chunk
            .par_iter()
            .map_init(
                || (vec![false; n_cells], vec![false; n_cells]),
                |(one, two), col| support2(m, col, one, two),
            )
            .collect();
        for sup in supports {
            for i in sup {
                let p = lay.pos[i as usize] as usize;
                blocks[p / BLOCK_ROWS].ptr[p % BLOCK_ROWS + 1] += 1;
            }
        }
    }
    let mut next: Vec<Vec<usize>> = Vec::with_capacity(blocks.len());
    for blk in &mut blocks {
        for r in 0..blk.cells.len() {
            blk.ptr[r + 1] += blk.ptr[r];
        }
        let nnz = blk.ptr[blk.cells.len()];
        blk.col = vec![0; nnz];
        blk.val = vec![0.0; nnz];
        next.push(blk.ptr[..blk.cells.len()].to_vec());
    }
    for (k, chunk) in by_arch.chunks(KAT_CHUNK).enumerate() {
        for (d, col) in kb_cols(m, chunk).into_iter().enumerate() {
            let c = (k * KAT_CHUNK + d) as u32;
            for (i, v) in col {
                let p = lay.pos[i as usize] as usize;
                let (b, r) = (p / BLOCK_ROWS, p % BLOCK_ROWS);
                let at = next[b][r];
                blocks[b].col[at] = c;
                blocks[b].val[at] = v;
                next[b][r] += 1;
            }
        }
    }
    debug_assert!(n == 0 || !blocks.is_empty());
    blocks
}

/// The cells two hops through M's pattern from the cells of `col` (the support of M (M col),
/// as [`kb_cols`] builds it), in no particular order; `one` and `two` are all false on entry
/// and on return.
fn support2(m: &Csr<f64>, col: &SpVec, one: &mut [bool], two: &mut [bool]) -> Vec<u32> {
    let cols = m.col_idx();
    let mut first = Vec::new();
    for &(i, _) in col {
        for p in m.row_range(i as usize) {
            let j = cols[p] as usize;
            if !one[j] {
                one[j] = true;
                first.push(j as u32);
            }
        }
    }
    let mut second = Vec::new();
    for &j in &first {
        one[j as usize] = false;
        for q in m.row_range(j as usize) {
            let l = cols[q] as usize;
            if !two[l] {
                two[l] = true;
                second.push(l as u32);
            }
        }
    }
    for &l in &second {
        two[l as usize] = false;
    }
    second
}

/// Archetype columns of K A^T computed together.
const KAT_CHUNK: usize = 64;

/// (1 - g) a + g b row by row, for `a` in row blocks and `b` as sparse columns (entries in any
/// order within a column): per entry the arithmetic of [`super::sparse::blend`] on columns.
pub fn blend_blocks(a: &mut [RowBlock], b: &[SpVec], g: f64, lay: &Layout) {
    let buckets = bucket(b, lay);
    a.par_iter_mut().zip(buckets).for_each(|(blk, e)| {
        let add = block_from(&blk.cells, &e);
        let mut out = RowBlock {
            cells: std::mem::take(&mut blk.cells),
            ptr: Vec::with_capacity(blk.ptr.len()),
            col: Vec::with_capacity(blk.col.len() + add.col.len()),
            val: Vec::with_capacity(blk.col.len() + add.col.len()),
        };
        out.ptr.push(0);
        for r in 0..out.cells.len() {
            let ((ac, av), (bc, bv)) = (blk.row(r), add.row(r));
            blend_runs(
                ac.len(),
                |i| (ac[i], av[i]),
                bc.len(),
                |j| (bc[j], bv[j]),
                g,
                |c, v| {
                    out.col.push(c);
                    out.val.push(v);
                },
            );
            out.ptr.push(out.col.len());
        }
        *blk = out;
    });
}

/// T = A A^T (N x N, row-major) with each row padded with zeros to a multiple of [`LANES`],
/// made once per B update for all its steps.
pub struct Padded {
    t: Vec<f64>,
    nm: usize,
    stride: usize,
}

impl Padded {
    /// Pads `t` (nm x nm, row-major).
    pub fn new(t: &[f64], nm: usize) -> Self {
        let stride = nm.div_ceil(LANES) * LANES;
        let mut tp = vec![0.0f64; nm * stride];
        for (dst, src) in tp.chunks_exact_mut(stride).zip(t.chunks_exact(nm)) {
            dst[..nm].copy_from_slice(src);
        }
        Padded { t: tp, nm, stride }
    }

    /// Archetypes (N).
    pub fn nm(&self) -> usize {
        self.nm
    }

    /// Row `m` of T, without its padding.
    pub fn row(&self, m: usize) -> &[f64] {
        &self.t[m * self.stride..m * self.stride + self.nm]
    }
}

/// One Frank-Wolfe step's reading of the B gradient G = K B T - K A^T (T = A A^T, N x N
/// row-major): per column c, the lowest cell with the smallest G[i, c] (cells no product
/// reaches are zeros) and the duality-gap share sum_i B[i, c] G[i, c] - min_i G[i, c].
///
/// `kb` and `kat` are K B and K A^T in the layout's row blocks, `b` is B as sorted columns.
/// Every G entry sums its K B row's archetypes in ascending order, then subtracts K A^T, as
/// the column-wise accumulation did; the argmin is the lowest cell among the smallest values
/// (for values without NaN, what a serial scan with a strict comparison finds), and each
/// column's gap sum runs over its cells in ascending order.
pub fn pick_cells(
    kb: &[RowBlock],
    kat: &[RowBlock],
    b: &[SpVec],
    t: &Padded,
    lay: &Layout,
) -> Vec<(u32, f64)> {
    let (nm, stride) = (t.nm, t.stride);
    // B's entries by block: (row, column, place in B's column-major order), rows ascending.
    let mut b_at = Vec::with_capacity(b.len() + 1);
    b_at.push(0usize);
    for col in b {
        b_at.push(b_at.last().unwrap() + col.len());
    }
    let mut b_blocks: Vec<Vec<(u32, u32, u32)>> = vec![Vec::new(); kb.len()];
    for (c, col) in b.iter().enumerate() {
        for (q, &(i, _)) in col.iter().enumerate() {
            let p = lay.pos[i as usize] as usize;
            b_blocks[p / BLOCK_ROWS].push((
                (p % BLOCK_ROWS) as u32,
                c as u32,
                (b_at[c] + q) as u32,
            ));
        }
    }
    b_blocks
        .par_iter_mut()
        .for_each(|v| v.sort_unstable_by_key(|e| (e.0, e.1)));
    let parts: Vec<Part> = kb
        .par_iter()
        .zip(kat.par_iter())
        .zip(b_blocks.par_iter())
        .map_init(
            || vec![0.0f64; GROUP * stride],
            |g, ((kbb, katb), bb)| {
                let cx = Ctx {
                    b,
                    b_at: &b_at,
                    t: &t.t,
                    nm,
                    stride,
                };
                block_pass(&cx, kbb, katb, bb, g)
            },
        )
        .collect();
    let mut best = vec![(u32::MAX, f64::INFINITY); nm];
    let mut prod = vec![0.0f64; *b_at.last().unwrap()];
    for part in &parts {
        for (c, bc) in best.iter_mut().enumerate() {
            let (v, i) = (part.best_v[c], part.best_i[c] as u32);
            if v < bc.1 || (v == bc.1 && i < bc.0) {
                *bc = (i, v);
            }
        }
        for &(pos, x) in &part.terms {
            prod[pos as usize] = x;
        }
    }
    best.iter()
        .enumerate()
        .map(|(c, &(i, low))| {
            let dot: f64 = prod[b_at[c]..b_at[c + 1]].iter().sum();
            (if i == u32::MAX { 0 } else { i }, dot - low)
        })
        .collect()
}

/// What every block reads.
struct Ctx<'a> {
    b: &'a [SpVec],
    b_at: &'a [usize],
    t: &'a [f64],
    nm: usize,
    stride: usize,
}

/// What one block of cells contributes: per column, its lowest cell with the smallest
/// gradient, and the gap terms B[i, c] G[i, c] at their places in B's column-major order.
struct Part {
    best_v: Vec<f64>,
    best_i: Vec<u64>,
    terms: Vec<(u32, f64)>,
}

crate::simd::multiversion! {
/// One block of [`pick_cells`].
fn block_pass(
    cx: &Ctx,
    kbb: &RowBlock,
    katb: &RowBlock,
    bb: &[(u32, u32, u32)],
    g: &mut [f64],
) -> Part {
    let (nm, stride) = (cx.nm, cx.stride);
    let mut best_v = vec![f64::INFINITY; nm];
    let mut best_i = vec![u64::MAX; nm];
    let mut terms = Vec::new();
    let mut bq = 0;
    for r0 in (0..kbb.rows()).step_by(GROUP) {
        let live = GROUP.min(kbb.rows() - r0);
        // Each run of columns summed in registers over a row's archetypes (ascending), for
        // the group's rows one after another: the group's cells share most archetypes (the
        // layout puts them together), so the run's slice of T stays in cache across the
        // group instead of all of T's rows streaming once per cell (about 7% faster at
        // 50,000 cells, where T outgrows the L2 cache).
        let mut q = 0;
        while q < stride {
            let w = if q + WIDE <= stride { WIDE } else { LANES };
            for (rr, gr) in g.chunks_exact_mut(stride).take(live).enumerate() {
                let (mc, mv) = kbb.row(r0 + rr);
                if w == WIDE {
                    sum_run::<WIDE>(gr, q, mc, mv, cx.t, stride);
                } else {
                    sum_run::<LANES>(gr, q, mc, mv, cx.t, stride);
                }
            }
            q += w;
        }
        for (rr, g) in g.chunks_exact_mut(stride).take(live).enumerate() {
            let r = r0 + rr;
            let (ac, av) = katb.row(r);
            for (&c, &v) in ac.iter().zip(av) {
                g[c as usize] += -v;
            }
            let cell = kbb.cells[r] as u64;
            for ((bv, bi), &x) in best_v.iter_mut().zip(best_i.iter_mut()).zip(g[..nm].iter()) {
                let take = x < *bv || (x == *bv && cell < *bi);
                *bv = if take { x } else { *bv };
                *bi = if take { cell } else { *bi };
            }
            while bq < bb.len() && bb[bq].0 as usize == r {
                let (_, c, pos) = bb[bq];
                let wt = cx.b[c as usize][pos as usize - cx.b_at[c as usize]].1;
                terms.push((pos, wt * g[c as usize]));
                bq += 1;
            }
        }
    }
    Part {
        best_v,
        best_i,
        terms,
    }
}
}

/// Columns `q..q + W` of a gradient row: the sum over the row's archetypes `mc` (weights `mv`,
/// ascending) of their rows of T, held in registers until it is stored.
#[inline(always)]
fn sum_run<const W: usize>(
    g: &mut [f64],
    q: usize,
    mc: &[u32],
    mv: &[f64],
    t: &[f64],
    stride: usize,
) {
    let mut acc = [0.0f64; W];
    for (&m, &v) in mc.iter().zip(mv) {
        let row = &t[m as usize * stride + q..m as usize * stride + q + W];
        for (x, &y) in acc.iter_mut().zip(row) {
            *x += v * y;
        }
    }
    g[q..q + W].copy_from_slice(&acc);
}

/// Columns summed together in registers: four 8-wide vectors, so four independent sums hide
/// the adds' latency.
const WIDE: usize = 64;
/// Gradient rows summed together, run by run of columns.
const GROUP: usize = 16;
/// The padding of a row of T (and of the gradient row).
const LANES: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Rng;
    use crate::simd::WIDEST;
    use crate::solvers::seacells::fit::gaussian_mixture;
    use crate::solvers::seacells::kernel::{kernel, Symmetrize};
    use crate::solvers::seacells::sparse::blend;
    use std::sync::atomic::Ordering;

    /// A kernel over more cells than one block, A with a few atoms per cell (some cells
    /// without any), B with a few cells per archetype.
    fn case(n: usize, nm: usize) -> (Csr<f64>, Vec<SpVec>, Vec<SpVec>) {
        let (x, _) = gaussian_mixture(n, 3, 7, 11);
        let m = kernel(&x, 6, Symmetrize::Union).unwrap();
        let mut rng = Rng::new(3);
        let a: Vec<SpVec> = (0..n)
            .map(|i| {
                if i % 97 == 5 {
                    return Vec::new();
                }
                let mut col: SpVec = (0..1 + rng.below(4))
                    .map(|_| (rng.below(nm as u64) as u32, rng.range_f64(0.1, 1.0)))
                    .collect();
                col.sort_by_key(|e| e.0);
                col.dedup_by_key(|e| e.0);
                col
            })
            .collect();
        let b: Vec<SpVec> = (0..nm)
            .map(|_| {
                let mut col: SpVec = (0..1 + rng.below(3))
                    .map(|_| (rng.below(n as u64) as u32, rng.range_f64(0.1, 1.0)))
                    .collect();
                col.sort_by_key(|e| e.0);
                col.dedup_by_key(|e| e.0);
                col
            })
            .collect();
        (m, a, b)
    }

    fn by_arch(a: &[SpVec], nm: usize) -> Vec<SpVec> {
        let mut out = vec![Vec::new(); nm];
        for (j, col) in a.iter().enumerate() {
            for &(c, w) in col {
                out[c as usize].push((j as u32, w));
            }
        }
        out
    }

    /// The column-wise reading the row blocks replace: per column, a dense gradient over the
    /// cells summed archetype by archetype, a serial strict-comparison argmin, the gap in cell
    /// order.
    fn columnwise(
        kb: &[SpVec],
        kat: &[SpVec],
        b: &[SpVec],
        t: &[f64],
        n: usize,
    ) -> Vec<(u32, f64)> {
        let nm = kb.len();
        (0..nm)
            .map(|c| {
                let mut val = vec![0.0; n];
                for mm in 0..nm {
                    let s = t[mm * nm + c];
                    if s != 0.0 {
                        for &(i, v) in &kb[mm] {
                            val[i as usize] += s * v;
                        }
                    }
                }
                for &(i, v) in &kat[c] {
                    val[i as usize] += -v;
                }
                let mut best = (0u32, val[0]);
                for (i, &g) in val.iter().enumerate().skip(1) {
                    if g < best.1 {
                        best = (i as u32, g);
                    }
                }
                let dot: f64 = b[c].iter().map(|&(i, w)| w * val[i as usize]).sum();
                (best.0, dot - best.1)
            })
            .collect()
    }

    #[test]
    fn blocks_round_trip_and_blend_as_columns() {
        let (n, nm) = (1300, 70);
        let (m, a, b) = case(n, nm);
        let lay = Layout::by_archetype(&a);
        let mut sorted = lay.order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..n as u32).collect::<Vec<_>>());
        let kb = kb_cols(&m, &b);
        let mut blocks = blocks_of(&kb, &lay);
        assert_eq!(blocks.len(), n.div_ceil(BLOCK_ROWS));
        assert_eq!(cols_of(&blocks, &lay, nm), kb);
        // New entries in any order within a column, as the K columns of picked cells come.
        let shifted: Vec<SpVec> = b
            .iter()
            .map(|c| {
                let mut v: SpVec = c.iter().map(|&(i, w)| ((i + 1) % n as u32, w)).collect();
                v.sort_by_key(|e| e.0);
                v
            })
            .collect();
        let add = kb_cols(&m, &shifted);
        let shuffled: Vec<SpVec> = add
            .iter()
            .map(|c| c.iter().rev().copied().collect())
            .collect();
        blend_blocks(&mut blocks, &shuffled, 0.3, &lay);
        let want: Vec<SpVec> = kb.iter().zip(&add).map(|(x, y)| blend(x, y, 0.3)).collect();
        assert_eq!(cols_of(&blocks, &lay, nm), want);
    }

    #[test]
    fn kat_blocks_are_the_column_products_bit_for_bit() {
        let (n, nm) = (1300, 70);
        let (m, a, _) = case(n, nm);
        let lay = Layout::by_archetype(&a);
        let got = kat_blocks(&m, &a, nm, &lay);
        assert_eq!(cols_of(&got, &lay, nm), kb_cols(&m, &by_arch(&a, nm)));
    }

    #[test]
    fn pick_cells_is_the_columnwise_reading_bit_for_bit() {
        for (n, nm) in [(1300, 70), (600, 9), (40, 1)] {
            let (m, a, b) = case(n, nm);
            let lay = Layout::by_archetype(&a);
            let mut rng = Rng::new(9);
            // T with zeros, as A A^T has where archetypes share no cell.
            let t: Vec<f64> = (0..nm * nm)
                .map(|_| {
                    if rng.below(3) == 0 {
                        0.0
                    } else {
                        rng.range_f64(-0.5, 1.0)
                    }
                })
                .collect();
            let kb = kb_cols(&m, &b);
            let kat = kb_cols(&m, &by_arch(&a, nm));
            let want = columnwise(&kb, &kat, &b, &t, n);
            let (kbb, katb) = (blocks_of(&kb, &lay), kat_blocks(&m, &a, nm, &lay));
            // Every vector width the CPU has, and the baseline.
            for widest in [2, 1, 0] {
                WIDEST.store(widest, Ordering::Relaxed);
                let got = pick_cells(&kbb, &katb, &b, &Padded::new(&t, nm), &lay);
                WIDEST.store(2, Ordering::Relaxed);
                assert_eq!(got, want, "n {n}, N {nm}, widest {widest}");
            }
        }
    }

    /// A gradient of zeros everywhere: every column's argmin is the lowest cell, wherever the
    /// layout puts it.
    #[test]
    fn ties_go_to_the_lowest_cell() {
        let (n, nm) = (1100, 12);
        let (m, a, b) = case(n, nm);
        let lay = Layout::by_archetype(&a);
        assert_ne!(lay.order[0], 0, "the layout moves cell 0");
        let empty: Vec<RowBlock> = blocks_of(&vec![Vec::new(); nm], &lay);
        let kb = blocks_of(&kb_cols(&m, &b), &lay);
        let got = pick_cells(&kb, &empty, &b, &Padded::new(&vec![0.0; nm * nm], nm), &lay);
        assert!(got.iter().all(|&(i, gap)| i == 0 && gap == 0.0), "{got:?}");
    }
}
