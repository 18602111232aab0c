// Top-k, the cluster path (sm_90): one kernel for a segment too long for one block. A cluster
// of blocks owns a segment, each block a slice of it in position order. Each block copies its
// slice into shared memory once (one bulk copy of the 16-byte aligned body; the threads load
// the few keys before and after it), and every selection pass then reads shared memory only.
// The cluster agrees on the threshold through distributed shared memory: each digit pass
// histograms every block's slice into its own shared memory, and every block adds up the
// cluster's histograms and finds the same bucket, so no block waits for a leader. Each block
// then writes its own winners straight into the output row, at the offset the blocks before it
// in the cluster fill, in position order; the tie-break's window of tied keys is counted in
// the cluster's position order too, so the output is the same on every run.
// Launched with clusters of CL blocks along x, CL_THREADS threads each, a segment per cluster
// (blockIdx.x / CL), and the slice's keys (plus 16 bytes) of dynamic shared memory.

// Radixes computed from keys in shared memory.
struct SmemKeyRad {
    static constexpr int UNROLL = 8;
    typedef int I;
    const K* k;
    int largest;
    __device__ __forceinline__ R operator()(int i) const { return directed(k[i], largest); }
};

#if __CUDA_ARCH__ >= 900
// Copies keys[0, n) into kbuf, where kbuf sits at the same offset from a 16-byte boundary as
// keys: the aligned body by one bulk copy, the head and tail by the threads. Every thread must
// call it; on return every key is in shared memory and visible to the block.
__device__ __forceinline__ void cluster_load(const K* keys, int n, K* kbuf, u64* bar) {
    const u32 mis = (u32)((u64)keys & 15u);
    const int head = min((int)(((16u - mis) & 15u) / sizeof(K)), n);
    const u32 body = (u32)((n - head) * (int)sizeof(K)) & ~15u;
    const int tail0 = head + (int)(body / sizeof(K));
    if (threadIdx.x == 0) {
        mbar_init(bar, 1);
        fence_mbar_init();
    }
    __syncthreads();
    if (threadIdx.x == 0 && body > 0) {
        mbar_arrive_expect_tx(bar, body);
        bulk_copy_g2s(kbuf + head, keys + head, body, bar);
    }
    for (int i = threadIdx.x; i < head; i += blockDim.x) kbuf[i] = keys[i];
    for (int i = tail0 + threadIdx.x; i < n; i += blockDim.x) kbuf[i] = keys[i];
    if (body > 0)
        while (!mbar_try_wait(bar, 0)) {
        }
    __syncthreads();
}

// Word `w` of `share` in the shared memory of the cluster's block `rank`; u32 the same for
// one 32-bit word.
__device__ __forceinline__ u64 cluster_word(const u64* share, int w, u32 rank) {
    u32 a;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(smem_addr(share + w)), "r"(rank));
    u64 v;
    asm volatile("ld.shared::cluster.u64 %0, [%1];" : "=l"(v) : "r"(a) : "memory");
    return v;
}
__device__ __forceinline__ u32 cluster_u32(const u32* p, u32 rank) {
    u32 a;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(smem_addr(p)), "r"(rank));
    u32 v;
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
    return v;
}
__device__ __forceinline__ u32 cluster_size() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
#endif

extern "C" __global__ void __launch_bounds__(CL_THREADS)
    ENTRY(cluster)(const K* __restrict__ keys, const i64* __restrict__ seg_start, const i64* __restrict__ lens,
                   const i64* __restrict__ kk_arr, K* out_keys, void* out_idx, i64 width, int idx64, int largest,
                   int larger_index) {
#if __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) u64 smem_raw[];
    __shared__ u32 h[2][256];
    __shared__ u32 hs[256];
    __shared__ u32 sums[32];
    __shared__ u32 cnt[CL_THREADS];
    __shared__ u64 ctl[CTL_WORDS];
    // What the other blocks read: this block's AND and OR of its radixes, then its keys above
    // the final prefix and tied with it.
    __shared__ u64 share[4];
    __shared__ u64 bar;
    const u32 ncl = cluster_size(), rank = cluster_rank();
    const i64 s = blockIdx.x / ncl;
    const i64 len = lens[s];
    const u64 kk = (u64)kk_arr[s];
    // The whole cluster shares the segment, so it leaves together, before any cluster barrier.
    if (kk == 0 || len == 0) return;
    const i64 per = (len + ncl - 1) / ncl;
    const i64 a = min((i64)rank * per, len);
    const int n = (int)(min(a + per, len) - a);
    const K* src_keys = keys + seg_start[s] + a;
    K* kbuf = (K*)((char*)smem_raw + ((u64)src_keys & 15u));
    cluster_load(src_keys, n, kbuf, &bar);
    const SmemKeyRad src{kbuf, largest};
    const int lane = threadIdx.x & 31;

    Sel st;
    st.prefix = 0;
    st.remaining = kk;
    st.ties = (u64)len;
    st.shift = KBITS;
    // This block's keys above the prefix so far, and tied with it (all of them until a pass
    // narrows the prefix).
    u64 my_gt = 0, my_tie = (u64)n;
    if (kk < (u64)len) {
        R am = ~(R)0, om = 0;
        for_items(src, n, [&](int, R r) {
            am &= r;
            om |= r;
        });
        block_and_or(am, om, ctl);
        if (threadIdx.x == 0) {
            share[0] = am;
            share[1] = om;
        }
        cluster_sync();
        if (threadIdx.x < 32) {
            R ca = ~(R)0, co = 0;
            if ((u32)lane < ncl) {
                ca = (R)cluster_word(share, 0, lane);
                co = (R)cluster_word(share, 1, lane);
            }
#pragma unroll
            for (int off = 16; off > 0; off >>= 1) {
                ca &= (R)__shfl_xor_sync(0xffffffffu, (u64)ca, off);
                co |= (R)__shfl_xor_sync(0xffffffffu, (u64)co, off);
            }
            if (lane == 0) {
                ctl[0] = ca;
                ctl[1] = co;
            }
        }
        __syncthreads();
        const R ca = (R)ctl[0], co = (R)ctl[1];
        __syncthreads();
        const u64 diff = (u64)((ca ^ co) & width_mask());
        if (diff == 0) {
            st.prefix = ca;
            st.shift = 0;
        } else {
            st.shift = 64 - __clzll((long long)diff);
            st.prefix = hi(ca, st.shift);
        }
        // Each pass histograms into the other buffer than the pass before, so a block clears
        // the buffer the others read two passes ago, which they finished before the barrier of
        // the pass between.
        for (int p = 0; st.shift > 0; p++) {
            const int bits = st.shift < 8 ? st.shift : 8;
            const int digit = st.shift - bits;
            u32* hl = h[p & 1];
            for (int b = threadIdx.x; b < 256; b += blockDim.x) hl[b] = 0;
            __syncthreads();
            for_items(src, n, [&](int, R r) {
                if (hi(r, st.shift) == st.prefix) atomicAdd(&hl[(u32)(r >> digit) & ((1u << bits) - 1u)], 1u);
            });
            cluster_sync();
            for (int b = threadIdx.x; b < 256; b += blockDim.x) {
                u32 t = 0;
                for (u32 q = 0; q < ncl; q++) t += cluster_u32(&hl[b], q);
                hs[b] = t;
            }
            __syncthreads();
            if (threadIdx.x < 32) {
                find_bin(hs, st.remaining, ctl, lane);
                __syncwarp();
                // This block's keys in the bins above the chosen one, and in it.
                const u32 chosen = (u32)ctl[0];
                u32 above = 0;
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    const u32 bin = 255u - (u32)(8 * lane + j);
                    if (bin > chosen) above += hl[bin];
                }
#pragma unroll
                for (int off = 16; off > 0; off >>= 1) above += __shfl_xor_sync(0xffffffffu, above, off);
                if (lane == 0) {
                    ctl[3] = above;
                    ctl[4] = hl[chosen];
                }
            }
            __syncthreads();
            const u64 b = ctl[0], above = ctl[1], t = ctl[2];
            my_gt += ctl[3];
            my_tie = ctl[4];
            __syncthreads();
            st.remaining -= above;
            st.prefix = (st.prefix << bits) | (R)b;
            st.shift = digit;
            st.ties = t;
            if (t == st.remaining) break;
        }
    }
    // Where this block's winners go: after the winners of the blocks before it.
    if (threadIdx.x == 0) {
        share[2] = my_gt;
        share[3] = my_tie;
    }
    cluster_sync();
    if (threadIdx.x < 32) {
        u64 g = 0, t = 0;
        if ((u32)lane < rank) {
            g = cluster_word(share, 2, lane);
            t = cluster_word(share, 3, lane);
        }
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            g += __shfl_xor_sync(0xffffffffu, g, off);
            t += __shfl_xor_sync(0xffffffffu, t, off);
        }
        if (lane == 0) {
            ctl[5] = g;
            ctl[6] = t;
        }
    }
    __syncthreads();
    // No block reads another's shared memory after this; the matching wait at the end keeps
    // every block's shared memory alive until all have read it.
    cluster_arrive();
    const u64 gt_before = ctl[5], ties_before = ctl[6];
    const u64 lo = larger_index ? st.ties - st.remaining : 0;
    const u64 hi_w = lo + st.remaining;
    // Tied keys of the blocks before this one that fall in the window [lo, hi_w).
    const u64 taken_before = (ties_before < hi_w ? ties_before : hi_w) - (ties_before < lo ? ties_before : lo);
    const i64 row = s * width;
    const Writer e{keys, out_keys, out_idx, idx64};
    block_compact(
        src, n, st, lo, gt_before + taken_before, ties_before,
        [&](int i, u64 slot) { e.put_key(kbuf[i], a + i, row + (i64)slot); }, cnt, sums);
    cluster_wait();
#endif
}
