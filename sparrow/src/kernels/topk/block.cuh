// Top-k, the on-chip path with the segment's radixes in shared memory: one block per segment
// of at most BLOCK_MAX keys (rblock.cuh keeps them in registers).

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
