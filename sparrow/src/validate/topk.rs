//! Validation cases of segmented top-k: for every key type, segments of mixed lengths that cross
//! tile boundaries (and empty ones), adversarial patterns, both directions, every tie-break,
//! unsorted and sorted, keys only and pairs, against the oracle (exactly for the deterministic
//! tie-breaks, as a multiset for the fast one).

use half::{bf16, f16};

use super::{Case, Outcome, Reference};
use crate::matrix::Rng;
use crate::ops::topk::check::verify;
use crate::ops::topk::data::{keys, Pattern};
use crate::ops::topk::{GpuPath, IndexType, Key, Segments, TieBreak, TopK};
use crate::{Device, Result};

pub(super) fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "topk/f32",
            run: case::<f32>,
        },
        Case {
            name: "topk/f64",
            run: case::<f64>,
        },
        Case {
            name: "topk/f16",
            run: case::<f16>,
        },
        Case {
            name: "topk/bf16",
            run: case::<bf16>,
        },
        Case {
            name: "topk/i8",
            run: case::<i8>,
        },
        Case {
            name: "topk/u8",
            run: case::<u8>,
        },
        Case {
            name: "topk/i16",
            run: case::<i16>,
        },
        Case {
            name: "topk/u16",
            run: case::<u16>,
        },
        Case {
            name: "topk/i32",
            run: case::<i32>,
        },
        Case {
            name: "topk/u32",
            run: case::<u32>,
        },
        Case {
            name: "topk/i64",
            run: case::<i64>,
        },
        Case {
            name: "topk/u64",
            run: case::<u64>,
        },
    ]
}

fn case<K: Key>(device: &Device) -> Result<Vec<Outcome>> {
    let mut rng = Rng::new(K::BITS as u64);
    let mut offsets = vec![0i64];
    for l in [0i64, 1, 4095, 4096, 4097, 9000, 300, 0, 16_000, 77] {
        offsets.push(offsets.last().unwrap() + l + rng.below(3) as i64);
    }
    let n = *offsets.last().unwrap() as usize;
    let mut out = Vec::new();
    for pattern in [Pattern::RandomBits, Pattern::HeavyTies, Pattern::Specials] {
        let k: Vec<K> = keys(n, pattern, 17);
        let vals: Vec<u32> = (0..n as u32).collect();
        let mut failures = Vec::new();
        let mut runs = 0;
        for largest in [true, false] {
            for tie in [
                TieBreak::Fast,
                TieBreak::SmallerIndex,
                TieBreak::LargerIndex,
            ] {
                for sorted in [false, true] {
                    for (kk, path) in [1usize, 100, 5000].into_iter().flat_map(|kk| {
                        [
                            None,
                            Some(GpuPath::Tiled),
                            Some(GpuPath::Filter),
                            Some(GpuPath::Split { chunk: 5000 }),
                        ]
                        .map(|p| (kk, p))
                    }) {
                        let base = if largest {
                            TopK::largest(kk)
                        } else {
                            TopK::smallest(kk)
                        };
                        let index = if sorted {
                            IndexType::I32
                        } else {
                            IndexType::I64
                        };
                        let req = base
                            .tie_break(tie)
                            .sorted(sorted)
                            .index_type(index)
                            .force_path(path);
                        let values = if kk == 100 { Some(&vals[..]) } else { None };
                        let segs = Segments::Offsets(&offsets);
                        let (got, plan) = req.run(device, &k, segs, values)?;
                        let layout = req.layout(n, segs, values.map(|v| v.len()))?;
                        runs += 1;
                        if let Err(e) = verify(&req, &k, &layout, values, &got) {
                            failures.push(format!(
                                "{} largest={largest} {tie:?} sorted={sorted} k={kk}: {e}",
                                plan.kernel.unwrap_or_default()
                            ));
                        }
                    }
                }
            }
        }
        let kernel = match device {
            Device::Cpu => format!("topk cpu {}", K::NAME),
            Device::Cuda(_) => format!("topk radix {}", K::NAME),
        };
        out.push(Outcome {
            kernel,
            reference: Reference::NaiveOracle,
            shapes: format!(
                "{} segments up to 16000, {pattern:?}, {runs} requests (on-chip, tiled and filter paths)",
                offsets.len() - 1
            ),
            max_rel: 0.0,
            max_abs: 0.0,
            tolerance: 0.0,
            pass: failures.is_empty(),
            note: failures.first().cloned().unwrap_or_default(),
        });
    }
    Ok(out)
}
