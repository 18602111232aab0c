// Top-k, the filter path's last step: one block per segment selects among its candidates.

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
