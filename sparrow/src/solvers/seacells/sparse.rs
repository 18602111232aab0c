//! Sparse vectors and the products with M the optimiser needs: K = M M (M is symmetric) is
//! applied as two products with M and its columns are built on demand, so K is never stored.

use rayon::prelude::*;

use crate::matrix::Csr;

/// A sparse vector: (index, value) pairs in ascending index.
pub type SpVec = Vec<(u32, f64)>;

/// A dense scratch vector with the list of touched entries, for sparse accumulation.
///
/// The list has room for every index, so an add writes its index unconditionally and counts
/// it only on first touch: no branch on the (unpredictable) first touch.
pub struct Accum {
    val: Vec<f64>,
    seen: Vec<bool>,
    touched: Vec<u32>,
    len: usize,
}

impl Accum {
    /// Scratch for vectors of length n.
    pub fn new(n: usize) -> Self {
        Accum {
            val: vec![0.0; n],
            seen: vec![false; n],
            touched: vec![0; n + 1],
            len: 0,
        }
    }
    /// Adds v at i.
    #[inline]
    pub fn add(&mut self, i: u32, v: f64) {
        let iu = i as usize;
        let fresh = !self.seen[iu];
        self.seen[iu] = true;
        self.touched[self.len] = i;
        self.len += fresh as usize;
        self.val[iu] += v;
    }
    /// The value at i (0 where untouched).
    #[inline]
    pub fn get(&self, i: u32) -> f64 {
        self.val[i as usize]
    }
    /// Sorts the touched indices (read them with `touched`).
    pub fn sort_touched(&mut self) {
        self.touched[..self.len].sort_unstable();
    }
    /// The touched indices, in the order of the last `sort_touched` (or of first touch).
    pub fn touched(&self) -> &[u32] {
        &self.touched[..self.len]
    }
    /// The accumulated vector, sorted; the scratch is cleared.
    pub fn take(&mut self) -> SpVec {
        self.sort_touched();
        self.take_unsorted()
    }
    /// The accumulated vector in the order of first touch; the scratch is cleared.
    pub fn take_unsorted(&mut self) -> SpVec {
        let out = self
            .touched()
            .iter()
            .map(|&i| (i, self.val[i as usize]))
            .collect();
        self.clear();
        out
    }
    /// Zeroes every touched entry.
    pub fn clear(&mut self) {
        for &i in &self.touched[..self.len] {
            self.val[i as usize] = 0.0;
            self.seen[i as usize] = false;
        }
        self.len = 0;
    }
}

/// Adds `scale` times column i of K = M M (equal to its row i) into `acc`.
pub fn add_k_col(m: &Csr<f64>, i: usize, scale: f64, acc: &mut Accum) {
    let (cols, vals) = (m.col_idx(), m.values());
    for p in m.row_range(i) {
        let (j, mji) = (cols[p] as usize, vals[p] * scale);
        for q in m.row_range(j) {
            acc.add(cols[q] as u32, mji * vals[q]);
        }
    }
}

/// M x for a dense x.
pub fn m_mul(m: &Csr<f64>, x: &[f64]) -> Vec<f64> {
    let (cols, vals) = (m.col_idx(), m.values());
    (0..m.nrows())
        .into_par_iter()
        .map(|i| m.row_range(i).map(|p| vals[p] * x[cols[p] as usize]).sum())
        .collect()
}

/// K x = M (M x).
pub fn k_mul(m: &Csr<f64>, x: &[f64]) -> Vec<f64> {
    m_mul(m, &m_mul(m, x))
}

/// The value at index i of a sorted sparse vector.
pub fn lookup(v: &[(u32, f64)], i: u32) -> f64 {
    v.binary_search_by_key(&i, |e| e.0).map_or(0.0, |p| v[p].1)
}

/// (1 - g) a + g b for sorted sparse vectors.
pub fn blend(a: &[(u32, f64)], b: &[(u32, f64)], g: f64) -> SpVec {
    let mut out = Vec::with_capacity(a.len() + b.len());
    blend_runs(
        a.len(),
        |i| a[i],
        b.len(),
        |j| b[j],
        g,
        |c, v| out.push((c, v)),
    );
    out
}

/// The merge of [`blend`] over two runs sorted by index, read through `a(i)` and `b(j)`, each
/// result passed to `push` in ascending index: one arithmetic for columns and row blocks.
#[inline]
pub fn blend_runs(
    na: usize,
    a: impl Fn(usize) -> (u32, f64),
    nb: usize,
    b: impl Fn(usize) -> (u32, f64),
    g: f64,
    mut push: impl FnMut(u32, f64),
) {
    let (mut i, mut j) = (0, 0);
    while i < na || j < nb {
        let (x, y) = ((i < na).then(|| a(i)), (j < nb).then(|| b(j)));
        match (x, y) {
            (Some(p), Some(q)) if p.0 == q.0 => {
                push(p.0, (1.0 - g) * p.1 + g * q.1);
                i += 1;
                j += 1;
            }
            (Some(p), Some(q)) if q.0 < p.0 => {
                push(q.0, g * q.1);
                j += 1;
            }
            (Some(p), _) => {
                push(p.0, (1.0 - g) * p.1);
                i += 1;
            }
            (None, Some(q)) => {
                push(q.0, g * q.1);
                j += 1;
            }
            (None, None) => unreachable!("the loop runs while either run has entries"),
        }
    }
}

/// K B as sparse columns, from B's columns: M (M b) for each column b, two sparse products,
/// so cells that share neighbours are expanded once (summing K's columns one by one costs
/// nnz(b) x (entries per row of M)^2, which dominated the B update for K A^T).
pub fn kb_cols(m: &Csr<f64>, b: &[SpVec]) -> Vec<SpVec> {
    let n = m.nrows();
    let (cols, vals) = (m.col_idx(), m.values());
    b.par_iter()
        .map_init(
            || (Accum::new(n), Accum::new(n)),
            |(one, two), col| {
                for &(i, w) in col {
                    for p in m.row_range(i as usize) {
                        one.add(cols[p] as u32, vals[p] * w);
                    }
                }
                one.sort_touched();
                for &j in one.touched() {
                    let u = one.get(j);
                    for q in m.row_range(j as usize) {
                        two.add(cols[q] as u32, u * vals[q]);
                    }
                }
                one.clear();
                two.take()
            },
        )
        .collect()
}
