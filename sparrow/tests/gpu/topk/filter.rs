//! The filter path: its candidates, staging, float and narrow keys, tie slots, aligned tiles,
//! and its fallback to selection from memory.

use super::*;

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
            for (largest, staging) in [(true, true), (false, true), (true, false), (false, false)] {
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
