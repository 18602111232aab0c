//! File formats: round trips, scipy-written fixtures, and files that lie (truncated, wrong
//! dtype, mismatched shapes, indices out of range), each an error naming the path.

use std::path::{Path, PathBuf};

use sparrow::matrix::io::{self, Normalize, NpyData};
use sparrow::matrix::{gen, Csr, Dense};
use sparrow::Error;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sparrow-io-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// The 4 x 5 matrix of tests/data/make_fixtures.py.
fn expected() -> Csr<f64> {
    Csr::new(
        4,
        5,
        vec![0, 2, 2, 4, 6],
        vec![0, 3, 1, 4, 0, 2],
        vec![1.5, -2.0, 3.25, 4.0, -0.5, 6.0],
    )
    .unwrap()
}

fn format_err<T: std::fmt::Debug>(r: Result<T, Error>) -> (PathBuf, String) {
    match r {
        Err(Error::Format { path, why }) => (path, why),
        other => panic!("expected a format error, got {other:?}"),
    }
}

#[test]
fn reads_scipy_npz_fixtures() {
    assert_eq!(
        io::read_npz_csr::<f64>(fixture("small_f64.npz"), Normalize::Require).unwrap(),
        expected()
    );
    assert_eq!(
        io::read_npz_csr::<f64>(fixture("small_f64_int64.npz"), Normalize::Require).unwrap(),
        expected()
    );
    assert_eq!(
        io::read_npz_csr::<f32>(fixture("small_f32_stored.npz"), Normalize::Require).unwrap(),
        expected().cast::<f32>()
    );
    // Integer values convert exactly; the fixture's values were truncated by astype(int64).
    let ints =
        io::read_npz_csr::<f64>(fixture("small_int64_values.npz"), Normalize::Require).unwrap();
    assert_eq!(ints.values(), &[1.0, -2.0, 3.0, 4.0, 0.0, 6.0]);
}

#[test]
fn npz_value_type_mismatch_is_refused() {
    let (path, why) = format_err(io::read_npz_csr::<f32>(
        fixture("small_f64.npz"),
        Normalize::Require,
    ));
    assert_eq!(path, fixture("small_f64.npz"));
    assert_eq!(
        why,
        "data holds float64; reading it as float32 would round it"
    );
}

#[test]
fn npz_in_csc_format_is_refused() {
    let (_, why) = format_err(io::read_npz_csr::<f64>(
        fixture("small_csc.npz"),
        Normalize::Require,
    ));
    assert_eq!(
        why,
        "holds a sparse matrix in format \"csc\"; sparrow reads \"csr\" (convert with .tocsr())"
    );
}

#[test]
fn npz_unsorted_rows_need_normalisation() {
    let (_, why) = format_err(io::read_npz_csr::<f64>(
        fixture("small_unsorted.npz"),
        Normalize::Require,
    ));
    assert!(
        why.contains("row 0: column index 0 at position 1 is smaller than the previous index"),
        "{why}"
    );
    let a = io::read_npz_csr::<f64>(fixture("small_unsorted.npz"), Normalize::SortAndSum).unwrap();
    assert_eq!(a, expected());
}

#[test]
fn npz_round_trip() {
    let a = gen::power_law::<f32>(300, 200, 5.0, 150, 1.5, 3).unwrap();
    let p = tmp("rt.npz");
    io::write_npz_csr(&p, &a).unwrap();
    assert_eq!(io::read_npz_csr::<f32>(&p, Normalize::Require).unwrap(), a);
    assert_eq!(io::sparse_value_dtype(&p).unwrap(), Some("f32"));
    let empty = Csr::<f64>::empty(3, 0).unwrap();
    io::write_npz_csr(&p, &empty).unwrap();
    assert_eq!(
        io::read_npz_csr::<f64>(&p, Normalize::Require).unwrap(),
        empty
    );
}

/// Builds an .npz with the given members, each an (name, shape, data) array.
fn write_members(p: &Path, members: &[(&str, NpyData, Vec<u64>)], format: bool) {
    use std::io::Write;
    let f = std::fs::File::create(p).unwrap();
    let mut z = zip::ZipWriter::new(f);
    for (name, data, shape) in members {
        let mut buf = Vec::new();
        match data {
            NpyData::F32(v) => io::write_npy_to(&mut buf, shape, v).unwrap(),
            NpyData::F64(v) => io::write_npy_to(&mut buf, shape, v).unwrap(),
            NpyData::I32(v) => io::write_npy_to(&mut buf, shape, v).unwrap(),
            NpyData::I64(v) => io::write_npy_to(&mut buf, shape, v).unwrap(),
            NpyData::U32(v) => io::write_npy_to(&mut buf, shape, v).unwrap(),
        }
        z.start_file(
            format!("{name}.npy"),
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        z.write_all(&buf).unwrap();
    }
    if format {
        // Borrow the format member of a scipy fixture.
        let mut src =
            zip::ZipArchive::new(std::fs::File::open(fixture("small_f64.npz")).unwrap()).unwrap();
        let mut e = src.by_name("format.npy").unwrap();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut e, &mut bytes).unwrap();
        z.start_file("format.npy", zip::write::SimpleFileOptions::default())
            .unwrap();
        z.write_all(&bytes).unwrap();
    }
    z.finish().unwrap();
}

#[test]
fn npz_that_lies_about_its_shape() {
    let p = tmp("lie_shape.npz");
    write_members(
        &p,
        &[
            ("shape", NpyData::I64(vec![3, 5]), vec![2]),
            ("indptr", NpyData::I32(vec![0, 1, 2]), vec![3]),
            ("indices", NpyData::I32(vec![0, 1]), vec![2]),
            ("data", NpyData::F64(vec![1.0, 2.0]), vec![2]),
        ],
        true,
    );
    let (path, why) = format_err(io::read_npz_csr::<f64>(&p, Normalize::Require));
    assert_eq!(path, p);
    assert_eq!(why, "indptr has 3 entries but shape 3 x 5 needs 4");
}

#[test]
fn npz_index_out_of_range() {
    let p = tmp("lie_index.npz");
    write_members(
        &p,
        &[
            ("shape", NpyData::I64(vec![2, 5]), vec![2]),
            ("indptr", NpyData::I32(vec![0, 1, 2]), vec![3]),
            ("indices", NpyData::I32(vec![0, 7]), vec![2]),
            ("data", NpyData::F64(vec![1.0, 2.0]), vec![2]),
        ],
        true,
    );
    let (_, why) = format_err(io::read_npz_csr::<f64>(&p, Normalize::Require));
    assert_eq!(why, "indices[1] = 7 is out of range for 5 columns");
}

#[test]
fn npz_length_mismatch_and_missing_members() {
    let p = tmp("lie_len.npz");
    write_members(
        &p,
        &[
            ("shape", NpyData::I64(vec![2, 5]), vec![2]),
            ("indptr", NpyData::I32(vec![0, 1, 2]), vec![3]),
            ("indices", NpyData::I32(vec![0, 1]), vec![2]),
            ("data", NpyData::F64(vec![1.0]), vec![1]),
        ],
        true,
    );
    let (_, why) = format_err(io::read_npz_csr::<f64>(&p, Normalize::Require));
    assert_eq!(why, "indices has 2 entries but data has 1");
    let p = tmp("no_format.npz");
    write_members(&p, &[("shape", NpyData::I64(vec![2, 5]), vec![2])], false);
    let (_, why) = format_err(io::read_npz_csr::<f64>(&p, Normalize::Require));
    assert_eq!(
        why,
        "member format.npy is missing; not a matrix written by scipy.sparse.save_npz"
    );
}

#[test]
fn npz_truncated_and_not_a_zip() {
    let p = tmp("trunc.npz");
    let bytes = std::fs::read(fixture("small_f64.npz")).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    let (path, why) = format_err(io::read_npz_csr::<f64>(&p, Normalize::Require));
    assert_eq!(path, p);
    assert!(why.starts_with("not a valid .npz (zip) file"), "{why}");
    let e = io::read_npz_csr::<f64>(tmp("does_not_exist.npz"), Normalize::Require).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e:?}");
    assert!(e.to_string().contains("does_not_exist.npz"));
}

#[test]
fn npy_round_trips_every_dtype() {
    let p = tmp("a.npy");
    io::write_npy(&p, &[2, 2], &[1.5f32, 2.0, -3.0, 4.0]).unwrap();
    assert_eq!(
        io::read_npy(&p).unwrap().data,
        NpyData::F32(vec![1.5, 2.0, -3.0, 4.0])
    );
    io::write_npy(&p, &[3], &[1.5f64, 2.0, -3.0]).unwrap();
    assert_eq!(
        io::read_npy(&p).unwrap().data,
        NpyData::F64(vec![1.5, 2.0, -3.0])
    );
    io::write_npy(&p, &[2], &[-7i32, 9]).unwrap();
    assert_eq!(io::read_npy(&p).unwrap().data, NpyData::I32(vec![-7, 9]));
    io::write_npy(&p, &[2], &[-7i64, 1 << 40]).unwrap();
    assert_eq!(
        io::read_npy(&p).unwrap().data,
        NpyData::I64(vec![-7, 1 << 40])
    );
    io::write_npy(&p, &[1, 2], &[7u32, 9]).unwrap();
    let a = io::read_npy(&p).unwrap();
    assert_eq!((a.shape, a.data), (vec![1, 2], NpyData::U32(vec![7, 9])));
}

#[test]
fn npy_dense_with_padding_writes_packed() {
    let d = Dense::<f64>::new(2, 2, 3, vec![1.0, 2.0, f64::NAN, 3.0, 4.0]).unwrap();
    let p = tmp("dense.npy");
    io::write_dense(&p, &d).unwrap();
    let back: Dense<f64> = io::read_dense(&p).unwrap();
    assert_eq!(back.data(), &[1.0, 2.0, 3.0, 4.0]);
}

#[test]
fn npy_fortran_order_is_transposed_on_read() {
    let d: Dense<f64> = io::read_dense(fixture("fortran_3x2.npy")).unwrap();
    assert_eq!((d.nrows(), d.ncols()), (3, 2));
    assert_eq!(d.data(), &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
}

#[test]
fn npy_that_lies() {
    let p = tmp("trunc.npy");
    io::write_npy(&p, &[100], &vec![1.0f64; 100]).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() - 8]).unwrap();
    let (path, why) = format_err(io::read_npy(&p));
    assert_eq!(path, p);
    assert_eq!(why, "file is truncated: it ends before all its elements (shape [100] needs 800 bytes of data, 792 follow the header)");
    // A reader of unknown length finds the same when the bytes run out.
    let (path, why) = format_err(io::read_npy_from(&bytes[..bytes.len() - 8], &p));
    assert_eq!(path, p);
    assert_eq!(why, "file is truncated: it ends before all its elements");

    std::fs::write(&p, b"not an npy file at all").unwrap();
    let (_, why) = format_err(io::read_npy(&p));
    assert!(why.starts_with("not a valid .npy array"), "{why}");

    io::write_npy(&p, &[2], &[1u8, 2]).unwrap();
    let (_, why) = format_err(io::read_npy(&p));
    assert_eq!(why, "unsupported dtype |u1; sparrow reads float32, float64, int32, int64 and uint32 (little-endian)");

    io::write_npy(&p, &[2, 2], &[1.0f64, 2.0, 3.0, 4.0]).unwrap();
    let (_, why) = format_err(io::read_dense::<f32>(&p));
    assert_eq!(
        why,
        "the array holds float64; reading it as float32 would round it"
    );

    io::write_npy(&p, &[2, 1, 2], &[1.0f64, 2.0, 3.0, 4.0]).unwrap();
    let (_, why) = format_err(io::read_dense::<f64>(&p));
    assert_eq!(why, "expected a 1-D or 2-D array, found shape [2, 1, 2]");
}

#[test]
fn mtx_general_symmetric_pattern_integer() {
    let p = tmp("g.mtx");
    std::fs::write(&p, "%%MatrixMarket matrix coordinate real general\n% comment\n4 5 6\n1 1 1.5\n1 4 -2\n3 2 3.25\n3 5 4\n4 1 -0.5\n4 3 6\n").unwrap();
    assert_eq!(io::read_mtx::<f64>(&p).unwrap(), expected());
    io::write_mtx(&p, &expected()).unwrap();
    assert_eq!(io::read_mtx::<f64>(&p).unwrap(), expected());
    assert_eq!(
        io::read_sparse::<f64>(&p, Normalize::Require).unwrap(),
        expected()
    );

    std::fs::write(
        &p,
        "%%MatrixMarket matrix coordinate integer symmetric\n3 3 3\n1 1 2\n3 1 5\n2 2 -1\n",
    )
    .unwrap();
    let s = io::read_mtx::<f64>(&p).unwrap();
    assert_eq!(s.row_ptr(), &[0, 2, 3, 4]);
    assert_eq!(s.col_idx(), &[0, 2, 1, 0]);
    assert_eq!(s.values(), &[2.0, 5.0, -1.0, 5.0]);

    std::fs::write(
        &p,
        "%%MatrixMarket matrix coordinate pattern general\n2 2 2\n2 1\n1 2\n",
    )
    .unwrap();
    let s = io::read_mtx::<f32>(&p).unwrap();
    assert_eq!(s.col_idx(), &[1, 0]);
    assert_eq!(s.values(), &[1.0, 1.0]);
}

#[test]
fn mtx_that_lies() {
    let p = tmp("bad.mtx");
    let cases = [
        ("%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n2 2 2\n", "line 4: the file is truncated: 2 entries of the 3 the size line declares"),
        ("%%MatrixMarket matrix coordinate real general\n3 3 1\n4 1 1\n", "line 3: row index 4 is out of range 1..=3"),
        ("%%MatrixMarket matrix coordinate real general\n3 3 1\n1 0 1\n", "line 3: column index 0 is out of range 1..=3"),
        ("%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 x\n", "line 3: expected a real value, found \"1 1 x\""),
        ("%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 1\n2 2 2\n", "line 4: more entries than the 1 the size line declares"),
        ("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", "line 1: field \"complex\" is not supported (real, integer, pattern)"),
        ("%%MatrixMarket matrix array real general\n1 1\n1\n", "line 1: format \"array\" is not supported; sparrow reads coordinate files"),
        ("%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n1 2 1\n", "line 3: entry (1, 2) is above the diagonal in a symmetric file"),
        ("%%MatrixMarket matrix coordinate real general\n", "no size line; the file is truncated"),
        ("hello\n", "line 1: expected '%%MatrixMarket matrix coordinate <field> <symmetry>', found \"hello\""),
    ];
    for (text, want) in cases {
        std::fs::write(&p, text).unwrap();
        let (path, why) = format_err(io::read_mtx::<f64>(&p));
        assert_eq!(path, p);
        assert_eq!(why, want, "for file {text:?}");
    }
    let (_, why) = format_err(io::read_sparse::<f64>(tmp("x.csv"), Normalize::Require));
    assert_eq!(why, "unknown sparse format; expected a .npz or .mtx file");
}

/// `.npy` bytes with the given header dict text and `data` after it (version 1.0).
fn npy_with_header(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut text = dict.to_string();
    while !(10 + text.len() + 1).is_multiple_of(64) {
        text.push(' ');
    }
    text.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(text.len() as u16).to_le_bytes());
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(data);
    out
}

fn too_large<T: std::fmt::Debug>(r: Result<T, Error>) -> String {
    match r {
        Err(e @ Error::TooLarge { .. }) => e.to_string(),
        other => panic!("expected a too-large error, got {other:?}"),
    }
}

#[test]
fn mtx_huge_size_lines_are_refused_before_allocating() {
    let p = tmp("huge.mtx");
    // Row pointers of 10^12 rows: refused as too large, whatever the entries.
    std::fs::write(
        &p,
        "%%MatrixMarket matrix coordinate real general\n1000000000000 1000000000000 0\n",
    )
    .unwrap();
    let s = too_large(io::read_mtx::<f64>(&p));
    assert!(s.contains("too large") && s.contains("huge.mtx"), "{s}");
    // Row counts whose row pointers overflow 64 bits.
    std::fs::write(
        &p,
        "%%MatrixMarket matrix coordinate pattern symmetric\n18446744073709551615 18446744073709551615 1\n",
    )
    .unwrap();
    let s = too_large(io::read_mtx::<f32>(&p));
    assert!(s.contains("too large") && s.contains("overflow"), "{s}");
    // 10^12 entries declared in a file of a few bytes: nothing is reserved on that word, and
    // the file ends as the truncated file it is.
    for header in ["real general", "pattern symmetric", "integer general"] {
        let line = if header.starts_with("pattern") {
            "1 1"
        } else {
            "1 1 1"
        };
        std::fs::write(
            &p,
            format!("%%MatrixMarket matrix coordinate {header}\n3 3 1000000000000\n{line}\n"),
        )
        .unwrap();
        let (path, why) = format_err(io::read_mtx::<f64>(&p));
        assert_eq!(path, p);
        assert_eq!(
            why,
            "line 3: the file is truncated: 1 entries of the 1000000000000 the size line declares"
        );
    }
    // A number past 64 bits is no size line at all.
    std::fs::write(
        &p,
        "%%MatrixMarket matrix coordinate real general\n3 3 99999999999999999999999\n",
    )
    .unwrap();
    let (_, why) = format_err(io::read_mtx::<f64>(&p));
    assert!(why.starts_with("line 2: expected the size line"), "{why}");
    // Columns past the 32-bit column indices are said so before any entry is read.
    std::fs::write(
        &p,
        "%%MatrixMarket matrix coordinate real general\n3 5000000000 1\n1 1 1\n",
    )
    .unwrap();
    let (_, why) = format_err(io::read_mtx::<f64>(&p));
    assert_eq!(why, "5000000000 columns do not fit 32-bit column indices");
    // Text that is not UTF-8 names its line.
    std::fs::write(
        &p,
        b"%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 \xff\n",
    )
    .unwrap();
    let (_, why) = format_err(io::read_mtx::<f64>(&p));
    assert_eq!(why, "line 3: is not valid UTF-8 text");
}

#[test]
fn npy_shape_larger_than_the_file_is_refused() {
    let p = tmp("liar.npy");
    std::fs::write(
        &p,
        npy_with_header(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }",
            &[0u8; 16],
        ),
    )
    .unwrap();
    let (path, why) = format_err(io::read_npy(&p));
    assert_eq!(path, p);
    assert_eq!(why, "file is truncated: it ends before all its elements (shape [1000000000000] needs 8000000000000 bytes of data, 16 follow the header)");
    assert!(io::read_dense::<f64>(&p).is_err());
    // The header alone still says what the file holds.
    assert_eq!(io::dense_value_dtype(&p).unwrap(), Some("f64"));

    // A shape whose product overflows is too large, from a file or any reader.
    let bytes = npy_with_header(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }",
        &[],
    );
    std::fs::write(&p, &bytes).unwrap();
    let s = too_large(io::read_npy(&p));
    assert!(s.contains("overflows"), "{s}");
    let s = too_large(io::read_npy_from(&bytes[..], &p));
    assert!(s.contains("liar.npy"), "{s}");
    // A reader of unknown length claiming 10^8 elements holds only what arrives.
    let bytes = npy_with_header(
        "{'descr': '<i8', 'fortran_order': False, 'shape': (100000000,), }",
        &[1u8; 24],
    );
    let (_, why) = format_err(io::read_npy_from(&bytes[..], &p));
    assert_eq!(why, "file is truncated: it ends before all its elements");
}

/// An empty Fortran-order array with a huge first dimension is read at once: the transpose
/// has nothing to copy (it once looped over the 10^12 rows).
#[test]
fn npy_empty_fortran_array_with_a_huge_dimension() {
    let p = tmp("empty_fortran.npy");
    std::fs::write(
        &p,
        npy_with_header(
            "{'descr': '<f8', 'fortran_order': True, 'shape': (1000000000000, 0), }",
            &[],
        ),
    )
    .unwrap();
    let arr = io::read_npy(&p).unwrap();
    assert_eq!(arr.shape, vec![1_000_000_000_000, 0]);
    let _ = io::read_dense::<f64>(&p);
}

#[test]
fn npy_headers_that_lie_are_format_errors() {
    let p = tmp("bad_header.npy");
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            npy_with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (-3,), }", &[]),
            "not a valid .npy array: header: 'shape' holds a negative or overlong size",
        ),
        (
            npy_with_header(
                "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999999,), }",
                &[],
            ),
            "not a valid .npy array: header: 'shape' holds a negative or overlong size",
        ),
        (
            npy_with_header("{'descr': '<f8', 'shape': (3,), }", &[]),
            "not a valid .npy array: header: it has no 'fortran_order'",
        ),
        (
            npy_with_header(&format!("{}{}", "(".repeat(5000), ")".repeat(5000)), &[]),
            "not a valid .npy array: header: nested more than 32 levels deep",
        ),
        (
            npy_with_header(
                "{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (1,), }",
                &[0; 8],
            ),
            "unsupported dtype (a structured record type); sparrow reads float32, float64, int32, int64 and uint32 (little-endian)",
        ),
        (
            npy_with_header("{'descr': '<f8', 'fortran_order': True, 'shape': (1, 1, 1), }", &[0; 8]),
            "Fortran-ordered arrays of more than 2 dimensions are not supported",
        ),
        (
            // Version 2.0 with a 4 GiB header length.
            b"\x93NUMPY\x02\x00\xff\xff\xff\xff{".to_vec(),
            "not a valid .npy array: its header claims 4294967295 bytes, more than the 1048576 sparrow reads",
        ),
        (
            b"\x93NUMPY\x01\x00\x40\x00{'descr'".to_vec(),
            "file is truncated: it ends inside its header",
        ),
        (
            b"\x93NUMPY\x09\x00".to_vec(),
            "not a valid .npy array: format version 9.0 is not one sparrow reads (1.0, 2.0, 3.0)",
        ),
        (b"\x93NUM".to_vec(), "not a valid .npy array: it does not start with the .npy magic bytes"),
    ];
    for (bytes, want) in cases {
        std::fs::write(&p, &bytes).unwrap();
        let (path, why) = format_err(io::read_npy(&p));
        assert_eq!(path, p);
        assert_eq!(why, want);
        let (_, why) = format_err(io::read_npy_from(&bytes[..], &p));
        if !want.starts_with("file is truncated") {
            assert_eq!(why, want);
        }
    }
}

#[test]
fn float32_files_widen_exactly_to_f64() {
    let vals = [
        0.1f32,
        -1.0e-40,
        f32::MAX,
        f32::MIN_POSITIVE,
        -0.0,
        16_777_217.0,
        f32::INFINITY,
        1.0 / 3.0,
    ];
    let p = tmp("widen.npy");
    io::write_npy(&p, &[2, 4], &vals).unwrap();
    assert_eq!(io::dense_value_dtype(&p).unwrap(), Some("f32"));
    let d: Dense<f64> = io::read_dense(&p).unwrap();
    assert_eq!((d.nrows(), d.ncols()), (2, 4));
    for (got, want) in d.data().iter().zip(vals) {
        assert_eq!(got.to_bits(), (want as f64).to_bits());
    }
    // The same for the values of a scipy-written float32 .npz.
    let a = io::read_npz_csr::<f64>(fixture("small_f32_stored.npz"), Normalize::Require).unwrap();
    assert_eq!(a, expected());
    assert_eq!(
        io::sparse_value_dtype(fixture("small_f32_stored.npz")).unwrap(),
        Some("f32")
    );
}

#[test]
fn float64_files_read_as_f32_are_refused_naming_the_file() {
    let p = tmp("narrow.npy");
    io::write_npy(&p, &[3], &[0.1f64, 0.2, 0.3]).unwrap();
    let (path, why) = format_err(io::read_dense::<f32>(&p));
    assert_eq!(path, p);
    assert_eq!(
        why,
        "the array holds float64; reading it as float32 would round it"
    );
    assert!(!why.contains("--"), "{why}");
    let e = io::read_npz_csr::<f32>(fixture("small_f64.npz"), Normalize::Require).unwrap_err();
    assert!(e.to_string().contains("small_f64.npz"), "{e}");
    assert!(e.to_string().contains("holds float64"), "{e}");
}

#[test]
fn value_dtypes_come_from_the_header() {
    let p = tmp("dtypes.npy");
    io::write_npy(&p, &[2], &[1.0f64, 2.0]).unwrap();
    assert_eq!(io::dense_value_dtype(&p).unwrap(), Some("f64"));
    io::write_npy(&p, &[2], &[1i32, 2]).unwrap();
    assert_eq!(io::dense_value_dtype(&p).unwrap(), None);
    io::write_npy(&p, &[2], &[1i64, 2]).unwrap();
    assert_eq!(io::dense_value_dtype(&p).unwrap(), None);
    io::write_npy(&p, &[2], &[1u8, 2]).unwrap();
    let (_, why) = format_err(io::dense_value_dtype(&p));
    assert!(why.starts_with("unsupported dtype |u1"), "{why}");
    let e = io::dense_value_dtype(tmp("missing.npy")).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e:?}");

    assert_eq!(
        io::sparse_value_dtype(fixture("small_f64.npz")).unwrap(),
        Some("f64")
    );
    assert_eq!(
        io::sparse_value_dtype(fixture("small_int64_values.npz")).unwrap(),
        None
    );
    assert_eq!(io::sparse_value_dtype(tmp("any.mtx")).unwrap(), None);

    // A data member whose header claims 10^12 elements it does not hold: the dtype is still
    // answered from the header alone, and reading the matrix is refused, not attempted.
    let z = tmp("huge_member.npz");
    write_raw_members(
        &z,
        &[(
            "data.npy",
            npy_with_header(
                "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }",
                &[],
            ),
        )],
    );
    assert_eq!(io::sparse_value_dtype(&z).unwrap(), Some("f32"));
}

/// Builds a zip of raw members (deflated).
fn write_raw_members(p: &Path, members: &[(&str, Vec<u8>)]) {
    use std::io::Write;
    let f = std::fs::File::create(p).unwrap();
    let mut z = zip::ZipWriter::new(f);
    for (name, bytes) in members {
        z.start_file(
            *name,
            zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated),
        )
        .unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap();
}

fn scipy_format_member() -> Vec<u8> {
    let mut src =
        zip::ZipArchive::new(std::fs::File::open(fixture("small_f64.npz")).unwrap()).unwrap();
    let mut e = src.by_name("format.npy").unwrap();
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut e, &mut bytes).unwrap();
    bytes
}

fn npy_bytes_i64(v: &[i64]) -> Vec<u8> {
    let mut b = Vec::new();
    io::write_npy_to(&mut b, &[v.len() as u64], v).unwrap();
    b
}

#[test]
fn npz_members_are_bounded_by_their_declared_size() {
    let z = tmp("bomb.npz");
    // 64 MiB of zeros deflate to a few KiB; the header claims 2^40 float64 values.
    let mut huge = npy_with_header(
        "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }",
        &[],
    );
    huge.resize(huge.len() + (64 << 20), 0);
    write_raw_members(
        &z,
        &[
            ("format.npy", scipy_format_member()),
            ("shape.npy", npy_bytes_i64(&[2, 2])),
            ("indptr.npy", npy_bytes_i64(&[0, 0, 0])),
            ("indices.npy", npy_bytes_i64(&[])),
            ("data.npy", huge),
        ],
    );
    let (path, why) = format_err(io::read_npz_csr::<f64>(&z, Normalize::Require));
    assert_eq!(path, z);
    assert!(
        why.starts_with("member data.npy: file is truncated: it ends before all its elements (shape [1099511627776] needs 8796093022208 bytes of data, 67108864 follow the header)"),
        "{why}"
    );
    // A shape member of sizes past i32 columns, and one of a negative size.
    write_raw_members(
        &z,
        &[
            ("format.npy", scipy_format_member()),
            ("shape.npy", npy_bytes_i64(&[2, 1 << 40])),
        ],
    );
    let (_, why) = format_err(io::read_npz_csr::<f64>(&z, Normalize::Require));
    assert_eq!(
        why,
        "1099511627776 columns do not fit 32-bit column indices"
    );
    write_raw_members(
        &z,
        &[
            ("format.npy", scipy_format_member()),
            ("shape.npy", npy_bytes_i64(&[-2, 3])),
        ],
    );
    let (_, why) = format_err(io::read_npz_csr::<f64>(&z, Normalize::Require));
    assert_eq!(why, "shape [-2, 3] is not two non-negative sizes");
}

/// A folder of its own for a test that lists what is left in it.
fn fresh_dir(name: &str) -> PathBuf {
    let d = tmp(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn names_in(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_failed_write_leaves_the_earlier_file_and_no_temporary() {
    let d = fresh_dir("atomic_fail");
    let p = d.join("out.json");
    std::fs::write(&p, b"{\"earlier\": true}\n").unwrap();
    let e = io::write_atomic(&p, |w| {
        w.write_all(b"{\"partial\": ")?;
        w.write_all(&vec![b'x'; 1 << 20])?;
        Err(std::io::Error::other("the writer failed midway"))
    })
    .unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e:?}");
    assert!(e.to_string().contains("out.json"), "{e}");
    assert!(e.to_string().contains("the writer failed midway"), "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), b"{\"earlier\": true}\n");
    assert_eq!(names_in(&d), vec!["out.json"]);

    // A writer that panics leaves nothing behind either.
    let r = std::panic::catch_unwind(|| {
        let _ = io::write_atomic(&p, |w| {
            w.write_all(b"half")?;
            panic!("writer panicked");
        });
    });
    assert!(r.is_err());
    assert_eq!(std::fs::read(&p).unwrap(), b"{\"earlier\": true}\n");
    assert_eq!(names_in(&d), vec!["out.json"]);

    // A successful write replaces the file.
    io::write_atomic(&p, |w| w.write_all(b"{\"later\": 1}\n")).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), b"{\"later\": 1}\n");
    assert_eq!(names_in(&d), vec!["out.json"]);
}

#[test]
fn matrix_writers_replace_files_whole() {
    let d = fresh_dir("atomic_writers");
    let a = expected();
    let npz = d.join("a.npz");
    let mtx = d.join("a.mtx");
    let npy = d.join("a.npy");
    for _ in 0..2 {
        io::write_npz_csr(&npz, &a).unwrap();
        io::write_mtx(&mtx, &a).unwrap();
        io::write_dense(&npy, &Dense::from_rows(1, 2, vec![1.0f64, 2.0]).unwrap()).unwrap();
    }
    assert_eq!(
        io::read_npz_csr::<f64>(&npz, Normalize::Require).unwrap(),
        a
    );
    assert_eq!(io::read_mtx::<f64>(&mtx).unwrap(), a);
    assert_eq!(io::read_dense::<f64>(&npy).unwrap().data(), &[1.0, 2.0]);
    assert_eq!(names_in(&d), vec!["a.mtx", "a.npy", "a.npz"]);

    // Into a folder that does not exist: an Io error naming the path, nothing created.
    let missing = d.join("no_such_folder").join("out.npy");
    for e in [
        io::write_npy(&missing, &[1], &[1.0f32]).unwrap_err(),
        io::write_npz_csr(&missing, &a).unwrap_err(),
        io::write_mtx(&missing, &a).unwrap_err(),
        io::write_atomic(&missing, |w| w.write_all(b"x")).unwrap_err(),
    ] {
        assert!(matches!(e, Error::Io { .. }), "{e:?}");
        assert!(e.to_string().contains("no_such_folder/out.npy"), "{e}");
    }
    assert_eq!(names_in(&d), vec!["a.mtx", "a.npy", "a.npz"]);
}

#[cfg(unix)]
#[test]
fn writing_through_a_symlink_replaces_its_target() {
    let d = fresh_dir("atomic_link");
    let target = d.join("real.txt");
    let link = d.join("link.txt");
    std::fs::write(&target, b"old").unwrap();
    std::os::unix::fs::symlink("real.txt", &link).unwrap();
    io::write_atomic(&link, |w| w.write_all(b"new")).unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(&target).unwrap(), b"new");
    assert_eq!(names_in(&d), vec!["link.txt", "real.txt"]);
    // A failed write through the link keeps both.
    assert!(io::write_atomic(&link, |_| Err(std::io::Error::other("no"))).is_err());
    assert_eq!(std::fs::read(&target).unwrap(), b"new");
    assert_eq!(names_in(&d), vec!["link.txt", "real.txt"]);
}

#[test]
fn npz_member_declaring_a_huge_size_is_read_only_as_far_as_it_goes() {
    // A deflated data.npy whose zip records declare 4 GiB uncompressed and whose header
    // claims 500 million float64 values, with 80 bytes of them: the read ends at the data's
    // end as a truncated member, having held no more than what arrived.
    let z = tmp("declared_huge.npz");
    let data = npy_with_header(
        "{'descr': '<f8', 'fortran_order': False, 'shape': (500000000,), }",
        &[0u8; 80],
    );
    write_raw_members(
        &z,
        &[
            ("format.npy", scipy_format_member()),
            ("shape.npy", npy_bytes_i64(&[1, 500_000_000])),
            ("indptr.npy", npy_bytes_i64(&[0, 500_000_000])),
            ("indices.npy", npy_bytes_i64(&[])),
            ("data.npy", data),
        ],
    );
    let mut bytes = std::fs::read(&z).unwrap();
    let name = b"data.npy";
    let mut patched = 0;
    for (sig, size_at, name_at) in [(b"PK\x03\x04", 22, 30), (b"PK\x01\x02", 24, 46)] {
        let mut i = 0;
        while i + name_at + name.len() <= bytes.len() {
            if &bytes[i..i + 4] == sig && &bytes[i + name_at..i + name_at + name.len()] == name {
                bytes[i + size_at..i + size_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
                patched += 1;
            }
            i += 1;
        }
    }
    assert_eq!(patched, 2);
    std::fs::write(&z, &bytes).unwrap();
    let t = std::time::Instant::now();
    let e = io::read_npz_csr::<f64>(&z, Normalize::Require).unwrap_err();
    assert!(t.elapsed().as_secs_f64() < 5.0);
    let (path, why) = format_err::<()>(Err(e));
    assert_eq!(path, z);
    assert_eq!(
        why,
        "member data.npy: file is truncated: it ends before all its elements"
    );
    // The header alone is enough for the value type.
    assert_eq!(io::sparse_value_dtype(&z).unwrap(), Some("f64"));
}
