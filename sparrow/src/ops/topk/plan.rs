//! Every path top-k can take.
//!
//! - CPU: radix select per segment; rayon over segments, and within segments of 1M keys or more.
//! - CUDA: radix select over tiles of at most [`TILE`] keys (a tile never spans two segments,
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
    let max_len = layout.lens.iter().copied().max().unwrap_or(0);
    let all_or_none = layout
        .kk
        .iter()
        .zip(&layout.lens)
        .all(|(&k, &l)| k == 0 || k == l);
    let mut reason = if all_or_none {
        "every segment keeps all or none of its keys: the selection passes stop at once and the compaction copies".to_string()
    } else {
        format!(
            "{n} segment(s) (longest {max_len}) cut into {ntiles} tile(s) of at most {TILE} keys; up to {} 8-bit digit passes with early stop, then an ordered compaction",
            K::BITS / 8
        )
    };
    let mut kernel = format!("topk_{{init,hist,pick,count,scan,write,pad}}_{}", K::NAME);
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
        shape: Some(LaunchShape::linear(ntiles.max(1) as u32, 256)),
        reason,
    })
}
