//! Row statistics (column windows, length classes, long rows), the generators' shapes, and the
//! device memory an upload counts.

use sparrow::matrix::{gen, Csr};
use sparrow::ops::products::RowStats;

use crate::Stats;

#[test]
fn row_stats_measure_the_column_windows() {
    // 4 blocks of 32 x 32 on the diagonal: every block of 32 rows spans 32 columns, and each
    // staged row of B serves the block's 32 rows.
    let a = gen::block_diagonal::<f32>(4, 32, 1).unwrap();
    let st = RowStats::of(&a);
    assert_eq!((st.window_max, st.window_reuse), (32, 32.0));
    // Rows 0..32 with columns {r, r + 100} span 132 columns; row 32 alone spans 1; a long row
    // (over LONG_ROW entries) and empty rows do not count.
    let long = sparrow::ops::products::stats::LONG_ROW + 1;
    let mut row_ptr = vec![0i64];
    let mut cols = Vec::new();
    for r in 0..32 {
        cols.extend([r, r + 100]);
        row_ptr.push(cols.len() as i64);
    }
    cols.push(7);
    row_ptr.push(cols.len() as i64);
    cols.extend(0..long as i32);
    row_ptr.push(cols.len() as i64);
    row_ptr.push(cols.len() as i64);
    let n = cols.len();
    let a = Csr::<f32>::new(35, long, row_ptr, cols, vec![1.0; n]).unwrap();
    let st = RowStats::of(&a);
    assert_eq!(st.window_max, 132);
    assert_eq!(st.window_reuse, 65.0 / 133.0);
}

#[test]
fn row_stats_measure_length_classes_and_spread() {
    // Equal rows: spread 1.
    let st = gen::banded::<f32>(100, 8, 1).unwrap().row_stats();
    assert_eq!(st.spread, 1.0);
    assert_eq!(
        st.len_classes[sparrow::ops::products::stats::len_class(8)],
        100
    );
    assert_eq!(sparrow::ops::products::stats::len_class(8), 4);
    assert_eq!(sparrow::ops::products::stats::len_class(0), 0);
    assert_eq!(
        sparrow::ops::products::stats::len_class(sparrow::ops::products::stats::LONG_ROW),
        11
    );
    // Rows of 9 entries then 7 of 1, twice, and a long row counted empty: each run of 8 rows
    // takes 8 x 9 lane slots for 16 entries; the last run (the long row alone) none.
    let long = sparrow::ops::products::stats::LONG_ROW + 1;
    let mut lens = vec![9, 1, 1, 1, 1, 1, 1, 1];
    lens.extend(lens.clone());
    lens.push(long);
    let mut row_ptr = vec![0i64];
    let mut cols = Vec::new();
    for &l in &lens {
        cols.extend(0..l as i32);
        row_ptr.push(cols.len() as i64);
    }
    let n = cols.len();
    let a = Csr::<f32>::new(lens.len(), long, row_ptr, cols, vec![1.0; n]).unwrap();
    let st = RowStats::of(&a);
    assert_eq!(st.spread, 2.0 * 8.0 * 9.0 / 32.0);
    let mut classes = [0usize; sparrow::ops::products::stats::LEN_CLASSES];
    classes[1] = 14;
    classes[4] = 2;
    assert_eq!(st.len_classes, classes);
    assert_eq!(st.long_rows, 1);
}

#[test]
fn generators_are_deterministic_and_shaped() {
    let a = gen::banded::<f32>(100, 8, 1).unwrap();
    assert!(a.row_ptr().windows(2).all(|w| w[1] - w[0] == 8));
    assert_eq!(gen::banded::<f32>(100, 8, 1).unwrap(), a);
    let e = gen::sparse_rows::<f64>(10_000, 1000, 0.9, 4, 2).unwrap();
    let frac = RowStats::of(&e).empty_rows as f64 / 10_000.0;
    assert!((0.88..0.92).contains(&frac), "{frac}");
}

#[test]
fn device_bytes_counts_every_buffer() {
    // 3 rows, one of them long (LONG_ROW + 1 entries = 3 chunks of CHUNK).
    let long = sparrow::ops::products::stats::LONG_ROW + 1;
    let cols: Vec<i32> = (0..long as i32).collect();
    let a = Csr::<f32>::new(
        3,
        long,
        vec![0, 1, 1 + long as i64, 1 + long as i64],
        [vec![0], cols].concat(),
        vec![1.0; long + 1],
    )
    .unwrap();
    let st = RowStats::of(&a);
    assert_eq!(
        (st.long_rows, st.long_chunks),
        (1, long.div_ceil(sparrow::ops::products::stats::CHUNK))
    );
    let n = 4;
    let dense = long * n + 3 * n;
    let want = 8 * 4
        + 8 * 3 // rows sorted by length
        + 8 * (long as u64 + 1)
        + 8 * 3
        + 16 * st.long_chunks as u64
        + 4 * dense as u64
        + 4 * (st.long_chunks * n) as u64
        + (48 + 4 + 4) * st.stream_blocks as u64
        // The packed columns: 2 bytes an entry and a row, 4 a block.
        + 2 * (long as u64 + 1 + 3)
        + 4 * st.stream_blocks as u64
        // Every column within NEAR_REACH of its row: 2 bytes an entry.
        + 2 * (long as u64 + 1);
    assert_eq!(st.stream_blocks, 1);
    assert!(st.near());
    assert!(st.packable());
    assert_eq!(
        sparrow::ops::spmm::device_bytes(&a, &st, dense, n, &sparrow::ops::products::plan::SM90),
        want
    );
}

#[test]
fn panel_generators_have_their_structure() {
    let b = gen::block_diagonal::<f32>(3, 4, 1).unwrap();
    assert_eq!(b.nnz(), 3 * 16);
    assert_eq!(&b.col_idx()[b.row_range(5)], &[4, 5, 6, 7]);
    let l = gen::long_rows::<f32>(1000, 5000, 2, 3000, 3, 2).unwrap();
    let st = RowStats::of(&l);
    assert_eq!(st.max_len, 3000);
    assert_eq!(st.nnz, 2 * 3000 + 998 * 3);
    let s2 = gen::stencil_2d::<f64>(4, 3, 3).unwrap();
    assert_eq!(s2.nnz(), 4 * 3 * 5 - 2 * (4 + 3));
    assert_eq!(&s2.col_idx()[s2.row_range(5)], &[1, 4, 5, 6, 9]);
    let s3 = gen::stencil_3d::<f64>(3, 4).unwrap();
    assert_eq!(RowStats::of(&s3).max_len, 27);
    assert_eq!(s3.nnz(), 7 * 7 * 7, "per axis 2 + 3 + 2 neighbours");
    let f = gen::fem_like::<f64>(500, 400, 5).unwrap();
    for i in 0..f.nrows() {
        for p in f.row_range(i) {
            let j = f.col_idx()[p] as usize;
            let back = f
                .row_range(j)
                .find(|&q| f.col_idx()[q] as usize == i)
                .expect("symmetric pattern");
            assert_eq!(
                f.values()[p],
                f.values()[back],
                "symmetric values at ({i}, {j})"
            );
        }
    }
}

#[test]
fn rows_are_long_only_past_the_bound() {
    use sparrow::ops::products::stats::{CHUNK, LONG_ROW};
    let cols: Vec<i32> = (0..(2 * LONG_ROW + 1) as i32).collect();
    let ptr = vec![0, LONG_ROW as i64, (2 * LONG_ROW + 1) as i64];
    let a = Csr::<f32>::new(
        2,
        2 * LONG_ROW + 1,
        ptr,
        [&cols[..LONG_ROW], &cols[..LONG_ROW + 1]].concat(),
        vec![1.0; 2 * LONG_ROW + 1],
    )
    .unwrap();
    let st = RowStats::of(&a);
    assert_eq!(
        (st.long_rows, st.long_chunks),
        (1, (LONG_ROW + 1).div_ceil(CHUNK)),
        "a row of exactly LONG_ROW stays whole"
    );
}
