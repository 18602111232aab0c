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
        "data has dtype float64, but f32 was asked for; convert the file or choose --dtype f64"
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
    assert_eq!(why, "file is truncated: it ends before all its elements");

    std::fs::write(&p, b"not an npy file at all").unwrap();
    let (_, why) = format_err(io::read_npy(&p));
    assert!(why.starts_with("not a valid .npy array"), "{why}");

    io::write_npy(&p, &[2], &[1u8, 2]).unwrap();
    let (_, why) = format_err(io::read_npy(&p));
    assert_eq!(why, "unsupported dtype |u1; sparrow reads float32, float64, int32, int64 and uint32 (little-endian)");

    io::write_npy(&p, &[2, 2], &[1.0f64, 2.0, 3.0, 4.0]).unwrap();
    let (_, why) = format_err(io::read_dense::<f32>(&p));
    assert_eq!(why, "the array has dtype float64, but f32 was asked for; convert the file or choose --dtype f64");

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
