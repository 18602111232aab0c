// Segmented top-k bodies shared by the CPU and GPU tests (see `device.rs`). Reference: the
// naive oracle (sort per segment), exactly for the deterministic tie-breaks and as a multiset
// for the fast one; a deterministic run must repeat byte for byte and, on the GPU, equal the
// CPU backend's.

use half::{bf16, f16};
use sparrow::matrix::Rng;
use sparrow::ops::topk::check::{same_bytes, verify};
use sparrow::ops::topk::data::{keys, Pattern};
use sparrow::ops::topk::{IndexType, Key, Segments, TieBreak, TopK, TopKOutput};
use sparrow::ops::{Backend, Plan};
use sparrow::{Device, Error};

/// Every tie-break.
pub const TIES: [TieBreak; 3] = [
    TieBreak::Fast,
    TieBreak::SmallerIndex,
    TieBreak::LargerIndex,
];

/// Runs `req` on `d` and checks its output against the oracle; for the deterministic
/// tie-breaks also against a second run (without the GPU's sentinel fill, as calls run by
/// default, so no result may depend on it) and, on the GPU, the CPU's bytes. Returns the plan,
/// so a test asserts the path it meant to reach from the checked run itself.
pub fn check<K: Key, V: Key>(
    d: &Device,
    req: &TopK,
    k: &[K],
    segs: Segments,
    values: Option<&[V]>,
) -> Plan {
    let (out, plan) = req.run(d, k, segs, values).unwrap();
    let backend = match d {
        Device::Cpu => Backend::Cpu,
        Device::Cuda(_) => Backend::Cuda,
    };
    assert_eq!(plan.backend, backend, "{plan}");
    let layout = req.layout(k.len(), segs, values.map(|v| v.len())).unwrap();
    if let Err(e) = verify(req, k, &layout, values, &out) {
        panic!("{} {req:?} [{plan}]: {e}", K::NAME);
    }
    if req.tie() != TieBreak::Fast {
        let sentinels = d.gpu().map(|g| g.sentinels());
        if let Some(g) = d.gpu() {
            g.set_sentinels(false);
        }
        let again = req.run(d, k, segs, values);
        if let (Some(g), Some(was)) = (d.gpu(), sentinels) {
            g.set_sentinels(was);
        }
        let (again, _) = again.unwrap();
        assert!(
            same_bytes(&again, &out),
            "{} {req:?}: two runs differ",
            K::NAME
        );
        if d.gpu().is_some() {
            let (cpu, _) = req.run(&Device::Cpu, k, segs, values).unwrap();
            assert!(
                same_bytes(&cpu, &out),
                "{} {req:?}: GPU and CPU differ",
                K::NAME
            );
        }
    }
    plan
}

/// Offsets of `nseg` segments of up to `max_len` keys, a sixth of them empty.
pub fn random_offsets(rng: &mut Rng, nseg: usize, max_len: u64) -> Vec<i64> {
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

/// Values of 8 to 64 bits travel with their keys, across an empty segment.
pub fn values_of_every_width_travel_with_their_keys(d: &Device) {
    let k: Vec<f32> = keys(5000, Pattern::HeavyTies, 3);
    let o = [0i64, 1000, 1000, 5000];
    let req = TopK::largest(100).tie_break(TieBreak::SmallerIndex);
    let s = Segments::Offsets(&o);
    check(
        d,
        &req,
        &k,
        s,
        Some(&keys::<u8>(5000, Pattern::RandomBits, 1)),
    );
    check(
        d,
        &req,
        &k,
        s,
        Some(&keys::<i16>(5000, Pattern::RandomBits, 2)),
    );
    check(
        d,
        &req,
        &k,
        s,
        Some(&keys::<bf16>(5000, Pattern::RandomBits, 3)),
    );
    check(
        d,
        &req,
        &k,
        s,
        Some(&keys::<u64>(5000, Pattern::RandomBits, 4)),
    );
    check(
        d,
        &req,
        &k,
        s,
        Some(&keys::<f16>(5000, Pattern::RandomBits, 5)),
    );
}

/// Segments of 1 to 4,096 keys with k from 1 to 4,096, every tie-break, and a per-segment k
/// past some segments, sorted.
pub fn lengths_one_to_4096_with_k_up_to_4096(d: &Device) {
    let mut rng = Rng::new(5);
    let offsets = random_offsets(&mut rng, 150, 4096);
    let k: Vec<f32> = keys(*offsets.last().unwrap() as usize, Pattern::RandomBits, 6);
    for kk in [1, 16, 100, 1000, 4096] {
        for tie in TIES {
            let req = TopK::largest(kk).tie_break(tie);
            check::<f32, f32>(d, &req, &k, Segments::Offsets(&offsets), None);
        }
    }
    let ks: Vec<i64> = (0..150).map(|_| rng.below(5000) as i64).collect();
    let req = TopK::per_segment(ks, false).sorted(true);
    check::<f32, f32>(d, &req, &k, Segments::Offsets(&offsets), None);
}

/// Segments of 8,192 to 1.1M keys (one at an unaligned offset), k up to 300,000, heavy ties,
/// special values, two values, all equal.
pub fn long_segments_and_large_k(d: &Device) {
    let fixed = |count, len| Segments::Fixed { count, len };
    let k: Vec<f32> = keys(8192 * 4, Pattern::RandomBits, 7);
    check::<f32, f32>(
        d,
        &TopK::largest(256).sorted(true),
        &k,
        fixed(4, 8192),
        None,
    );
    let k: Vec<i32> = keys(65_536 * 2, Pattern::HeavyTies, 8);
    for tie in TIES {
        let req = TopK::smallest(1000).tie_break(tie);
        check::<i32, i32>(d, &req, &k, fixed(2, 65_536), None);
    }
    let k: Vec<f64> = keys(131_072, Pattern::Specials, 9);
    for sorted in [false, true] {
        let req = TopK::largest(2048)
            .tie_break(TieBreak::LargerIndex)
            .sorted(sorted);
        check::<f64, f64>(d, &req, &k, fixed(1, 131_072), None);
    }
    let n = 1_048_576;
    let k: Vec<f32> = keys(n + 11, Pattern::RandomBits, 10);
    let o = [7i64, 7 + n as i64];
    for kk in [1, 4096, 300_000] {
        let req = TopK::largest(kk).tie_break(TieBreak::SmallerIndex);
        check::<f32, f32>(d, &req, &k, Segments::Offsets(&o), None);
    }
    let req = TopK::smallest(300_000).sorted(true);
    check::<f32, f32>(d, &req, &k, Segments::Offsets(&o), None);
    let k: Vec<u16> = keys(n + 11, Pattern::TwoValues, 11);
    let req = TopK::largest(300_000).tie_break(TieBreak::LargerIndex);
    check::<u16, u16>(d, &req, &k, Segments::Offsets(&o), None);
    let o = [0i64, 1_100_000, 1_100_001, 1_100_001, 1_600_000];
    let k: Vec<bf16> = keys(1_600_000, Pattern::RandomBits, 12);
    let req = TopK::largest(5000)
        .tie_break(TieBreak::SmallerIndex)
        .sorted(true);
    check::<bf16, bf16>(d, &req, &k, Segments::Offsets(&o), None);
    let k: Vec<f32> = keys(n, Pattern::AllEqual, 13);
    let req = TopK::largest(1000).tie_break(TieBreak::LargerIndex);
    check::<f32, f32>(d, &req, &k, fixed(1, n), None);
}

/// The output's width, padding, signed zeros and NaN, by hand.
pub fn k_past_the_segment_pads(d: &Device) {
    let k: Vec<i8> = vec![3, -1, 7];
    let o = [0i64, 3, 3];
    // Unsorted rows list the keys by position (any order only with the fast tie-break).
    let (out, _) = TopK::largest(5)
        .tie_break(TieBreak::SmallerIndex)
        .run_keys(d, &k, Segments::Offsets(&o))
        .unwrap();
    // The width stops at the longest segment (3), not at k = 5.
    assert_eq!(out.width, 3);
    assert_eq!(out.keys, vec![3, -1, 7, i8::MIN, i8::MIN, i8::MIN]);
    assert_eq!(out.counts, vec![3, 0]);
    assert_eq!(out.indices.get(3), -1);
    let (out, _) = TopK::smallest(2)
        .sorted(true)
        .run_keys(
            d,
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
            d,
            &[1.0f32, -f32::NAN, f32::INFINITY, 0.0],
            Segments::Fixed { count: 1, len: 4 },
        )
        .unwrap();
    assert!(
        out.keys[0].is_nan() && out.keys[1] == f32::INFINITY,
        "NaN of any sign ranks above +inf"
    );
    let (out, _) = TopK::smallest(4)
        .run_keys(d, &[2.0f32], Segments::Fixed { count: 1, len: 1 })
        .unwrap();
    assert_eq!(out.keys, vec![2.0]);
    // A shorter segment beside a longer one is padded up to the longer one's length.
    let (out, _) = TopK::smallest(4)
        .tie_break(TieBreak::SmallerIndex)
        .run_keys(d, &[2.0f32, 5.0, 1.0, 3.0], Segments::Offsets(&[0, 1, 4]))
        .unwrap();
    assert_eq!(
        out.keys,
        vec![2.0, f32::INFINITY, f32::INFINITY, 5.0, 1.0, 3.0]
    );
}

/// 100,000 segments of 8 keys; no segments; k = 0; only empty segments.
pub fn many_segments_and_empty_ones(d: &Device) {
    let k: Vec<u32> = keys(100_000 * 8, Pattern::RandomBits, 13);
    let fixed = |count, len| Segments::Fixed { count, len };
    let req = TopK::largest(3).tie_break(TieBreak::SmallerIndex);
    check::<u32, u32>(d, &req, &k, fixed(100_000, 8), None);
    check::<u32, u32>(d, &TopK::largest(3), &[], fixed(0, 8), None);
    check::<u32, u32>(d, &TopK::largest(0), &k[..16], fixed(2, 8), None);
    check::<u32, u32>(
        d,
        &TopK::largest(4),
        &[],
        Segments::Offsets(&[0, 0, 0]),
        None,
    );
}

/// Bad requests are refused with an error naming the argument, before any work.
pub fn invalid_requests_name_the_argument(d: &Device) {
    let k = vec![1.0f32; 10];
    let err =
        |r: Result<(TopKOutput<f32, f32>, Plan), Error>| r.map(|_| ()).unwrap_err().to_string();
    let run = |req: TopK, segs: Segments, v: Option<&[f32]>| req.run(d, &k, segs, v);
    let fixed = |count, len| Segments::Fixed { count, len };
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
        err(run(TopK::largest(2), fixed(3, 4), None)),
        "invalid argument `keys`: 10 keys do not make 3 segments of 4"
    );
    assert_eq!(
        err(run(
            TopK::per_segment(vec![1, 2, 3], true),
            fixed(2, 5),
            None
        )),
        "invalid argument `k`: the per-segment k array has 3 entries but there are 2 segments"
    );
    assert_eq!(
        err(run(TopK::per_segment(vec![1, -2], true), fixed(2, 5), None)),
        "invalid argument `k`: k[1] = -2 is negative"
    );
    assert_eq!(
        err(run(TopK::largest(2), fixed(2, 5), Some(&[1.0; 9]))),
        "invalid argument `values`: has 9 entries but there are 10 keys"
    );
    let e = TopK::largest(1)
        .index_type(IndexType::I32)
        .layout(3_000_000_000, Segments::Offsets(&[0, 3_000_000_000]), None)
        .unwrap_err();
    assert_eq!(e.to_string(), "invalid argument `index type`: segment 0 has 3000000000 keys; positions past 2^31 need 64-bit indices");
}

/// Declares every body above as a test on `$dev` (see `test_device!`), so the CPU and the GPU
/// binaries run the same list.
macro_rules! topk_tests_on {
    ($dev:expr) => {
        test_device!($dev; shared::{
            values_of_every_width_travel_with_their_keys,
            lengths_one_to_4096_with_k_up_to_4096,
            long_segments_and_large_k,
            k_past_the_segment_pads,
            many_segments_and_empty_ones,
            invalid_requests_name_the_argument,
        });
    };
}
