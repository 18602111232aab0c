// Top-k, the cluster path (sm_90): one kernel for a segment too long for one block, after
// rblock.cuh (the same register layout) and filter.cuh (word_key). A cluster of blocks owns a
// segment, each block a slice of it in position order, and each thread of a block a run of N
// consecutive keys of the slice, read once from memory (16-byte loads where the run is whole
// and aligned) and kept as directed radixes in registers.
// The cluster agrees on the threshold through distributed shared memory: each digit pass
// histograms every block's run into its own shared memory, and every block adds up the
// cluster's histograms and finds the same bucket, so no block waits for a leader. The same
// gather adds the histograms of the blocks before this one, so each block knows how many
// winners and tied keys precede its slice without another exchange: it then writes its own
// winners straight into the output row in position order, and the tie-break's window of tied
// keys is counted in the cluster's position order, so the output is the same on every run.
// Launched with clusters of C blocks along x (the plan's cluster_ctas), CL_THREADS threads
// each, a segment per cluster (blockIdx.x / C), no dynamic shared memory.

#if __CUDA_ARCH__ >= 900
// Word `p` in the shared memory of the cluster's block `rank`.
__device__ __forceinline__ u32 cluster_u32(const u32* p, u32 rank) {
    u32 a, v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(smem_addr(p)), "r"(rank));
    asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory");
    return v;
}
__device__ __forceinline__ u64 cluster_u64(const u64* p, u32 rank) {
    u32 a;
    u64 v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(smem_addr(p)), "r"(rank));
    asm volatile("ld.shared::cluster.u64 %0, [%1];" : "=l"(v) : "r"(a) : "memory");
    return v;
}
__device__ __forceinline__ u32 cluster_size() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }

// The AND and the OR of the warp's (a, o), in every lane.
__device__ __forceinline__ void warp_and_or(R& a, R& o) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        a &= __shfl_xor_sync(0xffffffffu, a, off);
        o |= __shfl_xor_sync(0xffffffffu, o, off);
    }
}

// Up to 16 blocks per cluster (the non-portable limit on sm_90).
#define CL_MAX 16

template <int N>
__device__ __forceinline__ void cluster_select(const K* __restrict__ keys, const i64* __restrict__ seg_start,
                                               const i64* __restrict__ lens, const i64* __restrict__ kk_arr,
                                               K* out_keys, void* out_idx, i64 width, int idx64, int largest,
                                               int larger_index) {
    __shared__ u32 h[2][256];
    __shared__ u32 hs[256];
    __shared__ u32 pre[256];
    __shared__ u32 sums[32];
    __shared__ u64 ctl[4];
    __shared__ R red[64];
    // This block's AND and OR of its radixes, for the other blocks.
    __shared__ u64 share[2];
    const u32 ncl = cluster_size(), rank = cluster_rank();
    const i64 s = blockIdx.x / ncl;
    const i64 len = lens[s];
    const u64 kk = (u64)kk_arr[s];
    // The whole cluster shares the segment, so it leaves together, before any cluster barrier.
    if (kk == 0 || len == 0) return;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const i64 per = (len + ncl - 1) / ncl;
    const i64 a0 = min((i64)rank * per, len);
    const int n = (int)(min(a0 + per, len) - a0);
    const i64 st = seg_start[s] + a0;
    const int first = threadIdx.x * N;
    const int nv = n - first < 0 ? 0 : (n - first > N ? N : n - first);
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
    u64 remaining = kk, ties = (u64)len;
    int shift = KBITS;
    R prefix = 0;
    // Keys of the blocks before this one above the prefix, and tied with it: until a pass
    // narrows the prefix, every key ties.
    u64 gt_before = 0, ties_before = (u64)a0;
    if (kk < (u64)len) {
        R a = ~(R)0, o = 0;
#pragma unroll
        for (int j = 0; j < N; j++) {
            if (j < nv) {
                a &= r[j];
                o |= r[j];
            }
        }
        warp_and_or(a, o);
        if (lane == 0) {
            red[w] = a;
            red[32 + w] = o;
        }
        __syncthreads();
        if (w == 0) {
            a = lane < nw ? red[lane] : ~(R)0;
            o = lane < nw ? red[32 + lane] : (R)0;
            warp_and_or(a, o);
            if (lane == 0) {
                share[0] = a;
                share[1] = o;
            }
        }
        cluster_sync();
        if (w == 0) {
            a = ~(R)0;
            o = 0;
            if ((u32)lane < ncl) {
                a = (R)cluster_u64(share, lane);
                o = (R)cluster_u64(share + 1, lane);
            }
            warp_and_or(a, o);
            if (lane == 0) {
                red[0] = a;
                red[32] = o;
            }
        }
        __syncthreads();
        a = red[0];
        o = red[32];
        const u64 diff = (u64)((a ^ o) & width_mask());
        if (diff == 0) {
            prefix = a;
            shift = 0;
        } else {
            shift = 64 - __clzll((long long)diff);
            prefix = hi(a, shift);
        }
        // Each pass histograms into the other buffer than the pass before, so a block clears
        // the buffer the others read two passes ago, which they finished before the barrier of
        // the pass between.
        for (int p = 0; shift > 0; p++) {
            const int bits = shift < 8 ? shift : 8;
            const int digit = shift - bits;
            u32* hl = h[p & 1];
            if (threadIdx.x < 256) hl[threadIdx.x] = 0;
            __syncthreads();
#pragma unroll
            for (int j = 0; j < N; j++)
                if (j < nv && hi(r[j], shift) == prefix) atomicAdd(&hl[(u32)(r[j] >> digit) & ((1u << bits) - 1u)], 1u);
            cluster_sync();
            if (threadIdx.x < 256) {
                // Every block's count of this bin, all loads in flight before the sums.
                u32 c[CL_MAX];
#pragma unroll
                for (int q = 0; q < CL_MAX; q++) c[q] = (u32)q < ncl ? cluster_u32(&hl[threadIdx.x], q) : 0u;
                u32 all = 0, before = 0;
#pragma unroll
                for (int q = 0; q < CL_MAX; q++) {
                    all += c[q];
                    before += (u32)q < rank ? c[q] : 0u;
                }
                hs[threadIdx.x] = all;
                pre[threadIdx.x] = before;
            }
            __syncthreads();
            if (w == 0) {
                find_bin(hs, remaining, ctl, lane);
                __syncwarp();
                // The blocks before this one: their keys in the bins above the chosen one.
                const u32 chosen = (u32)ctl[0];
                u32 above = 0;
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    const u32 bin = 255u - (u32)(8 * lane + j);
                    if (bin > chosen) above += pre[bin];
                }
#pragma unroll
                for (int off = 16; off > 0; off >>= 1) above += __shfl_xor_sync(0xffffffffu, above, off);
                if (lane == 0) ctl[3] = above;
            }
            __syncthreads();
            const u64 b = ctl[0], above = ctl[1], t = ctl[2];
            gt_before += ctl[3];
            ties_before = pre[b];
            remaining -= above;
            prefix = (prefix << bits) | (R)b;
            shift = digit;
            ties = t;
            if (t == remaining) break;
        }
    }
    // No block reads another's shared memory after this; the wait at the end keeps every
    // block's shared memory alive until all have read it.
    cluster_arrive();
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
    const u64 lo = larger_index ? ties - remaining : 0;
    const u64 hi_w = lo + remaining;
    // Tied keys of the blocks before this one that fall in the window [lo, hi_w) (all of them
    // when every tied key is taken).
    const u64 taken_before = remaining >= ties ? ties_before
                                               : (ties_before < hi_w ? ties_before : hi_w) -
                                                     (ties_before < lo ? ties_before : lo);
    if (remaining >= ties) {
        sel |= tie;
    } else {
        // The tie window in the cluster's position order.
        u64 rank_t = ties_before + block_exclusive_scan(__popc(tie), sums, &total);
#pragma unroll
        for (int j = 0; j < N; j++) {
            if ((tie >> j) & 1u) {
                if (rank_t >= lo && rank_t < hi_w) sel |= 1u << j;
                rank_t++;
            }
        }
        __syncthreads();
    }
    u64 slot = gt_before + taken_before + block_exclusive_scan(__popc(sel), sums, &total);
    if (sel) {
        const i64 row = s * width;
#pragma unroll
        for (int j = 0; j < N; j++) {
            if ((sel >> j) & 1u) {
                out_keys[row + (i64)slot] = keys[st + first + j];
                store_index(out_idx, idx64, row + (i64)slot, a0 + first + j);
                slot++;
            }
        }
    }
    cluster_wait();
}
#endif

#define CLUSTER(N)                                                                                          \
    extern "C" __global__ void __launch_bounds__(CL_THREADS) PASTE(ENTRY(cluster), _v##N)(                  \
        const K* __restrict__ keys, const i64* __restrict__ seg_start, const i64* __restrict__ lens,       \
        const i64* __restrict__ kk_arr, K* out_keys, void* out_idx, i64 width, int idx64, int largest,      \
        int larger_index) {                                                                                 \
        CLUSTER_BODY(N)                                                                                     \
    }
#if __CUDA_ARCH__ >= 900
#define CLUSTER_BODY(N) \
    cluster_select<N>(keys, seg_start, lens, kk_arr, out_keys, out_idx, width, idx64, largest, larger_index);
#else
#define CLUSTER_BODY(N)
#endif
CLUSTER(8)
CLUSTER(12)
CLUSTER(16)
