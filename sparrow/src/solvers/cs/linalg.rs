//! The dense linear algebra the recovery solvers need, in f64: products with Phi and its
//! transpose, least squares restricted to a support (Cholesky of the normal equations), and
//! the spectral norm.

/// A dense m x n sensing matrix, row-major, in f64.
#[derive(Clone, Debug)]
pub struct Phi {
    /// Rows (measurements).
    pub m: usize,
    /// Columns (signal length).
    pub n: usize,
    /// Row-major entries.
    pub a: Vec<f64>,
}

impl Phi {
    /// `Phi x`.
    pub fn apply(&self, x: &[f64]) -> Vec<f64> {
        (0..self.m)
            .map(|i| {
                self.a[i * self.n..(i + 1) * self.n]
                    .iter()
                    .zip(x)
                    .map(|(a, b)| a * b)
                    .sum()
            })
            .collect()
    }

    /// `Phi x` for a sparse x given by its support and values.
    pub fn apply_sparse(&self, support: &[usize], vals: &[f64]) -> Vec<f64> {
        (0..self.m)
            .map(|i| {
                support
                    .iter()
                    .zip(vals)
                    .map(|(&j, v)| self.a[i * self.n + j] * v)
                    .sum()
            })
            .collect()
    }

    /// `Phi^T r` (the correlation of every column with r).
    pub fn correlate(&self, r: &[f64]) -> Vec<f64> {
        let mut g = vec![0.0; self.n];
        for (i, &ri) in r.iter().enumerate() {
            if ri != 0.0 {
                for (gj, a) in g.iter_mut().zip(&self.a[i * self.n..(i + 1) * self.n]) {
                    *gj += a * ri;
                }
            }
        }
        g
    }

    /// Column j.
    pub fn column(&self, j: usize) -> Vec<f64> {
        (0..self.m).map(|i| self.a[i * self.n + j]).collect()
    }

    /// The largest singular value, by power iteration on `Phi^T Phi` (60 steps from a fixed
    /// start: plenty for a step size, which needs only an upper estimate within a few percent).
    pub fn spectral_norm(&self) -> f64 {
        let mut v: Vec<f64> = (0..self.n).map(|j| 1.0 + (j % 7) as f64 * 0.1).collect();
        let mut s = 0.0;
        for _ in 0..60 {
            let nv = norm(&v);
            if nv == 0.0 {
                return 0.0;
            }
            v.iter_mut().for_each(|x| *x /= nv);
            let w = self.correlate(&self.apply(&v));
            s = norm(&w).sqrt();
            v = w;
        }
        s
    }

    /// Least squares restricted to `support`: argmin_z ||y - Phi_S z||, by Cholesky of
    /// `Phi_S^T Phi_S` with a tiny ridge (1e-12 of its trace) so a dependent support still
    /// solves. The support is at most a few times the sparsity, so the normal equations are small.
    pub fn lsq(&self, support: &[usize], y: &[f64]) -> Vec<f64> {
        let k = support.len();
        if k == 0 {
            return Vec::new();
        }
        let cols: Vec<Vec<f64>> = support.iter().map(|&j| self.column(j)).collect();
        let mut g = vec![0.0; k * k];
        for a in 0..k {
            for b in 0..=a {
                let d: f64 = cols[a].iter().zip(&cols[b]).map(|(x, y)| x * y).sum();
                g[a * k + b] = d;
                g[b * k + a] = d;
            }
        }
        let rhs: Vec<f64> = cols
            .iter()
            .map(|c| c.iter().zip(y).map(|(x, y)| x * y).sum())
            .collect();
        normal_solve(&mut g, k, rhs)
    }
}

/// The normal equations `G z = b` of a support as `lsq` solves them: a ridge of 1e-12 of the
/// mean diagonal, then Cholesky (G, k x k, is overwritten).
pub fn normal_solve(g: &mut [f64], k: usize, b: Vec<f64>) -> Vec<f64> {
    let trace: f64 = (0..k).map(|a| g[a * k + a]).sum();
    let ridge = 1e-12 * trace.max(f64::MIN_POSITIVE) / k as f64;
    for a in 0..k {
        g[a * k + a] += ridge;
    }
    cholesky_solve(g, k, b)
}

/// Solves `G z = b` for symmetric positive definite G (k x k, overwritten by its factor).
fn cholesky_solve(g: &mut [f64], k: usize, mut b: Vec<f64>) -> Vec<f64> {
    for j in 0..k {
        let mut d = g[j * k + j];
        for p in 0..j {
            d -= g[j * k + p] * g[j * k + p];
        }
        let d = d.max(f64::MIN_POSITIVE).sqrt();
        g[j * k + j] = d;
        for i in j + 1..k {
            let mut s = g[i * k + j];
            for p in 0..j {
                s -= g[i * k + p] * g[j * k + p];
            }
            g[i * k + j] = s / d;
        }
    }
    for i in 0..k {
        let mut s = b[i];
        for p in 0..i {
            s -= g[i * k + p] * b[p];
        }
        b[i] = s / g[i * k + i];
    }
    for i in (0..k).rev() {
        let mut s = b[i];
        for p in i + 1..k {
            s -= g[p * k + i] * b[p];
        }
        b[i] = s / g[i * k + i];
    }
    b
}

/// Least squares on a support that grows one column at a time (OMP): the Cholesky factor L of
/// the support's normal equations and v = L^-1 Phi_S^T y gain one row per column, so each
/// step costs O(s^2) plus the column's Gram entries instead of a fresh O(s^3) factorisation.
/// Each new diagonal gets a ridge of 1e-12 of itself, so a dependent column still yields a
/// finite solution. The GPU's `omp_chol` kernel does the same arithmetic per signal.
#[derive(Clone, Debug, Default)]
pub struct GrowingCholesky {
    /// Row p holds L's first p + 1 entries.
    rows: Vec<Vec<f64>>,
    v: Vec<f64>,
}

impl GrowingCholesky {
    /// Adds a column given its Gram entries with the support so far (`cross`, in support
    /// order), its own squared norm `diag` and its correlation with y `cy`.
    pub fn push(&mut self, cross: &[f64], diag: f64, cy: f64) {
        let s = self.rows.len();
        debug_assert_eq!(cross.len(), s);
        let mut w = Vec::with_capacity(s + 1);
        for (p, row) in self.rows.iter().enumerate() {
            let dot: f64 = row[..p].iter().zip(&w).map(|(a, b)| a * b).sum();
            w.push((cross[p] - dot) / row[p]);
        }
        let d = diag * (1.0 + 1e-12) - w.iter().map(|a| a * a).sum::<f64>();
        let l = d.max(f64::MIN_POSITIVE).sqrt();
        let vs = (cy - w.iter().zip(&self.v).map(|(a, b)| a * b).sum::<f64>()) / l;
        w.push(l);
        self.rows.push(w);
        self.v.push(vs);
    }

    /// The coefficients z with L L^T z = Phi_S^T y, in support order.
    pub fn solve(&self) -> Vec<f64> {
        let mut z = self.v.clone();
        for p in (0..z.len()).rev() {
            let zp = z[p] / self.rows[p][p];
            z[p] = zp;
            for (q, zq) in z[..p].iter_mut().enumerate() {
                *zq -= self.rows[p][q] * zp;
            }
        }
        z
    }
}

/// Euclidean norm.
pub fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// The indices of the `k` largest magnitudes, ascending (ties by smaller index).
pub fn top_k_abs(v: &[f64], k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    let k = k.min(v.len());
    if k < v.len() {
        idx.select_nth_unstable_by(k, |&a, &b| {
            v[b].abs().total_cmp(&v[a].abs()).then(a.cmp(&b))
        });
        idx.truncate(k);
    }
    idx.sort_unstable();
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Column by column, the growing factor solves the same least squares as a fresh
    /// factorisation of the whole support, a column dependent on two others included.
    #[test]
    fn growing_cholesky_matches_a_fresh_solve() {
        let (m, n) = (12, 6);
        let mut a: Vec<f64> = (0..m * n)
            .map(|e| ((e * 7919 % 101) as f64 / 50.0) - 1.0)
            .collect();
        for i in 0..m {
            a[i * n + 5] = a[i * n] - 2.0 * a[i * n + 3];
        }
        let phi = Phi { m, n, a };
        let y: Vec<f64> = (0..m).map(|i| (i as f64 * 0.37).sin()).collect();
        let order = [2usize, 0, 4, 3, 5, 1];
        let mut chol = GrowingCholesky::default();
        let mut support = Vec::new();
        for &j in &order {
            let col = phi.column(j);
            let dot = |b: &[f64]| -> f64 { col.iter().zip(b).map(|(x, y)| x * y).sum() };
            let cross: Vec<f64> = support.iter().map(|&p| dot(&phi.column(p))).collect();
            chol.push(&cross, dot(&col), dot(&y));
            support.push(j);
            let got = chol.solve();
            let want = phi.lsq(&support, &y);
            // Both fits leave residuals orthogonal to the support; with the dependent column
            // the coefficients are not unique, so compare the fitted measurements.
            let (fg, fw) = (
                phi.apply_sparse(&support, &got),
                phi.apply_sparse(&support, &want),
            );
            let scale = norm(&y);
            for (g, w) in fg.iter().zip(&fw) {
                assert!((g - w).abs() <= 1e-6 * scale, "{support:?}: {g} vs {w}");
            }
            if !support.contains(&5) {
                for (g, w) in got.iter().zip(&want) {
                    assert!((g - w).abs() <= 1e-9 * w.abs().max(1.0), "{g} vs {w}");
                }
            }
        }
    }
}
