//! The GPU plan's choice by N, row length and column windows, and the launch shapes of the
//! staged windows and the planned blocks.

use sparrow::matrix::gen;
use sparrow::ops::products::{path, plan, GpuPath};

use crate::Stats;

#[test]
fn gpu_policy_picks_by_n_and_row_length() {
    let stats = |mean: f64, empty: usize| sparrow::ops::products::stats::RowStats {
        nrows: 1000,
        ncols: 1 << 40,
        nnz: (mean * (1000 - empty) as f64) as usize,
        max_len: 100,
        mean_len: mean * (1000 - empty) as f64 / 1000.0,
        empty_rows: empty,
        long_rows: 0,
        long_chunks: 0,
        stream_items: sparrow::ops::products::formats::work::STREAM_ITEMS,
        stream_blocks: 7,
        stream_span: usize::MAX,
        window_max: 0,
        window_reuse: 0.0,
        len_classes: [0; sparrow::ops::products::stats::LEN_CLASSES],
        spread: 1.0,
        block_union: (mean * (1000 - empty) as f64) as usize,
        tall_union: 0,
        diagonals: 0,
        diag_rows: 0,
        diag_row: 0,
        reach: usize::MAX,
        pieces: 1000,
    };
    let rv = |cols, ksplit, tiles| GpuPath::RowVec {
        cols,
        ksplit,
        tiles,
        deep: false,
    };
    // SpMV: f32 rows shorter than 32 on average take the planned blocks; other even rows one
    // column lane, reading A as vectors for f32 and for f64 rows of 24 entries or more on local
    // columns, 12 on scattered ones (about 6 entries per entry lane, at most 4 lanes), else one
    // entry at a time (about 8 per lane).
    assert_eq!(plan::choose(&stats(3.0, 0), 1, 4).0, GpuPath::Stream);
    assert_eq!(plan::choose(&stats(31.0, 0), 1, 4).0, GpuPath::Stream);
    assert_eq!(
        plan::choose(&stats(32.0, 0), 1, 4).0,
        GpuPath::AVec { ksplit: 4 }
    );
    assert_eq!(
        plan::choose(&stats(32.0, 0), 1, 4).0.kernel_for("f32", 1),
        "spmv_avec_f32_k4"
    );
    assert_eq!(
        plan::choose(&stats(32.0, 0), 1, 4).0.kernel_for("f32", 8),
        "spmm_avec_f32_k4"
    );
    assert_eq!(plan::choose(&stats(3.0, 0), 1, 8).0, rv(1, 1, 1));
    // f64 vector-A lanes: local columns from rows of F64_AVEC_LOCAL_MEAN, about 6 entries a
    // lane; scattered columns (windows wider than SCATTER_WINDOW) from 12, about 4 a lane.
    assert_eq!(
        plan::choose(&stats(32.0, 0), 1, 8).0,
        GpuPath::AVec { ksplit: 4 }
    );
    assert_eq!(
        plan::choose(&stats(47.0, 0), 1, 8).0,
        GpuPath::AVec { ksplit: 4 }
    );
    assert_eq!(
        plan::choose(&stats(64.0, 0), 1, 8).0,
        GpuPath::AVec { ksplit: 4 }
    );
    assert_eq!(
        plan::choose(&stats(plan::F64_AVEC_LOCAL_MEAN, 0), 1, 8).0,
        GpuPath::AVec { ksplit: 4 }
    );
    assert_eq!(
        plan::choose(&stats(plan::F64_AVEC_LOCAL_MEAN - 0.1, 0), 1, 8).0,
        rv(1, 2, 1)
    );
    assert_eq!(plan::choose(&stats(16.0, 0), 1, 8).0, rv(1, 2, 1));
    let scattered = |mean: f64, window_max: usize| {
        let mut s = stats(mean, 0);
        s.window_max = window_max;
        plan::choose(&s, 1, 8)
    };
    assert_eq!(
        scattered(16.0, sparrow::ops::products::stats::SCATTER_WINDOW).0,
        rv(1, 2, 1)
    );
    let (path, why) = scattered(16.0, sparrow::ops::products::stats::SCATTER_WINDOW + 1);
    assert_eq!(path, GpuPath::AVec { ksplit: 4 });
    assert!(why.contains("columns scattered"), "{why}");
    assert_eq!(scattered(64.0, 1 << 20).0, GpuPath::AVec { ksplit: 4 });
    assert_eq!(scattered(12.0, 1 << 20).0, GpuPath::AVec { ksplit: 2 });
    // f32 keeps about 6 entries a lane whatever the window.
    let mut wide32 = stats(64.0, 0);
    wide32.window_max = 1 << 20;
    assert_eq!(plan::choose(&wide32, 1, 4).0, GpuPath::AVec { ksplit: 4 });
    assert_eq!(plan::choose(&stats(10.0, 0), 1, 8).0, rv(1, 1, 1));
    // Skewed rows take the planned blocks: mostly empty, or a row far above the mean.
    assert_eq!(plan::choose(&stats(30.0, 600), 1, 4).0, GpuPath::Stream);
    assert!(plan::choose(&stats(30.0, 600), 1, 4)
        .1
        .contains("7 planned blocks"));
    let mut skew = stats(4.0, 0);
    skew.max_len = 200;
    assert_eq!(plan::choose(&skew, 1, 4).0, GpuPath::Stream);
    // Where SpMV takes the planned blocks (f32 short rows, skewed rows of either type), it
    // takes them packed when every work block spans at most 2^16 columns; one column more,
    // plain. Other paths and N > 1 never pack.
    let span = sparrow::ops::products::formats::work::PACKED_SPAN;
    for (mean, empty, bytes, packs) in [
        (3.0, 0, 4, true),
        (30.0, 600, 4, true),
        (30.0, 600, 8, true),
        (64.0, 0, 4, false),
        (16.0, 0, 8, false),
    ] {
        let mut st = stats(mean, empty);
        let before = plan::choose(&st, 1, bytes).0;
        assert_eq!(before == GpuPath::Stream, packs, "mean {mean}");
        st.stream_span = span;
        let (path, why) = plan::choose(&st, 1, bytes);
        if packs {
            assert_eq!(path, GpuPath::Packed, "mean {mean}, {bytes}-byte values");
            assert!(why.contains("16-bit column offsets"), "{why}");
            let ty = if bytes == 4 { "f32" } else { "f64" };
            assert_eq!(path.kernel_for(ty, 1), format!("spmv_packed_{ty}"));
        } else {
            assert_eq!(path, before);
        }
        assert_ne!(plan::choose(&st, 8, bytes).0, GpuPath::Packed);
        st.stream_span = span + 1;
        assert_eq!(plan::choose(&st, 1, bytes).0, before);
    }
    // f32: 4 columns per segment, at most 32 columns per pass up to N = 64, then 64 (128 from
    // 32 entries per row); about 8 entries per entry lane for N <= 8, 32 above.
    assert_eq!(plan::choose(&stats(16.0, 0), 3, 4).0, rv(1, 2, 1));
    assert_eq!(plan::choose(&stats(64.0, 0), 8, 4).0, rv(2, 8, 1));
    assert_eq!(plan::choose(&stats(64.0, 0), 9, 4).0, rv(4, 2, 1));
    assert_eq!(plan::choose(&stats(64.0, 0), 32, 4).0, rv(8, 2, 1));
    assert_eq!(plan::choose(&stats(16.0, 0), 64, 4).0, rv(8, 1, 1));
    assert_eq!(plan::choose(&stats(64.0, 0), 64, 4).0, rv(8, 2, 1));
    assert_eq!(plan::choose(&stats(16.0, 0), 65, 4).0, rv(16, 1, 1));
    assert_eq!(plan::choose(&stats(16.0, 0), 256, 4).0, rv(16, 1, 1));
    assert_eq!(plan::choose(&stats(64.0, 0), 128, 4).0, rv(32, 1, 1));
    assert_eq!(plan::choose(&stats(64.0, 0), 1000, 4).0, rv(32, 1, 1));
    // f64: 2 columns per segment, passes of 16 columns up to N = 32 and 32 up to 64, then 128
    // (two segments per lane).
    assert_eq!(plan::choose(&stats(16.0, 0), 16, 8).0, rv(8, 1, 1));
    assert_eq!(plan::choose(&stats(16.0, 0), 32, 8).0, rv(8, 1, 1));
    assert_eq!(plan::choose(&stats(16.0, 0), 33, 8).0, rv(16, 1, 1));
    assert_eq!(plan::choose(&stats(64.0, 0), 64, 8).0, rv(16, 2, 1));
    assert_eq!(plan::choose(&stats(16.0, 0), 65, 8).0, rv(32, 1, 2));
    assert_eq!(plan::choose(&stats(16.0, 0), 128, 8).0, rv(32, 1, 2));
    assert_eq!(plan::choose(&stats(16.0, 0), 256, 8).0, rv(32, 1, 2));
    // Above N = 64, rows shorter than 8 on average take eight column lanes of four f32 (two
    // f64) segments, four rows a warp; at N = 64 and below, and from 8 a row, as above.
    assert_eq!(plan::choose(&stats(5.0, 0), 65, 4).0, rv(8, 1, 4));
    assert_eq!(plan::choose(&stats(7.9, 0), 256, 4).0, rv(8, 1, 4));
    assert_eq!(plan::choose(&stats(5.0, 0), 128, 8).0, rv(8, 1, 2));
    assert_eq!(plan::choose(&stats(5.0, 0), 64, 4).0, rv(8, 1, 1));
    assert_eq!(plan::choose(&stats(8.0, 0), 128, 4).0, rv(16, 1, 1));
    assert_eq!(plan::choose(&stats(8.0, 0), 128, 8).0, rv(32, 1, 2));
    // f32 only where the columns are local (their gathers of B come from cache); f64 always.
    let mut scattered_short = stats(5.0, 0);
    scattered_short.window_max = sparrow::ops::products::stats::SCATTER_WINDOW + 1;
    assert_eq!(plan::choose(&scattered_short, 128, 4).0, rv(16, 1, 1));
    assert_eq!(plan::choose(&scattered_short, 128, 8).0, rv(8, 1, 2));
    scattered_short.window_max = sparrow::ops::products::stats::SCATTER_WINDOW;
    assert_eq!(plan::choose(&scattered_short, 128, 4).0, rv(8, 1, 4));
    // Empty rows do not shrink the entry split of the rows that have entries.
    assert_eq!(plan::choose(&stats(32.0, 900), 8, 4).0, rv(2, 4, 1));
    assert_eq!(plan::choose(&stats(0.0, 1000), 8, 4).0, rv(2, 1, 1));
}

#[test]
fn gpu_policy_stages_windows_that_fit_and_pay() {
    let stats =
        |mean: f64, window_max: usize, window_reuse: f64| sparrow::ops::products::stats::RowStats {
            nrows: 1000,
            ncols: 1 << 40,
            nnz: (mean * 1000.0) as usize,
            max_len: mean as usize,
            mean_len: mean,
            empty_rows: 0,
            long_rows: 0,
            long_chunks: 0,
            stream_items: sparrow::ops::products::formats::work::STREAM_ITEMS,
            stream_blocks: 7,
            stream_span: usize::MAX,
            window_max,
            window_reuse,
            len_classes: [0; sparrow::ops::products::stats::LEN_CLASSES],
            spread: 1.0,
            block_union: (mean * 1000.0) as usize,
            tall_union: 0,
            diagonals: 0,
            diag_rows: 0,
            diag_row: 0,
            reach: usize::MAX,
            pieces: 1000,
        };
    let win = |cols, ksplit| GpuPath::Window { cols, ksplit };
    let blocks = stats(32.0, 32, 32.0);
    // The row-vector shape, with at least 8 lanes per row.
    assert_eq!(plan::choose(&blocks, 8, 4).0, win(2, 4));
    assert_eq!(plan::choose(&blocks, 32, 4).0, win(8, 1));
    assert_eq!(plan::choose(&blocks, 256, 4).0, win(32, 1));
    assert_eq!(plan::choose(&stats(64.0, 40, 50.0), 8, 4).0, win(2, 8));
    assert!(plan::choose(&blocks, 32, 4)
        .1
        .contains("stage their window"));
    // SpMV and one column lane never stage.
    assert_eq!(plan::choose(&blocks, 1, 4).0, GpuPath::AVec { ksplit: 4 });
    assert!(matches!(
        plan::choose(&blocks, 4, 4).0,
        GpuPath::RowVec { cols: 1, .. }
    ));
    // Windows wider than twice the block's rows, or used too few times, are read from L2.
    let wide = plan::WINDOW_SPAN * sparrow::ops::products::stats::WINDOW_ROWS;
    assert!(matches!(
        plan::choose(&stats(64.0, wide, 21.0), 256, 4).0,
        GpuPath::Window { .. }
    ));
    assert!(matches!(
        plan::choose(&stats(64.0, wide + 1, 21.0), 256, 4).0,
        GpuPath::RowVec { .. }
    ));
    assert!(matches!(
        plan::choose(&stats(64.0, 40, plan::WINDOW_REUSE * 0.9), 32, 4).0,
        GpuPath::RowVec { .. }
    ));
    // The launch gives each block the widest window's rows of 16-byte segments, up to what
    // the shared memory budget holds.
    let shape = win(8, 2).shape(&blocks, 4, &plan::SM90).unwrap();
    assert_eq!(shape.smem, 32 * 8 * 16);
    assert_eq!(shape.grid[0], 1000u32.div_ceil(32));
    let cap = path::window_cap(32);
    assert_eq!(
        win(32, 1).window_rows(&stats(64.0, 10 * cap, 21.0)),
        cap as u32
    );
}

/// The plan's shape for the planned blocks is the launch's: a block per work block and shared
/// memory for a block's products in the value type, on even rows (blocks of
/// STREAM_ITEMS_EVEN) and on skewed ones (STREAM_ITEMS).
#[test]
fn stream_plan_shape_holds_the_blocks_products() {
    let even = gen::stencil_2d::<f32>(61, 53, 37).unwrap().row_stats();
    let skewed = gen::sparse_rows::<f32>(6_007, 6_007, 0.9, 32, 36)
        .unwrap()
        .row_stats();
    assert!(!even.skewed() && skewed.skewed());
    for (st, items) in [
        (&even, plan::STREAM_ITEMS_EVEN),
        (&skewed, plan::STREAM_ITEMS),
    ] {
        assert_eq!(st.stream_items, items);
        for bytes in [4usize, 8] {
            let shape = GpuPath::Stream.shape(st, bytes, &plan::SM90).unwrap();
            assert_eq!(shape.grid[0] as usize, st.stream_blocks);
            assert_eq!(shape.smem as usize, items * bytes);
        }
    }
}

/// The policy is data: each architecture's thresholds are a value the rules read, so another
/// value moves the choice, and `--explain` names the rule that chose.
#[test]
fn the_rules_read_the_architectures_tuning() {
    use plan::{ProductsTuning, SM80, SM90, SPMM_RULES, SPMV_RULES};
    assert_eq!(ProductsTuning::for_arch((9, 0)), &SM90);
    assert_eq!(ProductsTuning::for_arch((8, 0)), &SM80);
    assert_eq!(ProductsTuning::for_arch((10, 0)), &SM90);
    for rules in [SPMV_RULES, SPMM_RULES] {
        let mut names: Vec<_> = rules.iter().map(|r| r.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), rules.len(), "rule names are unique");
    }
    // Uniform f32 rows of 16 entries (even, scattered): the planned blocks below sm_90's
    // STREAM_MEAN_F32 of 32; a tuning that puts the bound at 8 sends them to the vector-A lanes.
    let a = gen::uniform::<f32>(20_000, 200_000, 16, 3).unwrap();
    let st = a.row_stats();
    let (p, why) = plan::choose_with(&st, 1, 4, false, &SM90);
    assert!(matches!(p, GpuPath::Stream | GpuPath::Packed), "{p:?}");
    assert!(why.starts_with("rule planned-blocks-short: "), "{why}");
    let low = ProductsTuning {
        stream_mean_f32: 8.0,
        ..SM90
    };
    let (p, why) = plan::choose_with(&st, 1, 4, false, &low);
    assert!(matches!(p, GpuPath::AVec { .. }), "{p:?}");
    assert!(why.starts_with("rule vector-a: "), "{why}");
    // SpMM on the same rows names its rule too.
    let (_, why) = plan::choose_with(&st, 32, 4, false, &SM90);
    assert!(why.starts_with("rule "), "{why}");
}
