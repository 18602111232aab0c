// Shared device helpers. Kernels include only this file: no CUDA toolkit headers, so users
// need only the driver and libnvrtc. Each PTX wrapper names its instruction and constraints.
#pragma once

typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

// ld.global.nc.L1::no_allocate: read-only load that does not displace reusable data in L1.
// For data streamed exactly once (a CSR row's indices and values). Valid on sm_70 and later;
// the buffer must not be written during the kernel.
__device__ __forceinline__ int ld_stream(const int* p) {
    int v;
    asm("ld.global.nc.L1::no_allocate.s32 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ float ld_stream(const float* p) {
    float v;
    asm("ld.global.nc.L1::no_allocate.f32 %0, [%1];" : "=f"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ double ld_stream(const double* p) {
    double v;
    asm("ld.global.nc.L1::no_allocate.f64 %0, [%1];" : "=d"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ i64 ld_stream(const i64* p) {
    i64 v;
    asm("ld.global.nc.L1::no_allocate.s64 %0, [%1];" : "=l"(v) : "l"(p));
    return v;
}

// mov.u32 %laneid: the thread's lane within its warp.
__device__ __forceinline__ u32 lane_id() {
    u32 l;
    asm("mov.u32 %0, %%laneid;" : "=r"(l));
    return l;
}

// The mask of the aligned group of G lanes (G divides 32) that holds this lane, for
// shuffles that only that group executes.
template <int G>
__device__ __forceinline__ u32 group_mask() {
    if (G == 32) return 0xffffffffu;
    return ((1u << G) - 1u) << (lane_id() & ~(u32)(G - 1));
}

// out = alpha * acc + beta * out, where beta == 0 never reads out (NaN in C must not leak).
template <typename T>
__device__ __forceinline__ void axpby_store(T* out, T acc, T alpha, T beta) {
    T r = alpha * acc;
    if (beta != T(0)) r += beta * *out;
    *out = r;
}

// Exclusive prefix sum of one u32 per thread over the block (blockDim.x a multiple of 32, at
// most 1024). `warp_sums` is shared scratch of 32 entries. Every thread of the block must
// call it (it holds two __syncthreads). Returns the exclusive prefix; *total gets the sum.
__device__ __forceinline__ u32 block_exclusive_scan(u32 v, u32* warp_sums, u32* total) {
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    u32 x = v;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const u32 y = __shfl_up_sync(0xffffffffu, x, off);
        if (lane >= (u32)off) x += y;
    }
    if (lane == 31) warp_sums[warp] = x;
    __syncthreads();
    if (warp == 0) {
        u32 w = lane < nwarps ? warp_sums[lane] : 0u;
#pragma unroll
        for (int off = 1; off < 32; off <<= 1) {
            const u32 y = __shfl_up_sync(0xffffffffu, w, off);
            if (lane >= (u32)off) w += y;
        }
        if (lane < nwarps) warp_sums[lane] = w;
    }
    __syncthreads();
    const u32 before = warp == 0 ? 0u : warp_sums[warp - 1];
    *total = warp_sums[nwarps - 1];
    return before + x - v;
}
