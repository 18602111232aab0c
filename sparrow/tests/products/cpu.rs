//! The CPU backend against the naive oracle over random shapes, leading dimensions, scalars,
//! adversarial contents and many tasks; request validation; and the plan on the CPU.

use proptest::prelude::*;
use sparrow::matrix::{gen, Csr, Dense, Rng};
use sparrow::ops::check::{compare, tolerance};
use sparrow::ops::products::oracle as spmm_oracle;
use sparrow::ops::products::oracle as spmv_oracle;
use sparrow::ops::products::{RowStats, Spmm, Spmv};
use sparrow::ops::Backend;
use sparrow::{Device, Scalar};

#[macro_use]
mod shared {
    include!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/shared/products.rs"
    ));
}

products_tests_on!(Device::Cpu);

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
fn empty_matrices_and_zero_columns() {
    for (m, k, n) in [(0, 0, 0), (0, 5, 3), (4, 0, 3), (4, 5, 0)] {
        let a = Csr::<f32>::empty(m, k).unwrap();
        check_spmm(&a, n, 0, 0, 1.0, 0.0, 1);
        check_spmm(&a, n, 1, 1, 1.0, 1.0, 1);
    }
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
