//! Checking a top-k output against the oracle: deterministic tie-breaks must match it byte for
//! byte; the fast mode must select the same multiset of keys, each index pointing at its key
//! (and value), rows in the requested order, padding as specified.

use super::key::directed;
use super::{oracle, Key, Layout, TieBreak, TopK, TopKOutput};

/// `Ok` when `out` is a correct answer to `req`, else the first problem found.
pub fn verify<K: Key, V: Key>(
    req: &TopK,
    keys: &[K],
    layout: &Layout,
    values: Option<&[V]>,
    out: &TopKOutput<K, V>,
) -> Result<(), String> {
    let want = oracle::topk(req, keys, layout, values);
    let w = layout.width;
    if out.width != w
        || out.keys.len() != want.keys.len()
        || out.indices.len() != want.indices.len()
    {
        return Err(format!(
            "shape: width {} with {} keys, want width {w} with {}",
            out.width,
            out.keys.len(),
            want.keys.len()
        ));
    }
    if out.counts != want.counts {
        return Err("counts differ from the oracle's".into());
    }
    if out.values.is_some() != values.is_some() {
        return Err("values present in one output and not the other".into());
    }
    if req.tie() != TieBreak::Fast {
        for e in 0..want.keys.len() {
            let (s, j) = (e / w.max(1), e % w.max(1));
            if out.keys[e].to_bits() != want.keys[e].to_bits()
                || out.indices.get(e) != want.indices.get(e)
            {
                return Err(format!(
                    "segment {s} slot {j}: got key {:?} at {}, want {:?} at {}",
                    out.keys[e],
                    out.indices.get(e),
                    want.keys[e],
                    want.indices.get(e)
                ));
            }
            if let (Some(a), Some(b)) = (&out.values, &want.values) {
                if a[e].to_bits() != b[e].to_bits() {
                    return Err(format!(
                        "segment {s} slot {j}: value {:?}, want {:?}",
                        a[e], b[e]
                    ));
                }
            }
        }
        return Ok(());
    }
    let largest = req.is_largest();
    for s in 0..layout.count() {
        let start = layout.starts[s] as usize;
        let seg = &keys[start..start + layout.lens[s] as usize];
        let n = layout.kk[s] as usize;
        let row = s * w;
        let mut got_r = Vec::with_capacity(n);
        let mut seen = std::collections::HashSet::with_capacity(n);
        for j in 0..n {
            let i = out.indices.get(row + j);
            if i < 0 || i as usize >= seg.len() || !seen.insert(i) {
                return Err(format!(
                    "segment {s} slot {j}: index {i} is out of range or repeated"
                ));
            }
            if seg[i as usize].to_bits() != out.keys[row + j].to_bits() {
                return Err(format!(
                    "segment {s} slot {j}: key {:?} is not the key at index {i}",
                    out.keys[row + j]
                ));
            }
            if let (Some(ov), Some(v)) = (&out.values, values) {
                if ov[row + j].to_bits() != v[start + i as usize].to_bits() {
                    return Err(format!(
                        "segment {s} slot {j}: value is not the one at index {i}"
                    ));
                }
            }
            got_r.push(directed(out.keys[row + j], largest));
        }
        if req.is_sorted() {
            for j in 1..n {
                let (a, b) = (got_r[j - 1], got_r[j]);
                if a < b || (a == b && out.indices.get(row + j - 1) > out.indices.get(row + j)) {
                    return Err(format!("segment {s}: row is not sorted at slot {j}"));
                }
            }
        }
        let mut want_r: Vec<u64> = (0..n)
            .map(|j| directed(want.keys[row + j], largest))
            .collect();
        got_r.sort_unstable();
        want_r.sort_unstable();
        if got_r != want_r {
            return Err(format!(
                "segment {s}: the selected keys differ from the oracle's"
            ));
        }
        for j in n..w {
            if out.indices.get(row + j) != -1
                || out.keys[row + j].to_bits() != want.keys[row + j].to_bits()
            {
                return Err(format!("segment {s} slot {j}: padding is wrong"));
            }
        }
    }
    Ok(())
}

/// Byte-for-byte equality of two outputs (NaN keys compare by their bits), for the promise
/// that deterministic runs repeat exactly.
pub fn same_bytes<K: Key, V: Key>(a: &TopKOutput<K, V>, b: &TopKOutput<K, V>) -> bool {
    let bits = |v: &[K]| v.iter().map(|k| k.to_bits()).collect::<Vec<_>>();
    let vbits = |v: &Option<Vec<V>>| {
        v.as_ref()
            .map(|v| v.iter().map(|k| k.to_bits()).collect::<Vec<_>>())
    };
    a.width == b.width
        && bits(&a.keys) == bits(&b.keys)
        && a.indices == b.indices
        && vbits(&a.values) == vbits(&b.values)
        && a.counts == b.counts
}
