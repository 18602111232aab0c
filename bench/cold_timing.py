"""Cold timing for the probe scripts: the L2 emptied of the call's data before every repetition,
each call bracketed by CUDA events. `sparrow bench --cold` empties it by reading a buffer; this
writes one, so the timed call also finds dirty lines to write back and its times are not
comparable with sparrow's, only with each other."""
import cupy as cp

_flush = None


def cold_times(fn, reps):
    """Times of `reps` calls of `fn` in microseconds, each after writing a 512 MB buffer (ten
    times the L2) so the call finds nothing of its data cached."""
    global _flush
    if _flush is None:
        _flush = cp.empty(512 << 20, dtype=cp.uint8)
    times = []
    for _ in range(reps):
        _flush.fill(1)
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b) * 1e3)
    return times
