// SpMM/SpMV, sliced: SpMV over column slices of x staged in shared memory. Included by spmm.cu.

// f32 SpMV over the column-slice layout (matrix::slices, scattered columns): x copied into shared
// memory a slice at a time, so an entry reads its x there instead of gathering a sector from
// L2. A group of SLICE_MEMBERS blocks owns a run of row pieces; each member keeps sums for all
// of them in shared memory and takes every SLICE_MEMBERS-th of the group's stages, so the
// group copies x once between them. A stage is one slice of x, the records in it (column in
// the slice << 16 | piece, and the value) and its descriptor (each warp's first record with
// its step width, the end, the slice). Each warp adds its records in steps in which no piece
// appears twice (the layout deals them so), a lane's product straight into its piece's sum:
// every sum takes its additions in one fixed order. With `bulk` (sm_90, x contiguous and
// 16-byte aligned) a group is a cluster: warp SLICE_WARPS copies SLICE_XB stages ahead by bulk
// copies, every thread of the others releases each stage by an mbarrier arrival, so no warp
// waits on another, and at the end each member adds a share of the pieces' sums over the
// members in rank order through distributed shared memory. Otherwise one block a group loads
// each of its members' stages in turn and waits on barriers. Pieces of cut rows go to
// `slots`, summed in order by spmv_cut.
// The layout's sizes come from the host as -D definitions (kernels/sizes.rs): SLICE_WARPS,
// SLICE_MEMBERS, SLICE_STAGE (records a stage), SLICE_DESC (descriptor words), SLICE_SS_SHIFT,
// SLICE_POS and SLICE_PAD (the record encoding), SLICE_COLS (columns of x a stage holds, 32 KB)
// and SLICE_XB (stages in flight). A stage's bytes: x's slice, the records (8 bytes each), the
// descriptor, rounded up to 128 so every stage's copies land on 128-byte lines.
#if !defined(SLICE_WARPS) || !defined(SLICE_MEMBERS) || !defined(SLICE_STAGE) || !defined(SLICE_DESC) || \
    !defined(SLICE_SS_SHIFT) || !defined(SLICE_POS) || !defined(SLICE_PAD) || !defined(SLICE_COLS) || !defined(SLICE_XB)
#error "the column slices' sizes are passed by the host (kernels/sizes.rs)"
#endif
#define SLICE_THREADS (32 * (SLICE_WARPS + 1))
#define SLICE_STAGE_BYTES ((SLICE_COLS * 4 + SLICE_STAGE * 8 + SLICE_DESC * 4 + 127) / 128 * 128)
// Warp w's records of one stage (its descriptor `d` in shared memory): (column in the slice
// << 16 | piece, the value's bits).
__device__ __forceinline__ void slice_sums(const u32* d, int w, int lane, const float* xs, const uint2* rs,
                                           float* ys) {
    const u32 a = d[0] & SLICE_POS, d0 = d[w];
    const u32 ss = d0 >> SLICE_SS_SHIFT, p0 = (d0 & SLICE_POS) - a, p1 = (d[w + 1] & SLICE_POS) - a;
    for (u32 p = p0; p < p1; p += 2 * ss) {
        const u32 q0 = p + lane, q1 = p + ss + lane;
        const uint2 r0 = lane < ss && q0 < p1 ? rs[q0] : make_uint2(SLICE_PAD, 0u);
        const uint2 r1 = lane < ss && q1 < p1 ? rs[q1] : make_uint2(SLICE_PAD, 0u);
        const float f0 = __uint_as_float(r0.y) * xs[r0.x >> 16];
        const float f1 = __uint_as_float(r1.y) * xs[r1.x >> 16];
        if ((r0.x & 0xffffu) != SLICE_PAD) ys[r0.x & 0xffffu] += f0;
        __syncwarp();
        if ((r1.x & 0xffffu) != SLICE_PAD) ys[r1.x & 0xffffu] += f1;
        __syncwarp();
    }
}
__device__ __forceinline__ void spmv_sliced(const uint2* __restrict__ recs, const i64* __restrict__ block_base,
                                            const int* __restrict__ stage0, const u32* __restrict__ desc,
                                            const int* __restrict__ piece0, const int* __restrict__ piece_out,
                                            const float* __restrict__ x, i64 ncols, i64 ldx, float* __restrict__ y,
                                            i64 ldy, float alpha, float beta, float* __restrict__ slots, int bulk) {
    constexpr int SC = SLICE_COLS, XB = SLICE_XB, SB = SLICE_STAGE_BYTES;
    extern __shared__ __align__(128) unsigned char slice_smem[];
#if __CUDA_ARCH__ >= 900
    const int stages = bulk ? XB : 1;
#else
    const int stages = 1;
    bulk = 0;
#endif
    // The pieces' sums after the stages the launch gave room for (slices::smem_bytes).
    float* ys = reinterpret_cast<float*>(slice_smem + stages * SB);
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, blk = blockIdx.x;
    // With bulk, block blk is member blk % SLICE_MEMBERS of its group (the cluster's rank);
    // otherwise block blk is the whole of group blk.
    const int g = bulk ? blk / SLICE_MEMBERS : blk;
    const int v0 = piece0[g], nv = piece0[g + 1] - v0;
    auto xs_of = [&](int b) { return reinterpret_cast<float*>(slice_smem + b * SB); };
    auto rs_of = [&](int b) { return reinterpret_cast<uint2*>(slice_smem + b * SB + SC * 4); };
    auto d_of = [&](int b) { return reinterpret_cast<u32*>(slice_smem + b * SB + SC * 4 + SLICE_STAGE * 8); };
    auto put = [&](int i, float s) {
        const int o = piece_out[v0 + i];
        if (o >= 0)
            axpby_store(y + (i64)o * ldy, s, alpha, beta);
        else
            slots[-1 - o] = s;
    };
    for (int i = tid; i < nv; i += SLICE_THREADS) ys[i] = 0.f;
#if __CUDA_ARCH__ >= 900
    __shared__ __align__(8) u64 full[XB], empty[XB];
    if (bulk) {
        const int st0 = stage0[blk], nst = stage0[blk + 1] - st0;
        const i64 base = block_base[blk];
        if (tid == 0) {
            for (int b = 0; b < XB; b++) {
                mbar_init(&full[b], 1);
                mbar_init(&empty[b], SLICE_WARPS * 32);
            }
            fence_mbar_init();
        }
        __syncthreads();
        if (w == SLICE_WARPS) {
            u32 ws = 0, we = 0, wsl = 0;  // lane j: stage k + j's first record, end and slice
            for (int k = 0; k < nst; k++) {
                const int j = k & 31;
                if (j == 0 && k + lane < nst) {
                    const u32* d = desc + (i64)(st0 + k + lane) * SLICE_DESC;
                    ws = d[0] & SLICE_POS;
                    we = d[SLICE_WARPS + 1];
                    wsl = d[SLICE_WARPS + 2];
                }
                const u32 a = __shfl_sync(0xffffffffu, ws, j), e = __shfl_sync(0xffffffffu, we, j);
                const u32 sl = __shfl_sync(0xffffffffu, wsl, j);
                if (lane == 0) {
                    const int b = k % XB;
                    if (k >= XB)
                        while (!mbar_try_wait(&empty[b], (u32)((k / XB - 1) & 1))) {
                        }
                    const i64 c0 = (i64)sl * SC;
                    const u32 nx = (u32)min((i64)SC, ncols - c0);
                    const u32 body = nx * 4 / 16 * 16;
                    float* xs = xs_of(b);
                    for (u32 i = body / 4; i < nx; i++) xs[i] = x[c0 + i];
                    mbar_arrive_expect_tx(&full[b], body + (e - a) * 8 + SLICE_DESC * 4);
                    if (body) bulk_copy_g2s(xs, x + c0, body, &full[b]);
                    if (e > a) bulk_copy_g2s(rs_of(b), recs + base + a, (e - a) * 8, &full[b]);
                    bulk_copy_g2s(d_of(b), desc + (i64)(st0 + k) * SLICE_DESC, SLICE_DESC * 4, &full[b]);
                }
            }
        } else {
            for (int k = 0; k < nst; k++) {
                const int b = k % XB;
                while (!mbar_try_wait(&full[b], (u32)((k / XB) & 1))) {
                }
                slice_sums(d_of(b), w, lane, xs_of(b), rs_of(b), ys);
                // Every thread that read the stage releases it (its reads ordered before the
                // producer's next copy into it), not one lane for the warp.
                mbar_arrive(&empty[b]);
            }
        }
        // Every member's sums are done; each adds its share of the pieces over the members in
        // rank order, then waits until no other member still reads its sums.
        __syncwarp();
        cluster_sync();
        const u32 rank = cluster_rank();
        const int lo = nv * (int)rank / SLICE_MEMBERS, hi = nv * ((int)rank + 1) / SLICE_MEMBERS;
        for (int i = lo + tid; i < hi; i += SLICE_THREADS) {
            float s = ld_cluster_f32(ys + i, 0);
            for (u32 q = 1; q < SLICE_MEMBERS; q++) s += ld_cluster_f32(ys + i, q);
            put(i, s);
        }
        cluster_sync();
        return;
    }
#endif
    float* xs = xs_of(0);
    uint2* rs = rs_of(0);
    u32* d = d_of(0);
    for (int m = g * SLICE_MEMBERS; m < (g + 1) * SLICE_MEMBERS; m++) {
        const int st0 = stage0[m], nst = stage0[m + 1] - st0;
        const i64 base = block_base[m];
        for (int k = 0; k < nst; k++) {
            __syncthreads();  // the last stage's sums are done (and ys is zeroed)
            if (tid < SLICE_DESC) d[tid] = desc[(i64)(st0 + k) * SLICE_DESC + tid];
            __syncthreads();
            const u32 a = d[0] & SLICE_POS, e = d[SLICE_WARPS + 1];
            const i64 c0 = (i64)d[SLICE_WARPS + 2] * SC;
            const int nx = (int)min((i64)SC, ncols - c0);
            for (int i = tid; i < nx; i += SLICE_THREADS) xs[i] = x[(c0 + i) * ldx];
            for (u32 i = tid; i < e - a; i += SLICE_THREADS) rs[i] = recs[base + a + i];
            __syncthreads();
            if (w < SLICE_WARPS) slice_sums(d, w, lane, xs, rs, ys);
        }
    }
    __syncthreads();
    for (int i = tid; i < nv; i += SLICE_THREADS) put(i, ys[i]);
}
// The cut rows: a warp a row adds its pieces' sums, lane i those i, i + 32, ..., then the
// lanes by xor shuffles, the same order on every run.
template <typename T>
__device__ __forceinline__ void spmv_cut(i64 ncut, const int* __restrict__ cut_rows,
                                         const int* __restrict__ cut_start, const T* __restrict__ slots,
                                         T* __restrict__ y, i64 ldy, T alpha, T beta) {
    const i64 r = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (r >= ncut) return;
    T s = T(0);
    for (int p = cut_start[r] + lane; p < cut_start[r + 1]; p += 32) s += slots[p];
#pragma unroll
    for (int o = 16; o >= 1; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) axpby_store(y + (i64)cut_rows[r] * ldy, s, alpha, beta);
}
extern "C" __global__ void __launch_bounds__(SLICE_THREADS, 1)
    spmv_sliced_f32(const uint2* recs, const i64* block_base, const int* stage0, const u32* desc,
                    const int* piece0, const int* piece_out, const float* x, i64 ncols, i64 ldx, float* y,
                    i64 ldy, float alpha, float beta, float* slots, int bulk) {
    spmv_sliced(recs, block_base, stage0, desc, piece0, piece_out, x, ncols, ldx, y, ldy, alpha, beta, slots,
                bulk);
}
extern "C" __global__ void __launch_bounds__(256)
    spmv_cut_f32(i64 ncut, const int* cut_rows, const int* cut_start, const float* slots, float* y, i64 ldy,
                 float alpha, float beta) {
    spmv_cut<float>(ncut, cut_rows, cut_start, slots, y, ldy, alpha, beta);
}
