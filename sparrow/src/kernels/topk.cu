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
// keeps the segment's radixes in registers (topk_rblock, up to 8,192 keys) or in shared memory
// (topk_block) and runs every digit pass and the ordered compaction there, reading the keys
// from memory once; segments of at most WARP_MAX keys take one warp each (topk_warp).
// Long segments with few winners take the filter path, which reads the keys from memory once:
//   thresh: one block per segment radix-selects, among SAMPLE keys spread over the segment,
//           a threshold that at least k keys reach with near certainty;
//   filter: each tile keeps its keys above the threshold in a fixed run of CT slots, in
//           position order (fast ties with unsorted rows may leave a warp's out of order where
//           a tile is unaligned or partial), and counts the keys equal to it when the sample
//           had ties there or the keys are narrow, keeping a narrow key's at the run's far end
//           where both fit (filter_tma on sm_90: the keys staged into shared memory by bulk
//           copies);
//   cand:   one block per segment gathers its candidates in tile order into shared
//           memory (re-filtering from memory the few tiles whose candidates overflowed their
//           slots, as sorted keys make them) and selects among them on chip; when they are
//           fewer than k but the keys equal to the threshold make up the rest (ties: few
//           distinct values, all keys equal, 16-bit keys), it takes them all and the
//           tie-break's window of the equal keys, from the slots of the tiles that kept them
//           and from memory in those that could not. Otherwise (the sample missed) the block
//           selects from the whole segment in memory: slower, still exact.
//   The three are launched as programmatic dependents on sm_90: each calls grid_dep_wait()
//   before its first global memory access, and grid_dep_launch() so the next one launches
//   during its last wave.
// Every selection skips the high bits that all its keys share before the first digit pass,
// so keys from one binade do not pile into one histogram bin.
// Every thread of a block reaches every barrier: blocks whose segment is done still run the
// barriers with no keys.
//
// The paths live in topk/, included here in the order their definitions need.

#include "common.cuh"
#include "topk/radix.cuh"
#include "topk/select.cuh"
#include "topk/tiled.cuh"
#include "topk/block.cuh"
#include "topk/warp.cuh"
#include "topk/filter.cuh"
#include "topk/rblock.cuh"
#include "topk/candidates.cuh"
#include "topk/output.cuh"
#include "topk/cluster.cuh"
