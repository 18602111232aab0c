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

fn histogram<E: Copy + Sync>(
    seg: &[E],
    radix: &(impl Fn(E) -> u64 + Sync),
    digit: u32,
    prefix: u64,
) -> [u64; 256] {
    let one = |part: &[E]| {
        let mut h = [0u64; 256];
        for &k in part {
            let r = radix(k);
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
    // By value: a closure holding `largest` by reference ran small segments 10 % slower.
    threshold_of(seg, K::BITS, &move |k| directed(k, largest), kk)
}

/// [`threshold`] over any elements with `bits`-bit radixes.
fn threshold_of<E: Copy + Sync>(
    seg: &[E],
    bits: u32,
    radix: &(impl Fn(E) -> u64 + Sync),
    kk: u64,
) -> Threshold {
    let mut shift = bits;
    let mut prefix = 0u64;
    let mut remaining = kk;
    let mut ties = seg.len() as u64;
    while shift > 0 {
        let digit = shift - 8;
        let h = histogram(seg, radix, digit, prefix);
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
    keep_of(
        part,
        move |k| directed(k, largest),
        |i| base + i,
        t,
        lo,
        tie_base,
        out,
    );
}

/// The positions the backend selects for one segment, in output order.
pub fn select<K: Key>(req: &TopK, seg: &[K], kk: usize) -> Vec<usize> {
    let largest = req.is_largest();
    let mut pos: Vec<usize> = if kk == 0 {
        Vec::new()
    } else if kk >= seg.len() {
        (0..seg.len()).collect()
    } else if seg.len() >= SAMPLE_MIN && kk <= seg.len() / 16 {
        match candidates(seg, largest, kk) {
            Some((cpos, crad)) => {
                // Every key at or above the k-th is a candidate, ties included, in order.
                let t = threshold_of(&crad, K::BITS, &|r| r, kk as u64);
                let mut v = Vec::with_capacity(kk);
                keep_of(&crad, |r| r, |i| cpos[i], t, tie_lo(req, &t), 0, &mut v);
                v
            }
            None => all_passes(req, seg, kk),
        }
    } else {
        all_passes(req, seg, kk)
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

/// Segments at least this long, with k at most a sixteenth of them, first gather the keys at
/// or above a bound read off a sample of the segment and select among those ([`candidates`]):
/// one pass over the segment, then the radix passes over a few of its keys, instead of up to
/// a pass a byte of the key (and a last one to keep the selected keys) over all of it.
const SAMPLE_MIN: usize = 1 << 14;

/// Keys in that sample, evenly spaced.
const SAMPLE: usize = 1024;

/// The positions (ascending) and directed radixes of the segment's keys at or above a bound
/// that a sample puts below its `kk`-th largest: the sample's key at twice the k-th key's
/// expected rank, plus 8. None where the bound let through fewer than `kk` keys (the sample
/// misled) or more than a quarter of the segment (many equal keys), and the full passes
/// are cheaper.
fn candidates<K: Key>(seg: &[K], largest: bool, kk: usize) -> Option<(Vec<usize>, Vec<u64>)> {
    let len = seg.len();
    let mut sample: Vec<u64> = (0..SAMPLE)
        .map(|i| directed(seg[i * len / SAMPLE], largest))
        .collect();
    sample.sort_unstable_by(|a, b| b.cmp(a));
    let bound = sample[(2 * kk * SAMPLE / len + 8).min(SAMPLE - 1)];
    let cap = len / 4;
    let one = |base: usize, part: &[K]| {
        let (mut p, mut r) = (Vec::new(), Vec::new());
        for (i, &k) in part.iter().enumerate() {
            let d = directed(k, largest);
            if d >= bound {
                if p.len() == cap {
                    return None;
                }
                p.push(base + i);
                r.push(d);
            }
        }
        Some((p, r))
    };
    let (pos, rad) = if len < PAR_LEN {
        one(0, seg)?
    } else {
        let parts = seg
            .par_chunks(CHUNK)
            .enumerate()
            .map(|(i, c)| one(i * CHUNK, c))
            .collect::<Option<Vec<_>>>()?;
        let n = parts.iter().map(|p| p.0.len()).sum();
        let (mut pos, mut rad) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for (p, r) in parts {
            pos.extend_from_slice(&p);
            rad.extend_from_slice(&r);
        }
        (pos, rad)
    };
    (pos.len() >= kk && pos.len() <= cap).then_some((pos, rad))
}

/// The rank among the ties of the first tie kept: the last `need` for the larger-index
/// tie-break, else the first.
fn tie_lo(req: &TopK, t: &Threshold) -> u64 {
    if req.tie() == TieBreak::LargerIndex {
        t.ties - t.need
    } else {
        0
    }
}

/// Appends `at(i)` for every element `items[i]` whose radix lies above the threshold, and for
/// the ties of rank `lo..lo + need` (counting from `tie_base`), in order.
fn keep_of<E: Copy>(
    items: &[E],
    radix: impl Fn(E) -> u64,
    at: impl Fn(usize) -> usize,
    t: Threshold,
    lo: u64,
    tie_base: u64,
    out: &mut Vec<usize>,
) {
    let mut rank = tie_base;
    for (i, &e) in items.iter().enumerate() {
        let g = hi(radix(e), t.shift);
        if g > t.prefix {
            out.push(at(i));
        } else if g == t.prefix {
            if rank >= lo && rank < lo + t.need {
                out.push(at(i));
            }
            rank += 1;
        }
    }
}

/// The radix passes over the whole segment, then the pass that keeps its selected keys.
fn all_passes<K: Key>(req: &TopK, seg: &[K], kk: usize) -> Vec<usize> {
    let largest = req.is_largest();
    let t = threshold(seg, largest, kk as u64);
    let lo = tie_lo(req, &t);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::topk::data::{keys, Pattern};
    use half::bf16;

    /// The sampled candidates select what the passes over the whole segment select, bit for
    /// bit, for every pattern and tie-break, including where the sample misleads (its keys are
    /// the segment's largest) and where it lets a flood of equal keys through.
    #[test]
    fn candidates_select_what_all_passes_select() {
        fn agree<K: Key>(seg: &[K], kk: usize, expect_candidates: Option<bool>) {
            for largest in [true, false] {
                for tie in [
                    TieBreak::Fast,
                    TieBreak::SmallerIndex,
                    TieBreak::LargerIndex,
                ] {
                    let base = if largest {
                        TopK::largest(kk)
                    } else {
                        TopK::smallest(kk)
                    };
                    let req = base.tie_break(tie);
                    assert_eq!(
                        select(&req, seg, kk),
                        all_passes(&req, seg, kk),
                        "{} len {} k {kk} {tie:?} largest {largest}",
                        K::NAME,
                        seg.len()
                    );
                }
            }
            if let Some(want) = expect_candidates {
                assert_eq!(
                    candidates(seg, true, kk).is_some(),
                    want,
                    "len {}",
                    seg.len()
                );
            }
        }
        for (i, pat) in Pattern::ALL.into_iter().enumerate() {
            // Past PAR_LEN the candidates are gathered in parallel parts.
            let long = matches!(pat, Pattern::Uniform | Pattern::HeavyTies);
            let lens = [
                SAMPLE_MIN,
                50_001,
                if long { PAR_LEN + 12_345 } else { 20_000 },
            ];
            for len in lens {
                let f = keys::<f32>(len, pat, i as u64);
                for kk in [1, 7, 1000, len / 16] {
                    agree(&f, kk, None);
                }
                agree(&keys::<bf16>(len, pat, 40 + i as u64), 300, None);
                agree(&keys::<i64>(len, pat, 80 + i as u64), 2_000, None);
            }
        }
        // Uniform keys take the candidates; all-equal ones flood them.
        agree(&keys::<f32>(100_000, Pattern::Uniform, 1), 500, Some(true));
        agree(
            &keys::<f32>(100_000, Pattern::AllEqual, 1),
            500,
            Some(false),
        );
        // The sampled positions hold the largest keys: the bound lets through only those.
        let len = 1 << 16;
        let mut seg = keys::<f32>(len, Pattern::Uniform, 2);
        for i in 0..SAMPLE {
            seg[i * len / SAMPLE] = 5.0 + i as f32;
        }
        // Nine of them for k = 5; far fewer than 1,000.
        agree(&seg, 5, Some(true));
        agree(&seg, 1_000, Some(false));
    }
}
