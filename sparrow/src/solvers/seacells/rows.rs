//! n x N sparse matrices held by cells, in blocks of rows, for the B update's gradient.
//!
//! The gradient is read a cell at a time ([`super::bounds`] on the CPU, the fused and bound
//! kernels on the GPU), so K B and K A^T are kept by cells, each cell's rows found directly,
//! and the picked cells' K columns are blended into K B block by block. Cells are laid out
//! by their heaviest archetype in A, so neighbouring cells read the same columns of A A^T while
//! they are in cache. The layout and the block size do not depend on the thread count, and
//! every sum keeps the order the column-wise products had, so the result is the same on any
//! machine.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use rayon::prelude::*;

use super::sparse::{blend_runs, kb_cols, SpVec};
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

    /// Cells in index order.
    pub fn identity(n: usize) -> Self {
        let order: Vec<u32> = (0..n as u32).collect();
        Layout {
            pos: order.clone(),
            order,
        }
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

/// Entries (row in block, column, value) of sparse columns, bucketed by block in parallel:
/// per block, one part per run of [`BUCKET_COLS`] columns, the parts in column order and
/// each part's columns ascending.
type Buckets = Vec<Vec<Vec<(u32, u32, f64)>>>;

fn bucket<C: AsRef<[(u32, f64)]> + Sync>(cols: &[C], lay: &Layout) -> Buckets {
    let parts: Vec<Vec<Vec<(u32, u32, f64)>>> = cols
        .par_chunks(BUCKET_COLS)
        .enumerate()
        .map(|(k, chunk)| {
            let mut out = vec![Vec::new(); lay.blocks()];
            for (d, col) in chunk.iter().enumerate() {
                let c = (k * BUCKET_COLS + d) as u32;
                for &(i, v) in col.as_ref() {
                    let p = lay.pos[i as usize] as usize;
                    out[p / BLOCK_ROWS].push(((p % BLOCK_ROWS) as u32, c, v));
                }
            }
            out
        })
        .collect();
    let mut by_block: Buckets = vec![Vec::with_capacity(parts.len()); lay.blocks()];
    for part in parts {
        for (b, e) in part.into_iter().enumerate() {
            by_block[b].push(e);
        }
    }
    by_block
}

/// Columns per part of a bucket.
const BUCKET_COLS: usize = 32;

/// A block from its bucket, by a stable counting sort on the row.
fn block_from(cells: &[u32], parts: &[Vec<(u32, u32, f64)>]) -> RowBlock {
    let rows = cells.len();
    let mut ptr = vec![0usize; rows + 1];
    for e in parts.iter().flatten() {
        ptr[e.0 as usize + 1] += 1;
    }
    for r in 0..rows {
        ptr[r + 1] += ptr[r];
    }
    let mut next = ptr[..rows].to_vec();
    let total = ptr[rows];
    let (mut col, mut val) = (vec![0u32; total], vec![0.0f64; total]);
    for e in parts.iter().flatten() {
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

/// The transpose of sorted sparse columns, in the layout's row blocks, each row's columns
/// ascending. Rows are counted, then filled from every column at once (each entry claims its
/// own slot), then sorted: the passes run on every thread, which matters at atlas scale, where
/// K B holds hundreds of millions of entries, and the blocks are the only memory taken beside
/// the columns. A row holds at most one entry per column, so the sort gives one answer.
pub fn blocks_of(cols: &[SpVec], lay: &Layout) -> Vec<RowBlock> {
    // The fill below writes through raw pointers, so the layout is checked, not assumed.
    assert_eq!(lay.pos.len(), lay.order.len(), "a layout's cells and places");
    let fill = counters(lay.pos.len());
    cols.par_iter().for_each(|col| {
        for &(i, _) in col {
            fill[lay.pos[i as usize] as usize].fetch_add(1, Relaxed);
        }
    });
    let mut blocks: Vec<RowBlock> = (0..lay.blocks())
        .into_par_iter()
        .map(|b| {
            let cells = lay.cells(b);
            let mut ptr = vec![0usize; cells.len() + 1];
            for r in 0..cells.len() {
                // The count becomes the row's cursor for the fill below.
                ptr[r + 1] = ptr[r] + fill[b * BLOCK_ROWS + r].swap(0, Relaxed) as usize;
            }
            let nnz = ptr[cells.len()];
            RowBlock {
                cells: cells.to_vec(),
                ptr,
                col: vec![0; nnz],
                val: vec![0.0; nnz],
            }
        })
        .collect();
    let dst: Vec<(&[usize], Slots<u32>, Slots<f64>)> = blocks
        .iter_mut()
        .map(|RowBlock { ptr, col, val, .. }| (&ptr[..], Slots::of(col), Slots::of(val)))
        .collect();
    cols.par_iter().enumerate().for_each(|(c, col)| {
        for &(i, v) in col {
            let p = lay.pos[i as usize] as usize;
            let (ptr, cs, vs) = &dst[p / BLOCK_ROWS];
            let r = p % BLOCK_ROWS;
            let at = ptr[r] + fill[p].fetch_add(1, Relaxed) as usize;
            assert!(at < ptr[r + 1], "cell {i} has more entries than counted");
            // SAFETY: the counting pass sized row r to its entries, so `at` is inside the
            // row, and the cursor gives each entry its own slot.
            unsafe {
                cs.write(at, c as u32);
                vs.write(at, v);
            }
        }
    });
    drop(dst);
    blocks.par_iter_mut().for_each(|blk| {
        let mut row = Vec::new();
        for r in 0..blk.rows() {
            let (a, b) = (blk.ptr[r], blk.ptr[r + 1]);
            if blk.col[a..b].windows(2).all(|w| w[0] < w[1]) {
                continue;
            }
            row.clear();
            row.extend(blk.col[a..b].iter().copied().zip(blk.val[a..b].iter().copied()));
            row.sort_unstable_by_key(|e| e.0);
            for (k, &(c, v)) in row.iter().enumerate() {
                blk.col[a + k] = c;
                blk.val[a + k] = v;
            }
        }
    });
    blocks
}

/// Rows of a matrix held as sparse columns (n rows): the transpose, each row's entries in
/// ascending column. Built by [`blocks_of`]'s parallel passes: the fit transposes K B and B
/// (millions of entries) at every iteration.
pub fn transpose(cols: &[SpVec], n: usize) -> Vec<SpVec> {
    blocks_of(cols, &Layout::identity(n))
        .par_iter()
        .flat_map_iter(|blk| {
            (0..blk.rows()).map(|r| {
                let (c, v) = blk.row(r);
                c.iter().copied().zip(v.iter().copied()).collect::<SpVec>()
            })
        })
        .collect()
}

/// `n` counters at zero.
fn counters(n: usize) -> Vec<AtomicU32> {
    (0..n).into_par_iter().map(|_| AtomicU32::new(0)).collect()
}

/// A buffer that threads fill at once, each slot claimed by one entry through a counter.
struct Slots<T>(*mut T);

// SAFETY: the threads write disjoint slots of a buffer that outlives them (see `write`).
unsafe impl<T: Send> Send for Slots<T> {}
unsafe impl<T: Send> Sync for Slots<T> {}

impl<T> Slots<T> {
    fn of(buf: &mut [T]) -> Self {
        Slots(buf.as_mut_ptr())
    }

    /// # Safety
    /// `at` is inside the buffer, the buffer outlives the write, and no other thread reads or
    /// writes slot `at` meanwhile.
    unsafe fn write(&self, at: usize, v: T) {
        self.0.add(at).write(v)
    }
}

/// The columns (`ncols` of them, sorted by cell) of a matrix held in row blocks.
pub fn cols_of(blocks: &[RowBlock], lay: &Layout, ncols: usize) -> Vec<SpVec> {
    debug_assert_eq!(blocks.len(), lay.blocks());
    cols_from_rows(lay.pos.len(), ncols, |p, f| {
        let (blk, r) = (&blocks[p / BLOCK_ROWS], p % BLOCK_ROWS);
        let (c, v) = blk.row(r);
        for (&j, &x) in c.iter().zip(v) {
            f(j, x);
        }
        blk.cells[r]
    })
}

/// The columns (`ncols` of them, each sorted by cell) of a matrix given row by row: `row(r, f)`
/// calls `f(column, value)` for each entry of row r and returns the row's cell. The entries
/// are counted, then placed from every row at once (each claims its own slot), then each
/// column is sorted: as [`blocks_of`], on every thread. Columns must be below `ncols`.
pub fn cols_from_rows<F>(nrows: usize, ncols: usize, row: F) -> Vec<SpVec>
where
    F: Fn(usize, &mut dyn FnMut(u32, f64)) -> u32 + Sync,
{
    let fill = counters(ncols);
    (0..nrows).into_par_iter().for_each(|r| {
        row(r, &mut |c, _| {
            fill[c as usize].fetch_add(1, Relaxed);
        });
    });
    let mut cols: Vec<SpVec> = fill
        .par_iter()
        .map(|f| vec![(0, 0.0); f.swap(0, Relaxed) as usize])
        .collect();
    let lens: Vec<usize> = cols.iter().map(Vec::len).collect();
    let dst: Vec<Slots<(u32, f64)>> = cols.iter_mut().map(|c| Slots::of(c)).collect();
    (0..nrows).into_par_iter().for_each_init(Vec::new, |at, r| {
        at.clear();
        let cell = row(r, &mut |c, v| at.push((c, v)));
        for &(c, v) in at.iter() {
            let slot = fill[c as usize].fetch_add(1, Relaxed) as usize;
            // A row that gives more entries the second time would write past its column.
            assert!(slot < lens[c as usize], "row {r} gave entries it did not count");
            // SAFETY: column c was sized to its entries by the same rows, and the cursor gives
            // each entry its own slot.
            unsafe { dst[c as usize].write(slot, (cell, v)) };
        }
    });
    drop(dst);
    // By cell, then value: a column that holds a cell twice (a malformed source) still comes
    // out the same on every run.
    cols.par_iter_mut()
        .for_each(|c| c.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1))));
    cols
}

/// K A^T = M (M A^T) in the layout's row blocks: the column-wise products of
/// [`super::sparse::kb_cols`], all computed in one parallel pass and then laid out by rows.
pub fn kat_blocks(m: &Csr<f64>, a: &[SpVec], nm: usize, lay: &Layout) -> Vec<RowBlock> {
    blocks_of(&kb_cols(m, &transpose(a, nm)), lay)
}

/// (1 - g) a + g b row by row, for `a` in row blocks and `b` as sparse columns (entries in any
/// order within a column): per entry the arithmetic of [`super::sparse::blend`] on columns.
/// `spare` holds buffers for the blended blocks (the old blocks' are left there for the next
/// call), so a step allocates nothing once the blocks have grown.
pub fn blend_blocks<C: AsRef<[(u32, f64)]> + Sync>(
    a: &mut [RowBlock],
    spare: &mut Vec<RowBlock>,
    b: &[C],
    g: f64,
    lay: &Layout,
) {
    let buckets = bucket(b, lay);
    spare.resize_with(a.len(), RowBlock::default);
    a.par_iter_mut()
        .zip(spare.par_iter_mut())
        .zip(buckets)
        .for_each(|((blk, out), e)| {
            let add = block_from(&blk.cells, &e);
            out.ptr.clear();
            out.col.clear();
            out.val.clear();
            out.cells = std::mem::take(&mut blk.cells);
            out.col.reserve(blk.col.len() + add.col.len());
            out.val.reserve(blk.col.len() + add.col.len());
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
            std::mem::swap(blk, out);
        });
}

/// T = A A^T (N x N, row-major), made once per B update for all its steps.
pub struct Aat {
    t: Vec<f64>,
    nm: usize,
}

impl Aat {
    /// From `t` (nm x nm, row-major).
    pub fn new(t: Vec<f64>, nm: usize) -> Self {
        debug_assert_eq!(t.len(), nm * nm);
        Aat { t, nm }
    }

    /// Archetypes (N).
    pub fn nm(&self) -> usize {
        self.nm
    }

    /// Row `m` of T.
    pub fn row(&self, m: usize) -> &[f64] {
        &self.t[m * self.nm..(m + 1) * self.nm]
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::matrix::Rng;
    use crate::solvers::seacells::fit::gaussian_mixture;
    use crate::solvers::seacells::kernel::{kernel, Symmetrize};
    use crate::solvers::seacells::sparse::blend;

    /// A kernel over more cells than one block, A with a few atoms per cell (some cells
    /// without any), B with a few cells per archetype.
    pub(crate) fn case(n: usize, nm: usize) -> (Csr<f64>, Vec<SpVec>, Vec<SpVec>) {
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

    /// The column-wise reading the row blocks replace: per column, a dense gradient over the
    /// cells summed archetype by archetype, a serial strict-comparison argmin, the gap in cell
    /// order.
    pub(crate) fn columnwise(
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
    fn blocks_hold_each_cells_row_in_column_order() {
        let (n, nm) = (1300, 70);
        let (m, a, b) = case(n, nm);
        let lay = Layout::by_archetype(&a);
        let kb = kb_cols(&m, &b);
        let rows = transpose(&kb, n);
        let blocks = blocks_of(&kb, &lay);
        for (p, &i) in lay.order.iter().enumerate() {
            let blk = &blocks[p / BLOCK_ROWS];
            assert_eq!(blk.cells[p % BLOCK_ROWS], i);
            let (c, v) = blk.row(p % BLOCK_ROWS);
            let got: SpVec = c.iter().copied().zip(v.iter().copied()).collect();
            assert_eq!(got, rows[i as usize], "cell {i}");
        }
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
        blend_blocks(&mut blocks, &mut Vec::new(), &shuffled, 0.3, &lay);
        let want: Vec<SpVec> = kb.iter().zip(&add).map(|(x, y)| blend(x, y, 0.3)).collect();
        assert_eq!(cols_of(&blocks, &lay, nm), want);
    }

    #[test]
    fn kat_blocks_are_the_column_products_bit_for_bit() {
        let (n, nm) = (1300, 70);
        let (m, a, _) = case(n, nm);
        let lay = Layout::by_archetype(&a);
        let got = kat_blocks(&m, &a, nm, &lay);
        assert_eq!(cols_of(&got, &lay, nm), kb_cols(&m, &transpose(&a, nm)));
    }
}

#[cfg(test)]
mod transpose_tests {
    use super::transpose;
    use crate::solvers::seacells::sparse::SpVec;
    use crate::matrix::Rng;

    /// The parallel transpose is the serial one: every column's entries appended to their
    /// rows in column order, for columns in any order within, empty columns and rows, and more
    /// rows than one block holds.
    #[test]
    fn transpose_is_the_serial_pass() {
        let mut rng = Rng::new(3);
        for (n, ncols) in [(0usize, 3usize), (5, 0), (7, 4), (9_000, 300)] {
            let cols: Vec<SpVec> = (0..ncols)
                .map(|c| {
                    if n == 0 || c % 7 == 3 {
                        return Vec::new();
                    }
                    let mut cells: Vec<u32> =
                        (0..1 + c % 40).map(|_| rng.below(n as u64) as u32).collect();
                    cells.sort_unstable();
                    cells.dedup();
                    // Some columns out of order: the transpose must not assume sorted columns.
                    if c % 2 == 1 {
                        cells.reverse();
                    }
                    cells.into_iter().map(|i| (i, rng.uniform() - 0.5)).collect()
                })
                .collect();
            let mut want: Vec<SpVec> = vec![Vec::new(); n];
            for (c, col) in cols.iter().enumerate() {
                for &(i, v) in col {
                    want[i as usize].push((c as u32, v));
                }
            }
            assert_eq!(transpose(&cols, n), want, "n {n} columns {ncols}");
        }
    }
}
