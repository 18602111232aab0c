//! Phi stored as FP8 e4m3 (the `fn` variant: bias 7, three mantissa bits, no infinities, 448
//! the largest finite value) with one f32 scale per row, for the GPU's FP8 correlate: a
//! quarter of f32's bytes, at a relative rounding error of at most 2^-4 per entry.

/// The value of an e4m3 byte (NaN for 0x7F and 0xFF).
pub fn decode(b: u8) -> f32 {
    let sign = if b & 0x80 != 0 { -1.0f32 } else { 1.0 };
    let (e, m) = ((b >> 3) & 0x0F, b & 0x07);
    if e == 0x0F && m == 0x07 {
        return f32::NAN;
    }
    let mag = if e == 0 {
        m as f32 / 8.0 * 2f32.powi(-6)
    } else {
        (1.0 + m as f32 / 8.0) * 2f32.powi(e as i32 - 7)
    };
    sign * mag
}

/// The e4m3 byte nearest to `v` (ties to the even code, as `cvt.rn` rounds), saturating at
/// +-448; NaN stays NaN.
pub fn encode(v: f32) -> u8 {
    if v.is_nan() {
        return 0x7F;
    }
    let sign = if v.is_sign_negative() { 0x80 } else { 0 };
    let a = v.abs();
    // Codes 0..=0x7E are the finite magnitudes, in increasing order.
    let (mut lo, mut hi) = (0u8, 0x7Eu8);
    if a >= decode(hi) {
        return sign | hi;
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if decode(mid) <= a {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let (dl, dh) = (a - decode(lo), decode(hi) - a);
    let code = if dl < dh || (dl == dh && lo & 1 == 0) {
        lo
    } else {
        hi
    };
    sign | code
}

/// Quantizes a row-major m x n matrix: each row scaled so its largest magnitude maps to 448
/// (a zero row gets scale 1). Returns the bytes and the per-row scales; entry (i, j) stands
/// for `scale[i] * decode(q[i * n + j])`.
pub fn quantize_rows(a: &[f64], m: usize, n: usize) -> (Vec<u8>, Vec<f32>) {
    let mut q = vec![0u8; m * n];
    let mut scale = vec![1f32; m];
    for i in 0..m {
        let row = &a[i * n..(i + 1) * n];
        let amax = row.iter().fold(0f64, |x, v| x.max(v.abs()));
        if amax > 0.0 {
            scale[i] = (amax / 448.0) as f32;
        }
        for (j, &v) in row.iter().enumerate() {
            q[i * n + j] = encode((v / scale[i] as f64) as f32);
        }
    }
    (q, scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every finite code round-trips, the grid's extremes are right, halfway points go to the
    /// even code, and the relative error stays within 2^-4 on normal values.
    #[test]
    fn e4m3_round_trip_and_rounding() {
        for b in 0u8..=0xFF {
            if b & 0x7F == 0x7F {
                assert!(decode(b).is_nan());
                continue;
            }
            assert_eq!(
                encode(decode(b)),
                if b == 0x80 { 0x80 } else { b },
                "{b:#x}"
            );
        }
        assert_eq!(decode(0x7E), 448.0);
        assert_eq!(decode(0x01), 2f32.powi(-9));
        assert_eq!(encode(1000.0), 0x7E);
        // 1.0 is 0x38 and 1.125 is 0x39: halfway goes to 0x38 (even).
        assert_eq!(encode(1.0625), 0x38);
        // 1.125 (0x39) and 1.25 (0x3A): halfway goes to 0x3A.
        assert_eq!(encode(1.1875), 0x3A);
        for i in 0..10_000 {
            let v = 2f32.powi(-6) + i as f32 * 0.0447;
            let r = decode(encode(v));
            assert!(((r - v) / v).abs() <= 1.0 / 16.0 + 1e-6, "{v} -> {r}");
        }
    }
}
