//! The naive reference: sort every segment's positions under the total order (key, then
//! position in the tie-break's preference), take the first k, and order them as the output
//! asks. Obviously correct and slow.

use super::key::directed;
use super::{padding, Indices, Key, Layout, TieBreak, TopK, TopKOutput};

/// The positions the oracle selects for one segment, in output order.
pub fn select<K: Key>(req: &TopK, seg: &[K], kk: usize) -> Vec<usize> {
    let r: Vec<u64> = seg.iter().map(|&k| directed(k, req.is_largest())).collect();
    let mut idx: Vec<usize> = (0..seg.len()).collect();
    let larger_first = req.tie() == TieBreak::LargerIndex;
    idx.sort_by(|&a, &b| {
        r[b].cmp(&r[a])
            .then(if larger_first { b.cmp(&a) } else { a.cmp(&b) })
    });
    idx.truncate(kk);
    if req.is_sorted() {
        idx.sort_by(|&a, &b| r[b].cmp(&r[a]).then(a.cmp(&b)));
    } else {
        idx.sort_unstable();
    }
    idx
}

/// The full output, as every backend must produce it (for `Fast`, up to which tied keys are
/// chosen).
pub fn topk<K: Key, V: Key>(
    req: &TopK,
    keys: &[K],
    layout: &Layout,
    values: Option<&[V]>,
) -> TopKOutput<K, V> {
    let w = layout.width;
    let n = layout.count();
    let mut out_k = vec![padding::<K>(req.is_largest()); n * w];
    let mut out_i = vec![-1i64; n * w];
    let mut out_v = values.map(|_| vec![V::default(); n * w]);
    for s in 0..n {
        let start = layout.starts[s] as usize;
        let seg = &keys[start..start + layout.lens[s] as usize];
        for (j, p) in select(req, seg, layout.kk[s] as usize)
            .into_iter()
            .enumerate()
        {
            out_k[s * w + j] = seg[p];
            out_i[s * w + j] = p as i64;
            if let (Some(ov), Some(v)) = (out_v.as_mut(), values) {
                ov[s * w + j] = v[start + p];
            }
        }
    }
    TopKOutput {
        width: w,
        keys: out_k,
        indices: Indices::from_i64(req.index(), out_i),
        values: out_v,
        counts: layout.kk.clone(),
    }
}
