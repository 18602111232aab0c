//! GPU tests (`--features gpu-tests`): they fail when no GPU is usable. Reference kinds: the
//! SpMM/SpMV results are checked against the naive oracle's arithmetic (f64 sums and summed
//! magnitudes per element, rows split over threads only to finish in time); launches that must
//! be refused are checked to be refused with the kernel's name.
#![cfg(feature = "gpu-tests")]

use std::sync::Arc;

use rayon::prelude::*;
use sparrow::device::{Args, DeviceCsr, DeviceDense, DeviceSpec, Gpu, LaunchShape};
use sparrow::kernels::SPMM;
use sparrow::matrix::{gen, Csr, Dense};
use sparrow::ops::check::{compare, padding_is_nan, tolerance};
use sparrow::ops::spmm::{oracle as spmm_oracle, GpuPath, Spmm};
use sparrow::ops::spmv::Spmv;
use sparrow::{Device, Scalar};

/// The GPU, with outputs sentinel-filled before every launch (`Gpu::set_sentinels`).
fn gpu() -> Arc<Gpu> {
    match Device::open(DeviceSpec::Cuda(0)) {
        Ok((Device::Cuda(g), _)) => {
            g.set_sentinels(true);
            g
        }
        Ok(_) => unreachable!(),
        Err(e) => panic!("GPU tests need a GPU: {e}"),
    }
}

/// The first `n` values of a device vector, widened to f64 for `compare`.
fn download_f64<T: Scalar>(g: &Gpu, d: &cudarc::driver::CudaSlice<T>, n: usize) -> Vec<f64> {
    g.download(d, n)
        .unwrap()
        .iter()
        .map(|v| v.to_f64())
        .collect()
}

/// Per element of A * B: the f64 sum and the sum of magnitudes, exactly as the oracle forms
/// them, rows in parallel.
fn reference<T: Scalar>(a: &Csr<T>, b: &Dense<T>) -> (Vec<f64>, Vec<f64>) {
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
        assert!(name.contains("empty") || a.row_stats().empty_rows < a.nrows());
        let da = DeviceCsr::upload(&g, &a).unwrap();
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
                let plan = op.plan(&device, &a.row_stats(), n).unwrap();
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
fn forced<T: Scalar>(
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
    for (a, split) in mats.iter().flat_map(|a| [(a, true), (a, false)]) {
        if !split && a.row_stats().long_rows == 0 {
            continue;
        }
        for path in GpuPath::all()
            .into_iter()
            .filter(|p| p.applies(1, &a.row_stats(), std::mem::size_of::<T>()))
        {
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
/// (`plan::window_cap`), so one launch has blocks that stage B and blocks that read it from
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
    assert!(a.row_stats().window_max > sparrow::ops::spmm::plan::window_cap(8));
    a
}

/// Banded rows of `2 * half + 1` with every third row empty and 1,003 rows (not a multiple of
/// a row block): the row blocks' empty slots and the ragged last block (rows of 9: blocks of
/// four rows in both types; rows of 33: f32's tall blocks).
fn banded_with_gaps<T: Scalar>(half: usize) -> Csr<T> {
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
    assert!(a.row_stats().blockable());
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
    assert_eq!(mats[10].row_stats().block_rows(4), Some(4));
    assert_eq!(mats[11].row_stats().block_rows(4), Some(8));
    for a in &mats {
        let st = a.row_stats();
        for path in GpuPath::all()
            .into_iter()
            .filter(|p| p.applies(1, &st, std::mem::size_of::<T>()))
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
    let err = |r: sparrow::Result<DeviceCsr<f32>>| match r {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted"),
    };
    let e = err(DeviceCsr::upload_with_stats(&g, &a, other.row_stats()));
    assert!(e.contains("stats") && e.contains("301 rows"), "{e}");
    for items in [0, sparrow::matrix::work::STREAM_ITEMS_EVEN + 1] {
        let mut st = a.row_stats();
        st.stream_items = items;
        let e = err(DeviceCsr::upload_with_stats(&g, &a, st));
        assert!(e.contains("stream_items"), "{e}");
    }
    let d = DeviceCsr::upload_with_stats(&g, &a, a.row_stats()).unwrap();
    assert_eq!(d.stream.items, a.row_stats().stream_items);
    // Statistics that name a pattern of diagonals the matrix does not repeat.
    let mut st = a.row_stats();
    assert_eq!(st.diagonals, 5);
    st.diagonals = 6;
    let e = err(DeviceCsr::upload_with_stats(&g, &a, st));
    assert!(e.contains("stats") && e.contains("6 diagonals"), "{e}");
    // ... or count another number of rows following it.
    let mut st = a.row_stats();
    st.diag_rows -= 1;
    let e = err(DeviceCsr::upload_with_stats(&g, &a, st));
    assert!(e.contains("stats") && e.contains("5 diagonals"), "{e}");
    // ... or that say every column lies near its row when one does not.
    let wide =
        Csr::<f32>::from_triplets(40_000, 40_000, &[0, 1], &[1, 39_000], &[1.0, 2.0]).unwrap();
    let mut st = wide.row_stats();
    assert_eq!(st.reach, 38_999);
    st.reach = 5;
    let e = err(DeviceCsr::upload_with_stats(&g, &wide, st));
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
    let (st_even, st_skewed) = (even.row_stats(), skewed.row_stats());
    assert!(st_skewed.skewed() && !st_even.skewed());
    assert!(
        st_skewed.stream_blocks < st_even.stream_blocks,
        "{st_skewed:?}"
    );
    let d = DeviceCsr::upload_with_stats(&g, &even, st_skewed).unwrap();
    assert!(d.stream.nblocks > st_skewed.stream_blocks);
    let x = gen::dense::<f32>(nrows, 1, 1, 5).unwrap().into_data();
    let (want, scale) =
        sparrow::ops::spmv::oracle::spmv(1.0, &even, &x, 0.0, &vec![f32::NAN; nrows]);
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
    let da = DeviceCsr::upload(&g, &a).unwrap();
    let db = DeviceDense::upload(&g, &b).unwrap();
    let path = GpuPath::RowVec {
        cols: 8,
        ksplit: 4,
        tiles: 1,
        deep: false,
    };
    let name = path.kernel_name("f32");
    let k = g.kernel(&SPMM, &name).unwrap();
    let base = path.shape(&a.row_stats(), 4).unwrap();
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
        g.launch(&k, shape, &mut args).unwrap();
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
    let e = g
        .launch(&k, LaunchShape::linear(4, 2048), &mut args)
        .unwrap_err()
        .to_string();
    assert!(e.contains(&name) && e.contains("block (2048, 1, 1)"), "{e}");
    let e = g
        .launch(&k, LaunchShape::linear(34, 256).with_cluster(17), &mut args)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&name) && e.contains("cluster of 17 blocks"),
        "{e}"
    );
    let e = g
        .launch(&k, LaunchShape::linear(0, 256), &mut args)
        .unwrap_err()
        .to_string();
    assert!(e.contains("a zero dimension launches no work"), "{e}");
    g.synchronize().unwrap();
}

/// Rows of exactly LONG_ROW entries (kept whole) and LONG_ROW + 1 (split into chunks), against
/// the oracle for every N class.
#[test]
fn small_long_row_bound() {
    use sparrow::matrix::LONG_ROW;
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
    assert_eq!(a.row_stats().long_rows, 1);
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

/// The packed columns on the GPU equal the host's `pack_columns`, entry for entry, block for
/// block and row for row (rows of long-row chunks zero).
fn packed_as_on_the_host<T: Scalar>(g: &Arc<Gpu>, a: &Csr<T>, da: &DeviceCsr<T>) {
    let mut work = Vec::new();
    sparrow::matrix::work::stream_partition(a.row_ptr(), da.stats.stream_items, |b| {
        work.extend_from_slice(&b)
    });
    let want = sparrow::matrix::work::pack_columns(a.row_ptr(), a.col_idx(), &work).unwrap();
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
    let (want, scale) = sparrow::ops::spmv::oracle::spmv(half, a, &x, m2, &y0);
    let da = DeviceCsr::upload(g, a).unwrap();
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
    use sparrow::matrix::work::PACKED_SPAN;
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
        let st = a.row_stats();
        assert_eq!(st.stream_span, ncols, "{st:?}");
        let x = gen::dense::<f32>(ncols, 1, 1, 5).unwrap().into_data();
        let mut y = vec![f32::NAN; a.nrows()];
        let (want, scale) = sparrow::ops::spmv::oracle::spmv(1.0, &a, &x, 0.0, &y);
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
    assert!(!u.row_stats().blockable());
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
    use sparrow::matrix::diagonals::{consecutive, find, follow_bits, longest_run};
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
        let st = a.row_stats();
        assert!(st.diagonals > 0, "matrix {i}: {st:?}");
        let off = find(a.row_ptr(), a.col_idx()).unwrap();
        let (bits, _) = follow_bits(a.row_ptr(), a.col_idx(), &off);
        let da = DeviceCsr::upload(&g, a).unwrap();
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
            sparrow::ops::spmm::plan::DIAG_THREAD_MAX
        } else {
            sparrow::ops::spmm::plan::DIAG_THREAD_MAX_F64
        };
        let lanes = sparrow::ops::spmm::plan::diag_lanes_for(
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
    assert_eq!(u.row_stats().diagonals, 0);
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
    let (want, scale) = sparrow::ops::spmv::oracle::spmv(half, a, &x, m2, &y0);
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
    let (want, scale) = sparrow::ops::spmv::oracle::spmv(T::from_f64(1.0), a, &x, T::ZERO, &nan);
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
    use sparrow::matrix::near::near_offsets;
    use sparrow::matrix::NEAR_REACH;
    let g = gpu();
    let device = Device::Cuda(g.clone());
    let mats: Vec<Csr<T>> = vec![
        gen::fem_like(20_011, 30_000, 62).unwrap(),
        near_rows(70_001, NEAR_REACH),
    ];
    for (i, a) in mats.iter().enumerate() {
        let st = a.row_stats();
        assert!(st.near(), "matrix {i}: {st:?}");
        assert_eq!(st.reach == NEAR_REACH, i == 1, "matrix {i}");
        let da = DeviceCsr::upload(&g, a).unwrap();
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
    assert_eq!(far.row_stats().reach, NEAR_REACH + 1);
    assert!(DeviceCsr::upload(&g, &far).unwrap().near.is_none());
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
    use sparrow::matrix::slices::{self, SLICE_STAGE};
    let g = gpu();
    let device = Device::Cuda(g.clone());
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
        let st = a.row_stats();
        assert!(st.sliceable(), "matrix {i}: {st:?}");
        let l = slices::build(a.nrows(), a.row_ptr(), a.col_idx(), a.values()).unwrap();
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
        let da = DeviceCsr::upload(&g, a).unwrap();
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
    assert!(DeviceCsr::upload(&g, &banded).unwrap().slices.is_none());
    refused_spmv(&device, &banded, GpuPath::Sliced, "scattered columns");
}

#[test]
fn small_spmv_column_slices() {
    column_slices();
    // f64 keeps its paths: no layout on upload, and the forced path is refused.
    let g = gpu();
    let a = gen::power_law::<f64>(200_000, 200_003, 16.0, 20_000, 1.5, 31).unwrap();
    assert!(a.row_stats().sliceable());
    assert!(DeviceCsr::upload(&g, &a).unwrap().slices.is_none());
    refused_spmv(&Device::Cuda(g), &a, GpuPath::Sliced, "f32 values only");
}

/// Blocks of the planned SpMV path capped by their row count (`STREAM_MAX_ROWS`, mostly empty
/// rows), whose row bounds take several rounds of loads, in both value types.
fn stream_row_capped_blocks<T: Scalar>() {
    use sparrow::matrix::work::STREAM_MAX_ROWS;
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
    let st = a.row_stats();
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
    use sparrow::matrix::work::STREAM_ITEMS_EVEN;
    use sparrow::matrix::LONG_ROW;
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
    let st = a.row_stats();
    assert!(!st.skewed(), "{st:?}");
    assert_eq!(st.stream_items, STREAM_ITEMS_EVEN);
    let mut full = 0;
    sparrow::matrix::work::stream_partition(a.row_ptr(), st.stream_items, |b| {
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
    use sparrow::matrix::work::{STREAM_CHUNK, STREAM_ITEMS};
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
    let st = a.row_stats();
    assert!(st.stream_blocks > a.nrows() / 10, "{st:?}");
    assert_eq!(st.stream_items, STREAM_ITEMS);
    let x = gen::dense::<f64>(ncols, 1, 1, 5).unwrap().into_data();
    let y0 = gen::dense::<f64>(row, 1, 1, 6).unwrap().into_data();
    let (want, scale) = sparrow::ops::spmv::oracle::spmv(0.5, &a, &x, -2.0, &y0);
    let da = DeviceCsr::upload(&g, &a).unwrap();
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

/// The second opening of the device loads kernels from the disk cache instead of compiling.
#[test]
fn small_disk_cache_serves_the_second_load() {
    let dir = std::env::temp_dir().join(format!("sparrow-cache-test-{}", std::process::id()));
    std::env::set_var("SPARROW_CACHE_DIR", &dir);
    let g1 = Gpu::open(0).unwrap();
    g1.kernel(&SPMM, &GpuPath::Stream.kernel_name("f32"))
        .unwrap();
    let st = g1.compile_stats();
    assert_eq!(st.compiled.len(), 1, "{st:?}");
    assert!(std::fs::read_dir(&dir).unwrap().any(|e| e
        .unwrap()
        .path()
        .extension()
        .is_some_and(|x| x == "cubin")));
    let g2 = Gpu::open(0).unwrap();
    g2.kernel(&SPMM, &GpuPath::Stream.kernel_name("f32"))
        .unwrap();
    let st = g2.compile_stats();
    assert_eq!((st.compiled.len(), st.from_disk.len()), (0, 1), "{st:?}");
    eprintln!(
        "compile {:.3} s, disk load {:.3} s",
        g1.compile_stats().compiled[0].1,
        st.from_disk[0].1
    );
    std::fs::remove_dir_all(&dir).ok();
}

// ---- Segmented top-k -------------------------------------------------------------------
// Reference: the naive oracle (sort per segment), exactly for the deterministic tie-breaks and
// as a multiset for the fast one; the deterministic outputs must also equal the CPU backend's
// byte for byte and repeat byte for byte. Outputs are sentinel-filled (0xA5) by the backend
// before every launch, so an unwritten slot fails the comparison; the repeat runs without the
// fill, as calls do by default, so no result may depend on it.

mod topk {
    use half::{bf16, f16};
    use sparrow::matrix::Rng;
    use sparrow::ops::topk::check::{same_bytes, verify};
    use sparrow::ops::topk::data::{keys, Pattern};
    use sparrow::ops::topk::{GpuPath, IndexType, Key, Segments, TieBreak, TopK};
    use sparrow::ops::{Backend, Plan};
    use sparrow::Device;

    /// The plan's choice and every GPU path forced.
    const PATHS: [Option<GpuPath>; 4] = [
        None,
        Some(GpuPath::Tiled),
        Some(GpuPath::Filter),
        Some(GpuPath::Split { chunk: 8192 }),
    ];

    const TIES: [TieBreak; 3] = [
        TieBreak::Fast,
        TieBreak::SmallerIndex,
        TieBreak::LargerIndex,
    ];

    fn dev() -> Device {
        Device::Cuda(super::gpu())
    }

    /// The k largest (or smallest) keys of every segment.
    fn top_k(k: usize, largest: bool) -> TopK {
        if largest {
            TopK::largest(k)
        } else {
            TopK::smallest(k)
        }
    }

    /// Whether `d` stages the filter's keys by bulk copies (sm_90 and later).
    fn sm90(d: &Device) -> bool {
        match d {
            Device::Cuda(g) => g.limits().compute_capability.0 >= 9,
            Device::Cpu => false,
        }
    }

    /// Runs the generic check `f` on device `d` for every key type the API takes.
    macro_rules! every_key_type {
        ($f:ident, $d:expr) => {
            $f::<f32>($d);
            $f::<f64>($d);
            $f::<f16>($d);
            $f::<bf16>($d);
            $f::<i8>($d);
            $f::<u8>($d);
            $f::<i16>($d);
            $f::<u16>($d);
            $f::<i32>($d);
            $f::<u32>($d);
            $f::<i64>($d);
            $f::<u64>($d);
        };
    }

    /// Runs `req` on the GPU and checks its output against the oracle (and, for the
    /// deterministic tie-breaks, against a second GPU run and the CPU); returns the GPU's plan,
    /// so a test asserts the path it meant to reach from the checked run itself.
    fn check<K: Key, V: Key>(
        d: &Device,
        req: &TopK,
        k: &[K],
        segs: Segments,
        values: Option<&[V]>,
    ) -> Plan {
        let (out, plan) = req.run(d, k, segs, values).unwrap();
        assert_eq!(plan.backend, Backend::Cuda);
        let layout = req.layout(k.len(), segs, values.map(|v| v.len())).unwrap();
        if let Err(e) = verify(req, k, &layout, values, &out) {
            panic!("{} {req:?} [{plan}]: {e}", K::NAME);
        }
        if req.tie() != TieBreak::Fast {
            let g = d.gpu().unwrap();
            g.set_sentinels(false);
            let again = req.run(d, k, segs, values);
            g.set_sentinels(true);
            let (again, _) = again.unwrap();
            assert!(
                same_bytes(&again, &out),
                "{} {req:?}: two GPU runs differ",
                K::NAME
            );
            let (cpu, _) = req.run(&Device::Cpu, k, segs, values).unwrap();
            assert!(
                same_bytes(&cpu, &out),
                "{} {req:?}: GPU and CPU differ",
                K::NAME
            );
        }
        plan
    }

    /// The kernels a GPU plan names ("" when it names none).
    fn kernel_of(plan: &Plan) -> &str {
        plan.kernel.as_deref().unwrap_or("")
    }

    fn offsets(rng: &mut Rng, nseg: usize, max_len: u64) -> Vec<i64> {
        let mut o = vec![0i64];
        for _ in 0..nseg {
            let l = if rng.below(6) == 0 {
                0
            } else {
                rng.below(max_len + 1) as i64
            };
            o.push(o.last().unwrap() + l);
        }
        o
    }

    fn every_pattern<K: Key>(d: &Device) {
        let mut rng = Rng::new(K::BITS as u64 + 3);
        for (pi, pattern) in Pattern::ALL.into_iter().enumerate() {
            let o = offsets(&mut rng, 12, 9000);
            let n = *o.last().unwrap() as usize;
            let k: Vec<K> = keys(n, pattern, pi as u64);
            let vals: Vec<u16> = keys(n, Pattern::RandomBits, 99);
            for largest in [true, false] {
                for tie in TIES {
                    for sorted in [false, true] {
                        for (kk, path) in [
                            (1usize, None),
                            (37, Some(GpuPath::Tiled)),
                            (37, Some(GpuPath::Filter)),
                            (4096, None),
                            (4096, Some(GpuPath::Tiled)),
                            (4096, Some(GpuPath::Filter)),
                            (37, Some(GpuPath::Split { chunk: 4096 })),
                            (4096, Some(GpuPath::Split { chunk: 4096 })),
                        ] {
                            let base = top_k(kk, largest);
                            let req = base.tie_break(tie).sorted(sorted).force_path(path);
                            check::<K, K>(d, &req, &k, Segments::Offsets(&o), None);
                            check(
                                d,
                                &req.index_type(IndexType::I32),
                                &k,
                                Segments::Offsets(&o),
                                Some(&vals),
                            );
                        }
                    }
                }
            }
        }
    }

    /// Segments of at most a warp's 1,024 keys on the warp path (and the plan picks it).
    fn short_segments<K: Key>(d: &Device) {
        let mut rng = Rng::new(K::BITS as u64 + 5);
        for (pi, pattern) in Pattern::ALL.into_iter().enumerate() {
            let mut o = offsets(&mut rng, 40, 1024);
            // Full segments take the warp body without tail tests (float keys).
            for _ in 0..4 {
                o.push(o.last().unwrap() + 1024);
            }
            let n = *o.last().unwrap() as usize;
            let k: Vec<K> = keys(n, pattern, pi as u64 + 50);
            let vals: Vec<u64> = keys(n, Pattern::RandomBits, 98);
            for largest in [true, false] {
                for tie in TIES {
                    for (kk, sorted) in [
                        (1usize, false),
                        (16, false),
                        (32, true),
                        (37, true),
                        (600, false),
                        (1024, true),
                    ] {
                        let base = top_k(kk, largest);
                        let req = base.tie_break(tie).sorted(sorted);
                        let plan = check::<K, K>(d, &req, &k, Segments::Offsets(&o), None);
                        assert!(plan.reason.starts_with("warp"), "{plan}");
                        check(
                            d,
                            &req.index_type(IndexType::I32),
                            &k,
                            Segments::Offsets(&o),
                            Some(&vals),
                        );
                    }
                }
            }
        }
    }

    /// The warp prefilter's candidate counts at their bounds. A segment holds `n` copies of the
    /// extreme key, five of them in distinct lanes, and the opposite extreme elsewhere, so with
    /// k up to 5 the threshold is the extreme key and the candidates are exactly its copies: up
    /// to 32 take the one-per-lane bitonic select, 33 to 128 the bitwise select among the
    /// candidates, and 129 the cut at the threshold. Every tie-break picks among the copies.
    fn warp_candidate_bounds<K: Key>(d: &Device) {
        for largest in [true, false] {
            let (top, rest) = if largest {
                (K::highest(), K::lowest())
            } else {
                (K::lowest(), K::highest())
            };
            let mut k: Vec<K> = Vec::new();
            let mut o = vec![0i64];
            for len in [1024usize, 1000, 300] {
                for n in [1usize, 31, 32, 33, 127, 128, 129] {
                    let mut seg = vec![rest; len];
                    // 37 is prime to every length here: n distinct positions, the first five
                    // (below 300, so unwrapped) in distinct lanes: 37 j mod 32 = 5 j mod 32.
                    for j in 0..n {
                        seg[(j * 37 + 5) % len] = top;
                    }
                    k.extend(seg);
                    o.push(k.len() as i64);
                }
            }
            for kk in [1usize, 5] {
                for tie in TIES {
                    for sorted in [false, true] {
                        let base = top_k(kk, largest);
                        let req = base.tie_break(tie).sorted(sorted);
                        let plan = check::<K, K>(d, &req, &k, Segments::Offsets(&o), None);
                        assert!(plan.reason.starts_with("warp"), "{plan}");
                    }
                }
            }
        }
    }

    #[test]
    fn small_topk_warp_candidate_bounds() {
        let d = dev();
        every_key_type!(warp_candidate_bounds, &d);
    }

    #[test]
    fn small_topk_warp_path() {
        let d = dev();
        every_key_type!(short_segments, &d);
    }

    #[test]
    fn small_topk_every_key_type_and_pattern() {
        let d = dev();
        every_key_type!(every_pattern, &d);
    }

    /// The register on-chip kernels at each of their sizes (8, 16 and 32 keys per thread) and
    /// just past the largest (the shared-memory kernel): segments from 1,025 keys to the bound,
    /// one exactly at it, an empty one and one shorter than k; aligned and unaligned starts;
    /// every pattern, both directions, every tie-break, k that stops early, that keeps every
    /// tie, and that takes whole segments.
    fn register_block<K: Key>(d: &Device) {
        use sparrow::ops::topk::plan::{rblock_items, RBLOCK_MAX};
        let mut rng = Rng::new(K::BITS as u64 + 11);
        for max_len in [2048usize, 4096, RBLOCK_MAX, RBLOCK_MAX + 1] {
            for (pi, pattern) in Pattern::ALL.into_iter().enumerate() {
                let mut o = vec![0i64, max_len as i64, max_len as i64, max_len as i64 + 5];
                for _ in 0..5 {
                    let l = 1025 + rng.below((max_len - 1025) as u64 + 1) as i64;
                    o.push(o.last().unwrap() + l);
                }
                let n = *o.last().unwrap() as usize;
                let k: Vec<K> = keys(n, pattern, pi as u64 + 70);
                for largest in [true, false] {
                    for tie in TIES {
                        for kk in [1usize, 37, 256, 1025] {
                            let base = top_k(kk, largest);
                            let req = base.tie_break(tie);
                            let plan = check::<K, K>(d, &req, &k, Segments::Offsets(&o), None);
                            let kernel = kernel_of(&plan);
                            match rblock_items(max_len) {
                                Some(items) => assert!(
                                    kernel.contains("rblock")
                                        && kernel.ends_with(&format!("_v{items}")),
                                    "{max_len}: {plan}"
                                ),
                                None => assert!(
                                    kernel.contains("{block,") && !kernel.contains("rblock"),
                                    "{max_len}: {plan}"
                                ),
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn small_topk_register_block_path() {
        let d = dev();
        register_block::<f32>(&d);
        register_block::<f64>(&d);
        register_block::<bf16>(&d);
        register_block::<u8>(&d);
        register_block::<i64>(&d);
    }

    /// Small enough for compute-sanitizer: every kernel (sort and gather included) on segments
    /// that cross tile boundaries, with values and padding.
    #[test]
    fn sanitize_topk_every_kernel() {
        let d = dev();
        let o = [0i64, 5000, 5000, 5003, 13_000];
        let k: Vec<f32> = keys(13_000, Pattern::HeavyTies, 1);
        let v: Vec<u32> = keys(13_000, Pattern::RandomBits, 2);
        for sorted in [false, true] {
            for tie in TIES {
                for path in PATHS {
                    let req = TopK::largest(700)
                        .sorted(sorted)
                        .tie_break(tie)
                        .force_path(path);
                    check(&d, &req, &k, Segments::Offsets(&o), Some(&v));
                }
                // The on-chip path: registers (segments up to 8,192; uniform keys stop early
                // with every tie taken, heavy ties rank a tie window) and shared memory (a
                // segment of 9,000).
                let uniform13k: Vec<f32> = keys(13_000, Pattern::Uniform, 4);
                let long = [0i64, 9000, 9003, 13_000];
                for (ks, segs) in [(&k, &o[..]), (&uniform13k, &o[..]), (&k, &long[..])] {
                    let req = TopK::largest(700)
                        .sorted(sorted)
                        .tie_break(tie)
                        .force_path(Some(GpuPath::OnChip));
                    check(&d, &req, ks, Segments::Offsets(segs), Some(&v));
                }
                // k = 20 takes the warp prefilter: uniform keys select among few
                // candidates, heavy ties overflow them and fall back.
                let short = [0i64, 1000, 1000, 1003, 2027, 2100];
                let uniform: Vec<f32> = keys(2100, Pattern::Uniform, 3);
                for (kk, ks) in [(300, &k), (20, &k), (20, &uniform)] {
                    let req = TopK::largest(kk)
                        .sorted(sorted)
                        .tie_break(tie)
                        .force_path(Some(GpuPath::Warp));
                    check(
                        &d,
                        &req,
                        ks,
                        Segments::Offsets(&short),
                        Some(&v[..ks.len()]),
                    );
                }
            }
        }
    }

    #[test]
    fn small_topk_value_widths_and_per_segment_k() {
        let d = dev();
        let mut rng = Rng::new(4);
        let o = offsets(&mut rng, 200, 4096);
        let n = *o.last().unwrap() as usize;
        let k: Vec<f32> = keys(n, Pattern::RandomBits, 5);
        // Every value width through every path: on-chip, tiled and filter, unsorted and sorted
        // (the sorted rows go through the gather kernels).
        for sorted in [false, true] {
            for path in PATHS {
                let req = TopK::largest(300)
                    .tie_break(TieBreak::SmallerIndex)
                    .sorted(sorted)
                    .force_path(path);
                let segs = Segments::Offsets(&o);
                check(
                    &d,
                    &req,
                    &k,
                    segs,
                    Some(&keys::<u8>(n, Pattern::RandomBits, 1)),
                );
                check(
                    &d,
                    &req,
                    &k,
                    segs,
                    Some(&keys::<i16>(n, Pattern::RandomBits, 2)),
                );
                check(
                    &d,
                    &req,
                    &k,
                    segs,
                    Some(&keys::<f32>(n, Pattern::RandomBits, 3)),
                );
                check(
                    &d,
                    &req,
                    &k,
                    segs,
                    Some(&keys::<f64>(n, Pattern::RandomBits, 4)),
                );
            }
        }
        let ks: Vec<i64> = (0..200).map(|_| rng.below(5000) as i64).collect();
        for tie in TIES {
            for path in PATHS {
                let req = TopK::per_segment(ks.clone(), false)
                    .sorted(true)
                    .tie_break(tie)
                    .force_path(path);
                check::<f32, f32>(&d, &req, &k, Segments::Offsets(&o), None);
            }
        }
        let many: Vec<u32> = keys(100_000 * 8, Pattern::RandomBits, 6);
        for path in PATHS {
            let req = TopK::largest(3)
                .tie_break(TieBreak::LargerIndex)
                .force_path(path);
            check::<u32, u32>(
                &d,
                &req,
                &many,
                Segments::Fixed {
                    count: 100_000,
                    len: 8,
                },
                None,
            );
        }
        check::<u32, u32>(
            &d,
            &TopK::largest(4),
            &[],
            Segments::Offsets(&[0, 0, 0]),
            None,
        );
        check::<u32, u32>(
            &d,
            &TopK::largest(0),
            &[1, 2, 3],
            Segments::Offsets(&[0, 3]),
            None,
        );
    }

    /// The path bounds: segments of exactly the on-chip limit and one key more, rows of exactly
    /// the shared-memory sort width and one more (sorted on the host).
    #[test]
    fn small_topk_path_bounds() {
        use sparrow::ops::topk::plan::{block_max, SORT_MAX};
        let d = dev();
        let bmax = block_max(super::gpu().limits());
        for len in [bmax, bmax + 1] {
            let k: Vec<f32> = keys(2 * len, Pattern::HeavyTies, len as u64);
            let req = TopK::largest(100).tie_break(TieBreak::LargerIndex);
            let (_, plan) = req
                .run_keys(&d, &k, Segments::Fixed { count: 2, len })
                .unwrap();
            assert_eq!(
                plan.kernel.unwrap().contains("block"),
                len == bmax,
                "len {len}"
            );
            check::<f32, f32>(&d, &req, &k, Segments::Fixed { count: 2, len }, None);
        }
        let k: Vec<i32> = keys(3 * 10_000, Pattern::RandomBits, 3);
        for width in [SORT_MAX, SORT_MAX + 1] {
            let req = TopK::smallest(width)
                .sorted(true)
                .tie_break(TieBreak::SmallerIndex);
            let (_, plan) = req
                .run_keys(
                    &d,
                    &k,
                    Segments::Fixed {
                        count: 3,
                        len: 10_000,
                    },
                )
                .unwrap();
            assert_eq!(
                plan.reason.contains("on the host"),
                width > SORT_MAX,
                "width {width}"
            );
            check::<i32, i32>(
                &d,
                &req,
                &k,
                Segments::Fixed {
                    count: 3,
                    len: 10_000,
                },
                None,
            );
        }
    }

    /// The filter path where the plan picks it (long segments, few winners) on friendly data,
    /// and where its candidates cannot hold the answer (all keys equal, two values, ascending
    /// keys that crowd into the last tiles), so segments fall back to selection from memory.
    #[test]
    fn topk_filter_path_and_its_fallback() {
        let d = dev();
        for (len, count, kk) in [
            (131_072usize, 3usize, 2048usize),
            (262_144, 4, 64),
            (2_097_152, 2, 1024),
        ] {
            for pattern in [
                Pattern::Uniform,
                Pattern::AllEqual,
                Pattern::TwoValues,
                Pattern::HeavyTies,
                Pattern::Ascending,
                Pattern::Descending,
                Pattern::SharedHighBits,
            ] {
                let k: Vec<f32> = keys(len * count + 5, pattern, len as u64);
                let o: Vec<i64> = (0..=count).map(|i| 5 + (i * len) as i64).collect();
                let v: Vec<u32> = keys(k.len(), Pattern::RandomBits, 1);
                for tie in TIES {
                    let req = TopK::largest(kk).tie_break(tie);
                    let plan = check::<f32, f32>(&d, &req, &k, Segments::Offsets(&o), None);
                    assert!(plan.reason.starts_with("filter"), "{plan}");
                }
                check(
                    &d,
                    &TopK::smallest(kk)
                        .sorted(true)
                        .tie_break(TieBreak::LargerIndex)
                        .index_type(IndexType::I32),
                    &k,
                    Segments::Offsets(&o),
                    Some(&v),
                );
            }
        }
        // A sample that misleads: the keys at the sampled positions (runs of 32 at a stride
        // of len / 128) are 1 and every other key 0, so the threshold lets through only the
        // 4,096 sampled keys, fewer than k: the block selects from memory.
        let len = 262_144usize;
        let mut k = vec![0f32; 2 * len];
        for s in 0..2 {
            for j in 0..4096 {
                k[s * len + (j >> 5) * (len / 128) + (j & 31)] = 1.0;
            }
        }
        for tie in TIES {
            let req = TopK::largest(5000).tie_break(tie);
            let segs = Segments::Fixed { count: 2, len };
            let plan = check::<f32, f32>(&d, &req, &k, segs, None);
            assert!(plan.reason.starts_with("filter"), "{plan}");
        }
        // The inverse: sampled keys 1, every other key 2, so the threshold lets through far
        // more candidates than fit on chip: the block selects from memory.
        let mut k = vec![2f32; 2 * len];
        for s in 0..2 {
            for j in 0..4096 {
                k[s * len + (j >> 5) * (len / 128) + (j & 31)] = 1.0;
            }
        }
        for tie in TIES {
            let req = TopK::largest(100).tie_break(tie);
            check::<f32, f32>(&d, &req, &k, Segments::Fixed { count: 2, len }, None);
        }
        // Crowded tiles: every key 0 but runs of 130 keys 2 (never sampled) in `m` tiles of a
        // 2M-key segment, more than their 64 slots: up to 32 such tiles (OVF_MAX in topk.cu)
        // are filtered again from memory, more send the segment to the in-memory selection.
        let len = 2_097_152usize;
        for m in [20usize, 32, 33, 40] {
            let mut k = vec![0f32; len];
            for t in 0..m {
                let a = (3 + 7 * t) * 4096 + 1000;
                for x in &mut k[a..a + 130] {
                    *x = 2.0;
                }
            }
            let req = TopK::largest(1024);
            let segs = Segments::Fixed { count: 1, len };
            let (_, plan) = req.run_keys(&d, &k, segs).unwrap();
            assert!(plan.reason.contains("64 slots per tile"), "{plan}");
            for tie in TIES {
                check::<f32, f32>(&d, &req.clone().tie_break(tie), &k, segs, None);
            }
        }
        // bf16 keys uniform in [0, 1): few distinct values near 1, so the k-th key has
        // hundreds of ties that complete the candidates.
        let len = 262_144usize;
        let k: Vec<bf16> = keys::<f32>(2 * len, Pattern::Uniform, 9)
            .into_iter()
            .map(|x| bf16::from_f32(x - 1.0))
            .collect();
        for tie in TIES {
            let req = TopK::largest(2048).tie_break(tie);
            let segs = Segments::Fixed { count: 2, len };
            let plan = check::<bf16, bf16>(&d, &req, &k, segs, None);
            assert!(plan.reason.starts_with("filter"), "{plan}");
        }
        // Per-segment k, one of them above its segment's length, and an empty segment.
        let o = [0i64, 100_000, 100_000, 150_000, 400_000];
        let k: Vec<i64> = keys(400_000, Pattern::RandomBits, 3);
        let req = TopK::per_segment(vec![10, 5, 60_000, 3000], true)
            .tie_break(TieBreak::SmallerIndex)
            .force_path(Some(GpuPath::Filter));
        check::<i64, i64>(&d, &req, &k, Segments::Offsets(&o), None);
    }

    /// Small enough for compute-sanitizer: the filter path with candidates on chip and with
    /// the fallback, with values.
    #[test]
    fn sanitize_topk_filter() {
        let d = dev();
        let o = [0i64, 20_000, 20_003, 45_000];
        let v: Vec<u16> = keys(45_000, Pattern::RandomBits, 2);
        // Uniform: candidates on chip; two values and all equal: the threshold's ties
        // complete them; ascending: the last tiles overflow and are filtered again.
        for pattern in [
            Pattern::Uniform,
            Pattern::TwoValues,
            Pattern::AllEqual,
            Pattern::Ascending,
        ] {
            let k: Vec<f32> = keys(45_000, pattern, 1);
            for tie in TIES {
                for path in [GpuPath::Filter, GpuPath::Split { chunk: 4096 }] {
                    let req = TopK::largest(50).tie_break(tie).force_path(Some(path));
                    check(&d, &req, &k, Segments::Offsets(&o), Some(&v));
                }
            }
        }
        // Keys of 16 bits or fewer: the filter always counts the threshold's ties, since a
        // segment longer than the key's value range repeats its threshold whatever the sample
        // saw.
        filter_narrow_keys::<bf16>(&d, &o, &v);
        filter_narrow_keys::<i16>(&d, &o, &v);
        filter_narrow_keys::<u8>(&d, &o, &v);
    }

    /// The GPU's SMs, which set the segment counts at which the candidate kernel's builds change.
    fn sms(d: &Device) -> usize {
        match d {
            Device::Cuda(g) => g.limits().sms as usize,
            Device::Cpu => unreachable!("a GPU test"),
        }
    }

    /// The candidate kernel's three builds: with small candidate buffers an SM holds two
    /// `cand_rad` blocks and three `cand` ones (four for 16-bit keys), so one segment more than twice the SMs takes
    /// `cand` (fewer waves), twice the SMs `cand_rad`, and as many as the SMs the 512-thread
    /// `cand_wide` (and `thresh_wide`); friendly keys, ties completed from the
    /// threshold's, and ascending keys whose last tiles overflow, for the given tie-breaks and
    /// both directions, with 8-byte values.
    fn cand_builds<K: Key>(d: &Device, len: usize, kk: usize, pats: &[Pattern], ties: &[TieBreak]) {
        let sms = sms(d);
        // 64-bit keys take 12 bytes and two blocks per SM in both builds: never the compact one.
        let many = if K::BITS == 64 {
            ",cand_rad}"
        } else {
            ",cand}"
        };
        // Past two blocks per SM, at most two, at most one (the 512-thread builds).
        for (count, kernel) in [
            (2 * sms + 1, many),
            (2 * sms, ",cand_rad}"),
            (sms, ",cand_wide}"),
        ] {
            for &pattern in pats {
                let k: Vec<K> = keys(len * count, pattern, len as u64);
                let v: Vec<u64> = keys(k.len(), Pattern::RandomBits, 3);
                let segs = Segments::Fixed { count, len };
                for &tie in ties {
                    for largest in [true, false] {
                        let req = top_k(kk, largest)
                            .tie_break(tie)
                            .force_path(Some(GpuPath::Filter));
                        let plan = check(d, &req, &k, segs, Some(&v));
                        let name = kernel_of(&plan);
                        assert!(
                            name.contains(kernel),
                            "{} {count} segments: {plan}",
                            K::NAME
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn topk_candidate_kernel_builds() {
        let pats = [
            Pattern::Uniform,
            Pattern::TwoValues,
            Pattern::HeavyTies,
            Pattern::Ascending,
        ];
        // 32-bit keys, 8- and 16-bit ones (the compact build spills, the filter counts the
        // threshold's ties), 64-bit ones (the radix build at every count, reading keys back
        // from memory).
        // The narrower and wider keys on fewer cases: twice the SMs' worth of segments each.
        let d = dev();
        let few = [Pattern::Uniform, Pattern::TwoValues];
        let ties = [TieBreak::Fast, TieBreak::LargerIndex];
        cand_builds::<f32>(&d, 40_000, 300, &pats, &TIES);
        cand_builds::<u8>(&d, 20_000, 300, &few, &ties);
        cand_builds::<bf16>(&d, 20_000, 300, &few, &ties);
        cand_builds::<f64>(&d, 20_000, 300, &few, &ties);
    }

    /// The compact build on segments of 18 tiles: its gather gives each group of 16 lanes a
    /// tile at a time, 16 groups in a 256-thread block, so groups 0 and 1 take a second tile
    /// (the 512-thread build's 32 groups take more on the 64-tile segments of
    /// `topk_filter_path_and_its_fallback`).
    #[test]
    fn topk_candidate_kernel_tiles_past_its_lane_groups() {
        let d = dev();
        let count = 2 * sms(&d) + 1;
        fn run<K: Key>(d: &Device, count: usize, len: usize) {
            for pattern in [Pattern::Uniform, Pattern::TwoValues] {
                let k: Vec<K> = keys(len * count, pattern, len as u64);
                let segs = Segments::Fixed { count, len };
                for tie in [TieBreak::Fast, TieBreak::SmallerIndex] {
                    let req = TopK::largest(300)
                        .tie_break(tie)
                        .force_path(Some(GpuPath::Filter));
                    let plan = check::<K, K>(d, &req, &k, segs, None);
                    let name = kernel_of(&plan);
                    assert!(name.contains(",cand}"), "{} {plan}", K::NAME);
                }
            }
        }
        // 18 tiles of 4,096 f32 keys and of 8,192 bf16 keys.
        run::<f32>(&d, count, 17 * 4096 + 100);
        run::<bf16>(&d, count, 17 * 8192 + 100);
    }

    /// The compact build of 16-bit keys keeps each candidate's radix and position, not its
    /// key, and recovers the key from the radix; a radix that stands for several keys (every
    /// NaN, both zeros) is read back from memory. Float keys: negative keys with NaNs of both
    /// signs and random payloads and zeros of both signs among them, so the largest 600 of
    /// each segment are its NaNs (about 310) and then zeros, and the smallest 600 the most
    /// negative keys. Integer keys (radixes by sign flip or as they are): random bits. Ties
    /// broken fast and by smaller index, so the check sees every kept key's bits at its index.
    #[test]
    fn topk_compact_candidates_recover_keys() {
        let d = dev();
        let count = 2 * sms(&d) + 1;
        // inf: the bits of +infinity of a float key type; None for integers.
        fn run<K: Key>(d: &Device, count: usize, inf: Option<u64>) {
            let len = 20_000;
            let mut rng = Rng::new(11);
            let k: Vec<K> = keys::<K>(len * count, Pattern::Uniform, 5)
                .into_iter()
                .map(|x| {
                    let Some(inf) = inf else { return x };
                    let r = rng.next_u64();
                    let sign = (r >> 32) & 0x8000;
                    K::from_bits(match r % 64 {
                        0 => sign | inf | ((r >> 8) & (0x7fff & !inf)).max(1),
                        1 | 2 => sign,
                        _ => x.to_bits() | 0x8000,
                    })
                })
                .collect();
            let segs = Segments::Fixed { count, len };
            for largest in [true, false] {
                for tie in [TieBreak::Fast, TieBreak::SmallerIndex] {
                    let req = top_k(600, largest)
                        .tie_break(tie)
                        .force_path(Some(GpuPath::Filter));
                    let plan = check::<K, K>(d, &req, &k, segs, None);
                    let name = kernel_of(&plan);
                    assert!(name.contains(",cand}"), "{} {plan}", K::NAME);
                }
            }
        }
        run::<bf16>(&d, count, Some(0x7f80));
        run::<f16>(&d, count, Some(0x7c00));
        run::<i16>(&d, count, None);
        run::<u16>(&d, count, None);
    }

    /// The staged filter's placement in any order (fast ties, unsorted rows: warps reserve
    /// their places by a shared-memory atomic, the producer warp writes each tile's counts and
    /// moves its listed equal keys into their slots): the threshold's equal keys listed and
    /// slotted (about 64, 200 and 400-500 a tile), and more than the list's 512 a tile although
    /// they would fit the slots (about 700 of 1,024: flagged, fetched from memory by the
    /// candidate kernel), beside deterministic ties and sorted rows (position-ordered placement) on the
    /// same keys; keys of 16 bits and fewer (the reserving placement, equal keys in slots) and
    /// f32 (placed after a barrier, equal keys counted only); both directions. Uniform keys with
    /// a share of them set to the top (or bottom) key.
    #[test]
    fn topk_staged_filter_lists_equal_keys() {
        let d = dev();
        if !sm90(&d) {
            return;
        }
        fn run<K: Key>(d: &Device) {
            let (count, len) = (3usize, 131_072usize);
            for largest in [true, false] {
                for share in [12u64, 20, 40, 128] {
                    let mut k: Vec<K> = keys(len * count, Pattern::Uniform, share);
                    let pick = |a: &K, b: &K| {
                        let (x, y) = (
                            sparrow::ops::topk::key::directed(*a, largest),
                            sparrow::ops::topk::key::directed(*b, largest),
                        );
                        if x >= y {
                            *a
                        } else {
                            *b
                        }
                    };
                    let top = k.iter().copied().reduce(|a, b| pick(&a, &b)).unwrap();
                    let mut rng = Rng::new(7 + share);
                    for x in k.iter_mut() {
                        if rng.next_u64().is_multiple_of(share) {
                            *x = top;
                        }
                    }
                    let segs = Segments::Fixed { count, len };
                    for (tie, sorted) in [
                        (TieBreak::Fast, false),
                        (TieBreak::Fast, true),
                        (TieBreak::SmallerIndex, false),
                    ] {
                        let req = top_k(4096, largest)
                            .tie_break(tie)
                            .sorted(sorted)
                            .force_path(Some(GpuPath::Filter));
                        let plan = check::<K, K>(d, &req, &k, segs, None);
                        let name = kernel_of(&plan);
                        assert!(name.contains("filter_tma"), "{} {plan}", K::NAME);
                    }
                }
            }
        }
        run::<bf16>(&d);
        run::<f16>(&d);
        run::<u8>(&d);
        run::<i16>(&d);
        run::<f32>(&d);
    }

    /// The equal-key list's bound: bf16 keys in [1, 1.5) with exactly `e` copies of one key
    /// outside that range (the largest, 1.992, or the smallest, 1.0) at random places in every
    /// 8,192-key tile, so the threshold is that key, no key passes it, and each tile has exactly
    /// e equal keys against 1,024 slots: 512 fill the per-stage lists exactly (slotted), 513
    /// overflow them by one (flagged and read from memory by the candidate kernel). Fast ties
    /// into unsorted rows (the reserving placement), and smaller-index ties on the same keys for
    /// the byte-for-byte oracle.
    #[test]
    fn topk_staged_filter_list_bound() {
        let d = dev();
        if !sm90(&d) {
            return;
        }
        let (count, len, tile) = (3usize, 131_072usize, 8192usize);
        for e in [512usize, 513] {
            for largest in [true, false] {
                let mut rng = Rng::new(e as u64);
                let special = if largest { 0x3fffu16 } else { 0x3f80 };
                let mut k: Vec<bf16> = (0..count * len)
                    .map(|_| bf16::from_bits(0x3f80 | (1 + rng.below(0x3f) as u16)))
                    .collect();
                let mut pos: Vec<usize> = (0..tile).collect();
                for t in k.chunks_mut(tile) {
                    for i in 0..e {
                        let j = i + rng.below((tile - i) as u64) as usize;
                        pos.swap(i, j);
                        t[pos[i]] = bf16::from_bits(special);
                    }
                }
                let segs = Segments::Fixed { count, len };
                for tie in [TieBreak::Fast, TieBreak::SmallerIndex] {
                    let req = top_k(4096, largest)
                        .tie_break(tie)
                        .force_path(Some(GpuPath::Filter));
                    let plan = check::<bf16, bf16>(&d, &req, &k, segs, None);
                    assert!(kernel_of(&plan).contains("filter_tma"), "{e}: {plan}");
                }
            }
        }
    }

    /// Both builds at sizes compute-sanitizer's memcheck and synccheck take (racecheck's host
    /// memory outgrows 128 GB at the compact build's count of segments: see gpu-round.sh).
    #[test]
    fn sanitize_topk_candidate_kernel_builds() {
        let pats = [Pattern::Uniform, Pattern::TwoValues, Pattern::Ascending];
        let ties = [TieBreak::Fast, TieBreak::LargerIndex];
        let d = dev();
        cand_builds::<f32>(&d, 5000, 40, &pats, &ties);
        cand_builds::<u8>(&d, 5000, 40, &pats, &ties);
        cand_builds::<bf16>(&d, 5000, 40, &pats, &ties);
        cand_builds::<f64>(&d, 5000, 40, &pats, &ties);
    }

    /// The staged filter (sm_90: keys staged by bulk copies) and the register filter on the
    /// same inputs: segments at every byte offset of the bulk copy's 16-byte alignment, so
    /// tiles have unaligned heads and tails (peeled to the producer warp's lanes), tiles of
    /// under 32 bytes with no aligned interior at all, an empty segment; every key width,
    /// friendly and adversarial keys, both directions, every tie-break.
    #[test]
    fn topk_filter_staging_every_width() {
        let d = dev();
        let sm90 = sm90(&d);
        // Lengths of 1 to 31 keys (under 32 bytes for 1-byte keys), a tile and 3, two tiles
        // and 5: the segments start at many offsets from a 16-byte boundary for every width.
        let mut o = vec![0i64];
        for len in [7i64, 4099, 1, 31, 9000, 0, 13, 4096 * 2 + 5, 3, 6007] {
            o.push(o.last().unwrap() + len);
        }
        let all = [Pattern::Uniform, Pattern::TwoValues, Pattern::Ascending];
        let both = [true, false];
        staged_vs_register::<f32>(&d, &o, sm90, &all, &both, &TIES);
        staged_vs_register::<f64>(&d, &o, sm90, &all, &both, &TIES);
        staged_vs_register::<bf16>(&d, &o, sm90, &all, &both, &TIES);
        staged_vs_register::<i8>(&d, &o, sm90, &all, &both, &TIES);
        staged_vs_register::<u16>(&d, &o, sm90, &all, &both, &TIES);
        staged_vs_register::<i64>(&d, &o, sm90, &all, &both, &TIES);
    }

    /// The staged filter at sizes compute-sanitizer's race check can take: every key width,
    /// unaligned tiles, uniform keys and ascending ones (whose last tiles overflow their slots).
    #[test]
    fn sanitize_topk_filter_staging() {
        let d = dev();
        let sm90 = sm90(&d);
        let mut o = vec![0i64];
        for len in [7i64, 4099, 31, 9000, 13, 4096 * 2 + 5] {
            o.push(o.last().unwrap() + len);
        }
        let pats = [Pattern::Uniform, Pattern::Ascending];
        let ties = [TieBreak::Fast, TieBreak::LargerIndex];
        staged_vs_register::<f32>(&d, &o, sm90, &pats, &[true], &ties);
        staged_vs_register::<f64>(&d, &o, sm90, &pats, &[true], &ties);
        staged_vs_register::<bf16>(&d, &o, sm90, &pats, &[true], &ties);
        staged_vs_register::<i8>(&d, &o, sm90, &pats, &[true], &ties);
    }

    fn staged_vs_register<K: Key>(
        d: &Device,
        o: &[i64],
        sm90: bool,
        patterns: &[Pattern],
        stagings: &[bool],
        ties: &[TieBreak],
    ) {
        let n = *o.last().unwrap() as usize;
        let v: Vec<u16> = keys(n, Pattern::RandomBits, 4);
        for (pi, &pattern) in patterns.iter().enumerate() {
            let k: Vec<K> = keys(n, pattern, pi as u64 + 11);
            for &staging in stagings {
                for largest in [true, false] {
                    for &tie in ties {
                        for kk in [1usize, 50] {
                            let req = top_k(kk, largest);
                            let req = req
                                .tie_break(tie)
                                .staging(staging)
                                .force_path(Some(GpuPath::Filter));
                            let plan = check(d, &req, &k, Segments::Offsets(o), Some(&v));
                            let kernel = kernel_of(&plan);
                            assert_eq!(
                                kernel.contains("filter_tma"),
                                staging && sm90,
                                "{} [{plan}]",
                                K::NAME
                            );
                        }
                    }
                }
            }
        }
    }

    /// The staged filter with many tiles per block (its grid holds a few blocks per SM), so
    /// every stage is refilled several times and the barriers' phases wrap: 12M f32 keys and
    /// 24M bf16 keys in segments at unaligned offsets, against the register filter's and the
    /// CPU's answers. bf16 under fast ties is where the producer finishes tiles (their counts,
    /// their listed equal keys) as it refills their stages, not only after its last tile as in
    /// `topk_staged_filter_lists_equal_keys` (one tile per block).
    #[test]
    fn topk_staged_filter_reuses_its_stages() {
        let d = dev();
        let o = [0i64, 3, 4_000_003, 4_000_010, 12_000_001];
        let n = *o.last().unwrap() as usize;
        let kf: Vec<f32> = keys(n, Pattern::Uniform, 21);
        let o2 = [0i64, 5, 16_000_005, 24_000_000];
        let kb: Vec<bf16> = keys(24_000_000, Pattern::Uniform, 22);
        for tie in TIES {
            for staging in [true, false] {
                let req = TopK::largest(100)
                    .tie_break(tie)
                    .staging(staging)
                    .force_path(Some(GpuPath::Filter));
                check::<f32, f32>(&d, &req, &kf, Segments::Offsets(&o), None);
                check::<bf16, bf16>(&d, &req, &kb, Segments::Offsets(&o2), None);
            }
        }
    }

    /// The filter compares float keys as floats against the threshold's float: thresholds at
    /// NaN, infinities, zeros of both signs, subnormals and the most negative keys, for both
    /// directions, checked on every float type.
    #[test]
    fn sanitize_topk_filter_float_keys() {
        let d = dev();
        let o = [0i64, 20_000, 20_003, 45_000];
        let v: Vec<u16> = keys(45_000, Pattern::RandomBits, 2);
        filter_float_keys::<f32>(&d, &o, &v);
        filter_float_keys::<f64>(&d, &o, &v);
        filter_float_keys::<f16>(&d, &o, &v);
        filter_float_keys::<bf16>(&d, &o, &v);
    }

    fn filter_float_keys<K: Key>(d: &Device, o: &[i64], v: &[u16]) {
        let n = 45_000;
        let sign = 1u64 << (K::BITS - 1);
        let mut rng = Rng::new(K::BITS as u64);
        // Uniform keys, a third made negative and one in 64 a zero of either sign.
        let mixed: Vec<K> = keys::<K>(n, Pattern::Uniform, 7)
            .into_iter()
            .map(|x| match rng.below(64) {
                0 => K::from_bits(0),
                1 => K::from_bits(sign),
                r if r % 3 == 0 => K::from_bits(x.to_bits() | sign),
                _ => x,
            })
            .collect();
        // -inf and the most negative finite keys: radixes at the bottom of the range.
        let low: Vec<K> = (0..n)
            .map(|_| K::from_bits(K::lowest().to_bits() - rng.below(64)))
            .collect();
        let sets = [
            keys::<K>(n, Pattern::Specials, 5),
            keys::<K>(n, Pattern::RandomBits, 6),
            mixed,
            low,
        ];
        for k in &sets {
            for kk in [1usize, 50, 700] {
                for largest in [true, false] {
                    for tie in [TieBreak::Fast, TieBreak::LargerIndex] {
                        let req = top_k(kk, largest);
                        let req = req.tie_break(tie).force_path(Some(GpuPath::Filter));
                        check(d, &req, k, Segments::Offsets(o), Some(v));
                    }
                }
            }
        }
    }

    fn filter_narrow_keys<K: Key>(d: &Device, o: &[i64], v: &[u16]) {
        for pattern in [
            Pattern::Uniform,
            Pattern::HeavyTies,
            Pattern::SharedHighBits,
        ] {
            let k: Vec<K> = keys(45_000, pattern, 3);
            for tie in TIES {
                for kk in [1usize, 50, 700] {
                    let req = TopK::largest(kk)
                        .tie_break(tie)
                        .force_path(Some(GpuPath::Filter));
                    check(d, &req, &k, Segments::Offsets(o), Some(v));
                }
            }
        }
    }

    /// Candidates short of k completed with the threshold's equal keys: from the slots where
    /// the filter kept them (bf16 uniform keys in [1, 2) have 128 values, so each 8,192-key
    /// tile holds 64 of the threshold's and of each value above it, well within its slots),
    /// from memory where they overflow (two values: 4,096 per tile), and both within a segment
    /// (sixteen values: 512 per tile against 512 slots). k = 512 of 65,536 puts the threshold
    /// one value below the top, whose 512-odd keys fall short of k in about half the segments.
    /// Both filters (the staged one on sm_90, the register one), both directions.
    #[test]
    fn sanitize_topk_filter_tie_slots() {
        let d = dev();
        let o: Vec<i64> = (0..=8).map(|i| 3 + i * 65_537).collect();
        let n = *o.last().unwrap() as usize;
        let v: Vec<u16> = keys(n, Pattern::RandomBits, 9);
        tie_slots::<bf16>(&d, &o, &v);
        tie_slots::<f16>(&d, &o, &v);
        tie_slots::<u8>(&d, &o, &v);
        tie_slots::<i16>(&d, &o, &v);
    }

    fn tie_slots<K: Key>(d: &Device, o: &[i64], v: &[u16]) {
        for pattern in [Pattern::Uniform, Pattern::HeavyTies, Pattern::TwoValues] {
            let k: Vec<K> = keys(v.len(), pattern, 12);
            for kk in [512usize, 700] {
                for (largest, staging) in
                    [(true, true), (false, true), (true, false), (false, false)]
                {
                    for tie in TIES {
                        let req = top_k(kk, largest)
                            .tie_break(tie)
                            .staging(staging)
                            .force_path(Some(GpuPath::Filter));
                        check(d, &req, &k, Segments::Offsets(o), Some(v));
                    }
                }
            }
        }
    }

    /// The staged filter on tiles whose bulk copies have no unaligned head or tail (the other
    /// staging tests start segments at odd offsets): every key width, segments starting at
    /// multiples of 16 keys (whole tiles, whole tiles and a partial one, 16 keys; the whole
    /// tiles take the run layout), friendly keys, random bits (NaN of both signs, zeros,
    /// subnormals), ties at the threshold (16 values, two values: the 16-bit keys' equal-key
    /// slots fill and overflow) and keys sorted upwards (tiles whose candidates overflow their slots), both
    /// directions, every tie-break, against the CPU.
    #[test]
    fn topk_staged_filter_aligned_tiles() {
        let d = dev();
        let o = aligned_offsets(&[4096 * 3, 4096 * 2 + 16 * 70, 16, 4096 * 8, 4096 + 48]);
        let pats = [
            Pattern::Uniform,
            Pattern::HeavyTies,
            Pattern::TwoValues,
            Pattern::Ascending,
            Pattern::RandomBits,
        ];
        aligned_tiles::<f32>(&d, &o, &pats, &TIES);
        aligned_tiles::<f64>(&d, &o, &pats, &TIES);
        aligned_tiles::<bf16>(&d, &o, &pats, &TIES);
        aligned_tiles::<f16>(&d, &o, &pats, &TIES);
        aligned_tiles::<u8>(&d, &o, &pats, &TIES);
        aligned_tiles::<i8>(&d, &o, &pats, &TIES);
        aligned_tiles::<i16>(&d, &o, &pats, &TIES);
        aligned_tiles::<u32>(&d, &o, &pats, &TIES);
        aligned_tiles::<i64>(&d, &o, &pats, &TIES);
    }

    /// The same at sizes compute-sanitizer's race and barrier checks take: 32-, 16- and 8-bit
    /// keys, uniform and two-valued.
    #[test]
    fn sanitize_topk_staged_filter_aligned_tiles() {
        let d = dev();
        let o = aligned_offsets(&[4096 * 2, 4096 + 16 * 70, 16]);
        let pats = [Pattern::Uniform, Pattern::TwoValues];
        let ties = [TieBreak::Fast, TieBreak::LargerIndex];
        aligned_tiles::<f32>(&d, &o, &pats, &ties);
        aligned_tiles::<bf16>(&d, &o, &pats, &ties);
        aligned_tiles::<u8>(&d, &o, &pats, &ties);
    }

    fn aligned_offsets(lens: &[i64]) -> Vec<i64> {
        let mut o = vec![0i64];
        for len in lens {
            o.push(o.last().unwrap() + len);
        }
        o
    }

    fn aligned_tiles<K: Key>(d: &Device, o: &[i64], pats: &[Pattern], ties: &[TieBreak]) {
        let sm90 = sm90(d);
        let n = *o.last().unwrap() as usize;
        let v: Vec<u16> = keys(n, Pattern::RandomBits, 5);
        for (pi, &pattern) in pats.iter().enumerate() {
            let k: Vec<K> = keys(n, pattern, 30 + pi as u64);
            for kk in [60usize, 700] {
                for largest in [true, false] {
                    for &tie in ties {
                        let req = top_k(kk, largest)
                            .tie_break(tie)
                            .staging(true)
                            .force_path(Some(GpuPath::Filter));
                        let plan = check(d, &req, &k, Segments::Offsets(o), Some(&v));
                        let kernel = kernel_of(&plan);
                        assert_eq!(kernel.contains("filter_tma"), sm90, "{} [{plan}]", K::NAME);
                    }
                }
            }
        }
    }

    /// The split path where the plan picks it (a 16M-key segment at an unaligned offset, an
    /// empty one, a short one, a 5M-key one; k = 1024 is too many winners for the filter):
    /// friendly and adversarial keys, every tie-break, sorted with values.
    #[test]
    fn topk_split_path() {
        let d = dev();
        let o = [3i64, 16_789_225, 16_789_225, 16_792_225, 21_792_225];
        let n = *o.last().unwrap() as usize;
        let v: Vec<u32> = keys(n, Pattern::RandomBits, 1);
        for pattern in [Pattern::Uniform, Pattern::TwoValues, Pattern::Ascending] {
            let k: Vec<f32> = keys(n, pattern, 5);
            for tie in TIES {
                let req = TopK::largest(1024).tie_break(tie);
                let plan = check::<f32, f32>(&d, &req, &k, Segments::Offsets(&o), None);
                assert!(plan.reason.starts_with("split"), "{plan}");
            }
            check(
                &d,
                &TopK::smallest(1024)
                    .sorted(true)
                    .tie_break(TieBreak::SmallerIndex)
                    .index_type(IndexType::I32),
                &k,
                Segments::Offsets(&o),
                Some(&v),
            );
        }
    }

    #[test]
    fn topk_long_segments_and_large_k() {
        let d = dev();
        let k: Vec<f32> = keys(8192 * 4, Pattern::RandomBits, 7);
        check::<f32, f32>(
            &d,
            &TopK::largest(256).sorted(true),
            &k,
            Segments::Fixed {
                count: 4,
                len: 8192,
            },
            None,
        );
        let k: Vec<i32> = keys(65_536 * 2, Pattern::HeavyTies, 8);
        for tie in TIES {
            check::<i32, i32>(
                &d,
                &TopK::smallest(1000).tie_break(tie),
                &k,
                Segments::Fixed {
                    count: 2,
                    len: 65_536,
                },
                None,
            );
        }
        let k: Vec<f64> = keys(131_072, Pattern::Specials, 9);
        check::<f64, f64>(
            &d,
            &TopK::largest(2048)
                .tie_break(TieBreak::LargerIndex)
                .sorted(true),
            &k,
            Segments::Fixed {
                count: 1,
                len: 131_072,
            },
            None,
        );
        let n = 1_048_576;
        let k: Vec<f32> = keys(n + 11, Pattern::RandomBits, 10);
        let o = [7i64, 7 + n as i64];
        for kk in [1, 4096, 300_000] {
            check::<f32, f32>(
                &d,
                &TopK::largest(kk).tie_break(TieBreak::SmallerIndex),
                &k,
                Segments::Offsets(&o),
                None,
            );
        }
        check::<f32, f32>(
            &d,
            &TopK::smallest(300_000).sorted(true),
            &k,
            Segments::Offsets(&o),
            None,
        );
        let k: Vec<u16> = keys(n + 11, Pattern::TwoValues, 11);
        check::<u16, u16>(
            &d,
            &TopK::largest(300_000).tie_break(TieBreak::LargerIndex),
            &k,
            Segments::Offsets(&o),
            None,
        );
        let o = [0i64, 1_100_000, 1_100_001, 1_100_001, 1_600_000];
        let k: Vec<bf16> = keys(1_600_000, Pattern::RandomBits, 12);
        check::<bf16, bf16>(
            &d,
            &TopK::largest(5000)
                .tie_break(TieBreak::SmallerIndex)
                .sorted(true),
            &k,
            Segments::Offsets(&o),
            None,
        );
        let k: Vec<f32> = keys(n, Pattern::AllEqual, 13);
        check::<f32, f32>(
            &d,
            &TopK::largest(1000).tie_break(TieBreak::LargerIndex),
            &k,
            Segments::Fixed { count: 1, len: n },
            None,
        );
    }
}

mod cs {
    use sparrow::solvers::cs::phase::{run, PhaseConfig};
    use sparrow::solvers::cs::{Method, Recover};
    use sparrow::validate::registry;
    use sparrow::Device;

    fn dev() -> Device {
        Device::Cuda(super::gpu())
    }

    /// Runs the validation cases whose names start with `prefix` and fails on any failure.
    fn cases(prefix: &str) {
        let d = dev();
        let mut failed = Vec::new();
        let mut ran = 0;
        for case in registry()
            .into_iter()
            .filter(|c| c.name.starts_with(prefix))
        {
            for o in (case.run)(&d).unwrap_or_else(|e| panic!("{}: {e}", case.name)) {
                ran += 1;
                if !o.pass {
                    failed.push(format!(
                        "{} [{}]: max_rel {:.2e} > {:.1e} {}",
                        o.kernel, o.shapes, o.max_rel, o.tolerance, o.note
                    ));
                }
            }
        }
        assert!(ran > 0, "no {prefix} cases ran");
        assert!(failed.is_empty(), "{}", failed.join("\n"));
    }

    /// Every cs.cu kernel, f32 and f64, ragged (300 items, 256-thread blocks), outputs
    /// NaN-filled first, against the CPU references.
    #[test]
    fn sanitize_cs_kernels() {
        cases("cs-kernels/");
    }

    /// Every GPU solver (IHT, normalised IHT, HTP, CoSaMP, SP, OMP, AMP, FISTA) against the CPU
    /// on one batch: same supports, coefficients within 1e-4 (f32) or 1e-9 (f64) relative to
    /// the largest.
    #[test]
    fn small_cs_gpu_solvers_match_the_cpu() {
        cases("cs-solvers/");
    }

    /// The recovery acceptance on the GPU: n = 1000, delta = 0.5, rho = 0.1, 100 trials, IHT,
    /// AMP and CoSaMP each recovering at least 95.
    #[test]
    fn cs_recovery_rate_on_the_gpu() {
        let d = dev();
        for method in [Method::Iht, Method::Amp, Method::Cosamp] {
            let cfg = PhaseConfig {
                method,
                n: 1000,
                deltas: vec![0.5],
                rhos: vec![0.1],
                trials: 100,
                signs: false,
                max_iter: 500,
            };
            let r = run(&d, &cfg, &mut |_, _| {}).unwrap();
            assert!(
                r.success[0][0] >= 0.95,
                "{method:?}: {} of 100 recovered",
                r.success[0][0] * 100.0
            );
            let plan = Recover::new(method).sparsity(50).plan(&d, 1000);
            assert_eq!(plan.backend, sparrow::ops::Backend::Cuda, "{plan}");
        }
    }
}

/// SEACells on the GPU against the CPU: the kNN exactly (several distance tiles, duplicate
/// cells), the B update step for step, and whole fits' assignments and RSS.
mod seacells {
    use sparrow::matrix::Csr;
    use sparrow::matrix::Rng;
    use sparrow::matrix::{io, Dense};
    use sparrow::solvers::seacells::fit::{fit_on, gaussian_mixture, Config};
    use sparrow::solvers::seacells::fw::{update_a, update_b, update_b_with};
    use sparrow::solvers::seacells::gpu::{knn_tiled, BPath, KatSource, Solver, B_CHUNK};
    use sparrow::solvers::seacells::gpu_b::GpuSteps;
    use sparrow::solvers::seacells::kernel::{kernel_from_knn, knn, Symmetrize};
    use sparrow::solvers::seacells::sparse::{transpose, SpVec};
    use sparrow::Device;

    use super::gpu;

    /// A mixture with some cells copied onto others, so exact distance ties and zero distances
    /// to other cells occur.
    fn mixture_with_duplicates(n: usize, d: usize) -> Dense<f64> {
        let (x, _) = gaussian_mixture(n, d, 7, 3);
        let mut v: Vec<f64> = (0..n).flat_map(|i| x.row(i).to_vec()).collect();
        for i in (0..n).step_by(97) {
            let j = (i * 31 + 5) % n;
            let row: Vec<f64> = v[j * d..(j + 1) * d].to_vec();
            v[i * d..(i + 1) * d].copy_from_slice(&row);
        }
        Dense::from_rows(n, d, v).unwrap()
    }

    #[test]
    fn small_seacells_knn_is_the_cpus() {
        let g = gpu();
        let x = mixture_with_duplicates(1_500, 13);
        let want = knn(&x, 30).unwrap();
        // One tile, then tiles of 200 rows with a short last one.
        for tile in [1usize << 27, 200 * 1_500] {
            let got = knn_tiled(&g, &x, 30, tile).unwrap();
            assert_eq!(got.len(), want.len());
            for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                assert_eq!(a, b, "cell {i}, tile {tile}");
            }
        }
        // f32 input is widened as on the CPU.
        let x32 = Dense::from_rows(
            300,
            13,
            (0..300)
                .flat_map(|i| x.row(i).iter().map(|&v| v as f32).collect::<Vec<_>>())
                .collect(),
        )
        .unwrap();
        assert_eq!(
            knn_tiled(&g, &x32, 7, 1 << 27).unwrap(),
            knn(&x32, 7).unwrap()
        );
        assert!(knn_tiled(&g, &x32, 301, 1 << 27).is_err());
    }

    /// Several gradient chunks (300 archetypes), every step taken (no early stop): the picks,
    /// hence B, match the CPU's on at least 99% of archetypes.
    #[test]
    fn seacells_b_update_matches_the_cpu() {
        let g = gpu();
        let (x, _) = gaussian_mixture(3_000, 10, 20, 1);
        let nb = knn(&x, 15).unwrap();
        let m = kernel_from_knn(&nb, 15, Symmetrize::Union).unwrap();
        let (n, nm) = (3_000usize, 300usize);
        assert!(nm > 2 * B_CHUNK);
        // B: one cell per archetype (every tenth); A: each cell split over two or three.
        let every_tenth: Vec<usize> = (0..n).step_by(10).collect();
        let (a, b) = b_problem(n, nm, &every_tenth);
        let cpu = update_b(&m, &a, &b, 12, 12, 0.0);
        let solver = Solver::new(&g, &m).unwrap();
        let got = solver
            .update_b_on(BPath::Chunked, &m, &a, &b, 12, 12, 0.0)
            .unwrap();
        assert_eq!(got.steps, cpu.steps);
        let same = got.b.iter().zip(&cpu.b).filter(|(p, q)| {
            p.len() == q.len()
                && p.iter()
                    .zip(q.iter())
                    .all(|(u, v)| u.0 == v.0 && (u.1 - v.1).abs() <= 1e-12)
        });
        let same = same.count();
        assert!(same * 100 >= nm * 99, "{same} of {nm} archetypes agree");
        // K B comes back for the new B.
        assert_eq!(got.kb.len(), nm);
    }

    /// A and B for a fused-update test over `nm` archetypes: B one cell per archetype, all
    /// from `cells` (so K B misses the other clusters' cells); A splits each cell over two or
    /// three archetypes.
    fn b_problem(n: usize, nm: usize, cells: &[usize]) -> (Vec<SpVec>, Vec<SpVec>) {
        let b: Vec<SpVec> = (0..nm)
            .map(|c| vec![(cells[c % cells.len()] as u32, 1.0)])
            .collect();
        let a: Vec<SpVec> = (0..n)
            .map(|i| {
                let c = (i / 10) % nm;
                let mut v = vec![(c as u32, 0.7), (((c + 1) % nm) as u32, 0.3)];
                if i % 3 == 0 {
                    v = vec![
                        (c as u32, 0.5),
                        (((c + 1) % nm) as u32, 0.3),
                        (((c + 7) % nm) as u32, 0.2),
                    ];
                }
                v.sort_by_key(|e| e.0);
                v.dedup_by_key(|e| e.0);
                v
            })
            .collect();
        (a, b)
    }

    /// The fused B update with the CPU's K A^T is the CPU's update bit for bit: two columns
    /// a thread with many blocks of cells (3,000 cells, 300 archetypes) and eight columns a
    /// thread (300 cells, 1,100 archetypes), B drawn from one cluster so many cells have no
    /// K B entries, with and without the early stop. With K A^T built on the device the
    /// picks agree on at least 99% of archetypes, as does the chunked SpMM path.
    #[test]
    fn seacells_fused_b_update_is_the_cpus() {
        let g = gpu();
        for (n, nm) in [(3_000usize, 300usize), (300, 1_100)] {
            let (x, labels) = gaussian_mixture(n, 10, 20, 1);
            let nb = knn(&x, 15).unwrap();
            let m = kernel_from_knn(&nb, 15, Symmetrize::Union).unwrap();
            let one: Vec<usize> = (0..n).filter(|&i| labels[i] == 3).collect();
            let (a, b) = b_problem(n, nm, &one);
            let solver = Solver::new(&g, &m).unwrap();
            assert_eq!(solver.b_path(nm), BPath::Fused(KatSource::Device));
            for (steps, min_steps, tol) in [(12usize, 12usize, 0.0), (50, 10, 1e-3)] {
                let cpu = update_b(&m, &a, &b, steps, min_steps, tol);
                let mut on = GpuSteps::new(&solver, nm, KatSource::Host).unwrap();
                let host = update_b_with(&m, &a, &b, steps, min_steps, tol, &mut on).unwrap();
                let (by_bound, by_all) = on.steps_by();
                println!("n {n} nm {nm} steps {steps}: {by_bound} steps read by the bound, {by_all} over every cell");
                // With more archetypes than cells most columns stay open to the bound.
                assert!(n < nm || by_bound > 0);
                assert_eq!(by_bound + by_all, host.steps.min(steps - 1) + 1);
                assert_eq!(host.steps, cpu.steps, "n {n} nm {nm}");
                assert_eq!(host.b, cpu.b, "n {n} nm {nm} steps {steps}");
                assert_eq!(host.kb, cpu.kb, "n {n} nm {nm} steps {steps}");
                for path in [BPath::Fused(KatSource::Device), BPath::Chunked] {
                    let got = solver
                        .update_b_on(path, &m, &a, &b, steps, min_steps, tol)
                        .unwrap();
                    let same = got
                        .b
                        .iter()
                        .zip(&cpu.b)
                        .filter(|(p, q)| {
                            p.len() == q.len()
                                && p.iter()
                                    .zip(q.iter())
                                    .all(|(u, v)| u.0 == v.0 && (u.1 - v.1).abs() <= 1e-12)
                        })
                        .count();
                    println!("n {n} nm {nm} steps {steps} {path:?}: {same} of {nm} columns of B agree, steps {} / {}", got.steps, cpu.steps);
                    assert!(same * 100 >= nm * 99, "{path:?}: {same} of {nm} agree");
                }
            }
        }
    }

    /// Exact ties across the fused kernel's blocks go to the lowest cell. With M = I, K B = B
    /// and K A^T = A^T; every cell has the one atom i % nm, and B's column c holds cell c, so
    /// G[i, c] = -1 for every later cell with i % nm = c: the pick is c + nm. Small enough
    /// for compute-sanitizer at 300 archetypes; the wider cases reach the 4-, 16- and
    /// 32-column kernels.
    #[test]
    fn small_seacells_fused_b_ties_to_the_lowest_cell() {
        for (n, nm) in [
            (2_000usize, 300usize),
            (1_500, 700),
            (4_300, 2_100),
            (8_200, 4_100),
        ] {
            fused_ties(n, nm);
        }
    }

    fn fused_ties(n: usize, nm: usize) {
        let g = gpu();
        let m = Csr::new(
            n,
            n,
            (0..=n as i64).collect(),
            (0..n as i32).collect(),
            vec![1.0f64; n],
        )
        .unwrap();
        let a: Vec<SpVec> = (0..n).map(|i| vec![((i % nm) as u32, 1.0)]).collect();
        let b: Vec<SpVec> = (0..nm).map(|c| vec![(c as u32, 1.0)]).collect();
        let solver = Solver::new(&g, &m).unwrap();
        // B's own cell at full weight has G = t1[c, c] - 1 >= 0, so the bound cannot read the
        // column; at weight 0.1 it is negative and the bound reads it. Every column at full
        // weight: the fused kernel reads the step; every 16th: the bound, with those columns
        // read at every cell by the open-column kernel; none: the bound alone.
        for (every, bounded) in [(1usize, false), (16, true), (usize::MAX, true)] {
            let b: Vec<SpVec> = b
                .iter()
                .enumerate()
                .map(|(c, col)| vec![(col[0].0, if c % every == 0 { 1.0 } else { 0.1 })])
                .collect();
            fused_ties_with(&solver, &m, &a, &b, nm, bounded);
        }
    }

    fn fused_ties_with(
        solver: &Solver,
        m: &Csr<f64>,
        a: &[SpVec],
        b: &[SpVec],
        nm: usize,
        bounded: bool,
    ) {
        let cpu = update_b(m, a, b, 1, 1, 0.0);
        for src in [KatSource::Host, KatSource::Device] {
            let mut on = GpuSteps::new(solver, nm, src).unwrap();
            let got = update_b_with(m, a, b, 1, 1, 0.0, &mut on).unwrap();
            let want_by = if bounded { (1, 0) } else { (0, 1) };
            assert_eq!(on.steps_by(), want_by, "{src:?}");
            assert_eq!(got.b, cpu.b, "{src:?}");
            for (c, col) in got.b.iter().enumerate() {
                // gamma = 1 at the first step: the pick carries all the weight.
                let held: Vec<(u32, f64)> = col.iter().copied().filter(|e| e.1 > 0.0).collect();
                assert_eq!(held, vec![((c + nm) as u32, 1.0)], "{src:?} column {c}");
            }
        }
    }

    /// Random sparse K B rows (some cells without any) and a symmetric t1 with a dominant
    /// diagonal, for an A update over nm archetypes.
    fn a_problem(n: usize, nm: usize, seed: u64) -> (Vec<SpVec>, Vec<f64>) {
        let mut rng = Rng::new(seed);
        let kb: Vec<SpVec> = (0..n)
            .map(|i| {
                if i % 37 == 5 {
                    return Vec::new();
                }
                let mut v: SpVec = (0..6)
                    .map(|_| ((rng.next_u64() % nm as u64) as u32, rng.uniform()))
                    .collect();
                v.sort_by_key(|e| e.0);
                v.dedup_by_key(|e| e.0);
                v
            })
            .collect();
        let mut t1 = vec![0.0; nm * nm];
        for r in 0..nm {
            t1[r * nm + r] = 1.0 + rng.uniform();
            for _ in 0..4 {
                let c = (rng.next_u64() % nm as u64) as usize;
                if c != r {
                    let v = 0.2 * rng.uniform();
                    t1[r * nm + c] = v;
                    t1[c * nm + r] = v;
                }
            }
        }
        (kb, t1)
    }

    /// The A update's atoms are the CPU's bit for bit: several archetypes per thread
    /// (nm = 1,100 > 256) and many cells, from uniform and from previous weights, and a long
    /// run whose first atoms fall under the pruning threshold.
    #[test]
    fn seacells_a_update_is_the_cpus() {
        let g = gpu();
        // The solver's M only sets the cell count here.
        let kernel_for = |n: usize| {
            let (x, _) = gaussian_mixture(n, 5, 3, 2);
            kernel_from_knn(&knn(&x, 15).unwrap(), 15, Symmetrize::Union).unwrap()
        };
        for (n, nm, steps) in [
            (3_000usize, 300usize, 50usize),
            (300, 1_100, 50),
            (300, 40, 4_500),
        ] {
            let (kb, t1) = a_problem(n, nm, nm as u64);
            // The GPU takes K B by archetype.
            let kb_cols = transpose(&kb, nm);
            let solver = Solver::new(&g, &kernel_for(n)).unwrap();
            let first = update_a(&kb, &t1, nm, None, steps);
            assert_eq!(solver.update_a(&kb_cols, &t1, None, steps).unwrap(), first);
            let again = update_a(&kb, &t1, nm, Some(&first), steps);
            let got = solver.update_a(&kb_cols, &t1, Some(&first), steps).unwrap();
            assert_eq!(got, again, "n {n}, nm {nm}, steps {steps}");
            if steps > 1_000 {
                // Pruning ran: no atom is lighter than the threshold, weights sum to 1.
                for col in &got {
                    assert!(col
                        .iter()
                        .all(|a| a.1 >= sparrow::solvers::seacells::fw::PRUNE));
                    let s: f64 = col.iter().map(|a| a.1).sum();
                    assert!((s - 1.0).abs() < 1e-9);
                }
            }
        }
    }

    /// Small enough for compute-sanitizer: the A update's shared-memory state over several
    /// archetypes per thread, and a run long enough to prune.
    #[test]
    fn small_seacells_a_update_sanitize() {
        let g = gpu();
        let (x, _) = gaussian_mixture(64, 4, 2, 2);
        let m = kernel_from_knn(&knn(&x, 8).unwrap(), 8, Symmetrize::Union).unwrap();
        let solver = Solver::new(&g, &m).unwrap();
        for (nm, steps) in [(300usize, 40usize), (12, 4_600)] {
            let (kb, t1) = a_problem(64, nm, 7);
            let want = update_a(&kb, &t1, nm, None, steps);
            let got = solver
                .update_a(&transpose(&kb, nm), &t1, None, steps)
                .unwrap();
            assert_eq!(got, want, "nm {nm}, steps {steps}");
        }
    }

    /// The B update's argmin kernels on a hand-made gradient: ties across and within the
    /// 4,096-cell ranges go to the lowest cell, a column of equal values to cell 0, and the gap
    /// share is B's weighted sum minus the minimum.
    #[test]
    fn small_seacells_pick_ties_to_the_lowest_cell() {
        use sparrow::device::{Args, LaunchShape};
        use sparrow::kernels::SEACELLS;
        let g = gpu();
        let (n, ld, nc, span) = (10_000usize, 4usize, 3usize, 4_096usize);
        let mut gr = vec![1.0f64; n * ld];
        for i in [9_000usize, 5_000, 4_095, 100, 4_096] {
            gr[i * ld] = -2.0;
        }
        gr[9_999 * ld + 1] = -5.0;
        gr[5 * ld + 1] = -4.0;
        for i in 0..n {
            gr[i * ld + 2] = 0.25;
        }
        let parts = n.div_ceil(span);
        let gd = g.upload(&gr).unwrap();
        let pv = g.alloc_zeroed::<f64>(nc * parts).unwrap();
        let pi = g.alloc_zeroed::<i64>(nc * parts).unwrap();
        let pick = g.kernel(&SEACELLS, "seacells_b_pick").unwrap();
        g.launch(
            &pick,
            LaunchShape {
                grid: [nc as u32, parts as u32, 1],
                block: [256, 1, 1],
                smem: 0,
                cluster: None,
                pdl: false,
            },
            Args::new()
                .ptr(g.ptr(&gd))
                .i64(n as i64)
                .i64(ld as i64)
                .i64(span as i64)
                .ptr(g.ptr(&pv))
                .ptr(g.ptr(&pi)),
        )
        .unwrap();
        // B by archetype: column 0 holds cells 7 and 100, column 1 cell 9,999, column 2 none.
        let bptr = g.upload(&[0i64, 2, 3, 3]).unwrap();
        let bcell = g.upload(&[7i32, 100, 9_999]).unwrap();
        let bw = g.upload(&[0.5f64, 0.5, 1.0]).unwrap();
        let picks = g.upload(&[-1i32; 3]).unwrap();
        let gaps = g.upload(&[f64::NAN; 3]).unwrap();
        let gap = g.kernel(&SEACELLS, "seacells_b_gap").unwrap();
        g.launch(
            &gap,
            LaunchShape::linear(1, 256),
            Args::new()
                .ptr(g.ptr(&gd))
                .i64(ld as i64)
                .i64(0)
                .i64(nc as i64)
                .i64(parts as i64)
                .ptr(g.ptr(&pv))
                .ptr(g.ptr(&pi))
                .ptr(g.ptr(&bptr))
                .ptr(g.ptr(&bcell))
                .ptr(g.ptr(&bw))
                .ptr(g.ptr(&picks))
                .ptr(g.ptr(&gaps)),
        )
        .unwrap();
        assert_eq!(g.download(&picks, 3).unwrap(), vec![100, 9_999, 0]);
        let got = g.download(&gaps, 3).unwrap();
        assert_eq!(
            got,
            vec![0.5 * 1.0 + 0.5 * -2.0 - -2.0, -5.0 - -5.0, 0.0 - 0.25]
        );
    }

    fn agree<T: sparrow::Scalar>(x: &Dense<T>, nm: usize, what: &str) {
        let g = gpu();
        let cfg = Config::new(nm);
        let cpu = fit_on(&Device::Cpu, x, &cfg, &mut |_, _| {}).unwrap();
        let dev = Device::Cuda(g.clone());
        let got = fit_on(&dev, x, &cfg, &mut |_, _| {}).unwrap();
        let n = cpu.assignments.len();
        let same = cpu
            .assignments
            .iter()
            .zip(&got.assignments)
            .filter(|(a, b)| a == b)
            .count();
        let (rc, rg) = (cpu.rss[cpu.rss.len() - 1], got.rss[got.rss.len() - 1]);
        println!(
            "{what}: {same} of {n} hard assignments agree; RSS CPU {rc:.9e} GPU {rg:.9e}; iterations {} / {}",
            cpu.iterations, got.iterations
        );
        assert!(same * 100 >= n * 99, "{what}: {same} of {n} agree");
        assert!((rc - rg).abs() <= 1e-4 * rc, "{what}: RSS {rc} vs {rg}");
        // The same seed repeats on the GPU.
        let again = fit_on(&dev, x, &cfg, &mut |_, _| {}).unwrap();
        assert_eq!(
            again.assignments, got.assignments,
            "{what}: a second GPU run differs"
        );
        assert_eq!(again.rss, got.rss, "{what}: a second GPU run differs");
    }

    #[test]
    fn seacells_gpu_fit_agrees_with_the_cpu() {
        let (x, _) = gaussian_mixture(3_000, 20, 10, 5);
        agree(&x, 100, "mixture 3,000 x 20, 100 metacells");
        // SPARROW_DATA names the folder holding pbmc68k_reduced (the bundle ships it).
        let dir = std::env::var("SPARROW_DATA")
            .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../data").to_string());
        let path = std::path::Path::new(&dir).join("pbmc68k_reduced/X_pca.npy");
        let x: Dense<f32> =
            io::read_dense(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        agree(&x, 24, "pbmc68k_reduced, 24 metacells");
    }
}

/// `bench spmv --cold` runs, the flush kernel before every repetition of ours and cuSPARSE's,
/// and its answers still agree with cuSPARSE's (the flush reads its own buffer only).
#[test]
fn small_bench_cold_spmv() {
    let g = gpu();
    // As the CLI runs the bench: no sentinel fills among the timed calls.
    g.set_sentinels(false);
    let cfg = sparrow::bench::BenchConfig {
        op: "spmv".into(),
        matrices: vec!["powerlaw-small".into()],
        ns: vec![1],
        dtypes: vec!["f32".into(), "f64".into()],
        reps: 10,
        cpu: false,
        sweep: false,
        sweep_kernels: vec![],
        cold: true,
    };
    let records = sparrow::bench::run(&g, &cfg, &mut |_| {}).expect("bench runs cold");
    assert!(records.iter().any(|r| r.backend == "cusparse"));
    for r in &records {
        assert!(r.cold, "{r:?}");
        assert!(r.median_ms > 0.0 && r.reps == 10, "{r:?}");
        if r.backend == "sparrow" {
            let tol = if r.dtype == "f32" { 1e-5 } else { 1e-12 };
            let agree = r.agreement.expect("compared with cuSPARSE");
            assert!(agree <= tol, "{} {}: agreement {agree}", r.matrix, r.dtype);
        }
    }
}
