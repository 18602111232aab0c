// CSR times dense: C = alpha * A * B + beta * C, B and C row-major with leading dimensions.
// Row pointers are 64-bit, column indices 32-bit. The families:
//   rowvec:  a group of G = CK lanes per row: C column lanes each own VEC = 16 / sizeof(T)
//            consecutive columns of B (one 16-byte load per entry, TN such segments per
//            pass), and K entry lanes split the row's entries, summed by shuffles at the end.
//            Each lane keeps several rows of B in flight (U: 4 with one segment, 2 with more;
//            8 in the f32 `_u8` builds for rows of scattered columns), so the kernel is bound
//            by the memory system rather than by instruction issue. Launch flag `vec`: bit 0 says B,
//            bit 1 says C, is 16-byte aligned with a leading dimension of whole 16-byte
//            segments; without it the kernel reads (writes) that matrix an element at a time.
//   avec:    one column lane whose K entry lanes read A's indices and values as aligned
//            4-entry vectors (spmm_c1), for SpMV and N up to one 16-byte segment; spmv_avec
//            is its N = 1 body alone, for f32 SpMV in fewer registers.
//   window:  rowvec over blocks of rows that stage their window of B in shared memory.
//   rowblk:  rowvec over blocks of RB consecutive rows and the union of their columns, each
//            row of B loaded once for the block's rows.
//   stream:  SpMV (N = 1) over work blocks a plan computed on the host: a block of short
//            rows with at most STREAM_ITEMS entries (all of them loaded at once as aligned
//            4-entry vectors, products staged in shared memory, then each row summed by a
//            group of lanes), or one chunk of a long row (a block-wide sum; the last chunk of
//            a row to finish adds the row's partials in chunk order, so the result does not
//            depend on timing). spmv_packed is the same kernel over 16-bit column offsets and
//            row ends (PackedCols), fewer bytes an entry where every block's columns allow.
//   diag:    SpMV over rows that repeat one pattern of diagonals, a thread a row computing the
//            columns instead of reading them.
//   near:    SpMV over rows whose columns all lie within 2^15 of the row, each column read as a
//            16-bit offset from its row.
//   sliced:  SpMV over scattered columns: entries sorted by slice of columns, each slice of x
//            copied into shared memory, the rows' sums there too (ops::products::formats::slices).
// Long rows in rowvec: a row longer than long_len would keep one group busy long after the
// rest of the grid is done, so the row kernels skip it; the chunk entry points (CHUNKS = true)
// process the long rows' entries in fixed chunks, one chunk per warp, writing partial sums
// (alpha 1, beta 0) to a scratch buffer, and spmm_combine adds each row's partials in chunk
// order and applies alpha and beta. The result is deterministic.
// Row lists: a row-kernel launch may pass a list of rows in `ends` and take row ends[item] for
// item `item`. The host sorts rows by length into bins of similar rows, one launch each with
// as many entry lanes as the bin's rows need, so no group idles in a warp beside a long row;
// spmm_fill writes the empty rows.
// Every thread reaches every shuffle: items past the end compute zeros and store nothing.
// The families live in products/, included here in order; the entry points are instantiated
// below, per value type.
#include "common.cuh"
#include "products/vector.cuh"
#include "products/rowvec.cuh"
#include "products/window.cuh"
#include "products/rowblk.cuh"
#include "products/long_rows.cuh"
#include "products/stream.cuh"
#include "products/diag.cuh"
#include "products/near.cuh"
#include "products/sliced.cuh"

ROWVEC_ALL(float, f32)
ROWVEC_ALL(double, f64)
ROWVEC_CHUNKS_ALL(float, f32)
ROWVEC_DEEP_ALL(float, f32)
ROWVEC_CHUNKS_ALL(double, f64)
AVEC_ALL(float, f32)
AVEC_ALL(double, f64)
SPMV_AVEC_ALL(float, f32)
WINDOW_ALL(float, f32)
WINDOW_ALL(double, f64)
ROWBLK_ALL(float, f32, ROWBLK, ROWBLK)
ROWBLK_ALL(double, f64, ROWBLK, ROWBLK3)
ROWBLK_ALL(float, f32, ROWBLK8, ROWBLK8)
COMBINE(float, f32)
COMBINE(double, f64)
FILL(float, f32)
FILL(double, f64)
STREAM(float, f32)
STREAM(double, f64)
PACKED(float, f32)
PACKED(double, f64)
DIAG(float, f32)
DIAG(double, f64)
DIAGV_ALL(float, f32)
DIAGV_ALL(double, f64)
NEAR_ALL(float, f32)
NEAR_ALL(double, f64)
