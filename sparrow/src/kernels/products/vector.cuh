// SpMM/SpMV, the vector loads and stores every family uses, and the row-item ranges. Included by spmm.cu.

template <typename T>
struct VecOf;
template <>
struct VecOf<float> {
    static constexpr int N = 4;
};
template <>
struct VecOf<double> {
    static constexpr int N = 2;
};

// ld.global.nc.v4.f32 / .v2.f64: one 16-byte read-only load (p 16-byte aligned).
__device__ __forceinline__ void ld_vec(const float* p, float* r) {
    asm("ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(r[0]), "=f"(r[1]), "=f"(r[2]), "=f"(r[3]) : "l"(p));
}
__device__ __forceinline__ void ld_vec(const double* p, double* r) {
    asm("ld.global.nc.v2.f64 {%0, %1}, [%2];" : "=d"(r[0]), "=d"(r[1]) : "l"(p));
}
// ld.global.v4.f32 / .v2.f64: a plain 16-byte load, for C (written by this kernel).
__device__ __forceinline__ void ld_vec_rw(const float* p, float* r) {
    asm volatile("ld.global.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(r[0]), "=f"(r[1]), "=f"(r[2]), "=f"(r[3])
                 : "l"(p)
                 : "memory");
}
__device__ __forceinline__ void ld_vec_rw(const double* p, double* r) {
    asm volatile("ld.global.v2.f64 {%0, %1}, [%2];" : "=d"(r[0]), "=d"(r[1]) : "l"(p) : "memory");
}
// st.global.v4.f32 / .v2.f64: one 16-byte store.
__device__ __forceinline__ void st_vec(float* p, const float* r) {
    asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(r[0]), "f"(r[1]), "f"(r[2]), "f"(r[3])
                 : "memory");
}
__device__ __forceinline__ void st_vec(double* p, const double* r) {
    asm volatile("st.global.v2.f64 [%0], {%1, %2};" ::"l"(p), "d"(r[0]), "d"(r[1]) : "memory");
}

// ld.global.nc.L1::no_allocate.v4: four consecutive column indices or values of A, which are
// read once (p 16-byte aligned).
__device__ __forceinline__ void ld_stream4(const int* p, int* r) {
    asm("ld.global.nc.L1::no_allocate.v4.s32 {%0, %1, %2, %3}, [%4];"
        : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
        : "l"(p));
}
__device__ __forceinline__ void ld_stream4(const float* p, float* r) {
    asm("ld.global.nc.L1::no_allocate.v4.f32 {%0, %1, %2, %3}, [%4];"
        : "=f"(r[0]), "=f"(r[1]), "=f"(r[2]), "=f"(r[3])
        : "l"(p));
}
__device__ __forceinline__ void ld_stream4(const double* p, double* r) {
    asm("ld.global.nc.L1::no_allocate.v2.f64 {%0, %1}, [%2];" : "=d"(r[0]), "=d"(r[1]) : "l"(p));
    asm("ld.global.nc.L1::no_allocate.v2.f64 {%0, %1}, [%2];" : "=d"(r[2]), "=d"(r[3]) : "l"(p + 2));
}

// Columns j..j+VEC of row b (zeros past n): one vector load when V and the segment is whole.
template <typename T, bool V>
__device__ __forceinline__ void ld_seg(const T* __restrict__ b, int j, int n, T* r) {
    constexpr int VEC = VecOf<T>::N;
    if (V && j + VEC <= n) {
        ld_vec(b + j, r);
    } else {
#pragma unroll
        for (int v = 0; v < VEC; v++) r[v] = j + v < n ? __ldg(b + j + v) : T(0);
    }
}

// out[j..j+VEC] = alpha * acc + beta * out (beta == 0 never reads out), columns below n only;
// one vector store when vc (C aligned) and the segment is whole.
template <typename T>
__device__ __forceinline__ void st_seg(T* out, int j, int n, const T* acc, T alpha, T beta, bool vc) {
    constexpr int VEC = VecOf<T>::N;
    if (vc && j + VEC <= n) {
        T r[VEC];
#pragma unroll
        for (int v = 0; v < VEC; v++) r[v] = alpha * acc[v];
        if (beta != T(0)) {
            T old[VEC];
            ld_vec_rw(out + j, old);
#pragma unroll
            for (int v = 0; v < VEC; v++) r[v] += beta * old[v];
        }
        st_vec(out + j, r);
    } else {
#pragma unroll
        for (int v = 0; v < VEC; v++)
            if (j + v < n) axpby_store(out + j + v, acc[v], alpha, beta);
    }
}

// The entry range of item `item` and the row of C it writes: row `item`, or row ends[item]
// when the launch passes a row list in `ends` (rows sorted by length), skipped (active =
// false) when longer than long_len; or chunk `item` of the long rows (C row `item`).
template <bool CHUNKS>
__device__ __forceinline__ bool item_range(i64 item, i64 nitems, const i64* __restrict__ starts,
                                           const i64* __restrict__ ends, i64 long_len, i64& s, i64& e,
                                           i64& row) {
    s = 0;
    e = 0;
    row = item;
    if (item >= nitems) return false;
    if (CHUNKS) {
        s = starts[item];
        e = ends[item];
        return true;
    }
    if (ends != nullptr) row = ends[item];
    s = starts[row];
    e = starts[row + 1];
    if (e - s > long_len) {
        s = e = 0;
        return false;
    }
    return true;
}
