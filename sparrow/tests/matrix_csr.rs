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
fn valid_matrix_builds_and_reports_stats() {
    let a = Csr::<f64>::new(3, 4, vec![0, 2, 2, 3], vec![0, 3, 1], vec![1.0, 2.0, 3.0]).unwrap();
    assert_eq!(a.nnz(), 3);
    let s = a.row_stats();
    assert_eq!((s.max_len, s.empty_rows, s.nrows), (2, 1, 3));
    assert!((s.mean_len - 1.0).abs() < 1e-15);
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
    assert_eq!(a.row_stats().empty_rows, 5);
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

/// SpMV's planned blocks take STREAM_ITEMS_EVEN entries on even rows with local columns, and
/// STREAM_ITEMS on skewed rows or scattered columns; the block count is that partition's.
#[test]
fn stream_block_capacity_follows_skew_and_scatter() {
    use sparrow::matrix::work::{stream_partition, STREAM_ITEMS, STREAM_ITEMS_EVEN};
    use sparrow::matrix::{LONG_ROW, SCATTER_WINDOW};
    // Rows of 4 entries: columns r..r+4 (local), or r and r + span (a window of span + 32).
    let build = |nrows: usize, span: usize, long: bool| {
        let ncols = nrows + span + LONG_ROW + 8;
        let mut row_ptr = vec![0i64];
        let mut cols = Vec::new();
        for r in 0..nrows {
            if long && r == 7 {
                cols.extend(0..(LONG_ROW + 1) as i32);
            } else {
                cols.extend([r, r + 1, r + 2, r + 3 + span].map(|c| c as i32));
            }
            row_ptr.push(cols.len() as i64);
        }
        let n = cols.len();
        Csr::<f32>::new(nrows, ncols, row_ptr, cols, vec![1.0; n]).unwrap()
    };
    let blocks = |a: &Csr<f32>, items: usize| stream_partition(a.row_ptr(), items, |_| {});
    let local = build(5000, 0, false);
    let st = local.row_stats();
    assert!(!st.skewed() && !st.scattered(), "{st:?}");
    assert_eq!(st.stream_items, STREAM_ITEMS_EVEN);
    assert_eq!(st.stream_blocks, blocks(&local, STREAM_ITEMS_EVEN));
    assert!(st.stream_blocks < blocks(&local, STREAM_ITEMS));
    // A window of exactly SCATTER_WINDOW columns is local; one more is scattered.
    let edge = build(5000, SCATTER_WINDOW - 35, false);
    assert_eq!(edge.row_stats().window_max, SCATTER_WINDOW);
    assert_eq!(edge.row_stats().stream_items, STREAM_ITEMS_EVEN);
    let wide = build(5000, SCATTER_WINDOW - 34, false);
    let st = wide.row_stats();
    assert!(st.scattered() && !st.skewed(), "{st:?}");
    assert_eq!(st.stream_items, STREAM_ITEMS);
    assert_eq!(st.stream_blocks, blocks(&wide, STREAM_ITEMS));
    let skewed = build(5000, 0, true);
    let st = skewed.row_stats();
    assert!(st.skewed() && !st.scattered(), "{st:?}");
    assert_eq!(st.stream_items, STREAM_ITEMS);
}

/// The row blocks of each height list each block's distinct columns once, ascending, with
/// each row's value at its slot and zero where the row lacks the column; their counts are the
/// statistics'.
fn check_row_blocks(a: &Csr<f64>) {
    use sparrow::matrix::row_blocks::{BLOCK_ROWS, TALL_ROWS};
    let st = a.row_stats();
    check_blocks_of(a, BLOCK_ROWS, Some(st.block_union));
    check_blocks_of(a, TALL_ROWS, st.blockable().then_some(st.tall_union));
    // Every other height: odd ones leave a run unpaired in the count's merges.
    for rows in (1..TALL_ROWS).filter(|&r| r != BLOCK_ROWS) {
        check_blocks_of(a, rows, None);
    }
}

fn check_blocks_of(a: &Csr<f64>, rows: usize, counted: Option<usize>) {
    use sparrow::matrix::row_blocks::{row_blocks, union_len};
    let rb = row_blocks(a.row_ptr(), a.col_idx(), a.values(), rows).unwrap();
    let nblk = a.nrows().div_ceil(rows);
    assert_eq!(rb.rows, rows);
    assert_eq!(rb.ptr.len(), nblk + 1);
    assert_eq!(rb.ptr[0], 0);
    assert_eq!(*rb.ptr.last().unwrap() as usize, rb.cols.len());
    assert_eq!(rb.vals.len(), rb.cols.len() * rows);
    assert_eq!(
        union_len(a.row_ptr(), a.col_idx(), rows).unwrap(),
        rb.cols.len()
    );
    if let Some(c) = counted {
        assert_eq!(c, rb.cols.len(), "{rows} rows");
    }
    for b in 0..nblk {
        let (s, e) = (rb.ptr[b] as usize, rb.ptr[b + 1] as usize);
        let listed = &rb.cols[s..e];
        assert!(
            listed.windows(2).all(|w| w[0] < w[1]),
            "block {b} not ascending"
        );
        let mut union: Vec<i32> = Vec::new();
        for r in 0..rows {
            let row = b * rows + r;
            let (rc, rv): (&[i32], &[f64]) = if row < a.nrows() {
                let (p, q) = (a.row_ptr()[row] as usize, a.row_ptr()[row + 1] as usize);
                (&a.col_idx()[p..q], &a.values()[p..q])
            } else {
                (&[], &[])
            };
            union.extend_from_slice(rc);
            for (i, &c) in listed.iter().enumerate() {
                let want = rc.iter().position(|&x| x == c).map_or(0.0, |j| rv[j]);
                assert_eq!(
                    rb.vals[(s + i) * rows + r],
                    want,
                    "block {b} row {r} col {c}"
                );
            }
        }
        union.sort_unstable();
        union.dedup();
        assert_eq!(listed, &union[..], "block {b}");
    }
}

#[test]
fn row_blocks_hold_every_entry_once_per_block_column() {
    use sparrow::matrix::gen;
    // Ragged row counts (not a multiple of the block), empty rows, long rows, random columns.
    check_row_blocks(&gen::banded(1_001, 3, 7).unwrap());
    check_row_blocks(&gen::stencil_2d(13, 11, 8).unwrap());
    check_row_blocks(&gen::stencil_3d(5, 9).unwrap());
    check_row_blocks(&gen::sparse_rows(1_003, 500, 0.7, 9, 10).unwrap());
    check_row_blocks(&gen::power_law(2_002, 1_500, 6.0, 1_400, 1.5, 11).unwrap());
    check_row_blocks(&gen::block_diagonal(7, 5, 12).unwrap());
    check_row_blocks(&Csr::<f64>::new(3, 4, vec![0, 0, 0, 0], vec![], vec![]).unwrap());
    check_row_blocks(&Csr::<f64>::new(0, 4, vec![0], vec![], vec![]).unwrap());
}

#[test]
fn row_blocks_refuse_heights_the_merge_cannot_hold() {
    use sparrow::matrix::row_blocks::{row_blocks, union_len, TALL_ROWS};
    let a = sparrow::matrix::gen::banded::<f64>(100, 3, 7).unwrap();
    for rows in [0, TALL_ROWS + 1] {
        let e = row_blocks(a.row_ptr(), a.col_idx(), a.values(), rows).unwrap_err();
        assert!(e.to_string().contains("rows"), "{e}");
        assert!(union_len(a.row_ptr(), a.col_idx(), rows).is_err());
    }
}

#[test]
fn row_blocks_are_built_where_neighbouring_rows_share_columns() {
    use sparrow::matrix::gen;
    // 64 consecutive columns a row: four rows list 67 (64 where the band meets an edge).
    let banded = gen::banded::<f64>(4_000, 64, 1).unwrap().row_stats();
    assert_eq!(banded.block_union, 16 * 64 + 984 * 67);
    assert!(banded.blockable());
    // Dense 32 x 32 blocks: four rows list the block's 32.
    let bd = gen::block_diagonal::<f64>(10, 32, 2).unwrap().row_stats();
    assert_eq!(bd.block_union, 80 * 32);
    assert!(bd.blockable());
    // ... and eight rows the same 32: tall. Banded rows of 64 list at most 71 over eight.
    assert_eq!(bd.tall_union, 40 * 32);
    assert!(bd.tall());
    assert_eq!(
        (bd.union_for(4), bd.union_for(8), bd.union_for(3)),
        (bd.block_union, bd.tall_union, 0)
    );
    assert_eq!((bd.block_rows(4), bd.block_rows(8)), (Some(8), Some(4)));
    assert!(banded.tall_union <= 500 * 71 && banded.tall());
    // Random columns share almost none.
    let uni = gen::uniform::<f64>(4_000, 100_000, 16, 3)
        .unwrap()
        .row_stats();
    assert!(uni.block_union as f64 > 0.95 * uni.nnz as f64);
    assert!(!uni.blockable());
    assert_eq!(uni.tall_union, 0);
    assert!(!Csr::<f64>::new(2, 2, vec![0, 0, 0], vec![], vec![])
        .unwrap()
        .row_stats()
        .blockable());
}

/// The upload's row blocks: the height the statistics name for the value type (f32 tall blocks
/// on banded rows, f64 blocks of four, none on random columns), and statistics whose count is
/// not the matrix's refused rather than built on.
#[test]
fn upload_builds_the_height_the_statistics_name_and_refuses_foreign_counts() {
    use sparrow::matrix::gen;
    use sparrow::matrix::row_blocks::for_upload;
    let b32 = gen::banded::<f32>(1_001, 64, 7).unwrap();
    let b64 = gen::banded::<f64>(1_001, 64, 7).unwrap();
    let (s32, s64) = (b32.row_stats(), b64.row_stats());
    let t = for_upload(&b32, &s32).unwrap().unwrap();
    assert_eq!((t.rows, t.cols.len()), (8, s32.tall_union));
    let f = for_upload(&b64, &s64).unwrap().unwrap();
    assert_eq!((f.rows, f.cols.len()), (4, s64.block_union));
    let u = gen::uniform::<f32>(1_001, 1_001, 16, 8).unwrap();
    assert!(for_upload(&u, &u.row_stats()).unwrap().is_none());
    let mut off = s32;
    off.tall_union += 1;
    let e = for_upload(&b32, &off).unwrap_err().to_string();
    assert!(e.contains("stats") && e.contains("blocks of 8 rows"), "{e}");
    let mut off = s64;
    off.block_union -= 1;
    let e = for_upload(&b64, &off).unwrap_err().to_string();
    assert!(e.contains("stats") && e.contains("blocks of 4 rows"), "{e}");
}

/// The row statistics' pass, run across tasks of rows, gives what one walk over the rows
/// gives: lengths, classes, pieces, reach, the column windows of 32 rows and the spread of
/// runs of 8, on rows enough for several tasks and not a whole number of windows.
#[test]
fn row_statistics_match_one_walk_over_the_rows() {
    use sparrow::matrix::{len_class, slices::pieces_of, LONG_ROW, SPREAD_RUN, WINDOW_ROWS};
    // Rows of up to 20,000 entries: some over LONG_ROW, which the long-row counts take.
    let m = sparrow::matrix::gen::power_law::<f64>(100_003, 90_000, 6.0, 20_000, 1.5, 4).unwrap();
    let st = m.row_stats();
    let len = |r: usize| m.row_range(r).len();
    let n = m.nrows();
    assert_eq!(st.max_len, (0..n).map(len).max().unwrap());
    assert_eq!(st.empty_rows, (0..n).filter(|&r| len(r) == 0).count());
    let long: Vec<usize> = (0..n).filter(|&r| len(r) > LONG_ROW).collect();
    assert!(!long.is_empty());
    assert_eq!(st.long_rows, long.len());
    assert_eq!(
        st.long_chunks,
        long.iter()
            .map(|&r| len(r).div_ceil(sparrow::matrix::CHUNK))
            .sum::<usize>()
    );
    assert_eq!(st.pieces, (0..n).map(|r| pieces_of(len(r))).sum::<usize>());
    let mut classes = [0usize; sparrow::matrix::LEN_CLASSES];
    for r in (0..n).filter(|&r| len(r) <= LONG_ROW) {
        classes[len_class(len(r))] += 1;
    }
    assert_eq!(st.len_classes, classes);
    let reach = (0..n)
        .filter(|&r| len(r) > 0)
        .map(|r| {
            let c = &m.col_idx()[m.row_range(r)];
            (r as i64 - c[0] as i64).max(*c.last().unwrap() as i64 - r as i64)
        })
        .max()
        .unwrap();
    assert_eq!(st.reach as i64, reach);
    let (mut wmax, mut wsum, mut wnnz) = (0usize, 0usize, 0usize);
    for r0 in (0..n).step_by(WINDOW_ROWS) {
        let rows: Vec<usize> = (r0..(r0 + WINDOW_ROWS).min(n))
            .filter(|&r| len(r) > 0 && len(r) <= LONG_ROW)
            .collect();
        if let (Some(lo), Some(hi)) = (
            rows.iter().map(|&r| m.col_idx()[m.row_range(r)][0]).min(),
            rows.iter()
                .map(|&r| *m.col_idx()[m.row_range(r)].last().unwrap())
                .max(),
        ) {
            wmax = wmax.max((hi - lo + 1) as usize);
            wsum += (hi - lo + 1) as usize;
        }
        wnnz += rows.iter().map(|&r| len(r)).sum::<usize>();
    }
    assert_eq!(st.window_max, wmax);
    assert_eq!(st.window_reuse, wnnz as f64 / wsum as f64);
    let short: Vec<usize> = (0..n)
        .map(|r| if len(r) > LONG_ROW { 0 } else { len(r) })
        .collect();
    let run_sum: usize = short
        .chunks(SPREAD_RUN)
        .map(|c| c.len() * c.iter().max().unwrap())
        .sum();
    assert_eq!(
        st.spread,
        run_sum as f64 / short.iter().sum::<usize>() as f64
    );
}
