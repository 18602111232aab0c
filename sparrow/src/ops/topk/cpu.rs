//! The CPU backend: radix selection, the same algorithm as the GPU's. Histograms of 8-bit
//! digits from the most significant find the k-th key's bucket (stopping early when a bucket
//! holds exactly the keys still needed); one ordered pass then keeps every key above the
//! threshold and the tie-break's share of the keys equal to it. Segments run in parallel, and
//! segments of a million keys or more also split their passes over threads.

use rayon::prelude::*;

use super::key::directed;
use super::{padding, Indices, Key, Layout, TieBreak, TopK, TopKOutput};

/// Segments at least this long split their passes across threads.
const PAR_LEN: usize = 1 << 20;
/// Keys per parallel chunk.
const CHUNK: usize = 1 << 16;

#[inline]
fn hi(r: u64, s: u32) -> u64 {
    if s >= 64 {
        0
    } else {
        r >> s
    }
}

/// Where the k-th key lies: keys whose radix above bit `shift` exceeds `prefix` are selected,
/// `need` of the `ties` keys equal to it are selected too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Threshold {
    /// Unresolved low bits.
    pub shift: u32,
    /// The k-th key's radix above `shift`.
    pub prefix: u64,
    /// Keys equal to `prefix` (above `shift`) still to take.
    pub need: u64,
    /// Keys equal to `prefix` in the segment.
    pub ties: u64,
}

fn histogram<K: Key>(seg: &[K], largest: bool, digit: u32, prefix: u64) -> [u64; 256] {
    let one = |part: &[K]| {
        let mut h = [0u64; 256];
        for &k in part {
            let r = directed(k, largest);
            if hi(r, digit + 8) == prefix {
                h[((r >> digit) & 255) as usize] += 1;
            }
        }
        h
    };
    if seg.len() < PAR_LEN {
        return one(seg);
    }
    seg.par_chunks(CHUNK).map(one).reduce(
        || [0u64; 256],
        |mut a, b| {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
            a
        },
    )
}

/// Radix selection of the `kk`-th largest directed radix; `kk` must be in 1..=len.
pub fn threshold<K: Key>(seg: &[K], largest: bool, kk: u64) -> Threshold {
    let mut shift = K::BITS;
    let mut prefix = 0u64;
    let mut remaining = kk;
    let mut ties = seg.len() as u64;
    while shift > 0 {
        let digit = shift - 8;
        let h = histogram(seg, largest, digit, prefix);
        let mut b = 255usize;
        let mut above = 0u64;
        while above + h[b] < remaining {
            above += h[b];
            b -= 1;
        }
        remaining -= above;
        prefix = (prefix << 8) | b as u64;
        shift = digit;
        ties = h[b];
        if ties == remaining {
            break;
        }
    }
    Threshold {
        shift,
        prefix,
        need: remaining,
        ties,
    }
}

/// Positions kept from `part` (whose first tie has rank `tie_base`), ascending.
fn keep<K: Key>(
    part: &[K],
    base: usize,
    largest: bool,
    t: Threshold,
    lo: u64,
    tie_base: u64,
    out: &mut Vec<usize>,
) {
    let mut rank = tie_base;
    for (i, &k) in part.iter().enumerate() {
        let g = hi(directed(k, largest), t.shift);
        if g > t.prefix {
            out.push(base + i);
        } else if g == t.prefix {
            if rank >= lo && rank < lo + t.need {
                out.push(base + i);
            }
            rank += 1;
        }
    }
}

/// The positions the backend selects for one segment, in output order.
pub fn select<K: Key>(req: &TopK, seg: &[K], kk: usize) -> Vec<usize> {
    let largest = req.is_largest();
    let mut pos: Vec<usize> = if kk == 0 {
        Vec::new()
    } else if kk >= seg.len() {
        (0..seg.len()).collect()
    } else {
        let t = threshold(seg, largest, kk as u64);
        let lo = if req.tie() == TieBreak::LargerIndex {
            t.ties - t.need
        } else {
            0
        };
        if seg.len() < PAR_LEN {
            let mut v = Vec::with_capacity(kk);
            keep(seg, 0, largest, t, lo, 0, &mut v);
            v
        } else {
            let tie_counts: Vec<u64> = seg
                .par_chunks(CHUNK)
                .map(|c| {
                    c.iter()
                        .filter(|&&k| hi(directed(k, largest), t.shift) == t.prefix)
                        .count() as u64
                })
                .collect();
            let mut bases = Vec::with_capacity(tie_counts.len());
            let mut acc = 0u64;
            for c in &tie_counts {
                bases.push(acc);
                acc += c;
            }
            let parts: Vec<Vec<usize>> = seg
                .par_chunks(CHUNK)
                .enumerate()
                .map(|(i, c)| {
                    let mut v = Vec::new();
                    keep(c, i * CHUNK, largest, t, lo, bases[i], &mut v);
                    v
                })
                .collect();
            parts.concat()
        }
    };
    debug_assert_eq!(pos.len(), kk.min(seg.len()));
    if req.is_sorted() {
        let key = |p: usize| std::cmp::Reverse(directed(seg[p], largest));
        if pos.len() >= PAR_LEN {
            pos.par_sort_by_key(|&p| (key(p), p));
        } else {
            pos.sort_unstable_by_key(|&p| (key(p), p));
        }
    }
    pos
}

/// Top-k of every segment on the CPU. The layout is validated by the caller.
pub fn topk<K: Key, V: Key>(
    req: &TopK,
    keys: &[K],
    layout: &Layout,
    values: Option<&[V]>,
) -> TopKOutput<K, V> {
    let w = layout.width;
    let n = layout.count();
    let seg = |s: usize| {
        let st = layout.starts[s] as usize;
        (st, &keys[st..st + layout.lens[s] as usize])
    };
    let mut out_k = vec![padding::<K>(req.is_largest()); n * w];
    let mut out_i = vec![-1i64; n * w];
    let mut out_v = values.map(|_| vec![V::default(); n * w]);
    if w > 0 {
        let fill = |s: usize, rk: &mut [K], ri: &mut [i64], rv: Option<&mut [V]>| {
            let (st, keys_s) = seg(s);
            let pos = select(req, keys_s, layout.kk[s] as usize);
            for (j, &p) in pos.iter().enumerate() {
                rk[j] = keys_s[p];
                ri[j] = p as i64;
            }
            if let (Some(rv), Some(v)) = (rv, values) {
                for (j, &p) in pos.iter().enumerate() {
                    rv[j] = v[st + p];
                }
            }
        };
        match out_v.as_mut() {
            Some(ov) => out_k
                .par_chunks_mut(w)
                .zip(out_i.par_chunks_mut(w))
                .zip(ov.par_chunks_mut(w))
                .enumerate()
                .for_each(|(s, ((rk, ri), rv))| fill(s, rk, ri, Some(rv))),
            None => out_k
                .par_chunks_mut(w)
                .zip(out_i.par_chunks_mut(w))
                .enumerate()
                .for_each(|(s, (rk, ri))| fill(s, rk, ri, None)),
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
