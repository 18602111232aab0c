//! SpMM and SpMV against the oracle on every GPU path, forced and planned, and the shapes
//! and uploads the launches must refuse.

use rayon::prelude::*;
use sparrow::device::{Args, DeviceDense, LaunchShape};
use sparrow::kernels::SPMM;
use sparrow::matrix::{gen, Csr, Dense};
use sparrow::ops::check::{compare, padding_is_nan, tolerance};
use sparrow::ops::products::oracle as spmm_oracle;
use sparrow::ops::products::plan::ProductsTuning;
use sparrow::ops::products::PreparedCsr;
use sparrow::ops::spmm::{GpuPath, Spmm, SumOrder};
use sparrow::ops::spmv::Spmv;
use sparrow::{Device, Scalar};

use super::{download_f64, gpu};

#[macro_use]
mod shared {
    include!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/shared/products.rs"
    ));
}

products_tests_on!(Device::Cuda(gpu()));

/// Per element of A * B: the f64 sum and the sum of magnitudes, exactly as the oracle forms
/// them, rows in parallel.
pub(crate) fn reference<T: Scalar>(a: &Csr<T>, b: &Dense<T>) -> (Vec<f64>, Vec<f64>) {
    let n = b.ncols();
    let mut sum = vec![0.0; a.nrows() * n];
    let mut mag = vec![0.0; a.nrows() * n];
    if n == 0 {
        return (sum, mag);
    }
    sum.par_chunks_mut(n)
        .zip(mag.par_chunks_mut(n))
        .enumerate()
        .for_each(|(i, (s, m))| {
            for p in a.row_range(i) {
                let av = a.values()[p].to_f64();
                let row = b.row(a.col_idx()[p] as usize);
                for j in 0..n {
                    let t = av * row[j].to_f64();
                    s[j] += t;
                    m[j] += t.abs();
                }
            }
        });
    (sum, mag)
}

fn acceptance_matrices<T: Scalar>() -> Vec<(&'static str, Csr<T>)> {
    vec![
        (
            "powerlaw 1M rows, mean 16, rows up to 100000",
            gen::power_law(1_000_000, 1_000_000, 16.0, 100_000, 1.5, 11).unwrap(),
        ),
        (
            "banded 62451 rows, 64 per row",
            gen::banded(62_451, 64, 12).unwrap(),
        ),
        (
            "90% empty rows, 1M rows",
            gen::sparse_rows(1_000_000, 1_000_000, 0.9, 32, 13).unwrap(),
        ),
    ]
}

fn acceptance<T: Scalar>() {
    let g = gpu();
    let device = Device::Cuda(g.clone());
    let tol = tolerance::<T>();
    let (alpha, al) = (T::from_f64(1.25), 1.25f64);
    for (name, a) in acceptance_matrices::<T>() {
        assert!(
            name.contains("empty")
                || sparrow::ops::products::RowStats::of(&a).empty_rows < a.nrows()
        );
        let da = PreparedCsr::upload(&g, &a).unwrap();
        for n in [1usize, 3, 8, 32, 33, 128, 256] {
            let b = gen::dense::<T>(a.ncols(), n, n, n as u64).unwrap();
            let db = DeviceDense::upload(&g, &b).unwrap();
            let (sum, mag) = reference(&a, &b);
            for beta in [0.0f64, 1.0, -0.5] {
                // Sentinel: NaN everywhere when C is not read; otherwise real values, with NaN
                // padding past the columns either way.
                let mut c = Dense::filled(a.nrows(), n, n + 1, T::from_f64(f64::NAN)).unwrap();
                if beta != 0.0 {
                    let vals = gen::dense::<T>(a.nrows(), n, n + 1, 99).unwrap();
                    c.data_mut()
                        .par_chunks_mut(n + 1)
                        .zip(vals.data().par_chunks(n + 1))
                        .for_each(|(d, v)| d[..n].copy_from_slice(&v[..n]));
                }
                let want: Vec<f64> = (0..sum.len())
                    .map(|k| {
                        al * sum[k]
                            + if beta != 0.0 {
                                beta * c.get(k / n, k % n).to_f64()
                            } else {
                                0.0
                            }
                    })
                    .collect();
                let scale: Vec<f64> = (0..sum.len())
                    .map(|k| {
                        al * mag[k]
                            + if beta != 0.0 {
                                (beta * c.get(k / n, k % n).to_f64()).abs()
                            } else {
                                0.0
                            }
                    })
                    .collect();
                let mut dc = DeviceDense::upload(&g, &c).unwrap();
                let op = Spmm::new().alpha(alpha).beta(T::from_f64(beta));
                let plan = op
                    .plan(&device, &sparrow::ops::products::RowStats::of(&a), n)
                    .unwrap();
                op.run_device(&g, &da, &db, &mut dc).unwrap();
                let out = dc.download(&g).unwrap();
                let got: Vec<f64> = out.to_packed().data().iter().map(|v| v.to_f64()).collect();
                let cmp = compare(&got, &want, &scale, tol);
                assert!(
                    cmp.pass,
                    "spmm {} {name} N={n} beta={beta} [{plan}]: {cmp:?}",
                    T::NAME
                );
                for i in 0..a.nrows() {
                    assert!(
                        out.data()[i * (n + 1) + n..]
                            .first()
                            .is_none_or(|v| v.to_f64().is_nan()),
                        "padding written in row {i}"
                    );
                }
                eprintln!(
                    "ok spmm {} {name} N={n} beta={beta}: max rel {:.2e} [{}]",
                    T::NAME,
                    cmp.max_rel,
                    plan.kernel.unwrap()
                );

                if n == 1 {
                    // The same product through the SpMV op, on vectors.
                    let x = gen::dense::<T>(a.ncols(), 1, 1, 1).unwrap().into_data();
                    assert_eq!(x, b.data());
                    let y0: Vec<T> = (0..a.nrows()).map(|i| c.get(i, 0)).collect();
                    let dx = g.upload(&x).unwrap();
                    let dy = g.upload(&y0).unwrap();
                    Spmv::new()
                        .alpha(alpha)
                        .beta(T::from_f64(beta))
                        .run_device(&g, &da, &dx, &dy)
                        .unwrap();
                    let y = download_f64(&g, &dy, a.nrows());
                    let cmp = compare(&y, &want, &scale, tol);
                    assert!(cmp.pass, "spmv {} {name} beta={beta}: {cmp:?}", T::NAME);
                }
            }
        }
    }
}

#[test]
fn acceptance_f32() {
    acceptance::<f32>();
}

#[test]
fn acceptance_f64() {
    acceptance::<f64>();
}

/// `C = -A B` on `path`, forced, with B and C aligned for 16-byte segments or with odd leading
/// dimensions, long rows split or not, against the oracle; C's padding must stay NaN.
pub(crate) fn forced<T: Scalar>(
    device: &Device,
    a: &Csr<T>,
    path: GpuPath,
    n: usize,
    aligned: bool,
    split: bool,
) {
    let vec = 16 / std::mem::size_of::<T>();
    let (ldb, ldc) = if aligned {
        ((n + 1).next_multiple_of(vec), (n + 2).next_multiple_of(vec))
    } else {
        ((n + 2) | 1, (n + 3) | 1)
    };
    let b = gen::dense::<T>(a.ncols(), n, ldb, 3).unwrap();
    let mut c = Dense::filled(a.nrows(), n, ldc, T::from_f64(f64::NAN)).unwrap();
    let (want, scale) = spmm_oracle::spmm(T::from_f64(-1.0), a, &b, T::ZERO, &c);
    Spmm::new()
        .alpha(T::from_f64(-1.0))
        .force_path(path)
        .split_long_rows(split)
        .run(device, a, &b, &mut c)
        .unwrap();
    let got: Vec<f64> = c.to_packed().data().iter().map(|v| v.to_f64()).collect();
    let cmp = compare(&got, &want, &scale, tolerance::<T>());
    assert!(
        cmp.pass,
        "{path:?} N={n} ld {ldb}/{ldc} split {split} {}: {cmp:?}",
        T::NAME
    );
    assert!(padding_is_nan(&c), "{path:?} N={n} wrote C's padding");
}

/// Columns one pass of `path` covers for `T`.
fn pass_width<T: Scalar>(path: GpuPath) -> usize {
    path.pass_width(std::mem::size_of::<T>())
}

/// Every kernel the policy can pick, forced on matrices with long rows, empty rows and a row
/// count that is not a multiple of any block, at ragged N for the kernel (one column, one
/// short of a full pass, and past one pass), with B and C both aligned for 16-byte segments and
/// both not, long rows split into chunks and (for the row kernels) not.
fn every_path<T: Scalar>() {
    let g = gpu();
    let device = Device::Cuda(g.clone());
    let mats = [
        gen::power_law::<T>(7_919, 5_003, 12.0, 4_000, 1.5, 5).unwrap(),
        gen::sparse_rows::<T>(10_007, 3_001, 0.9, 40, 6).unwrap(),
        gen::banded::<T>(1_001, 3, 7).unwrap(),
    ];
    let tuning = ProductsTuning::for_arch(g.limits().compute_capability);
    for (a, split) in mats.iter().flat_map(|a| [(a, true), (a, false)]) {
        if !split && sparrow::ops::products::RowStats::of(a).long_rows == 0 {
            continue;
        }
        for path in GpuPath::all().into_iter().filter(|p| {
            p.applies(
                1,
                &sparrow::ops::products::RowStats::of(a),
                std::mem::size_of::<T>(),
                tuning,
            )
        }) {
            let w = pass_width::<T>(path);
            let ns = if w == 1 {
                vec![1]
            } else {
                vec![1, (w - 1).max(2), w + 3]
            };
            for n in ns {
                for aligned in [true, false] {
                    forced(&device, a, path, n, aligned, split);
                }
            }
        }
    }
}

/// Dense 32 x 32 diagonal blocks where every third block's first row also reaches 1,500
/// columns ahead: its window is wider than a window launch stages for 8 or more column lanes
/// (`path::window_cap`), so one launch has blocks that stage B and blocks that read it from
/// global memory.
fn mixed_windows<T: Scalar>() -> Csr<T> {
    let n = 97 * 32;
    let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..n {
        let b = r / 32 * 32;
        for c in b..b + 32 {
            rows.push(r);
            cols.push(c);
            vals.push(T::from_f64(((r * 7 + c * 3) % 17) as f64 / 8.0 - 1.0));
        }
        if r % 96 == 0 {
            rows.push(r);
            cols.push((b + 1_500) % n);
            vals.push(T::from_f64(0.5));
        }
    }
    let a = Csr::from_triplets(n, n, &rows, &cols, &vals).unwrap();
    assert!(
        sparrow::ops::products::RowStats::of(&a).window_max
            > sparrow::ops::products::path::window_cap(8)
    );
    a
}

/// Banded rows of `2 * half + 1` with every third row empty and 1,003 rows (not a multiple of
/// a row block): the row blocks' empty slots and the ragged last block (rows of 9: blocks of
/// four rows in both types; rows of 33: f32's tall blocks).
pub(crate) fn banded_with_gaps<T: Scalar>(half: usize) -> Csr<T> {
    let n: usize = 1_003;
    let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
    for r in (0..n).filter(|r| r % 3 != 1) {
        for c in r.saturating_sub(half)..(r + half + 1).min(n) {
            rows.push(r);
            cols.push(c);
            vals.push(T::from_f64(((r * 5 + c * 11) % 13) as f64 / 6.0 - 1.0));
        }
    }
    let a = Csr::from_triplets(n, n, &rows, &cols, &vals).unwrap();
    assert!(sparrow::ops::products::RowStats::of(&a).blockable());
    a
}

/// Every path forced on each structure of the benchmark panel, scaled down: banded, dense
/// 32 x 32 blocks, uniform, power law, rows of thousands beside rows of 4, 90% empty rows, the
/// 5- and 27-point stencils and the FEM-like matrix; blocks that stage their window of B
/// beside blocks that cannot ([`mixed_windows`]); and row blocks with empty rows
/// ([`banded_with_gaps`]).
fn every_path_on_the_panel<T: Scalar>() {
    let g = gpu();
    let device = Device::Cuda(g.clone());
    let mats: Vec<Csr<T>> = vec![
        gen::banded(3_001, 64, 31).unwrap(),
        gen::block_diagonal(97, 32, 32).unwrap(),
        gen::uniform(6_007, 6_007, 16, 33).unwrap(),
        gen::power_law(6_007, 6_007, 16.0, 3_000, 1.5, 34).unwrap(),
        gen::long_rows(6_007, 6_007, 2, 5_000, 4, 35).unwrap(),
        gen::sparse_rows(6_007, 6_007, 0.9, 32, 36).unwrap(),
        gen::stencil_2d(61, 53, 37).unwrap(),
        gen::stencil_3d(17, 38).unwrap(),
        gen::fem_like(4_001, 6_000, 39).unwrap(),
        mixed_windows(),
        banded_with_gaps(4),
        banded_with_gaps(16),
    ];
    assert_eq!(
        sparrow::ops::products::RowStats::of(&mats[10]).block_rows(4),
        Some(4)
    );
    assert_eq!(
        sparrow::ops::products::RowStats::of(&mats[11]).block_rows(4),
        Some(8)
    );
    let tuning = ProductsTuning::for_arch(g.limits().compute_capability);
    for a in &mats {
        let st = sparrow::ops::products::RowStats::of(a);
        for path in GpuPath::all()
            .into_iter()
            .filter(|p| p.applies(1, &st, std::mem::size_of::<T>(), tuning))
        {
            forced(&device, a, path, 1, false, true);
            let w = pass_width::<T>(path);
            if w > 1 {
                forced(&device, a, path, w - 1, true, true);
            }
        }
    }
}

#[test]
fn small_every_path_on_the_panel_f32() {
    every_path_on_the_panel::<f32>();
}

#[test]
fn small_every_path_on_the_panel_f64() {
    every_path_on_the_panel::<f64>();
}

#[test]
fn small_every_path_f32() {
    every_path::<f32>();
}

#[test]
fn small_every_path_f64() {
    every_path::<f64>();
}

/// Statistics handed to the upload must be the matrix's, with a block capacity the SpMV kernel
/// holds; anything else is refused before any work block is planned.
#[test]
fn small_upload_refuses_foreign_statistics() {
    let g = gpu();
    let a = gen::banded::<f32>(300, 5, 1).unwrap();
    let other = gen::banded::<f32>(301, 5, 1).unwrap();
    let err = |r: sparrow::Result<PreparedCsr<f32>>| match r {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted"),
    };
    let e = err(PreparedCsr::upload_with_stats(
        &g,
        &a,
        sparrow::ops::products::RowStats::of(&other),
    ));
    assert!(e.contains("stats") && e.contains("301 rows"), "{e}");
    for items in [
        0,
        sparrow::ops::products::formats::work::STREAM_ITEMS_EVEN + 1,
    ] {
        let mut st = sparrow::ops::products::RowStats::of(&a);
        st.stream_items = items;
        let e = err(PreparedCsr::upload_with_stats(&g, &a, st));
        assert!(e.contains("stream_items"), "{e}");
    }
    let d =
        PreparedCsr::upload_with_stats(&g, &a, sparrow::ops::products::RowStats::of(&a)).unwrap();
    assert_eq!(
        d.stream.as_ref().unwrap().items,
        sparrow::ops::products::RowStats::of(&a).stream_items
    );
    // Statistics that name a pattern of diagonals the matrix does not repeat.
    let mut st = sparrow::ops::products::RowStats::of(&a);
    assert_eq!(st.diagonals, 5);
    st.diagonals = 6;
    let e = err(PreparedCsr::upload_with_stats(&g, &a, st));
    assert!(e.contains("stats") && e.contains("6 diagonals"), "{e}");
    // ... or count another number of rows following it.
    let mut st = sparrow::ops::products::RowStats::of(&a);
    st.diag_rows -= 1;
    let e = err(PreparedCsr::upload_with_stats(&g, &a, st));
    assert!(e.contains("stats") && e.contains("5 diagonals"), "{e}");
    // ... or that say every column lies near its row when one does not.
    let wide =
        Csr::<f32>::from_triplets(40_000, 40_000, &[0, 1], &[1, 39_000], &[1.0, 2.0]).unwrap();
    let mut st = sparrow::ops::products::RowStats::of(&wide);
    assert_eq!(st.reach, 38_999);
    st.reach = 5;
    let e = err(PreparedCsr::upload_with_stats(&g, &wide, st));
    assert!(e.contains("stats") && e.contains("lies farther"), "{e}");
    // Statistics of a matrix of the same size but another layout (one long row, skewed: fewer,
    // smaller work blocks) pass those checks; the planned-block SpMV then runs over the
    // partition the upload built, every block of it, and still gives the oracle's answer.
    let nrows = 3000;
    let even = gen::banded::<f32>(nrows, 5, 2).unwrap();
    let long = (even.nnz() - (nrows - 1)) as i64;
    let mut row_ptr = vec![0i64];
    row_ptr.extend((0..nrows as i64).map(|r| long + r));
    let cols: Vec<i32> = (0..long as i32)
        .chain((1..nrows as i32).map(|r| r % 7))
        .collect();
    let skewed = Csr::<f32>::new(
        nrows,
        row_ptr[1] as usize,
        row_ptr,
        cols,
        vec![1.0; even.nnz()],
    )
    .unwrap();
    let (st_even, st_skewed) = (
        sparrow::ops::products::RowStats::of(&even),
        sparrow::ops::products::RowStats::of(&skewed),
    );
    assert!(st_skewed.skewed() && !st_even.skewed());
    assert!(
        st_skewed.stream_blocks < st_even.stream_blocks,
        "{st_skewed:?}"
    );
    let d = PreparedCsr::upload_with_stats(&g, &even, st_skewed).unwrap();
    assert!(d.stream.as_ref().unwrap().nblocks > st_skewed.stream_blocks);
    let x = gen::dense::<f32>(nrows, 1, 1, 5).unwrap().into_data();
    let (want, scale) =
        sparrow::ops::products::oracle::spmv(1.0, &even, &x, 0.0, &vec![f32::NAN; nrows]);
    let dx = g.upload(&x).unwrap();
    let dy = g.upload(&vec![f32::NAN; nrows]).unwrap();
    Spmv::new()
        .force_path(GpuPath::Stream)
        .run_device(&g, &d, &dx, &dy)
        .unwrap();
    let y = download_f64(&g, &dy, nrows);
    let cmp = compare(&y, &want, &scale, tolerance::<f32>());
    assert!(cmp.pass, "{cmp:?}");
}

#[test]
fn small_empty_inputs() {
    let g = gpu();
    let device = Device::Cuda(g.clone());
    // No entries but rows: C = beta * C must still be written.
    let a = Csr::<f32>::empty(1000, 50).unwrap();
    let b = gen::dense::<f32>(50, 5, 5, 1).unwrap();
    let mut c = gen::dense::<f32>(1000, 5, 5, 2).unwrap();
    let before = c.clone();
    let plan = Spmm::new().beta(-0.5).run(&device, &a, &b, &mut c).unwrap();
    assert!(plan.kernel.is_some());
    for (x, y) in c.data().iter().zip(before.data()) {
        assert_eq!(*x, -0.5 * y);
    }
    // Nothing to compute: no launch, nothing changes, and the plan says so.
    for (m, k, n) in [(0usize, 10usize, 4usize), (10, 10, 0), (0, 0, 0)] {
        let a = Csr::<f64>::empty(m, k).unwrap();
        let b = Dense::filled(k, n, n.max(1), 1.0).unwrap();
        let mut c = Dense::filled(m, n, n.max(1), 7.0).unwrap();
        let plan = Spmm::new().run(&device, &a, &b, &mut c).unwrap();
        assert_eq!(plan.kernel, None);
        assert_eq!(plan.reason, "the output is empty: nothing to launch");
        assert!(c.data().iter().all(|&v| v == 7.0));
    }
}

/// Launches by hand: cluster launches (portable and non-portable widths) give the same result
/// as the plain launch; shapes beyond the limits are refused with the kernel and shape named.
#[test]
fn small_cluster_launch_and_refused_shapes() {
    let g = gpu();
    let a = gen::power_law::<f32>(4_096, 2_000, 10.0, 500, 1.5, 8).unwrap();
    let n = 32usize;
    let b = gen::dense::<f32>(a.ncols(), n, n, 9).unwrap();
    let c0 = Dense::filled(a.nrows(), n, n, f32::NAN).unwrap();
    let (want, scale) = spmm_oracle::spmm(1.0, &a, &b, 0.0, &c0);
    let da = PreparedCsr::upload(&g, &a).unwrap();
    let db = DeviceDense::upload(&g, &b).unwrap();
    let path = GpuPath::RowVec {
        cols: 8,
        ksplit: 4,
        tiles: 1,
        deep: false,
    };
    let name = path.kernel_name("f32");
    let k = g.kernel(&SPMM, &name).unwrap();
    let base = path
        .shape(
            &sparrow::ops::products::RowStats::of(&a),
            4,
            ProductsTuning::for_arch(g.limits().compute_capability),
        )
        .unwrap();
    assert_eq!(base.grid[0], 512);
    for cluster in [None, Some(2), Some(8), Some(16)] {
        if cluster.is_some_and(|w| w > g.limits().max_cluster) {
            continue;
        }
        let dc = DeviceDense::upload(&g, &c0).unwrap();
        let shape = match cluster {
            Some(w) => base.with_cluster(w),
            None => base,
        };
        let mut args = Args::new();
        args.i64(a.nrows() as i64)
            .i32(n as i32)
            .ptr(g.ptr(&da.row_ptr))
            .ptr(0)
            .i64(i64::MAX)
            .ptr(g.ptr(&da.col_idx))
            .ptr(g.ptr(&da.values))
            .ptr(g.ptr(&db.buf))
            .i64(n as i64)
            .ptr(g.ptr(&dc.buf))
            .i64(n as i64)
            .f32(1.0)
            .f32(0.0)
            .i32(3);
        unsafe { g.launch(&k, shape, &mut args) }.unwrap();
        let got: Vec<f64> = dc
            .download(&g)
            .unwrap()
            .data()
            .iter()
            .map(|&v| v as f64)
            .collect();
        let cmp = compare(&got, &want, &scale, 1e-5);
        assert!(cmp.pass, "cluster {cluster:?}: {cmp:?}");
    }
    let mut args = Args::new();
    // SAFETY: the shape is refused before any launch.
    let e = unsafe { g.launch(&k, LaunchShape::linear(4, 2048), &mut args) }
        .unwrap_err()
        .to_string();
    assert!(e.contains(&name) && e.contains("block (2048, 1, 1)"), "{e}");
    // SAFETY: the shape is refused before any launch.
    let e = unsafe { g.launch(&k, LaunchShape::linear(34, 256).with_cluster(17), &mut args) }
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&name) && e.contains("cluster of 17 blocks"),
        "{e}"
    );
    // SAFETY: the shape is refused before any launch.
    let e = unsafe { g.launch(&k, LaunchShape::linear(0, 256), &mut args) }
        .unwrap_err()
        .to_string();
    assert!(e.contains("a zero dimension launches no work"), "{e}");
    g.synchronize().unwrap();
}

/// Rows of exactly LONG_ROW entries (kept whole) and LONG_ROW + 1 (split into chunks), against
/// the oracle for every N class.
#[test]
fn small_long_row_bound() {
    use sparrow::ops::products::stats::LONG_ROW;
    let g = gpu();
    let device = Device::Cuda(g.clone());
    // Columns 3j stay distinct up to 3 (LONG_ROW + 1) < ncols.
    let ncols = 4 * LONG_ROW;
    let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
    let mut rng = sparrow::matrix::Rng::new(9);
    for (row, len) in [
        (0usize, LONG_ROW),
        (1, LONG_ROW + 1),
        (2, 3),
        (3, LONG_ROW - 1),
    ] {
        for j in 0..len {
            r.push(row);
            c.push(j * 3);
            v.push(rng.range_f64(-1.0, 1.0) as f32);
        }
    }
    let a = Csr::from_triplets(4, ncols, &r, &c, &v).unwrap();
    assert_eq!(sparrow::ops::products::RowStats::of(&a).long_rows, 1);
    for n in [1usize, 8, 32, 200] {
        let b = gen::dense::<f32>(ncols, n, n, 4).unwrap();
        let mut cm = Dense::filled(4, n, n, f32::NAN).unwrap();
        let (want, scale) = spmm_oracle::spmm(1.0, &a, &b, 0.0, &cm);
        let plan = Spmm::new().run(&device, &a, &b, &mut cm).unwrap();
        let kernel = plan.kernel.unwrap();
        assert!(
            // SpMV: the planned blocks, packed (4,096 columns).
            kernel.contains(if n == 1 { "spmv_packed" } else { "chunks" }),
            "{kernel}"
        );
        let got: Vec<f64> = cm.data().iter().map(|&x| x as f64).collect();
        let cmp = compare(&got, &want, &scale, 1e-5);
        assert!(cmp.pass, "N={n}: {cmp:?}");
    }
}

/// An upload for one path builds only that path's formats: the paths that read another are
/// refused by name, never run on a missing format, and the built path's answer has the bits of
/// the same path on a full upload.
#[test]
fn small_upload_for_one_path_builds_only_its_formats() {
    use sparrow::ops::products::formats::Formats;
    use sparrow::ops::products::RowStats;
    let g = gpu();
    let a = gen::banded::<f32>(20_000, 9, 3).unwrap();
    let st = RowStats::of(&a);
    let x = gen::dense::<f32>(a.ncols(), 1, 1, 4).unwrap().into_data();
    let dx = g.upload(&x).unwrap();
    let run = |da: &PreparedCsr<f32>, path: GpuPath| -> Result<Vec<f32>, String> {
        let dy = g.upload(&vec![0f32; a.nrows()]).unwrap();
        Spmv::new()
            .force_path(path)
            .run_device(&g, da, &dx, &dy)
            .map_err(|e| e.to_string())?;
        Ok(g.download(&dy, a.nrows()).unwrap())
    };
    let full = PreparedCsr::upload(&g, &a).unwrap();
    let none = PreparedCsr::upload_for(&g, &a, st, Formats::NONE).unwrap();
    assert!(none.stream.is_none() && none.sorted_rows.is_none() && none.packed.is_none());
    assert!(none.diag.is_none() && none.near.is_none() && none.row_blocks.is_none());
    for path in [GpuPath::Stream, GpuPath::Packed, GpuPath::Diag] {
        let e = run(&none, path).expect_err("a path on a format the upload left out");
        assert!(e.contains("path"), "{path:?}: {e}");
    }
    for path in [GpuPath::Stream, GpuPath::Packed, GpuPath::Diag] {
        let one = PreparedCsr::upload_for(&g, &a, st, path.formats()).unwrap();
        assert_eq!(
            run(&one, path).unwrap(),
            run(&full, path).unwrap(),
            "{path:?}"
        );
    }
}

/// Entry order gives each column the same bits whatever N (so whatever path the policy would
/// take at that N), within the oracle's tolerance; the fast order is checked by `acceptance`.
#[test]
fn small_entry_order_sums_do_not_depend_on_n() {
    fn check<T: Scalar>(name: &str, a: &Csr<T>) {
        let device = Device::Cuda(gpu());
        let op = Spmm::<T>::new().order(SumOrder::Entry);
        let wide = gen::dense::<T>(a.ncols(), 64, 64, 7).unwrap();
        let mut c64 = Dense::filled(a.nrows(), 64, 64, T::ZERO).unwrap();
        let plan = op.run(&device, a, &wide, &mut c64).unwrap();
        let (sum, mag) = reference(a, &wide);
        let got: Vec<f64> = c64.data().iter().map(|v| v.to_f64()).collect();
        let cmp = compare(&got, &sum, &mag, tolerance::<T>());
        assert!(cmp.pass, "{name} {} N=64 [{plan}]: {cmp:?}", T::NAME);
        for n in [2usize, 5, 8, 16, 32] {
            let cols: Vec<T> = (0..a.ncols())
                .flat_map(|i| (0..n).map(move |j| (i, j)))
                .map(|(i, j)| wide.get(i, j))
                .collect();
            let b = Dense::from_rows(a.ncols(), n, cols).unwrap();
            let mut c = Dense::filled(a.nrows(), n, n, T::ZERO).unwrap();
            let plan_n = op.run(&device, a, &b, &mut c).unwrap();
            for i in 0..a.nrows() {
                for j in 0..n {
                    assert_eq!(
                        c.get(i, j).to_f64().to_bits(),
                        c64.get(i, j).to_f64().to_bits(),
                        "{name} {} row {i} column {j}: N={n} [{plan_n}] against N=64 [{plan}]",
                        T::NAME
                    );
                }
            }
        }
    }
    for (name, a) in [
        ("banded", gen::banded::<f64>(3_001, 64, 41).unwrap()),
        (
            "uniform",
            gen::uniform::<f64>(3_001, 3_001, 16, 43).unwrap(),
        ),
        (
            "powerlaw",
            gen::power_law::<f64>(3_001, 3_001, 12.0, 900, 1.2, 47).unwrap(),
        ),
    ] {
        check(name, &a);
    }
    check(
        "uniform",
        &gen::uniform::<f32>(3_001, 3_001, 24, 45).unwrap(),
    );
}
