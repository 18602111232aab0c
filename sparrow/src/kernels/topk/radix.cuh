// Top-k: the key type, the tile size, entry-point names and the order-preserving radix
// every path selects on. Included first by topk.cu, after common.cuh.

#define KBITS (int)(sizeof(TOPK_U) * 8)
// Keys of 16 bits or fewer take tiles twice as long, so a tile is 16 KB for them as for 32-bit
// keys (the host's plan::tile). TILE_NARROW and TILE_WIDE, like every size the host shares with
// these kernels, come from the host as -D definitions (kernels/sizes.rs).
#define TILE (KBITS <= 16 ? TILE_NARROW : TILE_WIDE)

#define PASTE2(a, b) a##b
#define PASTE(a, b) PASTE2(a, b)
#define ENTRY(name) PASTE(PASTE(topk_, name), PASTE(_, TOPK_NAME))

typedef TOPK_U K;

// Radixes are computed in 32 bits for keys of up to 32 bits (half the instructions and
// shared memory of 64-bit arithmetic), in 64 bits otherwise.
template <int B>
struct RadT {
    typedef u32 T;
};
template <>
struct RadT<64> {
    typedef u64 T;
};
typedef RadT<KBITS>::T R;
#define RBITS (int)(sizeof(R) * 8)
// A radix as the candidate kernel stores it: 16 bits for keys of up to 16 bits.
template <bool NARROW>
struct RadStore {
    typedef R T;
};
template <>
struct RadStore<true> {
    typedef u16 T;
};
typedef RadStore<(KBITS <= 16)>::T RS;

__device__ __forceinline__ R width_mask() { return KBITS == RBITS ? ~(R)0 : (R)((1ull << KBITS) - 1ull); }

// The order-preserving radix: NaN of any sign highest, -0 == +0, signed by value.
__device__ __forceinline__ R radix_of(K b) {
    const R x = (R)b;
    const R sign = (R)1 << (KBITS - 1);
    if (TOPK_KIND == 0) {
        const R mag = x & ~sign & width_mask();
        if (mag > (R)TOPK_INF) return width_mask();
        if (mag == 0) return sign;
        return (x & sign) ? (~x & width_mask()) : (x | sign);
    }
    if (TOPK_KIND == 1) return x ^ sign;
    return x;
}

// radix_of with selects instead of branches, for the warp kernel, whose 32 keys a lane would
// otherwise take through two branches each. In the filter path's kernels this form changed
// the results of 64- and 16-bit float keys though it computes the same function (see
// bench/results/2026-12-01-h200-topk-warp-select.txt), so it is kept to the warp kernel, whose
// tests pass with it for every key type.
__device__ __forceinline__ R radix_sel(K b) {
    const R x = (R)b;
    const R sign = (R)1 << (KBITS - 1);
    if (TOPK_KIND == 0) {
        const R mag = x & ~sign & width_mask();
        R r = x ^ ((x & sign) ? width_mask() : sign);
        r = mag == 0 ? sign : r;
        return mag > (R)TOPK_INF ? width_mask() : r;
    }
    return radix_of(b);
}

__device__ __forceinline__ R directed(K b, int largest) {
    const R r = radix_of(b);
    return largest ? r : (~r & width_mask());
}

__device__ __forceinline__ R hi(R r, int s) { return s >= RBITS ? (R)0 : (r >> s); }
