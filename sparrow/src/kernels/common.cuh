// Shared device helpers. Kernels include only this file: no CUDA toolkit headers, so users
// need only the driver and libnvrtc. Each PTX wrapper names its instruction and constraints.
#pragma once

typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

// The first index in [lo, hi) of an ascending run p whose element is not below x (hi when
// none): where x would be inserted before its equals.
template <class T, class I>
__device__ __forceinline__ I lower_bound(const T* p, I lo, I hi, T x) {
    while (lo < hi) {
        const I mid = lo + ((hi - lo) >> 1);
        if (p[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

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
__device__ __forceinline__ u16 ld_stream(const u16* p) {
    u16 v;
    asm("ld.global.nc.L1::no_allocate.u16 %0, [%1];" : "=h"(v) : "l"(p));
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

// cvta.to.shared.u64: the shared-window address of a pointer into shared memory, for the
// instructions below that take a .shared operand.
__device__ __forceinline__ u32 smem_addr(const void* p) {
    u64 a;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
    return (u32)a;
}

// cp.async.cg.shared.global [dst], [src], 16, src_bytes (sm_80+): copies 16 bytes from global
// to shared memory without passing through registers, zero-filling past src_bytes (0..16);
// dst and src 16-byte aligned. Completes at cp_async_wait after cp_async_commit.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, u32 src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes)
                 : "memory");
}
// cp.async.commit_group: closes the group of this thread's cp.async copies issued so far.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// cp.async.wait_group N: waits until at most N of this thread's groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// Programmatic dependent launch (sm_90; no-ops before). A kernel the host launches as a
// dependent (`LaunchShape::dependent`) may start while the kernel before it finishes: it calls
// grid_dep_wait(), which returns once that kernel has completed and its writes are visible,
// before any global memory access. grid_dep_launch() lets the next dependent kernel start
// launching now rather than when this grid's blocks exit; its blocks still wait.
__device__ __forceinline__ void grid_dep_wait() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void grid_dep_launch() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// bar.sync id, threads: a barrier for `threads` (a multiple of 32) of the block's threads, so
// that a warp with other work (a producer) need not take part.
__device__ __forceinline__ void named_barrier(int id, int threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

#if __CUDA_ARCH__ >= 900
// mbarrier.init.shared::cta.b64 [bar], count (sm_80+; used here with the sm_90 bulk copies).
__device__ __forceinline__ void mbar_init(u64* bar, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
// fence.mbarrier_init.release.cluster (sm_90): makes barrier initialisation visible to the
// asynchronous (bulk-copy) proxy before any copy signals it.
__device__ __forceinline__ void fence_mbar_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
// mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], bytes (sm_90): one arrival that also
// announces `bytes` of bulk-copy traffic the phase must see before it completes.
__device__ __forceinline__ void mbar_arrive_expect_tx(u64* bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}
// mbarrier.try_wait.parity.shared::cta.b64 (sm_90): true once the phase of parity `phase` is
// complete.
__device__ __forceinline__ bool mbar_try_wait(u64* bar, u32 phase) {
    u32 ok;
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
        : "=r"(ok)
        : "r"(smem_addr(bar)), "r"(phase)
        : "memory");
    return ok != 0;
}
// mbarrier.arrive.shared::cta.b64 (sm_90 for the sink `_`): one arrival, with release
// semantics for this thread's earlier shared-memory accesses.
__device__ __forceinline__ void mbar_arrive(u64* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
// fence.proxy.async.shared::cta (sm_90): orders this thread's (and, after a barrier, the
// block's) generic-proxy accesses to shared memory before later bulk-copy (async-proxy)
// writes into the same buffer.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// barrier.cluster.arrive.release + wait.acquire (sm_90): every thread of the cluster's blocks
// meets here, and their shared-memory writes before it are visible to the others' reads after.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// %cluster_ctarank (sm_90): this block's rank in its cluster.
__device__ __forceinline__ u32 cluster_rank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
// ld.shared::cluster.f32 of `p`'s word in the shared memory of the cluster's block `rank`
// (sm_90, distributed shared memory: mapa turns this block's address into that block's).
__device__ __forceinline__ float ld_cluster_f32(const float* p, u32 rank) {
    u32 a;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(smem_addr(p)), "r"(rank));
    float v;
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(a) : "memory");
    return v;
}
// cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes (sm_90, the TMA's
// non-tensor form): copies `bytes` (a multiple of 16, both addresses 16-byte aligned) from
// global to shared memory and reports them to `bar`.
__device__ __forceinline__ void bulk_copy_g2s(void* dst, const void* src, u32 bytes, u64* bar) {
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
            smem_addr(dst)),
        "l"(src), "r"(bytes), "r"(smem_addr(bar))
        : "memory");
}
#endif

#if __CUDA_ARCH__ >= 890
// cvt.rn.f16x2.e4m3x2 (sm_89+; ptxas has no f32 form): two FP8 e4m3 values (the low byte
// first) to two f16, then to f32.
__device__ __forceinline__ void e4m3x2_to_f32(u16 v, float* lo, float* hi) {
    u32 h2;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(v));
    asm("{\n .reg .f16 a, b;\n mov.b32 {a, b}, %2;\n cvt.f32.f16 %0, a;\n cvt.f32.f16 %1, b;\n}"
        : "=f"(*lo), "=f"(*hi)
        : "r"(h2));
}
#endif
