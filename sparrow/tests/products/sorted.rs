//! Uneven and scattered rows on the GPU: the bins of rows sorted by length, when the plan sorts,
//! and the deep row kernels.

use sparrow::matrix::{gen, Csr};
use sparrow::ops::products::{plan, GpuPath, RowStats};

use crate::Stats;

#[test]
fn sorted_bins_cover_the_row_list_with_each_rows_lanes() {
    // Every row in the bins once, with the entry lanes the per-row rule gives: a row of L
    // entries takes L / lane_entries lanes rounded down to a power of two, 1 to 32 / cols.
    // The power law with every seventh row emptied.
    let pl = gen::power_law::<f32>(5_000, 5_000, 16.0, 3_000, 1.5, 9).unwrap();
    let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
    for r in (0..pl.nrows()).filter(|r| r % 7 != 3) {
        for p in pl.row_range(r) {
            rows.push(r);
            cols.push(pl.col_idx()[p] as usize);
            vals.push(pl.values()[p]);
        }
    }
    let a = Csr::from_triplets(pl.nrows(), pl.ncols(), &rows, &cols, &vals).unwrap();
    let st = RowStats::of(&a);
    assert!(st.long_rows > 0 && st.len_classes[0] >= pl.nrows() / 7);
    let order = sparrow::ops::products::formats::work::rows_by_length(a.row_ptr());
    for path in GpuPath::all() {
        let GpuPath::Sorted {
            cols, lane_entries, ..
        } = path
        else {
            assert!(path.sorted_bins(&st, true).is_empty());
            continue;
        };
        for split in [true, false] {
            let bins = path.sorted_bins(&st, split);
            let mut at = if split { st.long_rows } else { 0 };
            for bin in &bins {
                assert_eq!(bin.start, at, "{path:?} split {split}: bins are contiguous");
                assert!(bin.count > 0);
                for &r in &order[bin.start..bin.start + bin.count] {
                    let len = a.row_range(r as usize).len();
                    if bin.ksplit == 0 {
                        assert_eq!(len, 0, "{path:?} split {split}: the fill bin");
                        continue;
                    }
                    assert!(len > 0, "{path:?} split {split}: an empty row in a row bin");
                    let mut k = 1u32;
                    while k < 32 / cols && (2 * k * lane_entries) as usize <= len {
                        k *= 2;
                    }
                    assert_eq!(bin.ksplit, k, "{path:?} split {split}: row of {len}");
                }
                at += bin.count;
            }
            assert_eq!(at, a.nrows(), "{path:?} split {split}: every row");
            assert!(bins.windows(2).all(|w| w[0].ksplit > w[1].ksplit));
        }
        let kernels = path.kernels("f32", 8, &st, true);
        assert_eq!(kernels.len(), path.sorted_bins(&st, true).len());
    }
}

#[test]
fn gpu_policy_sorts_uneven_rows() {
    let pl = gen::power_law::<f32>(40_000, 40_000, 16.0, 3_000, 1.5, 9).unwrap();
    let st = RowStats::of(&pl);
    assert!(st.spread >= plan::SORT_SPREAD, "{}", st.spread);
    let (path, why) = plan::choose(&st, 32, 4);
    assert_eq!(
        path,
        GpuPath::Sorted {
            cols: 8,
            lane_entries: 32,
            deep: false
        }
    );
    assert!(why.contains("sorted by length"), "{why}");
    assert_eq!(
        plan::choose(&st, 8, 4).0,
        GpuPath::Sorted {
            cols: 2,
            lane_entries: 8,
            deep: false
        }
    );
    // SpMV keeps the planned blocks (packed: 40,000 columns); even rows and small matrices
    // keep rowvec.
    assert!(st.packable());
    assert_eq!(plan::choose(&st, 1, 4).0, GpuPath::Packed);
    let un = gen::uniform::<f32>(40_000, 40_000, 16, 9)
        .unwrap()
        .row_stats();
    assert!(un.spread < plan::SORT_SPREAD, "{}", un.spread);
    assert!(matches!(plan::choose(&un, 32, 4).0, GpuPath::RowVec { .. }));
    let small = gen::power_law::<f32>(4_000, 4_000, 16.0, 300, 1.5, 9).unwrap();
    assert!(matches!(
        plan::choose(&RowStats::of(&small), 32, 4).0,
        GpuPath::RowVec { .. }
    ));
    // At the bounds: SORT_SPREAD and SORT_ROWS sort, just below either does not.
    let sorted = |spread: f64, nrows: usize| {
        let mut s = st;
        s.spread = spread;
        s.nrows = nrows;
        matches!(plan::choose(&s, 32, 4).0, GpuPath::Sorted { .. })
    };
    assert!(sorted(plan::SORT_SPREAD, plan::SORT_ROWS));
    assert!(!sorted(plan::SORT_SPREAD - 1e-9, plan::SORT_ROWS));
    assert!(!sorted(plan::SORT_SPREAD, plan::SORT_ROWS - 1));
}

/// f32 rows of scattered columns with at least `DEEP_MEAN` entries on average take the deep row
/// kernels (sorted or not, at every N > 1); rows of 4 random columns beside long rows, local
/// columns and f64 keep four entries in flight.
#[test]
fn gpu_policy_takes_deep_row_kernels_on_scattered_rows() {
    let deep = |p: GpuPath| match p {
        GpuPath::RowVec { deep, .. } | GpuPath::Sorted { deep, .. } => deep,
        _ => false,
    };
    let un = gen::uniform::<f32>(20_000, 1_000_000, 16, 9)
        .unwrap()
        .row_stats();
    assert!(un.scattered());
    for n in [2, 8, 32, 64, 128, 256] {
        let (p, why) = plan::choose(&un, n, 4);
        assert!(
            matches!(p, GpuPath::RowVec { tiles: 1, .. }) && deep(p),
            "{p:?}"
        );
        assert!(p.kernel_name("f32").ends_with("_u8"), "{p:?}");
        assert!(why.contains("8 entries in flight"), "{why}");
        assert!(!deep(plan::choose(&un, n, 8).0));
    }
    // SpMV keeps its own paths.
    assert!(!deep(plan::choose(&un, 1, 4).0));
    let pl = gen::power_law::<f32>(40_000, 1_000_000, 16.0, 3_000, 1.5, 9).unwrap();
    let st = RowStats::of(&pl);
    let (p, _) = plan::choose(&st, 32, 4);
    assert!(matches!(p, GpuPath::Sorted { .. }) && deep(p), "{p:?}");
    let kernels = p.kernels("f32", 32, &st, true);
    assert!(kernels
        .iter()
        .all(|k| k.ends_with("_u8") || k.starts_with("spmm_fill")));
    // At the bound: DEEP_MEAN takes them, just below does not; nor local columns.
    let mean = st.nnz as f64 / (st.nrows - st.empty_rows) as f64;
    assert!(plan::deep_rows(&st, mean, 4));
    assert!(plan::deep_rows(&st, plan::DEEP_MEAN, 4));
    assert!(!plan::deep_rows(&st, plan::DEEP_MEAN - 1e-9, 4));
    assert!(!plan::deep_rows(&st, mean, 8));
    let lr = gen::long_rows::<f32>(40_000, 1_000_000, 2, 20_000, 4, 16)
        .unwrap()
        .row_stats();
    assert!(lr.scattered());
    assert!(!deep(plan::choose(&lr, 32, 4).0));
    let fem = gen::fem_like::<f32>(40_000, 60_000, 9).unwrap().row_stats();
    assert!(!fem.scattered());
    assert!(!deep(plan::choose(&fem, 32, 4).0));
    // Deep paths apply to f32 only.
    let p = plan::choose(&un, 32, 4).0;
    assert!(p.applies(32, &un, 4, &plan::SM90) && !p.applies(32, &un, 8, &plan::SM90));
}
