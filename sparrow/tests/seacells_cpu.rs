//! SEACells stage 1 on the CPU: the kernel against a naive dense re-derivation (every distance,
//! sort, bandwidth and weight written out), its symmetry, and bad input.

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
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/pbmc68k_reduced/X_pca.npy");
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
