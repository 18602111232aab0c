// Top-k, the filter path's first two steps: the sampled threshold (thresh) and the tile
// filter (filter, filter_tma on sm_90).

// ---- The filter path ----

// SAMPLE (keys sampled per segment) comes from the host (kernels/sizes.rs).

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
// FT_THREADS and FT_MAX_STAGES come from the host (kernels/sizes.rs).

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
