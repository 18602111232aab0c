//! CSR construction: every structural rule is enforced with an error that names the argument,
//! the row and the offending value; normalisation sorts rows and sums duplicates.

use sparrow::matrix::{Csr, Dense};
use sparrow::Error;

fn err_text(r: Result<Csr<f64>, Error>) -> String {
    match r {
        Err(e @ Error::InvalidArgument { .. }) => e.to_string(),
        Err(e) => panic!("expected InvalidArgument, got {e:?}"),
        Ok(_) => panic!("expected an error"),
    }
}

#[test]
fn valid_matrix_builds_and_reports_its_rows() {
    let a = Csr::<f64>::new(3, 4, vec![0, 2, 2, 3], vec![0, 3, 1], vec![1.0, 2.0, 3.0]).unwrap();
    assert_eq!(a.nnz(), 3);
    assert_eq!(
        (a.row_range(0), a.row_range(1), a.row_range(2)),
        (0..2, 2..2, 2..3)
    );
}

#[test]
fn row_ptr_must_start_at_zero() {
    let e = err_text(Csr::new(2, 2, vec![1, 1, 1], vec![0], vec![1.0]));
    assert_eq!(
        e,
        "invalid argument `row_ptr`: row 0: starts at 1, must start at 0"
    );
}

#[test]
fn row_ptr_must_not_decrease() {
    let e = err_text(Csr::new(3, 3, vec![0, 2, 1, 2], vec![0, 1], vec![1.0, 2.0]));
    assert_eq!(
        e,
        "invalid argument `row_ptr`: row 1: ends at 1 before it starts at 2; row pointers must never decrease"
    );
}

#[test]
fn row_ptr_must_end_at_nnz() {
    let e = err_text(Csr::new(2, 2, vec![0, 1, 1], vec![0, 1], vec![1.0, 2.0]));
    assert_eq!(
        e,
        "invalid argument `row_ptr`: last entry is 1 but there are 2 column indices (nnz)"
    );
}

#[test]
fn row_ptr_length_must_match_rows() {
    let e = err_text(Csr::new(3, 2, vec![0, 1], vec![0], vec![1.0]));
    assert_eq!(
        e,
        "invalid argument `row_ptr`: has 2 entries; 3 rows need 4"
    );
}

#[test]
fn values_length_must_match_indices() {
    let e = err_text(Csr::new(1, 2, vec![0, 1], vec![0], vec![1.0, 2.0]));
    assert_eq!(
        e,
        "invalid argument `values`: has 2 entries but col_idx has 1"
    );
}

#[test]
fn column_index_out_of_range() {
    let e = err_text(Csr::new(2, 3, vec![0, 1, 2], vec![0, 3], vec![1.0, 2.0]));
    assert_eq!(
        e,
        "invalid argument `col_idx`: row 1: column index 3 at position 1 is out of range for 3 columns"
    );
    let e = err_text(Csr::new(1, 3, vec![0, 1], vec![-1], vec![1.0]));
    assert_eq!(
        e,
        "invalid argument `col_idx`: row 0: column index -1 at position 0 is out of range for 3 columns"
    );
}

#[test]
fn unsorted_and_duplicate_indices_are_refused() {
    let e = err_text(Csr::new(1, 5, vec![0, 2], vec![3, 1], vec![1.0, 2.0]));
    assert_eq!(
        e,
        "invalid argument `col_idx`: row 0: column index 1 at position 1 is smaller than the previous index; rows must hold sorted, unique column indices"
    );
    let e = err_text(Csr::new(2, 5, vec![0, 0, 2], vec![2, 2], vec![1.0, 2.0]));
    assert_eq!(
        e,
        "invalid argument `col_idx`: row 1: column index 2 at position 1 repeats the previous index; rows must hold sorted, unique column indices"
    );
}

#[test]
fn normalized_sorts_and_sums_duplicates() {
    let a = Csr::<f64>::normalized(
        2,
        5,
        vec![0, 4, 5],
        vec![3, 0, 3, 1, 4],
        vec![1.0, 2.0, 10.0, 3.0, 5.0],
    )
    .unwrap();
    assert_eq!(a.row_ptr(), &[0, 3, 4]);
    assert_eq!(a.col_idx(), &[0, 1, 3, 4]);
    assert_eq!(a.values(), &[2.0, 3.0, 11.0, 5.0]);
    // Normalisation still refuses what cannot be repaired.
    let e = err_text(Csr::normalized(1, 2, vec![0, 1], vec![5], vec![1.0]));
    assert!(
        e.contains("column index 5 at position 0 is out of range for 2 columns"),
        "{e}"
    );
}

#[test]
fn triplets_sum_duplicates_and_check_ranges() {
    let a = Csr::<f64>::from_triplets(2, 3, &[1, 0, 1], &[2, 1, 2], &[1.0, 2.0, 3.0]).unwrap();
    assert_eq!(a.row_ptr(), &[0, 1, 2]);
    assert_eq!(a.col_idx(), &[1, 2]);
    assert_eq!(a.values(), &[2.0, 4.0]);
    let e = err_text(Csr::from_triplets(2, 3, &[2], &[0], &[1.0]));
    assert_eq!(
        e,
        "invalid argument `rows`: entry 0: row index 2 is out of range for 2 rows"
    );
    let e = err_text(Csr::from_triplets(2, 3, &[0], &[0, 1], &[1.0]));
    assert!(e.starts_with("invalid argument `triplets`"), "{e}");
}

/// The stream builder against a dense sum of the same triplets in stream order, on streams
/// with many duplicates (up to four of an entry), empty rows and rows of one column.
#[test]
fn triplet_stream_is_the_dense_sum_in_stream_order() {
    use sparrow::matrix::Rng;
    for (seed, nrows, ncols, len) in [
        (1u64, 7usize, 5usize, 60usize),
        (2, 40, 3, 200),
        (3, 9, 1, 30),
        (4, 3, 50, 0),
    ] {
        let mut rng = Rng::new(seed);
        let trip: Vec<(usize, usize, f64)> = (0..len)
            .map(|_| {
                // Rows past nrows / 2 stay empty.
                let r = rng.below((nrows / 2).max(1) as u64) as usize;
                let c = rng.below(ncols as u64) as usize;
                (r, c, rng.range_f64(-1.0, 1.0))
            })
            .collect();
        let got = Csr::<f64>::from_triplet_stream(nrows, ncols, |put| {
            for &(r, c, v) in &trip {
                put(r, c, v);
            }
        })
        .unwrap();
        let mut dense = vec![None::<f64>; nrows * ncols];
        for &(r, c, v) in &trip {
            let e = &mut dense[r * ncols + c];
            *e = Some(e.map_or(v, |x| x + v));
        }
        let (mut ptr, mut col, mut val) = (vec![0i64], Vec::new(), Vec::new());
        for r in 0..nrows {
            for c in 0..ncols {
                if let Some(v) = dense[r * ncols + c] {
                    col.push(c as i32);
                    val.push(v);
                }
            }
            ptr.push(col.len() as i64);
        }
        assert_eq!(got.row_ptr(), &ptr[..], "seed {seed}");
        assert_eq!(got.col_idx(), &col[..], "seed {seed}");
        let same = got
            .values()
            .iter()
            .zip(&val)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "seed {seed}: {:?} vs {:?}", got.values(), val);
        // The slice builder gives the same matrix.
        let (r, c, v): (Vec<usize>, Vec<usize>, Vec<f64>) =
            trip.iter()
                .fold((vec![], vec![], vec![]), |(mut r, mut c, mut v), t| {
                    r.push(t.0);
                    c.push(t.1);
                    v.push(t.2);
                    (r, c, v)
                });
        let old = Csr::<f64>::from_triplets(nrows, ncols, &r, &c, &v).unwrap();
        assert_eq!(old.col_idx(), got.col_idx());
        assert_eq!(old.values(), got.values());
    }
}

#[test]
fn triplet_stream_checks_ranges_and_a_changing_stream() {
    let e = err_text(Csr::from_triplet_stream(2, 3, |put| {
        put(0, 0, 1.0);
        put(1, 3, 1.0);
    }));
    assert_eq!(
        e,
        "invalid argument `cols`: entry 1: column index 3 is out of range for 3 columns"
    );
    let e = err_text(Csr::from_triplet_stream(2, 3, |put| put(5, 0, 1.0)));
    assert_eq!(
        e,
        "invalid argument `rows`: entry 0: row index 5 is out of range for 2 rows"
    );
    // A stream that differs between its two runs is refused, not half placed.
    let runs = std::cell::Cell::new(0);
    let e = err_text(Csr::from_triplet_stream(2, 3, |put| {
        runs.set(runs.get() + 1);
        put(0, 0, 1.0);
        if runs.get() == 2 {
            put(1, 1, 1.0);
        }
    }));
    assert!(
        e.starts_with("invalid argument `triplets`: the second pass"),
        "{e}"
    );
}

#[test]
fn empty_matrices_are_valid() {
    let a = Csr::<f32>::empty(0, 0).unwrap();
    assert_eq!((a.nrows(), a.ncols(), a.nnz()), (0, 0, 0));
    let a = Csr::<f32>::empty(5, 0).unwrap();
    assert!((0..5).all(|r| a.row_range(r).is_empty()));
}

#[test]
fn dense_checks_leading_dimension_and_length() {
    let e = Dense::<f32>::new(2, 3, 2, vec![0.0; 6])
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "invalid argument `ld`: leading dimension 2 is smaller than the 3 columns"
    );
    let e = Dense::<f32>::new(2, 3, 4, vec![0.0; 6])
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "invalid argument `data`: 6 elements are too few for 2 x 3 with leading dimension 4 (needs 7)"
    );
    let d = Dense::<f32>::new(2, 3, 4, (0..7).map(|x| x as f32).collect()).unwrap();
    assert_eq!(d.row(1), &[4.0, 5.0, 6.0]);
    assert_eq!(d.to_packed().data(), &[0.0, 1.0, 2.0, 4.0, 5.0, 6.0]);
    let e = Dense::<f64>::from_rows(2, 2, vec![0.0; 3])
        .unwrap_err()
        .to_string();
    assert_eq!(e, "invalid argument `data`: 3 elements do not make 2 x 2");
}
