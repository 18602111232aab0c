//! The command line end to end on the CPU: files in, files out, and bad input answered with one
//! readable line and a non-zero exit, never a panic.

use std::path::PathBuf;
use std::process::{Command, Output};

use sparrow::matrix::io;
use sparrow::matrix::{gen, Dense};

fn sparrow(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sparrow"))
        .args(args)
        .output()
        .unwrap()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sparrow-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

/// The one line the CLI prints on failure.
fn failure(out: &Output) -> String {
    assert!(!out.status.success(), "expected failure, got {out:?}");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(lines.len(), 1, "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    lines[0].to_string()
}

#[test]
fn spmm_and_spmv_from_files_match_the_library() {
    let a = gen::power_law::<f64>(500, 300, 6.0, 100, 1.5, 1).unwrap();
    let (pa, pb, pc, pout) = (tmp("a.npz"), tmp("b.npy"), tmp("c.npy"), tmp("out.npy"));
    io::write_npz_csr(&pa, &a).unwrap();
    let b = gen::dense::<f64>(300, 7, 7, 2).unwrap();
    let c = gen::dense::<f64>(500, 7, 7, 3).unwrap();
    io::write_dense(&pb, &b).unwrap();
    io::write_dense(&pc, &c).unwrap();
    let out = sparrow(&[
        "spmm",
        "--device",
        "cpu",
        "--a",
        s(&pa),
        "--b",
        s(&pb),
        "--c",
        s(&pc),
        "--alpha",
        "2",
        "--beta",
        "-0.5",
        "--out",
        s(&pout),
        "--explain",
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("plan: spmm: Cpu"));
    let got: Dense<f64> = io::read_dense(&pout).unwrap();
    let mut want = c.clone();
    sparrow::ops::spmm::Spmm::new()
        .alpha(2.0)
        .beta(-0.5)
        .run(&sparrow::Device::Cpu, &a, &b, &mut want)
        .unwrap();
    assert_eq!(got, want);

    let px = tmp("x.npy");
    io::write_npy(&px, &[300], &b.to_packed().data()[..300]).unwrap();
    let out = sparrow(&[
        "spmv",
        "--device",
        "cpu",
        "--a",
        s(&pa),
        "--x",
        s(&px),
        "--out",
        s(&pout),
        "--json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["op"], "spmv");
    assert_eq!(v["plan"]["backend"], "Cpu");
    let y = io::read_npy(&pout).unwrap();
    assert_eq!(y.shape, vec![500]);
}

#[test]
fn bad_inputs_give_one_line_errors() {
    let a = gen::banded::<f32>(20, 3, 1).unwrap();
    let (pa, pb, pout) = (tmp("ba.npz"), tmp("bb.npy"), tmp("bout.npy"));
    io::write_npz_csr(&pa, &a).unwrap();
    io::write_dense(&pb, &gen::dense::<f32>(19, 2, 2, 1).unwrap()).unwrap();
    let e = failure(&sparrow(&[
        "spmm",
        "--device",
        "cpu",
        "--a",
        s(&pa),
        "--b",
        s(&pb),
        "--out",
        s(&pout),
    ]));
    assert_eq!(
        e,
        "error: invalid argument `--b`: has 19 rows but A has 20 columns"
    );

    io::write_dense(&pb, &gen::dense::<f32>(20, 2, 2, 1).unwrap()).unwrap();
    let e = failure(&sparrow(&[
        "spmm",
        "--device",
        "cpu",
        "--a",
        s(&pa),
        "--b",
        s(&pb),
        "--beta",
        "1",
        "--out",
        s(&pout),
    ]));
    assert_eq!(
        e,
        "error: invalid argument `--c`: beta is 1, so --c must be given"
    );

    let e = failure(&sparrow(&[
        "spmm",
        "--device",
        "cpu",
        "--a",
        "/nonexistent/a.npz",
        "--b",
        s(&pb),
        "--out",
        s(&pout),
    ]));
    assert!(e.starts_with("error: /nonexistent/a.npz: "), "{e}");

    io::write_dense(&pb, &gen::dense::<f64>(20, 2, 2, 1).unwrap()).unwrap();
    let e = failure(&sparrow(&[
        "spmm",
        "--device",
        "cpu",
        "--a",
        s(&pa),
        "--b",
        s(&pb),
        "--dtype",
        "f32",
        "--out",
        s(&pout),
    ]));
    assert_eq!(
        e,
        format!(
            "error: {}: the array holds float64; reading it as float32 would round it",
            s(&pb)
        )
    );

    let e = failure(&sparrow(&[
        "spmm",
        "--device",
        "gpu",
        "--a",
        s(&pa),
        "--b",
        s(&pb),
        "--out",
        s(&pout),
    ]));
    assert_eq!(
        e,
        "error: invalid argument `--device`: \"gpu\" is not one of auto, cpu, cuda, cuda:N"
    );

    let e = failure(&sparrow(&["bench", "spmm", "--matrix", "nope"]));
    assert_eq!(e, "error: invalid argument `--matrix`: unknown matrix \"nope\"; choose from powerlaw, banded, empty90, blockdiag, uniform, longrows, stencil2d, stencil3d, fem, powerlaw-small or all");

    let e = failure(&sparrow(&["bench", "topk", "--cold"]));
    assert_eq!(
        e,
        "error: invalid argument `--cold`: applies to bench spmm and spmv, not topk"
    );

    // bench topk checks its key types, patterns and tie-breaks before it looks for a GPU.
    let e = failure(&sparrow(&["bench", "topk", "--pattern", "uniform,nope"]));
    assert_eq!(e, "error: invalid argument `--pattern`: unknown pattern \"nope\"; choose from uniform, all-equal, two-values, heavy-ties, ascending, shared-high-bits");
    let e = failure(&sparrow(&["bench", "topk", "--dtype", "f64"]));
    assert_eq!(
        e,
        "error: invalid argument `--dtype`: bench topk times f32 or bf16 keys, not \"f64\""
    );
    let e = failure(&sparrow(&["bench", "topk", "--tie-break", "first"]));
    assert_eq!(
        e,
        "error: invalid argument `--tie-break`: \"first\" is not fast, smaller-index or larger-index"
    );

    // bench analysis needs no GPU, and refuses the GPU comparison's options.
    let e = failure(&sparrow(&["bench", "analysis", "--plot", "x.svg"]));
    assert_eq!(
        e,
        "error: invalid argument `--plot`: applies to bench spmm and spmv, not analysis"
    );
    let e = failure(&sparrow(&["bench", "analysis", "--n", "8"]));
    assert_eq!(
        e,
        "error: invalid argument `--n`: applies to bench spmm and spmv, not analysis"
    );
    let e = failure(&sparrow(&["bench", "analysis", "--dtype", "f16"]));
    assert_eq!(
        e,
        "error: invalid argument `--dtype`: \"f16\" is not f32 or f64"
    );
    let e = failure(&sparrow(&["bench", "nope"]));
    assert_eq!(
        e,
        "error: invalid argument `op`: \"nope\" is not spmm, spmv, topk, cs, seacells or analysis"
    );

    // info --kernels checks its filter before it compiles anything (or needs libnvrtc).
    let e = failure(&sparrow(&[
        "info",
        "--kernels",
        "sm_90",
        "--filter",
        "topk_nope",
    ]));
    assert_eq!(
        e,
        "error: invalid argument `--filter`: no kernel entry point contains \"topk_nope\""
    );
}

/// `info --fill-cache` stores each module as the first use on a GPU would compile it, under the
/// key that use looks up, and says which argument is wrong before it compiles anything.
#[test]
fn info_fill_cache_stores_what_a_gpu_looks_up() {
    let e = failure(&sparrow(&[
        "info",
        "--fill-cache",
        "sm_90",
        "--filter",
        "nope",
    ]));
    assert_eq!(
        e,
        "error: invalid argument `--filter`: no kernel entry point contains \"nope\""
    );
    if !sparrow::device::compile::nvrtc_for_checks("info --fill-cache") {
        return;
    }
    let dir = tmp("kernel-cache");
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(env!("CARGO_BIN_EXE_sparrow"))
        .env("SPARROW_CACHE_DIR", &dir)
        .args(["info", "--fill-cache", "sm_90", "--filter", "cs_union"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let cs = sparrow::kernels::CS;
    let key = sparrow::device::compile::cache_key(&cs, "sm_90").unwrap();
    let stored = std::fs::read(dir.join(format!("{key}.cubin"))).unwrap();
    assert_eq!(
        stored,
        sparrow::device::compile::compile_cubin(&cs, "sm_90").unwrap()
    );
    // Only the module the filter names, and no temporary file left behind.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec![format!("{key}.cubin")]);
}

#[test]
fn cuda_without_a_gpu_says_why() {
    if sparrow::device::driver_present() {
        eprintln!("a CUDA driver is present here; the GPU bundle covers this case");
        return;
    }
    let e = failure(&sparrow(&["validate", "--device", "cuda"]));
    assert_eq!(e, "error: unsupported: --device cuda:0: unsupported: the NVIDIA driver library libcuda.so was not found");
}

#[test]
fn validate_and_demo_run_on_the_cpu() {
    let out = sparrow(&["validate", "--device", "cpu"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("spmm cpu (rayon)") && text.contains(" 0 failed"),
        "{text}"
    );
    let out = sparrow(&["demo", "--device", "cpu", "--rows", "20000", "--n", "5"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("spmv on cpu")
            && text.contains("spmm N=5 on cpu")
            && !text.contains("MISMATCH"),
        "{text}"
    );
}

#[test]
fn topk_from_files() {
    use sparrow::ops::topk::data::{keys, Pattern};
    let k: Vec<f32> = keys(6 * 50, Pattern::HeavyTies, 3);
    let (pk, po, pi, pv, pov, pc) = (
        tmp("tk.npy"),
        tmp("tko.npy"),
        tmp("tki.npy"),
        tmp("tkv.npy"),
        tmp("tkov.npy"),
        tmp("tkc.npy"),
    );
    io::write_npy(&pk, &[6, 50], &k).unwrap();
    let vals: Vec<i16> = (0..300).map(|x| x as i16 - 150).collect();
    io::write_npy(&pv, &[300], &vals).unwrap();
    let out = sparrow(&[
        "topk",
        "--device",
        "cpu",
        "--keys",
        s(&pk),
        "-k",
        "7",
        "--sorted",
        "--tie-break",
        "larger-index",
        "--values",
        s(&pv),
        "--out-values",
        s(&pov),
        "--out-keys",
        s(&po),
        "--out-indices",
        s(&pi),
        "--out-counts",
        s(&pc),
        "--index-type",
        "i32",
    ]);
    assert!(out.status.success(), "{out:?}");
    let req = sparrow::ops::topk::TopK::largest(7)
        .sorted(true)
        .tie_break(sparrow::ops::topk::TieBreak::LargerIndex);
    let (want, _) = req
        .run(
            &sparrow::Device::Cpu,
            &k,
            sparrow::ops::topk::Segments::Fixed { count: 6, len: 50 },
            Some(&vals),
        )
        .unwrap();
    let got_k = io::read_npy(&po).unwrap();
    assert_eq!(got_k.shape, vec![6, 7]);
    assert_eq!(got_k.data, io::NpyData::F32(want.keys.clone()));
    let got_i = io::read_npy(&pi).unwrap();
    assert_eq!(
        got_i.data,
        io::NpyData::I32((0..42).map(|e| want.indices.get(e) as i32).collect())
    );
    assert_eq!(
        io::read_npy(&pc).unwrap().data,
        io::NpyData::I64(vec![7; 6])
    );
    let raw = std::fs::read(&pov).unwrap();
    assert!(
        raw.windows(3).any(|w| w == b"<i2"),
        "values keep their dtype"
    );

    // 1-D keys need offsets; offsets must not run past the keys.
    io::write_npy(&pk, &[300], &k).unwrap();
    let e = failure(&sparrow(&[
        "topk",
        "--device",
        "cpu",
        "--keys",
        s(&pk),
        "-k",
        "3",
        "--out-keys",
        s(&po),
        "--out-indices",
        s(&pi),
    ]));
    assert_eq!(
        e,
        "error: invalid argument `--offsets`: 1-D keys need --offsets"
    );
    let pof = tmp("tkoff.npy");
    io::write_npy(&pof, &[3], &[0i64, 100, 301]).unwrap();
    // These keys and offsets, 3 per segment, with `more` arguments.
    let with_offsets = |more: &[&str]| {
        let mut args = vec![
            "topk",
            "--device",
            "cpu",
            "--keys",
            s(&pk),
            "--offsets",
            s(&pof),
            "-k",
            "3",
        ];
        args.extend_from_slice(more);
        failure(&sparrow(&args))
    };
    let outs = ["--out-keys", s(&po), "--out-indices", s(&pi)];
    assert_eq!(
        with_offsets(&outs),
        "error: invalid argument `--offsets`: offsets[2] = 301 is past the end of the 300 keys"
    );
    assert_eq!(
        with_offsets(&[&outs[..], &["--tie-break", "random"]].concat()),
        "error: invalid argument `--tie-break`: \"random\" is not fast, smaller-index or larger-index"
    );
    // Two outputs in one file, or an output over an input, would lose data: refused before
    // anything is read or written.
    let before = std::fs::read(&pk).unwrap();
    assert_eq!(
        with_offsets(&["--out-keys", s(&po), "--out-indices", s(&po)]),
        format!(
            "error: invalid argument `--out-indices`: {} is also --out-keys; give each output its own file",
            s(&po)
        )
    );
    assert_eq!(
        with_offsets(&[&outs[..], &["--out-counts", s(&pk)]].concat()),
        format!(
            "error: invalid argument `--out-counts`: {} is the --keys input; write the output elsewhere",
            s(&pk)
        )
    );
    assert_eq!(
        std::fs::read(&pk).unwrap(),
        before,
        "the keys are untouched"
    );
    // bf16 keys arrive as uint16.
    io::write_npy(
        &pk,
        &[2, 3],
        &[0x3f80u16, 0x4000, 0xbf80, 0x7fc0, 0x0000, 0x8000],
    )
    .unwrap();
    let out = sparrow(&[
        "topk",
        "--device",
        "cpu",
        "--keys",
        s(&pk),
        "--key-type",
        "bf16",
        "-k",
        "1",
        "--out-keys",
        s(&po),
        "--out-indices",
        s(&pi),
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        io::read_npy(&pi).unwrap().data,
        io::NpyData::I64(vec![1, 0]),
        "2.0 wins row 0, NaN wins row 1"
    );
}

#[test]
fn recover_from_files() {
    use sparrow::solvers::cs::data::{gaussian_phi, measure, sparse_signals};
    let phi = gaussian_phi(60, 120, 1).unwrap();
    let x = sparse_signals(120, 4, 3, true, 2).unwrap();
    let y = measure(&phi, &x).unwrap();
    let (pp, py, px) = (tmp("phi.npy"), tmp("y.npy"), tmp("x.npy"));
    io::write_dense(&pp, &phi).unwrap();
    io::write_dense(&py, &y).unwrap();
    let out = sparrow(&[
        "recover",
        "--device",
        "cpu",
        "--phi",
        s(&pp),
        "--y",
        s(&py),
        "--method",
        "cosamp",
        "--sparsity",
        "4",
        "--out",
        s(&px),
        "--json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["support_sizes"], serde_json::json!([4, 4, 4]));
    let got: Dense<f64> = io::read_dense(&px).unwrap();
    let err = got
        .data()
        .iter()
        .zip(x.data())
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(err < 1e-6, "{err}");
    let e = failure(&sparrow(&[
        "recover",
        "--device",
        "cpu",
        "--phi",
        s(&pp),
        "--y",
        s(&py),
        "--method",
        "omp",
        "--sparsity",
        "61",
        "--out",
        s(&px),
    ]));
    assert_eq!(
        e,
        "error: invalid argument `--sparsity`: K = 61 is larger than the 60 measurements"
    );
    let e = failure(&sparrow(&[
        "recover",
        "--device",
        "cpu",
        "--phi",
        s(&pp),
        "--y",
        s(&py),
        "--method",
        "l0",
        "--out",
        s(&px),
    ]));
    assert_eq!(e, "error: invalid argument `--method`: \"l0\" is not iht, niht, htp, cosamp, sp, omp, amp or fista");
}

#[test]
fn phase_transition_writes_json_and_svg() {
    let (pj, ps) = (tmp("pt.json"), tmp("pt.svg"));
    let out = sparrow(&[
        "cs",
        "phase-transition",
        "--device",
        "cpu",
        "--method",
        "omp",
        "--n",
        "60",
        "--delta",
        "0.3:0.6:0.3",
        "--rho",
        "0.1:0.9:0.8",
        "--trials",
        "4",
        "--out",
        s(&pj),
        "--plot",
        s(&ps),
    ]);
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&pj).unwrap()).unwrap();
    let success = v["result"]["success"].as_array().unwrap();
    assert_eq!(success.len(), 2);
    // OMP recovers a few spikes from 36 measurements, and not 32 spikes from 18.
    assert_eq!(success[0][1], 1.0);
    assert_eq!(success[1][0], 0.0);
    let svg = std::fs::read_to_string(&ps).unwrap();
    assert!(svg.starts_with("<svg") && svg.matches("<rect").count() >= 4);
    let e = failure(&sparrow(&[
        "cs",
        "phase-transition",
        "--device",
        "cpu",
        "--method",
        "omp",
        "--delta",
        "0.5:0.2:0.1",
        "--out",
        s(&pj),
    ]));
    assert_eq!(e, "error: invalid argument `--delta`: \"0.5:0.2:0.1\" must satisfy 0 < start <= stop <= 1 and step > 0");
}

#[test]
fn complete_from_observed_entries() {
    use sparrow::matrix::{Csr, Rng};
    // A rank-1 matrix a_i b_j with 60% of its entries observed at random.
    let (m, n) = (30, 25);
    let mut rng = Rng::new(5);
    let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..m {
        for j in 0..n {
            if rng.uniform() < 0.6 {
                r.push(i);
                c.push(j);
                v.push((i + 1) as f64 * (j + 2) as f64);
            }
        }
    }
    let obs = Csr::from_triplets(m, n, &r, &c, &v).unwrap();
    let (po, px) = (tmp("obs.npz"), tmp("completed.npy"));
    io::write_npz_csr(&po, &obs).unwrap();
    let out = sparrow(&[
        "complete",
        "--device",
        "cpu",
        "--observed",
        s(&po),
        "--rank-hint",
        "3",
        "--max-iter",
        "2000",
        "--out",
        s(&px),
        "--json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let x: Dense<f64> = io::read_dense(&px).unwrap();
    let worst = (0..m)
        .flat_map(|i| (0..n).map(move |j| (i, j)))
        .map(|(i, j)| {
            ((x.get(i, j) - ((i + 1) * (j + 2)) as f64) / ((i + 1) * (j + 2)) as f64).abs()
        })
        .fold(0.0, f64::max);
    assert!(worst < 1e-2, "worst relative entry error {worst}");
    let e = failure(&sparrow(&[
        "complete",
        "--device",
        "cpu",
        "--observed",
        s(&po),
        "--rank-hint",
        "0",
        "--out",
        s(&px),
    ]));
    assert_eq!(
        e,
        "error: invalid argument `--rank-hint`: 0 must be in 1..=25"
    );
}

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
        &mut |_, _| {},
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
    let nnz = sparrow::bench::matrices::build::<f32>("powerlaw-small")
        .unwrap()
        .nnz()
        .to_string();
    assert_eq!(row[..3], ["powerlaw-small", "f32", nnz.as_str()]);
    for t in &row[3..6] {
        assert!(t.parse::<f64>().unwrap() > 0.0, "{text}");
    }
}

/// `bench spmv|spmm` on the CPU times the CPU backend alone, one JSON record a matrix, type
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
    let nnz = sparrow::bench::matrices::build::<f32>("powerlaw-small")
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
