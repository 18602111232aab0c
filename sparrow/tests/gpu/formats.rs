//! The acceleration formats on the GPU: packed columns, stream blocks, row blocks, diagonals,
//! near offsets and column slices, each against the oracle and at its bounds.

use std::sync::Arc;

use sparrow::device::Gpu;
use sparrow::matrix::{gen, Csr, Dense};
use sparrow::ops::check::{compare, tolerance};
use sparrow::ops::products::oracle as spmm_oracle;
use sparrow::ops::products::plan::ProductsTuning;
use sparrow::ops::products::PreparedCsr;
use sparrow::ops::spmm::{GpuPath, Spmm};
use sparrow::ops::spmv::Spmv;
use sparrow::{Device, Scalar};

use super::{download_f64, gpu};

use super::products::{banded_with_gaps, forced};

/// The packed columns on the GPU equal the host's `pack_columns`, entry for entry, block for
/// block and row for row (rows of long-row chunks zero).
fn packed_as_on_the_host<T: Scalar>(g: &Arc<Gpu>, a: &Csr<T>, da: &PreparedCsr<T>) {
    let mut work = Vec::new();
    sparrow::ops::products::formats::work::stream_partition(
        a.row_ptr(),
        da.stats.stream_items,
        |b| work.extend_from_slice(&b),
    );
    let want = sparrow::ops::products::formats::work::pack_columns(a.row_ptr(), a.col_idx(), &work)
        .unwrap();
    let p = da.packed.as_ref().expect("the matrix packs");
    assert_eq!(g.download(&p.cols, a.nnz()).unwrap(), want.cols);
    assert_eq!(g.download(&p.base, want.base.len()).unwrap(), want.base);
    assert_eq!(g.download(&p.ends, a.nrows()).unwrap(), want.ends);
}

/// y = 0.5 A x - 2 y on the forced planned-block paths (plain and packed columns; the matrix
/// must pack) against the oracle.
fn stream_against_the_oracle<T: Scalar>(g: &Arc<Gpu>, a: &Csr<T>) {
    let x = gen::dense::<T>(a.ncols(), 1, 1, 5).unwrap().into_data();
    let y0 = gen::dense::<T>(a.nrows(), 1, 1, 6).unwrap().into_data();
    let (half, m2) = (T::from_f64(0.5), T::from_f64(-2.0));
    let (want, scale) = sparrow::ops::products::oracle::spmv(half, a, &x, m2, &y0);
    let da = PreparedCsr::upload(g, a).unwrap();
    packed_as_on_the_host(g, a, &da);
    let dx = g.upload(&x).unwrap();
    for path in [GpuPath::Stream, GpuPath::Packed] {
        let dy = g.upload(&y0).unwrap();
        Spmv::new()
            .alpha(half)
            .beta(m2)
            .force_path(path)
            .run_device(g, &da, &dx, &dy)
            .unwrap();
        let y = download_f64(g, &dy, a.nrows());
        let cmp = compare(&y, &want, &scale, tolerance::<T>());
        assert!(cmp.pass, "{path:?} {} {cmp:?}", T::NAME);
    }
}

/// The packed blocks at their bound: every block spans exactly 2^16 columns (offsets up to
/// 65,535), and one column more leaves the matrix unpacked, the policy off the packed path and
/// a forced packed path refused with an error naming it.
#[test]
fn small_spmv_packed_span_bound() {
    use sparrow::ops::products::formats::work::PACKED_SPAN;
    let g = gpu();
    let device = Device::Cuda(g.clone());
    for extra in [0usize, 1] {
        let ncols = PACKED_SPAN + extra;
        let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
        let mut rng = sparrow::matrix::Rng::new(41);
        for row in 0..20_000usize {
            for col in [row % 97, 5_000 + row % 1_000, ncols - 1 - row % 89] {
                r.push(row);
                c.push(col);
                v.push(rng.range_f64(-1.0, 1.0) as f32);
            }
        }
        let a = Csr::<f32>::from_triplets(20_000, ncols, &r, &c, &v).unwrap();
        let st = sparrow::ops::products::RowStats::of(&a);
        assert_eq!(st.stream_span, ncols, "{st:?}");
        let x = gen::dense::<f32>(ncols, 1, 1, 5).unwrap().into_data();
        let mut y = vec![f32::NAN; a.nrows()];
        let (want, scale) = sparrow::ops::products::oracle::spmv(1.0, &a, &x, 0.0, &y);
        let plan = Spmv::new().run(&device, &a, &x, &mut y).unwrap();
        let kernel = plan.kernel.unwrap();
        if extra == 0 {
            assert!(st.packable());
            assert_eq!(kernel, "spmv_packed_f32");
            let got: Vec<f64> = y.iter().map(|&t| t as f64).collect();
            let cmp = compare(&got, &want, &scale, tolerance::<f32>());
            assert!(cmp.pass, "{cmp:?}");
        } else {
            assert!(!st.packable());
            assert!(!kernel.contains("packed"), "{kernel}");
            let err = Spmv::new()
                .force_path(GpuPath::Packed)
                .run(&device, &a, &x, &mut y)
                .unwrap_err();
            assert!(err.to_string().contains("path"), "{err}");
        }
    }
}

fn banded_policy<T: Scalar>(device: &Device, kernel: &str) {
    let a = gen::banded::<T>(2_001, 64, 41).unwrap();
    let b = gen::dense::<T>(a.ncols(), 64, 64, 42).unwrap();
    let mut c = Dense::filled(a.nrows(), 64, 64, T::from_f64(f64::NAN)).unwrap();
    let (want, scale) = spmm_oracle::spmm(T::from_f64(1.0), &a, &b, T::ZERO, &c);
    let plan = Spmm::new().run(device, &a, &b, &mut c).unwrap();
    assert_eq!(plan.kernel.as_deref(), Some(kernel));
    let got: Vec<f64> = c.to_packed().data().iter().map(|v| v.to_f64()).collect();
    let cmp = compare(&got, &want, &scale, tolerance::<T>());
    assert!(cmp.pass, "{cmp:?}");
}

/// The policy takes the row blocks on banded rows (f32 tall blocks, f64 blocks of four) and
/// runs what it names; forced where the upload built none, or blocks of the other height, the
/// path is refused with the reason, not run.
#[test]
fn small_row_blocks_policy_and_refusal() {
    let g = gpu();
    let device = Device::Cuda(g.clone());
    banded_policy::<f32>(&device, "spmm_rowblk8_f32_c8_k1_t2");
    banded_policy::<f64>(&device, "spmm_rowblk_f64_c16_k1_t2");

    let u = gen::uniform::<f32>(2_001, 2_001, 16, 43).unwrap();
    assert!(!sparrow::ops::products::RowStats::of(&u).blockable());
    for rows in [4, 8] {
        let e = refused_height(&device, &u, rows);
        assert!(e.contains("no row blocks"), "{e}");
    }
    // f32 banded rows get tall blocks only, f64 blocks of four only.
    let e = refused_height(&device, &gen::banded::<f32>(2_001, 64, 41).unwrap(), 4);
    assert!(e.contains("builds blocks of 8 rows"), "{e}");
    let e = refused_height(&device, &gen::banded::<f64>(2_001, 64, 41).unwrap(), 8);
    assert!(e.contains("builds blocks of 4 rows"), "{e}");
}

/// Row blocks of `rows` rows forced on `a` (2,001 columns) at N = 64: the refusal's message,
/// checked to name the forced path and the distinct columns, with C left as it was (NaN).
fn refused_height<T: Scalar>(device: &Device, a: &Csr<T>, rows: u32) -> String {
    let b = gen::dense::<T>(2_001, 64, 64, 42).unwrap();
    let mut c = Dense::filled(a.nrows(), 64, 64, T::from_f64(f64::NAN)).unwrap();
    let path = GpuPath::RowBlock {
        rows,
        cols: 8,
        ksplit: 1,
        tiles: 2,
    };
    let e = Spmm::new()
        .force_path(path)
        .run(device, a, &b, &mut c)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("distinct columns") && e.contains("forced path"),
        "{e}"
    );
    assert!(c.data().iter().all(|v| v.to_f64().is_nan()));
    e
}

/// SpMV over rows that repeat one pattern of diagonals: the identity, a band of 64 (63 edge
/// rows off the pattern), a band of 37 (its run of pattern rows starts at row 18, inside a
/// warp's rows, and its rows start off the 16-byte grid), a 2-D stencil on a ragged grid
/// (offsets not consecutive) and a band with every third row empty (runs of two rows).
/// The upload's bits, longest run and first offset equal the host's; the policy takes a thread a row on the stencil and the
/// identity and the lanes on the wider bands (the band of 33 starts its rows off the 16-byte
/// grid); y = 0.5 A x - 2 y and y = A x over NaN match the oracle, bit for bit on a second
/// call, with every lane count forced (rows of more vectors than lanes included); forced on rows
/// with no pattern, or at N = 2, the path is refused.
fn diagonal_rows<T: Scalar>() {
    use sparrow::ops::products::formats::diagonals::{consecutive, find, follow_bits, longest_run};
    let g = gpu();
    let device = Device::Cuda(g.clone());
    let n = 5_001;
    let (r, v): (Vec<usize>, Vec<T>) = (
        (0..n).collect(),
        (0..n).map(|i| T::from_f64(i as f64 / 7.0 - 3.0)).collect(),
    );
    let mats: Vec<Csr<T>> = vec![
        Csr::from_triplets(n, n, &r, &r, &v).unwrap(),
        gen::banded(5_003, 64, 51).unwrap(),
        gen::banded(5_003, 37, 54).unwrap(),
        gen::stencil_2d(301, 41, 52).unwrap(),
        banded_with_gaps(16),
    ];
    for (i, a) in mats.iter().enumerate() {
        let st = sparrow::ops::products::RowStats::of(a);
        assert!(st.diagonals > 0, "matrix {i}: {st:?}");
        let off = find(a.row_ptr(), a.col_idx()).unwrap();
        let (bits, _) = follow_bits(a.row_ptr(), a.col_idx(), &off);
        let da = PreparedCsr::upload(&g, a).unwrap();
        let dd = da.diag.as_ref().expect("the upload keeps the pattern");
        assert_eq!(g.download(&dd.bits, bits.len()).unwrap(), bits);
        assert_eq!(g.download(&dd.offsets, off.len()).unwrap(), off);
        let run = longest_run(&bits, a.nrows());
        let want_run = match i {
            0 => 0..n,
            1 => 32..5_003 - 31,
            2 => 18..5_003 - 18,
            4 => 17..19,
            _ => run.clone(),
        };
        assert_eq!((&dd.run, dd.run_at), (&want_run, a.row_ptr()[run.start]));
        assert_eq!(dd.first, consecutive(&off));
        assert_eq!(dd.first.is_some(), i != 3, "matrix {i}");
        let most = if T::NAME == "f32" {
            sparrow::ops::products::plan::DIAG_THREAD_MAX
        } else {
            sparrow::ops::products::plan::DIAG_THREAD_MAX_F64
        };
        let lanes = sparrow::ops::products::plan::diag_lanes_for(
            st.diagonals,
            st.nrows,
            std::mem::size_of::<T>(),
        );
        let want_kernel = match lanes {
            Some(p) => p.kernel_name(T::NAME),
            None => format!("spmv_diag_{}", T::NAME),
        };
        assert_eq!(lanes.is_none(), st.diagonals <= most);
        assert_eq!(axpby_twice(&device, a, None, i), want_kernel);
        let forced =
            std::iter::once(GpuPath::Diag).chain(sparrow::kernels::DIAG_SHAPES.iter().map(
                |&(lanes, vectors, steps)| GpuPath::DiagLanes {
                    lanes,
                    vectors,
                    steps,
                },
            ));
        for path in forced {
            forced_spmv_over_nan(&device, a, path, i);
        }
        if i == 1 {
            refused_at_n2(&device, a, GpuPath::Diag);
        }
    }
    let u = gen::uniform::<T>(2_001, 2_001, 16, 53).unwrap();
    assert_eq!(sparrow::ops::products::RowStats::of(&u).diagonals, 0);
    refused_spmv(&device, &u, GpuPath::Diag, "diagonals");
}

/// Whether two outputs hold the same bits.
fn same_bits<T: Scalar>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(p, q)| p.to_f64().to_bits() == q.to_f64().to_bits())
}

/// y = 0.5 A x - 2 y, with `path` forced or the policy's, matches the oracle, and a second
/// call matches the first bit for bit (matrix `i` of a test). Returns the kernel that ran.
fn axpby_twice<T: Scalar>(device: &Device, a: &Csr<T>, path: Option<GpuPath>, i: usize) -> String {
    let x = gen::dense::<T>(a.ncols(), 1, 1, 5).unwrap().into_data();
    let y0 = gen::dense::<T>(a.nrows(), 1, 1, 6).unwrap().into_data();
    let (half, m2) = (T::from_f64(0.5), T::from_f64(-2.0));
    let (want, scale) = sparrow::ops::products::oracle::spmv(half, a, &x, m2, &y0);
    let mut first: Option<(Vec<T>, String)> = None;
    for _ in 0..2 {
        let mut y = y0.clone();
        let mut op = Spmv::new().alpha(half).beta(m2);
        if let Some(p) = path {
            op = op.force_path(p);
        }
        let kernel = op.run(device, a, &x, &mut y).unwrap().kernel.unwrap();
        let got: Vec<f64> = y.iter().map(|t| t.to_f64()).collect();
        let cmp = compare(&got, &want, &scale, tolerance::<T>());
        assert!(cmp.pass, "matrix {i} {} {kernel}: {cmp:?}", T::NAME);
        match &first {
            None => first = Some((y, kernel)),
            Some((f, k)) => {
                assert_eq!(k, &kernel, "matrix {i}");
                assert!(
                    same_bits(f, &y),
                    "matrix {i} {kernel}: a second call differs"
                );
            }
        }
    }
    first.unwrap().1
}

/// SpMV with `path` forced over a NaN-filled y gives the oracle's A x (matrix `i` of a test).
fn forced_spmv_over_nan<T: Scalar>(device: &Device, a: &Csr<T>, path: GpuPath, i: usize) {
    let x = gen::dense::<T>(a.ncols(), 1, 1, 5).unwrap().into_data();
    let nan = vec![T::from_f64(f64::NAN); a.nrows()];
    let (want, scale) =
        sparrow::ops::products::oracle::spmv(T::from_f64(1.0), a, &x, T::ZERO, &nan);
    let mut y = nan;
    Spmv::new()
        .force_path(path)
        .run(device, a, &x, &mut y)
        .unwrap();
    let got: Vec<f64> = y.iter().map(|t| t.to_f64()).collect();
    let cmp = compare(&got, &want, &scale, tolerance::<T>());
    assert!(
        cmp.pass,
        "matrix {i} {} {path:?} over NaN: {cmp:?}",
        T::NAME
    );
}

/// An SpMV-only path forced at N = 2 is refused, naming `path` and N, and C keeps its NaN.
fn refused_at_n2<T: Scalar>(device: &Device, a: &Csr<T>, path: GpuPath) {
    let b = gen::dense::<T>(a.ncols(), 2, 2, 7).unwrap();
    let mut c = Dense::filled(a.nrows(), 2, 2, T::from_f64(f64::NAN)).unwrap();
    let e = Spmm::new()
        .force_path(path)
        .run(device, a, &b, &mut c)
        .unwrap_err()
        .to_string();
    assert!(e.contains("path") && e.contains("N = 2"), "{e}");
    assert!(c.data().iter().all(|v| v.to_f64().is_nan()));
}

/// SpMV with `path` forced on a matrix it cannot take is refused, naming `path` and saying
/// `why`, and y keeps its NaN.
fn refused_spmv<T: Scalar>(device: &Device, a: &Csr<T>, path: GpuPath, why: &str) {
    let x = gen::dense::<T>(a.ncols(), 1, 1, 5).unwrap().into_data();
    let mut y = vec![T::from_f64(f64::NAN); a.nrows()];
    let e = Spmv::new()
        .force_path(path)
        .run(device, a, &x, &mut y)
        .unwrap_err()
        .to_string();
    assert!(e.contains("path") && e.contains(why), "{e}");
    assert!(y.iter().all(|v| v.to_f64().is_nan()));
}

#[test]
fn small_spmv_diagonal_rows() {
    diagonal_rows::<f32>();
    diagonal_rows::<f64>();
}

/// A matrix of `n` rows whose row r holds `r % 71` entries (empty rows, rows shorter than a
/// lane's batch and rows of several batches at eight lanes) spread over columns r - reach to
/// r + reach, the first row that can reach both ends doing so.
fn near_rows<T: Scalar>(n: usize, reach: usize) -> Csr<T> {
    let mut rng = sparrow::matrix::Rng::new(61);
    let mut t: Triplets<T> = (Vec::new(), Vec::new(), Vec::new());
    let mut ends = false;
    for row in 0..n {
        let (lo, hi) = (row.saturating_sub(reach), (row + reach).min(n - 1));
        let mut cols: Vec<usize> = (0..row % 71)
            .map(|_| lo + rng.below((hi - lo + 1) as u64) as usize)
            .collect();
        if !ends && row >= reach && row + reach < n && row % 71 >= 2 {
            cols[0] = lo;
            cols[1] = hi;
            ends = true;
        }
        push_row(&mut t, row, cols, &mut rng);
    }
    Csr::from_triplets(n, n, &t.0, &t.1, &t.2).unwrap()
}

/// Row and column lists and values of a matrix built row by row.
type Triplets<T> = (Vec<usize>, Vec<usize>, Vec<T>);

/// Appends row `row` with the distinct ones of `cols` (sorted here) and values uniform in
/// [-1, 1).
fn push_row<T: Scalar>(
    t: &mut Triplets<T>,
    row: usize,
    mut cols: Vec<usize>,
    rng: &mut sparrow::matrix::Rng,
) {
    cols.sort_unstable();
    cols.dedup();
    for col in cols {
        t.0.push(row);
        t.1.push(col);
        t.2.push(T::from_f64(rng.range_f64(-1.0, 1.0)));
    }
}

/// SpMV over 16-bit column offsets from the row: a FEM-like matrix and rows reaching exactly
/// 2^15 - 1 columns from the diagonal. The upload's offsets equal the host's; every lane count,
/// forced, gives y = 0.5 A x - 2 y and y = A x over NaN within the oracle's tolerance, bit for
/// bit on a second call, and N = 1 through SpMM with leading dimensions 3 and 2 leaves C's
/// padding NaN. Rows reaching one column farther have no offsets: the path is refused, naming
/// `path`, and y keeps its NaN; so is N = 2.
fn near_diagonal_rows<T: Scalar>() {
    use sparrow::kernels::NEAR_LANES;
    use sparrow::ops::products::formats::near::near_offsets;
    use sparrow::ops::products::stats::NEAR_REACH;
    let g = gpu();
    let device = Device::Cuda(g.clone());
    let mats: Vec<Csr<T>> = vec![
        gen::fem_like(20_011, 30_000, 62).unwrap(),
        near_rows(70_001, NEAR_REACH),
    ];
    for (i, a) in mats.iter().enumerate() {
        let st = sparrow::ops::products::RowStats::of(a);
        assert!(st.near(), "matrix {i}: {st:?}");
        assert_eq!(st.reach == NEAR_REACH, i == 1, "matrix {i}");
        let da = PreparedCsr::upload(&g, a).unwrap();
        let off = near_offsets(a.row_ptr(), a.col_idx()).unwrap();
        let d_off = da.near.as_ref().expect("the upload keeps the offsets");
        assert_eq!(g.download(d_off, off.len()).unwrap(), off);
        for lanes in NEAR_LANES {
            let path = GpuPath::Near { lanes };
            assert_eq!(
                axpby_twice(&device, a, Some(path), i),
                path.kernel_name(T::NAME)
            );
            forced_spmv_over_nan(&device, a, path, i);
            forced(&device, a, path, 1, false, true);
        }
        if i == 0 {
            refused_at_n2(&device, a, GpuPath::Near { lanes: 4 });
        }
    }
    let far = near_rows::<T>(70_001, NEAR_REACH + 1);
    assert_eq!(
        sparrow::ops::products::RowStats::of(&far).reach,
        NEAR_REACH + 1
    );
    assert!(PreparedCsr::upload(&g, &far).unwrap().near.is_none());
    refused_spmv(&device, &far, GpuPath::Near { lanes: 4 }, "32768 away");
}

#[test]
fn small_spmv_near_rows() {
    near_diagonal_rows::<f32>();
    near_diagonal_rows::<f64>();
}

/// The column-slice path on scattered columns: power-law rows (rows over 128 entries cut into
/// pieces, a first row of 20,000, an x whose length is no multiple of a 16-byte vector), rows
/// whose entries crowd one slice (each group's slice takes several stages), rows with empty
/// ones between, and a run of 40,000 empty rows before a last row of entries in one slice (a
/// group of no stages, and one whose second block has none) (f32, the values it runs). The
/// policy takes it; y = 0.5 A x - 2 y twice, bit for
/// bit; y = A x over NaN; N = 1 through SpMM with leading dimensions 3 and 2 (the block-wide
/// build) leaves C's padding NaN; N = 2 and a banded matrix are refused.
fn column_slices() {
    type T = f32;
    use sparrow::ops::products::formats::slices::{self, SLICE_STAGE};
    let g = gpu();
    let device = Device::Cuda(g.clone());
    let tuning = ProductsTuning::for_arch(g.limits().compute_capability);
    let mut rng = sparrow::matrix::Rng::new(41);
    let mut t: Triplets<T> = (Vec::new(), Vec::new(), Vec::new());
    let crowd_rows = 150_000;
    for row in 0..crowd_rows {
        let mut cols: Vec<usize> = (0..18).map(|_| rng.below(6000) as usize).collect();
        cols.extend((0..2).map(|_| rng.below(150_000) as usize));
        push_row(&mut t, row, cols, &mut rng);
    }
    let mut e: Triplets<T> = (Vec::new(), Vec::new(), Vec::new());
    let (full_rows, empty_rows) = (100_000, 40_000);
    for row in 0..full_rows {
        let cols = (0..20).map(|_| rng.below(140_000) as usize).collect();
        push_row(&mut e, row, cols, &mut rng);
    }
    push_row(
        &mut e,
        full_rows + empty_rows,
        (0..10).map(|j| 7 * j).collect(),
        &mut rng,
    );
    let mats: Vec<Csr<T>> = vec![
        gen::power_law(200_000, 200_003, 16.0, 20_000, 1.5, 31).unwrap(),
        Csr::from_triplets(crowd_rows, 150_000, &t.0, &t.1, &t.2).unwrap(),
        gen::sparse_rows(100_000, 160_001, 0.3, 32, 32).unwrap(),
        Csr::from_triplets(full_rows + empty_rows + 1, 140_000, &e.0, &e.1, &e.2).unwrap(),
    ];
    for (i, a) in mats.iter().enumerate() {
        let st = sparrow::ops::products::RowStats::of(a);
        assert!(st.sliceable(tuning), "matrix {i}: {st:?}");
        let l = slices::build(
            a.nrows(),
            a.row_ptr(),
            a.col_idx(),
            a.values(),
            tuning.slice_groups,
        )
        .unwrap();
        match i {
            0 => assert!(
                st.max_len == 20_000 && l.cut_rows.len() > 100,
                "{}",
                l.cut_rows.len()
            ),
            1 => assert!(
                *l.stage0.last().unwrap() as usize > 4 * l.blocks(),
                "a crowded slice of over {SLICE_STAGE} records takes several stages"
            ),
            2 => assert!(st.empty_rows > 20_000),
            _ => {
                let stages: Vec<i32> = l.stage0.windows(2).map(|w| w[1] - w[0]).collect();
                let mut groups = stages.chunks(slices::SLICE_MEMBERS);
                let empty_group = groups.clone().any(|g| g.iter().all(|&n| n == 0));
                let half = groups.any(|g| g[0] > 0 && g[1..].iter().all(|&n| n == 0));
                assert!(empty_group && half, "stages a block: {stages:?}");
            }
        }
        let da = PreparedCsr::upload(&g, a).unwrap();
        assert!(da.slices.is_some(), "matrix {i}");
        let kernels = GpuPath::Sliced.kernels(T::NAME, 1, &st, true).join(" + ");
        assert_eq!(axpby_twice(&device, a, None, i), kernels);
        forced_spmv_over_nan(&device, a, GpuPath::Sliced, i);
        forced(&device, a, GpuPath::Sliced, 1, false, true);
        if i == 0 {
            refused_at_n2(&device, a, GpuPath::Sliced);
        }
    }
    let banded = gen::banded::<T>(20_000, 64, 3).unwrap();
    assert!(PreparedCsr::upload(&g, &banded).unwrap().slices.is_none());
    refused_spmv(&device, &banded, GpuPath::Sliced, "scattered columns");
}

#[test]
fn small_spmv_column_slices() {
    column_slices();
    // f64 keeps its paths: no layout on upload, and the forced path is refused.
    let g = gpu();
    let a = gen::power_law::<f64>(200_000, 200_003, 16.0, 20_000, 1.5, 31).unwrap();
    let tuning = ProductsTuning::for_arch(g.limits().compute_capability);
    assert!(sparrow::ops::products::RowStats::of(&a).sliceable(tuning));
    assert!(PreparedCsr::upload(&g, &a).unwrap().slices.is_none());
    refused_spmv(&Device::Cuda(g), &a, GpuPath::Sliced, "f32 values only");
}

/// Blocks of the planned SpMV path capped by their row count (`STREAM_MAX_ROWS`, mostly empty
/// rows), whose row bounds take several rounds of loads, in both value types.
fn stream_row_capped_blocks<T: Scalar>() {
    use sparrow::ops::products::formats::work::STREAM_MAX_ROWS;
    let g = gpu();
    let nrows = 5 * STREAM_MAX_ROWS + 77;
    let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
    let mut rng = sparrow::matrix::Rng::new(23);
    for row in (0..nrows).step_by(701) {
        for j in 0..5 + row % 3 {
            r.push(row);
            c.push((row + 13 * j) % 3001);
            v.push(T::from_f64(rng.range_f64(-1.0, 1.0)));
        }
    }
    let a = Csr::<T>::from_triplets(nrows, 3001, &r, &c, &v).unwrap();
    let st = sparrow::ops::products::RowStats::of(&a);
    assert!(st.stream_blocks >= nrows / STREAM_MAX_ROWS, "{st:?}");
    stream_against_the_oracle(&g, &a);
}

#[test]
fn small_spmv_stream_row_capped_blocks() {
    stream_row_capped_blocks::<f32>();
    stream_row_capped_blocks::<f64>();
}

/// The planned blocks of even rows (runs of up to STREAM_ITEMS_EVEN entries): rows up to
/// LONG_ROW entries whose runs fill a block exactly (1024 + 1023 + 1021 = 3068) or leave the
/// next row to the next block, shorter and empty rows, from every alignment, in both value
/// types.
fn stream_even_blocks<T: Scalar>() {
    use sparrow::ops::products::formats::work::STREAM_ITEMS_EVEN;
    use sparrow::ops::products::stats::LONG_ROW;
    let g = gpu();
    let ncols = 4 * LONG_ROW;
    let fill = [LONG_ROW, LONG_ROW - 1, LONG_ROW - 3];
    assert_eq!(fill.iter().sum::<usize>(), STREAM_ITEMS_EVEN);
    let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
    let mut rng = sparrow::matrix::Rng::new(29);
    let mut row = 0usize;
    for rep in 0..60 {
        let mut lens: Vec<usize> = fill.to_vec();
        lens.extend([rep % 5, 0, 300 + rep, LONG_ROW - rep % 7, 17]);
        lens.extend((0..rep % 9).map(|_| rng.below(LONG_ROW as u64 + 1) as usize));
        for len in lens {
            let start = rng.below((ncols - len) as u64 + 1) as usize;
            for j in 0..len {
                r.push(row);
                c.push(start + j);
                v.push(T::from_f64(rng.range_f64(-1.0, 1.0)));
            }
            row += 1;
        }
    }
    let a = Csr::<T>::from_triplets(row, ncols, &r, &c, &v).unwrap();
    let st = sparrow::ops::products::RowStats::of(&a);
    assert!(!st.skewed(), "{st:?}");
    assert_eq!(st.stream_items, STREAM_ITEMS_EVEN);
    let mut full = 0;
    sparrow::ops::products::formats::work::stream_partition(a.row_ptr(), st.stream_items, |b| {
        full += (b[3] - b[2] == STREAM_ITEMS_EVEN as i64) as usize
    });
    assert!(full > 0, "no block holds {STREAM_ITEMS_EVEN} entries");
    stream_against_the_oracle(&g, &a);
}

#[test]
fn small_spmv_stream_even_blocks() {
    stream_even_blocks::<f32>();
    stream_even_blocks::<f64>();
}

/// SpMV's planned blocks at their bounds on skewed rows: rows of exactly STREAM_ITEMS entries
/// (a run) and one more (a one-chunk row), rows over several STREAM_CHUNK chunks (the last
/// chunk to finish adds the partials), empty rows and short rows; repeated calls on the same
/// matrix give the oracle's answer bit for bit each time, so the arrival counters reset and the
/// order is fixed.
#[test]
fn small_spmv_stream_blocks() {
    use sparrow::ops::products::formats::work::{STREAM_CHUNK, STREAM_ITEMS};
    let g = gpu();
    let ncols = 4 * STREAM_CHUNK;
    let lens = [
        STREAM_ITEMS,
        STREAM_ITEMS + 1,
        3 * STREAM_CHUNK + 5,
        0,
        7,
        2 * STREAM_CHUNK,
        1,
        STREAM_CHUNK + 1,
    ];
    let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
    let mut rng = sparrow::matrix::Rng::new(21);
    let mut row = 0usize;
    for rep in 0..300 {
        for &len in &lens {
            let len = if rep % 2 == 1 && len > 10 {
                len % 29
            } else {
                len
            };
            let start = rng.below((ncols - len) as u64 + 1) as usize;
            for j in 0..len {
                r.push(row);
                c.push(start + j);
                v.push(rng.range_f64(-1.0, 1.0));
            }
            row += 1;
        }
        if rep > 3 && r.len() > 4_000_000 {
            break;
        }
    }
    let a = Csr::<f64>::from_triplets(row, ncols, &r, &c, &v).unwrap();
    let st = sparrow::ops::products::RowStats::of(&a);
    assert!(st.stream_blocks > a.nrows() / 10, "{st:?}");
    assert_eq!(st.stream_items, STREAM_ITEMS);
    let x = gen::dense::<f64>(ncols, 1, 1, 5).unwrap().into_data();
    let y0 = gen::dense::<f64>(row, 1, 1, 6).unwrap().into_data();
    let (want, scale) = sparrow::ops::products::oracle::spmv(0.5, &a, &x, -2.0, &y0);
    let da = PreparedCsr::upload(&g, &a).unwrap();
    // Columns below 2^16: the packed blocks, long-row chunks included, run too.
    packed_as_on_the_host(&g, &a, &da);
    let dx = g.upload(&x).unwrap();
    for path in [GpuPath::Stream, GpuPath::Packed] {
        let mut first: Option<Vec<f64>> = None;
        for _ in 0..4 {
            let dy = g.upload(&y0).unwrap();
            Spmv::new()
                .alpha(0.5)
                .beta(-2.0)
                .force_path(path)
                .run_device(&g, &da, &dx, &dy)
                .unwrap();
            let y = g.download(&dy, row).unwrap();
            let cmp = compare(&y, &want, &scale, tolerance::<f64>());
            assert!(cmp.pass, "{path:?} {cmp:?}");
            match &first {
                None => first = Some(y),
                Some(f) => assert!(same_bits(f, &y)),
            }
        }
    }
}
