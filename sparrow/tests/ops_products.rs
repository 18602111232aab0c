//! SpMM and SpMV: the CPU backend against the naive oracle over random shapes, leading
//! dimensions, scalars and adversarial contents (empty rows, empty matrices, NaN in C with
//! beta = 0); request validation; and the plan's choices.

use proptest::prelude::*;
use sparrow::matrix::{gen, Csr, Dense, Rng};
use sparrow::ops::check::{compare, tolerance};
use sparrow::ops::products::oracle as spmm_oracle;
use sparrow::ops::products::oracle as spmv_oracle;
use sparrow::ops::products::{plan, GpuPath, RowStats, Spmm, Spmv};
use sparrow::ops::Backend;
use sparrow::{Device, Error, Scalar};

/// The row statistics of a matrix, in method position for the chains below.
trait Stats {
    fn row_stats(&self) -> RowStats;
}

impl<T: Scalar> Stats for Csr<T> {
    fn row_stats(&self) -> RowStats {
        RowStats::of(self)
    }
}

/// A random matrix with a given fraction of empty rows and ragged lengths.
fn random_csr<T: Scalar>(
    nrows: usize,
    ncols: usize,
    empty: f64,
    max_len: usize,
    seed: u64,
) -> Csr<T> {
    let mut rng = Rng::new(seed);
    let (mut r, mut c, mut v) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..nrows {
        if ncols == 0 || rng.uniform() < empty {
            continue;
        }
        let len = rng.below(max_len as u64 + 1) as usize;
        for _ in 0..len {
            r.push(i);
            c.push(rng.below(ncols as u64) as usize);
            v.push(T::from_f64(rng.range_f64(-1.0, 1.0)));
        }
    }
    Csr::from_triplets(nrows, ncols, &r, &c, &v).unwrap()
}

fn check_spmm<T: Scalar>(
    a: &Csr<T>,
    n: usize,
    ldb_pad: usize,
    ldc_pad: usize,
    alpha: f64,
    beta: f64,
    seed: u64,
) {
    let b = gen::dense::<T>(a.ncols(), n, n + ldb_pad, seed).unwrap();
    let mut c = if beta == 0.0 {
        Dense::filled(a.nrows(), n, n + ldc_pad, T::from_f64(f64::NAN)).unwrap()
    } else {
        gen::dense::<T>(a.nrows(), n, n + ldc_pad, seed + 1).unwrap()
    };
    let (want, scale) = spmm_oracle::spmm(T::from_f64(alpha), a, &b, T::from_f64(beta), &c);
    let op = Spmm::new()
        .alpha(T::from_f64(alpha))
        .beta(T::from_f64(beta));
    let plan = op.run(&Device::Cpu, a, &b, &mut c).unwrap();
    assert_eq!(plan.backend, Backend::Cpu);
    let got: Vec<f64> = c.to_packed().data().iter().map(|v| v.to_f64()).collect();
    let cmp = compare(&got, &want, &scale, tolerance::<T>());
    assert!(
        cmp.pass,
        "{} x {} nnz {} N {n}: {cmp:?}",
        a.nrows(),
        a.ncols(),
        a.nnz()
    );
    // Padding past the columns is never written.
    for i in 0..c.nrows() {
        let end = ((i + 1) * c.ld()).min(c.data().len());
        for v in &c.data()[i * c.ld() + n..end] {
            if beta == 0.0 {
                assert!(v.to_f64().is_nan(), "padding of row {i} was written");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn spmm_cpu_matches_oracle_f32(
        nrows in 0usize..70, ncols in 0usize..60, n in 0usize..40,
        empty in 0.0f64..1.0, max_len in 0usize..40, pads in (0usize..3, 0usize..3),
        beta in prop_oneof![Just(0.0), Just(1.0), Just(-0.5)], alpha in -2.0f64..2.0, seed in any::<u64>())
    {
        let a = random_csr::<f32>(nrows, ncols, empty, max_len, seed);
        check_spmm(&a, n, pads.0, pads.1, alpha, beta, seed);
    }

    #[test]
    fn spmm_cpu_matches_oracle_f64(
        nrows in 0usize..70, ncols in 0usize..60, n in 0usize..140,
        empty in 0.0f64..1.0, max_len in 0usize..40, beta in prop_oneof![Just(0.0), Just(1.0), Just(-0.5)],
        seed in any::<u64>())
    {
        let a = random_csr::<f64>(nrows, ncols, empty, max_len, seed);
        check_spmm(&a, n, 1, 2, 1.25, beta, seed);
    }

    #[test]
    fn spmv_cpu_matches_oracle(
        nrows in 0usize..200, ncols in 0usize..100, empty in 0.0f64..1.0, max_len in 0usize..60,
        beta in prop_oneof![Just(0.0), Just(1.0), Just(-0.5)], seed in any::<u64>())
    {
        let a = random_csr::<f32>(nrows, ncols, empty, max_len, seed);
        let x = gen::dense::<f32>(ncols, 1, 1, seed).unwrap().into_data();
        let mut y = if beta == 0.0 { vec![f32::NAN; nrows] } else { gen::dense::<f32>(nrows, 1, 1, seed + 1).unwrap().into_data() };
        let (want, scale) = spmv_oracle::spmv(0.75, &a, &x, beta as f32, &y);
        Spmv::new().alpha(0.75).beta(beta as f32).run(&Device::Cpu, &a, &x, &mut y).unwrap();
        let got: Vec<f64> = y.iter().map(|&v| v as f64).collect();
        let cmp = compare(&got, &want, &scale, tolerance::<f32>());
        prop_assert!(cmp.pass, "{cmp:?}");
    }
}

#[test]
fn long_rows_and_power_law_on_cpu() {
    let a = gen::power_law::<f32>(3000, 50_000, 16.0, 20_000, 1.5, 9).unwrap();
    assert_eq!(RowStats::of(&a).max_len, 20_000);
    for n in [1, 3, 8, 33] {
        check_spmm(&a, n, 0, 1, 1.0, -0.5, 4);
    }
}

#[test]
fn beta_zero_never_reads_c() {
    let a = gen::banded::<f64>(50, 5, 1).unwrap();
    let b = gen::dense::<f64>(50, 4, 4, 2).unwrap();
    let mut c = Dense::filled(50, 4, 4, f64::NAN).unwrap();
    Spmm::new().run(&Device::Cpu, &a, &b, &mut c).unwrap();
    assert!(c.data().iter().all(|v| v.is_finite()));
    let mut y = vec![f64::INFINITY; 50];
    Spmv::new()
        .run(
            &Device::Cpu,
            &a,
            b.to_packed().data().get(..50).unwrap(),
            &mut y,
        )
        .unwrap();
    assert!(y.iter().all(|v| v.is_finite()));
}

#[test]
fn empty_matrices_and_zero_columns() {
    for (m, k, n) in [(0, 0, 0), (0, 5, 3), (4, 0, 3), (4, 5, 0)] {
        let a = Csr::<f32>::empty(m, k).unwrap();
        check_spmm(&a, n, 0, 0, 1.0, 0.0, 1);
        check_spmm(&a, n, 1, 1, 1.0, 1.0, 1);
    }
}

#[test]
fn shape_errors_name_the_argument() {
    let a = gen::banded::<f32>(10, 3, 1).unwrap();
    let b = Dense::filled(9, 2, 2, 0.0f32).unwrap();
    let mut c = Dense::filled(10, 2, 2, 0.0f32).unwrap();
    let e = Spmm::new().run(&Device::Cpu, &a, &b, &mut c).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid argument `b`: has 9 rows but A has 10 columns"
    );
    let b = Dense::filled(10, 3, 3, 0.0f32).unwrap();
    let e = Spmm::new().run(&Device::Cpu, &a, &b, &mut c).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid argument `c`: is 10 x 2 but A * B is 10 x 3"
    );
    let mut c = Dense::filled(10, 3, 3, 0.0f32).unwrap();
    let e = Spmm::new()
        .alpha(f32::NAN)
        .run(&Device::Cpu, &a, &b, &mut c)
        .unwrap_err();
    assert_eq!(e.to_string(), "invalid argument `alpha`: NaN is not finite");
    let e = Spmm::new()
        .beta(f32::INFINITY)
        .run(&Device::Cpu, &a, &b, &mut c)
        .unwrap_err();
    assert_eq!(e.to_string(), "invalid argument `beta`: inf is not finite");

    let x = vec![0.0f32; 9];
    let mut y = vec![0.0f32; 10];
    let e = Spmv::new().run(&Device::Cpu, &a, &x, &mut y).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid argument `x`: has 9 elements but A has 10 columns"
    );
    let x = vec![0.0f32; 10];
    let mut y = vec![0.0f32; 11];
    let e = Spmv::new().run(&Device::Cpu, &a, &x, &mut y).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid argument `y`: has 11 elements but A has 10 rows"
    );
    assert!(matches!(e, Error::InvalidArgument { .. }));
}

#[test]
fn plan_on_cpu_says_so() {
    let a = gen::banded::<f32>(10, 3, 1).unwrap();
    let p = Spmm::<f32>::new()
        .plan(&Device::Cpu, &RowStats::of(&a), 8)
        .unwrap();
    assert_eq!(p.backend, Backend::Cpu);
    assert_eq!(p.kernel, None);
    assert!(
        p.reason.starts_with("the device is the CPU"),
        "{}",
        p.reason
    );
    // run() gives the plan plan() gives.
    let x = vec![1.0f32; 10];
    let mut y = vec![0.0f32; 10];
    let q = Spmv::new().run(&Device::Cpu, &a, &x, &mut y).unwrap();
    assert_eq!((q.backend, q.reason), (Backend::Cpu, p.reason));
}

/// A matrix whose rows straddle the CPU backend's piece length (65,536 entries): empty rows,
/// rows one short of it, at it, past it and several pieces long, among short ones, so its
/// work spans many tasks.
fn straddling_rows<T: Scalar>(seed: u64) -> Csr<T> {
    const P: usize = 1 << 16;
    let ncols = 200_000;
    let mut lens = vec![0, P - 1, 7, P, 0, P + 1, 3 * P + 5];
    let mut rng = Rng::new(seed);
    lens.extend((0..30_000).map(|_| rng.below(12) as usize));
    lens.push(2 * P);
    let mut row_ptr = vec![0i64];
    let (mut cols, mut vals) = (Vec::new(), Vec::new());
    for &l in &lens {
        // One column in each of l equal buckets: sorted and distinct.
        for k in 0..l {
            let bucket = ncols / l;
            cols.push((k * bucket + rng.below(bucket as u64) as usize) as i32);
            vals.push(T::from_f64(rng.range_f64(-1.0, 1.0)));
        }
        row_ptr.push(cols.len() as i64);
    }
    Csr::new(lens.len(), ncols, row_ptr, cols, vals).unwrap()
}

#[test]
fn cpu_products_over_pieces_and_many_tasks() {
    let a = straddling_rows::<f64>(3);
    for n in [1, 3, 8, 16, 32, 64, 70, 130] {
        check_spmm(&a, n, 1, 2, 0.5, -0.5, n as u64);
    }
    check_spmm(&a, 64, 0, 0, 1.0, 0.0, 5);
    let a = straddling_rows::<f32>(4);
    for n in [1, 8, 40] {
        check_spmm(&a, n, 0, 3, 1.25, 0.0, n as u64);
    }
    for beta in [0.0f32, -0.5] {
        let x = gen::dense::<f32>(a.ncols(), 1, 1, 9).unwrap().into_data();
        let mut y = if beta == 0.0 {
            vec![f32::NAN; a.nrows()]
        } else {
            gen::dense::<f32>(a.nrows(), 1, 1, 10).unwrap().into_data()
        };
        let (want, scale) = spmv_oracle::spmv(0.75, &a, &x, beta, &y);
        Spmv::new()
            .alpha(0.75)
            .beta(beta)
            .run(&Device::Cpu, &a, &x, &mut y)
            .unwrap();
        let got: Vec<f64> = y.iter().map(|&v| v as f64).collect();
        let cmp = compare(&got, &want, &scale, tolerance::<f32>());
        assert!(cmp.pass, "beta {beta}: {cmp:?}");
    }
}

#[test]
fn cpu_products_give_the_same_bits_on_any_number_of_threads() {
    let a = straddling_rows::<f32>(5);
    let b = gen::dense::<f32>(a.ncols(), 24, 24, 6).unwrap();
    let x = gen::dense::<f32>(a.ncols(), 1, 1, 7).unwrap().into_data();
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut c = Dense::filled(a.nrows(), 24, 24, 0.0f32).unwrap();
            Spmm::new().run(&Device::Cpu, &a, &b, &mut c).unwrap();
            let mut y = vec![0.0f32; a.nrows()];
            Spmv::new().run(&Device::Cpu, &a, &x, &mut y).unwrap();
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            (bits(c.data()), bits(&y))
        })
    };
    let one = run(1);
    assert_eq!(one, run(3));
    assert_eq!(one, run(8));
}

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
    let shape = win(8, 2).shape(&blocks, 4).unwrap();
    assert_eq!(shape.smem, 32 * 8 * 16);
    assert_eq!(shape.grid[0], 1000u32.div_ceil(32));
    let cap = plan::window_cap(32);
    assert_eq!(
        win(32, 1).window_rows(&stats(64.0, 10 * cap, 21.0)),
        cap as u32
    );
}

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
    assert_eq!(sparrow::ops::spmm::device_bytes(&a, &st, dense, n), want);
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
            let shape = GpuPath::Stream.shape(st, bytes).unwrap();
            assert_eq!(shape.grid[0] as usize, st.stream_blocks);
            assert_eq!(shape.smem as usize, items * bytes);
        }
    }
}

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
    assert!(p.applies(32, &un, 4) && !p.applies(32, &un, 8));
}

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
                let shape = path.shape(&st, bytes).unwrap();
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
                    p.shape(&big, bytes).unwrap().grid[0] as usize,
                    big.nrows.div_ceil(64)
                );
                big.nrows -= 1;
                assert_eq!(plan::choose(&big, 1, bytes).0, want);
            }
            assert!(why.contains(&format!("{d} diagonals")), "{why}");
            let n8 = plan::choose(&st, 8, bytes).0;
            assert!(!matches!(n8, GpuPath::Diag | GpuPath::DiagLanes { .. }));
        }
        assert!(GpuPath::Diag.applies(1, &st, 4), "forced, it runs");
        assert_eq!(GpuPath::Diag.kernel_for("f64", 1), "spmv_diag_f64");
        let why = GpuPath::Diag.why_not(8, &st, 4).unwrap();
        assert!(why.contains("N = 8"), "{why}");
        let shape = GpuPath::Diag.shape(&st, 4).unwrap();
        assert_eq!(shape.grid[0] as usize, a.nrows().div_ceil(256));
        let mut none = st;
        none.diagonals = 0;
        let extra = sparrow::ops::spmm::device_bytes(a, &st, 0, 1)
            - sparrow::ops::spmm::device_bytes(a, &none, 0, 1);
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
        let why = GpuPath::Diag.why_not(1, &st, 4).unwrap();
        assert!(why.contains("diagonals"), "{why}");
        let lanes = GpuPath::DiagLanes {
            lanes: 8,
            vectors: 2,
            steps: 1,
        };
        assert_eq!(lanes.why_not(1, &st, 4), Some(why));
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
                path.shape(&st, bytes).unwrap().grid[0] as usize,
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
        let why = GpuPath::Near { lanes: 4 }.why_not(2, &st, 8).unwrap();
        assert!(why.contains("N = 2"), "{why}");
        let mut far = st;
        far.reach = sparrow::ops::products::stats::NEAR_REACH + 1;
        assert!(!matches!(plan::choose(&far, 1, 8).0, GpuPath::Near { .. }));
        let why = GpuPath::Near { lanes: 2 }.why_not(1, &far, 8).unwrap();
        assert!(why.contains("32767") && why.contains("32768 away"), "{why}");
        let extra = sparrow::ops::spmm::device_bytes(a, &st, 0, 1)
            - sparrow::ops::spmm::device_bytes(a, &far, 0, 1);
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
        SLICE_GROUPS, SLICE_MEMBERS, SLICE_PIECE, SLICE_PIECES, SLICE_X_RATIO,
    };
    // Power-law rows over as many columns as rows: 66 groups' copies of x about 4.3 times the
    // entries.
    let a = gen::power_law::<f32>(150_000, 150_000, 16.0, 5_000, 1.5, 8).unwrap();
    let st = RowStats::of(&a);
    assert!(st.scattered() && st.sliceable(), "{st:?}");
    let cut: usize = (0..a.nrows())
        .map(|r| a.row_range(r).len().div_ceil(SLICE_PIECE).max(1))
        .sum();
    assert_eq!(st.pieces, cut);
    let (path, why) = plan::choose(&st, 1, 4);
    assert_eq!(path, GpuPath::Sliced, "{why}");
    assert!(why.contains("shared memory"), "{why}");
    let shape = path.shape(&st, 4).unwrap();
    assert_eq!(
        (shape.grid[0] as usize, shape.block[0], shape.cluster),
        (
            SLICE_GROUPS * SLICE_MEMBERS,
            1024,
            Some([SLICE_MEMBERS as u32, 1, 1])
        )
    );
    // A GPU that cannot run the kernel keeps the path it took before, as do N = 8 and f64.
    assert_ne!(plan::choose_on(&st, 1, 4, false).0, GpuPath::Sliced);
    assert_ne!(plan::choose(&st, 8, 4).0, GpuPath::Sliced);
    assert_ne!(plan::choose(&st, 1, 8).0, GpuPath::Sliced);
    let why = GpuPath::Sliced.why_not(1, &st, 8).unwrap();
    assert!(why.contains("f32 values only"), "{why}");
    assert_eq!(
        GpuPath::Sliced.kernels("f32", 1, &st, true),
        ["spmv_sliced_f32", "spmv_cut_f32"]
    );
    let why = GpuPath::Sliced.why_not(2, &st, 4).unwrap();
    assert!(why.contains("N = 2"), "{why}");
    // The bound on the copies of x: at the ratio the slices are taken, one column more not.
    let mut at = st;
    at.ncols = SLICE_X_RATIO * at.nnz / SLICE_GROUPS;
    assert!(at.sliceable());
    at.ncols += 1;
    assert!(!at.sliceable());
    assert_ne!(plan::choose(&at, 1, 4).0, GpuPath::Sliced);
    let why = GpuPath::Sliced.why_not(1, &at, 4).unwrap();
    assert!(why.contains("at most 5 times"), "{why}");
    // More pieces than 66 groups hold take more groups, whose copies count.
    let mut many = st;
    many.pieces = SLICE_PIECES * SLICE_GROUPS + 1;
    assert_eq!(many.slice_groups(), SLICE_GROUPS + 1);
    assert_eq!(many.slice_blocks(), (SLICE_GROUPS + 1) * SLICE_MEMBERS);
    // Local columns never take them, whatever the ratio.
    let banded = gen::banded::<f32>(50_000, 64, 1).unwrap().row_stats();
    assert!(!banded.scattered() && !banded.sliceable());
    let extra = sparrow::ops::spmm::device_bytes(&a, &st, 0, 1)
        - sparrow::ops::spmm::device_bytes(&a, &at, 0, 1);
    assert!(extra >= 8 * a.nnz() as u64, "{extra}");
    let a64 = gen::power_law::<f64>(150_000, 150_000, 16.0, 5_000, 1.5, 8).unwrap();
    assert_eq!(
        sparrow::ops::spmm::device_bytes(&a64, &st, 0, 1),
        sparrow::ops::spmm::device_bytes(&a64, &at, 0, 1)
    );
}
