//! The GPU plan's row blocks, taken where rows share columns, and their bounds and shapes.

use sparrow::matrix::gen;
use sparrow::ops::products::{plan, GpuPath};

use crate::Stats;

#[test]
fn gpu_policy_takes_row_blocks_where_rows_share_columns() {
    let rb = |rows, cols, ksplit, tiles| GpuPath::RowBlock {
        rows,
        cols,
        ksplit,
        tiles,
    };
    // Banded rows (64 a row: 0.26 distinct columns per entry over four rows, 0.14 over eight)
    // at every N, both types: f32 on tall blocks, f64 on blocks of four.
    let banded = gen::banded::<f32>(4_000, 64, 1).unwrap().row_stats();
    assert!(banded.tall());
    assert_eq!(banded.block_rows(4), Some(8));
    assert_eq!(banded.block_rows(8), Some(4));
    for (n, f32_path, f64_path) in [
        (2, rb(8, 1, 4, 1), rb(4, 1, 4, 1)),
        (8, rb(8, 2, 4, 1), rb(4, 2, 4, 1)),
        (32, rb(8, 8, 1, 1), rb(4, 8, 1, 2)),
        (64, rb(8, 8, 1, 2), rb(4, 16, 1, 2)),
        (128, rb(8, 16, 1, 2), rb(4, 32, 1, 2)),
        (256, rb(8, 32, 1, 2), rb(4, 32, 1, 2)),
        (1000, rb(8, 32, 1, 2), rb(4, 32, 1, 2)),
    ] {
        assert_eq!(plan::choose(&banded, n, 4).0, f32_path, "f32 N={n}");
        assert_eq!(plan::choose(&banded, n, 8).0, f64_path, "f64 N={n}");
    }
    // SpMV keeps its own paths.
    assert!(!matches!(
        plan::choose(&banded, 1, 4).0,
        GpuPath::RowBlock { .. }
    ));
    // Dense diagonal blocks take them ahead of the window path.
    let bd = gen::block_diagonal::<f64>(64, 32, 2).unwrap().row_stats();
    assert_eq!(bd.tall_union * 8, bd.nnz);
    assert_eq!(plan::choose(&bd, 32, 8).0, rb(4, 8, 1, 2));
    assert_eq!(plan::choose(&bd, 64, 8).0, rb(4, 16, 1, 2));
    assert_eq!(plan::choose(&bd, 64, 4).0, rb(8, 8, 1, 2));
    assert_eq!(plan::choose(&bd, 32, 4).0, rb(8, 8, 1, 1));
    // The 3-D stencil (0.50 over four rows, 0.42 over eight: not tall): f32 from N = 64 on
    // blocks of four, never f64.
    let s3 = gen::stencil_3d::<f32>(20, 3).unwrap().row_stats();
    assert!((0.45..=0.55).contains(&(s3.block_union as f64 / s3.nnz as f64)));
    assert!((0.35..=0.5).contains(&(s3.tall_union as f64 / s3.nnz as f64)));
    assert_eq!(s3.block_rows(4), Some(4));
    assert!(!matches!(
        plan::choose(&s3, 32, 4).0,
        GpuPath::RowBlock { .. }
    ));
    assert_eq!(plan::choose(&s3, 64, 4).0, rb(4, 8, 1, 2));
    assert_eq!(plan::choose(&s3, 256, 4).0, rb(4, 32, 1, 2));
    for n in [8, 64, 256] {
        assert!(!matches!(
            plan::choose(&s3, n, 8).0,
            GpuPath::RowBlock { .. }
        ));
    }
    // The 2-D stencil (0.70) and random columns never.
    let s2 = gen::stencil_2d::<f32>(40, 40, 4).unwrap().row_stats();
    let uni = gen::uniform::<f32>(4_000, 4_000, 16, 5)
        .unwrap()
        .row_stats();
    // Not blockable: the tall count is skipped.
    assert_eq!((s2.tall_union, uni.tall_union), (0, 0));
    for n in [8, 64, 256] {
        for st in [&s2, &uni] {
            for bytes in [4, 8] {
                assert!(!matches!(
                    plan::choose(st, n, bytes).0,
                    GpuPath::RowBlock { .. }
                ));
            }
        }
    }
    // A long row among shared columns: the row blocks do not split long rows.
    let mut long = banded;
    long.long_rows = 1;
    for bytes in [4, 8] {
        assert!(!matches!(
            plan::choose(&long, 64, bytes).0,
            GpuPath::RowBlock { .. }
        ));
    }
}

#[test]
fn gpu_policy_row_block_bounds() {
    use sparrow::ops::products::formats::row_blocks::{BLOCK_UNION_MAX, TALL_UNION_MAX};
    // Rows of 64 with a chosen count of distinct columns over blocks of four and eight rows.
    let with = |union: usize, tall: usize| sparrow::ops::products::stats::RowStats {
        nrows: 1000,
        ncols: 1 << 40,
        nnz: 64_000,
        max_len: 64,
        mean_len: 64.0,
        empty_rows: 0,
        long_rows: 0,
        long_chunks: 0,
        stream_items: sparrow::ops::products::formats::work::STREAM_ITEMS_EVEN,
        stream_blocks: 21,
        stream_span: usize::MAX,
        window_max: 1_000,
        window_reuse: 1.0,
        len_classes: [0; sparrow::ops::products::stats::LEN_CLASSES],
        spread: 1.0,
        block_union: union,
        tall_union: tall,
        diagonals: 0,
        diag_rows: 0,
        diag_row: 0,
        reach: usize::MAX,
        pieces: 1000,
    };
    let stats = |union: usize| with(union, 64_000);
    let is_rb = |p: GpuPath| matches!(p, GpuPath::RowBlock { rows: 4, .. });
    let at_shared = (plan::ROWBLK_SHARED * 64_000.0) as usize;
    let at_max = (BLOCK_UNION_MAX * 64_000.0) as usize;
    // At ROWBLK_SHARED every N > 1 in both types; one past it f32 from N = 64 only.
    for (n, bytes) in [(8, 4), (32, 4), (8, 8), (256, 8)] {
        assert!(
            is_rb(plan::choose(&stats(at_shared), n, bytes).0),
            "N={n} {bytes}"
        );
        assert!(
            !is_rb(plan::choose(&stats(at_shared + 1), n, bytes).0),
            "N={n} {bytes}"
        );
    }
    assert!(is_rb(plan::choose(&stats(at_shared + 1), 64, 4).0));
    // At BLOCK_UNION_MAX the upload builds them and f32 from N = 64 takes them; one past, none.
    assert!(stats(at_max).blockable() && !stats(at_max + 1).blockable());
    assert!(is_rb(plan::choose(&stats(at_max), 64, 4).0));
    assert!(!is_rb(plan::choose(&stats(at_max + 1), 64, 4).0));
    assert!(!is_rb(plan::choose(&stats(at_max + 1), 256, 4).0));
    // Tall blocks: at TALL_UNION_MAX f32 takes them at every N > 1 and f64 keeps blocks of
    // four; one past, f32 keeps blocks of four (and so the rules above); none unless blockable.
    let at_tall = (TALL_UNION_MAX * 64_000.0) as usize;
    let tall = with(at_max, at_tall);
    assert!(tall.tall() && !with(at_max, at_tall + 1).tall());
    assert!(!with(at_max + 1, at_tall).tall());
    assert_eq!(with(at_max + 1, at_tall).block_rows(4), None);
    for n in [2, 8, 32, 33, 64, 256] {
        assert!(matches!(
            plan::choose(&tall, n, 4).0,
            GpuPath::RowBlock { rows: 8, .. }
        ));
        assert!(!matches!(
            plan::choose(&with(at_max, at_tall + 1), n, 4).0,
            GpuPath::RowBlock { rows: 8, .. }
        ));
        assert!(!matches!(
            plan::choose(&tall, n, 8).0,
            GpuPath::RowBlock { rows: 8, .. }
        ));
    }
    assert!(!is_rb(plan::choose(&with(at_max, at_tall + 1), 32, 4).0));
    assert!(is_rb(plan::choose(&with(at_max, at_tall + 1), 64, 4).0));
    // Shape bounds: N = 8 / 9 and 32 / 33.
    let rb = |cols, ksplit, tiles| GpuPath::RowBlock {
        rows: 4,
        cols,
        ksplit,
        tiles,
    };
    let s = stats(at_shared);
    assert_eq!(plan::choose(&s, 8, 4).0, rb(2, 4, 1));
    assert_eq!(plan::choose(&s, 9, 4).0, rb(4, 1, 1));
    assert_eq!(plan::choose(&s, 32, 4).0, rb(8, 1, 1));
    assert_eq!(plan::choose(&s, 33, 4).0, rb(8, 1, 2));
    assert_eq!(plan::choose(&s, 8, 8).0, rb(2, 4, 1));
    assert_eq!(plan::choose(&s, 9, 8).0, rb(8, 1, 2));
    // Tall shapes follow the same bounds.
    let tb = |cols, ksplit, tiles| GpuPath::RowBlock {
        rows: 8,
        cols,
        ksplit,
        tiles,
    };
    assert_eq!(plan::choose(&tall, 8, 4).0, tb(2, 4, 1));
    assert_eq!(plan::choose(&tall, 9, 4).0, tb(4, 1, 1));
    assert_eq!(plan::choose(&tall, 32, 4).0, tb(8, 1, 1));
    assert_eq!(plan::choose(&tall, 33, 4).0, tb(8, 1, 2));
}
