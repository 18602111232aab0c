//! The command line over the ranges of its numeric arguments: every value a user could type
//! (negative, zero, huge, past 64 bits, NaN, infinite, not a number) ends in a result or in one
//! clean error line with exit code 1 or 2, never a panic or an abort, and a failed run leaves
//! no output behind.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use proptest::prelude::*;
use sparrow::matrix::{gen, io};

/// Values chosen at the edges where parsers and validators break.
fn value() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "-1",
        "0",
        "1",
        "2",
        "3",
        "7",
        "0.5",
        "-0.5",
        "1e-300",
        "1e300",
        "-1e300",
        "nan",
        "inf",
        "-inf",
        "18446744073709551616",
        "9223372036854775807",
        "4294967296",
        "abc",
        "",
        "1e",
    ])
    .prop_map(str::to_string)
}

fn fixtures() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(make_fixtures)
}

fn make_fixtures() -> PathBuf {
    let d = std::env::temp_dir().join(format!("sparrow-argranges-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let a = gen::power_law::<f64>(6, 4, 2.0, 4, 1.5, 1).unwrap();
    io::write_npz_csr(d.join("a.npz"), &a).unwrap();
    io::write_npy(d.join("b.npy"), &[4, 3], &[1.0f64; 12]).unwrap();
    io::write_npy(d.join("c.npy"), &[6, 3], &[1.0f64; 18]).unwrap();
    let phi = gen::dense::<f64>(12, 24, 24, 5).unwrap();
    io::write_dense(d.join("phi.npy"), &phi).unwrap();
    io::write_npy(d.join("y.npy"), &[12, 1], &[0.5f64; 12]).unwrap();
    io::write_npy(
        d.join("keys.npy"),
        &[3, 6],
        &(0..18).map(|i| i as f32).collect::<Vec<_>>(),
    )
    .unwrap();
    io::write_npy(
        d.join("emb.npy"),
        &[30, 2],
        &(0..60).map(|i| (i % 11) as f64).collect::<Vec<_>>(),
    )
    .unwrap();
    d
}

/// Runs `line` (`@` is the fixture folder) and checks the answer's shape.
fn check(line: &str) -> Result<(), TestCaseError> {
    static SERIAL: AtomicUsize = AtomicUsize::new(0);
    let d = fixtures();
    // Each run its own output folder: the properties run on several threads.
    let out_dir = d.join(format!("out{}", SERIAL.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir(&out_dir).unwrap();
    let (outs, prefix) = (
        format!("{}/", out_dir.display()),
        format!("{}/", d.display()),
    );
    let args: Vec<String> = line
        .split(' ')
        .map(|w| w.replace("@out/", &outs).replace('@', &prefix))
        .collect();
    let out = Command::new(env!("CARGO_BIN_EXE_sparrow"))
        .arg("--device")
        .arg("cpu")
        .args(&args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code();
    prop_assert!(
        matches!(code, Some(0..=2)) && !stderr.contains("panicked"),
        "{line}: {code:?} {stderr}"
    );
    if code != Some(0) {
        if code == Some(1) {
            let errors = stderr.lines().filter(|l| l.starts_with("error: ")).count();
            prop_assert_eq!(errors, 1, "{}: {}", line, stderr);
        }
        let left: Vec<_> = std::fs::read_dir(&out_dir).unwrap().collect();
        prop_assert!(left.is_empty(), "{line} failed and left {left:?}");
    }
    let _ = std::fs::remove_dir_all(&out_dir);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn products(alpha in value(), beta in value()) {
        check(&format!("spmm --a @a.npz --b @b.npy --c @c.npy --alpha {alpha} --beta {beta} --out @out/o.npy"))?;
        check(&format!("spmv --a @a.npz --x @b.npy --alpha {alpha} --beta {beta} --out @out/o.npy"))?;
    }

    #[test]
    fn recover(k in value(), tol in value(), lambda in value(), tau in value(),
               it in prop::sample::select(vec!["-1", "0", "1", "5", "x", "18446744073709551616"])) {
        check(&format!("recover --phi @phi.npy --y @y.npy --method cosamp --sparsity {k} --tol {tol} --max-iter {it} --out @out/x.npy"))?;
        check(&format!("recover --phi @phi.npy --y @y.npy --method fista --lambda {lambda} --tol {tol} --max-iter {it} --out @out/x.npy"))?;
        check(&format!("recover --phi @phi.npy --y @y.npy --method amp --tau {tau} --max-iter {it} --out @out/x.npy"))?;
    }

    #[test]
    fn topk(k in value(), shape in "[0-9]{1,13}x[0-9]{1,13}x[0-9]{1,13}") {
        check(&format!("topk --keys @keys.npy -k {k} --out-keys @out/k.npy --out-indices @out/i.npy"))?;
        // Only refusals are run here: a shape that fits would time a benchmark.
        let dims: Vec<u128> = shape.split('x').map(|s| s.parse().unwrap()).collect();
        if dims[0] * dims[2] > 1 << 34 || dims[0] == 0 || dims[2] == 0 {
            check(&format!("bench topk --shapes {shape}"))?;
        }
    }

    #[test]
    fn seacells(n in value(), knn in value(), eps in value(),
                it in prop::sample::select(vec!["-1", "0", "1", "2", "x"])) {
        check(&format!("seacells --embedding @emb.npy --n-metacells {n} --knn {knn} --epsilon {eps} --max-iter {it} --min-iter 1 --out-dir @out/s"))?;
    }

    #[test]
    fn demo_and_grids(rows in value(), step in value()) {
        // Demo sizes that would run for real are left to the demo test.
        if rows.parse::<f64>().map_or(true, |r| r <= 0.0 || r > 1e12) {
            check(&format!("demo --rows {rows}"))?;
        }
        check(&format!("cs phase-transition --method iht --n 8 --trials 1 --max-iter 2 --delta 0.5:0.5:{step} --rho 0.2:0.2:{step} --out @out/pt.json"))?;
    }
}
