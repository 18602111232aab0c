//! SpMV's paths for structured and scattered rows: diagonals, near offsets and column slices,
//! when the plan takes them, why a forced one refuses, and what they cost in device memory.

use sparrow::matrix::gen;
use sparrow::ops::products::{plan, GpuPath, RowStats};

use crate::Stats;

/// SpMV takes the diagonal path on rows that repeat one pattern of up to `DIAG_THREAD_MAX`
/// diagonals in f32 (the 2-D and 3-D stencils) and `DIAG_THREAD_MAX_F64` in f64 (the 2-D
/// stencil), the vector diagonal path on wider patterns (8 lanes a row below `DIAG_FEW_ROWS`
/// rows, 4 from there), never at N > 1, nor on rows without a pattern, where a forced diagonal
/// path says why. Its launch has a thread a row (the vector path 256 / lanes rows a block), and
/// the device memory counts the offsets and a bit a row.
#[test]
fn gpu_policy_takes_diagonal_path_for_spmv() {
    let mats = [
        gen::stencil_2d::<f32>(300, 41, 2).unwrap(),
        gen::stencil_3d::<f32>(30, 3).unwrap(),
        gen::banded::<f32>(5_000, 64, 1).unwrap(),
    ];
    for (a, d) in mats.iter().zip([5, 27, 64]) {
        let st = RowStats::of(a);
        assert_eq!(st.diagonals, d);
        assert!(st.diag_rows * 10 > st.nrows * 7, "{st:?}");
        for bytes in [4, 8] {
            let (path, why) = plan::choose(&st, 1, bytes);
            let most = if bytes == 4 {
                plan::DIAG_THREAD_MAX
            } else {
                plan::DIAG_THREAD_MAX_F64
            };
            assert_eq!(
                path == GpuPath::Diag,
                d <= most,
                "{d} diagonals, {bytes} bytes"
            );
            let lanes = plan::diag_lanes_for(d, st.nrows, bytes);
            assert_eq!(lanes.is_some(), d > most);
            if d > most {
                let want = GpuPath::DiagLanes {
                    lanes: 8,
                    vectors: 2,
                    steps: 1,
                };
                assert_eq!(path, want, "{d} diagonals, {bytes} bytes: {why}");
                assert_eq!(lanes, Some(want));
                assert!(why.contains("8 lanes a row"), "{why}");
                let shape = path.shape(&st, bytes, &plan::SM90).unwrap();
                assert_eq!(shape.grid[0] as usize, a.nrows().div_ceil(32));
                // From DIAG_FEW_ROWS rows, 4 lanes with 4 vectors; one row fewer keeps 8.
                let mut big = st;
                big.nrows = plan::DIAG_FEW_ROWS;
                let p = plan::choose(&big, 1, bytes).0;
                assert_eq!(
                    p,
                    GpuPath::DiagLanes {
                        lanes: 4,
                        vectors: 4,
                        steps: 1
                    }
                );
                assert_eq!(
                    p.shape(&big, bytes, &plan::SM90).unwrap().grid[0] as usize,
                    big.nrows.div_ceil(64)
                );
                big.nrows -= 1;
                assert_eq!(plan::choose(&big, 1, bytes).0, want);
            }
            assert!(why.contains(&format!("{d} diagonals")), "{why}");
            let n8 = plan::choose(&st, 8, bytes).0;
            assert!(!matches!(n8, GpuPath::Diag | GpuPath::DiagLanes { .. }));
        }
        assert!(
            GpuPath::Diag.applies(1, &st, 4, &plan::SM90),
            "forced, it runs"
        );
        assert_eq!(GpuPath::Diag.kernel_for("f64", 1), "spmv_diag_f64");
        let why = GpuPath::Diag.why_not(8, &st, 4, &plan::SM90).unwrap();
        assert!(why.contains("N = 8"), "{why}");
        let shape = GpuPath::Diag.shape(&st, 4, &plan::SM90).unwrap();
        assert_eq!(shape.grid[0] as usize, a.nrows().div_ceil(256));
        let mut none = st;
        none.diagonals = 0;
        let extra = sparrow::ops::spmm::device_bytes(a, &st, 0, 1, &plan::SM90)
            - sparrow::ops::spmm::device_bytes(a, &none, 0, 1, &plan::SM90);
        assert_eq!(extra, 4 * (d + a.nrows().div_ceil(32)) as u64);
    }
    // At the bounds: DIAG_THREAD_MAX diagonals in f32 and DIAG_THREAD_MAX_F64 in f64 take the
    // path, one more does not.
    let mut st = mats[0].row_stats();
    for (bytes, most) in [(4, plan::DIAG_THREAD_MAX), (8, plan::DIAG_THREAD_MAX_F64)] {
        st.diagonals = most;
        assert_eq!(plan::choose(&st, 1, bytes).0, GpuPath::Diag, "{bytes}");
        st.diagonals = most + 1;
        assert!(matches!(
            plan::choose(&st, 1, bytes).0,
            GpuPath::DiagLanes { .. }
        ));
    }
    for a in [
        gen::uniform::<f32>(5_000, 5_000, 16, 4).unwrap(),
        gen::fem_like::<f32>(5_000, 8_000, 5).unwrap(),
        gen::block_diagonal::<f32>(100, 32, 6).unwrap(),
    ] {
        let st = RowStats::of(&a);
        assert_eq!((st.diagonals, st.diag_rows), (0, 0));
        assert!(!matches!(
            plan::choose(&st, 1, 4).0,
            GpuPath::Diag | GpuPath::DiagLanes { .. }
        ));
        let why = GpuPath::Diag.why_not(1, &st, 4, &plan::SM90).unwrap();
        assert!(why.contains("diagonals"), "{why}");
        let lanes = GpuPath::DiagLanes {
            lanes: 8,
            vectors: 2,
            steps: 1,
        };
        assert_eq!(lanes.why_not(1, &st, 4, &plan::SM90), Some(why));
    }
}

/// SpMV takes the near path on even rows whose entries all lie within `NEAR_REACH` of the
/// diagonal and follow no pattern of diagonals (FEM-like rows, dense diagonal blocks), in f32
/// from `NEAR_MEAN_F32` entries a row, with about 6 (f32) or 4 (f64) entries a lane, 2 to 8
/// lanes; never at N > 1, on skewed rows, or past the reach, where a forced near path says why.
/// Its launch has 256 / lanes rows a block, and the device memory counts 2 bytes an entry.
#[test]
fn gpu_policy_takes_near_path_for_spmv() {
    let fem = gen::fem_like::<f32>(5_000, 8_000, 5).unwrap();
    let blocks = gen::block_diagonal::<f32>(100, 32, 6).unwrap();
    for (a, lanes32, lanes64) in [(&fem, 2, 4), (&blocks, 4, 8)] {
        let st = RowStats::of(a);
        assert!(st.near() && st.diagonals == 0 && !st.skewed(), "{st:?}");
        for (bytes, lanes) in [(4, lanes32), (8, lanes64)] {
            let (path, why) = plan::choose(&st, 1, bytes);
            assert_eq!(path, GpuPath::Near { lanes }, "{bytes} bytes: {why}");
            assert!(why.contains(&format!("{lanes} lanes a row")), "{why}");
            assert_eq!(
                path.shape(&st, bytes, &plan::SM90).unwrap().grid[0] as usize,
                a.nrows().div_ceil(256 / lanes as usize)
            );
            assert!(!matches!(
                plan::choose(&st, 8, bytes).0,
                GpuPath::Near { .. }
            ));
        }
        assert_eq!(
            GpuPath::Near { lanes: 4 }.kernel_for("f64", 1),
            "spmv_near_f64_k4"
        );
        let why = GpuPath::Near { lanes: 4 }
            .why_not(2, &st, 8, &plan::SM90)
            .unwrap();
        assert!(why.contains("N = 2"), "{why}");
        let mut far = st;
        far.reach = sparrow::ops::products::stats::NEAR_REACH + 1;
        assert!(!matches!(plan::choose(&far, 1, 8).0, GpuPath::Near { .. }));
        let why = GpuPath::Near { lanes: 2 }
            .why_not(1, &far, 8, &plan::SM90)
            .unwrap();
        assert!(why.contains("32767") && why.contains("32768 away"), "{why}");
        let extra = sparrow::ops::spmm::device_bytes(a, &st, 0, 1, &plan::SM90)
            - sparrow::ops::spmm::device_bytes(a, &far, 0, 1, &plan::SM90);
        assert_eq!(extra, 2 * a.nnz() as u64);
    }
    // f32 rows below NEAR_MEAN_F32 keep the planned blocks; f64 ones take the near path. At
    // the mean itself f32 takes it too, and long rows stop at 8 lanes.
    let mut short = RowStats::of(&fem);
    short.empty_rows = 0;
    short.nnz = (plan::NEAR_MEAN_F32 as usize - 1) * short.nrows;
    assert!(!matches!(
        plan::choose(&short, 1, 4).0,
        GpuPath::Near { .. }
    ));
    assert_eq!(plan::choose(&short, 1, 8).0, GpuPath::Near { lanes: 2 });
    short.nnz = plan::NEAR_MEAN_F32 as usize * short.nrows;
    assert_eq!(plan::choose(&short, 1, 4).0, GpuPath::Near { lanes: 2 });
    short.nnz = 200 * short.nrows;
    short.max_len = 200;
    for bytes in [4, 8] {
        assert_eq!(plan::choose(&short, 1, bytes).0, GpuPath::Near { lanes: 8 });
        assert_eq!(plan::near_lanes(200.0, bytes), 8);
    }
    // Skewed rows near the diagonal keep the planned blocks (over packed columns here).
    let skewed = gen::power_law::<f32>(7_919, 5_003, 12.0, 4_000, 1.5, 5).unwrap();
    let st = RowStats::of(&skewed);
    assert!(st.near() && st.skewed() && st.packable());
    assert_eq!(plan::choose(&st, 1, 8).0, GpuPath::Packed);
}

#[test]
fn gpu_policy_takes_column_slices_for_scattered_spmv() {
    use sparrow::ops::products::formats::slices::{
        SLICE_MEMBERS, SLICE_PIECE, SLICE_PIECES, SLICE_X_RATIO,
    };
    let sm90 = &plan::SM90;
    let groups = sm90.slice_groups;
    assert_eq!(groups, 66, "the H200's 132 SMs, a block each");
    // Power-law rows over as many columns as rows: 66 groups' copies of x about 4.3 times the
    // entries.
    let a = gen::power_law::<f32>(150_000, 150_000, 16.0, 5_000, 1.5, 8).unwrap();
    let st = RowStats::of(&a);
    assert!(st.scattered() && st.sliceable(sm90), "{st:?}");
    let cut: usize = (0..a.nrows())
        .map(|r| a.row_range(r).len().div_ceil(SLICE_PIECE).max(1))
        .sum();
    assert_eq!(st.pieces, cut);
    let (path, why) = plan::choose(&st, 1, 4);
    assert_eq!(path, GpuPath::Sliced, "{why}");
    assert!(why.contains("shared memory"), "{why}");
    let shape = path.shape(&st, 4, sm90).unwrap();
    assert_eq!(
        (shape.grid[0] as usize, shape.block[0], shape.cluster),
        (
            groups * SLICE_MEMBERS,
            1024,
            Some([SLICE_MEMBERS as u32, 1, 1])
        )
    );
    // A GPU that cannot run the kernel keeps the path it took before, as do N = 8 and f64.
    assert_ne!(plan::choose_on(&st, 1, 4, false).0, GpuPath::Sliced);
    assert_ne!(plan::choose(&st, 8, 4).0, GpuPath::Sliced);
    assert_ne!(plan::choose(&st, 1, 8).0, GpuPath::Sliced);
    let why = GpuPath::Sliced.why_not(1, &st, 8, sm90).unwrap();
    assert!(why.contains("f32 values only"), "{why}");
    assert_eq!(
        GpuPath::Sliced.kernels("f32", 1, &st, true),
        ["spmv_sliced_f32", "spmv_cut_f32"]
    );
    let why = GpuPath::Sliced.why_not(2, &st, 4, sm90).unwrap();
    assert!(why.contains("N = 2"), "{why}");
    // The bound on the copies of x: at the ratio the slices are taken, one column more not.
    let mut at = st;
    at.ncols = SLICE_X_RATIO * at.nnz / groups;
    assert!(at.sliceable(sm90));
    at.ncols += 1;
    assert!(!at.sliceable(sm90));
    assert_ne!(plan::choose(&at, 1, 4).0, GpuPath::Sliced);
    let why = GpuPath::Sliced.why_not(1, &at, 4, sm90).unwrap();
    assert!(why.contains("at most 5 times"), "{why}");
    // The groups are the architecture's: with half of them, their copies of x leave room for
    // that column, and the launch has their blocks.
    let half = plan::ProductsTuning {
        slice_groups: groups / 2,
        ..plan::SM90
    };
    assert!(at.sliceable(&half));
    assert_eq!(plan::choose_with(&at, 1, 4, true, &half).0, GpuPath::Sliced);
    assert_eq!(
        GpuPath::Sliced.shape(&at, 4, &half).unwrap().grid[0] as usize,
        groups / 2 * SLICE_MEMBERS
    );
    // More pieces than 66 groups hold take more groups, whose copies count.
    let mut many = st;
    many.pieces = SLICE_PIECES * groups + 1;
    assert_eq!(many.slice_groups(sm90), groups + 1);
    assert_eq!(many.slice_blocks(sm90), (groups + 1) * SLICE_MEMBERS);
    // Local columns never take them, whatever the ratio.
    let banded = gen::banded::<f32>(50_000, 64, 1).unwrap().row_stats();
    assert!(!banded.scattered() && !banded.sliceable(sm90));
    let extra = sparrow::ops::spmm::device_bytes(&a, &st, 0, 1, sm90)
        - sparrow::ops::spmm::device_bytes(&a, &at, 0, 1, sm90);
    assert!(extra >= 8 * a.nnz() as u64, "{extra}");
    let a64 = gen::power_law::<f64>(150_000, 150_000, 16.0, 5_000, 1.5, 8).unwrap();
    assert_eq!(
        sparrow::ops::spmm::device_bytes(&a64, &st, 0, 1, sm90),
        sparrow::ops::spmm::device_bytes(&a64, &at, 0, 1, sm90)
    );
}
