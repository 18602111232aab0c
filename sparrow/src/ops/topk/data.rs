//! Key generators for tests, validation and benchmarks: random bits (every class of float
//! appears: NaN of both signs, infinities, zeros, subnormals), and the adversarial patterns a
//! production top-k is held to.

use super::key::{directed, width_mask, Key};
use crate::matrix::Rng;

/// A distribution of keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Uniformly random bits.
    RandomBits,
    /// Uniform in [0, 1) for floats; random bits for integers (benchmark data).
    Uniform,
    /// Every key equal.
    AllEqual,
    /// Two distinct values.
    TwoValues,
    /// Few distinct values (16): heavy ties.
    HeavyTies,
    /// Ascending in key order.
    Ascending,
    /// Descending in key order.
    Descending,
    /// Only special values: +-0, +-inf, NaN of both signs, smallest subnormals, extremes.
    Specials,
    /// All bits equal but the lowest 8.
    SharedHighBits,
}

impl Pattern {
    /// Every pattern, for test matrices.
    pub const ALL: [Pattern; 9] = [
        Pattern::RandomBits,
        Pattern::Uniform,
        Pattern::AllEqual,
        Pattern::TwoValues,
        Pattern::HeavyTies,
        Pattern::Ascending,
        Pattern::Descending,
        Pattern::Specials,
        Pattern::SharedHighBits,
    ];
}

/// `n` keys of `pattern`, deterministic for `seed`.
pub fn keys<K: Key>(n: usize, pattern: Pattern, seed: u64) -> Vec<K> {
    let mut rng = Rng::new(seed);
    let mask = width_mask(K::BITS);
    let sign = 1u64 << (K::BITS - 1);
    let mut v: Vec<K> = match pattern {
        Pattern::RandomBits | Pattern::Ascending | Pattern::Descending => (0..n)
            .map(|_| K::from_bits(rng.next_u64() & mask))
            .collect(),
        Pattern::Uniform => {
            let one = one_bits::<K>();
            match one {
                // Floats: the bits of 1.0 + a random mantissa, minus nothing: values in [1, 2)
                // order exactly like [0, 1) scaled, which is all a selection sees.
                Some(one_b) => {
                    let mant = one_b.trailing_zeros().min(K::BITS - 2);
                    (0..n)
                        .map(|_| K::from_bits(one_b | (rng.next_u64() & ((1u64 << mant) - 1))))
                        .collect()
                }
                None => (0..n)
                    .map(|_| K::from_bits(rng.next_u64() & mask))
                    .collect(),
            }
        }
        Pattern::AllEqual => {
            let b = rng.next_u64() & mask;
            vec![K::from_bits(b); n]
        }
        Pattern::TwoValues => {
            let (a, b) = (rng.next_u64() & mask, rng.next_u64() & mask);
            (0..n)
                .map(|_| K::from_bits(if rng.next_u64() & 1 == 0 { a } else { b }))
                .collect()
        }
        Pattern::HeavyTies => {
            let vals: Vec<u64> = (0..16).map(|_| rng.next_u64() & mask).collect();
            (0..n)
                .map(|_| K::from_bits(vals[rng.below(16) as usize]))
                .collect()
        }
        Pattern::Specials => {
            let s = [
                0,
                sign,
                mask,
                mask >> 1,
                1,
                sign | 1,
                K::lowest().to_bits(),
                K::highest().to_bits(),
                sign - 1,
            ];
            (0..n)
                .map(|_| K::from_bits(s[rng.below(s.len() as u64) as usize]))
                .collect()
        }
        Pattern::SharedHighBits => {
            let high = rng.next_u64() & mask & !0xff;
            (0..n)
                .map(|_| K::from_bits(high | (rng.next_u64() & 0xff)))
                .collect()
        }
    };
    match pattern {
        Pattern::Ascending => v.sort_by_key(|&k| directed(k, true)),
        Pattern::Descending => v.sort_by_key(|&k| std::cmp::Reverse(directed(k, true))),
        _ => {}
    }
    v
}

/// The bits of 1.0 for float key types (recognised by their radix of +-0 differing from the
/// integer mapping), None for integers.
fn one_bits<K: Key>() -> Option<u64> {
    let sign = 1u64 << (K::BITS - 1);
    // Floats map -0 and +0 to the same radix; integers map them (0 and sign) apart.
    if K::from_bits(sign).radix() != K::from_bits(0).radix() {
        return None;
    }
    Some(match K::BITS {
        16 if K::NAME == "bf16" => 0x3f80,
        16 => 0x3c00,
        32 => 0x3f80_0000,
        _ => 0x3ff0_0000_0000_0000,
    })
}
