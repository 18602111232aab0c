// Top-k: block-wide radix selection and ordered compaction, shared by the on-chip paths
// (block, rblock, the candidate kernel) and the tiled path's write.

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
