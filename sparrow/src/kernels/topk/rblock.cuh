// Top-k, the on-chip path with the segment's radixes in registers (rblock); after filter.cuh,
// whose word loads it shares.

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
