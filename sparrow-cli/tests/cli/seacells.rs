//! `seacells` on pbmc68k_reduced: every output file against the library's fit.

use sparrow::matrix::io;
use sparrow::matrix::Dense;

use super::{failure, s, sparrow, tmp};

/// SEACells on pbmc68k_reduced: every output file, the summary's fields, and the assignments
/// the library gives for the same seed; bad arguments named.
#[test]
fn seacells_writes_every_output() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/pbmc68k_reduced");
    let (x, labels) = (data.join("X_pca.npy"), data.join("labels.txt"));
    let counts = tmp("sea-counts.npy");
    io::write_npy(
        &counts,
        &[700, 2],
        &(0..1400).map(|i| (i % 5) as f64).collect::<Vec<_>>(),
    )
    .unwrap();
    let dir = tmp("sea-out");
    let out = sparrow(&[
        "--device",
        "cpu",
        "seacells",
        "--embedding",
        s(&x),
        "--n-metacells",
        "20",
        "--labels",
        s(&labels),
        "--counts",
        s(&counts),
        "--out-dir",
        s(&dir),
    ]);
    assert!(out.status.success(), "{out:?}");
    for f in [
        "assignments.npy",
        "archetypes.npy",
        "soft.npz",
        "soft_top5_index.npy",
        "soft_top5_weight.npy",
        "summary.json",
        "metacell_counts.npz",
        "metacell_soft_means.npz",
    ] {
        assert!(dir.join(f).exists(), "{f}");
    }
    let sm: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(sm["cells"], 700);
    assert!(sm["iterations"].as_u64().unwrap() >= 10);
    assert!(sm["purity_mean"].as_f64().unwrap() > 0.5);
    let got = io::read_npy(dir.join("assignments.npy"))
        .unwrap()
        .data
        .to_i64(&dir, "assignments")
        .unwrap();
    let emb: Dense<f32> = io::read_dense(&x).unwrap();
    let emb = Dense::from_rows(
        700,
        50,
        emb.to_packed().data().iter().map(|&v| v as f64).collect(),
    )
    .unwrap();
    let f = sparrow::solvers::seacells::fit::fit(
        &emb,
        &sparrow::solvers::seacells::fit::Config::new(20),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(
        got,
        f.assignments.iter().map(|&a| a as i64).collect::<Vec<_>>()
    );
    assert!(f.diffusion_iterations >= 10);
    assert_eq!(
        sm["diffusion_iterations"].as_u64(),
        Some(f.diffusion_iterations as u64)
    );
    assert_eq!(
        sm["b_update_steps"].as_array().map(|v| v.len()),
        Some(f.b_steps.len())
    );
    let read = |name: &str| {
        io::read_npy(dir.join(name))
            .unwrap()
            .data
            .to_i64(&dir, name)
            .unwrap()
    };
    assert_eq!(read("archetypes.npy"), f.archetypes);
    let (top_i, top_w) = sparrow::solvers::seacells::fit::soft_top(&f.a, 5);
    assert_eq!(
        read("soft_top5_index.npy"),
        top_i.iter().map(|&i| i as i64).collect::<Vec<_>>()
    );
    let w: Dense<f64> = io::read_dense(dir.join("soft_top5_weight.npy")).unwrap();
    assert_eq!(w.to_packed().data(), &top_w[..]);
    let soft = io::read_sparse::<f64>(dir.join("soft.npz"), io::Normalize::SortAndSum).unwrap();
    assert_eq!((soft.nrows(), soft.ncols()), (700, 20));
    for i in 0..700 {
        let r = soft.row_range(i);
        assert!(
            (soft.values()[r].iter().sum::<f64>() - 1.0).abs() < 1e-9,
            "cell {i}"
        );
    }
    let e = failure(&sparrow(&[
        "--device",
        "cpu",
        "seacells",
        "--embedding",
        s(&x),
        "--n-metacells",
        "0",
        "--out-dir",
        s(&dir),
    ]));
    assert!(e.contains("--n-metacells"), "{e}");
    let short = tmp("short-labels.txt");
    std::fs::write(&short, "a\nb\n").unwrap();
    let e = failure(&sparrow(&[
        "--device",
        "cpu",
        "seacells",
        "--embedding",
        s(&x),
        "--n-metacells",
        "5",
        "--labels",
        s(&short),
        "--out-dir",
        s(&dir),
    ]));
    assert!(e.contains("--labels"), "{e}");
}
