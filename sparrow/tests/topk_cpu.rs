//! Segmented top-k on the CPU against the oracle, over the test matrix: every key type,
//! keys only and pairs, largest and smallest, every tie-break, unsorted and sorted, segment
//! lengths from 1 to over a million (at an unaligned offset), k from 1 to 300,000 and past the
//! segment, per-segment k, up to 100,000 segments, empty segments, adversarial values.

use half::{bf16, f16};
use sparrow::matrix::Rng;
use sparrow::ops::topk::check::{same_bytes, verify};
use sparrow::ops::topk::data::{keys, Pattern};
use sparrow::ops::topk::{IndexType, Key, Segments, TieBreak, TopK};
use sparrow::{Device, Error};

const TIES: [TieBreak; 3] = [
    TieBreak::Fast,
    TieBreak::SmallerIndex,
    TieBreak::LargerIndex,
];

fn check<K: Key, V: Key>(req: &TopK, k: &[K], segs: Segments, values: Option<&[V]>) {
    let (out, plan) = req.run(&Device::Cpu, k, segs, values).unwrap();
    assert!(plan.kernel.is_none());
    let layout = req.layout(k.len(), segs, values.map(|v| v.len())).unwrap();
    if let Err(e) = verify(req, k, &layout, values, &out) {
        panic!("{} {req:?}: {e}", K::NAME);
    }
    if req.tie() != TieBreak::Fast {
        let (again, _) = req.run(&Device::Cpu, k, segs, values).unwrap();
        assert!(same_bytes(&again, &out), "deterministic runs differ");
    }
}

fn random_offsets(rng: &mut Rng, nseg: usize, max_len: u64) -> Vec<i64> {
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

fn every_pattern<K: Key>() {
    let mut rng = Rng::new(K::BITS as u64 * 7 + K::NAME.len() as u64);
    for (pi, pattern) in Pattern::ALL.into_iter().enumerate() {
        let offsets = random_offsets(&mut rng, 12, 300);
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
                        check::<K, K>(&req, &k, Segments::Offsets(&offsets), None);
                        let req = req.index_type(IndexType::I32);
                        check(&req, &k, Segments::Offsets(&offsets), Some(&vals));
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

#[test]
fn values_of_every_width_travel_with_their_keys() {
    let k: Vec<f32> = keys(5000, Pattern::HeavyTies, 3);
    let o = [0i64, 1000, 1000, 5000];
    let req = TopK::largest(100).tie_break(TieBreak::SmallerIndex);
    check(
        &req,
        &k,
        Segments::Offsets(&o),
        Some(&keys::<u8>(5000, Pattern::RandomBits, 1)),
    );
    check(
        &req,
        &k,
        Segments::Offsets(&o),
        Some(&keys::<i16>(5000, Pattern::RandomBits, 2)),
    );
    check(
        &req,
        &k,
        Segments::Offsets(&o),
        Some(&keys::<bf16>(5000, Pattern::RandomBits, 3)),
    );
    check(
        &req,
        &k,
        Segments::Offsets(&o),
        Some(&keys::<u64>(5000, Pattern::RandomBits, 4)),
    );
}

#[test]
fn lengths_one_to_4096_with_k_up_to_4096() {
    let mut rng = Rng::new(5);
    let offsets = random_offsets(&mut rng, 150, 4096);
    let k: Vec<f32> = keys(*offsets.last().unwrap() as usize, Pattern::RandomBits, 6);
    for kk in [1, 16, 100, 1000, 4096] {
        for tie in TIES {
            check::<f32, f32>(
                &TopK::largest(kk).tie_break(tie),
                &k,
                Segments::Offsets(&offsets),
                None,
            );
        }
    }
    let ks: Vec<i64> = (0..150).map(|_| rng.below(5000) as i64).collect();
    check::<f32, f32>(
        &TopK::per_segment(ks, false).sorted(true),
        &k,
        Segments::Offsets(&offsets),
        None,
    );
}

#[test]
fn long_segments_and_large_k() {
    // 8192 fixed; 65,536 with heavy ties; 131,072.
    let k: Vec<f32> = keys(8192 * 4, Pattern::RandomBits, 7);
    check::<f32, f32>(
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
        &TopK::largest(2048).tie_break(TieBreak::LargerIndex),
        &k,
        Segments::Fixed {
            count: 1,
            len: 131_072,
        },
        None,
    );
    // 1,048,576 at an unaligned offset, k up to 300,000; the within-segment parallel path.
    let n = 1_048_576;
    let k: Vec<f32> = keys(n + 11, Pattern::RandomBits, 10);
    let o = [7i64, 7 + n as i64];
    for kk in [1, 4096, 300_000] {
        check::<f32, f32>(
            &TopK::largest(kk).tie_break(TieBreak::SmallerIndex),
            &k,
            Segments::Offsets(&o),
            None,
        );
    }
    check::<f32, f32>(
        &TopK::smallest(300_000).sorted(true),
        &k,
        Segments::Offsets(&o),
        None,
    );
    let k: Vec<u16> = keys(n + 11, Pattern::TwoValues, 11);
    check::<u16, u16>(
        &TopK::largest(300_000).tie_break(TieBreak::LargerIndex),
        &k,
        Segments::Offsets(&o),
        None,
    );
    // Mixed lengths up to 1.1M.
    let o = [0i64, 1_100_000, 1_100_001, 1_100_001, 1_600_000];
    let k: Vec<bf16> = keys(1_600_000, Pattern::RandomBits, 12);
    check::<bf16, bf16>(
        &TopK::largest(5000)
            .tie_break(TieBreak::SmallerIndex)
            .sorted(true),
        &k,
        Segments::Offsets(&o),
        None,
    );
}

#[test]
fn k_past_the_segment_pads() {
    let k: Vec<i8> = vec![3, -1, 7];
    let o = [0i64, 3, 3];
    let (out, _) = TopK::largest(5)
        .run_keys(&Device::Cpu, &k, Segments::Offsets(&o))
        .unwrap();
    // The width stops at the longest segment (3), not at k = 5.
    assert_eq!(out.width, 3);
    assert_eq!(out.keys, vec![3, -1, 7, i8::MIN, i8::MIN, i8::MIN]);
    assert_eq!(out.counts, vec![3, 0]);
    assert_eq!(out.indices.get(3), -1);
    let (out, _) = TopK::smallest(2)
        .sorted(true)
        .run_keys(
            &Device::Cpu,
            &[1.0f32, f32::NAN, -0.0, 0.0],
            Segments::Fixed { count: 1, len: 4 },
        )
        .unwrap();
    // -0.0 and +0.0 tie: sorted ties go by position.
    assert_eq!(
        out.keys.iter().map(|k| k.to_bits()).collect::<Vec<_>>(),
        vec![(-0.0f32).to_bits(), 0.0f32.to_bits()]
    );
    let (out, _) = TopK::largest(2)
        .sorted(true)
        .run_keys(
            &Device::Cpu,
            &[1.0f32, -f32::NAN, f32::INFINITY, 0.0],
            Segments::Fixed { count: 1, len: 4 },
        )
        .unwrap();
    assert!(
        out.keys[0].is_nan() && out.keys[1] == f32::INFINITY,
        "NaN of any sign ranks above +inf"
    );
    let (out, _) = TopK::smallest(4)
        .run_keys(
            &Device::Cpu,
            &[2.0f32],
            Segments::Fixed { count: 1, len: 1 },
        )
        .unwrap();
    assert_eq!(out.keys, vec![2.0]);
    // A shorter segment beside a longer one is padded up to the longer one's length.
    let (out, _) = TopK::smallest(4)
        .run_keys(
            &Device::Cpu,
            &[2.0f32, 5.0, 1.0, 3.0],
            Segments::Offsets(&[0, 1, 4]),
        )
        .unwrap();
    assert_eq!(
        out.keys,
        vec![2.0, f32::INFINITY, f32::INFINITY, 5.0, 1.0, 3.0]
    );
}

#[test]
fn many_segments_and_empty_ones() {
    let k: Vec<u32> = keys(100_000 * 8, Pattern::RandomBits, 13);
    check::<u32, u32>(
        &TopK::largest(3).tie_break(TieBreak::SmallerIndex),
        &k,
        Segments::Fixed {
            count: 100_000,
            len: 8,
        },
        None,
    );
    check::<u32, u32>(
        &TopK::largest(3),
        &[],
        Segments::Fixed { count: 0, len: 8 },
        None,
    );
    check::<u32, u32>(
        &TopK::largest(0),
        &k[..16],
        Segments::Fixed { count: 2, len: 8 },
        None,
    );
    check::<u32, u32>(&TopK::largest(4), &[], Segments::Offsets(&[0, 0, 0]), None);
}

#[test]
fn invalid_requests_name_the_argument() {
    let k = vec![1.0f32; 10];
    let err = |r: Result<_, Error>| {
        r.map(|_: (sparrow::ops::topk::TopKOutput<f32, f32>, _)| ())
            .unwrap_err()
            .to_string()
    };
    let run = |req: TopK, segs: Segments, v: Option<&[f32]>| req.run(&Device::Cpu, &k, segs, v);
    assert_eq!(err(run(TopK::largest(2), Segments::Offsets(&[0, 5, 3]), None)), "invalid argument `offsets`: offsets[2] = 3 is below offsets[1] = 5; offsets must not decrease");
    assert_eq!(
        err(run(TopK::largest(2), Segments::Offsets(&[0, 11]), None)),
        "invalid argument `offsets`: offsets[1] = 11 is past the end of the 10 keys"
    );
    assert_eq!(
        err(run(TopK::largest(2), Segments::Offsets(&[-1, 3]), None)),
        "invalid argument `offsets`: offsets[0] = -1 is negative"
    );
    assert_eq!(
        err(run(TopK::largest(2), Segments::Offsets(&[]), None)),
        "invalid argument `offsets`: is empty; n segments need n + 1 offsets"
    );
    assert_eq!(
        err(run(
            TopK::largest(2),
            Segments::Fixed { count: 3, len: 4 },
            None
        )),
        "invalid argument `keys`: 10 keys do not make 3 segments of 4"
    );
    assert_eq!(
        err(run(
            TopK::per_segment(vec![1, 2, 3], true),
            Segments::Fixed { count: 2, len: 5 },
            None
        )),
        "invalid argument `k`: the per-segment k array has 3 entries but there are 2 segments"
    );
    assert_eq!(
        err(run(
            TopK::per_segment(vec![1, -2], true),
            Segments::Fixed { count: 2, len: 5 },
            None
        )),
        "invalid argument `k`: k[1] = -2 is negative"
    );
    assert_eq!(
        err(run(
            TopK::largest(2),
            Segments::Fixed { count: 2, len: 5 },
            Some(&[1.0; 9])
        )),
        "invalid argument `values`: has 9 entries but there are 10 keys"
    );
    let e = TopK::largest(1)
        .index_type(IndexType::I32)
        .layout(3_000_000_000, Segments::Offsets(&[0, 3_000_000_000]), None)
        .unwrap_err();
    assert_eq!(e.to_string(), "invalid argument `index type`: segment 0 has 3000000000 keys; positions past 2^31 need 64-bit indices");
}
