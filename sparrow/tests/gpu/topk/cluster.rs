//! The cluster path (sm_90), forced, so the tests do not depend on the plan's rule: a cluster
//! of blocks per segment, one kernel. Oracle: the naive
//! sort per segment and, for the deterministic tie-breaks, the CPU backend byte for byte
//! (`check`).

use super::{check, dev, kernel_of, sm90, top_k, TIES};
use half::{bf16, f16};
use sparrow::ops::topk::data::{keys, Pattern};
use sparrow::ops::topk::plan::{block_max, cluster_ctas, cluster_max_len};
use sparrow::ops::topk::{GpuPath, IndexType, Key, Segments, TieBreak, TopK};
use sparrow::Device;

/// Segment lengths that cross the path's boundaries: just past the on-chip limit, one that no
/// cluster size divides, an empty one, one shorter than the cluster (blocks with empty
/// slices), and one past 65,536.
fn lengths(d: &Device) -> Vec<usize> {
    let bmax = block_max(d.gpu().unwrap().limits());
    vec![bmax + 1, 40_009, 0, 5, 70_001]
}

fn offsets_of(lens: &[usize]) -> Vec<i64> {
    let mut o = vec![0i64];
    for &l in lens {
        o.push(o.last().unwrap() + l as i64);
    }
    o
}

fn every_pattern_on_the_cluster<K: Key>(d: &Device) {
    let o = offsets_of(&lengths(d));
    let n = *o.last().unwrap() as usize;
    let vals: Vec<u32> = keys(n, Pattern::RandomBits, 7);
    for (pi, pattern) in Pattern::ALL.into_iter().enumerate() {
        let k: Vec<K> = keys(n, pattern, pi as u64 + 11);
        for largest in [true, false] {
            for tie in TIES {
                for (kk, sorted) in [(1usize, false), (2048, false), (37, true)] {
                    let req = top_k(kk, largest)
                        .tie_break(tie)
                        .sorted(sorted)
                        .force_path(Some(GpuPath::Cluster));
                    let plan = check::<K, K>(d, &req, &k, Segments::Offsets(&o), None);
                    assert!(plan.reason.starts_with("cluster"), "{plan}");
                    assert!(kernel_of(&plan).contains("cluster"), "{plan}");
                    if kk == 2048 {
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

#[test]
fn topk_cluster_every_key_type_and_pattern() {
    let d = dev();
    if !sm90(&d) {
        return;
    }
    every_key_type!(every_pattern_on_the_cluster, &d);
}

/// The longest segment the path takes, and one key more (the plan takes another path; forcing
/// the cluster there is refused, `topk_cluster_forced_past_its_limit_is_refused`); k at 1, at
/// the whole segment, and past it (padding); per-segment k.
fn bounds<K: Key>(d: &Device) {
    let limits = d.gpu().unwrap().limits();
    let max = cluster_max_len(limits);
    assert_eq!(cluster_ctas(max, limits), Some(limits.max_cluster as usize));
    assert_eq!(cluster_ctas(max + 1, limits), None);
    for (len, on_cluster) in [(max, true), (max + 1, false)] {
        let o = offsets_of(&[len, 1000]);
        let n = *o.last().unwrap() as usize;
        let k: Vec<K> = keys(n, Pattern::HeavyTies, len as u64);
        for kk in [1, len - 1, len, len + 1] {
            for tie in [TieBreak::Fast, TieBreak::LargerIndex] {
                let req = TopK::largest(kk)
                    .tie_break(tie)
                    .force_path(on_cluster.then_some(GpuPath::Cluster));
                let plan = check::<K, K>(d, &req, &k, Segments::Offsets(&o), None);
                assert_eq!(plan.reason.starts_with("cluster"), on_cluster, "{plan}");
            }
        }
        let per = TopK::per_segment(vec![len as i64 - 3, 2000], false)
            .tie_break(TieBreak::SmallerIndex)
            .sorted(true)
            .force_path(on_cluster.then_some(GpuPath::Cluster));
        let plan = check::<K, K>(d, &per, &k, Segments::Offsets(&o), None);
        assert_eq!(plan.reason.starts_with("cluster"), on_cluster, "{plan}");
    }
}

#[test]
fn topk_cluster_bounds() {
    let d = dev();
    if !sm90(&d) {
        return;
    }
    bounds::<f32>(&d);
    bounds::<u8>(&d);
    bounds::<f64>(&d);
}

/// A short run of the path for compute-sanitizer: every key width, slices with a head and a
/// tail around the bulk copy, empty slices, ties in the window, and the forced path on
/// segments the plan would give the on-chip path.
#[test]
fn sanitize_topk_cluster() {
    let d = dev();
    if !sm90(&d) {
        return;
    }
    fn one<K: Key>(d: &Device) {
        let o = offsets_of(&[3, 20_011, 1, 0, 33_333]);
        let n = *o.last().unwrap() as usize;
        for pattern in [Pattern::RandomBits, Pattern::TwoValues, Pattern::Specials] {
            let k: Vec<K> = keys(n, pattern, 5);
            for tie in TIES {
                let req = TopK::largest(300)
                    .tie_break(tie)
                    .force_path(Some(GpuPath::Cluster));
                let plan = check::<K, K>(d, &req, &k, Segments::Offsets(&o), None);
                assert!(plan.reason.starts_with("cluster"), "{plan}");
            }
        }
    }
    one::<f32>(&d);
    one::<f64>(&d);
    one::<bf16>(&d);
    one::<u8>(&d);
}

/// Forcing the path where it cannot run is an error naming the reason, not a wrong answer.
#[test]
fn topk_cluster_forced_past_its_limit_is_refused() {
    let d = dev();
    let limits = d.gpu().unwrap().limits();
    let len = if sm90(&d) {
        cluster_max_len(limits) + 1
    } else {
        100_000
    };
    let k: Vec<f32> = keys(len, Pattern::Uniform, 1);
    let req = TopK::largest(10).force_path(Some(GpuPath::Cluster));
    let err = req
        .run_keys(&d, &k, Segments::Fixed { count: 1, len })
        .unwrap_err();
    assert!(err.to_string().contains("cluster"), "{err}");
}
