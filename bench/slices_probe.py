#!/usr/bin/env python3
"""SpMV on random columns with x read from shared memory: can a layout sorted by column slice beat
the random-gather floor (`gather_rate.py`: 16M gathers of a 4 MB x take 106-117 us, where
cuSPARSE takes about 125 us on the uniform and power-law rows)?

Layout (built here in numpy, no sparrow code): rows, with rows longer than CAP cut into pieces
that take every P-th entry, are dealt to blocks of about equal entries (at most MV pieces a
block), and inside a block to its NW consumer warps. A block's entries are sorted by column slice
(SC columns), one 8-byte record each (16-bit column in its slice, 16-bit row in its block, the
value). A producer warp fills XB stages, each with a slice of x and the slice's records, by bulk
copies once the consumers have released the stage; each consumer warp adds its rows' products
into their sums in shared memory, in steps in which no row appears twice (see `plan`), so a
row's additions run in a fixed order: the result is the same bit for bit on every run. Rows cut
into pieces are summed by a second kernel in piece order.

Kernels: `staged_c1`, each block copying every slice of x itself (132 blocks x 4 MB from L2);
`staged_c2`, `staged_c4`, clusters of 2 or 4 blocks, each copying 1/K of a slice to all K by a
multicast copy, a stage refilled once the consumers of all K blocks have released it.

Earlier builds, in the record: a block-wide barrier per slice instead of the producer warp, each
warp summing its steps by a segmented shuffle scan, with and without clusters sharing x's slices
by multicast copies.

Usage: python3 bench/slices_probe.py [--reps 20] [--matrix uniform,powerlaw] [--clusters 1,2,4]
Under ncu for the kernels' own times:
    ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_bytes.sum \
        -k regex:'staged|pieces|csrmv' python3 bench/slices_probe.py --reps 2
"""
import argparse
import statistics

import cupy as cp
import cupyx.scipy.sparse as cps
import numpy as np
from cold_timing import cold_times

SC = 12288  # columns of x a slice (48 KB of f32)
SLOT = 2048  # records a stage holds (16 KB)
XB = 3  # stages
MV = 8928  # row pieces a block (the shared memory left)
CAP = 128  # longest piece
NW = 31  # consumer warps; warp NW is the producer
NT = 32 * (NW + 1)
SMEM = XB * (SC * 4 + SLOT * 8) + MV * 4


SRC = r"""
typedef unsigned long long u64;
typedef unsigned int u32;
#define SC %(SC)d
#define XB %(XB)d
#define SLOT %(SLOT)d
#define NW %(NW)d
#define WS (NW + 2)
#define NT %(NT)d
__device__ __forceinline__ u32 sa(const void* p) {
    u64 a;
    asm("cvta.to.shared.u64 %%0, %%1;" : "=l"(a) : "l"(p));
    return (u32)a;
}
__device__ __forceinline__ void mbar_init(u64* b, u32 n) {
    asm volatile("mbarrier.init.shared::cta.b64 [%%0], %%1;" ::"r"(sa(b)), "r"(n) : "memory");
}
__device__ __forceinline__ void expect(u64* b, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%%0], %%1;" ::"r"(sa(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void wait(u64* b, u32 ph) {
    u32 ok = 0;
    while (!ok)
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%%1], %%2;\n selp.u32 %%0, 1, 0, p;\n}"
                     : "=r"(ok) : "r"(sa(b)), "r"(ph) : "memory");
}
__device__ __forceinline__ void copy(void* dst, const void* src, u32 bytes, u64* b) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%%0], [%%1], %%2, [%%3];"
                 ::"r"(sa(dst)), "l"(src), "r"(bytes), "r"(sa(b)) : "memory");
}
// A dedicated producer warp (warp NW) fills stage s %% XB with slice s of x and the slice's
// records once the NW consumer warps have released the stage's previous slice; consumers take
// the slices in order, each warp its own rows, and never wait on one another.
// With clusters of K blocks, each block's producer copies 1/K of x's slice to all K blocks
// (multicast), and a stage is refilled once the consumers of all K blocks have released it.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ u32 cluster_rank() {
    u32 r;
    asm("mov.u32 %%0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ void arrive_remote(u64* b, u32 rank) {
    u32 ra;
    asm volatile("mapa.shared::cluster.u32 %%0, %%1, %%2;" : "=r"(ra) : "r"(sa(b)), "r"(rank));
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%%0];" ::"r"(ra) : "memory");
}
__device__ __forceinline__ void copy_mc(void* dst, const void* src, u32 bytes, u64* b, unsigned short mask) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%%0], [%%1], %%2, [%%3], %%4;"
                 ::"r"(sa(dst)), "l"(src), "r"(bytes), "r"(sa(b)), "h"(mask) : "memory");
}
template <int K>
__device__ __forceinline__ void staged(const uint2* __restrict__ rec,
        const long long* __restrict__ cbase, const u32* __restrict__ woff, const int* __restrict__ cta_v0,
        const int* __restrict__ vout, const float* __restrict__ x, int m, int S, float* __restrict__ y,
        float* __restrict__ vy) {
    extern __shared__ __align__(128) unsigned char sm[];
    float* xs = (float*)sm;
    uint2* rs = (uint2*)(sm + XB * SC * 4);
    float* ys = (float*)(sm + XB * (SC * 4 + SLOT * 8));
    __shared__ __align__(8) u64 full[XB], empty[XB];
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, cta = blockIdx.x;
    const int v0 = cta_v0[cta], nv = cta_v0[cta + 1] - v0;
    const uint2* rc = rec + cbase[cta];
    const u32* wo = woff + (size_t)cta * S * WS;
    for (int i = tid; i < nv; i += NT) ys[i] = 0.f;
    if (tid == 0) {
        for (int b = 0; b < XB; b++) {
            mbar_init(&full[b], 1);
            mbar_init(&empty[b], NW * K);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if (K > 1) cluster_sync(); else __syncthreads();
    if (w == NW) {
        u32 st = 0, en = 0;  // lane j: slice sb + j's first and end record
        for (int s = 0; s < S; s++) {
            const int j = s & 31;
            if (j == 0) {
                const int t = s + lane;
                st = t < S ? wo[t * WS] & 0x3ffffffu : 0u;
                en = t < S ? wo[t * WS + NW + 1] : 0u;
            }
            const u32 a = __shfl_sync(0xffffffffu, st, j), e = __shfl_sync(0xffffffffu, en, j);
            if (lane == 0) {
                const int b = s %% XB;
                if (s >= XB) wait(&empty[b], ((s / XB) - 1) & 1);
                const u32 nx = (u32)min(SC, m - s * SC);
                expect(&full[b], nx * 4 + (e - a) * 8);
                if (K == 1) {
                    copy(xs + b * SC, x + (long long)s * SC, nx * 4, &full[b]);
                } else {
                    const u32 part = (nx / K + 3) / 4 * 4, lo = cluster_rank() * part;
                    if (lo < nx)
                        copy_mc(xs + b * SC + lo, x + (long long)s * SC + lo, min(part, nx - lo) * 4, &full[b],
                                (unsigned short)((1u << K) - 1));
                }
                if (e > a) copy(rs + b * SLOT, rc + a, (e - a) * 8, &full[b]);
            }
        }
    } else {
        // lane j: slice sb + j / 2's bound j & 1 for this warp, a batch of 16 loaded one ahead
        auto batch = [&](int sb) -> u32 {
            const int t = sb + (lane >> 1);
            return t < S ? wo[t * WS + w + (lane & 1)] : 0u;
        };
        u32 cur = batch(0), nxt = batch(16), sst = 0;
        for (int s = 0; s < S; s++) {
            const int j = s & 15;
            if ((s & 31) == 0) {
                const int t = s + lane;
                sst = t < S ? wo[t * WS] & 0x3ffffffu : 0u;
            }
            const u32 a = __shfl_sync(0xffffffffu, sst, s & 31);
            const u32 w0 = __shfl_sync(0xffffffffu, cur, 2 * j), w1 = __shfl_sync(0xffffffffu, cur, 2 * j + 1);
            const u32 ss = w0 >> 26, p0 = (w0 & 0x3ffffffu) - a, p1 = (w1 & 0x3ffffffu) - a;
            if (j == 15) {
                cur = nxt;
                nxt = batch(s + 17);
            }
            const int b = s %% XB;
            wait(&full[b], (s / XB) & 1);
            const float* xb = xs + b * SC;
            const uint2* rb = rs + b * SLOT;
            for (u32 p = p0; p < p1; p += 2 * ss) {
                const u32 q0 = p + lane, q1 = p + ss + lane;
                const uint2 r0 = lane < ss && q0 < p1 ? rb[q0] : make_uint2(0xffffu, 0u);
                const uint2 r1 = lane < ss && q1 < p1 ? rb[q1] : make_uint2(0xffffu, 0u);
                const float f0 = __uint_as_float(r0.y) * xb[r0.x >> 16];
                const float f1 = __uint_as_float(r1.y) * xb[r1.x >> 16];
                const u32 y0 = r0.x & 0xffffu, y1 = r1.x & 0xffffu;
                if (y0 != 0xffffu) ys[y0] += f0;
                __syncwarp();
                if (y1 != 0xffffu) ys[y1] += f1;
                __syncwarp();
            }
            if (lane == 0) {
                if (K == 1) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%%0];" ::"r"(sa(&empty[b])) : "memory");
                else for (u32 r = 0; r < K; r++) arrive_remote(&empty[b], r);
            }
        }
    }
    __syncthreads();
    for (int i = tid; i < nv; i += NT) {
        const int o = vout[v0 + i];
        if (o >= 0) y[o] = ys[i]; else vy[-1 - o] = ys[i];
    }
    if (K > 1) cluster_sync();  // no block leaves while others may still write into it
}
#define STAGED(K) \
    extern "C" __global__ void __cluster_dims__(K, 1, 1) __launch_bounds__(NT, 1) staged_c##K(const uint2* rec, \
        const long long* cb, const u32* wo, const int* cv, const int* vout, const float* x, int m, int S, float* y, \
        float* vy) { staged<K>(rec, cb, wo, cv, vout, x, m, S, y, vy); }
STAGED(1) STAGED(2) STAGED(4)
// Rows cut into pieces: the pieces' sums added in piece order.
extern "C" __global__ void pieces(int nsplit, const int* __restrict__ srow, const int* __restrict__ sp,
        const float* __restrict__ vy, float* __restrict__ y) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nsplit) return;
    float s = 0.f;
    for (int p = sp[i]; p < sp[i + 1]; p++) s += vy[p];
    y[srow[i]] = s;
}
"""


def uniform(n, per_row, rng):
    cols = np.sort(rng.integers(0, n, size=(n, per_row), dtype=np.int64), axis=1)
    # distinct columns: nudge repeats (rare) to the next free column within the row
    for _ in range(4):
        dup = np.zeros_like(cols, dtype=bool)
        dup[:, 1:] = cols[:, 1:] <= cols[:, :-1]
        if not dup.any():
            break
        cols[:, 1:] = np.where(dup[:, 1:], cols[:, :-1] + 1, cols[:, 1:])
        cols = np.minimum(cols, n - 1)
    rp = np.arange(0, n * per_row + 1, per_row, dtype=np.int64)
    return rp, cols.reshape(-1)


def power_law(n, mean, max_len, shape, rng):
    xm = mean * (shape - 1.0) / shape
    u = 1.0 - rng.random(n)
    lens = np.minimum(np.floor(xm / u ** (1.0 / shape)), max_len).astype(np.int64)
    lens[0] = max_len
    rp = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=rp[1:])
    cols = rng.integers(0, n, size=int(rp[-1]), dtype=np.int64)
    row = np.repeat(np.arange(n), lens)
    key = np.unique(row * n + cols)  # sorted, distinct within a row
    row, cols = key // n, key % n
    lens = np.bincount(row, minlength=n)
    rp = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=rp[1:])
    return rp, cols


def plan(rp, cols, vals, n, m, ncta):
    lens = np.diff(rp)
    npieces = np.where(lens > 0, (lens + CAP - 1) // CAP, 0)
    vbase = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(npieces, out=vbase[1:])
    nvr = int(vbase[-1])
    row = np.repeat(np.arange(n), lens)
    j = np.arange(len(cols)) - rp[row]
    vrow = vbase[row] + j % npieces[row]
    vlen = np.bincount(vrow, minlength=nvr)
    vstart = np.zeros(nvr + 1, dtype=np.int64)
    np.cumsum(vlen, out=vstart[1:])
    nnz = int(vstart[-1])
    cta = np.minimum(vstart[:-1] * ncta // nnz, ncta - 1)
    cv = np.searchsorted(cta, np.arange(ncta + 1)).astype(np.int32)
    assert np.diff(cv).max() <= MV, np.diff(cv).max()
    # warps: by entries within the block
    cstart, cend = vstart[cv[:-1]], vstart[cv[1:]]
    warp = np.minimum((vstart[:-1] - cstart[cta]) * NW // np.maximum(cend[cta] - cstart[cta], 1), NW - 1)
    S = (m + SC - 1) // SC
    sl = cols // SC
    ecta = cta[vrow]
    order = np.argsort(((ecta * S + sl) << 41) | (vrow << 20) | cols, kind="stable")
    ecta, sl, vrow, cols, vals = ecta[order], sl[order], vrow[order], cols[order], vals[order]
    # Inside a (block, slice, warp) group of n entries, the largest count of one row c: T =
    # max(ceil(n / 32), c) steps of ss = ceil(n / T) lanes. Rows by count, largest first, each
    # row's entries together, are dealt to the steps in turn (entry i to step i %% T, lane i / T),
    # so no step holds a row twice; T * ss - n (< T) records of a group are padding.
    g = (ecta * S + sl) * (nvr + 1) + vrow
    first = np.r_[True, g[1:] != g[:-1]]
    run = np.cumsum(first) - 1
    rstart = np.nonzero(first)[0]
    rlen = np.diff(np.r_[rstart, nnz])[run]
    gw = (ecta * S + sl) * NW + warp[vrow]
    order = np.lexsort((cols, vrow, -rlen, gw))
    ecta, sl, vrow, cols, vals, gw, rlen = (a[order] for a in (ecta, sl, vrow, cols, vals, gw, rlen))
    ng = ncta * S * NW
    gwb = np.searchsorted(gw, np.arange(ng + 1))
    n_g = np.diff(gwb)
    c_g = np.zeros(ng, dtype=np.int64)
    np.maximum.at(c_g, gw, rlen)
    T = np.maximum((n_g + 31) // 32, c_g)
    ss = np.where(T > 0, (n_g + np.maximum(T, 1) - 1) // np.maximum(T, 1), 1)
    i = np.arange(nnz) - gwb[gw]
    inpos = (i % T[gw]) * ss[gw] + i // T[gw]
    size = T * ss  # padded group sizes
    # each (block, slice) padded to an even count so every slice's records start 16-byte aligned
    gsz = size.reshape(ncta * S, NW)
    gstart = np.zeros((ncta * S, NW + 1), dtype=np.int64)
    np.cumsum(gsz, axis=1, out=gstart[:, 1:])
    tot = gstart[:, NW]
    pad = tot + (tot & 1)
    pstart = np.zeros(ncta * S + 1, dtype=np.int64)
    np.cumsum(pad, out=pstart[1:])
    gsid = ecta * S + sl
    pos = pstart[gsid] + gstart.reshape(-1)[gsid * (NW + 1) + warp[vrow]] + inpos
    recs = np.zeros((int(pstart[-1]), 2), dtype=np.uint32)
    recs[:, 0] = 0xFFFF  # padding: no row
    recs[pos, 0] = ((cols - sl * SC) << 16 | (vrow - cv[ecta])).astype(np.uint32)
    recs[pos, 1] = vals.astype(np.float32).view(np.uint32)
    cbase = pstart[::S]  # each block's stream
    woff = np.zeros((ncta, S, NW + 2), dtype=np.int64)
    rel = pstart[:-1] - np.repeat(cbase[:-1], S)
    woff[:, :, : NW + 1] = (rel[:, None] + gstart).reshape(ncta, S, NW + 1)
    woff[:, :, :NW] |= (ss.reshape(ncta, S, NW) << 26)
    woff[:, :, NW + 1] = (rel + pad).reshape(ncta, S)
    assert (woff[:, :, NW + 1] - (woff[:, :, 0] & ((1 << 26) - 1))).max() <= SLOT
    assert woff[:, :, NW + 1].max() < (1 << 26)
    padded = int(pstart[-1]) - nnz
    split = np.nonzero(npieces > 1)[0]
    vout = np.repeat(np.arange(n), npieces).astype(np.int32)
    slot = np.zeros(nvr, dtype=np.int64) - 1
    sp = np.zeros(len(split) + 1, dtype=np.int64)
    np.cumsum(npieces[split], out=sp[1:])
    for i, r in enumerate(split):
        for k in range(npieces[r]):
            slot[vbase[r] + k] = sp[i] + k
    vout = np.where(slot >= 0, -1 - slot, vout).astype(np.int32)
    return dict(recs=recs, cbase=cbase[:-1], woff=woff.astype(np.uint32).reshape(-1), cv=cv, vout=vout, S=S,
                split=split.astype(np.int32), sp=sp.astype(np.int32), nvs=int(sp[-1]), nnz=nnz, pieces=nvr,
                rows_split=len(split), padded=int(pstart[-1]) - nnz)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--matrix", default="uniform,powerlaw")
    ap.add_argument("--clusters", default="1,2,4", help="cluster sizes to time (1, 2, 4)")
    args = ap.parse_args()
    n = 1_000_000
    rng = np.random.default_rng(7)
    print(f"SC {SC} SLOT {SLOT} XB {XB} MV {MV} CAP {CAP} NW {NW}, shared memory {SMEM} B")
    mod = cp.RawModule(code=SRC % dict(SC=SC, XB=XB, SLOT=SLOT, NW=NW, NT=NT), options=("-std=c++17",))
    ks = {K: mod.get_function(f"staged_c{K}") for K in (1, 2, 4)}
    for k in ks.values():
        k.max_dynamic_shared_size_bytes = SMEM
    kp = mod.get_function("pieces")
    for name in args.matrix.split(","):
        rp, cols = uniform(n, 16, rng) if name == "uniform" else power_law(n, 16.0, 100_000, 1.5, rng)
        vals = rng.uniform(-1, 1, size=len(cols)).astype(np.float32)
        x = rng.uniform(-1, 1, size=n).astype(np.float32)
        A = cps.csr_matrix((cp.asarray(vals), cp.asarray(cols.astype(np.int32)), cp.asarray(rp.astype(np.int32))),
                           shape=(n, n))
        dx = cp.asarray(x)
        ref = (A @ dx).get().astype(np.float64)
        Aabs = cps.csr_matrix((cp.abs(A.data), A.indices, A.indptr), shape=(n, n))
        mag = (Aabs @ cp.abs(dx)).get()
        print(f"== {name}: {n} rows, {len(cols)} entries, longest row {np.diff(rp).max()}")
        t = statistics.median(cold_times(lambda: A @ dx, args.reps))
        print(f"  cuSPARSE (cupyx A @ x)  {t:8.1f} us")
        plans = {}
        builds = {1: 132, 2: 132, 4: 128}
        for K in [int(k) for k in args.clusters.split(",")]:
            ncta = builds[K]
            if ncta not in plans:
                p = plan(rp, cols, vals, n, n, ncta)
                plans[ncta] = (p, {key: cp.asarray(v) for key, v in p.items() if isinstance(v, np.ndarray)})
            p, d = plans[ncta]
            k = ks[K]
            y = cp.full(n, cp.nan, dtype=cp.float32)
            vy = cp.zeros(max(p["nvs"], 1), dtype=cp.float32)
            ns = len(p["split"])

            def run():
                k((ncta,), (NT,), (d["recs"], d["cbase"], d["woff"], d["cv"], d["vout"], dx, np.int32(n),
                                   np.int32(p["S"]), y, vy), shared_mem=SMEM)
                if ns:
                    kp(((ns + 127) // 128,), (128,), (np.int32(ns), d["split"], d["sp"], vy, y))

            run()
            got = y.get().astype(np.float64)
            err = np.nanmax(np.abs(got - ref) / (mag + 1e-30))
            y1 = y.copy()
            run()
            same = bool((y1.view(cp.uint32) == y.view(cp.uint32)).all())
            t = statistics.median(cold_times(run, args.reps))
            print(f"  staged_c{K} ({ncta} blocks, {p['S']} slices, {p['pieces']} pieces, {p['rows_split']} rows cut, "
                  f"{p['padded']} padding records)  {t:8.1f} us  max err/|A||x| {err:.2e}  "
                  f"nan {int(np.isnan(got).sum())}  repeat same {same}")


if __name__ == "__main__":
    main()
