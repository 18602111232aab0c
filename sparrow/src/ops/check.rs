//! Comparing a backend's output with a reference: error relative to the magnitudes that were
//! summed (`|alpha| |A| |B| + |beta| |C|` for the products), with an absolute floor, so a
//! cancelled result near zero is judged by the rounding its inputs allow.

/// The outcome of one comparison.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Comparison {
    /// Elements compared.
    pub count: usize,
    /// Largest `|got - want| / max(scale, floor)`.
    pub max_rel: f64,
    /// Largest `|got - want|`.
    pub max_abs: f64,
    /// Index of the worst element, if any failed.
    pub worst: Option<usize>,
    /// Elements that are NaN or infinite where the reference is finite (unwritten sentinels
    /// show up here).
    pub non_finite: usize,
    /// Whether every element is within tolerance.
    pub pass: bool,
}

/// Compares `got` with `want` elementwise; `scale[i]` is the magnitude element i was summed
/// from. Passes when every relative error is at most `tol` and nothing is non-finite unless
/// the reference is.
pub fn compare(got: &[f64], want: &[f64], scale: &[f64], tol: f64) -> Comparison {
    assert_eq!(got.len(), want.len());
    assert_eq!(got.len(), scale.len());
    let floor = f64::MIN_POSITIVE;
    let mut c = Comparison {
        count: got.len(),
        pass: true,
        ..Default::default()
    };
    let mut worst_rel = -1.0;
    for i in 0..got.len() {
        let (g, w) = (got[i], want[i]);
        if !g.is_finite() || !w.is_finite() {
            let same = (g.is_nan() && w.is_nan()) || g == w;
            if !same {
                c.non_finite += 1;
                c.pass = false;
                if c.worst.is_none() || worst_rel < f64::INFINITY {
                    c.worst = Some(i);
                    worst_rel = f64::INFINITY;
                }
            }
            continue;
        }
        let abs = (g - w).abs();
        let rel = abs / scale[i].max(floor);
        c.max_abs = c.max_abs.max(abs);
        if rel > c.max_rel {
            c.max_rel = rel;
        }
        if rel > tol {
            c.pass = false;
            if rel > worst_rel {
                worst_rel = rel;
                c.worst = Some(i);
            }
        }
    }
    if c.non_finite > 0 {
        c.max_rel = f64::INFINITY;
    }
    c
}

/// The tolerance for value type `T` used across tests and `validate`: 1e-5 for f32 and
/// 1e-12 for f64, relative to the summed magnitudes.
pub fn tolerance<T: crate::Scalar>() -> f64 {
    if T::NAME == "f32" {
        1e-5
    } else {
        1e-12
    }
}

/// Whether every element of `c` between its last column and its leading dimension is still
/// NaN: outputs are filled with NaN before a product, so a kernel that wrote past its columns
/// shows here.
pub fn padding_is_nan<T: crate::Scalar>(c: &crate::matrix::Dense<T>) -> bool {
    let (n, ld, data) = (c.ncols(), c.ld(), c.data());
    (0..c.nrows()).all(|i| {
        data[(i * ld + n).min(data.len())..(i * ld + ld).min(data.len())]
            .iter()
            .all(|v| v.to_f64().is_nan())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Dense;

    #[test]
    fn padding_is_nan_sees_a_write_past_the_columns() {
        let mut c = Dense::<f32>::filled(3, 2, 5, f32::NAN).unwrap();
        for i in 0..3 {
            for j in 0..2 {
                c.data_mut()[i * 5 + j] = 1.0;
            }
        }
        assert!(padding_is_nan(&c));
        c.data_mut()[5 + 4] = 0.0;
        assert!(!padding_is_nan(&c));
        assert!(padding_is_nan(&Dense::<f64>::filled(4, 3, 3, 2.0).unwrap()));
    }
}
