//! The column-slice layout for SpMV on scattered columns (`spmv_sliced`). Gathering x at random
//! columns costs an L2 request a 32-byte sector per entry whatever the kernel does (see
//! docs/tuning/products.md#column-slices), so a block copies x into shared memory a slice of
//! columns at a time instead, and reads entries sorted by slice. Each group of [`SLICE_MEMBERS`] blocks (a
//! cluster) owns a run of row pieces (rows longer than [`SLICE_PIECE`] cut into pieces that
//! take every p-th entry, summed in piece order by a second kernel), dealt to [`SLICE_WARPS`]
//! warps by entries. A stage is one slice of x and the group's records in it (at most
//! [`SLICE_STAGE`]; a slice with more takes several stages). A record is a 32-bit word (the
//! column in its slice << 16 | the piece in its group) and the value: the bytes of CSR.
//!
//! The members of a group take its stages in turn, each holding sums for all the group's
//! pieces in shared memory, and add their sums in rank order at the end through distributed
//! shared memory. So a group copies x through L2 once, split between its blocks: those copies,
//! 132 blocks' of the whole of x when every block had rows of its own, set the kernel's pace
//! then; now the round trips of the stages a block copies in do.
//!
//! Inside a stage each warp's entries are laid out in steps in which no piece appears twice
//! (`deal`), so a lane adds its product straight into its piece's sum and every sum takes
//! its additions in one fixed order: the result is the same bit for bit on every run.

pub use crate::kernels::sizes::{
    DESC_WORDS, PAD_ROW, SLICE_COLS, SLICE_MEMBERS, SLICE_STAGE, SLICE_STAGES, SLICE_WARPS,
    SS_SHIFT,
};
use crate::Scalar;

/// The longest row piece: rows longer are cut, so a piece has about 1 to 2 entries a slice
/// and a warp's steps stay full.
pub const SLICE_PIECE: usize = 128;
/// Row pieces a group holds (their sums fill the shared memory the H200's 227 KB a block
/// leaves beside three f32 stages).
pub const SLICE_PIECES: usize = 17_920;
/// The policy takes the slices where the groups' copies of x, groups times columns, are at
/// most this many times the entries: the uniform and power-law rows (4.1 and 4.3) gain on them,
/// while the long rows' 2,000,000 short rows (22, in 113 groups) and the mostly empty rows (21)
/// would copy far more x than they have entries. See docs/tuning/products.md#column-slices.
pub const SLICE_X_RATIO: usize = 5;
/// Largest stage size where any dealing fits: a warp's group of n entries pads to under
/// 2n + 1 records, a stage to a multiple of 4.
const SAFE_PART: usize = (SLICE_STAGE - 2 * SLICE_WARPS - 4) / 2;
// A record holds a piece in 16 bits (PAD_ROW marks padding) and a column in its slice in 16;
// the build's keys hold the piece in 15 bits, the column in 20 and the warp in 5.
const _: () = assert!(SLICE_PIECES < PAD_ROW as usize && SLICE_PIECES <= 1 << 15);
const _: () = assert!(SLICE_COLS <= 1 << 16 && SLICE_WARPS <= 32);

/// Shared memory of one stage: x's slice, the 8-byte records, the descriptor, rounded up to
/// 128 bytes (`SLICE_STAGE_BYTES` in spmm.cu), so each stage's bulk copies land on 128-byte
/// lines.
pub const fn stage_bytes() -> usize {
    (SLICE_COLS * 4 + SLICE_STAGE * 8 + DESC_WORDS * 4).next_multiple_of(128)
}

/// Dynamic shared memory of the kernel: all its stages with bulk copies (`bulk`), else one,
/// and the pieces' f32 sums.
pub fn smem_bytes(bulk: bool) -> usize {
    let stages = if bulk { SLICE_STAGES } else { 1 };
    stages * stage_bytes() + SLICE_PIECES * 4
}

/// Static shared memory of the kernel at most (its stages' mbarriers).
const STATIC_SMEM: usize = 256;

/// Whether a GPU with these limits runs the kernel: its block of 1,024 threads and the shared
/// memory of one stage (every GPU of sm_80 and newer).
pub fn runs_on(limits: &crate::device::Limits) -> bool {
    limits.max_threads_per_block >= 1024
        && limits.smem_per_block_optin as usize >= smem_bytes(false) + STATIC_SMEM
}

/// Whether the kernel copies its stages in by bulk copies, a cluster a group, on a GPU with
/// these limits: sm_90 and room for every stage (x contiguous and 16-byte aligned besides,
/// which the launch checks). Otherwise a block a group runs its members' stages in turn.
pub fn bulk_on(limits: &crate::device::Limits) -> bool {
    limits.compute_capability.0 >= 9
        && limits.max_cluster_portable as usize >= SLICE_MEMBERS
        && limits.smem_per_block_optin as usize >= smem_bytes(true) + STATIC_SMEM
}

/// Pieces a row of `len` entries is cut into (an empty row keeps one, so its y is written).
pub fn pieces_of(len: usize) -> usize {
    len.div_ceil(SLICE_PIECE).max(1)
}

/// The layout of a matrix, ready to upload. Block `g * SLICE_MEMBERS + m` is member m of
/// group g.
pub struct SliceLayout<T> {
    /// Each block's records: their column in the slice << 16 | piece in the group
    /// ([`PAD_ROW`] for padding). Kept a vector a block, as the build makes them, so the
    /// upload's one pass lays them out end to end with their values ([`Self::f32_records`]).
    pub enc: Vec<Vec<u32>>,
    /// Each block's records' values (0 for padding).
    pub vals: Vec<Vec<T>>,
    /// Each block's first record in the records end to end (a multiple of 4).
    pub block_base: Vec<i64>,
    /// Each block's first stage, and the total (`blocks + 1`).
    pub stage0: Vec<i32>,
    /// [`DESC_WORDS`] words a stage, positions relative to its block's first record.
    pub desc: Vec<u32>,
    /// Each group's first piece, and the total (`groups + 1`).
    pub piece0: Vec<i32>,
    /// Each piece's row, or -1 - its slot among the cut rows' pieces.
    pub piece_out: Vec<i32>,
    /// The rows cut into pieces.
    pub cut_rows: Vec<i32>,
    /// Each cut row's first slot, and the total (`cut rows + 1`).
    pub cut_start: Vec<i32>,
}

impl<T> SliceLayout<T> {
    /// Blocks of the main launch with clusters ([`SLICE_MEMBERS`] a group).
    pub fn blocks(&self) -> usize {
        self.block_base.len()
    }

    /// Groups of blocks sharing their pieces.
    pub fn groups(&self) -> usize {
        self.piece0.len().saturating_sub(1)
    }
}

impl<T: Scalar> SliceLayout<T> {
    /// The blocks' records end to end as the kernel reads them: each record's word, then its
    /// value's f32 bits. Written a block a task, as the entries run to tens of millions.
    pub fn f32_records(&self) -> Vec<u32> {
        use rayon::prelude::*;
        let total: usize = self.enc.iter().map(Vec::len).sum();
        let mut out = vec![0u32; 2 * total];
        let mut parts = Vec::with_capacity(self.enc.len());
        let mut rest = &mut out[..];
        for (e, v) in self.enc.iter().zip(&self.vals) {
            let (o, r) = std::mem::take(&mut rest).split_at_mut(2 * e.len());
            rest = r;
            parts.push((o, e, v));
        }
        parts.into_par_iter().for_each(|(o, e, v)| {
            for (o, (&e, v)) in o.chunks_exact_mut(2).zip(e.iter().zip(v)) {
                o[0] = e;
                o[1] = (v.to_f64() as f32).to_bits();
            }
        });
        out
    }
}

/// One block's stream as the build makes it: its records' words and values, and its stages'
/// descriptors.
struct BlockStream<T> {
    enc: Vec<u32>,
    vals: Vec<T>,
    desc: Vec<u32>,
}

/// An entry keyed by (slice, warp, piece in its group, column in its slice), as [`build`] sorts
/// them, with its value.
type Keyed<T> = (u64, T);

/// Step width and steps for a warp's group of `n` entries whose most frequent piece has
/// `c`: T = max(ceil(n / 32), c) steps of ceil(n / T) lanes.
fn shape(n: usize, c: usize) -> (usize, usize) {
    if n == 0 {
        return (1, 0);
    }
    let t = n.div_ceil(32).max(c);
    (n.div_ceil(t), t)
}

/// The dealing's scratch, kept between calls so it allocates nothing: each piece's run
/// (start, length) in a warp's group, the runs in dealing order, and the counting sort's
/// buckets.
#[derive(Default)]
struct DealScratch {
    runs: Vec<(usize, usize)>,
    sorted: Vec<(usize, usize)>,
    count: Vec<usize>,
}

/// Lays out one warp's group (its keyed entries in piece order): pieces by count, most first,
/// each piece's entries together, dealt to the steps in turn (entry i to step i % T, lane
/// i / T), so no step holds a piece twice. Returns the step width; `out` gets T * width
/// records, padding included.
fn deal<T: Scalar>(group: &[Keyed<T>], sc: &mut DealScratch, out: &mut BlockStream<T>) -> usize {
    let piece = |k: &Keyed<T>| ((k.0 >> 20) & 0x7fff) as u32;
    sc.runs.clear();
    let mut i = 0;
    while i < group.len() {
        let p = piece(&group[i]);
        let j = i + group[i..].iter().take_while(|e| piece(e) == p).count();
        sc.runs.push((i, j - i));
        i = j;
    }
    let c = sc.runs.iter().map(|r| r.1).max().unwrap_or(0);
    let (ss, t) = shape(group.len(), c);
    // Most entries first, ties in piece order (the runs' starts): a stable counting sort by
    // length (at most SLICE_PIECE), where most groups' pieces all have one entry.
    let order = if sc.runs.iter().all(|r| r.1 == c) {
        &sc.runs
    } else {
        sc.count.clear();
        sc.count.resize(c + 1, 0);
        for r in &sc.runs {
            sc.count[c - r.1 + 1] += 1;
        }
        for k in 1..=c {
            sc.count[k] += sc.count[k - 1];
        }
        sc.sorted.clear();
        sc.sorted.resize(sc.runs.len(), (0, 0));
        for r in &sc.runs {
            let k = &mut sc.count[c - r.1];
            sc.sorted[*k] = *r;
            *k += 1;
        }
        &sc.sorted
    };
    let base = out.enc.len();
    out.enc.resize(base + t * ss, PAD_ROW);
    out.vals.resize(base + t * ss, T::ZERO);
    // Entry k goes to step k % T, lane k / T, counted without dividing.
    let (mut step, mut lane) = (0, 0);
    for &(start, len) in order {
        for e in &group[start..start + len] {
            let at = base + step * ss + lane;
            out.enc[at] = ((e.0 & 0xfffff) as u32) << 16 | piece(e);
            out.vals[at] = e.1;
            step += 1;
            if step == t {
                (step, lane) = (0, lane + 1);
            }
        }
    }
    ss
}

/// Builds the layout of a CSR matrix of `nrows` rows for values of `T`, its rows dealt by
/// entries to `groups` groups (more where a group's pieces pass [`SLICE_PIECES`]): the GPU's
/// count ([`ProductsTuning::slice_groups`](crate::ops::products::plan::ProductsTuning::slice_groups)),
/// whose blocks fill its SMs. None when a block's records outgrow the 26-bit positions of the
/// descriptors.
pub fn build<T: Scalar>(
    nrows: usize,
    row_ptr: &[i64],
    col_idx: &[i32],
    values: &[T],
    groups: usize,
) -> Option<SliceLayout<T>> {
    use rayon::prelude::*;
    let sc = SLICE_COLS;
    let nnz = col_idx.len();
    // Pieces, and each row's first piece.
    let mut vbase = Vec::with_capacity(nrows + 1);
    vbase.push(0usize);
    for r in 0..nrows {
        let len = (row_ptr[r + 1] - row_ptr[r]) as usize;
        vbase.push(vbase[r] + pieces_of(len));
    }
    let npieces = vbase[nrows];
    let piece_len = |r: usize, k: usize| {
        let len = (row_ptr[r + 1] - row_ptr[r]) as usize;
        let p = pieces_of(len);
        (len + p - 1 - k) / p
    };
    // Groups of about equal entries, at most SLICE_PIECES pieces each.
    let target = nnz.div_ceil(groups).max(1);
    let mut piece0 = vec![0i32];
    let (mut cur_e, mut cur_p) = (0usize, 0usize);
    for r in 0..nrows {
        for k in 0..vbase[r + 1] - vbase[r] {
            if cur_p == SLICE_PIECES || (cur_e >= target && cur_p > 0) {
                piece0.push((vbase[r] + k) as i32);
                cur_e = 0;
                cur_p = 0;
            }
            cur_e += piece_len(r, k);
            cur_p += 1;
        }
    }
    piece0.push(npieces as i32);
    if npieces == 0 {
        piece0.truncate(1);
    }
    let ngroups = piece0.len() - 1;
    // Piece -> row, and the cut rows' slots.
    let mut piece_row = vec![0u32; npieces];
    let mut piece_out = vec![0i32; npieces];
    let (mut cut_rows, mut cut_start) = (Vec::new(), vec![0i32]);
    for r in 0..nrows {
        piece_row[vbase[r]..vbase[r + 1]].fill(r as u32);
        let p = vbase[r + 1] - vbase[r];
        if p > 1 {
            let s0 = *cut_start.last().unwrap();
            for k in 0..p {
                piece_out[vbase[r] + k] = -1 - (s0 + k as i32);
            }
            cut_rows.push(r as i32);
            cut_start.push(s0 + p as i32);
        } else {
            piece_out[vbase[r]] = r as i32;
        }
    }
    // Each group's members' streams, built in parallel; each task keeps its sorted entries'
    // buffer and the dealing's scratch from group to group.
    let streams: Vec<Option<Vec<BlockStream<T>>>> = (0..ngroups)
        .into_par_iter()
        .map_init(
            || (Vec::new(), DealScratch::default()),
            |(keyed, scratch): &mut (Vec<Keyed<T>>, DealScratch), g| {
                let (p_lo, p_hi) = (piece0[g] as usize, piece0[g + 1] as usize);
                // Warps by entries: each piece's warp from the entries before it in the group.
                let mut warp = Vec::with_capacity(p_hi - p_lo);
                let lens: Vec<usize> = (p_lo..p_hi)
                    .map(|p| {
                        let r = piece_row[p] as usize;
                        piece_len(r, p - vbase[r])
                    })
                    .collect();
                let total: usize = lens.iter().sum();
                let mut before = 0usize;
                for &l in &lens {
                    warp.push(((before * SLICE_WARPS) / total.max(1)).min(SLICE_WARPS - 1) as u64);
                    before += l;
                }
                // Each piece's entries in (warp, piece, column) order, keyed by (slice, warp,
                // piece, column in slice).
                let each = |visit: &mut dyn FnMut(u64, usize)| {
                    for p in p_lo..p_hi {
                        let r = piece_row[p] as usize;
                        let (k, np) = (p - vbase[r], vbase[r + 1] - vbase[r]);
                        let local = (p - p_lo) as u64;
                        let mut e = row_ptr[r] as usize + k;
                        while e < row_ptr[r + 1] as usize {
                            let c = col_idx[e] as usize;
                            let key = ((c / sc) as u64) << 40
                                | warp[p - p_lo] << 35
                                | local << 20
                                | (c % sc) as u64;
                            visit(key, e);
                            e += np;
                        }
                    }
                };
                // Placed by slice with a counting sort, stably, so each slice's keys come out
                // sorted: one pass counts, the next places, and no unsorted copy is kept.
                let mut at = Vec::new();
                each(&mut |key, _| {
                    let s = (key >> 40) as usize;
                    if s + 1 >= at.len() {
                        at.resize(s + 2, 0usize);
                    }
                    at[s + 1] += 1;
                });
                for s in 1..at.len() {
                    at[s] += at[s - 1];
                }
                keyed.clear();
                keyed.resize(total, (0, T::ZERO));
                each(&mut |key, e| {
                    let s = (key >> 40) as usize;
                    keyed[at[s]] = (key, values[e]);
                    at[s] += 1;
                });
                // The members take the stages in turn, each into its own stream.
                let cap = total / SLICE_MEMBERS + total / 16;
                let mut members: Vec<BlockStream<T>> = (0..SLICE_MEMBERS)
                    .map(|_| BlockStream {
                        enc: Vec::with_capacity(cap),
                        vals: Vec::with_capacity(cap),
                        desc: Vec::new(),
                    })
                    .collect();
                let mut next = 0usize;
                let mut i = 0;
                while i < keyed.len() {
                    let slice = keyed[i].0 >> 40;
                    let j = i + keyed[i..].iter().take_while(|k| k.0 >> 40 == slice).count();
                    let all = &keyed[i..j];
                    // One stage for the slice when it fits; else, taken back, parts of SAFE_PART
                    // entries, which always fit.
                    let m = &mut members[next % SLICE_MEMBERS];
                    let (start, dstart) = (m.enc.len(), m.desc.len());
                    if stage(all, scratch, m) - start <= SLICE_STAGE {
                        m.desc.extend([slice as u32, 0, 0]);
                        next += 1;
                    } else {
                        m.enc.truncate(start);
                        m.vals.truncate(start);
                        m.desc.truncate(dstart);
                        for part in all.chunks(SAFE_PART) {
                            let m = &mut members[next % SLICE_MEMBERS];
                            let start = m.enc.len();
                            let end = stage(part, scratch, m);
                            debug_assert!(end - start <= SLICE_STAGE);
                            m.desc.extend([slice as u32, 0, 0]);
                            next += 1;
                        }
                    }
                    i = j;
                }
                if members.iter().any(|m| m.enc.len() >= 1 << SS_SHIFT) {
                    return None;
                }
                Some(members)
            },
        )
        .collect();
    let streams: Vec<BlockStream<T>> = streams
        .into_iter()
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect();
    let mut block_base = Vec::with_capacity(streams.len());
    let mut stage0 = vec![0i32];
    let (mut desc, mut enc, mut vals) = (Vec::new(), Vec::new(), Vec::new());
    let mut total = 0usize;
    for s in streams {
        block_base.push(total as i64);
        total += s.enc.len();
        stage0.push(*stage0.last().unwrap() + (s.desc.len() / DESC_WORDS) as i32);
        desc.extend_from_slice(&s.desc);
        enc.push(s.enc);
        vals.push(s.vals);
    }
    Some(SliceLayout {
        enc,
        vals,
        block_base,
        stage0,
        desc,
        piece0,
        piece_out,
        cut_rows,
        cut_start,
    })
}

/// Lays out one stage (entries keyed as in [`build`]) at the end of a block's stream: appends
/// its records (padded to a multiple of 4) and its descriptor but for the slice word, and
/// returns the end of its records.
fn stage<T: Scalar>(
    part: &[Keyed<T>],
    scratch: &mut DealScratch,
    out: &mut BlockStream<T>,
) -> usize {
    let mut i = 0;
    for w in 0..SLICE_WARPS as u64 {
        let j = i + part[i..]
            .iter()
            .take_while(|k| (k.0 >> 35) & 31 == w)
            .count();
        let at = out.enc.len();
        let ss = deal(&part[i..j], scratch, out);
        out.desc.push(at as u32 | (ss as u32) << SS_SHIFT);
        i = j;
    }
    out.desc.push(out.enc.len() as u32);
    while !out.enc.len().is_multiple_of(4) {
        out.enc.push(PAD_ROW);
        out.vals.push(T::ZERO);
    }
    let end = out.enc.len();
    out.desc.push(end as u32);
    end
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::{gen, Csr};

    /// The groups an sm_90 upload deals rows to.
    const GROUPS: usize = crate::ops::products::plan::SM90.slice_groups;

    /// Runs the layout as the kernel does (stage by stage, warp by warp, step by step), checking
    /// that no step holds a piece twice and every stage fits, and returns y.
    fn walk(l: &SliceLayout<f64>, nrows: usize, x: &[f64]) -> Vec<f64> {
        assert_eq!(l.enc.len(), l.blocks());
        assert_eq!(l.vals.len(), l.blocks());
        // The blocks' records lie end to end, each block's first on a 16-byte line.
        let mut at = 0;
        for (b, e) in l.enc.iter().enumerate() {
            assert_eq!(l.block_base[b], at, "block {b}");
            assert_eq!(at % 4, 0);
            at += e.len() as i64;
        }
        let sc = SLICE_COLS;
        let mask = (1u32 << SS_SHIFT) - 1;
        let mut y = vec![f64::NAN; nrows];
        let mut slots = vec![0.0; *l.cut_start.last().unwrap() as usize];
        assert_eq!(l.blocks(), l.groups() * SLICE_MEMBERS);
        for g in 0..l.groups() {
            let np = (l.piece0[g + 1] - l.piece0[g]) as usize;
            assert!(np <= SLICE_PIECES);
            // Each member's sums, then added in rank order as the cluster does.
            let mut sums = vec![0.0; np];
            for b in g * SLICE_MEMBERS..(g + 1) * SLICE_MEMBERS {
                let mut own = vec![0.0; np];
                let (enc, vals) = (&l.enc[b], &l.vals[b]);
                assert_eq!(enc.len(), vals.len());
                for s in l.stage0[b] as usize..l.stage0[b + 1] as usize {
                    let d = &l.desc[s * DESC_WORDS..(s + 1) * DESC_WORDS];
                    let (lo, end) = ((d[0] & mask) as usize, d[SLICE_WARPS + 1] as usize);
                    assert_eq!(lo % 4, 0);
                    assert!(end - lo <= SLICE_STAGE, "stage of {} records", end - lo);
                    let slice = d[SLICE_WARPS + 2] as usize;
                    for w in 0..SLICE_WARPS {
                        let (p0, p1) = ((d[w] & mask) as usize, (d[w + 1] & mask) as usize);
                        let ss = (d[w] >> SS_SHIFT) as usize;
                        assert!((1..=32).contains(&ss));
                        for step in (p0..p1).step_by(ss) {
                            let mut seen = std::collections::HashSet::new();
                            for q in step..(step + ss).min(p1) {
                                let e = enc[q];
                                let piece = e & 0xffff;
                                if piece == PAD_ROW {
                                    continue;
                                }
                                assert!(seen.insert(piece), "piece {piece} twice in a step");
                                let col = slice * sc + (e >> 16) as usize;
                                own[piece as usize] += vals[q] * x[col];
                            }
                        }
                    }
                }
                for (s, o) in sums.iter_mut().zip(own) {
                    *s += o;
                }
            }
            for (i, &v) in sums.iter().enumerate() {
                let o = l.piece_out[l.piece0[g] as usize + i];
                if o >= 0 {
                    y[o as usize] = v;
                } else {
                    slots[(-1 - o) as usize] = v;
                }
            }
        }
        for (i, &r) in l.cut_rows.iter().enumerate() {
            let (a, b) = (l.cut_start[i] as usize, l.cut_start[i + 1] as usize);
            y[r as usize] = slots[a..b].iter().sum();
        }
        y
    }

    fn from_rows(nrows: usize, ncols: usize, rows: &[Vec<i32>]) -> Csr<f64> {
        let mut row_ptr = vec![0i64];
        let mut cols = Vec::new();
        for r in rows {
            cols.extend_from_slice(r);
            row_ptr.push(cols.len() as i64);
        }
        let vals = (0..cols.len()).map(|i| 0.5 + (i % 5) as f64).collect();
        Csr::new(nrows, ncols, row_ptr, cols, vals).unwrap()
    }

    fn check(a: &Csr<f64>) {
        let l = build(a.nrows(), a.row_ptr(), a.col_idx(), a.values(), GROUPS).unwrap();
        let x: Vec<f64> = (0..a.ncols())
            .map(|i| 1.0 + (i % 7) as f64 * 0.25)
            .collect();
        let y = walk(&l, a.nrows(), &x);
        let (want, scale) = crate::ops::products::oracle::spmv(1.0, a, &x, 0.0, &[]);
        for (r, (g, w)) in y.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-12 * (1.0 + scale[r]),
                "row {r}: {g} against {w}"
            );
        }
    }

    #[test]
    fn slices_sum_every_row_once() {
        check(&gen::power_law::<f64>(20_000, 20_000, 16.0, 5_000, 1.5, 3).unwrap());
        check(&gen::sparse_rows::<f64>(5_000, 300_000, 0.5, 12, 4).unwrap());
        check(&gen::long_rows::<f64>(3_000, 40_000, 2, 30_000, 3, 5).unwrap());
    }

    #[test]
    fn crowded_slices_take_several_stages() {
        // Every entry in the first slice: each group's slice far over a stage.
        let a = gen::uniform::<f64>(20_000, 1_000, 30, 6).unwrap();
        let l = build(a.nrows(), a.row_ptr(), a.col_idx(), a.values(), GROUPS).unwrap();
        assert!(l.stage0.last().copied().unwrap() as usize > l.blocks());
        // One slice's stages go to the members in turn: every block has some.
        assert!(l.stage0.windows(2).all(|w| w[1] > w[0]), "{:?}", l.stage0);
        check(&a);
    }

    #[test]
    fn a_piece_repeated_in_a_slice_spreads_over_steps() {
        // A row of 120 entries, all in one slice, beside short rows: 120 steps of one lane
        // would be the only layout with the row in one step each.
        let mut rows: Vec<Vec<i32>> = vec![(0..120).collect()];
        rows.extend((1..200).map(|r| vec![r % 100, 100 + r % 50]));
        let a = from_rows(200, 200, &rows);
        check(&a);
    }

    #[test]
    fn groups_stop_at_their_piece_capacity() {
        // Ten rows of entries, then 19,990 empty rows: the entries end a group each, and the
        // empty rows' pieces (no entries) fill groups up to SLICE_PIECES and no further.
        let n = 20_000;
        let rows: Vec<Vec<i32>> = (0..n)
            .map(|r| if r < 10 { vec![r as i32] } else { vec![] })
            .collect();
        let a = from_rows(n, 50, &rows);
        let l = build(n, a.row_ptr(), a.col_idx(), a.values(), GROUPS).unwrap();
        let sizes: Vec<i32> = l.piece0.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(sizes.contains(&(SLICE_PIECES as i32)), "{sizes:?}");
        assert_eq!(sizes.iter().sum::<i32>() as usize, n);
        check(&a);
    }

    #[test]
    fn f32_records_pair_each_word_with_its_value() {
        let a = gen::power_law::<f64>(200_000, 200_000, 4.0, 2_000, 1.5, 9).unwrap();
        let l = build(a.nrows(), a.row_ptr(), a.col_idx(), a.values(), GROUPS).unwrap();
        let r = l.f32_records();
        let (enc, vals) = (l.enc.concat(), l.vals.concat());
        assert!(l.enc.iter().filter(|e| !e.is_empty()).count() > 100);
        assert_eq!(r.len(), 2 * enc.len());
        for (i, (&e, &v)) in enc.iter().zip(&vals).enumerate() {
            assert_eq!(
                (r[2 * i], r[2 * i + 1]),
                (e, (v as f32).to_bits()),
                "record {i}"
            );
        }
        for (b, &base) in l.block_base.iter().enumerate() {
            if let Some(&e) = l.enc[b].first() {
                assert_eq!(r[2 * base as usize], e, "block {b}");
            }
        }
    }

    #[test]
    fn three_f32_stages_fit_a_hopper_block() {
        // The H200's 227 KB a block with opt-in; each stage on 128-byte lines.
        assert_eq!(stage_bytes() % 128, 0);
        assert!(smem_bytes(true) + STATIC_SMEM <= 232_448);
        assert!(smem_bytes(false) < smem_bytes(true));
    }

    #[test]
    fn empty_matrix_and_rows() {
        let a = from_rows(3, 5, &[vec![], vec![], vec![]]);
        let l = build(3, a.row_ptr(), a.col_idx(), a.values(), GROUPS).unwrap();
        assert_eq!(l.piece_out, vec![0, 1, 2]);
        assert!(l.enc.iter().all(Vec::is_empty));
        check(&a);
        let z = from_rows(0, 5, &[]);
        let l = build(0, z.row_ptr(), z.col_idx(), z.values(), GROUPS).unwrap();
        assert_eq!(l.blocks(), 0);
    }
}
