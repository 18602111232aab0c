//! The plan's rules on layouts built by hand: which path each shape takes and why.
use super::*;
use crate::device::Limits;
use crate::ops::topk::Segments;

fn limits() -> Limits {
    Limits {
        name: "test".into(),
        compute_capability: (9, 0),
        sms: 132,
        total_memory: 1 << 30,
        max_threads_per_block: 1024,
        max_block: [1024, 1024, 64],
        max_grid: [i32::MAX as u32, 65535, 65535],
        smem_per_block: 48 * 1024,
        smem_per_block_optin: 227 * 1024,
        smem_per_sm: 228 * 1024,
        max_cluster_portable: 8,
        max_cluster: 16,
        l2_bytes: 50 << 20,
    }
}

/// The split path's stages, run by the oracle and mapped back as the remap kernel does,
/// give the oracle's answer on the whole segments: every tie-break, both directions,
/// sorted and unsorted, cut and uncut segments, an empty one, per-segment k.
#[test]
fn split_stages_compose_to_the_oracle() {
    use crate::matrix::Rng;
    use crate::ops::topk::{oracle, IndexType, TieBreak};
    let mut rng = Rng::new(7);
    let offsets = [0i64, 50_007, 50_007, 50_010, 83_010, 95_000];
    let keys: Vec<f32> = (0..95_000)
        .map(|i| {
            if i % 3 == 0 {
                rng.below(4) as f32
            } else {
                rng.uniform() as f32
            }
        })
        .collect();
    for per_seg in [false, true] {
        for largest in [true, false] {
            for tie in [TieBreak::SmallerIndex, TieBreak::LargerIndex] {
                for sorted in [false, true] {
                    let req = if per_seg {
                        TopK::per_segment(vec![700, 3, 9, 1000, 1], largest)
                    } else if largest {
                        TopK::largest(300)
                    } else {
                        TopK::smallest(300)
                    }
                    .tie_break(tie)
                    .sorted(sorted)
                    .index_type(IndexType::I64);
                    let layout = req
                        .layout(keys.len(), Segments::Offsets(&offsets), None)
                        .unwrap();
                    let w = layout.width;
                    let st = split_stages(&layout, 8192);
                    assert!(st.first.count() > layout.count());
                    let base = if largest {
                        TopK::largest(w)
                    } else {
                        TopK::smallest(w)
                    }
                    .tie_break(tie)
                    .index_type(IndexType::I64);
                    let o1 = oracle::topk::<f32, f32>(&base, &keys, &st.first, None);
                    let r2 = base.sorted(sorted);
                    let o2 = oracle::topk::<f32, f32>(&r2, &o1.keys, &st.second, None);
                    let want = oracle::topk::<f32, f32>(&req, &keys, &layout, None);
                    for s in 0..layout.count() {
                        for j in 0..layout.kk[s] as usize {
                            let e = s * w + j;
                            let p = (st.second.starts[s] + o2.indices.get(e)) as usize;
                            let got = st.chunk_rel[p / w] + o1.indices.get(p);
                            assert_eq!(got, want.indices.get(e), "segment {s} slot {j}");
                            assert_eq!(o2.keys[e].to_bits(), want.keys[e].to_bits());
                        }
                    }
                }
            }
        }
    }
}

/// Segments of exactly the warp path's limit go to the warp path, one key more to the
/// block; forcing the warp path on the longer one is refused.
#[test]
fn warp_path_bound() {
    let l = limits();
    let req = TopK::largest(16);
    for (len, want) in [(WARP_MAX, GpuPath::Warp), (WARP_MAX + 1, GpuPath::OnChip)] {
        let layout = req
            .layout(3 * len, Segments::Fixed { count: 3, len }, None)
            .unwrap();
        assert_eq!(gpu_path(&req, &layout, &l, 4).unwrap().0, want, "{len}");
    }
    let layout = req
        .layout(
            WARP_MAX + 1,
            Segments::Fixed {
                count: 1,
                len: WARP_MAX + 1,
            },
            None,
        )
        .unwrap();
    let forced = req.force_path(Some(GpuPath::Warp));
    let e = gpu_path(&forced, &layout, &l, 4).unwrap_err().to_string();
    assert!(
        e.contains("warp") && e.contains(&format!("{}", WARP_MAX + 1)),
        "{e}"
    );
}

/// Long segments the filter cannot take are split when chunks of eight times k or more
/// let the first stage filter; forcing a chunk shorter than k is refused.
#[test]
fn split_path_choice() {
    let l = limits();
    let len = 1 << 28;
    let req = TopK::largest(1024);
    let layout = req
        .layout(len, Segments::Fixed { count: 1, len }, None)
        .unwrap();
    let (path, _) = gpu_path(&req, &layout, &l, 4).unwrap();
    assert_eq!(path, GpuPath::Split { chunk: 1 << 20 });
    let st = split_stages(&layout, 1 << 20);
    assert_eq!(st.first.count(), 256);
    assert_eq!(st.second.lens, vec![256 * 1024]);
    // The second stage's one segment of 262,144 winners: the cluster where its rule is on,
    // else (and without clusters) the filter.
    let want = if cluster_fits(1, 256 * 1024, &l, &SM90) {
        GpuPath::Cluster
    } else {
        GpuPath::Filter
    };
    assert_eq!(base_path(&st.second, &l, 4096).0, want);
    let old = Limits {
        compute_capability: (8, 0),
        max_cluster: 1,
        max_cluster_portable: 1,
        ..limits()
    };
    assert_eq!(base_path(&st.second, &old, 4096).0, GpuPath::Filter);
    // A width beyond an eighth of every chunk stays tiled.
    let req = TopK::largest(200_000);
    let layout = req
        .layout(
            1 << 22,
            Segments::Fixed {
                count: 1,
                len: 1 << 22,
            },
            None,
        )
        .unwrap();
    assert_eq!(gpu_path(&req, &layout, &l, 4).unwrap().0, GpuPath::Tiled);
    let forced = req.force_path(Some(GpuPath::Split { chunk: 4096 }));
    let e = gpu_path(&forced, &layout, &l, 4).unwrap_err().to_string();
    assert!(e.contains("chunk") && e.contains("200000"), "{e}");
}

/// The filter path is taken exactly while the expected candidates fit half of what one
/// block selects on chip, and its shared memory holds twice the expected count.
/// Both builds of the candidate kernel, at their widest, fit the opt-in shared memory
/// beside the static scratch for every key type.
#[test]
fn candidate_layout_fits_shared_memory() {
    use half::{bf16, f16};
    let l = limits();
    let budget = l.smem_per_block_optin as usize - WIDE_STATIC_SMEM;
    let cap = cand_cap(&l);
    // Many segments of the widest candidates: `cand` where it fits more blocks per SM.
    // One segment: the radix build on 512 threads (the bytes of `cand_rad` too).
    fn both<K: Key>(cap: usize, l: &crate::device::Limits) -> [usize; 2] {
        let rad = cand_kernel::<K>(1, cap, l);
        assert_eq!(rad.0, "cand_wide");
        [rad.1, cand_kernel::<K>(1 << 20, 256, l).1]
    }
    let bytes = [
        both::<u8>(cap, &l),
        both::<i16>(cap, &l),
        both::<f16>(cap, &l),
        both::<bf16>(cap, &l),
        both::<f32>(cap, &l),
        both::<u32>(cap, &l),
        both::<f64>(cap, &l),
        both::<i64>(cap, &l),
    ];
    assert_eq!(
        bytes,
        [
            [7, 5],
            [8, 6],
            [8, 6],
            [8, 6],
            [12, 8],
            [12, 8],
            [12, 12],
            [12, 12]
        ]
    );
    for b in bytes.iter().flatten() {
        assert!(cap * b <= budget, "{b} bytes per candidate");
    }
}

/// The compact build runs only where it takes fewer waves: the H200's 132 SMs hold two
/// `cand_rad` blocks each, three `cand` blocks for 32-bit keys and four for 16-bit keys
/// while shared memory allows.
#[test]
fn candidate_build_by_waves() {
    use half::bf16;
    let l = limits();
    assert_eq!(l.sms, 132);
    let small = 1024; // 12 KB of f32 candidates: registers bound both builds

    // A segment per SM at most: the 512-thread builds of both per-segment kernels.
    assert_eq!(cand_kernel::<f32>(64, small, &l).0, "cand_wide");
    assert_eq!(cand_kernel::<f32>(132, small, &l).0, "cand_wide");
    assert_eq!(thresh_kernel(132, &l), ("thresh_wide", 512));
    assert_eq!(cand_kernel::<f32>(133, small, &l).0, "cand_rad");
    assert_eq!(thresh_kernel(133, &l), ("thresh", 256));
    assert_eq!(cand_kernel::<f32>(264, small, &l).0, "cand_rad");
    assert_eq!(cand_kernel::<f32>(265, small, &l).0, "cand");
    assert_eq!(cand_kernel::<f32>(1024, small, &l).0, "cand");
    // 64-bit keys: both builds 12 bytes, two blocks per SM: never the compact one.
    assert_eq!(cand_kernel::<f64>(1024, small, &l).0, "cand_rad");
    // The widest f32 candidates: one block per SM either way.
    assert_eq!(cand_kernel::<f32>(1024, cand_cap(&l), &l).0, "cand_rad");
    // 8,192 candidates: 105 KB against 73 KB per block, two against three per SM.
    assert_eq!(cand_kernel::<f32>(1024, 8192, &l).0, "cand");
    assert_eq!(cand_kernel::<f32>(256, 8192, &l).0, "cand_rad");
    assert_eq!(cand_kernel::<f32>(132, cand_cap(&l), &l).0, "cand_wide");
    // 16-bit keys, 8,192 candidates (bf16 262,144 x 2,048): 6 bytes each, four compact
    // blocks per SM (two waves of 1,024 segments) against two of the radix build.
    assert_eq!(cand_kernel::<bf16>(1024, 8192, &l), ("cand", 6));
    let block = 8192 * 6 + STATIC_SMEM + DRIVER_SMEM_PER_BLOCK;
    assert_eq!(l.smem_per_sm as usize / block, 4);
    assert_eq!(cand_kernel::<bf16>(264, 8192, &l), ("cand_rad", 8));
}

#[test]
fn padding_only_for_rows_short_of_the_width() {
    let full = TopK::largest(5)
        .layout(20, Segments::Fixed { count: 2, len: 10 }, None)
        .unwrap();
    assert!(!needs_padding(&full));
    let short = TopK::largest(5)
        .layout(13, Segments::Offsets(&[0, 10, 13]), None)
        .unwrap();
    assert!(needs_padding(&short));
    let per = TopK::per_segment(vec![2, 5], true)
        .layout(20, Segments::Fixed { count: 2, len: 10 }, None)
        .unwrap();
    assert!(needs_padding(&per));
}

#[test]
fn register_kernel_sizes() {
    assert_eq!(rblock_items(1025), Some(8));
    assert_eq!(rblock_items(2048), Some(8));
    assert_eq!(rblock_items(2049), Some(16));
    assert_eq!(rblock_items(4096), Some(16));
    assert_eq!(rblock_items(4097), Some(32));
    assert_eq!(rblock_items(RBLOCK_MAX), Some(32));
    assert_eq!(rblock_items(RBLOCK_MAX + 1), None);
    // The shared-memory kernel is still reached on this device: it holds more.
    assert!(block_max(&limits()) > RBLOCK_MAX);
}

/// The staged filter's shared memory: a stage holds a tile at any 16-byte misalignment and
/// keeps 128-byte alignment; the stages of every block resident on an SM fit its shared
/// memory beside the static and driver reserves, and one block's fit the opt-in limit;
/// narrower keys get more stages; no bulk copies below sm_90 or with fewer than two stages.
#[test]
fn staged_filter_fits_the_sm() {
    let l = limits();
    let mut last = 0;
    for kb in [8usize, 4, 2, 1] {
        let sb = stage_bytes(kb);
        assert!(
            sb >= tile(kb) * kb + 15 && sb.is_multiple_of(128),
            "{kb}: {sb}"
        );
        let f = staged_filter(100_000, kb, &l).unwrap();
        assert_eq!(f.stage_bytes, sb);
        assert_eq!(f.per_sm, if kb == 8 { 2 } else { 4 });
        assert_eq!(f.blocks, 132 * f.per_sm);
        assert!(f.stages >= 2 && f.stages <= FT_MAX_STAGES);
        let per_block = f.smem() + FT_STATIC_SMEM + DRIVER_SMEM_PER_BLOCK;
        assert!(
            f.per_sm * per_block <= l.smem_per_sm as usize,
            "{kb}: {f:?}"
        );
        assert!(f.smem() + FT_STATIC_SMEM <= l.smem_per_block_optin as usize);
        // One more stage would not fit.
        assert!(
            f.stages == FT_MAX_STAGES || f.per_sm * (per_block + sb) > l.smem_per_sm as usize,
            "{kb}: {f:?}"
        );
        // Four blocks per SM from 32-bit keys down: narrower keys, at least as many stages.
        if kb <= 4 {
            assert!(f.stages >= last, "{kb}: {f:?}");
            last = f.stages;
        }
    }
    // f32 on the H200: three stages of 16,512 bytes, four blocks per SM.
    let f = staged_filter(65_536, 4, &l).unwrap();
    assert_eq!((f.stages, f.stage_bytes, f.blocks), (3, 16_512, 528));
    // Fewer tiles than resident blocks: one block per tile.
    assert_eq!(staged_filter(7, 2, &l).unwrap().blocks, 7);
    assert_eq!(staged_filter(0, 4, &l), None);
    let mut ampere = limits();
    ampere.compute_capability = (8, 0);
    assert_eq!(staged_filter(1000, 4, &ampere), None);
    let mut small = limits();
    small.smem_per_sm = 64 * 1024;
    assert_eq!(staged_filter(1000, 8, &small), None);
}

#[test]
fn tiles_cut_segments_at_the_key_width_tile() {
    assert_eq!(
        (tile(1), tile(2), tile(4), tile(8)),
        (8192, 8192, 4096, 4096)
    );
    let req = TopK::largest(3);
    let o = [0i64, 8192 * 2 + 5, 8192 * 2 + 5, 8192 * 2 + 5 + 4096];
    let layout = req
        .layout(o[3] as usize, Segments::Offsets(&o), None)
        .unwrap();
    for (t, want) in [
        (
            8192,
            vec![
                (0, 0, 8192),
                (0, 8192, 16384),
                (0, 16384, 16389),
                (2, 16389, 20485),
            ],
        ),
        (
            4096,
            vec![
                (0, 0, 4096),
                (0, 4096, 8192),
                (0, 8192, 12288),
                (0, 12288, 16384),
                (0, 16384, 16389),
                (2, 16389, 20485),
            ],
        ),
    ] {
        let (seg, st, en, ptr) = tiles(&layout, t);
        let got: Vec<(i32, i64, i64)> = (0..seg.len()).map(|i| (seg[i], st[i], en[i])).collect();
        assert_eq!(got, want, "tile {t}");
        let n = want.len() as i64;
        assert_eq!(ptr, vec![0, n - 1, n - 1, n], "tile {t}");
    }
}

/// The cluster path's facts: blocks per cluster from the longest segment, its length limit,
/// the segment count it stops at, and no clusters before sm_90.
#[test]
fn cluster_path_bound() {
    let l = limits();
    let t = &SM90;
    assert_eq!(cluster_ctas(16_385, &l), Some(3));
    assert_eq!(cluster_ctas(1, &l), Some(2));
    assert_eq!(cluster_ctas(131_072, &l), Some(16));
    let most = cluster_max_len(&l);
    assert_eq!(most, 16 * t.cluster_slice_max);
    assert_eq!(cluster_ctas(most, &l), Some(16));
    assert_eq!(cluster_ctas(most + 1, &l), None);
    let (shape, items) = cluster_launch(4, 163_840, &l).unwrap();
    assert_eq!(shape.grid[0], 64);
    assert_eq!(shape.cluster, Some([16, 1, 1]));
    assert_eq!(items, 12);
    assert_eq!(cluster_launch(1, 131_072, &l).unwrap().1, 8);
    assert_eq!(cluster_launch(1, most, &l).unwrap().1, 16);
    assert_eq!(cluster_items(16_385), None);
    let path = |count: usize, len: usize, l: &Limits| {
        let req = TopK::largest(2048);
        let layout = req
            .layout(count * len, Segments::Fixed { count, len }, None)
            .unwrap();
        gpu_path(&req, &layout, l, 4).unwrap().0
    };
    // With the rule on at 800% of the SMs: 66 segments of 16 blocks fit, 67 do not.
    let on = TopkTuning {
        cluster_sm_percent: 800,
        ..SM90
    };
    let segs = 132 * 8 / 16;
    assert!(cluster_fits(segs, 131_072, &l, &on));
    assert!(!cluster_fits(segs + 1, 131_072, &l, &on));
    assert!(cluster_fits(1, most, &l, &on));
    assert!(!cluster_fits(1, most + 1, &l, &on));
    assert!(!cluster_fits(
        1,
        131_072,
        &l,
        &TopkTuning {
            cluster_sm_percent: 0,
            ..SM90
        }
    ));
    // The plan follows the rule as sm_90's tuning sets it.
    let want = if cluster_fits(4, 163_840, &l, t) {
        GpuPath::Cluster
    } else {
        GpuPath::Filter
    };
    assert_eq!(path(4, 163_840, &l), want);
    assert_eq!(path(1, 8192, &l), GpuPath::OnChip);
    // Past the register kernel's keys, a cluster rather than the shared-memory block.
    let want = if cluster_fits(1, block_max(&l), &l, t) {
        GpuPath::Cluster
    } else {
        GpuPath::OnChip
    };
    assert_eq!(path(1, block_max(&l), &l), want);
    let old = Limits {
        compute_capability: (8, 0),
        max_cluster: 1,
        max_cluster_portable: 1,
        ..limits()
    };
    assert_eq!(cluster_ctas(20_000, &old), None);
    assert_eq!(cluster_max_len(&old), 0);
    assert_eq!(path(1, 131_072, &old), GpuPath::Filter);
    // Forcing it where it cannot run is refused, naming the limit.
    let req = TopK::largest(5).force_path(Some(GpuPath::Cluster));
    let layout = req
        .layout(
            most + 1,
            Segments::Fixed {
                count: 1,
                len: most + 1,
            },
            None,
        )
        .unwrap();
    let e = gpu_path(&req, &layout, &l, 4).unwrap_err().to_string();
    assert!(
        e.contains("cluster") && e.contains(&format!("{most}")),
        "{e}"
    );
    let e = gpu_path(&req, &layout, &old, 4).unwrap_err().to_string();
    assert!(e.contains("9.0"), "{e}");
}

#[test]
fn filter_path_bound() {
    // A GPU without clusters, so the few long segments here reach the filter.
    let l = Limits {
        max_cluster: 1,
        max_cluster_portable: 1,
        ..limits()
    };
    let len = 262_144;
    let expected = |k: usize| filter_rank(len, k, SAMPLE) * len / SAMPLE;
    let last = (1..len)
        .take_while(|&k| expected(k) <= cand_cap(&l) / 2)
        .last()
        .unwrap();
    for (k, want) in [
        (last, GpuPath::Filter),
        (last + 1, GpuPath::Split { chunk: 1 << 17 }),
    ] {
        let req = TopK::largest(k);
        let layout = req
            .layout(2 * len, Segments::Fixed { count: 2, len }, None)
            .unwrap();
        let (path, fs) = gpu_path(&req, &layout, &l, 4).unwrap();
        assert_eq!(path, want, "k = {k}");
        assert_eq!(fs.expected, expected(k));
        if path == GpuPath::Filter {
            assert!(fs.cap >= 2 * fs.expected && fs.cap <= cand_cap(&l));
            assert!(fs.ct.is_power_of_two() && fs.ct <= 4096);
        }
        // 16-bit keys: the same path and candidates, twice the slots per (twice as long)
        // tile until a tile's slots are the whole tile.
        let (p2, f2) = gpu_path(&req, &layout, &l, 2).unwrap();
        assert_eq!((p2, f2.expected, f2.cap), (path, fs.expected, fs.cap));
        assert_eq!(f2.ct, (2 * fs.ct).min(8192), "k = {k}");
    }
    // Segments that fit a block go on chip; forcing that path on longer ones is refused.
    let req = TopK::largest(5);
    let at = block_max(&l);
    let layout = req
        .layout(at, Segments::Fixed { count: 1, len: at }, None)
        .unwrap();
    assert_eq!(gpu_path(&req, &layout, &l, 4).unwrap().0, GpuPath::OnChip);
    let layout = req
        .layout(
            at + 1,
            Segments::Fixed {
                count: 1,
                len: at + 1,
            },
            None,
        )
        .unwrap();
    let forced = req.clone().force_path(Some(GpuPath::OnChip));
    let e = gpu_path(&forced, &layout, &l, 4).unwrap_err().to_string();
    assert!(
        e.contains("on-chip") && e.contains(&format!("{}", at + 1)),
        "{e}"
    );
}

/// The rules are tried in order and the first that applies wins: a segment that fits a warp
/// takes the warp path even where the filter would fit, and the last rule catches every fact.
#[test]
fn rules_pick_the_first_that_applies() {
    let pick = |max_len, filter_fits, cluster_fits| {
        let f = BaseFacts {
            max_len,
            block_max: 16_384,
            filter_fits,
            cluster_fits,
        };
        TOPK_RULES.iter().find(|r| (r.applies)(&f)).unwrap().name
    };
    assert_eq!(pick(WARP_MAX, true, true), "warp");
    assert_eq!(pick(WARP_MAX + 1, true, true), "on-chip");
    assert_eq!(pick(8192, true, true), "on-chip");
    assert_eq!(pick(8193, true, true), "cluster-before-shared");
    assert_eq!(pick(8193, true, false), "on-chip");
    assert_eq!(pick(16_384, false, true), "cluster-before-shared");
    assert_eq!(pick(16_384, false, false), "on-chip");
    assert_eq!(pick(16_385, true, true), "cluster");
    assert_eq!(pick(16_385, false, true), "cluster");
    assert_eq!(pick(16_385, true, false), "filter");
    assert_eq!(pick(16_385, false, false), "tiled");
    let names: Vec<_> = TOPK_RULES.iter().map(|r| r.name).collect();
    assert_eq!(
        names,
        [
            "warp",
            "cluster-before-shared",
            "on-chip",
            "cluster",
            "filter",
            "tiled"
        ]
    );
}

/// The tuning follows the architecture, and the on-chip cap comes from it.
#[test]
fn tuning_is_chosen_by_architecture() {
    assert_eq!(TopkTuning::for_arch((9, 0)).arch, "sm_90");
    assert_eq!(TopkTuning::for_arch((8, 0)).arch, "sm_80");
    let l = limits();
    assert_eq!(block_max(&l), SM90.on_chip_keys);
    assert_eq!(filter_blocks(1 << 20, &l), 132 * SM90.filter_blocks_per_sm);
}
