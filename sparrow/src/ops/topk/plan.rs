//! Every path top-k can take.
//!
//! - CPU: radix select per segment; rayon over segments, and within segments of 1M keys or more.
//! - CUDA, every segment at most [`block_max`] keys: one block per segment keeps the segment's
//!   radixes in shared memory and does every digit pass and the ordered compaction on chip,
//!   reading the keys once.
//! - CUDA, otherwise: radix select over tiles of at most [`TILE`] keys (a tile never spans two segments,
//!   so short segments get one block each and long ones many), one histogram pass per 8-bit
//!   digit with early stop, an ordered compaction, and for sorted output a bitonic sort per
//!   row in shared memory when the row fits ([`SORT_MAX`]); wider sorted rows are sorted on
//!   the host after the GPU selection.
//!
//! Ready for the Hopper cluster backend: it becomes another arm of [`plan`] chosen from the same
//! facts (segment lengths, k, compute capability).

use super::{Key, Layout, TopK};
use crate::device::LaunchShape;
use crate::ops::{Backend, Plan};
use crate::{Device, Result};

/// Keys per tile (one block of 256 threads); must match `TILE` in `topk.cu`.
pub const TILE: usize = 4096;
/// Widest row the GPU sorts in shared memory: 4096 slots of 12 bytes fill the 48 KiB every
/// block may use without opting in.
pub const SORT_MAX: usize = 4096;

/// Longest segment the on-chip path takes on this device: its radixes (8 bytes each) must fit
/// the opt-in shared memory with 4 KiB to spare, capped at 16,384 keys so a block's passes stay
/// short.
pub fn block_max(limits: &crate::device::Limits) -> usize {
    let fit = (limits.smem_per_block_optin as usize).saturating_sub(4096) / 8;
    fit.min(16_384) / 256 * 256
}

/// Tiles of every segment, in segment order: `(segment, start, end)` as absolute key positions.
pub fn tiles(layout: &Layout) -> (Vec<i32>, Vec<i64>, Vec<i64>, Vec<i64>) {
    let (mut seg, mut st, mut en) = (Vec::new(), Vec::new(), Vec::new());
    let mut ptr = Vec::with_capacity(layout.count() + 1);
    ptr.push(0i64);
    for s in 0..layout.count() {
        let (a, l) = (layout.starts[s], layout.lens[s]);
        let mut x = a;
        while x < a + l {
            let e = (x + TILE as i64).min(a + l);
            seg.push(s as i32);
            st.push(x);
            en.push(e);
            x = e;
        }
        ptr.push(seg.len() as i64);
    }
    (seg, st, en, ptr)
}

/// The plan for `req` on `device`.
pub fn plan<K: Key>(req: &TopK, device: &Device, layout: &Layout) -> Result<Plan> {
    if let Device::Cpu = device {
        return Ok(Plan {
            op: "topk",
            backend: Backend::Cpu,
            kernel: None,
            shape: None,
            reason: "the device is the CPU: radix select per segment, rayon over segments and within segments of 1M keys or more".into(),
        });
    }
    let n = layout.count();
    if n == 0 || layout.width == 0 {
        return Ok(Plan {
            op: "topk",
            backend: Backend::Cuda,
            kernel: None,
            shape: None,
            reason: "the output is empty: nothing to launch".into(),
        });
    }
    let ntiles: usize = layout
        .lens
        .iter()
        .map(|&l| (l as usize).div_ceil(TILE))
        .sum();
    let max_len = layout.lens.iter().copied().max().unwrap_or(0) as usize;
    let all_or_none = layout
        .kk
        .iter()
        .zip(&layout.lens)
        .all(|(&k, &l)| k == 0 || k == l);
    let Device::Cuda(gpu) = device else {
        unreachable!("the CPU returned above")
    };
    let bmax = block_max(gpu.limits());
    let on_chip = max_len <= bmax && !req.is_tiled_forced();
    let mut reason = if on_chip {
        format!(
            "every segment (longest {max_len}) fits one block's shared memory (up to {bmax} keys): one block per segment, up to {} digit passes on chip with early stop, ordered compaction",
            K::BITS / 8
        )
    } else {
        format!(
            "{n} segment(s) (longest {max_len}, on-chip limit {bmax}{}) cut into {ntiles} tile(s) of at most {TILE} keys; up to {} 8-bit digit passes over memory with early stop, then an ordered compaction",
            if req.is_tiled_forced() { ", tiled path forced" } else { "" },
            K::BITS / 8
        )
    };
    if all_or_none {
        reason
            .push_str("; every segment keeps all or none of its keys, so the passes stop at once");
    }
    let mut kernel = if on_chip {
        format!("topk_{{block,pad}}_{}", K::NAME)
    } else {
        format!("topk_{{init,hist,pick,count,scan,write,pad}}_{}", K::NAME)
    };
    if req.is_sorted() {
        if layout.width <= SORT_MAX {
            kernel.push_str(&format!(" + topk_{{sort,gather}}_{}", K::NAME));
            reason.push_str("; rows sorted by a bitonic sort in shared memory");
        } else {
            reason.push_str(&format!(
                "; rows of {} > {SORT_MAX} sorted on the host",
                layout.width
            ));
        }
    }
    Ok(Plan {
        op: "topk",
        backend: Backend::Cuda,
        kernel: Some(kernel),
        shape: Some(if on_chip {
            LaunchShape::linear(n as u32, 256).with_smem((max_len.max(1) * 8) as u32)
        } else {
            LaunchShape::linear(ntiles.max(1) as u32, 256)
        }),
        reason,
    })
}
