//! Segmented top-k on the GPU. Reference: the naive oracle (sort per segment), exactly for the
//! deterministic tie-breaks and as a multiset for the fast one; the deterministic outputs must
//! also equal the CPU backend's byte for byte and repeat byte for byte. Outputs are sentinel-filled (0xA5) by the backend
//! before every launch, so an unwritten slot fails the comparison; the repeat runs without the
//! fill, as calls do by default, so no result may depend on it.

mod filter;
mod graph;
#[macro_use]
mod shared {
    include!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/shared/topk.rs"));
}
use shared::{check, TIES};

topk_tests_on!(dev());

use half::{bf16, f16};
use sparrow::matrix::Rng;
use sparrow::ops::topk::data::{keys, Pattern};
use sparrow::ops::topk::{GpuPath, IndexType, Key, Segments, TieBreak, TopK};
use sparrow::ops::Plan;
use sparrow::Device;

/// The plan's choice and every GPU path forced.
const PATHS: [Option<GpuPath>; 4] = [
    None,
    Some(GpuPath::Tiled),
    Some(GpuPath::Filter),
    Some(GpuPath::Split { chunk: 8192 }),
];

fn dev() -> Device {
    Device::Cuda(super::gpu())
}

/// The k largest (or smallest) keys of every segment.
fn top_k(k: usize, largest: bool) -> TopK {
    if largest {
        TopK::largest(k)
    } else {
        TopK::smallest(k)
    }
}

/// Whether `d` stages the filter's keys by bulk copies (sm_90 and later).
fn sm90(d: &Device) -> bool {
    match d {
        Device::Cuda(g) => g.limits().compute_capability.0 >= 9,
        Device::Cpu => false,
    }
}

/// Runs the generic check `f` on device `d` for every key type the API takes.
macro_rules! every_key_type {
    ($f:ident, $d:expr) => {
        $f::<f32>($d);
        $f::<f64>($d);
        $f::<f16>($d);
        $f::<bf16>($d);
        $f::<i8>($d);
        $f::<u8>($d);
        $f::<i16>($d);
        $f::<u16>($d);
        $f::<i32>($d);
        $f::<u32>($d);
        $f::<i64>($d);
        $f::<u64>($d);
    };
}

// After the macro, which it uses.
mod cluster;

/// The kernels a GPU plan names ("" when it names none).
fn kernel_of(plan: &Plan) -> &str {
    plan.kernel.as_deref().unwrap_or("")
}

use shared::random_offsets as offsets;

fn every_pattern<K: Key>(d: &Device) {
    let mut rng = Rng::new(K::BITS as u64 + 3);
    for (pi, pattern) in Pattern::ALL.into_iter().enumerate() {
        let o = offsets(&mut rng, 12, 9000);
        let n = *o.last().unwrap() as usize;
        let k: Vec<K> = keys(n, pattern, pi as u64);
        let vals: Vec<u16> = keys(n, Pattern::RandomBits, 99);
        for largest in [true, false] {
            for tie in TIES {
                for sorted in [false, true] {
                    for (kk, path) in [
                        (1usize, None),
                        (37, Some(GpuPath::Tiled)),
                        (37, Some(GpuPath::Filter)),
                        (4096, None),
                        (4096, Some(GpuPath::Tiled)),
                        (4096, Some(GpuPath::Filter)),
                        (37, Some(GpuPath::Split { chunk: 4096 })),
                        (4096, Some(GpuPath::Split { chunk: 4096 })),
                    ] {
                        let base = top_k(kk, largest);
                        let req = base.tie_break(tie).sorted(sorted).force_path(path);
                        check::<K, K>(d, &req, &k, Segments::Offsets(&o), None);
                        check(
                            d,
                            &req.index_type(IndexType::I32),
                            &k,
                            Segments::Offsets(&o),
                            Some(&vals),
                        );
                    }
                }
            }
        }
    }
}

/// Segments of at most a warp's 1,024 keys on the warp path (and the plan picks it).
fn short_segments<K: Key>(d: &Device) {
    let mut rng = Rng::new(K::BITS as u64 + 5);
    for (pi, pattern) in Pattern::ALL.into_iter().enumerate() {
        let mut o = offsets(&mut rng, 40, 1024);
        // Full segments take the warp body without tail tests (float keys).
        for _ in 0..4 {
            o.push(o.last().unwrap() + 1024);
        }
        let n = *o.last().unwrap() as usize;
        let k: Vec<K> = keys(n, pattern, pi as u64 + 50);
        let vals: Vec<u64> = keys(n, Pattern::RandomBits, 98);
        for largest in [true, false] {
            for tie in TIES {
                for (kk, sorted) in [
                    (1usize, false),
                    (16, false),
                    (32, true),
                    (37, true),
                    (600, false),
                    (1024, true),
                ] {
                    let base = top_k(kk, largest);
                    let req = base.tie_break(tie).sorted(sorted);
                    let plan = check::<K, K>(d, &req, &k, Segments::Offsets(&o), None);
                    assert!(plan.reason.starts_with("warp"), "{plan}");
                    check(
                        d,
                        &req.index_type(IndexType::I32),
                        &k,
                        Segments::Offsets(&o),
                        Some(&vals),
                    );
                }
            }
        }
    }
}

/// The warp prefilter's candidate counts at their bounds. A segment holds `n` copies of the
/// extreme key, five of them in distinct lanes, and the opposite extreme elsewhere, so with
/// k up to 5 the threshold is the extreme key and the candidates are exactly its copies: up
/// to 32 take the one-per-lane bitonic select, 33 to 128 the bitwise select among the
/// candidates, and 129 the cut at the threshold. Every tie-break picks among the copies.
fn warp_candidate_bounds<K: Key>(d: &Device) {
    for largest in [true, false] {
        let (top, rest) = if largest {
            (K::highest(), K::lowest())
        } else {
            (K::lowest(), K::highest())
        };
        let mut k: Vec<K> = Vec::new();
        let mut o = vec![0i64];
        for len in [1024usize, 1000, 300] {
            for n in [1usize, 31, 32, 33, 127, 128, 129] {
                let mut seg = vec![rest; len];
                // 37 is prime to every length here: n distinct positions, the first five
                // (below 300, so unwrapped) in distinct lanes: 37 j mod 32 = 5 j mod 32.
                for j in 0..n {
                    seg[(j * 37 + 5) % len] = top;
                }
                k.extend(seg);
                o.push(k.len() as i64);
            }
        }
        for kk in [1usize, 5] {
            for tie in TIES {
                for sorted in [false, true] {
                    let base = top_k(kk, largest);
                    let req = base.tie_break(tie).sorted(sorted);
                    let plan = check::<K, K>(d, &req, &k, Segments::Offsets(&o), None);
                    assert!(plan.reason.starts_with("warp"), "{plan}");
                }
            }
        }
    }
}

#[test]
fn small_topk_warp_candidate_bounds() {
    let d = dev();
    every_key_type!(warp_candidate_bounds, &d);
}

#[test]
fn small_topk_warp_path() {
    let d = dev();
    every_key_type!(short_segments, &d);
}

/// Declares one test per key type running `$body::<type>` on the GPU, so each fits a capped
/// step of a GPU round.
macro_rules! per_key_type {
    ($body:ident: $($name:ident => $t:ty),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                $body::<$t>(&dev());
            }
        )*
    };
}

per_key_type!(every_pattern:
    small_topk_every_pattern_f32 => f32,
    small_topk_every_pattern_f64 => f64,
    small_topk_every_pattern_f16 => f16,
    small_topk_every_pattern_bf16 => bf16,
    small_topk_every_pattern_i8 => i8,
    small_topk_every_pattern_u8 => u8,
    small_topk_every_pattern_i16 => i16,
    small_topk_every_pattern_u16 => u16,
    small_topk_every_pattern_i32 => i32,
    small_topk_every_pattern_u32 => u32,
    small_topk_every_pattern_i64 => i64,
    small_topk_every_pattern_u64 => u64,
);

/// The register on-chip kernels at each of their sizes (8, 16 and 32 keys per thread) and
/// just past the largest (the shared-memory kernel): segments from 1,025 keys to the bound,
/// one exactly at it, an empty one and one shorter than k; aligned and unaligned starts;
/// every pattern, both directions, every tie-break, k that stops early, that keeps every
/// tie, and that takes whole segments.
fn register_block<K: Key>(d: &Device) {
    use sparrow::ops::topk::plan::{rblock_items, RBLOCK_MAX};
    let mut rng = Rng::new(K::BITS as u64 + 11);
    for max_len in [2048usize, 4096, RBLOCK_MAX, RBLOCK_MAX + 1] {
        for (pi, pattern) in Pattern::ALL.into_iter().enumerate() {
            let mut o = vec![0i64, max_len as i64, max_len as i64, max_len as i64 + 5];
            for _ in 0..5 {
                let l = 1025 + rng.below((max_len - 1025) as u64 + 1) as i64;
                o.push(o.last().unwrap() + l);
            }
            let n = *o.last().unwrap() as usize;
            let k: Vec<K> = keys(n, pattern, pi as u64 + 70);
            for largest in [true, false] {
                for tie in TIES {
                    for kk in [1usize, 37, 256, 1025] {
                        let base = top_k(kk, largest);
                        let req = base.tie_break(tie);
                        let plan = check::<K, K>(d, &req, &k, Segments::Offsets(&o), None);
                        let kernel = kernel_of(&plan);
                        match rblock_items(max_len) {
                            Some(items) => assert!(
                                kernel.contains("rblock")
                                    && kernel.ends_with(&format!("_v{items}")),
                                "{max_len}: {plan}"
                            ),
                            None => assert!(
                                kernel.contains("{block,") && !kernel.contains("rblock"),
                                "{max_len}: {plan}"
                            ),
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn small_topk_register_block_path() {
    let d = dev();
    register_block::<f32>(&d);
    register_block::<f64>(&d);
    register_block::<bf16>(&d);
    register_block::<u8>(&d);
    register_block::<i64>(&d);
}

/// Small enough for compute-sanitizer: every kernel (sort and gather included) on segments
/// that cross tile boundaries, with values and padding.
#[test]
fn sanitize_topk_every_kernel() {
    let d = dev();
    let o = [0i64, 5000, 5000, 5003, 13_000];
    let k: Vec<f32> = keys(13_000, Pattern::HeavyTies, 1);
    let v: Vec<u32> = keys(13_000, Pattern::RandomBits, 2);
    for sorted in [false, true] {
        for tie in TIES {
            for path in PATHS {
                let req = TopK::largest(700)
                    .sorted(sorted)
                    .tie_break(tie)
                    .force_path(path);
                check(&d, &req, &k, Segments::Offsets(&o), Some(&v));
            }
            // The on-chip path: registers (segments up to 8,192; uniform keys stop early
            // with every tie taken, heavy ties rank a tie window) and shared memory (a
            // segment of 9,000).
            let uniform13k: Vec<f32> = keys(13_000, Pattern::Uniform, 4);
            let long = [0i64, 9000, 9003, 13_000];
            for (ks, segs) in [(&k, &o[..]), (&uniform13k, &o[..]), (&k, &long[..])] {
                let req = TopK::largest(700)
                    .sorted(sorted)
                    .tie_break(tie)
                    .force_path(Some(GpuPath::OnChip));
                check(&d, &req, ks, Segments::Offsets(segs), Some(&v));
            }
            // k = 20 takes the warp prefilter: uniform keys select among few
            // candidates, heavy ties overflow them and fall back.
            let short = [0i64, 1000, 1000, 1003, 2027, 2100];
            let uniform: Vec<f32> = keys(2100, Pattern::Uniform, 3);
            for (kk, ks) in [(300, &k), (20, &k), (20, &uniform)] {
                let req = TopK::largest(kk)
                    .sorted(sorted)
                    .tie_break(tie)
                    .force_path(Some(GpuPath::Warp));
                check(
                    &d,
                    &req,
                    ks,
                    Segments::Offsets(&short),
                    Some(&v[..ks.len()]),
                );
            }
        }
    }
}

#[test]
fn small_topk_value_widths_and_per_segment_k() {
    let d = dev();
    let mut rng = Rng::new(4);
    let o = offsets(&mut rng, 200, 4096);
    let n = *o.last().unwrap() as usize;
    let k: Vec<f32> = keys(n, Pattern::RandomBits, 5);
    // Every value width through every path: on-chip, tiled and filter, unsorted and sorted
    // (the sorted rows go through the gather kernels).
    for sorted in [false, true] {
        for path in PATHS {
            let req = TopK::largest(300)
                .tie_break(TieBreak::SmallerIndex)
                .sorted(sorted)
                .force_path(path);
            let segs = Segments::Offsets(&o);
            check(
                &d,
                &req,
                &k,
                segs,
                Some(&keys::<u8>(n, Pattern::RandomBits, 1)),
            );
            check(
                &d,
                &req,
                &k,
                segs,
                Some(&keys::<i16>(n, Pattern::RandomBits, 2)),
            );
            check(
                &d,
                &req,
                &k,
                segs,
                Some(&keys::<f32>(n, Pattern::RandomBits, 3)),
            );
            check(
                &d,
                &req,
                &k,
                segs,
                Some(&keys::<f64>(n, Pattern::RandomBits, 4)),
            );
        }
    }
    let ks: Vec<i64> = (0..200).map(|_| rng.below(5000) as i64).collect();
    for tie in TIES {
        for path in PATHS {
            let req = TopK::per_segment(ks.clone(), false)
                .sorted(true)
                .tie_break(tie)
                .force_path(path);
            check::<f32, f32>(&d, &req, &k, Segments::Offsets(&o), None);
        }
    }
    let many: Vec<u32> = keys(100_000 * 8, Pattern::RandomBits, 6);
    for path in PATHS {
        let req = TopK::largest(3)
            .tie_break(TieBreak::LargerIndex)
            .force_path(path);
        check::<u32, u32>(
            &d,
            &req,
            &many,
            Segments::Fixed {
                count: 100_000,
                len: 8,
            },
            None,
        );
    }
    check::<u32, u32>(
        &d,
        &TopK::largest(4),
        &[],
        Segments::Offsets(&[0, 0, 0]),
        None,
    );
    check::<u32, u32>(
        &d,
        &TopK::largest(0),
        &[1, 2, 3],
        Segments::Offsets(&[0, 3]),
        None,
    );
}

/// The path bounds: segments of exactly the on-chip limit and one key more (as many segments
/// as SMs, past the cluster rule; two such segments take the cluster instead of the
/// shared-memory block), rows of exactly the shared-memory sort width and one more (sorted on
/// the host).
#[test]
fn small_topk_path_bounds() {
    use sparrow::ops::topk::plan::{block_max, SORT_MAX};
    let d = dev();
    let gpu = super::gpu();
    let bmax = block_max(gpu.limits());
    let count = gpu.limits().sms as usize;
    for len in [bmax, bmax + 1] {
        let k: Vec<f32> = keys(count * len, Pattern::HeavyTies, len as u64);
        let req = TopK::largest(100).tie_break(TieBreak::LargerIndex);
        let segs = Segments::Fixed { count, len };
        let (_, plan) = req.run_keys(&d, &k, segs).unwrap();
        assert_eq!(
            plan.kernel.unwrap().contains("block"),
            len == bmax,
            "len {len}"
        );
        check::<f32, f32>(&d, &req, &k, segs, None);
        let two = Segments::Fixed { count: 2, len };
        let (_, plan) = req.run_keys(&d, &k[..2 * len], two).unwrap();
        assert!(plan.kernel.unwrap().contains("cluster"), "len {len}");
        check::<f32, f32>(&d, &req, &k[..2 * len], two, None);
    }
    let k: Vec<i32> = keys(3 * 10_000, Pattern::RandomBits, 3);
    for width in [SORT_MAX, SORT_MAX + 1] {
        let req = TopK::smallest(width)
            .sorted(true)
            .tie_break(TieBreak::SmallerIndex);
        let (_, plan) = req
            .run_keys(
                &d,
                &k,
                Segments::Fixed {
                    count: 3,
                    len: 10_000,
                },
            )
            .unwrap();
        assert_eq!(
            plan.reason.contains("on the host"),
            width > SORT_MAX,
            "width {width}"
        );
        check::<i32, i32>(
            &d,
            &req,
            &k,
            Segments::Fixed {
                count: 3,
                len: 10_000,
            },
            None,
        );
    }
}

/// The split path where the plan picks it (a 16M-key segment at an unaligned offset, an
/// empty one, a short one, a 5M-key one; k = 1024 is too many winners for the filter):
/// friendly and adversarial keys, every tie-break, sorted with values.
#[test]
fn topk_split_path() {
    let d = dev();
    let o = [3i64, 16_789_225, 16_789_225, 16_792_225, 21_792_225];
    let n = *o.last().unwrap() as usize;
    let v: Vec<u32> = keys(n, Pattern::RandomBits, 1);
    for pattern in [Pattern::Uniform, Pattern::TwoValues, Pattern::Ascending] {
        let k: Vec<f32> = keys(n, pattern, 5);
        for tie in TIES {
            let req = TopK::largest(1024).tie_break(tie);
            let plan = check::<f32, f32>(&d, &req, &k, Segments::Offsets(&o), None);
            assert!(plan.reason.starts_with("split"), "{plan}");
        }
        check(
            &d,
            &TopK::smallest(1024)
                .sorted(true)
                .tie_break(TieBreak::SmallerIndex)
                .index_type(IndexType::I32),
            &k,
            Segments::Offsets(&o),
            Some(&v),
        );
    }
}
