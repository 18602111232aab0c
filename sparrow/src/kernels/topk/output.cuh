// Top-k, the output stages every path shares: the value payload, padding, the split path's
// remap of positions, and the sorted output's sort and gather.

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
