//! SEACells stage 1 on the CPU: the kernel against a naive dense re-derivation (every distance,
//! sort, bandwidth and weight written out), its symmetry, and bad input.

#[cfg(not(feature = "internals"))]
compile_error!("the library's integration tests use its layers: run `cargo test --workspace`, or `cargo test -p sparrow --features testing`");

use std::path::Path;

use sparrow::matrix::{io, Dense, Rng};
use sparrow::solvers::seacells::kernel::{kernel, knn, Symmetrize};

/// The dense reference: all pairwise distances, neighbours by full sort (self first, ties by
/// index), bandwidth by the definition, weights on the symmetrised graph.
fn dense_reference(x: &Dense<f64>, k: usize, union: bool) -> Vec<f64> {
    let n = x.nrows();
    let d2 = |i: usize, j: usize| {
        x.row(i)
            .iter()
            .zip(x.row(j))
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f64>()
    };
    let nbrs: Vec<Vec<usize>> = (0..n)
        .map(|i| {
            let mut o: Vec<usize> = (0..n).collect();
            o.sort_by(|&a, &b| {
                let (da, db) = (
                    if a == i { -1.0 } else { d2(i, a) },
                    if b == i { -1.0 } else { d2(i, b) },
                );
                da.total_cmp(&db).then(a.cmp(&b))
            });
            o.truncate(k);
            o
        })
        .collect();
    let sigma: Vec<f64> = (0..n)
        .map(|i| {
            let nz: Vec<f64> = nbrs[i]
                .iter()
                .filter(|&&j| j != i && d2(i, j) > 0.0)
                .map(|&j| d2(i, j).sqrt())
                .collect();
            let want = (k / 2).max(1);
            if nz.is_empty() {
                1.0
            } else {
                nz[want.min(nz.len()) - 1]
            }
        })
        .collect();
    let mut m = vec![0.0; n * n];
    for i in 0..n {
        m[i * n + i] = 1.0;
        for j in 0..n {
            if i == j {
                continue;
            }
            let (a, b) = (nbrs[i].contains(&j), nbrs[j].contains(&i));
            let edge = if union { a || b } else { a && b };
            if edge {
                m[i * n + j] = (-d2(i, j) / (sigma[i] * sigma[j])).exp();
            }
        }
    }
    m
}

fn dense_of(c: &sparrow::matrix::Csr<f64>) -> Vec<f64> {
    let n = c.nrows();
    let mut m = vec![0.0; n * c.ncols()];
    for i in 0..n {
        for p in c.row_range(i) {
            m[i * c.ncols() + c.col_idx()[p] as usize] = c.values()[p];
        }
    }
    m
}

#[test]
fn kernel_matches_the_dense_reference() {
    let mut rng = Rng::new(3);
    // Clusters plus exact duplicates (zero distances) and a far outlier.
    let mut data = Vec::new();
    for c in 0..3 {
        for _ in 0..25 {
            for d in 0..4 {
                data.push(c as f64 * 5.0 + d as f64 * 0.1 + rng.range_f64(-1.0, 1.0));
            }
        }
    }
    let dup: Vec<f64> = data[..4].to_vec();
    data.extend_from_slice(&dup);
    data.extend_from_slice(&dup);
    data.extend_from_slice(&[100.0, 100.0, 100.0, 100.0]);
    let n = data.len() / 4;
    let x = Dense::from_rows(n, 4, data).unwrap();
    for (k, union) in [(15, true), (15, false), (4, true), (1, true)] {
        let sym = if union {
            Symmetrize::Union
        } else {
            Symmetrize::Intersection
        };
        let got = dense_of(&kernel(&x, k, sym).unwrap());
        let want = dense_reference(&x, k, union);
        for e in 0..n * n {
            assert!(
                (got[e] - want[e]).abs() <= 1e-12,
                "k {k} union {union}: entry ({}, {}) {} vs {}",
                e / n,
                e % n,
                got[e],
                want[e]
            );
        }
    }
}

/// The blocked kNN against a plain scan (every distance summed in dimension order, a full sort
/// by distance then index, the cell first) over several blocks of cells and rows, with copied
/// cells so exact ties and zero distances to other cells occur: the same lists bit for bit.
#[test]
fn knn_matches_a_plain_scan_over_many_blocks() {
    let (n, d, k) = (1_300usize, 7usize, 30usize);
    let mut rng = Rng::new(11);
    let mut v: Vec<f64> = (0..n * d).map(|_| rng.uniform()).collect();
    for i in (0..n).step_by(41) {
        let j = (i * 13 + 3) % n;
        let row: Vec<f64> = v[j * d..(j + 1) * d].to_vec();
        v[i * d..(i + 1) * d].copy_from_slice(&row);
    }
    let x = Dense::from_rows(n, d, v.clone()).unwrap();
    let got = knn(&x, k).unwrap();
    for i in 0..n {
        let mut all: Vec<(f64, u32)> = (0..n)
            .map(|j| {
                let d2: f64 = (0..d)
                    .map(|c| (v[i * d + c] - v[j * d + c]) * (v[i * d + c] - v[j * d + c]))
                    .sum();
                (if j == i { -1.0 } else { d2 }, j as u32)
            })
            .collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        all[0].0 = 0.0;
        let want: Vec<(u32, f64)> = all[..k].iter().map(|&(d2, j)| (j, d2)).collect();
        assert_eq!(got[i], want, "cell {i}");
    }
}

#[test]
fn knn_puts_the_cell_first_and_sorts() {
    let x = Dense::from_rows(4, 1, vec![0.0, 0.0, 3.0, 1.0]).unwrap();
    let nb = knn(&x, 3).unwrap();
    assert_eq!(
        nb[1].iter().map(|p| p.0).collect::<Vec<_>>(),
        vec![1, 0, 3],
        "self first, then the duplicate, then by distance"
    );
    assert_eq!(
        nb[2].iter().map(|p| p.1).collect::<Vec<_>>(),
        vec![0.0, 4.0, 9.0]
    );
}

#[test]
fn pbmc68k_reduced_kernel_is_symmetric_with_self_loops() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/pbmc68k_reduced/X_pca.npy");
    let x: Dense<f32> = io::read_dense(&path).unwrap();
    assert_eq!((x.nrows(), x.ncols()), (700, 50));
    let m = kernel(&x, 15, Symmetrize::Union).unwrap();
    let d = dense_of(&m);
    for i in 0..700 {
        assert_eq!(d[i * 700 + i], 1.0);
        assert!(
            m.row_range(i).len() >= 15,
            "row {i} has fewer than k entries"
        );
        for j in 0..700 {
            assert_eq!(d[i * 700 + j], d[j * 700 + i], "asymmetric at ({i}, {j})");
            assert!((0.0..=1.0).contains(&d[i * 700 + j]));
        }
    }
    let inter = kernel(&x, 15, Symmetrize::Intersection).unwrap();
    assert!(inter.nnz() < m.nnz());
}

#[test]
fn bad_embeddings_are_refused() {
    let mut x = Dense::from_rows(3, 2, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
    assert_eq!(
        knn(&x, 4).unwrap_err().to_string(),
        "invalid argument `knn`: k = 4 must be in 1..=3 (the number of cells)"
    );
    assert_eq!(
        knn(&x, 0).unwrap_err().to_string(),
        "invalid argument `knn`: k = 0 must be in 1..=3 (the number of cells)"
    );
    x.data_mut()[3] = f64::NAN;
    assert_eq!(
        knn(&x, 2).unwrap_err().to_string(),
        "invalid argument `embedding`: cell 1, dimension 1 is not finite"
    );
}

// ---- Stages 2 to 5: initialisation, Frank-Wolfe updates, RSS, the fit ----------------------

#[allow(clippy::needless_range_loop)] // dense references spell out their indices
mod fit {
    use sparrow::matrix::{Csr, Dense};
    use sparrow::solvers::seacells::fit::{
        aggregate_hard, aggregate_soft, fit, gaussian_mixture, purity, Config,
    };
    use sparrow::solvers::seacells::fw::{btkb, kb_cols, rss, trace_k, update_a, update_b};
    use sparrow::solvers::seacells::init::max_min;
    use sparrow::solvers::seacells::kernel::{kernel, Symmetrize};
    use sparrow::solvers::seacells::rows::transpose;
    use sparrow::solvers::seacells::sparse::SpVec;

    fn dense(m: &Csr<f64>) -> Vec<Vec<f64>> {
        let mut d = vec![vec![0.0; m.ncols()]; m.nrows()];
        for i in 0..m.nrows() {
            for p in m.row_range(i) {
                d[i][m.col_idx()[p] as usize] = m.values()[p];
            }
        }
        d
    }

    fn mul(a: &[Vec<f64>], b: &[Vec<f64>]) -> Vec<Vec<f64>> {
        let (n, k, p) = (a.len(), b.len(), b[0].len());
        (0..n)
            .map(|i| {
                (0..p)
                    .map(|j| (0..k).map(|l| a[i][l] * b[l][j]).sum())
                    .collect()
            })
            .collect()
    }

    fn tr(a: &[Vec<f64>]) -> Vec<Vec<f64>> {
        (0..a[0].len())
            .map(|j| a.iter().map(|r| r[j]).collect())
            .collect()
    }

    /// Sparse columns (length `n` each) as a dense n x cols matrix.
    fn cols_dense(c: &[SpVec], n: usize) -> Vec<Vec<f64>> {
        let mut d = vec![vec![0.0; c.len()]; n];
        for (j, col) in c.iter().enumerate() {
            for &(i, v) in col {
                d[i as usize][j] = v;
            }
        }
        d
    }

    fn argmin_col(g: &[Vec<f64>], c: usize) -> usize {
        (0..g.len()).fold(0, |b, i| if g[i][c] < g[b][c] { i } else { b })
    }

    fn small() -> (Csr<f64>, usize) {
        let (x, _) = gaussian_mixture(90, 4, 3, 5);
        (kernel(&x, 8, Symmetrize::Union).unwrap(), 90)
    }

    /// K B by two sparse products with M against the dense K B: every value to 1e-13 of the
    /// column's scale, and exactly the cells two hops from the column's atoms (a column with
    /// no atoms stays empty).
    #[test]
    fn kb_cols_match_dense_k_b() {
        let (m, n) = small();
        // Enough columns that each thread's scratch serves several in turn.
        let mut b: Vec<SpVec> = vec![
            vec![(0, 0.5), (1, 0.25), (2, 0.25)],
            vec![(40, 1.0)],
            vec![],
            (0..n as u32).step_by(7).map(|i| (i, 1.0 / 13.0)).collect(),
        ];
        for c in 0..60u32 {
            b.push(if c % 9 == 4 {
                vec![]
            } else {
                vec![((c * 7) % n as u32, 0.7), ((c * 13 + 5) % n as u32, 0.3)]
            });
        }
        b.iter_mut().for_each(|col| col.sort_by_key(|e| e.0));
        b.iter_mut().for_each(|col| col.dedup_by_key(|e| e.0));
        let kb = kb_cols(&m, &b);
        let md = dense(&m);
        let kd = mul(&md, &md);
        let bd = cols_dense(&b, n);
        let want = mul(&kd, &bd); // n x nm
        for (c, col) in kb.iter().enumerate() {
            let scale = (0..n).map(|i| want[i][c].abs()).fold(0.0, f64::max);
            assert!(
                col.windows(2).all(|w| w[0].0 < w[1].0),
                "column {c} not sorted"
            );
            for i in 0..n {
                let got = col.iter().find(|e| e.0 as usize == i).map(|e| e.1);
                // Two hops from an atom: some k with M[i, k] and M[k, atom] both stored.
                let reached = b[c]
                    .iter()
                    .any(|&(a, _)| (0..n).any(|k| md[i][k] != 0.0 && md[k][a as usize] != 0.0));
                assert_eq!(got.is_some(), reached, "column {c} cell {i}");
                let d = (got.unwrap_or(0.0) - want[i][c]).abs();
                assert!(d <= 1e-13 * scale.max(1e-300), "column {c} cell {i}: {d}");
            }
        }
        assert!(kb[2].is_empty() && kb[8].is_empty());
    }

    /// The A update against the reference's dense formulas: t2 = (K B)^T, t1 = t2 B,
    /// G = t1 A - t2, A += 2 / (t + 2) (e_argmin - A), 50 steps.
    #[test]
    fn a_update_matches_dense_frank_wolfe() {
        let (m, n) = small();
        let nm = 7;
        let b: Vec<SpVec> = (0..nm)
            .map(|c| vec![(c as u32 * 11, 0.6), (c as u32 * 11 + 3, 0.4)])
            .collect();
        let prev: Vec<SpVec> = (0..n).map(|i| vec![((i % nm) as u32, 1.0)]).collect();
        let kb = kb_cols(&m, &b);
        let t1 = btkb(&kb, &transpose(&b, n));
        let got = update_a(&transpose(&kb, n), &t1, nm, Some(&prev), 50);

        let md = dense(&m);
        let kd = mul(&md, &md);
        let bd = cols_dense(&b, n);
        let t2 = tr(&mul(&kd, &bd));
        let t1d = mul(&t2, &bd);
        let mut a_nm = cols_dense(&prev, nm); // nm x n
        for t in 0..50 {
            let g: Vec<Vec<f64>> = (0..nm)
                .map(|c| {
                    (0..n)
                        .map(|i| (0..nm).map(|k| t1d[c][k] * a_nm[k][i]).sum::<f64>() - t2[c][i])
                        .collect()
                })
                .collect();
            let gamma = 2.0 / (t as f64 + 2.0);
            for i in 0..n {
                let col: Vec<Vec<f64>> = g.iter().map(|r| vec![r[i]]).collect();
                let c = argmin_col(&col, 0);
                for (k, row) in a_nm.iter_mut().enumerate() {
                    row[i] += gamma * (if k == c { 1.0 } else { 0.0 } - row[i]);
                }
            }
        }
        for i in 0..n {
            for c in 0..nm {
                let w = got[i]
                    .iter()
                    .find(|x| x.0 as usize == c)
                    .map_or(0.0, |x| x.1);
                assert!(
                    (w - a_nm[c][i]).abs() < 1e-9,
                    "cell {i} metacell {c}: {w} vs {}",
                    a_nm[c][i]
                );
            }
        }
    }

    /// The B update against the dense reference: G = K B (A A^T) - K A^T, argmin over cells
    /// per column, the duality-gap stop after 10 steps; with fewer archetypes than one group of
    /// (four) gradient columns, exactly two groups, and full groups with a partial one.
    #[test]
    fn b_update_matches_dense_frank_wolfe() {
        let (m, n) = small();
        for nm in [3, 5, 8, 11] {
            let a: Vec<SpVec> = (0..n)
                .map(|i| vec![((i % nm) as u32, 0.7), (((i + 1) % nm) as u32, 0.3)])
                .collect();
            let b0: Vec<SpVec> = (0..nm)
                .map(|c| vec![((c * (85 / nm)) as u32, 1.0)])
                .collect();
            let got = update_b(&m, &a, &b0, 50, 10, 1e-3);

            let md = dense(&m);
            let kd = mul(&md, &md);
            let ad = cols_dense(&a, nm); // nm x n
            let t1 = mul(&ad, &tr(&ad));
            let t2 = mul(&kd, &tr(&ad));
            let mut bd = cols_dense(&b0, n); // n x nm
            let mut gap0 = 0.0;
            let mut steps = 0;
            for t in 0..50 {
                let kb = mul(&kd, &bd);
                let g: Vec<Vec<f64>> = (0..n)
                    .map(|i| {
                        (0..nm)
                            .map(|c| (0..nm).map(|k| kb[i][k] * t1[k][c]).sum::<f64>() - t2[i][c])
                            .collect()
                    })
                    .collect();
                let picks: Vec<usize> = (0..nm).map(|c| argmin_col(&g, c)).collect();
                let gap: f64 = (0..nm)
                    .map(|c| (0..n).map(|i| bd[i][c] * g[i][c]).sum::<f64>() - g[picks[c]][c])
                    .sum();
                if t == 0 {
                    gap0 = gap;
                }
                if t >= 10 && gap <= 1e-3 * gap0 {
                    break;
                }
                let gamma = 2.0 / (t as f64 + 2.0);
                for c in 0..nm {
                    for (i, row) in bd.iter_mut().enumerate() {
                        row[c] += gamma * (if i == picks[c] { 1.0 } else { 0.0 } - row[c]);
                    }
                }
                steps = t + 1;
            }
            assert_eq!(got.steps, steps);
            let gb = cols_dense(&got.b, n);
            for i in 0..n {
                for c in 0..nm {
                    assert!((gb[i][c] - bd[i][c]).abs() < 1e-9, "B[{i},{c}]");
                }
            }
        }
    }

    /// RSS by the trace identity against ||M - M B A||_F materialised.
    #[test]
    fn rss_identity_matches_materialised() {
        let (m, n) = small();
        let nm = 6;
        let b: Vec<SpVec> = (0..nm)
            .map(|c| vec![(c as u32 * 13, 0.5), (c as u32 * 13 + 1, 0.5)])
            .collect();
        let a: Vec<SpVec> = (0..n)
            .map(|i| vec![((i * 7 % nm) as u32, 0.8), (((i * 7 + 2) % nm) as u32, 0.2)])
            .collect();
        let kb = kb_cols(&m, &b);
        let t1 = btkb(&kb, &transpose(&b, n));
        let got = rss(trace_k(&m), &kb, &a, &t1);
        let md = dense(&m);
        let mba = mul(&mul(&md, &cols_dense(&b, n)), &cols_dense(&a, nm));
        let want: f64 = (0..n)
            .flat_map(|i| (0..n).map(move |j| (i, j)))
            .map(|(i, j)| (md[i][j] - mba[i][j]).powi(2))
            .sum::<f64>()
            .sqrt();
        assert!(
            (got - want).abs() <= 1e-9 * want.max(1.0),
            "{got} vs {want}"
        );
    }

    /// Max-min sampling against the definition: every new point is the first farthest from
    /// those chosen.
    #[test]
    fn max_min_is_farthest_point_sampling() {
        let v: Vec<f64> = (0..200)
            .map(|i| ((i * 37) % 101) as f64 * 0.5 - (i % 7) as f64)
            .collect();
        let mut rng = sparrow::matrix::Rng::new(3);
        let got = max_min(std::slice::from_ref(&v), 12, &mut rng);
        assert_eq!(got.len(), 12);
        for k in 1..got.len() {
            let d = |i: usize| {
                got[..k]
                    .iter()
                    .map(|&w| (v[i] - v[w]).abs())
                    .fold(f64::INFINITY, f64::min)
            };
            let best = (0..v.len()).fold(0, |b, i| if d(i) > d(b) { i } else { b });
            assert_eq!(got[k], best, "point {k}");
        }
    }

    fn mixture_fit(seed: u64) -> (sparrow::solvers::seacells::fit::Fit, Vec<usize>) {
        let (x, labels) = gaussian_mixture(1500, 10, 10, 7);
        let mut cfg = Config::new(50);
        cfg.seed = seed;
        (fit(&x, &cfg, &mut |_| {}).unwrap(), labels)
    }

    #[test]
    fn gaussian_mixture_purity_and_determinism() {
        let (f, labels) = mixture_fit(0);
        let labels: Vec<String> = labels.iter().map(|l| l.to_string()).collect();
        let p = purity(&f.assignments, &labels, 50).unwrap();
        let (sum, cnt) = p.iter().flatten().fold((0.0, 0), |a, x| (a.0 + x, a.1 + 1));
        let mean = sum / cnt as f64;
        assert!(mean >= 0.95, "mean purity {mean}");
        assert!(f.rss.iter().all(|r| r.is_finite()));
        assert!(f.iterations >= 10 && f.iterations <= 100);
        let (g, _) = mixture_fit(0);
        assert_eq!(f.assignments, g.assignments);
        assert_eq!(
            f.rss.iter().map(|r| r.to_bits()).collect::<Vec<_>>(),
            g.rss.iter().map(|r| r.to_bits()).collect::<Vec<_>>()
        );
        // Aggregates: hard sums keep every count; soft means are convex combinations.
        let counts = Csr::from_triplets(
            1500,
            3,
            &(0..1500).collect::<Vec<_>>(),
            &(0..1500).map(|i| i % 3).collect::<Vec<_>>(),
            &vec![2.0; 1500],
        )
        .unwrap();
        let h = aggregate_hard(&counts, &f.assignments, 50).unwrap();
        assert!((h.values().iter().sum::<f64>() - 3000.0).abs() < 1e-9);
        let s = aggregate_soft(&counts, &f.a, 50, 0.05).unwrap();
        assert!(s.values().iter().all(|&v| (0.0..=2.0 + 1e-12).contains(&v)));
    }

    #[test]
    fn malformed_input_is_a_clear_error() {
        let (x, _) = gaussian_mixture(40, 3, 2, 1);
        let err = |cfg: &Config, x: &Dense<f64>| fit(x, cfg, &mut |_| {}).unwrap_err().to_string();
        assert!(err(&Config::new(41), &x).contains("n_metacells"));
        assert!(err(&Config::new(0), &x).contains("n_metacells"));
        let mut d = x.data().to_vec();
        d[7] = f64::NAN;
        let bad = Dense::from_rows(40, 3, d).unwrap();
        assert!(err(&Config::new(4), &bad).contains("embedding"));
        let e = purity(&[0, 1], &["a".to_string()], 2)
            .unwrap_err()
            .to_string();
        assert!(e.contains("labels"), "{e}");
    }

    /// Every degenerate input is refused by the config's validation, before any work (the
    /// progress callback never runs), with the argument named and the exact message.
    #[test]
    fn degenerate_inputs_are_refused_before_any_work() {
        let (x, _) = gaussian_mixture(200, 3, 2, 1);
        let refuse = |cfg: &Config, x: &Dense<f64>| {
            let e = cfg.validate(x).unwrap_err();
            let mut ran = false;
            let f = fit(x, cfg, &mut |_| ran = true).unwrap_err();
            assert!(!ran);
            assert_eq!(e.to_string(), f.to_string());
            (e.argument().unwrap_or("").to_string(), e.to_string())
        };
        let with = |f: &dyn Fn(&mut Config)| {
            let mut c = Config::new(10);
            f(&mut c);
            c
        };
        let cases: Vec<(Config, Dense<f64>, &str, &str)> = vec![
            (
                Config::new(10),
                Dense::from_rows(200, 0, vec![]).unwrap(),
                "embedding",
                "200 cells x 0 dimensions: at least 1 dimension is needed",
            ),
            (
                Config::new(1),
                Dense::from_rows(0, 3, vec![]).unwrap(),
                "embedding",
                "0 cells: at least 2 are needed",
            ),
            (
                Config::new(1),
                Dense::from_rows(1, 3, vec![0.0; 3]).unwrap(),
                "embedding",
                "1 cells: at least 2 are needed",
            ),
            (
                Config::new(0),
                x.clone(),
                "n_metacells",
                "0 must be in 1..=200 (the number of cells)",
            ),
            (
                Config::new(201),
                x.clone(),
                "n_metacells",
                "201 must be in 1..=200 (the number of cells)",
            ),
            (
                with(&|c| c.knn = 0),
                x.clone(),
                "knn",
                "0 must be in 2..=200 (the cell itself and at least one neighbour, at most the number of cells)",
            ),
            (
                with(&|c| c.knn = 1),
                x.clone(),
                "knn",
                "1 must be in 2..=200 (the cell itself and at least one neighbour, at most the number of cells)",
            ),
            (
                with(&|c| c.knn = 201),
                x.clone(),
                "knn",
                "201 must be in 2..=200 (the cell itself and at least one neighbour, at most the number of cells)",
            ),
            (
                with(&|c| {
                    c.min_iter = 20;
                    c.max_iter = 10
                }),
                x.clone(),
                "min_iter",
                "20 exceeds max_iter = 10",
            ),
            (
                with(&|c| {
                    c.min_iter = 0;
                    c.max_iter = 0
                }),
                x.clone(),
                "max_iter",
                "0 must be positive",
            ),
            (
                with(&|c| c.epsilon = -1e-3),
                x.clone(),
                "epsilon",
                "-0.001 must be finite and at least 0 (0 runs max_iter iterations)",
            ),
            (
                with(&|c| c.epsilon = f64::NAN),
                x.clone(),
                "epsilon",
                "NaN must be finite and at least 0 (0 runs max_iter iterations)",
            ),
            (
                with(&|c| c.epsilon = f64::INFINITY),
                x.clone(),
                "epsilon",
                "inf must be finite and at least 0 (0 runs max_iter iterations)",
            ),
            (
                with(&|c| c.fw_steps = 0),
                x.clone(),
                "fw_steps",
                "0 must be positive",
            ),
        ];
        for (cfg, x, arg, why) in &cases {
            let (got_arg, msg) = refuse(cfg, x);
            assert_eq!(got_arg, *arg, "{msg}");
            assert_eq!(msg, format!("invalid argument `{arg}`: {why}"));
        }
        // Non-finite values: the first bad cell and dimension, in cell order.
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let mut d = x.data().to_vec();
            d[13 * 3 + 2] = bad;
            d[150 * 3] = f64::NAN;
            let y = Dense::from_rows(200, 3, d).unwrap();
            let (arg, msg) = refuse(&Config::new(10), &y);
            assert_eq!(arg, "embedding");
            assert_eq!(
                msg,
                "invalid argument `embedding`: cell 13, dimension 2 is not finite"
            );
        }
        // An f32 embedding is checked alike.
        let mut d: Vec<f32> = x.data().iter().map(|&v| v as f32).collect();
        d[5] = f32::NAN;
        let y = Dense::from_rows(200, 3, d).unwrap();
        assert_eq!(
            Config::new(10).validate(&y).unwrap_err().to_string(),
            "invalid argument `embedding`: cell 1, dimension 2 is not finite"
        );
        // The edges of the ranges pass: epsilon 0 runs max_iter iterations.
        let mut cfg = Config::new(200);
        cfg.knn = 2;
        cfg.epsilon = 0.0;
        cfg.min_iter = 3;
        cfg.max_iter = 3;
        cfg.validate(&x).unwrap();
        let mut c1 = Config::new(1);
        c1.knn = 200;
        c1.validate(&x).unwrap();
        let mut small = Config::new(8);
        small.epsilon = 0.0;
        small.min_iter = 0;
        small.max_iter = 4;
        let f = fit(&x, &small, &mut |_| {}).unwrap();
        assert_eq!((f.iterations, f.converged), (4, false));
    }

    /// Metacells shared by largest remainders; one piece of every cell initialises as the
    /// whole graph does.
    #[test]
    fn shares_and_initialisation_by_piece() {
        use sparrow::solvers::seacells::diffusion::{diffusion_kernel, diffusion_map, multiscale};
        use sparrow::solvers::seacells::init::{
            initial_archetypes, initial_archetypes_by_piece, shares,
        };
        use sparrow::solvers::seacells::kernel::knn;
        assert_eq!(shares(24, &[80; 6]), vec![4; 6]);
        assert_eq!(shares(10, &[5, 3, 2]), vec![5, 3, 2]);
        assert_eq!(shares(7, &[3, 3, 3]), vec![3, 2, 2]);
        assert_eq!(shares(5, &[1, 7, 2]), vec![1, 3, 1]);
        assert_eq!(shares(5, &[0, 0]), vec![0, 0]);
        let (x, _) = gaussian_mixture(300, 4, 3, 2);
        let m = kernel(&x, 10, Symmetrize::Union).unwrap();
        let w = diffusion_kernel(&knn(&x, 30).unwrap(), 30, 10).unwrap();
        let comps = multiscale(&diffusion_map(&w, 10, 1).unwrap());
        let all: Vec<usize> = (0..300).collect();
        for nm in [5, 27, 40] {
            assert_eq!(
                initial_archetypes_by_piece(&m, &comps, std::slice::from_ref(&all), nm, 1),
                initial_archetypes(&m, &comps, nm, 1)
            );
        }
    }

    /// Well-separated unit-scale clusters: `per` cells each around `clusters` centres 40 apart,
    /// round-robin (cell i in cluster i % clusters).
    fn separated(clusters: usize, per: usize, d: usize, seed: u64) -> (Dense<f64>, Vec<usize>) {
        let mut rng = sparrow::matrix::Rng::new(seed);
        let n = clusters * per;
        let mut data = Vec::with_capacity(n * d);
        for i in 0..n {
            let c = i % clusters;
            for k in 0..d {
                let mu = if k == c % d {
                    40.0 * (1 + c / d) as f64
                } else {
                    0.0
                };
                let (u1, u2) = (rng.uniform().max(1e-300), rng.uniform());
                data.push(mu + (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos());
            }
        }
        (
            Dense::from_rows(n, d, data).unwrap(),
            (0..n).map(|i| i % clusters).collect(),
        )
    }

    /// A kNN graph that falls apart into one component per cluster: the fit counts them, and
    /// compactness and separation stay finite and of the size they have on one cluster alone
    /// (the map of the whole graph scales its extra eigenvalue-1 vectors by 1e9), with purity
    /// high.
    #[test]
    fn disconnected_clusters_keep_metrics_finite() {
        use sparrow::solvers::seacells::diffusion::{diffusion_kernel, diffusion_map, multiscale};
        use sparrow::solvers::seacells::fit::{compactness, mean_purity, separation_within};
        use sparrow::solvers::seacells::graph::connected_components;
        use sparrow::solvers::seacells::kernel::knn;

        let (clusters, per) = (6, 80);
        let (x, labels) = separated(clusters, per, 5, 3);
        let n = clusters * per;
        // The bug this guards against: the map of the whole (disconnected) diffusion graph.
        let w = diffusion_kernel(&knn(&x, 30).unwrap(), 30, 10).unwrap();
        assert_eq!(connected_components(&w).count, clusters);
        let whole = multiscale(&diffusion_map(&w, 10, 0).unwrap());
        let nm = 24;
        let mut cfg = Config::new(nm);
        cfg.knn = 5;
        let f = fit(&x, &cfg, &mut |_| {}).unwrap();
        let worst = compactness(&f.assignments, &whole, nm)
            .into_iter()
            .flatten()
            .fold(0.0f64, f64::max);
        assert!(
            worst > 1e6,
            "the whole graph's map gave compactness {worst}"
        );

        assert_eq!(f.graph_components, clusters);
        let want: Vec<u32> = (0..n).map(|i| (i % clusters) as u32).collect();
        assert_eq!(f.diffusion_labels, want);
        assert!(f.rss.iter().all(|r| r.is_finite()));
        assert_eq!(f.components.len(), 9);
        let comp = f.compactness();
        let sep = f.separation();
        assert_eq!(
            sep,
            separation_within(&f.assignments, &f.components, &f.diffusion_labels, nm).unwrap()
        );
        for m in 0..nm {
            let (c, s) = (comp[m].unwrap(), sep[m].unwrap());
            assert!(
                c.is_finite() && (0.0..1e3).contains(&c),
                "metacell {m}: {c}"
            );
            assert!(s.is_finite() && s > 0.0 && s < 1e3, "metacell {m}: {s}");
        }
        // The same scale as one cluster fitted alone (its 4 metacells).
        let one: Vec<f64> = (0..per)
            .flat_map(|i| x.row(i * clusters).to_vec())
            .collect();
        let one = Dense::from_rows(per, 5, one).unwrap();
        let mut c1 = Config::new(nm / clusters);
        c1.knn = 5;
        let g = fit(&one, &c1, &mut |_| {}).unwrap();
        assert_eq!(
            (g.graph_components, g.diffusion_labels.iter().max()),
            (1, Some(&0))
        );
        let alone = g.compactness().into_iter().flatten().fold(0.0f64, f64::max);
        let here = comp.iter().flatten().fold(0.0f64, |a, &b| a.max(b));
        assert!(here <= 100.0 * alone.max(1e-3), "{here} vs {alone} alone");

        let names: Vec<String> = labels.iter().map(|l| l.to_string()).collect();
        let p = mean_purity(&purity(&f.assignments, &names, nm).unwrap());
        assert!(p >= 0.95, "mean purity {p}");
        assert!(separation_within(&f.assignments, &f.components, &[0, 1], nm).is_err());
    }

    /// pbmc68k_reduced, `Config::new(20)`, as fitted before components were counted.
    const PBMC_RSS_BITS: [u64; 13] = [
        4631160553984426222,
        4630746583474350035,
        4630451718403348081,
        4630421273189071846,
        4630407281548097296,
        4630396070829946696,
        4630385832372101066,
        4630373295986441112,
        4630358633774380332,
        4630348034146146778,
        4630339473845320313,
        4630332923507057213,
        4630328913285791858,
    ];
    const PBMC_INIT: [i64; 20] = [
        302, 695, 18, 287, 679, 667, 74, 197, 229, 432, 121, 272, 540, 95, 171, 222, 666, 632, 85,
        644,
    ];
    const PBMC_ASSIGN_FNV: u64 = 0x7fad08ebb87e7fcb;

    /// A connected graph keeps one component and the fit of the whole graph's diffusion map,
    /// bit for bit as before components were counted (values recorded from that code).
    #[test]
    fn connected_pbmc68k_fit_is_unchanged() {
        use sparrow::matrix::io;
        use sparrow::solvers::seacells::fit::separation;
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../data/pbmc68k_reduced/X_pca.npy");
        let x: Dense<f32> = io::read_dense(&path).unwrap();
        let f = fit(&x, &Config::new(20), &mut |_| {}).unwrap();
        assert_eq!(f.graph_components, 1);
        assert!(f.diffusion_labels.iter().all(|&l| l == 0));
        assert_eq!(
            f.rss.iter().map(|r| r.to_bits()).collect::<Vec<_>>(),
            PBMC_RSS_BITS
        );
        assert_eq!(f.initial_archetypes, PBMC_INIT);
        // FNV-1a of the assignments.
        let h = f
            .assignments
            .iter()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, &a| {
                (h ^ a as u32 as u64).wrapping_mul(0x100_0000_01b3)
            });
        assert_eq!(h, PBMC_ASSIGN_FNV, "assignments changed");
        assert_eq!(
            f.separation(),
            separation(&f.assignments, &f.components, 20)
        );
    }

    #[test]
    fn branching_trajectories_make_one_piece_and_pure_metacells() {
        use sparrow::solvers::seacells::fit::mean_purity;
        use sparrow::solvers::seacells::synthetic::branching_trajectories;
        let (x, labels) = branching_trajectories(2_000, 30, 4, 0);
        assert_eq!(branching_trajectories(2_000, 30, 4, 0).0.data(), x.data());
        assert_eq!((0..5).filter(|s| labels.contains(s)).count(), 5);
        let f = fit(&x, &Config::new(40), &mut |_| {}).unwrap();
        // A continuous manifold: one graph, one diffusion map (no mixture's pieces).
        assert_eq!(f.graph_components, 1);
        assert!(f.diffusion_labels.iter().all(|&l| l == 0));
        let names: Vec<String> = labels.iter().map(|l| l.to_string()).collect();
        let p = mean_purity(&purity(&f.assignments, &names, 40).unwrap());
        // Cells near the branch point mix trunk and arms; elsewhere metacells are pure.
        assert!(p > 0.95, "mean purity {p}");
    }

    #[test]
    fn progress_hears_every_stage_then_each_iteration_and_cancel_stops_between_stages() {
        use sparrow::solvers::seacells::fit::Progress;
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let (x, _) = gaussian_mixture(300, 5, 3, 2);
        let mut cfg = Config::new(12);
        let mut heard = Vec::new();
        let f = fit(&x, &cfg, &mut |p| heard.push(p)).unwrap();
        let stages = ["knn", "kernel", "diffusion", "initialise", "fit"].map(Progress::Stage);
        assert_eq!(heard[..5], stages);
        assert_eq!(heard.len(), 5 + f.iterations);
        assert_eq!(heard[5], Progress::Iteration(1, f.rss[1]));
        // A flag set while the kernel is announced stops the fit before the diffusion map.
        let flag = Arc::new(AtomicBool::new(false));
        cfg.cancel = Some(flag.clone());
        let e = fit(&x, &cfg, &mut |p| {
            if p == Progress::Stage("kernel") {
                flag.store(true, Ordering::Relaxed);
            }
        })
        .unwrap_err();
        assert!(matches!(e, sparrow::Error::Interrupted { .. }), "{e}");
        assert!(e.to_string().contains("before its kernel stage"), "{e}");
    }
}

/// The summary's time by part names the products between updates and the B update's parts,
/// each a finite, non-negative number of seconds.
#[test]
fn fit_summary_reports_seconds_by_part() {
    use sparrow::solvers::seacells::fit::{fit_on, gaussian_mixture, Config};
    let (x, _) = gaussian_mixture(400, 5, 4, 3);
    let fit = fit_on(&sparrow::Device::Cpu, &x, &Config::new(8), &mut |_| {}).unwrap();
    let s = fit.summary(5, None).unwrap();
    let by_part = s["fit_seconds_by_part"].as_object().unwrap();
    for key in ["t1", "rss"] {
        let v = by_part[key].as_f64().unwrap();
        assert!(v.is_finite() && v >= 0.0, "{key}: {v}");
    }
    let b = s["b_update_seconds"].as_object().unwrap();
    for key in ["prepare-aat", "prepare-layout", "gradient", "kb-blend"] {
        let v = b[key].as_f64().unwrap_or(-1.0);
        assert!(v.is_finite() && v >= 0.0, "{key}: {v}");
    }
}
