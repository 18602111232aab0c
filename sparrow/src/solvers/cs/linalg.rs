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
