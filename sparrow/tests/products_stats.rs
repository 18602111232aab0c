//! The products' row statistics and the formats built from them: work blocks, row blocks,
//! and the statistics' one pass checked against a plain walk over the rows.

#[cfg(not(feature = "internals"))]
compile_error!("the library's integration tests use its layers: run `cargo test --workspace`, or `cargo test -p sparrow --features testing`");

use sparrow::matrix::Csr;
use sparrow::ops::products::RowStats;
use sparrow::Scalar;

/// The row statistics of a matrix, in method position for the chains below.
trait Stats {
    fn row_stats(&self) -> RowStats;
}

impl<T: Scalar> Stats for Csr<T> {
    fn row_stats(&self) -> RowStats {
        RowStats::of(self)
    }
}

/// SpMV's planned blocks take STREAM_ITEMS_EVEN entries on even rows with local columns, and
/// STREAM_ITEMS on skewed rows or scattered columns; the block count is that partition's.
#[test]
fn stream_block_capacity_follows_skew_and_scatter() {
    use sparrow::ops::products::formats::work::{
        stream_partition, STREAM_ITEMS, STREAM_ITEMS_EVEN,
    };
    use sparrow::ops::products::stats::{LONG_ROW, SCATTER_WINDOW};
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
    let st = RowStats::of(&local);
    assert!(!st.skewed() && !st.scattered(), "{st:?}");
    assert_eq!(st.stream_items, STREAM_ITEMS_EVEN);
    assert_eq!(st.stream_blocks, blocks(&local, STREAM_ITEMS_EVEN));
    assert!(st.stream_blocks < blocks(&local, STREAM_ITEMS));
    // A window of exactly SCATTER_WINDOW columns is local; one more is scattered.
    let edge = build(5000, SCATTER_WINDOW - 35, false);
    assert_eq!(RowStats::of(&edge).window_max, SCATTER_WINDOW);
    assert_eq!(RowStats::of(&edge).stream_items, STREAM_ITEMS_EVEN);
    let wide = build(5000, SCATTER_WINDOW - 34, false);
    let st = RowStats::of(&wide);
    assert!(st.scattered() && !st.skewed(), "{st:?}");
    assert_eq!(st.stream_items, STREAM_ITEMS);
    assert_eq!(st.stream_blocks, blocks(&wide, STREAM_ITEMS));
    let skewed = build(5000, 0, true);
    let st = RowStats::of(&skewed);
    assert!(st.skewed() && !st.scattered(), "{st:?}");
    assert_eq!(st.stream_items, STREAM_ITEMS);
}

/// The row blocks of each height list each block's distinct columns once, ascending, with
/// each row's value at its slot and zero where the row lacks the column; their counts are the
/// statistics'.
fn check_row_blocks(a: &Csr<f64>) {
    use sparrow::ops::products::formats::row_blocks::{BLOCK_ROWS, TALL_ROWS};
    let st = RowStats::of(a);
    check_blocks_of(a, BLOCK_ROWS, Some(st.block_union));
    check_blocks_of(a, TALL_ROWS, st.blockable().then_some(st.tall_union));
    // Every other height: odd ones leave a run unpaired in the count's merges.
    for rows in (1..TALL_ROWS).filter(|&r| r != BLOCK_ROWS) {
        check_blocks_of(a, rows, None);
    }
}

fn check_blocks_of(a: &Csr<f64>, rows: usize, counted: Option<usize>) {
    use sparrow::ops::products::formats::row_blocks::{row_blocks, union_len};
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
    use sparrow::ops::products::formats::row_blocks::{row_blocks, union_len, TALL_ROWS};
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
    use sparrow::ops::products::analysis::for_upload;
    let b32 = gen::banded::<f32>(1_001, 64, 7).unwrap();
    let b64 = gen::banded::<f64>(1_001, 64, 7).unwrap();
    let (s32, s64) = (RowStats::of(&b32), RowStats::of(&b64));
    let t = for_upload(&b32, &s32).unwrap().unwrap();
    assert_eq!((t.rows, t.cols.len()), (8, s32.tall_union));
    let f = for_upload(&b64, &s64).unwrap().unwrap();
    assert_eq!((f.rows, f.cols.len()), (4, s64.block_union));
    let u = gen::uniform::<f32>(1_001, 1_001, 16, 8).unwrap();
    assert!(for_upload(&u, &RowStats::of(&u)).unwrap().is_none());
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
    use sparrow::ops::products::formats::slices::pieces_of;
    use sparrow::ops::products::stats::{len_class, LONG_ROW, SPREAD_RUN, WINDOW_ROWS};
    // Rows of up to 20,000 entries: some over LONG_ROW, which the long-row counts take.
    let m = sparrow::matrix::gen::power_law::<f64>(100_003, 90_000, 6.0, 20_000, 1.5, 4).unwrap();
    let st = RowStats::of(&m);
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
            .map(|&r| len(r).div_ceil(sparrow::ops::products::stats::CHUNK))
            .sum::<usize>()
    );
    assert_eq!(st.pieces, (0..n).map(|r| pieces_of(len(r))).sum::<usize>());
    let mut classes = [0usize; sparrow::ops::products::stats::LEN_CLASSES];
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
