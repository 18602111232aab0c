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
// keeps the segment's radixes in shared memory and runs every digit pass and the ordered
// compaction there (topk_block), reading the keys from memory once.
// Every thread of a block reaches every barrier: blocks whose segment is done still run the
// barriers with no keys.
#include "common.cuh"

#define TILE 4096
#define KBITS (int)(sizeof(TOPK_U) * 8)

#define PASTE2(a, b) a##b
#define PASTE(a, b) PASTE2(a, b)
#define ENTRY(name) PASTE(PASTE(topk_, name), PASTE(_, TOPK_NAME))

typedef TOPK_U K;

__device__ __forceinline__ u64 width_mask() { return KBITS == 64 ? ~0ull : ((1ull << KBITS) - 1ull); }

// The order-preserving radix: NaN of any sign highest, -0 == +0, signed by value.
__device__ __forceinline__ u64 radix_of(K b) {
    const u64 x = (u64)b;
    const u64 sign = 1ull << (KBITS - 1);
    if (TOPK_KIND == 0) {
        const u64 mag = x & ~sign & width_mask();
        if (mag > (u64)TOPK_INF) return width_mask();
        if (mag == 0) return sign;
        return (x & sign) ? (~x & width_mask()) : (x | sign);
    }
    if (TOPK_KIND == 1) return x ^ sign;
    return x;
}

__device__ __forceinline__ u64 directed(K b, int largest) {
    const u64 r = radix_of(b);
    return largest ? r : (~r & width_mask());
}

__device__ __forceinline__ u64 hi(u64 r, int s) { return s >= 64 ? 0ull : (r >> s); }

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
            const u64 r = directed(keys[i], largest);
            if (hi(r, digit + 8) == p) atomicAdd(&h[(r >> digit) & 255], 1u);
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

template <int VS>
__device__ __forceinline__ void write_tile(const K* __restrict__ keys, const void* __restrict__ vals,
                                           const int* __restrict__ tile_seg, const i64* __restrict__ tile_start,
                                           const i64* __restrict__ tile_end, const i64* __restrict__ seg_start,
                                           const u64* __restrict__ prefix, const int* __restrict__ shift,
                                           const u64* __restrict__ remaining, const u64* __restrict__ lo_arr,
                                           const u64* __restrict__ tile_out, const u64* __restrict__ tile_rank,
                                           K* out_keys, void* out_idx, void* out_vals, i64 width, int idx64,
                                           int largest) {
    __shared__ u32 sums[32];
    const i64 t = blockIdx.x;
    const int s = tile_seg[t];
    const u64 p = prefix[s], need = remaining[s], lo = lo_arr[s];
    const int sh = shift[s];
    const i64 row = (i64)s * width;
    const i64 st = seg_start[s];
    u64 out = tile_out[t], rank = tile_rank[t];
    // Rounds of blockDim keys: every thread runs every round (and both scans in it).
    for (i64 base = tile_start[t]; base < tile_end[t]; base += blockDim.x) {
        const i64 i = base + threadIdx.x;
        u32 is_gt = 0, is_tie = 0;
        K key = 0;
        if (i < tile_end[t]) {
            key = keys[i];
            const u64 g = hi(directed(key, largest), sh);
            is_gt = g > p;
            is_tie = g == p;
        }
        u32 total;
        const u32 tie_before = block_exclusive_scan(is_tie, sums, &total);
        const u32 round_ties = total;
        const u64 my_rank = rank + tie_before;
        const u32 sel = is_gt || (is_tie && my_rank >= lo && my_rank < lo + need);
        __syncthreads();
        const u32 sel_before = block_exclusive_scan(sel, sums, &total);
        if (sel) {
            const i64 o = row + (i64)(out + sel_before);
            out_keys[o] = key;
            store_index(out_idx, idx64, o, i - st);
            copy_val<VS>(out_vals, o, vals, i);
        }
        out += total;
        rank += round_ties;
        __syncthreads();
    }
}

#define WRITE(VS)                                                                                                  \
    extern "C" __global__ void __launch_bounds__(256) PASTE(ENTRY(write), _v##VS)(                               \
        const K* keys, const void* vals, const int* tile_seg, const i64* tile_start, const i64* tile_end,          \
        const i64* seg_start, const u64* prefix, const int* shift, const u64* remaining, const u64* lo,           \
        const u64* tile_out, const u64* tile_rank, K* out_keys, void* out_idx, void* out_vals, i64 width,         \
        int idx64, int largest) {                                                                                  \
        write_tile<VS>(keys, vals, tile_seg, tile_start, tile_end, seg_start, prefix, shift, remaining, lo,        \
                       tile_out, tile_rank, out_keys, out_idx, out_vals, width, idx64, largest);                   \
    }
WRITE(0)
WRITE(1)
WRITE(2)
WRITE(4)
WRITE(8)

// One block per segment, the segment's directed radixes in dynamic shared memory (len * 8
// bytes). The digit loop and the compaction rounds run the same number of times in every
// thread, so every barrier is reached by all.
template <int VS>
__device__ __forceinline__ void block_select(const K* __restrict__ keys, const void* __restrict__ vals,
                                             const i64* __restrict__ seg_start, const i64* __restrict__ lens,
                                             const i64* __restrict__ kk_arr, K* out_keys, void* out_idx,
                                             void* out_vals, i64 width, int idx64, int largest, int larger_index) {
    extern __shared__ u64 rad[];
    __shared__ u32 h[256];
    __shared__ u32 sums[32];
    __shared__ u64 ctl[3];
    const i64 s = blockIdx.x;
    const i64 st = seg_start[s];
    const int len = (int)lens[s];
    const u64 kk = (u64)kk_arr[s];
    for (int i = threadIdx.x; i < len; i += blockDim.x) rad[i] = directed(keys[st + i], largest);
    u64 prefix = 0, remaining = kk, ties = (u64)len;
    int shift = KBITS;
    __syncthreads();
    if (kk != 0 && kk != (u64)len) {
        for (int digit = KBITS - 8; digit >= 0; digit -= 8) {
            for (int b = threadIdx.x; b < 256; b += blockDim.x) h[b] = 0;
            __syncthreads();
            for (int i = threadIdx.x; i < len; i += blockDim.x) {
                const u64 r = rad[i];
                if (hi(r, digit + 8) == prefix) atomicAdd(&h[(r >> digit) & 255], 1u);
            }
            __syncthreads();
            if (threadIdx.x < 32) {
                // Lane l owns bins 255 - 8l down to 248 - 8l (descending order of key).
                const int lane = threadIdx.x;
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
            __syncthreads();
            const u64 b = ctl[0], above = ctl[1], t = ctl[2];
            remaining -= above;
            prefix = (prefix << 8) | b;
            shift = digit;
            ties = t;
            __syncthreads();
            if (t == remaining) break;
        }
    }
    const u64 need = remaining;
    const u64 lo = larger_index ? ties - need : 0;
    const i64 row = s * width;
    u64 out = 0, rank = 0;
    for (int base = 0; base < len; base += blockDim.x) {
        const int i = base + threadIdx.x;
        u32 is_gt = 0, is_tie = 0;
        if (i < len) {
            const u64 g = hi(rad[i], shift);
            is_gt = g > prefix;
            is_tie = g == prefix;
        }
        u32 total;
        const u32 tie_before = block_exclusive_scan(is_tie, sums, &total);
        const u32 round_ties = total;
        const u64 my_rank = rank + tie_before;
        const u32 sel = is_gt || (is_tie && my_rank >= lo && my_rank < lo + need);
        __syncthreads();
        const u32 sel_before = block_exclusive_scan(sel, sums, &total);
        if (sel) {
            const i64 o = row + (i64)(out + sel_before);
            out_keys[o] = keys[st + i];
            store_index(out_idx, idx64, o, i);
            copy_val<VS>(out_vals, o, vals, st + i);
        }
        out += total;
        rank += round_ties;
        __syncthreads();
    }
}

#define BLOCK(VS)                                                                                               \
    extern "C" __global__ void __launch_bounds__(256) PASTE(ENTRY(block), _v##VS)(                             \
        const K* keys, const void* vals, const i64* seg_start, const i64* lens, const i64* kk, K* out_keys,    \
        void* out_idx, void* out_vals, i64 width, int idx64, int largest, int larger_index) {                  \
        block_select<VS>(keys, vals, seg_start, lens, kk, out_keys, out_idx, out_vals, width, idx64, largest,  \
                         larger_index);                                                                         \
    }
BLOCK(0)
BLOCK(1)
BLOCK(2)
BLOCK(4)
BLOCK(8)

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
