//! Segmented top-k on the CPU against the oracle, over the test matrix: every key type,
//! keys only and pairs, largest and smallest, every tie-break, unsorted and sorted, segment
//! lengths from 1 to over a million (at an unaligned offset), k from 1 to 300,000 and past the
//! segment, per-segment k, up to 100,000 segments, empty segments, adversarial values.

#[cfg(not(feature = "internals"))]
compile_error!("the library's integration tests use its layers: run `cargo test --workspace`, or `cargo test -p sparrow --features testing`");

use half::{bf16, f16};
use sparrow::matrix::Rng;
use sparrow::ops::topk::data::{keys, Pattern};
use sparrow::ops::topk::{IndexType, Key, Segments, TopK};
use sparrow::Device;

#[macro_use]
mod device {
    include!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/shared/device.rs"
    ));
}
#[macro_use]
mod shared {
    include!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/shared/topk.rs"));
}
use shared::{check, TIES};

topk_tests_on!(Device::Cpu);

fn every_pattern<K: Key>() {
    let mut rng = Rng::new(K::BITS as u64 * 7 + K::NAME.len() as u64);
    for (pi, pattern) in Pattern::ALL.into_iter().enumerate() {
        let offsets = shared::random_offsets(&mut rng, 12, 300);
        let n = *offsets.last().unwrap() as usize;
        let k: Vec<K> = keys(n, pattern, pi as u64);
        let vals: Vec<f64> = (0..n).map(|i| i as f64 * 0.5).collect();
        for largest in [true, false] {
            for tie in TIES {
                for sorted in [false, true] {
                    for kk in [1usize, 7, 64, 301] {
                        let base = if largest {
                            TopK::largest(kk)
                        } else {
                            TopK::smallest(kk)
                        };
                        let req = base.tie_break(tie).sorted(sorted);
                        check::<K, K>(&Device::Cpu, &req, &k, Segments::Offsets(&offsets), None);
                        let req = req.index_type(IndexType::I32);
                        check(
                            &Device::Cpu,
                            &req,
                            &k,
                            Segments::Offsets(&offsets),
                            Some(&vals),
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn every_key_type_and_pattern() {
    every_pattern::<f32>();
    every_pattern::<f64>();
    every_pattern::<f16>();
    every_pattern::<bf16>();
    every_pattern::<i8>();
    every_pattern::<u8>();
    every_pattern::<i16>();
    every_pattern::<u16>();
    every_pattern::<i32>();
    every_pattern::<u32>();
    every_pattern::<i64>();
    every_pattern::<u64>();
}
