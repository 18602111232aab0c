// Top-k, the warp path: one warp per segment of at most WARP_MAX keys.

// Segments of at most WARP_MAX keys: one warp per segment, WARP_KPL radixes per lane in
// registers (item i of lane l is the key at 32 i + l, so loads coalesce and item order is
// position order), a bitwise radix select with warp sums from the first bit the radixes
// differ in, stopping when the bucket holds exactly the keys still needed, and a ballot
// compaction in position order. No block barriers, so short segments cost a handful of
// instructions per key.
// For k up to 32 the warp first prefilters: the k-th largest of the 32 lane maxima is reached
// by at least k keys, so every key of the answer (ties at the k-th key included) is at or
// above it. When at most WARP_CAND keys are, they are compacted in position order into shared
// memory and the select runs on those few instead of all 32 per lane (a bitonic sort when they
// fit one per lane, as uniform keys' k + k/4 do). Otherwise (ties, few distinct values) fewer
// than k keys above the threshold make it the k-th key itself, with no select; failing that
// the warp selects from all its keys.
// WARP_KPL (keys per lane) comes from the host (kernels/sizes.rs).
#define WARP_MAX (32 * WARP_KPL)
#define WARP_CAND 128
#define WARP_CPL (WARP_CAND / 32)

// Where the bitwise select stopped: the answer is the items whose masked radix is above
// `prefix`, and `rem` of those equal to it.
struct WarpCut {
    R mask, prefix;
    u32 rem;
};

// Item i of this lane is valid when 32 i + lane < n (always when FULL); invalid items must hold
// radix 0.
template <int N, bool FULL = false>
__device__ __forceinline__ WarpCut warp_select(const R (&r)[N], int n, u32 kk, int lane) {
    // Four accumulators per reduction keep the dependency chains short.
    R a4[4] = {~(R)0, ~(R)0, ~(R)0, ~(R)0}, o4[4] = {0, 0, 0, 0};
#pragma unroll
    for (int i = 0; i < N; i++) {
        a4[i & 3] &= FULL || 32 * i + lane < n ? r[i] : ~(R)0;
        o4[i & 3] |= r[i];
    }
    R a = (a4[0] & a4[1]) & (a4[2] & a4[3]), o = (o4[0] | o4[1]) | (o4[2] | o4[3]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        a &= __shfl_xor_sync(0xffffffffu, a, off);
        o |= __shfl_xor_sync(0xffffffffu, o, off);
    }
    WarpCut c{0, 0, kk};
    if (kk >= (u32)n) return c;
    const R diff = (a ^ o) & width_mask();
    if (diff == 0) {
        c.mask = width_mask();
        c.prefix = a & c.mask;
        return c;
    }
    int b = (int)(63 - __clzll((long long)(u64)diff));
    c.mask = ~((((R)2) << b) - (R)1) & width_mask();
    c.prefix = a & c.mask;
    for (; b >= 0; b--) {
        const R bit = (R)1 << b;
        const R m2 = c.mask | bit, c2 = c.prefix | bit;
        // An invalid item's radix 0 never matches c2, which has `bit` set.
        u32 c4[4] = {0, 0, 0, 0};
#pragma unroll
        for (int i = 0; i < N; i++) c4[i & 3] += (u32)((r[i] & m2) == c2);
        const u32 cnt = __reduce_add_sync(0xffffffffu, (c4[0] + c4[1]) + (c4[2] + c4[3]));
        c.mask = m2;
        if (cnt >= c.rem) {
            c.prefix = c2;
            if (cnt == c.rem) break;
        } else {
            c.rem -= cnt;
        }
    }
    return c;
}

// Writes the items above the cut and the tie-break's window of tied ones, in item order
// (position order); pos(i) is the position of this lane's item i.
template <int N, class Pos, bool FULL = false>
__device__ __forceinline__ void warp_emit(const R (&r)[N], int n, const WarpCut& c, int larger_index, int lane,
                                          const Writer& e, i64 st, i64 row, Pos pos) {
    const u32 lt = (1u << lane) - 1u;
    u32 t4[4] = {0, 0, 0, 0};
#pragma unroll
    for (int i = 0; i < N; i++) t4[i & 3] += (u32)((FULL || 32 * i + lane < n) && (r[i] & c.mask) == c.prefix);
    const u32 ties = __reduce_add_sync(0xffffffffu, (t4[0] + t4[1]) + (t4[2] + t4[3]));
    const u32 lo = larger_index ? ties - c.rem : 0u;
    u32 out = 0, trank = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        if (!FULL && 32 * i >= n) break;
        const bool ok = FULL || 32 * i + lane < n;
        const R g = r[i] & c.mask;
        const bool tie = ok && g == c.prefix;
        const u32 tb = __ballot_sync(0xffffffffu, tie);
        const u32 rank = trank + __popc(tb & lt);
        const bool take = ok && (g > c.prefix || (tie && rank >= lo && rank < lo + c.rem));
        const u32 sb = __ballot_sync(0xffffffffu, take);
        if (take) {
            const int p = pos(i);
            e.put(st + p, p, row + (i64)(out + __popc(sb & lt)));
        }
        out += __popc(sb);
        trank += __popc(tb);
    }
}

// The kk-th largest (kk in 1..32) of one value per lane, by a bitonic sort across the warp.
__device__ __forceinline__ R warp_kth_largest(R v, u32 kk, int lane) {
#pragma unroll
    for (int k = 2; k <= 32; k <<= 1) {
#pragma unroll
        for (int j = k >> 1; j > 0; j >>= 1) {
            const R o = __shfl_xor_sync(0xffffffffu, v, j);
            const bool desc = (lane & k) == 0, lower = (lane & j) == 0;
            v = (lower == desc) ? (v > o ? v : o) : (v < o ? v : o);
        }
    }
    return __shfl_sync(0xffffffffu, v, (int)kk - 1);
}

// Selection among the n compacted candidates (radixes cr, positions cp, in position order),
// N per lane.
template <int N>
__device__ __forceinline__ void warp_among(const R* cr, const u16* cp, int n, u32 kk, int larger_index, int lane,
                                           const Writer& e, i64 st, i64 row) {
    R r[N];
#pragma unroll
    for (int j = 0; j < N; j++) r[j] = 32 * j + lane < n ? cr[32 * j + lane] : (R)0;
    const WarpCut c = warp_select(r, n, kk, lane);
    warp_emit(r, n, c, larger_index, lane, e, st, row, [&](int j) { return (int)cp[32 * j + lane]; });
}

// Selection among at most 32 compacted candidates, one per lane in position order: the
// kk-th largest by the bitonic sort (the padding radix 0 never outranks a candidate, as
// kk <= n), then the keys above it and the tie-break's window of those equal to it.
__device__ __forceinline__ void warp_among_one(const R* cr, const u16* cp, int n, u32 kk, int larger_index,
                                               int lane, const Writer& e, i64 st, i64 row) {
    const bool ok = lane < n;
    const R c = ok ? cr[lane] : (R)0;
    const R v = warp_kth_largest(c, kk, lane);
    const u32 lt = (1u << lane) - 1u;
    const u32 above = __popc(__ballot_sync(0xffffffffu, ok && c > v));
    const u32 tb = __ballot_sync(0xffffffffu, ok && c == v);
    const u32 rem = kk - above, rank = __popc(tb & lt);
    const u32 lo = larger_index ? (u32)__popc(tb) - rem : 0u;
    const bool take = ok && (c > v || (c == v && rank >= lo && rank < lo + rem));
    const u32 sb = __ballot_sync(0xffffffffu, take);
    if (take) {
        const int p = (int)cp[lane];
        e.put(st + p, p, row + (i64)__popc(sb & lt));
    }
}

// The radix of a loaded key for the warp kernel; `zero` is 0 at run time but depends on every
// load (see warp_body). f32 keys: adding it as +0.0f turns -0 into +0 (round to nearest) and
// leaves every other key's bits alone (NaNs aside, which all take the top radix), so only the
// NaN test is left of radix_sel's two, two instructions a key fewer.
__device__ __forceinline__ R warp_radix(R raw, R zero) {
    if (TOPK_KIND == 0 && KBITS == 32) {
        const float y = __uint_as_float((u32)raw) + __uint_as_float((u32)zero);
        const u32 b = __float_as_uint(y);
        const u32 r = b ^ ((u32)((int)b >> 31) | 0x80000000u);
        return (R)(y != y ? 0xffffffffu : r);
    }
    return radix_sel((K)(raw ^ zero));
}

// One warp's segment: len keys from keys + st, kk of them written at row. FULL: len is WARP_MAX,
// so no item needs the end-of-segment test (ptxas kept those 32 tests as bits of one register,
// two or three instructions a key to set and read them).
template <bool FULL>
__device__ __forceinline__ void warp_body(const K* __restrict__ keys, i64 st, int len_rt, u32 kk, i64 row,
                                          const Writer& e, R* cand_r, u16* cand_p, int lane, int largest,
                                          int larger_index) {
    const int len = FULL ? WARP_MAX : len_rt;
    const u32 lt = (1u << lane) - 1u;
    // Every load first, predicated, at constant offsets from one base (no address arithmetic
    // per key), so all of them are in flight together; then the radixes.
    const K* __restrict__ p = keys + st + lane;
    const int last = len - 1 - lane;
    R raw[WARP_KPL];
#pragma unroll
    for (int i = 0; i < WARP_KPL; i++) raw[i] = FULL || 32 * i <= last ? (R)p[32 * i] : (R)0;
    // Every radix below depends on every load through `all & (largest >> 1)`, zero at run time
    // (largest is 0 or 1) but not to the compiler, which would otherwise consume each key as it
    // arrives, with one or two loads in flight instead of 32.
    R all = 0;
#pragma unroll
    for (int i = 0; i < WARP_KPL; i++) all |= raw[i];
    // Selects, not branches: the radix of every loaded key, zeroed past the end.
    const R zero = all & (R)(largest >> 1);
    const R dir = largest ? (R)0 : width_mask();
    R r[WARP_KPL];
    R m4[4] = {0, 0, 0, 0};
#pragma unroll
    for (int i = 0; i < WARP_KPL; i++) {
        const R d = warp_radix(raw[i], zero) ^ dir;
        r[i] = FULL || 32 * i <= last ? d : (R)0;
        m4[i & 3] = r[i] > m4[i & 3] ? r[i] : m4[i & 3];
    }
    WarpCut cut{0, 0, 0};
    if (kk <= 32 && kk < (u32)len && len > 2 * WARP_CAND) {
        R m = m4[0] > m4[1] ? m4[0] : m4[1];
        const R m23 = m4[2] > m4[3] ? m4[2] : m4[3];
        m = m > m23 ? m : m23;
        const R t = warp_kth_largest(m, kk, lane);
        // This lane's keys that reach t as bits, counted across the warp; only when they fit
        // are they placed, by ballots in position order, and only in the rounds (item
        // indices) where some lane has one.
        u32 keep = 0;
#pragma unroll
        for (int i = 0; i < WARP_KPL; i++) keep |= (u32)((FULL || 32 * i <= last) && r[i] >= t) << i;
        const u32 n = __reduce_add_sync(0xffffffffu, __popc(keep));
        if (n <= WARP_CAND) {
            const u32 rounds = __reduce_or_sync(0xffffffffu, keep);
            u32 o = 0;
#pragma unroll
            for (int i = 0; i < WARP_KPL; i++) {
                if ((rounds >> i) & 1u) {
                    // Compared again rather than read from keep's bit i: holding those bits
                    // as predicates made ptxas spill.
                    const bool mine = (FULL || 32 * i <= last) && r[i] >= t;
                    const u32 b = __ballot_sync(0xffffffffu, mine);
                    if (mine) {
                        const u32 slot = o + __popc(b & lt);
                        cand_r[slot] = r[i];
                        cand_p[slot] = (u16)(32 * i + lane);
                    }
                    o += __popc(b);
                }
            }
            __syncwarp();
            // Uniform keys leave about k + k/4 candidates: one per lane takes a bitonic sort
            // instead of the bitwise select.
            if (n <= 32)
                warp_among_one(cand_r, cand_p, (int)n, kk, larger_index, lane, e, st, row);
            else
                warp_among<WARP_CPL>(cand_r, cand_p, (int)n, kk, larger_index, lane, e, st, row);
            return;
        }
        // Too many keys reach t (ties, few distinct values): when fewer than kk are above it,
        // t is the kk-th key itself and the cut needs no select.
        u32 a4[4] = {0, 0, 0, 0};
#pragma unroll
        for (int i = 0; i < WARP_KPL; i++) a4[i & 3] += (u32)(r[i] > t);
        const u32 above = __reduce_add_sync(0xffffffffu, (a4[0] + a4[1]) + (a4[2] + a4[3]));
        if (above < kk) cut = WarpCut{width_mask(), t, kk - above};
    }
    const WarpCut c = cut.rem != 0 ? cut : warp_select<WARP_KPL, FULL>(r, len, kk, lane);
    auto pos = [&](int i) { return 32 * i + lane; };
    warp_emit<WARP_KPL, decltype(pos), FULL>(r, len, c, larger_index, lane, e, st, row, pos);
}

extern "C" __global__ void __launch_bounds__(256, KBITS == 64 ? 2 : 4)
    ENTRY(warp)(const K* __restrict__ keys, const i64* __restrict__ seg_start, const i64* __restrict__ lens,
                const i64* __restrict__ kk_arr, i64 nseg, K* out_keys, void* out_idx, i64 width, int idx64,
                int largest, int larger_index) {
    __shared__ R cand_r[8][WARP_CAND];
    __shared__ u16 cand_p[8][WARP_CAND];
    const i64 s = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (s >= nseg) return;  // the whole warp: s is the same in all its lanes
    const int lane = threadIdx.x & 31, w = (threadIdx.x >> 5) & 7;
    const i64 st = seg_start[s];
    const int len = (int)lens[s];
    const u32 kk = (u32)kk_arr[s];
    if (kk == 0) return;
    const i64 row = s * width;
    const Writer e{keys, out_keys, out_idx, idx64};
    // Full segments (the batched shapes' usual case) of float keys take the body without tail
    // tests; the integer builds' bodies are left as they were, as a second copy would not fit
    // their registers without spilling.
    if (TOPK_KIND == 0 && len == WARP_MAX)
        warp_body<true>(keys, st, len, kk, row, e, cand_r[w], cand_p[w], lane, largest, larger_index);
    else
        warp_body<false>(keys, st, len, kk, row, e, cand_r[w], cand_p[w], lane, largest, larger_index);
}
