// Top-k, the tiled path: digit passes over tiles of any segment (init, hist, pick), then
// count, scan and the ordered write.

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
