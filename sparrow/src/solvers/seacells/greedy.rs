//! Greedy column-subset selection on K = M M (SEACells' `_get_greedy_centers`), with every
//! vector held sparse.
//!
//! Each selected centre p adds a vector o = (K[:, p] - sum_r o_r[p] o_r) / sqrt(g_p). K[:, p] is
//! local to p's two-hop neighbourhood, and the earlier vectors that reach p are those of centres
//! nearby, so o stays local too: about a thousand entries at 50,000 cells. Kept dense, the
//! vectors cost n entries each, and every step read all of them three times, O(n c^2) time and
//! O(n c) memory for c centres (c reaches thousands where the waypoints repeat); held sparse, a
//! step touches only the entries it changes.
//!
//! Every value is the dense formulation's, in the same order of operations: a sum skips only
//! terms that are exactly zero (a factor is an entry no vector holds), which changes no
//! non-zero result, so the centres are the dense selection's (`greedy_css_dense` in the tests).

use rayon::prelude::*;

use super::sparse::{add_k_col, Accum};
use crate::matrix::Csr;

/// The best score among the cells: a max tree over (score, lower index first), where taken
/// cells and non-finite scores take no part, as the dense scan skipped them.
struct BestScore {
    size: usize,
    /// Node -> (cell, score) of its best leaf, or None.
    node: Vec<Option<(usize, f64)>>,
}

impl BestScore {
    fn new(n: usize) -> Self {
        let size = n.next_power_of_two().max(1);
        BestScore {
            size,
            node: vec![None; 2 * size],
        }
    }

    /// The better of two candidates, `a` from lower cells: a higher score, else `a`.
    fn pick(a: Option<(usize, f64)>, b: Option<(usize, f64)>) -> Option<(usize, f64)> {
        match (a, b) {
            (Some(x), Some(y)) if y.1 > x.1 => Some(y),
            (Some(x), _) => Some(x),
            (None, y) => y,
        }
    }

    /// Sets cell i's score (None: it takes no part).
    fn set(&mut self, i: usize, score: Option<f64>) {
        let mut v = self.size + i;
        self.node[v] = score.filter(|s| s.is_finite()).map(|s| (i, s));
        while v > 1 {
            v /= 2;
            self.node[v] = Self::pick(self.node[2 * v], self.node[2 * v + 1]);
        }
    }

    /// Fills every leaf, then every inner node once.
    fn fill(&mut self, score: impl Fn(usize) -> Option<f64>, n: usize) {
        for i in 0..n {
            self.node[self.size + i] = score(i).filter(|s| s.is_finite()).map(|s| (i, s));
        }
        for v in (1..self.size).rev() {
            self.node[v] = Self::pick(self.node[2 * v], self.node[2 * v + 1]);
        }
    }

    fn best(&self) -> Option<usize> {
        self.node[1].map(|b| b.0)
    }
}

/// f_j = ||K[:, j]||^2 and g_j = K_jj for every cell, the scores' starting terms.
fn k_norms(m: &Csr<f64>) -> (Vec<f64>, Vec<f64>) {
    let n = m.nrows();
    (0..n)
        .into_par_iter()
        .map_init(
            || Accum::new(n),
            |acc, j| {
                add_k_col(m, j, 1.0, acc);
                let col = acc.take();
                let f: f64 = col.iter().map(|(_, v)| v * v).sum();
                let g = col
                    .binary_search_by_key(&(j as u32), |e| e.0)
                    .map_or(0.0, |p| col[p].1);
                (f, g)
            },
        )
        .unzip()
}

/// Greedy column-subset selection on K = M M: `count` centres, each maximising the reduction of
/// the residual ||K - C C^+ K|| (score f / g), never one already chosen or in `exclude`.
pub fn greedy_css(m: &Csr<f64>, count: usize, exclude: &[usize]) -> Vec<usize> {
    let n = m.nrows();
    let (cols, vals) = (m.col_idx(), m.values());
    let (mut f, mut g) = k_norms(m);
    let mut taken = vec![false; n];
    for &e in exclude {
        if e < n {
            taken[e] = true;
        }
    }
    let mut best = BestScore::new(n);
    best.fill(|j| (!taken[j]).then(|| f[j] / g[j]), n);
    // The selected vectors by row, and by cell the (vector, value) pairs that hold it.
    let mut rows: Vec<Vec<(u32, f64)>> = Vec::new();
    let mut at: Vec<Vec<(u32, f64)>> = vec![Vec::new(); n];
    // Dense scratch, zero outside the entries a step touches.
    let (mut o, mut t, mut pl) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    let mut near = vec![false; n];
    let mut acc = Accum::new(n);
    let mut centres = Vec::new();
    for _ in 0..count.min(n) {
        let Some(p) = best.best() else { break };
        taken[p] = true;
        best.set(p, None);
        centres.push(p);
        // delta = K[:, p] - sum_r o_r[p] o_r, in ascending r.
        add_k_col(m, p, 1.0, &mut acc);
        for &(r, c) in &at[p] {
            for &(i, x) in &rows[r as usize] {
                acc.add(i, -(c * x));
            }
        }
        let sg = g[p].max(f64::MIN_POSITIVE).sqrt();
        let delta = acc.take();
        let support: Vec<u32> = delta.iter().map(|e| e.0).collect();
        for &(i, d) in &delta {
            o[i as usize] = d / sg;
        }
        // K o = M (M o), at the support only: M o wherever a row of M meets the support.
        let mut reached = Vec::new();
        for &i in &support {
            for q in m.row_range(i as usize) {
                let l = cols[q] as usize;
                if !near[l] {
                    near[l] = true;
                    reached.push(l);
                }
            }
        }
        for &l in &reached {
            t[l] = m.row_range(l).map(|q| vals[q] * o[cols[q] as usize]).sum();
        }
        let ko: Vec<f64> = support
            .iter()
            .map(|&i| {
                m.row_range(i as usize)
                    .map(|q| vals[q] * t[cols[q] as usize])
                    .sum()
            })
            .collect();
        // The earlier vectors that meet the support: their dots with o, then, in ascending r,
        // pl = sum_r dot_r o_r.
        let mut meet: Vec<u32> = support
            .iter()
            .flat_map(|&i| at[i as usize].iter().map(|e| e.0))
            .collect();
        meet.sort_unstable();
        meet.dedup();
        for &r in &meet {
            let row = &rows[r as usize];
            let dot: f64 = row.iter().map(|&(i, x)| x * o[i as usize]).sum();
            for &(i, x) in row {
                pl[i as usize] += dot * x;
            }
        }
        let onorm2: f64 = support
            .iter()
            .map(|&i| {
                let v = o[i as usize];
                v * v
            })
            .sum();
        for (s, &i) in support.iter().enumerate() {
            let i = i as usize;
            let oh = o[i] * o[i];
            f[i] += -2.0 * (o[i] * ko[s] - o[i] * pl[i]) + onorm2 * oh;
            g[i] -= oh;
            if !taken[i] {
                best.set(i, Some(f[i] / g[i]));
            }
        }
        let r = rows.len() as u32;
        let row: Vec<(u32, f64)> = support.iter().map(|&i| (i, o[i as usize])).collect();
        for &(i, x) in &row {
            at[i as usize].push((r, x));
        }
        rows.push(row);
        for &i in &support {
            o[i as usize] = 0.0;
        }
        for &r in &meet {
            for &(i, _) in &rows[r as usize] {
                pl[i as usize] = 0.0;
            }
        }
        for &l in &reached {
            t[l] = 0.0;
            near[l] = false;
        }
    }
    centres
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solvers::seacells::fit::gaussian_mixture;
    use crate::solvers::seacells::kernel::kernel;
    use crate::solvers::seacells::sparse::k_mul;
    use crate::solvers::seacells::synthetic::branching_trajectories;
    use crate::Symmetrize;

    /// The selection with every vector dense, as it ran before: the oracle.
    fn greedy_css_dense(m: &Csr<f64>, count: usize, exclude: &[usize]) -> Vec<usize> {
        let n = m.nrows();
        let (mut f, mut g) = k_norms(m);
        let mut taken = vec![false; n];
        for &e in exclude {
            if e < n {
                taken[e] = true;
            }
        }
        let mut omega: Vec<Vec<f64>> = Vec::new();
        let mut centres = Vec::new();
        let mut acc = Accum::new(n);
        for _ in 0..count.min(n) {
            let p = (0..n)
                .filter(|&j| !taken[j])
                .map(|j| (j, f[j] / g[j]))
                .filter(|(_, s)| s.is_finite())
                .fold(None, |best: Option<(usize, f64)>, (j, s)| match best {
                    Some((_, bs)) if bs >= s => best,
                    _ => Some((j, s)),
                });
            let Some((p, _)) = p else { break };
            taken[p] = true;
            centres.push(p);
            let mut delta = vec![0.0; n];
            add_k_col(m, p, 1.0, &mut acc);
            for (i, v) in acc.take() {
                delta[i as usize] = v;
            }
            for w in &omega {
                let c = w[p];
                delta.iter_mut().zip(w).for_each(|(d, x)| *d -= c * x);
            }
            let sg = g[p].max(f64::MIN_POSITIVE).sqrt();
            let o: Vec<f64> = delta.iter().map(|d| d / sg).collect();
            let ko = k_mul(m, &o);
            let dots: Vec<f64> = omega
                .iter()
                .map(|w| w.iter().zip(&o).map(|(a, b)| a * b).sum())
                .collect();
            let mut pl = vec![0.0; n];
            for (w, &c) in omega.iter().zip(&dots) {
                pl.iter_mut().zip(w).for_each(|(x, y)| *x += c * y);
            }
            let onorm2: f64 = o.iter().map(|x| x * x).sum();
            for i in 0..n {
                let oh = o[i] * o[i];
                f[i] += -2.0 * (o[i] * ko[i] - o[i] * pl[i]) + onorm2 * oh;
                g[i] -= oh;
            }
            omega.push(o);
        }
        centres
    }

    /// Sparse and dense selections agree centre for centre: mixtures (pieces that never meet),
    /// a continuous manifold (supports that overlap and chain), a dense little graph (vectors
    /// that fill it), with and without excluded cells, past the point where scores run out.
    #[test]
    fn sparse_selection_equals_the_dense_one() {
        let cases = [
            (gaussian_mixture(1500, 8, 6, 3).0, 10, 200),
            (branching_trajectories(2000, 10, 3, 4).0, 10, 300),
            (gaussian_mixture(60, 3, 1, 5).0, 15, 80),
        ];
        for (x, k, count) in cases {
            let m = kernel(&x, k, Symmetrize::Union).unwrap();
            for exclude in [vec![], vec![0, 7, 100, 59]] {
                let want = greedy_css_dense(&m, count, &exclude);
                let got = greedy_css(&m, count, &exclude);
                assert_eq!(got, want, "n = {}", m.nrows());
                assert!(got.iter().all(|c| !exclude.contains(c)));
            }
        }
    }

    /// The best-score tree picks the highest finite score, the lowest cell on ties, and
    /// forgets cells taken out.
    #[test]
    fn best_score_ties_go_to_the_lower_cell() {
        let mut b = BestScore::new(5);
        b.fill(|i| Some([1.0, 3.0, f64::NAN, 3.0, f64::INFINITY][i]), 5);
        assert_eq!(b.best(), Some(1));
        b.set(1, None);
        assert_eq!(b.best(), Some(3));
        b.set(0, Some(3.0));
        assert_eq!(b.best(), Some(0));
        for i in 0..5 {
            b.set(i, None);
        }
        assert_eq!(b.best(), None);
    }
}
