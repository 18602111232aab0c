"""Top-k over any dimension (as torch.topk) and over the segments of a flat array."""

import numpy as np

from . import _native
from ._arrays import check_device, check_int, cuda_index, from_bytes, host_array, int_array, kind, like

_TIES = ("smaller-index", "larger-index", "fast")


def _check_tie(tie_break):
    if tie_break not in _TIES:
        raise ValueError(f"invalid argument `tie_break`: {tie_break!r} is not one of {', '.join(_TIES)}")


def topk(x, k, dim=-1, largest=True, sorted=True, tie_break="smaller-index", device=None, stream=None):
    """The k largest (or smallest) elements of `x` along a dimension, as `torch.topk`.

    Parameters
    ----------
    x : numpy.ndarray, torch.Tensor or cupy.ndarray
        Keys of any type sparrow selects over: float16, bfloat16 (torch, or numpy through
        ml_dtypes), float32, float64, and signed or unsigned 8- to 64-bit integers.
    k : int
        How many to select, 0 <= k <= x.shape[dim].
    dim : int, default -1
        The dimension to select along.
    largest : bool, default True
        The largest k (else the smallest).
    sorted : bool, default True
        Return each row's selection in rank order (largest first for `largest`). Unsorted
        rows list the selected keys in ascending position.
    tie_break : {"smaller-index", "larger-index", "fast"}, default "smaller-index"
        Which of equal keys at the k-th place win: the smaller position, the larger one, or
        any (fastest). The first two give the same result on every run and device.
    device : None, "cpu", "cuda" or "cuda:N"
        Where to compute. None: a GPU array's own device; for host arrays the first usable
        GPU, else the CPU.
    stream : int, optional
        For CUDA arrays, the raw CUDA stream whose pending work produces `x` and on which the
        result is ready; default the current stream of torch or CuPy.

    Returns
    -------
    values, indices
        Arrays of the kind and device of `x`, of x's shape with `k` at `dim`; indices are int64.

    Notes
    -----
    NaN of any sign ranks above +inf; -0.0 and +0.0 are equal (ties) and come back with their
    own bits. The same holds on every device.
    """
    _check_tie(tie_break)
    if cuda_index(x) is not None:
        from ._topk_cuda import topk_cuda

        return topk_cuda(x, k, dim, largest, sorted, tie_break, device, stream)
    a, bf16 = host_array(x, "x")
    if a.ndim == 0:
        raise ValueError("invalid argument `x`: a 0-dimensional array has no dimension to select along")
    dim = check_int(dim, "dim", -a.ndim, a.ndim - 1) % a.ndim
    n = a.shape[dim]
    k = check_int(k, "k", 0, n)
    moved = np.moveaxis(a, dim, -1)
    lead = moved.shape[:-1]
    rows = int(np.prod(lead, dtype=np.int64))
    if rows == 0 or k == 0:
        vals = np.empty(lead + (k,), dtype=a.dtype)
        idx = np.empty(lead + (k,), dtype=np.int64)
    else:
        flat = np.ascontiguousarray(moved).reshape(rows, n)
        vb, ib, width = _native.topk_host(flat, None, k, None, largest, sorted, tie_break, check_device(device), bf16)
        vals = from_bytes(vb, a.dtype, lead + (width,))
        idx = from_bytes(ib, np.int64, lead + (width,))
    vals, idx = np.moveaxis(vals, -1, dim), np.moveaxis(idx, -1, dim)
    bf = np.asarray(x).dtype if (bf16 and kind(x) == "numpy") else (True if bf16 else None)
    return like(x, np.ascontiguousarray(vals), bf), like(x, np.ascontiguousarray(idx))


def segmented_topk(keys, offsets, k=None, k_per_segment=None, largest=True, sorted=False,
                   tie_break="smaller-index", device=None):
    """The k largest (or smallest) keys of each segment of a flat array.

    Parameters
    ----------
    keys : numpy.ndarray or torch.Tensor (CPU), 1-D
        Keys of any type `topk` takes.
    offsets : array of int, 1-D
        Segment i is ``keys[offsets[i]:offsets[i + 1]]``; nondecreasing, from 0 to len(keys).
    k : int, optional
        The same k for every segment.
    k_per_segment : array of int, optional
        One k per segment (give this or `k`).
    largest, sorted, tie_break, device
        As in `topk` (`sorted` defaults to False here).

    Returns
    -------
    values, indices : numpy arrays (torch for torch keys), n_segments x width
        width is k (the largest k) capped at the longest segment. A segment shorter than its
        k is padded with index -1 and the lowest key (largest) or the highest (smallest).
        indices are positions within the segment, int64.
    """
    _check_tie(tie_break)
    a, bf16 = host_array(keys, "keys")
    if a.ndim != 1:
        raise ValueError(f"invalid argument `keys`: has {a.ndim} dimensions, not 1")
    if offsets is None or np.asarray(offsets).ndim != 1:
        raise ValueError("invalid argument `offsets`: must be a 1-D array of segment starts and the end")
    offs = int_array(offsets, "offsets")
    if (k is None) == (k_per_segment is None):
        raise ValueError("invalid argument `k`: give k or k_per_segment, not both or neither")
    if k is not None:
        k = check_int(k, "k")
    ks = None
    if k_per_segment is not None:
        ks = [int(v) for v in int_array(k_per_segment, "k_per_segment").reshape(-1)]
    vb, ib, width = _native.topk_host(np.ascontiguousarray(a), offs, k, ks, largest, sorted, tie_break,
                                      check_device(device), bf16)
    nseg = max(len(offs) - 1, 0)
    vals = from_bytes(vb, a.dtype, (nseg, width))
    idx = from_bytes(ib, np.int64, (nseg, width))
    bf = np.asarray(keys).dtype if (bf16 and kind(keys) == "numpy") else (True if bf16 else None)
    return like(keys, vals, bf), like(keys, idx)
