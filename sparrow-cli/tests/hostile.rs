//! The command line as a hostile user drives it: one table of command lines, each with the exit
//! code it must give and a fragment of its message. Every row runs in a folder of fixtures, and
//! after every row the folder must hold exactly what it held before, byte for byte, plus only
//! the outputs a successful row names: no input is touched, no partial or stray file is left,
//! and a failed run writes nothing. Every flag an error message names must be one the command
//! has (or one the user typed).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sparrow::matrix::io;
use sparrow::matrix::{gen, Csr};

/// One row: the command line (`@` stands for the fixture folder plus a slash), the exit code,
/// a fragment of the message (stderr, or stdout under --json), and the files a success makes.
struct Row {
    line: &'static str,
    code: i32,
    says: &'static str,
    creates: &'static [&'static str],
}

const fn fails(line: &'static str, says: &'static str) -> Row {
    Row {
        line,
        code: 1,
        says,
        creates: &[],
    }
}

const fn usage(line: &'static str, says: &'static str) -> Row {
    Row {
        line,
        code: 2,
        says,
        creates: &[],
    }
}

const fn works(line: &'static str, creates: &'static [&'static str]) -> Row {
    Row {
        line,
        code: 0,
        says: "",
        creates,
    }
}

#[rustfmt::skip]
const ROWS: &[Row] = &[
    // Outputs that would destroy an input or another output, checked before any work.
    fails("spmm --a @a.npz --b @b.npy --out @b.npy", "is the --b input"),
    fails("spmm --a @a.npz --b @b.npy --out @link_to_b.npy", "is the --b input"),
    fails("spmm --a @a.npz --b @b.npy --out @linkdir/b.npy", "is the --b input"),
    fails("spmm --a @a.npz --b @b.npy --out @sub/../b.npy", "is the --b input"),
    fails("spmm --a @a.npz --b @b.npy --c @c.npy --beta 1 --out @c.npy", "is the --c input"),
    fails("spmv --a @a.npz --x @x.npy --out @x.npy", "is the --x input"),
    fails("spmv --a @a.npz --x @x.npy --out @a.npz", "is the --a input"),
    fails("recover --phi @phi.npy --y @y.npy --method iht --sparsity 2 --out @phi.npy", "is the --phi input"),
    fails("recover --phi @phi.npy --y @y.npy --method iht --sparsity 2 --out @./y.npy", "is the --y input"),
    fails("complete --observed @obs.npz --rank-hint 2 --out @obs.npz", "is the --observed input"),
    fails("topk --keys @keys.npy -k 2 --out-keys @k.npy --out-indices @k.npy", "is also --out-keys"),
    fails("topk --keys @keys.npy -k 2 --out-keys @keys.npy --out-indices @i.npy", "is the --keys input"),
    fails("topk --keys @keys.npy -k 2 --values @vals.npy --out-values @vals.npy --out-keys @k.npy --out-indices @i.npy", "is the --values input"),
    fails("cs phase-transition --method iht --n 20 --out @pt.json --plot @pt.json", "is also --out"),
    fails("seacells --embedding @run/assignments.npy --n-metacells 3 --out-dir @run", "is the --embedding input"),
    // Output folders that are missing, are files, or outputs that are folders.
    fails("spmm --a @a.npz --b @b.npy --out @nodir/out.npy", "does not exist"),
    fails("spmm --a @a.npz --b @b.npy --out @sub", "is a folder"),
    fails("topk --keys @keys.npy -k 2 --out-keys @k.npy --out-indices @nodir/i.npy", "does not exist"),
    fails("seacells --embedding @emb.npy --n-metacells 3 --out-dir @a.npz", "is a file"),
    fails("seacells --embedding @emb.npy --n-metacells 3 --out-dir @nodir/deeper", "does not exist"),
    fails("bench topk --shapes 64x2x2 --reps 10 --jsonl @nodir/b.jsonl", "does not exist"),
    // A failed run leaves the earlier output as it was.
    fails("spmm --a @a.npz --b @b_short.npy --out @prev.npy", "has 3 rows but A has 4 columns"),
    fails("topk --keys @keys.npy -k 2 --out-keys @prev.npy --out-indices @nodir/i.npy", "does not exist"),
    // Element types come from the files.
    works("spmv --a @a.npz --x @x32.npy --out @out.npy", &["out.npy"]),
    works("spmm --a @a32.npz --b @b32.npy --out @out.npy", &["out.npy"]),
    works("spmm --a @a.mtx --b @b32.npy --out @out.npy", &["out.npy"]),
    works("recover --phi @phi32.npy --y @y32.npy --method omp --sparsity 2 --out @out.npy", &["out.npy"]),
    works("recover --phi @phi.npy --y @y32.npy --method cosamp --sparsity 2 --out @out.npy", &["out.npy"]),
    works("complete --observed @obs32.npz --rank-hint 2 --out @out.npy", &["out.npy"]),
    works("spmm --a @a.npz --b @b.npy --out @prev.npy", &["prev.npy"]),
    fails("spmm --a @a.npz --b @b.npy --dtype f32 --out @out.npy", "holds float64"),
    fails("spmm --a @a.npz --b @b.npy --dtype f16 --out @out.npy", "is not f32, f64 or auto"),
    fails("spmm --a @unsorted.npz --b @b5.npy --out @out.npy", "--normalize"),
    works("spmm --a @unsorted.npz --b @b5.npy --normalize --out @out.npy", &["out.npy"]),
    // Numbers that would allocate without end.
    fails("spmv --a @huge_nnz.mtx --x @x.npy --out @out.npy", "huge_nnz.mtx"),
    fails("spmv --a @huge_dims.mtx --x @x.npy --out @out.npy", "too large"),
    fails("spmm --a @a.npz --b @lying.npy --out @out.npy", "lying.npy"),
    fails("topk --keys @lying.npy -k 2 --out-keys @k.npy --out-indices @i.npy", "lying.npy"),
    works("topk --keys @keys.npy -k 1000000000000 --out-keys @k.npy --out-indices @i.npy", &["k.npy", "i.npy"]),
    works("topk --keys @keys.npy -k 100000000 --out-keys @k.npy --out-indices @i.npy", &["k.npy", "i.npy"]),
    fails("recover --phi @wide.mtx --y @y40.npy --method iht --sparsity 2 --out @out.npy", "too large"),
    fails("complete --observed @vast.mtx --rank-hint 2 --out @out.npy", "too large"),
    fails("cs phase-transition --method iht --n 20 --delta 0.1:0.9:1e-10 --out @pt.json", "--delta"),
    fails("cs phase-transition --method iht --n 10000000 --out @pt.json", "too large"),
    fails("bench topk --shapes 1000000000000x10x1", "too large"),
    fails("bench seacells --sizes 1000000000000x50x10", "too large"),
    fails("bench spmm --n 1000000000000", "too large"),
    fails("demo --rows 0", "must be at least 1"),
    fails("demo --n 0", "must be at least 1"),
    fails("demo --rows 1000000000000000", "too large"),
    usage("recover --phi @phi.npy --y @y.npy --method iht --sparsity 2 --max-iter -1 --out @out.npy", "--max-iter"),
    // Garbage with exit 0 would be worse than an error.
    fails("complete --observed @obs100.npz --rank-hint 2 --tau 1 --out @out.npy", "diverges"),
    fails("complete --observed @obs.npz --rank-hint 2 --delta 2.5 --out @out.npy", "--delta"),
    fails("seacells --embedding @emb_nodims.npy --n-metacells 3 --out-dir @run", "dimension"),
    fails("seacells --embedding @emb.npy --n-metacells 0 --out-dir @run", "n-metacells"),
    fails("seacells --embedding @emb.npy --n-metacells 500 --out-dir @run", "n-metacells"),
    fails("seacells --embedding @emb.npy --n-metacells 3 --knn 0 --out-dir @run", "knn"),
    fails("seacells --embedding @emb.npy --n-metacells 3 --epsilon -1 --out-dir @run", "epsilon"),
    fails("seacells --embedding @emb.npy --n-metacells 3 --min-iter 5 --max-iter 2 --out-dir @run", "min-iter"),
    fails("seacells --embedding @emb_nan.npy --n-metacells 3 --out-dir @run", "finite"),
    // Messages: negative numbers reach their validators, ignored flags are refused.
    fails("recover --phi @phi.npy --y @y.npy --method iht --sparsity 2 --tol -1 --out @out.npy", "tol"),
    fails("complete --observed @obs.npz --rank-hint 2 --tol -1 --out @out.npy", "tol"),
    fails("recover --phi @phi.npy --y @y.npy --method fista --lambda 0.1 --sparsity 2 --out @out.npy", "fista"),
    fails("recover --phi @phi.npy --y @y.npy --method amp --sparsity 2 --out @out.npy", "amp"),
    fails("recover --phi @phi.npy --y @y.npy --method omp --sparsity 2 --lambda 0.1 --out @out.npy", "omp"),
    fails("recover --phi @phi.npy --y @y.npy --method iht --sparsity 2 --tau 0.5 --out @out.npy", "iht"),
    fails("recover --phi @phi.npy --y @y.npy --method iht --out @out.npy", "--sparsity"),
    fails("recover --phi @phi.npy --y @y.npy --method nope --sparsity 2 --out @out.npy", "is not iht"),
    fails("recover --phi @phi.npy --y @y_short.npy --method iht --sparsity 2 --out @out.npy", "rows"),
    fails("recover --phi @phi.txt --y @y.npy --method iht --sparsity 2 --out @out.npy", "expected a .npy"),
    fails("topk --keys @keys.npy -k 2 --key-type bf16 --out-keys @k.npy --out-indices @i.npy", "bf16 applies"),
    fails("topk --keys @keys.npy -k 2 --values @vals_t.npy --out-values @v.npy --out-keys @k.npy --out-indices @i.npy", "shape"),
    fails("topk --keys @keys.npy -k 2 --values @vals.npy --out-keys @k.npy --out-indices @i.npy", "--out-values"),
    usage("topk --keys @keys.npy -k 2 --k-per-segment @ks.npy --out-keys @k.npy --out-indices @i.npy", "cannot be used"),
    fails("topk --keys @keys1d.npy -k 2 --out-keys @k.npy --out-indices @i.npy", "--offsets"),
    fails("topk --keys @keys1d.npy --offsets @offs_down.npy -k 2 --out-keys @k.npy --out-indices @i.npy", "must not decrease"),
    fails("topk --keys @keys.npy -k 2 --tie-break first --out-keys @k.npy --out-indices @i.npy", "--tie-break"),
    fails("topk --keys @keys.npy -k 2 --index-type i16 --out-keys @k.npy --out-indices @i.npy", "--index-type"),
    fails("spmm --a @a.npz --b @b.npy --alpha nan --out @out.npy", "not finite"),
    fails("spmm --a @a.npz --b @b.npy --beta 1 --out @out.npy", "--c must be given"),
    fails("spmm --a @a.npz --b @b.npy --c @b.npy --beta 1 --out @out.npy", "--c"),
    fails("spmv --a @a.npz --x @b.npy --out @out.npy", "x must be a vector"),
    fails("spmv --a @a.npz --x @x_long.npy --out @out.npy", "columns"),
    fails("spmv --a @garbage.npz --x @x.npy --out @out.npy", "garbage.npz"),
    fails("spmv --a @bad_line.mtx --x @x.npy --out @out.npy", "line 3"),
    fails("spmm --a @a.npz --b @garbage.npy --out @out.npy", "garbage.npy"),
    fails("spmm --a @missing.npz --b @b.npy --out @out.npy", "missing.npz"),
    fails("spmm --device gpu --a @a.npz --b @b.npy --out @out.npy", "--device"),
    fails("complete --observed @obs.npz --rank-hint 0 --out @out.npy", "--rank-hint"),
    fails("cs phase-transition --method nope --out @pt.json", "--method"),
    fails("cs phase-transition --method iht --delta 0.9:0.1:0.1 --out @pt.json", "--delta"),
    fails("bench topk --cold", "--cold"),
    fails("bench nope", "is not spmm"),
    fails("seacells --embedding @emb.npy --n-metacells 3 --graph both --out-dir @run", "--graph"),
    fails("seacells --embedding @emb.npy --n-metacells 3 --labels @labels_short.txt --out-dir @run", "--labels"),
    // Under --json an error is one JSON object, and a usage error too.
    fails("--json spmm --a @missing.npz --b @b.npy --out @out.npy", "\"error\""),
    fails("--json spmm --a @a.npz --b @b.npy --beta 1 --out @out.npy", "\"argument\":\"--c\""),
    usage("--json spmm --a @a.npz --b @b.npy --out @out.npy --frobnicate", "\"kind\":\"usage\""),
];

fn sparrow(args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sparrow"))
        .args(args)
        .env(
            "SPARROW_CACHE_DIR",
            std::env::temp_dir().join("sparrow-hostile-cache"),
        )
        .output()
        .unwrap()
}

/// Every file under `dir` (links as their targets, not followed), by relative path.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().to_path_buf();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.file_type().is_symlink() {
                let t = std::fs::read_link(&p).unwrap();
                out.insert(rel, t.to_string_lossy().as_bytes().to_vec());
            } else if meta.is_dir() {
                out.insert(rel, b"<dir>".to_vec());
                stack.push(p);
            } else {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// The fixtures: small valid inputs of each kind, and files built to mislead a reader.
fn fixtures(d: &Path) {
    let w = |name: &str, bytes: &[u8]| std::fs::write(d.join(name), bytes).unwrap();
    let a = gen::power_law::<f64>(6, 4, 2.0, 4, 1.5, 1).unwrap();
    io::write_npz_csr(d.join("a.npz"), &a).unwrap();
    io::write_mtx(d.join("a.mtx"), &a).unwrap();
    let a32 = gen::power_law::<f32>(6, 4, 2.0, 4, 1.5, 1).unwrap();
    io::write_npz_csr(d.join("a32.npz"), &a32).unwrap();
    let seq = |n: usize| (0..n).map(|i| (i % 7) as f64 - 3.0).collect::<Vec<f64>>();
    let seq32 = |n: usize| (0..n).map(|i| (i % 7) as f32 - 3.0).collect::<Vec<f32>>();
    io::write_npy(d.join("b.npy"), &[4, 3], &seq(12)).unwrap();
    io::write_npy(d.join("b32.npy"), &[4, 3], &seq32(12)).unwrap();
    io::write_npy(d.join("b_short.npy"), &[3, 3], &seq(9)).unwrap();
    io::write_npy(d.join("c.npy"), &[6, 3], &seq(18)).unwrap();
    io::write_npy(d.join("prev.npy"), &[6, 3], &seq(18)).unwrap();
    io::write_npy(d.join("x.npy"), &[4], &seq(4)).unwrap();
    io::write_npy(d.join("x32.npy"), &[4], &seq32(4)).unwrap();
    io::write_npy(d.join("x_long.npy"), &[5], &seq(5)).unwrap();
    // scipy's file of a 4 x 5 matrix with an unsorted row.
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sparrow/tests/data");
    std::fs::copy(data.join("small_unsorted.npz"), d.join("unsorted.npz")).unwrap();
    io::write_npy(d.join("b5.npy"), &[5, 3], &seq(15)).unwrap();
    // Compressed sensing: a 12 x 24 Gaussian Phi and a 2-sparse signal.
    let phi = gen::dense::<f64>(12, 24, 24, 5).unwrap();
    let p = phi.to_packed();
    let y: Vec<f64> = (0..12)
        .map(|i| 2.0 * p.data()[i * 24 + 3] - 1.5 * p.data()[i * 24 + 17])
        .collect();
    io::write_dense(d.join("phi.npy"), &phi).unwrap();
    io::write_npy(
        d.join("phi32.npy"),
        &[12, 24],
        &p.data().iter().map(|&v| v as f32).collect::<Vec<_>>(),
    )
    .unwrap();
    io::write_npy(d.join("y.npy"), &[12, 1], &y).unwrap();
    io::write_npy(
        d.join("y32.npy"),
        &[12, 1],
        &y.iter().map(|&v| v as f32).collect::<Vec<_>>(),
    )
    .unwrap();
    io::write_npy(d.join("y_short.npy"), &[11, 1], &y[..11]).unwrap();
    io::write_npy(d.join("y40.npy"), &[40, 1], &seq(40)).unwrap();
    w("phi.txt", b"1 2 3\n");
    // Completion: a rank-1 10 x 8 matrix with 60 observed entries.
    let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..60 {
        let (i, j) = ((k * 7) % 10, (k * 3 + k / 10) % 8);
        r.push(i);
        c.push(j);
        v.push((i as f64 + 1.0) * (j as f64 + 2.0) / 10.0);
    }
    let obs = Csr::<f64>::from_triplets(10, 8, &r, &c, &v).unwrap();
    io::write_npz_csr(d.join("obs.npz"), &obs).unwrap();
    // Half of a 30 x 20 rank-2 matrix of large entries: the default step passes 2.
    let (mut hr, mut hc, mut hv) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..30usize {
        for j in 0..20usize {
            if (i * 7 + j * 3 + i * j) % 2 == 0 {
                hr.push(i);
                hc.push(j);
                hv.push(100.0 * ((i % 5) as f64 * (j % 3) as f64 - (i % 2) as f64 * j as f64));
            }
        }
    }
    let half = Csr::<f64>::from_triplets(30, 20, &hr, &hc, &hv).unwrap();
    io::write_npz_csr(d.join("obs100.npz"), &half).unwrap();
    let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
    let obs32 = Csr::<f32>::from_triplets(10, 8, &r, &c, &v32).unwrap();
    io::write_npz_csr(d.join("obs32.npz"), &obs32).unwrap();
    // Top-k: 3 segments of 6 keys, values of the transposed shape, u16 keys.
    io::write_npy(d.join("keys.npy"), &[3, 6], &seq32(18)).unwrap();
    io::write_npy(d.join("keys1d.npy"), &[18], &seq32(18)).unwrap();
    io::write_npy(d.join("vals.npy"), &[3, 6], &seq32(18)).unwrap();
    io::write_npy(d.join("vals_t.npy"), &[6, 3], &seq32(18)).unwrap();
    io::write_npy(d.join("ks.npy"), &[3], &[1i64, 2, 3]).unwrap();
    io::write_npy(d.join("offs_down.npy"), &[4], &[0i64, 9, 6, 18]).unwrap();
    // SEACells: 40 cells in 3 dimensions, one with 0 dimensions, one with a NaN.
    io::write_npy(d.join("emb.npy"), &[40, 3], &seq(120)).unwrap();
    io::write_npy::<f64>(d.join("emb_nodims.npy"), &[200, 0], &[]).unwrap();
    let mut nan = seq(120);
    nan[50] = f64::NAN;
    io::write_npy(d.join("emb_nan.npy"), &[40, 3], &nan).unwrap();
    w("labels_short.txt", b"a\nb\n");
    std::fs::create_dir(d.join("run")).unwrap();
    std::fs::copy(d.join("emb.npy"), d.join("run/assignments.npy")).unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    // Files that claim more than they hold.
    w(
        "huge_nnz.mtx",
        b"%%MatrixMarket matrix coordinate real general\n4 4 1000000000000\n1 1 1.0\n",
    );
    w(
        "huge_dims.mtx",
        b"%%MatrixMarket matrix coordinate real general\n1000000000000000 1000000000000000 0\n",
    );
    w(
        "wide.mtx",
        b"%%MatrixMarket matrix coordinate real general\n40 2000000000 2\n1 1 1.0\n2 7 -1.0\n",
    );
    w(
        "vast.mtx",
        b"%%MatrixMarket matrix coordinate real general\n1000000 1000000 3\n1 1 1.0\n2 2 1.0\n3 3 1.0\n",
    );
    w(
        "bad_line.mtx",
        b"%%MatrixMarket matrix coordinate real general\n4 4 2\n1 x 1.0\n2 2 1.0\n",
    );
    let mut lying = Vec::new();
    io::write_npy_to(&mut lying, &[4, 3], &seq(12)).unwrap();
    let text = String::from_utf8_lossy(&lying).to_string();
    let forged = text.replacen("(4, 3)", "(4000000000, 3000000)", 1);
    w("lying.npy", &forged.as_bytes()[..forged.len().min(200)]);
    w(
        "garbage.npy",
        b"\x93NUMPY\x01\x00garbage that is not a header",
    );
    w("garbage.npz", b"PK\x03\x04 not really a zip archive");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(d.join("b.npy"), d.join("link_to_b.npy")).unwrap();
        std::os::unix::fs::symlink(d, d.join("linkdir")).unwrap();
    }
}

/// The `--flags` a message names.
fn flags_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i + 2 < b.len() {
        let starts =
            b[i] == b'-' && b[i + 1] == b'-' && (i == 0 || !b[i - 1].is_ascii_alphanumeric());
        if starts && b[i + 2].is_ascii_lowercase() {
            let mut j = i + 2;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'-') {
                j += 1;
            }
            out.push(text[i..j].trim_end_matches('-').to_string());
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// The help text of the subcommand a command line runs (global flags included).
fn help_of(line: &str, cache: &mut BTreeMap<String, String>) -> String {
    const COMMANDS: [&str; 11] = [
        "info", "spmv", "spmm", "complete", "cs", "recover", "seacells", "topk", "bench",
        "validate", "demo",
    ];
    let sub = line
        .split_whitespace()
        .find(|w| COMMANDS.contains(w))
        .expect("a subcommand");
    let mut path = vec![sub.to_string()];
    if sub == "cs" {
        path.push("phase-transition".into());
    }
    cache
        .entry(path.join(" "))
        .or_insert_with(|| {
            path.push("--help".into());
            let out = sparrow(&path);
            assert!(out.status.success(), "{path:?}: {out:?}");
            String::from_utf8_lossy(&out.stdout).to_string()
        })
        .clone()
}

#[test]
fn hostile_command_lines_get_clean_answers_and_lose_nothing() {
    assert!(ROWS.len() >= 60, "{} rows", ROWS.len());
    let dir = std::env::temp_dir().join(format!("sparrow-hostile-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    fixtures(&dir);
    let prefix = format!("{}/", dir.display());
    let mut helps = BTreeMap::new();
    let mut failed = Vec::new();
    for row in ROWS {
        let mut words: Vec<String> = row
            .line
            .split_whitespace()
            .map(|w| w.replace('@', &prefix))
            .collect();
        // Every row but the --device one runs on the CPU.
        if !row.line.contains("--device") {
            words.insert(0, "cpu".into());
            words.insert(0, "--device".into());
        }
        let before = snapshot(&dir);
        let out = sparrow(&words);
        let after = snapshot(&dir);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let json = row.line.starts_with("--json");
        let message = if json { &stdout } else { &stderr };
        let code = out.status.code().unwrap_or(-1);
        let mut why = Vec::new();
        if code != row.code {
            why.push(format!("exit {code}, expected {}", row.code));
        }
        if stderr.contains("panicked") || !(0..=2).contains(&code) {
            why.push("panicked or was killed".to_string());
        }
        if !message.contains(row.says) {
            why.push(format!("message lacks {:?}", row.says));
        }
        if row.code != 0 {
            let lines: Vec<&str> = message.lines().filter(|l| !l.trim().is_empty()).collect();
            let one = if json {
                lines.len() == 1 && serde_json::from_str::<serde_json::Value>(lines[0]).is_ok()
            } else {
                row.code == 2 || lines.iter().filter(|l| l.starts_with("error: ")).count() == 1
            };
            if !one {
                why.push("not one error line (or one JSON object)".to_string());
            }
            let help = help_of(row.line, &mut helps);
            for f in flags_in(message) {
                let typed = words
                    .iter()
                    .any(|w| w == &f || w.starts_with(&format!("{f}=")));
                if !typed && !help.contains(&f) {
                    why.push(format!("names {f}, which the command does not have"));
                }
            }
        }
        // The folder holds what it held, plus exactly the outputs a success names.
        let mut expect = before.clone();
        for c in row.creates {
            match after.get(Path::new(c)) {
                Some(bytes) => {
                    expect.insert(PathBuf::from(c), bytes.clone());
                }
                None => why.push(format!("did not write {c}")),
            }
        }
        let mut changed: Vec<String> = Vec::new();
        for (k, v) in &after {
            if expect.get(k) != Some(v) {
                changed.push(k.display().to_string());
            }
        }
        for k in expect.keys() {
            if !after.contains_key(k) {
                changed.push(format!("{} (removed)", k.display()));
            }
        }
        if !changed.is_empty() {
            why.push(format!("changed files: {changed:?}"));
        }
        // The outputs go again, but a fixture a success replaced stays, replaced.
        for c in row.creates {
            if !before.contains_key(Path::new(c)) {
                let _ = std::fs::remove_file(dir.join(c));
            }
        }
        if !why.is_empty() {
            failed.push(format!(
                "{}\n    {}\n    stderr: {}\n    stdout: {}",
                row.line,
                why.join("; "),
                stderr.trim(),
                stdout.trim()
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failed.is_empty(),
        "{} of {} rows failed:\n{}",
        failed.len(),
        ROWS.len(),
        failed.join("\n")
    );
}
