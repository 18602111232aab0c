//! `bench` without a GPU: the host analysis, and the CPU backend's products, top-k and SEACells.

use super::{failure, sparrow};

/// `bench analysis` times the host half of an upload's analysis on the CPU, one JSON record
/// a matrix and type.
#[test]
fn bench_analysis_times_the_host_analysis_without_a_gpu() {
    let out = sparrow(&[
        "--json",
        "bench",
        "analysis",
        "--matrix",
        "powerlaw-small",
        "--dtype",
        "f32,f64",
        "--reps",
        "10",
    ]);
    assert!(out.status.success(), "{out:?}");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    for (l, dt) in lines.iter().zip(["f32", "f64"]) {
        assert_eq!(l["op"], "analysis");
        assert_eq!(l["matrix"], "powerlaw-small");
        assert_eq!(l["dtype"], dt);
        assert_eq!(l["reps"], 10);
        assert!(l["nnz"].as_u64().unwrap() > 1_000_000);
        let (st, rest) = (
            l["stats_ms"].as_f64().unwrap(),
            l["rest_ms"].as_f64().unwrap(),
        );
        assert!(st > 0.0 && rest > 0.0, "{l}");
        assert!(l["min_total_ms"].as_f64().unwrap() <= st + rest, "{l}");
    }
    // The table: its heading, then one row a matrix and type with the same entries.
    let out = sparrow(&["bench", "analysis", "--matrix", "powerlaw-small"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].starts_with("the host half of the upload's analysis"));
    let head: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(
        head,
        ["matrix", "type", "nnz", "stats", "ms", "rest", "ms", "min", "ms", "built"]
    );
    let row: Vec<&str> = lines[2].split_whitespace().collect();
    let nnz = sparrow_bench::matrices::build::<f32>("powerlaw-small")
        .unwrap()
        .nnz()
        .to_string();
    assert_eq!(row[..3], ["powerlaw-small", "f32", nnz.as_str()]);
    for t in &row[3..6] {
        assert!(t.parse::<f64>().unwrap() > 0.0, "{text}");
    }
}

/// `bench spmv|spmm` on the CPU times the CPU backend alone, one JSON record a matrix, type
/// `bench analysis --sizes` analyses SEACells' kernel matrix: the B update's row kernels read
/// no format, so an upload for them builds nothing beside the CSR arrays, while an upload of
/// every format builds the work blocks and the row order.
#[test]
fn bench_analysis_of_the_seacells_kernel_matrix() {
    let out = sparrow(&[
        "--json", "bench", "analysis", "--sizes", "600x8x40", "--reps", "3",
    ]);
    assert!(out.status.success(), "{out:?}");
    let l: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(l["op"], "analysis-seacells");
    assert_eq!(
        (l["cells"].as_u64(), l["dims"].as_u64()),
        (Some(600), Some(8))
    );
    assert!(l["nnz"].as_u64().unwrap() >= 600 * 15, "{l}");
    assert!(l["path"].as_str().unwrap().starts_with("RowVec"), "{l}");
    assert_eq!(l["path_bytes"], 0);
    assert!(l["all_bytes"].as_u64().unwrap() >= 8 * 600, "{l}");
    let built: Vec<&str> = l["built"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap())
        .collect();
    assert!(
        built.contains(&"work blocks") && built.contains(&"rows by length"),
        "{l}"
    );
    let e = failure(&sparrow(&["bench", "analysis", "--sizes", "600x8"]));
    assert!(e.contains("--sizes"), "{e}");
}

/// and N, against the host's read bandwidth; the GPU timing's options are refused.
#[test]
fn bench_products_on_the_cpu() {
    let records = |args: &[&str]| -> Vec<serde_json::Value> {
        let out = sparrow(args);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let nnz = sparrow_bench::matrices::build::<f32>("powerlaw-small")
        .unwrap()
        .nnz();
    let common = [
        "--matrix",
        "powerlaw-small",
        "--reps",
        "10",
        "--device",
        "cpu",
    ];
    let mut args = vec!["--json", "bench", "spmv", "--dtype", "f32,f64"];
    args.extend(common);
    let spmv = records(&args);
    assert_eq!(spmv.len(), 2);
    for (r, dt) in spmv.iter().zip(["f32", "f64"]) {
        assert_eq!(
            (r["op"].as_str(), r["dtype"].as_str()),
            (Some("spmv"), Some(dt))
        );
        assert_eq!(
            (r["backend"].as_str(), r["n"].as_u64()),
            (Some("cpu"), Some(1))
        );
        assert_eq!(r["nnz"].as_u64(), Some(nnz as u64));
        assert!(r["speedup_vs_cusparse"].is_null() && r["analysis_ms"].is_null());
        let (ms, bw, frac) = (
            r["median_ms"].as_f64().unwrap(),
            r["copy_bw_gbs"].as_f64().unwrap(),
            r["frac_copy_bw"].as_f64().unwrap(),
        );
        assert!(
            ms > 0.0 && bw > 0.0 && r["min_ms"].as_f64().unwrap() <= ms,
            "{r}"
        );
        assert!(
            (frac * bw - r["gbs"].as_f64().unwrap()).abs() < 1e-6 * bw,
            "{r}"
        );
    }
    let mut args = vec!["--json", "bench", "spmm", "--n", "3,8"];
    args.extend(common);
    let spmm = records(&args);
    let ns: Vec<u64> = spmm.iter().map(|r| r["n"].as_u64().unwrap()).collect();
    assert_eq!(ns, [3, 8]);
    assert!(spmm
        .iter()
        .all(|r| r["backend"] == "cpu" && r["op"] == "spmm"));

    for (flag, extra) in [
        ("--cold", None),
        ("--sweep", None),
        ("--plot", Some("x.svg")),
    ] {
        let mut args = vec!["bench", "spmv", flag];
        args.extend(extra);
        args.extend(common);
        let e = failure(&sparrow(&args));
        assert_eq!(
            e,
            format!("error: invalid argument `{flag}`: applies to the GPU's kernels; on the CPU bench times the CPU backend alone")
        );
    }
}

/// `bench topk` on the CPU times the CPU backend, a record a shape; `--sweep` is refused.
#[test]
fn bench_topk_on_the_cpu() {
    let out = sparrow(&[
        "--json",
        "bench",
        "topk",
        "--device",
        "cpu",
        "--shapes",
        "20000x10x3,100x5x2",
        "--reps",
        "10",
    ]);
    assert!(out.status.success(), "{out:?}");
    let recs: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let shapes: Vec<(u64, u64, u64)> = recs
        .iter()
        .map(|r| {
            assert_eq!(r["variant"], "cpu");
            assert!(r["median_ms"].as_f64().unwrap() > 0.0, "{r}");
            (
                r["len"].as_u64().unwrap(),
                r["k"].as_u64().unwrap(),
                r["segments"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(shapes, [(20000, 10, 3), (100, 5, 2)]);
    let e = failure(&sparrow(&["bench", "topk", "--device", "cpu", "--sweep"]));
    assert_eq!(e, "error: invalid argument `--sweep`: applies to the GPU's kernels; on the CPU bench times the CPU backend alone");
}

/// `bench seacells` on a small mixture reports the fit's stages, purity and peak memory in its
/// JSON lines, and names a malformed size.
#[test]
fn bench_seacells_small_mixture() {
    let out = sparrow(&[
        "bench",
        "seacells",
        "--sizes",
        "600x5x30",
        "--max-iter",
        "3",
        "--json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let line = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(line.trim()).expect("one JSON line");
    assert_eq!(v["cells"], 600);
    assert_eq!(v["metacells"], 30);
    assert!(v["iterations"].as_u64().unwrap() <= 3);
    let purity = v["purity_mean"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&purity) && purity > 0.5, "{purity}");
    assert!(v["stages"].as_array().unwrap().len() >= 5);
    let bad = sparrow(&["bench", "seacells", "--sizes", "600x5x700"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--sizes"));
}
