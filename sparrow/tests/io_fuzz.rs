//! The readers on any bytes: arbitrary input and mutated valid files (byte flips, truncation,
//! insertions, deletions, header numbers replaced by huge ones) must give `Ok` or `Err`, never a
//! panic and never an abort. Allocations are held to `SPARROW_MEMORY_LIMIT` (set here to
//! 256 MiB) so a size that slips through would show as a refusal, not as a machine swapping.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use proptest::prelude::*;
use sparrow::matrix::io::{self, Normalize};
use sparrow::matrix::{gen, Csr};

fn setup() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| std::env::set_var("SPARROW_MEMORY_LIMIT", (256u64 << 20).to_string()));
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// A unique path in the temporary folder; the file is removed when the guard drops.
struct TempFile(PathBuf);

impl TempFile {
    fn with(ext: &str, bytes: &[u8]) -> TempFile {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let d = std::env::temp_dir().join(format!("sparrow-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join(format!("f{}.{ext}", NEXT.fetch_add(1, Ordering::Relaxed)));
        std::fs::write(&p, bytes).unwrap();
        TempFile(p)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Every reader that takes `.npy` bytes.
fn read_all_npy(bytes: &[u8]) {
    let f = TempFile::with("npy", bytes);
    let _ = io::read_npy(&f.0);
    let _ = io::read_npy_from(bytes, &f.0);
    let _ = io::read_dense::<f32>(&f.0);
    let _ = io::read_dense::<f64>(&f.0);
    let _ = io::dense_value_dtype(&f.0);
}

/// Every reader that takes `.npz` bytes.
fn read_all_npz(bytes: &[u8]) {
    let f = TempFile::with("npz", bytes);
    for n in [Normalize::Require, Normalize::SortAndSum] {
        let _ = io::read_npz_csr::<f32>(&f.0, n);
        let _ = io::read_npz_csr::<f64>(&f.0, n);
    }
    let _ = io::read_sparse::<f64>(&f.0, Normalize::SortAndSum);
    let _ = io::sparse_value_dtype(&f.0);
}

/// Every reader that takes `.mtx` bytes.
fn read_all_mtx(bytes: &[u8]) {
    let f = TempFile::with("mtx", bytes);
    let _ = io::read_mtx::<f32>(&f.0);
    let _ = io::read_mtx::<f64>(&f.0);
    let _ = io::read_sparse::<f64>(&f.0, Normalize::Require);
    let _ = io::sparse_value_dtype(&f.0);
}

/// Numbers a header edit puts in place of one in the file.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2147483648",
    "4294967296",
    "1000000000000",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
];

/// Text an insertion may put in.
const SNIPPETS: &[&[u8]] = &[
    b"((((((((((((((((((((((((((((((((((((((((",
    b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
    b"'descr': '<f8', ",
    b"'shape': (1000000000000, 1000000000000), ",
    b", True",
    b"\n",
    b"%%MatrixMarket matrix coordinate real symmetric\n",
    b"\n1 1 1e400\n",
    b" nan ",
    b"\xff\xfe",
    b"\0\0\0\0",
];

#[derive(Clone, Debug)]
enum Mutation {
    Flip(usize, u8),
    Truncate(usize),
    Insert(usize, Vec<u8>),
    Snippet(usize, usize),
    Delete(usize, usize),
    Number(usize, usize),
    HeaderNumber(usize, usize),
    Set(usize, usize),
}

/// Bytes a text edit sets: what numbers, headers and lines are made of.
const TEXT_BYTES: &[u8] = b"0123456789 \n-+.e%(),'[]:LTF";

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        1 => (any::<usize>(), prop::collection::vec(any::<u8>(), 1..12))
            .prop_map(|(i, v)| Mutation::Insert(i, v)),
        1 => (any::<usize>(), 0..SNIPPETS.len()).prop_map(|(i, s)| Mutation::Snippet(i, s)),
        1 => (any::<usize>(), 1usize..24).prop_map(|(i, n)| Mutation::Delete(i, n)),
        2 => (any::<usize>(), 0..NUMBERS.len()).prop_map(|(i, s)| Mutation::Number(i, s)),
        3 => (any::<usize>(), 0..NUMBERS.len()).prop_map(|(i, s)| Mutation::HeaderNumber(i, s)),
        2 => (any::<usize>(), 0..TEXT_BYTES.len()).prop_map(|(i, c)| Mutation::Set(i, c)),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let at = |i: usize, len: usize| i % (len + 1);
    match m {
        Mutation::Flip(i, b) => {
            if !bytes.is_empty() {
                let k = i % bytes.len();
                bytes[k] ^= b | 1;
            }
        }
        Mutation::Truncate(i) => bytes.truncate(at(*i, bytes.len())),
        Mutation::Insert(i, v) => {
            let k = at(*i, bytes.len());
            bytes.splice(k..k, v.iter().copied());
        }
        Mutation::Snippet(i, s) => {
            let k = at(*i, bytes.len());
            bytes.splice(k..k, SNIPPETS[*s].iter().copied());
        }
        Mutation::Delete(i, n) => {
            let k = at(*i, bytes.len());
            let e = (k + n).min(bytes.len());
            bytes.drain(k..e);
        }
        Mutation::Number(i, s) => replace_number(bytes, *i, NUMBERS[*s]),
        Mutation::HeaderNumber(i, s) => {
            // A `.npy` header edit that keeps the header's length field true, so the new
            // number reaches the checks of the shape rather than failing the parse.
            if bytes.len() >= 10 && bytes.starts_with(b"\x93NUMPY\x01\x00") {
                let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
                let end = (10 + hlen).min(bytes.len());
                let mut text = bytes[10..end].to_vec();
                replace_number(&mut text, *i, NUMBERS[*s]);
                if let Ok(len) = u16::try_from(text.len()) {
                    let mut out = bytes[..8].to_vec();
                    out.extend_from_slice(&len.to_le_bytes());
                    out.extend_from_slice(&text);
                    out.extend_from_slice(&bytes[end..]);
                    *bytes = out;
                }
            } else {
                replace_number(bytes, *i, NUMBERS[*s]);
            }
        }
        Mutation::Set(i, c) => {
            if !bytes.is_empty() {
                let k = i % bytes.len();
                bytes[k] = TEXT_BYTES[*c];
            }
        }
    }
}

/// Replaces the `i`-th run of ASCII digits (sizes in a header, counts on a size line,
/// indices) with `number`.
fn replace_number(bytes: &mut Vec<u8>, i: usize, number: &str) {
    let mut runs = Vec::new();
    let mut k = 0;
    while k < bytes.len() {
        if bytes[k].is_ascii_digit() {
            let s = k;
            while k < bytes.len() && bytes[k].is_ascii_digit() {
                k += 1;
            }
            runs.push(s..k);
        } else {
            k += 1;
        }
    }
    if !runs.is_empty() {
        let r = runs[i % runs.len()].clone();
        bytes.splice(r, number.bytes());
    }
}

fn mutated(seed: &[u8], ms: &[Mutation]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for m in ms {
        apply(&mut b, m);
    }
    b
}

fn npy_bytes<X: npyz::AutoSerialize + Copy>(shape: &[u64], data: &[X]) -> Vec<u8> {
    let mut b = Vec::new();
    io::write_npy_to(&mut b, shape, data).unwrap();
    b
}

/// Valid `.npy` files of every dtype, 0-D to 3-D, and numpy's Fortran-ordered fixture.
fn npy_seeds() -> Vec<Vec<u8>> {
    vec![
        npy_bytes(&[2, 3], &[1.5f32, -2.0, 3.0, 4.0, 5.0, 6.0]),
        npy_bytes(&[3], &[0.1f64, 0.2, 0.3]),
        npy_bytes(&[2, 2], &[1i32, -2, 3, 4]),
        npy_bytes(&[4], &[1i64, 1 << 40, -7, 0]),
        npy_bytes(&[1, 2], &[7u32, 9]),
        npy_bytes(&[2, 1, 2], &[1.0f64, 2.0, 3.0, 4.0]),
        npy_bytes(&[0, 5], &[] as &[f64]),
        npy_bytes(&[], &[3.0f64]),
        std::fs::read(fixture("fortran_3x2.npy")).unwrap(),
    ]
}

const NPZ_FIXTURES: &[&str] = &[
    "small_f64.npz",
    "small_f32_stored.npz",
    "small_f64_int64.npz",
    "small_int64_values.npz",
    "small_csc.npz",
    "small_unsorted.npz",
];

/// The members of scipy's fixtures, as (name, bytes), one list per fixture.
fn npz_members() -> Vec<Vec<(String, Vec<u8>)>> {
    NPZ_FIXTURES
        .iter()
        .map(|name| {
            let mut z = zip::ZipArchive::new(std::fs::File::open(fixture(name)).unwrap()).unwrap();
            (0..z.len())
                .map(|i| {
                    let mut e = z.by_index(i).unwrap();
                    let mut b = Vec::new();
                    std::io::Read::read_to_end(&mut e, &mut b).unwrap();
                    (e.name().to_string(), b)
                })
                .collect()
        })
        .collect()
}

fn zip_of(members: &[(String, Vec<u8>)], deflate: bool) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    let mut z = zip::ZipWriter::new(&mut out);
    let method = if deflate {
        zip::CompressionMethod::Deflated
    } else {
        zip::CompressionMethod::Stored
    };
    for (name, bytes) in members {
        z.start_file(
            name.as_str(),
            zip::write::SimpleFileOptions::default().compression_method(method),
        )
        .unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap();
    out.into_inner()
}

fn mtx_seeds() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = vec![
        b"%%MatrixMarket matrix coordinate real general\n% comment\n4 5 6\n1 1 1.5\n1 4 -2\n3 2 3.25\n3 5 4\n4 1 -0.5\n4 3 6\n".to_vec(),
        b"%%MatrixMarket matrix coordinate integer symmetric\n3 3 3\n1 1 2\n3 1 5\n2 2 -1\n".to_vec(),
        b"%%MatrixMarket matrix coordinate pattern general\n2 2 2\n2 1\n1 2\n".to_vec(),
        b"%%MatrixMarket matrix coordinate real general\r\n2 3 2\r\n1 1 1\r\n2 3 1e-3\r\n".to_vec(),
    ];
    let a: Csr<f64> = gen::power_law(12, 9, 3.0, 6, 1.5, 7).unwrap();
    let p = std::env::temp_dir().join(format!("sparrow-fuzz-seed-{}.mtx", std::process::id()));
    io::write_mtx(&p, &a).unwrap();
    v.push(std::fs::read(&p).unwrap());
    let _ = std::fs::remove_file(&p);
    v
}

fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    prop::collection::vec(mutation(), 1..5)
}

/// Cases per property: about 10 s for the whole file in the test profile on 2 cores.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::with_cases(cases)
    }
}

proptest! {
    #![proptest_config(config(4000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        setup();
        read_all_npy(&bytes);
        read_all_mtx(&bytes);
        read_all_npz(&bytes);
        // The same bytes behind each format's opening, to get past the first check.
        let mut npy = b"\x93NUMPY\x01\x00".to_vec();
        npy.extend_from_slice(&bytes);
        read_all_npy(&npy);
        let mut mtx = b"%%MatrixMarket matrix coordinate real general\n".to_vec();
        mtx.extend_from_slice(&bytes);
        read_all_mtx(&mtx);
    }

    #[test]
    fn mutated_npy_never_panics(seed in 0usize..9, ms in mutations()) {
        setup();
        let seeds = npy_seeds();
        read_all_npy(&mutated(&seeds[seed % seeds.len()], &ms));
    }

    #[test]
    fn mutated_mtx_never_panics(seed in 0usize..5, ms in mutations()) {
        setup();
        let seeds = mtx_seeds();
        read_all_mtx(&mutated(&seeds[seed % seeds.len()], &ms));
    }
}

proptest! {
    #![proptest_config(config(2000))]

    /// Mutations of one member's `.npy` bytes, zipped again (stored or deflated) so the zip
    /// itself is sound and the member's contents reach the readers.
    #[test]
    fn mutated_npz_members_never_panic(
        fixture in 0usize..6,
        member in 0usize..5,
        ms in mutations(),
        deflate in any::<bool>(),
        drop_member in any::<bool>(),
    ) {
        setup();
        let all = npz_members();
        let mut members = all[fixture % all.len()].clone();
        let k = member % members.len();
        if drop_member && ms.len() == 1 {
            members.remove(k);
        } else {
            members[k].1 = mutated(&members[k].1, &ms);
        }
        read_all_npz(&zip_of(&members, deflate));
    }

    /// Mutations of the zip bytes themselves: directory, local headers, compressed data.
    #[test]
    fn mutated_npz_files_never_panic(fixture in 0usize..6, ms in mutations()) {
        setup();
        let bytes = std::fs::read(self::fixture(NPZ_FIXTURES[fixture % NPZ_FIXTURES.len()])).unwrap();
        read_all_npz(&mutated(&bytes, &ms));
    }
}

/// Inputs the properties above reach only by chance, read once each.
#[test]
fn known_hostile_inputs_are_errors() {
    setup();
    let deep = format!(
        "{{'descr': '<f8', 'fortran_order': False, 'shape': {}3{}, }}",
        "(".repeat(20_000),
        ",)".repeat(20_000)
    );
    let mut npy = b"\x93NUMPY\x02\x00".to_vec();
    npy.extend_from_slice(&(deep.len() as u32).to_le_bytes());
    npy.extend_from_slice(deep.as_bytes());
    let f = TempFile::with("npy", &npy);
    assert!(io::read_npy(&f.0).is_err());
    assert!(io::dense_value_dtype(&f.0).is_err());
    read_all_npy(&npy);

    // A member declaring 2^40 float64 values inside a zip holding a few bytes of them, and one
    // whose declared size is far past what its deflate stream holds.
    let mut members = npz_members()[0].clone();
    for (name, bytes) in members.iter_mut() {
        if name == "data.npy" {
            let text = String::from_utf8_lossy(bytes).replace("(6,)", "(1099511627776,)");
            *bytes = text.into_bytes();
        }
    }
    let z = zip_of(&members, true);
    let f = TempFile::with("npz", &z);
    let e = io::read_npz_csr::<f64>(&f.0, Normalize::Require).unwrap_err();
    assert!(e.to_string().contains("member data.npy"), "{e}");
    read_all_npz(&z);
}
