// Segmented top-k by radix selection, for one key type per module (the module's options
// define TOPK_U, the unsigned storage type; TOPK_KIND, 0 float / 1 signed / 2 unsigned;
// TOPK_INF, the bits of +inf for floats; TOPK_NAME, the name in entry points).
//
// The work is cut into tiles of at most TILE keys, each inside one segment. Per segment:
//   init:   prefix 0, remaining = kk, done when kk is 0 or the whole segment.
//   for each 8-bit digit from the most significant:
//     hist: each tile's block histograms the digit of the keys that match the prefix
//           resolved so far, and adds its bins to the segment's global histogram;
//     pick: one thread per segment finds the bucket holding the remaining-th key, extends
//           the prefix, clears the histogram, and stops the segment early when that bucket
//           holds exactly the keys still needed.
//   count:  each tile counts keys above the prefix and tied with it;
//   scan:   one thread per segment turns tile counts into output and tie-rank bases, in
//           tile order;
//   write:  each tile keeps, in ascending position, the keys above the prefix and the
//           tie-break's window of tied keys [lo, lo + need), so the output is the same on
//           every run.
//   pad:    positions kk..width of each row get the padding key and index -1.
//   sort/gather (sorted output): one block per row bitonic-sorts (radix desc, position asc)
//           in shared memory, then the row is gathered in that order.
// Segments of at most BLOCK_MAX keys take the on-chip path instead: one block per segment
// keeps the segment's radixes in registers (topk_rblock, up to 8,192 keys) or in shared memory
// (topk_block) and runs every digit pass and the ordered compaction there, reading the keys
// from memory once; segments of at most WARP_MAX keys take one warp each (topk_warp).
// Long segments with few winners take the filter path, which reads the keys from memory once:
//   thresh: one block per segment radix-selects, among SAMPLE keys spread over the segment,
//           a threshold that at least k keys reach with near certainty;
//   filter: each tile keeps its keys above the threshold in a fixed run of CT slots, in
//           position order (fast ties with unsorted rows may leave a warp's out of order where
//           a tile is unaligned or partial), and counts the keys equal to it when the sample
//           had ties there or the keys are narrow, keeping a narrow key's at the run's far end
//           where both fit (filter_tma on sm_90: the keys staged into shared memory by bulk
//           copies);
//   cand:   one block per segment gathers its candidates in tile order into shared
//           memory (re-filtering from memory the few tiles whose candidates overflowed their
//           slots, as sorted keys make them) and selects among them on chip; when they are
//           fewer than k but the keys equal to the threshold make up the rest (ties: few
//           distinct values, all keys equal, 16-bit keys), it takes them all and the
//           tie-break's window of the equal keys, from the slots of the tiles that kept them
//           and from memory in those that could not. Otherwise (the sample missed) the block
//           selects from the whole segment in memory: slower, still exact.
//   The three are launched as programmatic dependents on sm_90: each calls grid_dep_wait()
//   before its first global memory access, and grid_dep_launch() so the next one launches
//   during its last wave.
// Every selection skips the high bits that all its keys share before the first digit pass,
// so keys from one binade do not pile into one histogram bin.
// Every thread of a block reaches every barrier: blocks whose segment is done still run the
// barriers with no keys.
#include "common.cuh"

#define KBITS (int)(sizeof(TOPK_U) * 8)
// Keys of 16 bits or fewer take tiles twice as long, so a tile is 16 KB for them as for 32-bit
// keys (the host's plan::tile).
#define TILE (KBITS <= 16 ? 8192 : 4096)

#define PASTE2(a, b) a##b
#define PASTE(a, b) PASTE2(a, b)
#define ENTRY(name) PASTE(PASTE(topk_, name), PASTE(_, TOPK_NAME))

typedef TOPK_U K;

// Radixes are computed in 32 bits for keys of up to 32 bits (half the instructions and
// shared memory of 64-bit arithmetic), in 64 bits otherwise.
template <int B>
struct RadT {
    typedef u32 T;
};
template <>
struct RadT<64> {
    typedef u64 T;
};
typedef RadT<KBITS>::T R;
#define RBITS (int)(sizeof(R) * 8)
// A radix as the candidate kernel stores it: 16 bits for keys of up to 16 bits.
template <bool NARROW>
struct RadStore {
    typedef R T;
};
template <>
struct RadStore<true> {
    typedef u16 T;
};
typedef RadStore<(KBITS <= 16)>::T RS;

__device__ __forceinline__ R width_mask() { return KBITS == RBITS ? ~(R)0 : (R)((1ull << KBITS) - 1ull); }

// The order-preserving radix: NaN of any sign highest, -0 == +0, signed by value.
__device__ __forceinline__ R radix_of(K b) {
    const R x = (R)b;
    const R sign = (R)1 << (KBITS - 1);
    if (TOPK_KIND == 0) {
        const R mag = x & ~sign & width_mask();
        if (mag > (R)TOPK_INF) return width_mask();
        if (mag == 0) return sign;
        return (x & sign) ? (~x & width_mask()) : (x | sign);
    }
    if (TOPK_KIND == 1) return x ^ sign;
    return x;
}

// radix_of with selects instead of branches, for the warp kernel, whose 32 keys a lane would
// otherwise take through two branches each. In the filter path's kernels this form changed
// the results of 64- and 16-bit float keys though it computes the same function (see
// bench/results/2026-12-01-h200-topk-warp-select.txt), so it is kept to the warp kernel, whose
// tests pass with it for every key type.
__device__ __forceinline__ R radix_sel(K b) {
    const R x = (R)b;
    const R sign = (R)1 << (KBITS - 1);
    if (TOPK_KIND == 0) {
        const R mag = x & ~sign & width_mask();
        R r = x ^ ((x & sign) ? width_mask() : sign);
        r = mag == 0 ? sign : r;
        return mag > (R)TOPK_INF ? width_mask() : r;
    }
    return radix_of(b);
}

__device__ __forceinline__ R directed(K b, int largest) {
    const R r = radix_of(b);
    return largest ? r : (~r & width_mask());
}

__device__ __forceinline__ R hi(R r, int s) { return s >= RBITS ? (R)0 : (r >> s); }

extern "C" __global__ void __launch_bounds__(256)
    ENTRY(init)(i64 nseg, const i64* __restrict__ lens, const i64* __restrict__ kk, u64* prefix, u64* remaining,
                u64* ties, int* shift, int* done) {
    const i64 s = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (s < nseg) {
        prefix[s] = 0;
        remaining[s] = (u64)kk[s];
        ties[s] = (u64)lens[s];
        shift[s] = KBITS;
        done[s] = (kk[s] == 0 || kk[s] == lens[s]) ? 1 : 0;
    }
}

extern "C" __global__ void __launch_bounds__(256)
    ENTRY(hist)(const K* __restrict__ keys, const int* __restrict__ tile_seg, const i64* __restrict__ tile_start,
                const i64* __restrict__ tile_end, const u64* __restrict__ prefix, const int* __restrict__ done,
                u64* ghist, int digit, int largest) {
    __shared__ u32 h[256];
    const i64 t = blockIdx.x;
    const int s = tile_seg[t];
    const bool active = done[s] == 0;
    for (int b = threadIdx.x; b < 256; b += blockDim.x) h[b] = 0;
    __syncthreads();
    if (active) {
        const u64 p = prefix[s];
        for (i64 i = tile_start[t] + threadIdx.x; i < tile_end[t]; i += blockDim.x) {
            const R r = directed(keys[i], largest);
            if ((u64)hi(r, digit + 8) == p) atomicAdd(&h[(r >> digit) & 255], 1u);
        }
    }
    __syncthreads();
    if (active) {
        for (int b = threadIdx.x; b < 256; b += blockDim.x)
            if (h[b]) atomicAdd((unsigned long long*)&ghist[(i64)s * 256 + b], (unsigned long long)h[b]);
    }
}

extern "C" __global__ void __launch_bounds__(256)
    ENTRY(pick)(i64 nseg, u64* ghist, u64* prefix, u64* remaining, u64* ties, int* shift, int* done, int digit) {
    const i64 s = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (s < nseg && done[s] == 0) {
        u64* h = ghist + s * 256;
        u64 rem = remaining[s], above = 0;
        int b = 255;
        while (b > 0 && above + h[b] < rem) {
            above += h[b];
            b--;
        }
        const u64 tie = h[b];
        for (int i = 0; i < 256; i++) h[i] = 0;
        rem -= above;
        remaining[s] = rem;
        prefix[s] = (prefix[s] << 8) | (u64)b;
        shift[s] = digit;
        ties[s] = tie;
        if (tie == rem || digit == 0) done[s] = 1;
    }
}

extern "C" __global__ void __launch_bounds__(256)
    ENTRY(count)(const K* __restrict__ keys, const int* __restrict__ tile_seg, const i64* __restrict__ tile_start,
                 const i64* __restrict__ tile_end, const u64* __restrict__ prefix, const int* __restrict__ shift,
                 u64* tile_gt, u64* tile_tie, int largest) {
    __shared__ u32 sums[32];
    const i64 t = blockIdx.x;
    const int s = tile_seg[t];
    const u64 p = prefix[s];
    const int sh = shift[s];
    u32 gt = 0, tie = 0;
    for (i64 i = tile_start[t] + threadIdx.x; i < tile_end[t]; i += blockDim.x) {
        const u64 g = hi(directed(keys[i], largest), sh);
        gt += g > p;
        tie += g == p;
    }
    u32 total;
    block_exclusive_scan(gt, sums, &total);
    const u32 gt_total = total;
    __syncthreads();
    block_exclusive_scan(tie, sums, &total);
    if (threadIdx.x == 0) {
        tile_gt[t] = gt_total;
        tile_tie[t] = total;
    }
}

// lo of the tie window: 0 for the smaller-index and fast tie-breaks, ties - need for larger.
extern "C" __global__ void __launch_bounds__(256)
    ENTRY(scan)(i64 nseg, const i64* __restrict__ seg_tile_ptr, const u64* __restrict__ remaining,
                const u64* __restrict__ ties, const u64* __restrict__ tile_gt, const u64* __restrict__ tile_tie,
                u64* tile_out, u64* tile_rank, u64* lo_out, int larger_index) {
    const i64 s = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (s < nseg) {
        const u64 need = remaining[s];
        const u64 lo = larger_index ? ties[s] - need : 0;
        lo_out[s] = lo;
        u64 gt = 0, tie = 0;
        for (i64 t = seg_tile_ptr[s]; t < seg_tile_ptr[s + 1]; t++) {
            const u64 taken = tie <= lo ? 0 : (tie - lo < need ? tie - lo : need);
            tile_out[t] = gt + taken;
            tile_rank[t] = tie;
            gt += tile_gt[t];
            tie += tile_tie[t];
        }
    }
}

template <int VS>
struct Val;
template <> struct Val<1> { typedef unsigned char T; };
template <> struct Val<2> { typedef unsigned short T; };
template <> struct Val<4> { typedef unsigned int T; };
template <> struct Val<8> { typedef u64 T; };

template <int VS>
__device__ __forceinline__ void copy_val(void* out, i64 o, const void* in, i64 i) {
    if (VS > 0) {
        typedef typename Val<(VS > 0 ? VS : 1)>::T V;
        ((V*)out)[o] = ((const V*)in)[i];
    }
}

__device__ __forceinline__ void store_index(void* idx, int idx64, i64 o, i64 v) {
    if (idx64)
        ((i64*)idx)[o] = v;
    else
        ((int*)idx)[o] = (int)v;
}

// Exclusive bases, in item order, of the items flagged in `m` when thread t holds item
// base + r * blockDim + t in bit r (32 rounds): cnt[r * nwarps + warp] (blockDim entries) gets
// the number of flagged items before that warp's round-r items; rounds past `rounds` (the
// same in every thread) hold no items. Every thread must call it.
// The kernels that use it run 256 threads per block.
__device__ __forceinline__ void ordered_bases(u32 m, int rounds, u32* cnt, u32* sums, u32* total) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int r = 0; r < rounds; r++) {
        const u32 b = __ballot_sync(0xffffffffu, (m >> r) & 1u);
        if (lane == 0) cnt[r * nw + w] = __popc(b);
    }
    __syncthreads();
    const u32 v = (int)threadIdx.x < rounds * nw ? cnt[threadIdx.x] : 0u;
    const u32 e = block_exclusive_scan(v, sums, total);
    cnt[threadIdx.x] = e;
    __syncthreads();
}

// Slot of this thread's round-r item among the flagged items (cnt from ordered_bases).
__device__ __forceinline__ u32 ordered_slot(u32 m, int r, const u32* cnt) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const u32 b = __ballot_sync(0xffffffffu, (m >> r) & 1u);
    return cnt[r * nw + w] + __popc(b & ((1u << lane) - 1u));
}

// The state a selection ends in: the keys above `prefix` at `shift` are taken, and `remaining`
// of the `ties` keys whose radix has exactly that prefix.
#define CTL_WORDS 67

struct Sel {
    R prefix;
    u64 remaining, ties;
    int shift;
};

// Radixes of a segment in shared memory, or computed from keys in shared memory or in memory.
// UNROLL: items every thread reads before using any in the passes below. A segment selected
// from memory (the filter's fallback) keeps 16 loads in flight per thread instead of one; the
// threshold's 4,096 samples are one pass of 16 per thread. The candidate kernel's two builds
// choose theirs (`cand_src`).
// I: the index type of the passes over the items, 32 bits for items in shared memory (fewer
// instructions per item in every pass).
template <int U, class T = R>
struct SmemRad {
    static constexpr int UNROLL = U;
    typedef int I;
    const T* r;
    __device__ __forceinline__ R operator()(I i) const { return (R)r[i]; }
};
template <int U, class IT = i64>
struct KeyRad {
    static constexpr int UNROLL = U;
    typedef IT I;
    const K* k;
    int largest;
    __device__ __forceinline__ R operator()(I i) const { return directed(k[i], largest); }
};
typedef KeyRad<16> MemRad;

// Radix selection of the kk-th largest of n radixes by one block, 8-bit digits from the
// highest bit in which the radixes differ; stops early when a bucket holds exactly the keys
// still needed. Every thread must call it; every thread returns the same state. ctl holds
// CTL_WORDS words of shared scratch.
// Run by one warp over a 256-bin histogram in descending key order: the bin holding the
// remaining-th key goes to ctl[0], the keys in bins above it to ctl[1], its own count to ctl[2].
// Lane l owns bins 255 - 8l down to 248 - 8l.
__device__ __forceinline__ void find_bin(const u32* h, u64 remaining, u64* ctl, int lane) {
    u32 c[8], tot = 0;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        c[j] = h[255 - (8 * lane + j)];
        tot += c[j];
    }
    u32 x = tot;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const u32 y = __shfl_up_sync(0xffffffffu, x, off);
        if (lane >= off) x += y;
    }
    u64 before = x - tot;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        if (before < remaining && remaining <= before + c[j]) {
            ctl[0] = (u64)(255 - (8 * lane + j));
            ctl[1] = before;
            ctl[2] = c[j];
        }
        before += c[j];
    }
}

// Calls f(i, radix) for each of this thread's items i < n (item base + u * blockDim + thread
// in rounds of UNROLL * blockDim), each round's UNROLL radixes read before any is used.
template <class Src, class F>
__device__ __forceinline__ void for_items(const Src& src, typename Src::I n, const F& f) {
    typedef typename Src::I I;
    for (I base = 0; base < n; base += Src::UNROLL * (I)blockDim.x) {
        R v[Src::UNROLL];
#pragma unroll
        for (int u = 0; u < Src::UNROLL; u++) {
            const I i = base + (I)u * blockDim.x + threadIdx.x;
            v[u] = i < n ? src(i) : (R)0;
        }
#pragma unroll
        for (int u = 0; u < Src::UNROLL; u++) {
            const I i = base + (I)u * blockDim.x + threadIdx.x;
            if (i < n) f(i, v[u]);
        }
    }
}

// The AND and the OR of every radix in the block, from each thread's own (a, o); ctl
// holds the reduction's scratch. Every thread must call it.
__device__ __forceinline__ void block_and_or(R& a, R& o, u64* ctl) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        a &= __shfl_xor_sync(0xffffffffu, a, off);
        o |= __shfl_xor_sync(0xffffffffu, o, off);
    }
    u64* red = ctl + 3;  // 32 ANDs and 32 ORs
    if (lane == 0) {
        red[w] = a;
        red[32 + w] = o;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        R aa = ~(R)0, oo = 0;
        for (int j = 0; j < nw; j++) {
            aa &= (R)red[j];
            oo |= (R)red[32 + j];
        }
        ctl[0] = aa;
        ctl[1] = oo;
    }
    __syncthreads();
    a = (R)ctl[0];
    o = (R)ctl[1];
    __syncthreads();
}

// As block_radix_select below, with each thread's AND and OR of the radixes it holds (all
// ones and zero when it holds none) already at hand, as a caller that wrote the radixes has.
template <class Src>
__device__ Sel block_radix_select_ao(const Src& src, i64 n_, u64 kk, u32* h, u64* ctl, R a, R o) {
    typedef typename Src::I I;
    const I n = (I)n_;
    Sel st;
    st.prefix = 0;
    st.remaining = kk;
    st.ties = (u64)n;
    st.shift = KBITS;
    if (kk == 0 || kk >= (u64)n) return st;
    const int lane = threadIdx.x & 31;
    block_and_or(a, o, ctl);
    const u64 diff = (u64)((a ^ o) & width_mask());
    if (diff == 0) {
        st.prefix = a;
        st.shift = 0;
        return st;
    }
    st.shift = 64 - __clzll((long long)diff);
    st.prefix = hi(a, st.shift);
    while (st.shift > 0) {
        const int bits = st.shift < 8 ? st.shift : 8;
        const int digit = st.shift - bits;
        for (int b = threadIdx.x; b < 256; b += blockDim.x) h[b] = 0;
        __syncthreads();
        for_items(src, n, [&](I, R r) {
            if (hi(r, st.shift) == st.prefix) atomicAdd(&h[(u32)(r >> digit) & ((1u << bits) - 1u)], 1u);
        });
        __syncthreads();
        if (threadIdx.x < 32) find_bin(h, st.remaining, ctl, lane);
        __syncthreads();
        const u64 b = ctl[0], above = ctl[1], t = ctl[2];
        __syncthreads();
        st.remaining -= above;
        st.prefix = (st.prefix << bits) | (R)b;
        st.shift = digit;
        st.ties = t;
        if (t == st.remaining) break;
    }
    return st;
}

template <class Src>
__device__ Sel block_radix_select(const Src& src, i64 n_, u64 kk, u32* h, u64* ctl) {
    typedef typename Src::I I;
    const I n = (I)n_;
    R a = ~(R)0, o = 0;
    if (kk != 0 && kk < (u64)n) {
        for_items(src, n, [&](I, R r) {
            a &= r;
            o |= r;
        });
    }
    return block_radix_select_ao(src, n, kk, h, ctl, a, o);
}

// Ordered compaction of items [0, n) after a selection: an item is taken when its radix is
// above the prefix, or tied with it and of tie rank (counted from rank0, in item order) in
// [lo, lo + need). emit(i, slot) gets slots counted from out0 in item order. Rounds of
// 32 * blockDim items; every thread runs every round. Returns the ties seen.
template <class Src, class Emit>
__device__ u64 block_compact(const Src& src, i64 n_, const Sel& st, u64 lo, u64 out0, u64 rank0, const Emit& emit,
                             u32* cnt, u32* sums) {
    typedef typename Src::I I;
    const I n = (I)n_;
    const I per = (I)blockDim.x * 32;
    for (I base = 0; base < n; base += per) {
        const I left = (n - base + blockDim.x - 1) / blockDim.x;
        const int rounds = left < 32 ? (int)left : 32;
        u32 gt = 0, tie = 0;
        for (int r0 = 0; r0 < rounds; r0 += Src::UNROLL) {
            R v[Src::UNROLL];
#pragma unroll
            for (int u = 0; u < Src::UNROLL; u++) {
                const I i = base + (I)(r0 + u) * blockDim.x + threadIdx.x;
                v[u] = r0 + u < rounds && i < n ? src(i) : (R)0;
            }
#pragma unroll
            for (int u = 0; u < Src::UNROLL; u++) {
                const int r = r0 + u;
                if (r < rounds && base + (I)r * blockDim.x + threadIdx.x < n) {
                    const R g = hi(v[u], st.shift);
                    gt |= (u32)(g > st.prefix) << r;
                    tie |= (u32)(g == st.prefix) << r;
                }
            }
        }
        u32 ties_here;
        ordered_bases(tie, rounds, cnt, sums, &ties_here);
        u32 sel = gt;
        for (int r = 0; r < rounds; r++) {
            const u64 rank = rank0 + ordered_slot(tie, r, cnt);
            if (((tie >> r) & 1u) && rank >= lo && rank < lo + st.remaining) sel |= 1u << r;
        }
        __syncthreads();
        u32 taken;
        ordered_bases(sel, rounds, cnt, sums, &taken);
        for (int r = 0; r < rounds; r++) {
            const u32 slot = ordered_slot(sel, r, cnt);
            if ((sel >> r) & 1u) emit(base + (I)r * blockDim.x + threadIdx.x, out0 + slot);
        }
        __syncthreads();
        out0 += taken;
        rank0 += ties_here;
    }
    return rank0;
}

// Compaction in no particular order (fast ties into unsorted rows), after a selection: every
// item above the prefix and the first st.remaining tied items to claim ctr[1], each at the
// slot ctr[0] hands out; no scans. Every thread must call it.
template <class Src, class Emit>
__device__ void block_take(const Src& src, i64 n_, const Sel& st, const Emit& emit, u32* ctr) {
    typedef typename Src::I I;
    const I n = (I)n_;
    if (threadIdx.x == 0) {
        ctr[0] = 0;
        ctr[1] = 0;
    }
    __syncthreads();
    for_items(src, n, [&](I i, R r) {
        const R g = hi(r, st.shift);
        bool take = g > st.prefix;
        if (g == st.prefix) take = atomicAdd(&ctr[1], 1u) < st.remaining;
        if (take) emit(i, (u64)atomicAdd(&ctr[0], 1u));
    });
    __syncthreads();
}

// Writes one selected key and its index to output slot o (values follow in topk_values).
struct Writer {
    const K* keys;
    K* out_keys;
    void* out_idx;
    int idx64;
    // key at absolute position src, index idx, output element o
    __device__ __forceinline__ void put(i64 src, i64 idx, i64 o) const { put_key(keys[src], idx, o); }
    // a key already at hand
    __device__ __forceinline__ void put_key(K key, i64 idx, i64 o) const {
        out_keys[o] = key;
        store_index(out_idx, idx64, o, idx);
    }
};

extern "C" __global__ void __launch_bounds__(256)
    ENTRY(write)(const K* __restrict__ keys, const int* __restrict__ tile_seg, const i64* __restrict__ tile_start,
                                           const i64* __restrict__ tile_end, const i64* __restrict__ seg_start,
                                           const u64* __restrict__ prefix, const int* __restrict__ shift,
                                           const u64* __restrict__ remaining, const u64* __restrict__ lo_arr,
                                           const u64* __restrict__ tile_out, const u64* __restrict__ tile_rank,
                                           K* out_keys, void* out_idx, i64 width, int idx64, int largest) {
    __shared__ u32 sums[32];
    __shared__ u32 cnt[256];
    const i64 t = blockIdx.x;
    const int s = tile_seg[t];
    Sel st;
    st.prefix = prefix[s];
    st.remaining = remaining[s];
    st.shift = shift[s];
    const i64 a = tile_start[t], seg = seg_start[s], row = (i64)s * width;
    const Writer e{keys, out_keys, out_idx, idx64};
    block_compact(
        MemRad{keys + a, largest}, tile_end[t] - a, st, lo_arr[s], tile_out[t], tile_rank[t],
        [&](i64 i, u64 slot) { e.put(a + i, a + i - seg, row + (i64)slot); }, cnt, sums);
}


// One block per segment, the segment's directed radixes in dynamic shared memory (len * 8
// bytes).
extern "C" __global__ void __launch_bounds__(256)
    ENTRY(block)(const K* __restrict__ keys, const i64* __restrict__ seg_start, const i64* __restrict__ lens,
                 const i64* __restrict__ kk_arr, K* out_keys, void* out_idx, i64 width, int idx64, int largest,
                 int larger_index) {
    extern __shared__ u64 smem_raw[];
    R* rad = (R*)smem_raw;
    __shared__ u32 h[256];
    __shared__ u32 sums[32];
    __shared__ u32 cnt[256];
    __shared__ u64 ctl[CTL_WORDS];
    const i64 s = blockIdx.x;
    const i64 st = seg_start[s];
    const int len = (int)lens[s];
    // Eight loads in flight per thread (from in-bounds addresses, without branches) before
    // any radix is stored.
    for (int base = 0; base < len; base += 8 * blockDim.x) {
        K v[8];
#pragma unroll
        for (int j = 0; j < 8; j++) v[j] = keys[st + min(base + j * (int)blockDim.x + (int)threadIdx.x, len - 1)];
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const int i = base + j * blockDim.x + threadIdx.x;
            if (i < len) rad[i] = directed(v[j], largest);
        }
    }
    __syncthreads();
    const Sel sel = block_radix_select(SmemRad<16>{rad}, len, (u64)kk_arr[s], h, ctl);
    const u64 lo = larger_index ? sel.ties - sel.remaining : 0;
    const i64 row = s * width;
    const Writer e{keys, out_keys, out_idx, idx64};
    block_compact(
        SmemRad<16>{rad}, len, sel, lo, 0, 0, [&](i64 i, u64 slot) { e.put(st + i, i, row + (i64)slot); }, cnt,
        sums);
}

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
#define WARP_KPL 32
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

// ---- The filter path ----

#define SAMPLE 4096

// The sample rank whose key at least kk of the segment's len keys reach with near certainty:
// the expected rank of the kk-th key among the samples plus four standard deviations and 4.
// Must match `filter_rank` on the host.
__device__ __forceinline__ u64 filter_rank(i64 len, i64 kk, i64 ns) {
    const double e = (double)kk * (double)ns / (double)len;
    double r = ceil(e + 4.0 * sqrt(e) + 4.0);
    if (r > (double)ns) r = (double)ns;
    return (u64)r;
}

// The threshold of segment blockIdx.x from its samples, by NT threads (512 in `thresh_wide`,
// for at most one segment per SM, as `cand_wide`).
template <int NT>
__device__ __forceinline__ void thresh_body(const K* __restrict__ keys, const i64* __restrict__ seg_start,
                                            const i64* __restrict__ lens, const i64* __restrict__ kk, u64* thresh,
                                            u32* count_eq, int largest) {
    __shared__ R rad[SAMPLE];
    __shared__ u32 h[256];
    __shared__ u64 ctl[CTL_WORDS];
    grid_dep_wait();
    grid_dep_launch();
    const i64 s = blockIdx.x;
    const i64 len = lens[s];
    const K* seg = keys + seg_start[s];
    const int ns = len < SAMPLE ? (int)len : SAMPLE;
    // Runs of 32 adjacent keys spread evenly over the segment (one memory line per warp
    // load), or every key of a segment shorter than SAMPLE. A filter segment holds fewer than
    // 2^32 keys, so positions fit 32 bits.
    // All SAMPLE / NT loads of a thread are issued before any is used.
    const u32 stride = ns < SAMPLE ? 32u : (u32)(len / (SAMPLE / 32));
    K v[SAMPLE / NT];
    if (ns == SAMPLE) {
        // Every sample in the segment (the usual case): one base per thread and 32-bit steps,
        // no bounds tests. Thread t's r-th sample is key (t % 32) of run r * NT / 32 + t / 32.
        const K* p = seg + ((threadIdx.x >> 5) * stride + (threadIdx.x & 31));
        const u32 step = (NT / 32) * stride;
#pragma unroll
        for (int r = 0; r < SAMPLE / NT; r++) v[r] = p[r * step];
    } else {
#pragma unroll
        for (int r = 0; r < SAMPLE / NT; r++) {
            const u32 j = r * NT + threadIdx.x;
            v[r] = (int)j < ns ? seg[(j >> 5) * stride + (j & 31)] : (K)0;
        }
    }
    // Each thread's AND and OR of its radixes, so the selection need not read them again.
    R a = ~(R)0, o = 0;
#pragma unroll
    for (int r = 0; r < SAMPLE / NT; r++) {
        const int j = r * NT + threadIdx.x;
        if (j < ns) {
            const R d = directed(v[r], largest);
            rad[j] = d;
            a &= d;
            o |= d;
        }
    }
    __syncthreads();
    const Sel sel = block_radix_select_ao(SmemRad<SAMPLE / NT>{rad}, ns, kk[s] == 0 ? 0 : filter_rank(len, kk[s], ns),
                                          h, ctl, a, o);
    // No key is wanted: a threshold only the highest radix reaches keeps the filter's output
    // small.
    if (threadIdx.x == 0) {
        thresh[s] = kk[s] == 0 ? ~0ull : sel.shift >= RBITS ? 0 : (u64)(sel.prefix << sel.shift);
        // Samples tied at the threshold (the select resolved every bit), or keys of 16 bits
        // or fewer (at most 65,536 values, so a long segment repeats its threshold even when
        // the sample does not): the filter counts the segment's keys equal to it, for the
        // selection to complete too few candidates with, instead of selecting again from
        // memory. Otherwise (distinct keys) such keys are unlikely and are not counted.
        count_eq[s] = kk[s] != 0 && (sel.shift == 0 || KBITS <= 16);
    }
}
#define THRESH_ARGS                                                                                       \
    const K* __restrict__ keys, const i64* __restrict__ seg_start, const i64* __restrict__ lens,           \
        const i64* __restrict__ kk, u64* thresh, u32* count_eq, int largest
extern "C" __global__ void __launch_bounds__(256, 8) ENTRY(thresh)(THRESH_ARGS) {
    thresh_body<256>(keys, seg_start, lens, kk, thresh, count_eq, largest);
}
extern "C" __global__ void __launch_bounds__(512) ENTRY(thresh_wide)(THRESH_ARGS) {
    thresh_body<512>(keys, seg_start, lens, kk, thresh, count_eq, largest);
}

// ---- Threshold compares on float keys as floats ----
// A float key's radix takes several instructions (NaN and -0 made canonical); the filter's
// compare with a threshold needs one, on the key as a float, once the threshold radix is
// turned into the float it stands for. FloatCut holds, for a directed radix threshold th,
//   directed(x) > th   as   !(x <= f) (largest: NaN is above every key)   or   x < f (smallest)
//   directed(x) == th  as   x == fe
// `fast` is false for the thresholds no such compare expresses (largest: only NaN may pass
// it; smallest: every key but NaN passes it); those take the radix compares.
template <int B>
struct FltT {
    typedef float T;
};
template <>
struct FltT<64> {
    typedef double T;
};
typedef FltT<KBITS>::T F;

__device__ __forceinline__ F key_float(K b) {
    if (KBITS == 64) return __longlong_as_double((long long)b);
    if (KBITS == 32) return __uint_as_float((u32)b);
    if (TOPK_INF == 0x7f80ull) return __uint_as_float((u32)b << 16);  // bf16
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((u16)b));
    return f;
}

// The key bits whose radix is v, where one has it (radix_of inverted).
__device__ __forceinline__ K radix_bits(R v) {
    const R sign = (R)1 << (KBITS - 1);
    return (K)(v >= sign ? (v & ~sign) : (~v & width_mask()));
}

struct FloatCut {
    F f, fe;
    bool fast;
};

__device__ __forceinline__ FloatCut float_cut(R th, int largest) {
    const R sign = (R)1 << (KBITS - 1), hole = sign - 1;  // no key has the radix of -0's bits
    const R pinf = (R)TOPK_INF | sign, ninf = ~pinf & width_mask();
    FloatCut c;
    // Keys equal to th have radix v; fe is NaN (equal to nothing) where no key has it.
    const R v = largest ? th : (~th & width_mask());
    const K vb = radix_bits(v);
    c.fe = radix_of(vb) == v ? key_float(vb) : key_float((K)width_mask());
    R b;
    if (largest) {
        // The largest radix a key has at or below th: keys above it are above th. Below -inf
        // that is no radix, and f's NaN passes every key.
        b = th < pinf ? th : pinf;
        if (b == hole) b = hole - 1;
        c.fast = th != width_mask();
    } else {
        // The smallest radix a key has at or above v: keys below it are below v.
        b = v > ninf ? v : ninf;
        if (b == hole) b = sign;
        c.fast = v <= pinf;
    }
    c.f = key_float(radix_bits(b));
    return c;
}

// Both filter kernels: a block filters one tile at a time, warp w holding the tile's keys
// w * 32 FR + r * 32 + lane (r < FR), so ballots order a warp's candidates and one barrier per
// tile orders the warps (their totals double-buffered by tile parity, so no second barrier
// guards them). FR is 16 or 32: a thread's marks fit one 32-bit mask.
#define FR (TILE / 256)
#define WKEYS (FR * 32)

// The per-tile facts the filter compares with: the segment's threshold, and whether it
// counts the keys equal to it.
struct TileCut {
    R th;
    bool none, ceq;
    FloatCut fc;
};

__device__ __forceinline__ TileCut tile_cut(u64 th64, u32 count_eq, int largest) {
    TileCut c;
    c.none = th64 > (u64)width_mask();
    c.th = c.none ? width_mask() : (R)th64;
    c.ceq = count_eq != 0;
    c.fc = float_cut(c.th, largest);
    return c;
}

// Key j of a run loaded as 32-bit words (keys packed little-endian).
__device__ __forceinline__ K word_key(const u32* w, int j) {
    if (sizeof(K) == 8) return (K)(((u64)w[2 * j + 1] << 32) | (u64)w[2 * j]);
    const int b = j * (int)sizeof(K) * 8;
    return (K)(w[b >> 5] >> (b & 31));
}

// Bit r of the returned mask: key r of this thread is above the threshold; bit r of *eq_out:
// key r equals it (when equal keys count).
__device__ __forceinline__ u32 tile_marks(const K (&cur)[FR], i64 n, const TileCut& c, int largest, int first,
                                          u32* eq_out) {
    u32 m = 0, eq = 0;
    if (TOPK_KIND == 0 && n == TILE && c.fc.fast && !c.none) {
        // Full tiles of float keys: one compare per key (two where equal keys count).
        if (largest) {
#pragma unroll
            for (int r = 0; r < FR; r++) m |= (u32)!(key_float(cur[r]) <= c.fc.f) << r;
        } else {
#pragma unroll
            for (int r = 0; r < FR; r++) m |= (u32)(key_float(cur[r]) < c.fc.f) << r;
        }
        if (c.ceq) {
#pragma unroll
            for (int r = 0; r < FR; r++) eq |= (u32)(key_float(cur[r]) == c.fc.fe) << r;
        }
    } else if (n == TILE && !c.ceq) {
#pragma unroll
        for (int r = 0; r < FR; r++) m |= (u32)(directed(cur[r], largest) > c.th) << r;
    } else if (n == TILE) {
#pragma unroll
        for (int r = 0; r < FR; r++) {
            const R d = directed(cur[r], largest);
            m |= (u32)(d > c.th) << r;
            eq |= (u32)(d == c.th) << r;
        }
    } else {
#pragma unroll
        for (int r = 0; r < FR; r++) {
            const R d = directed(cur[r], largest);
            const bool in = first + r * 32 < n;
            m |= (u32)(in && d > c.th) << r;
            eq |= (u32)(c.ceq && in && d == c.th) << r;
        }
    }
    if (c.none) m = eq = 0;
    *eq_out = eq;
    return m;
}

// Writes this warp's marked items in position order, the o-th (counted from base) by
// put(o, key, position). P items per lane per round: item (r, h) is mark bit r + 16 h, key
// item.key(r, h) at tile position item.pos(r, h); a round's items are in position order
// lane by lane, h within a lane. Only the rounds where some lane of the warp has a marked
// item (the same in the whole warp) cost ballots; `any` is false when no lane has one.
// SPARSE visits those rounds by a loop over the set bits of their mask instead of a test per
// round, for items that read their keys from shared memory at run-time positions (registers
// cannot be indexed by a loop variable without spilling).
// P = 2 runs only for 16-bit keys (FR = 32: 16 words a thread, bits r and 16 + r).
template <int P, bool SPARSE, class Items, class Put>
__device__ __forceinline__ void place_marked(const Items& item, u32 m, bool any, u32 base, const Put& put) {
    const u32 lt = (1u << (threadIdx.x & 31)) - 1u;
    u32 rounds = any ? __reduce_or_sync(0xffffffffu, P == 2 ? (m | m >> 16) & 0xffffu : m) : 0u;
    const auto round = [&](int r) {
        const u32 a = (m >> r) & 1u, b = P == 2 ? (m >> (16 + r)) & 1u : 0u;
        const u32 ba = __ballot_sync(0xffffffffu, a);
        const u32 bb = P == 2 ? __ballot_sync(0xffffffffu, b) : 0u;
        const u32 o = base + __popc(ba & lt) + __popc(bb & lt);
        if (a) put(o, item.key(r, 0), item.pos(r, 0));
        if (b) put(o + a, item.key(r, 1), item.pos(r, 1));
        base += __popc(ba) + __popc(bb);
    };
    if (SPARSE) {
        while (rounds) {
            const int r = __ffs(rounds) - 1;
            rounds &= rounds - 1u;
            round(r);
        }
    } else {
#pragma unroll
        for (int r = 0; r < FR / P; r++) {
            if ((rounds >> r) & 1u) round(r);
        }
    }
}

// Places a warp's two mark sets lane by lane, candidates (m, from base, put) and equal keys
// (eq, from ebase, put_eq; not placed where keep_eq is false): lane l's marks, in bit order, at
// the base plus the marks of the lanes below it, by one warp scan of both counts packed in a
// word (a warp's counts are at most 1,024) and a loop as long as the busiest lane's marks;
// put(o, bit).
template <class Put, class PutEq>
__device__ __forceinline__ void place_lanes2(u32 m, u32 eq, bool any, bool keep_eq, u32 base, u32 ebase,
                                             const Put& put, const PutEq& put_eq) {
    if (!any && !keep_eq) return;
    if (!keep_eq) eq = 0;
    const int lane = threadIdx.x & 31;
    const u32 c = __popc(m) | (u32)__popc(eq) << 16;
    u32 x = c;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const u32 y = __shfl_up_sync(0xffffffffu, x, off);
        x += lane >= off ? y : 0u;
    }
    const u32 e = x - c;
    u32 o = base + (e & 0xffffu), oe = ebase + (e >> 16);
    while (m) {
        const int b = __ffs(m) - 1;
        m &= m - 1u;
        put(o++, b);
    }
    while (eq) {
        const int b = __ffs(eq) - 1;
        eq &= eq - 1u;
        put_eq(oe++, b);
    }
}

// A staged tile's keys placed from the stage itself (the filtering threads release a stage
// only once its tile is placed): P = 1, key r at tile position first + 32 r (mark bit r);
// P = 2 (paired 16-bit keys), word r's keys at first + 64 r and the next (mark bits r and
// 16 + r). In position order by ballots where `ordered`; otherwise (fast ties, unsorted rows)
// lane by lane (place_lanes2), in any order, instead of ballots for every round that has a mark.
template <int P>
struct StageItems {
    const K* sk;
    int first;
    bool ordered;
    __device__ __forceinline__ int pos(int r, int h) const { return P == 2 ? first + r * 64 + h : first + r * 32; }
    __device__ __forceinline__ K key(int r, int h) const { return sk[pos(r, h)]; }
    template <class Put, class PutEq>
    __device__ __forceinline__ void place2(u32 m, u32 eq, bool any, bool keep_eq, u32 base, u32 ebase,
                                           const Put& put, const PutEq& put_eq) const {
        if (ordered) {
            place_marked<P, true>(*this, m, any, base, put);
            place_marked<P, true>(*this, eq, keep_eq, ebase, put_eq);
            return;
        }
        const auto at = [&](const auto& f) {
            return [&](u32 o, int b) {
                const int r = P == 2 ? b & 15 : b, h = P == 2 ? b >> 4 : 0;
                f(o, key(r, h), pos(r, h));
            };
        };
        place_lanes2(m, eq, any, keep_eq, base, ebase, at(put), at(put_eq));
    }
};

// An aligned full tile in the run layout: thread (w, lane) holds the FR adjacent keys from
// first = w * WKEYS + lane * FR, mark bit b for key first + b, so placing lane by lane is
// position order (for every tie-break).
struct RunItems {
    const K* sk;
    int first;
    template <class Put, class PutEq>
    __device__ __forceinline__ void place2(u32 m, u32 eq, bool any, bool keep_eq, u32 base, u32 ebase,
                                           const Put& put, const PutEq& put_eq) const {
        place_lanes2(
            m, eq, any, keep_eq, base, ebase, [&](u32 o, int b) { put(o, sk[first + b], first + b); },
            [&](u32 o, int b) { put_eq(o, sk[first + b], first + b); });
    }
};

// The run layout's loads: FR keys as NV 16-byte vectors, vector vv of the run read from
// position vector (vv + rot) % NV, so the 8 lanes of each quarter-warp phase of a 16-byte
// shared-memory load hit 8 distinct bank groups. Slot order is rotated from position order
// by rot * KPV keys; run_rotl undoes that on a mark mask.
#define RUN_NV (FR * (int)sizeof(K) / 16)
#define RUN_KPV (16 / (int)sizeof(K))
__device__ __forceinline__ int run_rot(int lane) { return RUN_NV == 1 ? 0 : (lane / (8 / RUN_NV)) & (RUN_NV - 1); }
__device__ __forceinline__ void run_load(const K* sk, int first, int rot, u32 (&wd)[RUN_NV * 4]) {
    const uint4* sv = (const uint4*)(sk + first);
#pragma unroll
    for (int vv = 0; vv < RUN_NV; vv++) {
        const uint4 v = sv[(vv + rot) & (RUN_NV - 1)];
        wd[4 * vv] = v.x;
        wd[4 * vv + 1] = v.y;
        wd[4 * vv + 2] = v.z;
        wd[4 * vv + 3] = v.w;
    }
}
// Paired marks (bit r for word r's first key, 16 + r for its second, r < 16) to key order
// (bit 2 r + h).
__device__ __forceinline__ u32 spread16(u32 x) {
    x &= 0xffffu;
    x = (x | (x << 8)) & 0x00ff00ffu;
    x = (x | (x << 4)) & 0x0f0f0f0fu;
    x = (x | (x << 2)) & 0x33333333u;
    return (x | (x << 1)) & 0x55555555u;
}
__device__ __forceinline__ u32 pairs_to_keys(u32 m) { return spread16(m) | (spread16(m >> 16) << 1); }
// A run's FR-bit mark mask in slot order to position order (a rotation left by rot vectors).
__device__ __forceinline__ u32 run_rotl(u32 m, int rot) {
    const int sh = rot * RUN_KPV;
    if (FR == 32) return __funnelshift_l(m, m, sh);
    return ((m << sh) | (m >> (FR - sh))) & ((1u << (FR & 31)) - 1u);
}

// A filtering thread's keys of a tile: FR keys, key r at tile position first + 32 r.
struct KeyItems {
    const K (&cur)[FR];
    int first;
    __device__ __forceinline__ K key(int r, int) const { return cur[r]; }
    __device__ __forceinline__ int pos(int r, int) const { return first + r * 32; }
    template <class Put, class PutEq>
    __device__ __forceinline__ void place2(u32 m, u32 eq, bool any, bool keep_eq, u32 base, u32 ebase,
                                           const Put& put, const PutEq& put_eq) const {
        place_marked<1, false>(*this, m, any, base, put);
        place_marked<1, false>(*this, eq, keep_eq, ebase, put_eq);
    }
};

// Keys of 16 bits or fewer count the keys equal to the threshold in every segment (few values,
// so a threshold's ties are the rule) and keep them in slots (see tile_place); wider keys count
// them only where the sample had ties and fetch them from memory, as rare as that is, so their
// filter does not carry the slot bookkeeping (which slowed f32 tiles by 3-5 % on the H200).
#define EQ_SLOTS (KBITS <= 16)

// Places tile t's candidates (marks m) in position order in its CT slots from the first, and
// writes its counts. With EQ_SLOTS, the keys equal to the threshold (marks eq, when counted)
// fill the slots from the last down in position order (equal-key rank q in slot ct - 1 - q)
// when both runs fit, so the candidate kernel completes short candidates from slots instead of
// from memory.
// item.place2 writes a warp's marked items of both sets (KeyItems from registers, StageItems
// from the stage, RunItems from the stage in the run layout); wtot is this tile's parity's
// half; sync() is a barrier of the block's 256 filtering threads. A warp's two counts travel
// packed in one word (candidates in the low half, equal keys in the high): a tile's counts are
// at most 8,192, so one reduction, one store and one sum serve both.
template <class Items, class Sync>
__device__ __forceinline__ void tile_place(const Items& item, u32 m, u32 eq, bool ceq, i64 t, int ct,
                                           K* cand_key, u16* cand_off, u32* tile_cnt, u32* tile_eq, u32* wtot,
                                           const Sync& sync) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const u32 both = __reduce_add_sync(0xffffffffu, __popc(m) | (ceq ? (u32)__popc(eq) << 16 : 0u));
    if (lane == 0) wtot[w] = both;
    sync();
    u32 below = 0, all = 0;
#pragma unroll
    for (int j = 0; j < 8; j++) {
        const u32 x = wtot[j];
        below += j < w ? x : 0u;
        all += x;
    }
    const u32 mine = both & 0xffffu, eqw = both >> 16;
    const u32 base = below & 0xffffu, total = all & 0xffffu, ebase = EQ_SLOTS ? below >> 16 : 0u,
              etotal = all >> 16;
    K* ck = cand_key + t * ct;
    u16* co = cand_off + t * ct;
    const auto put = [&](u32 o, K v, int p) {
        if (o < (u32)ct) {
            ck[o] = v;
            co[o] = (u16)p;
        }
    };
    item.place2(m, eq, mine != 0, EQ_SLOTS && ceq && eqw != 0 && total + etotal <= (u32)ct, base, ebase, put,
                [&](u32 o, K v, int p) {
                    ck[ct - 1 - (int)o] = v;
                    co[ct - 1 - (int)o] = (u16)p;
                });
    if (threadIdx.x == 0) {
        tile_cnt[t] = total;
        tile_eq[t] = etotal;
    }
}

// tile_place without its block barrier, for placements in any order (fast ties into unsorted
// rows; the staged filter of keys of 16 bits or fewer, FT_RESERVE): each warp reserves its
// candidates' and equal keys' places with one shared-memory atomic on its stage's counter
// (candidates in the low half, equal keys in the high) and places its candidates at once; with
// EQ_SLOTS it lists its equal keys' tile positions in the stage's list, since whether they fit
// the slots beside the candidates is known only once the whole tile is counted. The producer
// warp writes the tile's counts and moves the listed keys into their slots when the stage is
// released (finish in filter_tma). Warps filter a stage as fast as they go instead of meeting
// at a barrier per tile.
// Keys of 16 bits or fewer only: their filter is bound by its issue rate, not by memory, and
// without the barrier and the exchange of warp totals a bf16 call took 0.230 ms instead of
// 0.240 on the H200 (262,144 x 2,048 x 1,024); f32 gained 0.3 % there and lost 1-3 % on shapes
// of a few tiles per block, whose last tiles wait for the producer to finish them.
#define FT_RESERVE (KBITS <= 16)
// Each stage's list holds as many equal keys as the slots of an 8,192-key tile of the large
// shapes (512), so a tile of few distinct values (sixteen: 512 equal keys a tile) keeps them
// on chip: with lists of 256 they were read again from memory, and sixteen-valued bf16 keys
// took 0.488 ms instead of 0.377-0.385 on the H200 (262,144 x 2,048 x 1,024). Four stages at
// most (16-bit keys get three of 16 KB at four blocks per SM) keep the lists at 4 KB.
#define FT_EQL 512
#define FT_EQL_STAGES 4
// tile_eq's flag for a tile whose equal keys would fit its slots but were not put there (more
// than FT_EQL): the candidate kernel fetches them from memory.
#define EQ_UNSLOTTED 0x80000000u
template <class Items>
__device__ __forceinline__ void tile_reserve(const Items& item, u32 m, u32 eq, bool ceq, i64 t, int ct, K* cand_key,
                                             u16* cand_off, u32* racc, u16* eql) {
    if (!ceq) eq = 0;
    const u32 both = __reduce_add_sync(0xffffffffu, __popc(m) | (u32)__popc(eq) << 16);
    if (both == 0) return;
    u32 old = 0;
    if ((threadIdx.x & 31) == 0) old = atomicAdd(racc, both);
    old = __shfl_sync(0xffffffffu, old, 0);
    const u32 cb = old & 0xffffu, eb = old >> 16, mine = both & 0xffffu, eqw = both >> 16;
    // Nothing is placed that could not be used: candidates past the slots (the tile
    // overflows), equal keys past the list or where the places taken so far already exceed the
    // slots (ties-heavy tiles, whose equal keys the candidate kernel reads from memory anyway).
    // (Both flags are the same in the whole warp: place_lanes2 scans across it.)
    const bool any = mine != 0 && cb < (u32)ct;
    if (!any) m = 0;
    const bool keep_eq = EQ_SLOTS && eqw != 0 && eb + eqw <= FT_EQL && cb + mine + eb + eqw <= (u32)ct;
    K* ck = cand_key + t * ct;
    u16* co = cand_off + t * ct;
    item.place2(
        m, eq, any, keep_eq, cb, eb,
        [&](u32 o, K v, int p) {
            if (o < (u32)ct) {
                ck[o] = v;
                co[o] = (u16)p;
            }
        },
        [&](u32 o, K, int p) {
            if (o < FT_EQL) eql[o] = (u16)p;
        });
}

// Blocks stride over the tiles, loading the next tile's keys into registers before
// filtering the current one so loads stay in flight (any architecture; sm_90 takes
// filter_tma below). Four blocks per SM (64 registers) for 32-bit keys; two for 64-bit keys
// and for the 32 keys per thread of 16- and 8-bit ones, whose two tiles take 64 registers by
// themselves (at three blocks, 80 registers, they spilled about 100 bytes).
extern "C" __global__ void __launch_bounds__(256, KBITS == 64 || KBITS <= 16 ? 2 : 4)
    ENTRY(filter)(const K* __restrict__ keys, const int* __restrict__ tile_seg, const i64* __restrict__ tile_start,
                  const i64* __restrict__ tile_end, const u64* __restrict__ thresh, i64 ntiles, int ct,
                  const u32* __restrict__ count_eq, K* cand_key, u16* cand_off, u32* tile_cnt, u32* tile_eq,
                  int largest) {
    __shared__ u32 wtot[2][8];
    grid_dep_wait();
    grid_dep_launch();
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int first = w * WKEYS + lane;
    i64 t = blockIdx.x, a = 0, n = 0;
    if (t < ntiles) {
        a = tile_start[t];
        n = tile_end[t] - a;
    }
    K cur[FR];
#pragma unroll
    for (int r = 0; r < FR; r++) cur[r] = first + r * 32 < n ? keys[a + first + r * 32] : (K)0;
    for (int par = 0; t < ntiles; t += gridDim.x, par ^= 1) {
        const i64 tn = t + gridDim.x;
        i64 an = 0, nn = 0;
        if (tn < ntiles) {
            an = tile_start[tn];
            nn = tile_end[tn] - an;
        }
        K nxt[FR];
#pragma unroll
        for (int r = 0; r < FR; r++) nxt[r] = first + r * 32 < nn ? keys[an + first + r * 32] : (K)0;
        const int s = tile_seg[t];
        const TileCut c = tile_cut(thresh[s], count_eq[s], largest);
        u32 eq;
        const u32 m = tile_marks(cur, n, c, largest, first, &eq);
        tile_place(KeyItems{cur, first}, m, eq, c.ceq, t, ct, cand_key, cand_off, tile_cnt, tile_eq, wtot[par],
                   [] { __syncthreads(); });
#pragma unroll
        for (int r = 0; r < FR; r++) cur[r] = nxt[r];
        n = nn;
    }
}

// 16-bit float keys filtered two to a 32-bit word by packed compares (sm_90 has them for
// bf16x2 and f16x2): half the instructions per key of one compare each, which the filter's
// issue rate needs once keys are half as wide.
#define PAIRED (TOPK_KIND == 0 && KBITS == 16)
#if TOPK_INF == 0x7f80
#define HALF2 "bf16x2"
#else
#define HALF2 "f16x2"
#endif

// The 16-bit float key whose value is f (f is one), in both halves of a word.
__device__ __forceinline__ u32 half2_of(float f) {
    u32 h;
    if (TOPK_INF == 0x7f80ull) {
        h = __float_as_uint(f) >> 16;
    } else {
        unsigned short x;
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(x) : "f"(f));
        h = x;
    }
    return h | h << 16;
}
// Per half: 0xffff where a's key compares to b's as OP says, else 0 (gtu: above or unordered
// with it, NaN; lt: below; eq: equal).
#define HALF2_SET(OP)                                                            \
    __device__ __forceinline__ u32 half2_##OP(u32 a, u32 b) {                    \
        u32 d;                                                                   \
        asm("set." #OP ".u32." HALF2 " %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b)); \
        return d;                                                                \
    }
HALF2_SET(gtu)
HALF2_SET(lt)
HALF2_SET(eq)

// tile_marks for a full tile of paired keys under a float compare (c.fc.fast, !c.none): mark
// bit r for word r's first key, 16 + r for its second.
__device__ __forceinline__ u32 pair_marks(const u32* wd, const TileCut& c, int largest, u32* eq_out) {
    u32 m = 0, eq = 0;
    const u32 f2 = half2_of(c.fc.f);
    if (largest) {
#pragma unroll
        for (int r = 0; r < FR / 2; r++) m |= half2_gtu(wd[r], f2) & (0x00010001u << r);
    } else {
#pragma unroll
        for (int r = 0; r < FR / 2; r++) m |= half2_lt(wd[r], f2) & (0x00010001u << r);
    }
    if (c.ceq) {
        const u32 e2 = half2_of(c.fc.fe);
#pragma unroll
        for (int r = 0; r < FR / 2; r++) eq |= half2_eq(wd[r], e2) & (0x00010001u << r);
    }
    *eq_out = eq;
    return m;
}

// The filter with the keys staged by the TMA (sm_90). Warp-specialised: warp 8, the
// producer, stages each tile into one of `nst` shared-memory stages (a bulk copy of its
// 16-byte-aligned interior; its unaligned head and tail, under 16 bytes each, stored by the
// warp's lanes; its threshold, and the float compare standing for it, in the stage's header)
// and signals the stage's full barrier; warps 0-7 filter the stage as the register filter
// does, each thread arriving on its empty barrier once its tile is placed: the placement reads
// the candidates' keys back from the stage, so it visits only the ballot rounds that have
// candidates (StageItems). Keys reach shared memory without passing through registers, so the
// bytes in flight are bounded by shared memory, not by registers, and the filtering threads'
// loads are shared-memory loads at constant offsets. The producer keeps its own global loads
// (tile bounds two tiles ahead, threshold and edge keys one ahead) in flight while it waits for
// a free stage: its loop waits first and only then uses what it loaded in the previous
// iteration. Full tiles whose stage is 16-byte aligned at their first key (the usual case) are
// read in the run layout instead (RunItems; 16-bit float keys filtered in pairs only where the
// placement must keep position order): each thread's 16 adjacent keys by 16-byte loads,
// placed lane by lane in position order, so no tie-break pays the ballot rounds. Keys of 16
// bits or fewer placed in any order skip the per-tile barrier (tile_reserve): the producer,
// once it has waited for a stage to be released, writes its tile's counts.
#define FT_THREADS 288
#define FT_MAX_STAGES 8

struct FtHead {
    TileCut c;
    int n, shift;
};

extern "C" __global__ void __launch_bounds__(FT_THREADS, KBITS == 64 ? 2 : 4)
    ENTRY(filter_tma)(const K* __restrict__ keys, const int* __restrict__ tile_seg,
                      const i64* __restrict__ tile_start, const i64* __restrict__ tile_end,
                      const u64* __restrict__ thresh, i64 ntiles, int ct, const u32* __restrict__ count_eq,
                      K* cand_key, u16* cand_off, u32* tile_cnt, u32* tile_eq, int largest, int nst,
                      int stage_bytes, int ordered) {
#if __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) u64 ft_smem[];
    __shared__ __align__(8) u64 full[FT_MAX_STAGES], empty[FT_MAX_STAGES];
    __shared__ FtHead head[FT_MAX_STAGES];
    __shared__ u32 wtot[2][8];
    // Unordered placement (tile_reserve): each stage's tile's counts and equal-key list.
    __shared__ u32 racc[FT_MAX_STAGES];
    __shared__ u16 eql[FT_RESERVE ? FT_EQL_STAGES : 1][FT_RESERVE ? FT_EQL : 1];
    const bool reserve = FT_RESERVE && !ordered;
    unsigned char* stages = (unsigned char*)ft_smem;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const i64 G = gridDim.x;
    const i64 nj = (i64)blockIdx.x < ntiles ? (ntiles - blockIdx.x + G - 1) / G : 0;
    // A stage holds a tile's keys at byte offset (address of its first key) % 16: at least
    // TILE keys and 15 bytes, a multiple of 16 (the host's stage_bytes).
    nst = nst < FT_MAX_STAGES ? nst : FT_MAX_STAGES;
    if (reserve && nst > FT_EQL_STAGES) nst = FT_EQL_STAGES;
    if (threadIdx.x == 0) {
        for (int s = 0; s < nst; s++) {
            mbar_init(&full[s], 32);
            mbar_init(&empty[s], 256);
            racc[s] = 0;
        }
        fence_mbar_init();
    }
    grid_dep_wait();
    grid_dep_launch();
    __syncthreads();
    if (w == 8) {
        // The producer. Pipeline registers: bounds of tile j + 2 as loaded (p2*, used an
        // iteration later), tile j + 1's bounds, threshold and this lane's edge key (p1*,
        // loaded during iteration j, used after the next wait for a free stage).
        constexpr int KS = (int)sizeof(K);
        i64 p1a = 0, p2a = 0, p2e = 0;
        int p1n = 0, p1s = 0, p2s = 0;
        auto bounds = [&](i64 j, i64& a, i64& e, int& sg) {
            if (j < nj) {
                const i64 t = blockIdx.x + j * G;
                a = tile_start[t];
                e = tile_end[t];
                sg = tile_seg[t];
            }
        };
        // Edge layout of a tile at a with n keys: keys [0, hd) and [tl, n) are loaded by lanes,
        // [hd, tl) by the bulk copy.
        auto edges = [&](i64 a, int n, int& hd, int& tl, int& shift) {
            const u64 A = (u64)(keys + a), E = A + (u64)n * KS;
            const u64 lo16 = (A + 15) & ~15ull, hi16 = E & ~15ull;
            shift = (int)(A & 15);
            if (hi16 > lo16) {
                hd = (int)((lo16 - A) / KS);
                tl = (int)((hi16 - A) / KS);
            } else {
                hd = tl = n;
            }
        };
        auto edge_load = [&](i64 j, i64 a, int n) {
            K v = 0;
            if (j < nj) {
                int hd, tl, sh;
                edges(a, n, hd, tl, sh);
                const int i = lane < hd ? lane : tl + (lane - hd);
                if (i < n) v = keys[a + i];
            }
            return v;
        };
        u64 p1th = 0;
        u32 p1eq = 0;
        K p1v = 0;
        // Advances the pipeline by a tile: j + 1's bounds from the registers, its threshold
        // and edge key and j + 2's bounds issued.
        auto advance = [&](i64 j) {
            p1a = p2a;
            p1n = (int)(p2e - p2a);
            p1s = p2s;
            if (j + 1 < nj) {
                p1th = thresh[p1s];
                p1eq = count_eq[p1s];
            }
            p1v = edge_load(j + 1, p1a, p1n);
            bounds(j + 2, p2a, p2e, p2s);
        };
        // Tile j's counts, and its equal keys moved from the list into their slots where they
        // fit (unordered placement), once its stage sf is released: the stage still holds the
        // tile's keys until the producer stages the next.
        auto finish = [&](int sf, i64 j) {
            const i64 t = blockIdx.x + j * G;
            const u32 tot = racc[sf], total = tot & 0xffffu, et = tot >> 16;
            const bool keep = EQ_SLOTS && et != 0 && total + et <= (u32)ct && et <= FT_EQL;
            if (keep) {
                const K* sk = (const K*)(stages + (i64)sf * stage_bytes + head[sf].shift);
                for (u32 q = lane; q < et; q += 32) {
                    const int p = eql[sf][q];
                    const i64 slot = t * ct + (ct - 1) - (i64)q;
                    cand_key[slot] = sk[p];
                    cand_off[slot] = (u16)p;
                }
            }
            __syncwarp();
            if (lane == 0) {
                tile_cnt[t] = total;
                tile_eq[t] = et | (EQ_SLOTS && !keep && et != 0 && total + et <= (u32)ct ? EQ_UNSLOTTED : 0u);
                racc[sf] = 0;
            }
        };
        bounds(0, p2a, p2e, p2s);
        advance(-1);
        int s = 0;
        u32 par = 0;
        for (i64 j = 0; j < nj; j++) {
            if (j >= nst) {
                while (!mbar_try_wait(&empty[s], par ^ 1u)) {
                }
                if (reserve) finish(s, j - nst);
            }
            const i64 a = p1a;
            const int n = p1n;
            int hd, tl, shift;
            edges(a, n, hd, tl, shift);
            unsigned char* sb = stages + (i64)s * stage_bytes + shift;
            const int i = lane < hd ? lane : tl + (lane - hd);
            if (i < n && (lane < hd || i >= tl)) ((K*)sb)[i] = p1v;
            // Every lane arrives (lane 0 announcing the copy's bytes first), so each edge
            // store is released by its own thread's arrival.
            if (lane == 0) {
                head[s] = FtHead{tile_cut(p1th, p1eq, largest), n, shift};
                const u32 bytes = (u32)(tl - hd) * KS;
                mbar_arrive_expect_tx(&full[s], bytes);
                if (bytes) bulk_copy_g2s(sb + (i64)hd * KS, keys + a + hd, bytes, &full[s]);
            } else {
                mbar_arrive(&full[s]);
            }
            advance(j);
            if (++s == nst) {
                s = 0;
                par ^= 1u;
            }
        }
        if (reserve) {
            for (i64 j = nj > nst ? nj - nst : 0; j < nj; j++) {
                const int sj = (int)(j % nst);
                while (!mbar_try_wait(&empty[sj], (u32)((j / nst) & 1))) {
                }
                finish(sj, j);
            }
        }
        return;
    }
    const int first = w * WKEYS + lane;
    int s = 0;
    u32 par = 0;
    for (i64 j = 0; j < nj; j++) {
        while (!mbar_try_wait(&full[s], par)) {
        }
        const FtHead hh = head[s];
        const TileCut& c = hh.c;
        const i64 t = (i64)blockIdx.x + j * G;
        const int p = (int)(j & 1);
        const auto sync = [] { named_barrier(1, 256); };
        const auto place = [&](const auto& item, u32 m, u32 eq) {
            if (reserve)
                tile_reserve(item, m, eq, c.ceq, t, ct, cand_key, cand_off, &racc[s], eql[s]);
            else
                tile_place(item, m, eq, c.ceq, t, ct, cand_key, cand_off, tile_cnt, tile_eq, wtot[p], sync);
        };
        const bool paired = PAIRED && hh.n == TILE && c.fc.fast && !c.none;
        if (hh.n == TILE && hh.shift == 0 && (!paired || ordered)) {
            // An aligned full tile: the run layout (RunItems). Paired keys take it only where
            // the placement must keep position order: interleaving their marks into key order
            // costs their filter more (8 % on the H200, measured at 4,096-key tiles) than
            // lane-by-lane placement in any order, but much less than ordered ballots.
            const K* sk = (const K*)(stages + (i64)s * stage_bytes);
            const int run = w * WKEYS + lane * FR, rot = run_rot(lane);
            u32 wd[RUN_NV * 4];
            run_load(sk, run, rot, wd);
            u32 m, eq;
            if (paired) {
                m = pairs_to_keys(pair_marks(wd, c, largest, &eq));
                eq = c.ceq ? pairs_to_keys(eq) : 0u;
            } else {
                K cur[FR];
#pragma unroll
                for (int r = 0; r < FR; r++) cur[r] = word_key(wd, r);
                m = tile_marks(cur, TILE, c, largest, 0, &eq);
            }
            m = run_rotl(m, rot);
            eq = run_rotl(eq, rot);
            place(RunItems{sk, run}, m, eq);
            mbar_arrive(&empty[s]);
        } else if (paired) {
            // 16-bit float keys, a word (two keys) at a time: word r of this thread holds the
            // tile's keys w * WKEYS + r * 64 + 2 lane and the next. A tile at an odd key offset
            // sits 2 bytes past a word boundary; its words are funnelled from two.
            const int w0 = w * (WKEYS / 2) + lane;
            const u32* sw = (const u32*)(stages + (i64)s * stage_bytes + (hh.shift & ~3));
            u32 wd[FR / 2];
            if (hh.shift & 2) {
#pragma unroll
                for (int r = 0; r < FR / 2; r++) wd[r] = __funnelshift_r(sw[w0 + r * 32], sw[w0 + r * 32 + 1], 16);
            } else {
#pragma unroll
                for (int r = 0; r < FR / 2; r++) wd[r] = sw[w0 + r * 32];
            }
            u32 eq;
            const u32 m = pair_marks(wd, c, largest, &eq);
            const K* sk = (const K*)(stages + (i64)s * stage_bytes + hh.shift);
            place(StageItems<2>{sk, w * WKEYS + 2 * lane, ordered != 0}, m, eq);
            mbar_arrive(&empty[s]);
        } else {
            const K* sk = (const K*)(stages + (i64)s * stage_bytes + hh.shift);
            K cur[FR];
            if (hh.n == TILE) {
#pragma unroll
                for (int r = 0; r < FR; r++) cur[r] = sk[first + r * 32];
            } else {
#pragma unroll
                for (int r = 0; r < FR; r++) cur[r] = first + r * 32 < hh.n ? sk[first + r * 32] : (K)0;
            }
            u32 eq;
            const u32 m = tile_marks(cur, hh.n, c, largest, first, &eq);
            place(StageItems<1>{sk, first, ordered != 0}, m, eq);
            mbar_arrive(&empty[s]);
        }
        if (++s == nst) {
            s = 0;
            par ^= 1u;
        }
    }
#else
    __trap();
#endif
}
// On-chip path for segments of at most 256 * N keys: one block of 256 threads per segment,
// thread t holding the directed radixes of positions t * N .. t * N + N - 1 in registers
// (16-byte loads when its run is whole and aligned). The digit passes read registers and
// count into one shared histogram; the ordered compaction is one block scan of per-thread
// counts (two when the tie window must be ranked), since a thread's run is contiguous;
// selected keys are read back from memory (L2) as they are written. Reads the keys once
// and keeps no copy of the segment in shared memory.
template <int N>
__device__ __forceinline__ void rblock(const K* __restrict__ keys, const i64* __restrict__ seg_start,
                                       const i64* __restrict__ lens, const i64* __restrict__ kk_arr, K* out_keys,
                                       void* out_idx, i64 width, int idx64, int largest, int larger_index) {
    __shared__ u32 h[256];
    __shared__ u32 sums[32];
    __shared__ u64 ctl[3];
    __shared__ R red[16];
    const i64 s = blockIdx.x;
    const i64 st = seg_start[s];
    const int len = (int)lens[s];
    const u64 kk = (u64)kk_arr[s];
    if (kk == 0 || len == 0) return;  // the whole block
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int first = threadIdx.x * N;
    const int nv = len - first < 0 ? 0 : (len - first > N ? N : len - first);
    R r[N];
    {
        const K* p = keys + st + first;
        constexpr int V = (N * (int)sizeof(K)) / 16;
        if (V > 0 && (N * (int)sizeof(K)) % 16 == 0 && nv == N && (((unsigned long long)p) & 15ull) == 0) {
            u32 wd[V > 0 ? 4 * V : 1];
#pragma unroll
            for (int v = 0; v < V; v++) {
                const uint4 x = ((const uint4*)p)[v];
                wd[4 * v] = x.x;
                wd[4 * v + 1] = x.y;
                wd[4 * v + 2] = x.z;
                wd[4 * v + 3] = x.w;
            }
#pragma unroll
            for (int j = 0; j < N; j++) r[j] = directed(word_key(wd, j), largest);
        } else {
#pragma unroll
            for (int j = 0; j < N; j++) r[j] = j < nv ? directed(p[j], largest) : (R)0;
        }
    }
    R a = ~(R)0, o = 0;
#pragma unroll
    for (int j = 0; j < N; j++) {
        if (j < nv) {
            a &= r[j];
            o |= r[j];
        }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        a &= __shfl_xor_sync(0xffffffffu, a, off);
        o |= __shfl_xor_sync(0xffffffffu, o, off);
    }
    if (lane == 0) {
        red[w] = a;
        red[8 + w] = o;
    }
    __syncthreads();
    a = ~(R)0;
    o = 0;
#pragma unroll
    for (int q = 0; q < 8; q++) {
        a &= red[q];
        o |= red[8 + q];
    }
    u64 remaining = kk, ties = (u64)len;
    int shift = KBITS;
    R prefix = 0;
    const u64 diff = (u64)((a ^ o) & width_mask());
    if (kk < (u64)len && diff == 0) {
        prefix = a;
        shift = 0;
    } else if (kk < (u64)len) {
        shift = 64 - __clzll((long long)diff);
        prefix = hi(a, shift);
        while (shift > 0) {
            const int bits = shift < 8 ? shift : 8;
            const int digit = shift - bits;
            h[threadIdx.x] = 0;
            __syncthreads();
#pragma unroll
            for (int j = 0; j < N; j++)
                if (j < nv && hi(r[j], shift) == prefix) atomicAdd(&h[(u32)(r[j] >> digit) & ((1u << bits) - 1u)], 1u);
            __syncthreads();
            if (w == 0) find_bin(h, remaining, ctl, lane);
            __syncthreads();
            const u64 b = ctl[0], above = ctl[1], t = ctl[2];
            remaining -= above;
            prefix = (prefix << bits) | (R)b;
            shift = digit;
            ties = t;
            if (t == remaining) break;
        }
    }
    u32 gt = 0, tie = 0;
#pragma unroll
    for (int j = 0; j < N; j++) {
        if (j < nv) {
            const R g = hi(r[j], shift);
            gt |= (u32)(g > prefix) << j;
            tie |= (u32)(g == prefix) << j;
        }
    }
    u32 sel = gt, total;
    if (remaining >= ties) {
        sel |= tie;
    } else {
        // The tie window [lo, lo + remaining) in position order.
        u32 rank = block_exclusive_scan(__popc(tie), sums, &total);
        const u64 lo = larger_index ? ties - remaining : 0;
#pragma unroll
        for (int j = 0; j < N; j++) {
            if ((tie >> j) & 1u) {
                if (rank >= lo && rank < lo + remaining) sel |= 1u << j;
                rank++;
            }
        }
        __syncthreads();
    }
    u32 slot = block_exclusive_scan(__popc(sel), sums, &total);
    if (sel) {
        const i64 row = s * width;
#pragma unroll
        for (int j = 0; j < N; j++) {
            if ((sel >> j) & 1u) {
                out_keys[row + slot] = keys[st + first + j];
                store_index(out_idx, idx64, row + slot, (i64)(first + j));
                slot++;
            }
        }
    }
}

#define RBLOCK(N)                                                                                           \
    extern "C" __global__ void __launch_bounds__(256) PASTE(ENTRY(rblock), _v##N)(                          \
        const K* __restrict__ keys, const i64* __restrict__ seg_start, const i64* __restrict__ lens,       \
        const i64* __restrict__ kk_arr, K* out_keys, void* out_idx, i64 width, int idx64, int largest,      \
        int larger_index) {                                                                                 \
        rblock<N>(keys, seg_start, lens, kk_arr, out_keys, out_idx, width, idx64, largest, larger_index);   \
    }
RBLOCK(8)
RBLOCK(16)
RBLOCK(32)

// One block per segment: candidates gathered in tile order into dynamic shared memory (cap
// slots of `CandSlots`, sized by `cand_kernel` on the host), then selected on chip, or
// completed with the threshold's ties, or (when neither holds the answer) the whole segment
// selected in memory. A filter segment holds fewer than 2^32 keys (its expected candidates
// fit on chip), so positions fit 32 bits.
// Tiles per segment whose overflowed candidates are re-filtered from memory; more go to the
// in-memory selection.
#define OVF_MAX 32
// Candidate slots each thread of the candidate kernel reads before storing any, and the
// lanes that gather one tile's slots together.
#define GU 4
#define GL 16

// The key whose directed radix is d (radix_of and directed inverted), or none where the radix
// stands for several keys (floats' zeros and NaNs): those are read at position p of seg.
__device__ __forceinline__ K key_of_radix(R d, int largest, const K* seg, u32 p) {
    const R r = largest ? d : (~d & width_mask());
    const R sign = (R)1 << (KBITS - 1);
    if (TOPK_KIND == 0) {
        if (r == width_mask() || r == sign) return seg[p];
        return (K)((r & sign) ? (r & ~sign) : (~r & width_mask()));
    }
    if (TOPK_KIND == 1) return (K)(r ^ sign);
    return (K)r;
}

// A candidate's slots in the candidate kernel's shared memory. RAD: its radix, its position
// and (keys of up to 32 bits) its key, selected by radix; else its key and its position, the
// selection computing radixes as it reads the keys (8 bytes for a 32-bit key instead of 12).
// NOKEY (16-bit keys in the compact build): radix and position only, 6 bytes, the key
// recovered from its radix (key_of_radix), so four blocks' candidates share an SM.
template <bool RAD, bool NOKEY = false>
struct CandSlots {
    static constexpr bool KEYS = !NOKEY && (!RAD || KBITS <= 32);
    RS* rad;
    u32* pos;
    K* skey;
    int largest;
    __device__ __forceinline__ CandSlots(u64* smem, int cap, int largest_) : largest(largest_) {
        if (RAD) {
            rad = (RS*)smem;
            pos = (u32*)(rad + cap);
            skey = (K*)(pos + cap);
        } else {
            rad = nullptr;
            skey = (K*)smem;
            pos = (u32*)(skey + cap);
        }
    }
    __device__ __forceinline__ void put(u64 j, K v, u32 p, int largest) const { put_rad(j, v, directed(v, largest), p); }
    // With the key's directed radix d at hand.
    __device__ __forceinline__ void put_rad(u64 j, K v, R d, u32 p) const {
        if (RAD) rad[j] = (RS)d;
        pos[j] = p;
        if (KEYS) skey[j] = v;
    }
    __device__ __forceinline__ K key(u64 j, const K* seg) const {
        if (KEYS) return skey[j];
        if (NOKEY) return key_of_radix((R)rad[j], largest, seg, pos[j]);
        return seg[pos[j]];
    }
};
template <int U, bool NOKEY>
__device__ __forceinline__ SmemRad<U, RS> cand_src(const CandSlots<true, NOKEY>& c, int) {
    return SmemRad<U, RS>{c.rad};
}
template <int U>
__device__ __forceinline__ KeyRad<U, int> cand_src(const CandSlots<false>& c, int largest) {
    return KeyRad<U, int>{c.skey, largest};
}

// Appends the keys of run [a, a + n) (n <= APPEND_RUN; a relative to the segment) whose radix
// passes `take` (gt: above th; else: equal to th with tie rank, counted from rank0 in
// position order, in [lo, lo + need)) at out0 + their rank among the taken, in position
// order. Returns the ties seen (high word) and the keys taken (low word). Every thread must
// call it.
#define APPEND_RUN 4096
template <class Slots>
__device__ __noinline__ u64 run_append(const K* __restrict__ seg, i64 a, int n, R th, bool gt, u64 rank0, u64 lo,
                                       u64 need, u32 out0, const Slots& c, int largest, u32* cnt, u32* sums) {
    const int rounds = (n + (int)blockDim.x - 1) / (int)blockDim.x;
    K v[APPEND_RUN / 256];
#pragma unroll
    for (int r = 0; r < APPEND_RUN / 256; r++) {
        const int i = r * blockDim.x + threadIdx.x;
        v[r] = i < n ? seg[a + i] : (K)0;
    }
    u32 m = 0, tie = 0;
#pragma unroll
    for (int r = 0; r < APPEND_RUN / 256; r++) {
        const int i = r * blockDim.x + threadIdx.x;
        const R d = directed(v[r], largest);
        m |= (u32)(i < n && d > th) << r;
        tie |= (u32)(i < n && d == th) << r;
    }
    u32 ties_here = 0;
    if (!gt) {
        ordered_bases(tie, rounds, cnt, sums, &ties_here);
        m = 0;
#pragma unroll
        for (int r = 0; r < APPEND_RUN / 256; r++) {
            if (r < rounds) {
                const u64 rank = rank0 + ordered_slot(tie, r, cnt);
                if (((tie >> r) & 1u) && rank >= lo && rank < lo + need) m |= 1u << r;
            }
        }
        __syncthreads();
    }
    u32 taken;
    ordered_bases(m, rounds, cnt, sums, &taken);
#pragma unroll
    for (int r = 0; r < APPEND_RUN / 256; r++) {
        if (r < rounds) {
            const u32 o = out0 + ordered_slot(m, r, cnt);
            if ((m >> r) & 1u) c.put(o, v[r], (u32)(a + r * blockDim.x + threadIdx.x), largest);
        }
    }
    __syncthreads();
    return (u64)ties_here << 32 | taken;
}

// run_append over tile [a, a + n) (n <= TILE) a run at a time, so the 8,192-key tiles of
// narrow keys do not double its registers.
template <class Slots>
__device__ __forceinline__ void tile_append(const K* __restrict__ seg, i64 a, int n, R th, bool gt, u64 rank0,
                                            u64 lo, u64 need, u32 out0, const Slots& c, int largest, u32* cnt,
                                            u32* sums) {
    for (int x0 = 0; x0 < n; x0 += APPEND_RUN) {
        const u64 r = run_append(seg, a + x0, n - x0 < APPEND_RUN ? n - x0 : APPEND_RUN, th, gt, rank0, lo, need,
                                 out0, c, largest, cnt, sums);
        rank0 += r >> 32;
        out0 += (u32)r;
    }
}

template <bool RAD, int NT, int U, bool NOKEY = false>
__device__ __forceinline__ void cand_body(const K* __restrict__ keys, const i64* __restrict__ seg_start,
                                          const i64* __restrict__ lens, const i64* __restrict__ kk_arr,
                                          const i64* __restrict__ tile_ptr, const i64* __restrict__ tile_start,
                                          const u32* __restrict__ tile_cnt, const u32* __restrict__ tile_eq,
                                          const u64* __restrict__ thresh, const K* __restrict__ cand_key,
                                          const u16* __restrict__ cand_off, int ct, int cap, K* out_keys,
                                          void* out_idx, i64 width, int idx64, int largest, int larger_index,
                                          int ordered) {
    extern __shared__ u64 smem_raw[];
    const CandSlots<RAD, NOKEY> cs(smem_raw, cap, largest);
    u32* pos = cs.pos;
    __shared__ u32 tbase[NT], tcnt[NT], gbase[NT];
    __shared__ bool from_mem[NT];
    __shared__ u32 h[256];
    __shared__ u32 sums[32];
    __shared__ u32 cnt[NT];
    __shared__ u64 ctl[CTL_WORDS];
    __shared__ u32 ovf_tile[OVF_MAX], ovf_base[OVF_MAX];
    __shared__ int novf;
    grid_dep_wait();
    grid_dep_launch();
    const i64 s = blockIdx.x;
    const i64 st = seg_start[s], len = lens[s];
    const u64 kk = (u64)kk_arr[s];
    const i64 t0 = tile_ptr[s], t1 = tile_ptr[s + 1];
    if (kk == 0) return;  // the whole block: nothing to select, padding comes later
    const R th = (R)thresh[s];
    const K* seg = keys + st;
    if (threadIdx.x == 0) novf = 0;
    __syncthreads();
    u64 total = 0, eqs = 0;
    // This thread's AND and OR of the gathered candidates' radixes: the selection's first
    // pass, unless overflowed tiles add candidates.
    R ga = ~(R)0, go = 0;
    for (i64 tb = t0; tb < t1; tb += blockDim.x) {
        const i64 t = tb + threadIdx.x;
        const u32 c = t < t1 ? tile_cnt[t] : 0;
        const u32 e = t < t1 ? tile_eq[t] & ~EQ_UNSLOTTED : 0;
        u32 sum, esum;
        const u32 before = block_exclusive_scan(c, sums, &sum);
        __syncthreads();
        block_exclusive_scan(e, sums, &esum);
        __syncthreads();
        // Slots gathered: a tile's candidates when they fit its slots and the shared memory.
        const bool gather = c <= (u32)ct && total + before + c <= (u64)cap;
        tbase[threadIdx.x] = before;
        tcnt[threadIdx.x] = gather ? c : 0u;
        if (c > (u32)ct) {
            const int q = atomicAdd(&novf, 1);
            if (q < OVF_MAX) {
                ovf_tile[q] = (u32)(t - t0);
                ovf_base[q] = (u32)(total + before);
            }
        }
        __syncthreads();
        // The gathered slots of these tiles, a tile per group of GL lanes (no search for a
        // slot's tile), GU slots per lane loaded before any is stored so the reads overlap.
        const int ntb = (int)(t1 - tb < (i64)blockDim.x ? t1 - tb : (i64)blockDim.x);
        const u32 gl = threadIdx.x % GL;
        for (int x = threadIdx.x / GL; x < ntb; x += NT / GL) {
            const u32 nx = tcnt[x];
            const i64 s0 = (tb + x) * ct;
            const u64 j0 = total + tbase[x];
            const u32 p0 = (u32)((tb + x - t0) * TILE);
            for (u32 i0 = 0; i0 < nx; i0 += GU * GL) {
                K kv[GU];
                u16 ov[GU];
#pragma unroll
                for (int u = 0; u < GU; u++) {
                    const u32 i = i0 + u * GL + gl;
                    if (i < nx) {
                        kv[u] = cand_key[s0 + i];
                        ov[u] = cand_off[s0 + i];
                    }
                }
#pragma unroll
                for (int u = 0; u < GU; u++) {
                    const u32 i = i0 + u * GL + gl;
                    if (i < nx) {
                        const R d = directed(kv[u], largest);
                        ga &= d;
                        go |= d;
                        cs.put_rad(j0 + i, kv[u], d, p0 + ov[u]);
                    }
                }
            }
        }
        total += sum;
        eqs += esum;
        __syncthreads();
    }
    const int nov = novf;
    const bool fits = total <= (u64)cap && nov <= OVF_MAX;
    // Tiles whose candidates overflowed their slots: filtered again from memory into their
    // place.
    if (fits) {
        for (int q = 0; q < nov; q++) {
            const i64 a = (i64)ovf_tile[q] * TILE;
            const int n = (int)(len - a < TILE ? len - a : TILE);
            tile_append(seg, a, n, th, true, 0, 0, 0, ovf_base[q], cs, largest, cnt, sums);
        }
    }
    const i64 row = s * width;
    const Writer e{keys, out_keys, out_idx, idx64};
    if (fits && kk <= total) {
        // The answer is among the candidates (ties at the k-th key included: all above th).
        const auto src = cand_src<U>(cs, largest);
        const Sel sel = nov == 0 ? block_radix_select_ao(src, (i64)total, kk, h, ctl, ga, go)
                                 : block_radix_select(src, (i64)total, kk, h, ctl);
        const u64 lo = larger_index ? sel.ties - sel.remaining : 0;
        const auto put = [&](i64 j, u64 o) { e.put_key(cs.key((u64)j, seg), (i64)pos[j], row + (i64)o); };
        if (ordered)
            block_compact(src, (i64)total, sel, lo, 0, 0, put, cnt, sums);
        else
            block_take(src, (i64)total, sel, put, cnt);
    } else if (fits && kk <= total + eqs && kk <= (u64)cap) {
        // Every candidate, and the tie-break's window of the keys equal to th, appended after
        // them: gathered from the slots of the tiles that kept their equal keys (see
        // tile_place), filtered from memory in the others; then both runs merged by position.
        // Ranks and counts within a segment fit 32 bits (see above).
        const u32 need = (u32)(kk - total), lo = larger_index ? (u32)eqs - need : 0u, hi = lo + need;
        u32 rank = 0;
        for (i64 tb = t0; tb < t1 && rank < hi; tb += blockDim.x) {
            const i64 t = tb + threadIdx.x;
            const u32 eraw = t < t1 ? tile_eq[t] : 0u, e = eraw & ~EQ_UNSLOTTED;
            u32 sum, gsum;
            const u32 before = block_exclusive_scan(e, sums, &sum);
            __syncthreads();
            // This tile's part of the window: equal-key ranks [w0, w1) of the segment.
            const u32 r0 = rank + before, r1 = r0 + e;
            const u32 w0 = r0 > lo ? r0 : lo, w1 = r1 < hi ? r1 : hi;
            const bool slotted = EQ_SLOTS && t < t1 && !(eraw & EQ_UNSLOTTED) && tile_cnt[t] + e <= (u32)ct;
            const u32 g = w1 > w0 && slotted ? w1 - w0 : 0u;
            gbase[threadIdx.x] = block_exclusive_scan(g, sums, &gsum);
            tbase[threadIdx.x] = before;
            from_mem[threadIdx.x] = w1 > w0 && !slotted;
            __syncthreads();
            const int ntb = (int)(t1 - tb < (i64)blockDim.x ? t1 - tb : (i64)blockDim.x);
            for (u32 f = threadIdx.x; f < gsum; f += blockDim.x) {
                int x = 0;
#pragma unroll
                for (int step = NT / 2; step > 0; step >>= 1)
                    if (x + step < ntb && gbase[x + step] <= f) x += step;
                const u32 xr0 = rank + tbase[x], xw0 = xr0 > lo ? xr0 : lo, d = f - gbase[x];
                const i64 slot = (tb + x) * ct + (ct - 1) - (i64)(xw0 - xr0 + d);
                cs.put(total + (xw0 - lo) + d, cand_key[slot], (u32)(tb + x - t0) * TILE + cand_off[slot], largest);
            }
            for (int x = 0; x < ntb; x++) {
                if (from_mem[x]) {
                    const u32 xr0 = rank + tbase[x];
                    const i64 a = (tb + x - t0) * TILE;
                    const int n = (int)(len - a < TILE ? len - a : TILE);
                    const u32 out0 = (u32)total + (xr0 > lo ? xr0 - lo : 0u);
                    tile_append(seg, a, n, th, false, xr0, lo, need, out0, cs, largest, cnt, sums);
                }
            }
            rank += sum;
            __syncthreads();
        }
        // Candidates placed in any order (`ordered` 0: fast ties, unsorted rows) need no merge.
        for (u64 j = threadIdx.x; j < kk; j += blockDim.x) {
            const u32 p = pos[j];
            const u64 o = !ordered  ? j
                          : j < total ? j + lower_bound(pos + total, 0u, (u32)need, p)
                                      : (j - total) + lower_bound(pos, 0u, (u32)total, p);
            e.put_key(cs.key(j, seg), (i64)p, row + (i64)o);
        }
    } else {
        const MemRad src{seg, largest};
        const Sel sel = block_radix_select(src, len, kk, h, ctl);
        const u64 lo = larger_index ? sel.ties - sel.remaining : 0;
        block_compact(src, len, sel, lo, 0, 0, [&](i64 i, u64 o) { e.put(st + i, i, row + (i64)o); }, cnt, sums);
    }
}

// Two builds of the candidate kernel, chosen by the host (`cand_kernel`) for the fewer waves
// of blocks. `cand`: 8-byte candidates for 32-bit keys, registers capped for three 256-thread
// blocks per SM; 16-bit keys keep their radix and position only (6 bytes, the key recovered
// from the radix: NOKEY), not converted in every pass, at four blocks per SM; selection passes
// unrolled by 4 (further only grew the code, whose instruction fetches stalled it); 8-bit keys
// spilled with radixes and keep their keys. `cand_rad`: radixes kept beside the keys (no
// conversion in each pass), 16 reads in flight, at most 128 registers (two blocks per SM,
// which the host assumes and the assembly check holds it to); faster per block, so it runs
// wherever the compact build would not save a wave. `cand_wide`: `cand_rad` with 512 threads,
// for at most one segment per SM, where a 256-thread block leaves the SM mostly idle and each
// block's latency is the time.
#define CAND_ARGS                                                                                            \
    const K* __restrict__ keys, const i64* __restrict__ seg_start, const i64* __restrict__ lens,              \
        const i64* __restrict__ kk_arr, const i64* __restrict__ tile_ptr, const i64* __restrict__ tile_start, \
        const u32* __restrict__ tile_cnt, const u32* __restrict__ tile_eq, const u64* __restrict__ thresh,   \
        const K* __restrict__ cand_key, const u16* __restrict__ cand_off, int ct, int cap, K* out_keys,       \
        void* out_idx, i64 width, int idx64, int largest, int larger_index, int ordered
#define CAND_CALL(RAD, NT, U, NOKEY)                                                                         \
    cand_body<RAD, NT, U, NOKEY>(keys, seg_start, lens, kk_arr, tile_ptr, tile_start, tile_cnt, tile_eq, thresh, \
                                 cand_key, cand_off, ct, cap, out_keys, out_idx, width, idx64, largest,         \
                                 larger_index, ordered)
extern "C" __global__ void __launch_bounds__(256, KBITS == 64 ? 2 : KBITS == 16 ? 4 : 3) ENTRY(cand)(CAND_ARGS) {
    CAND_CALL(KBITS == 16, 256, 4, KBITS == 16);
}
extern "C" __global__ void __launch_bounds__(256, 1) ENTRY(cand_rad)(CAND_ARGS) { CAND_CALL(true, 256, 16, false); }
extern "C" __global__ void __launch_bounds__(512, 1) ENTRY(cand_wide)(CAND_ARGS) { CAND_CALL(true, 512, 16, false); }

// out_vals[s, j] = vals[segment start + out_idx[s, j]] for j < kk[s]: the value payload of
// every selected key, after any selection kernel.
template <int VS>
__device__ __forceinline__ void values_row(const void* vals, const i64* seg_start, const i64* kk, i64 nseg,
                                           i64 width, const void* out_idx, void* out_vals, int idx64) {
    const i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (e < nseg * width) {
        const i64 s = e / width, j = e % width;
        if (j < kk[s]) {
            const i64 i = idx64 ? ((const i64*)out_idx)[e] : (i64)((const int*)out_idx)[e];
            copy_val<VS>(out_vals, e, vals, seg_start[s] + i);
        }
    }
}

#define VALUES(VS)                                                                                           \
    extern "C" __global__ void __launch_bounds__(256) PASTE(ENTRY(values), _v##VS)(                         \
        const void* vals, const i64* seg_start, const i64* kk, i64 nseg, i64 width, const void* out_idx,     \
        void* out_vals, int idx64) {                                                                         \
        values_row<VS>(vals, seg_start, kk, nseg, width, out_idx, out_vals, idx64);                          \
    }
VALUES(1)
VALUES(2)
VALUES(4)
VALUES(8)

// Positions kk..width of every row: the padding key, index -1 (and value 0).
extern "C" __global__ void __launch_bounds__(256)
    ENTRY(pad)(i64 nseg, i64 width, const i64* __restrict__ kk, K pad_key, K* out_keys, void* out_idx,
               void* out_vals, int vs, int idx64) {
    const i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (e < nseg * width) {
        const i64 s = e / width, j = e % width;
        if (j >= kk[s]) {
            out_keys[e] = pad_key;
            store_index(out_idx, idx64, e, -1);
            if (vs == 1) ((unsigned char*)out_vals)[e] = 0;
            if (vs == 2) ((unsigned short*)out_vals)[e] = 0;
            if (vs == 4) ((unsigned int*)out_vals)[e] = 0;
            if (vs == 8) ((u64*)out_vals)[e] = 0;
        }
    }
}

// Split path: the second stage's rows hold positions among the first stage's rows (the
// winners of each chunk, a row of w1 per chunk, segment s's from cand_start[s]); map them
// back to positions in the segment through the first stage's indices and each chunk's start
// relative to its segment.
extern "C" __global__ void __launch_bounds__(256)
    ENTRY(remap)(i64 nseg, i64 width, const i64* __restrict__ kk, const i64* __restrict__ cand_start,
                 const K* __restrict__ keys2, const i64* __restrict__ idx2, const int* __restrict__ idx1,
                 i64 w1, const i64* __restrict__ chunk_rel, K* out_keys, void* out_idx, int idx64) {
    const i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (e < nseg * width) {
        const i64 s = e / width, j = e % width;
        if (j < kk[s]) {
            const i64 p = cand_start[s] + idx2[e];
            out_keys[e] = keys2[e];
            store_index(out_idx, idx64, e, chunk_rel[p / w1] + (i64)idx1[p]);
        }
    }
}

// One block per row: bitonic sort of (radix descending, slot ascending) over P = a power of
// two >= kk slots in dynamic shared memory (P * 12 bytes), writing the slot order to perm.
// Slot order equals position order in the unsorted output, so ties end by position.
extern "C" __global__ void __launch_bounds__(256)
    ENTRY(sort)(const K* __restrict__ out_keys, const i64* __restrict__ kk, i64 width, int P, int largest,
                int* perm) {
    extern __shared__ u64 smem[];
    u64* r = smem;
    u32* slot = (u32*)(smem + P);
    const i64 s = blockIdx.x;
    const int n = (int)kk[s];
    for (int j = threadIdx.x; j < P; j += blockDim.x) {
        // Slots past kk sort last: radix 0 and a slot above every real one.
        r[j] = j < n ? directed(out_keys[s * width + j], largest) : 0;
        slot[j] = j < n ? (u32)j : (u32)(P + j);
    }
    __syncthreads();
    for (int size = 2; size <= P; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            for (int j = threadIdx.x; j < P; j += blockDim.x) {
                const int partner = j ^ stride;
                if (partner > j) {
                    // "first" = should come first: larger radix, then smaller slot.
                    const bool j_first = r[j] > r[partner] || (r[j] == r[partner] && slot[j] < slot[partner]);
                    const bool up = (j & size) == 0;
                    if (up != j_first) {
                        const u64 tr = r[j];
                        r[j] = r[partner];
                        r[partner] = tr;
                        const u32 ts = slot[j];
                        slot[j] = slot[partner];
                        slot[partner] = ts;
                    }
                }
            }
            __syncthreads();
        }
    }
    for (int j = threadIdx.x; j < n; j += blockDim.x) perm[s * width + j] = (int)slot[j];
}

// out[s, j] = in[s, perm[s, j]] for j < kk[s].
template <int VS>
__device__ __forceinline__ void gather_row(const K* in_keys, const void* in_idx, const void* in_vals,
                                           const int* perm, const i64* kk, i64 nseg, i64 width, K* out_keys,
                                           void* out_idx, void* out_vals, int idx64) {
    const i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (e < nseg * width) {
        const i64 s = e / width, j = e % width;
        if (j < kk[s]) {
            const i64 src = s * width + perm[e];
            out_keys[e] = in_keys[src];
            if (idx64)
                ((i64*)out_idx)[e] = ((const i64*)in_idx)[src];
            else
                ((int*)out_idx)[e] = ((const int*)in_idx)[src];
            copy_val<VS>(out_vals, e, in_vals, src);
        }
    }
}

#define GATHER(VS)                                                                                             \
    extern "C" __global__ void __launch_bounds__(256) PASTE(ENTRY(gather), _v##VS)(                           \
        const K* in_keys, const void* in_idx, const void* in_vals, const int* perm, const i64* kk, i64 nseg,    \
        i64 width, K* out_keys, void* out_idx, void* out_vals, int idx64) {                                    \
        gather_row<VS>(in_keys, in_idx, in_vals, perm, kk, nseg, width, out_keys, out_idx, out_vals, idx64); \
    }
GATHER(0)
GATHER(1)
GATHER(2)
GATHER(4)
GATHER(8)
