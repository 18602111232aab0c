// SpMM and SpMV bodies shared by the CPU and GPU tests (see `device.rs`).

use sparrow::matrix::{gen, Dense};
use sparrow::ops::products::{Spmm, Spmv};
use sparrow::{Device, Error};

/// With beta = 0 the output is not read: NaN and infinities there never reach the result.
pub fn beta_zero_never_reads_c(d: &Device) {
    let a = gen::banded::<f64>(50, 5, 1).unwrap();
    let b = gen::dense::<f64>(50, 4, 4, 2).unwrap();
    let mut c = Dense::filled(50, 4, 4, f64::NAN).unwrap();
    Spmm::new().run(d, &a, &b, &mut c).unwrap();
    assert!(c.data().iter().all(|v| v.is_finite()));
    let mut y = vec![f64::INFINITY; 50];
    let x = b.to_packed().data().get(..50).unwrap().to_vec();
    Spmv::new().run(d, &a, &x, &mut y).unwrap();
    assert!(y.iter().all(|v| v.is_finite()));
}

/// Shapes that do not agree and scalars that are not finite are refused, naming the argument.
pub fn shape_errors_name_the_argument(d: &Device) {
    let a = gen::banded::<f32>(10, 3, 1).unwrap();
    let b = Dense::filled(9, 2, 2, 0.0f32).unwrap();
    let mut c = Dense::filled(10, 2, 2, 0.0f32).unwrap();
    let e = Spmm::new().run(d, &a, &b, &mut c).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid argument `b`: has 9 rows but A has 10 columns"
    );
    let b = Dense::filled(10, 3, 3, 0.0f32).unwrap();
    let e = Spmm::new().run(d, &a, &b, &mut c).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid argument `c`: is 10 x 2 but A * B is 10 x 3"
    );
    let mut c = Dense::filled(10, 3, 3, 0.0f32).unwrap();
    let e = Spmm::new()
        .alpha(f32::NAN)
        .run(d, &a, &b, &mut c)
        .unwrap_err();
    assert_eq!(e.to_string(), "invalid argument `alpha`: NaN is not finite");
    let e = Spmm::new()
        .beta(f32::INFINITY)
        .run(d, &a, &b, &mut c)
        .unwrap_err();
    assert_eq!(e.to_string(), "invalid argument `beta`: inf is not finite");

    let x = vec![0.0f32; 9];
    let mut y = vec![0.0f32; 10];
    let e = Spmv::new().run(d, &a, &x, &mut y).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid argument `x`: has 9 elements but A has 10 columns"
    );
    let x = vec![0.0f32; 10];
    let mut y = vec![0.0f32; 11];
    let e = Spmv::new().run(d, &a, &x, &mut y).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid argument `y`: has 11 elements but A has 10 rows"
    );
    assert!(matches!(e, Error::InvalidArgument { .. }));
}

/// Declares every body above as a test on `$dev` (see `test_device!`).
macro_rules! products_tests_on {
    ($dev:expr) => {
        test_device!($dev; shared::{beta_zero_never_reads_c, shape_errors_name_the_argument});
    };
}
