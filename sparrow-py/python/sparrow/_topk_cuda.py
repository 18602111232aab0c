"""torch.topk's call on CUDA tensors (torch or CuPy): the keys never leave the GPU, the work is
ordered on the caller's stream, and the result is ready there."""

import contextlib

from . import _native
from ._arrays import cuda_index, current_stream, kind

SORT_MAX = 4096  # rows wider than this are sorted here, on the device, after an unsorted select


def _on_stream(x, stream):
    """A context making `stream` current for the array's library (None: leave it)."""
    if stream is None:
        return contextlib.nullcontext()
    if kind(x) == "torch":
        import torch

        return torch.cuda.stream(torch.cuda.ExternalStream(stream, device=x.device))
    import cupy

    return cupy.cuda.ExternalStream(stream)


def _sort_rows(vals, idx, largest, lib):
    """Stable sort of each row by key (NaN highest, as torch sorts); unsorted rows list keys by
    ascending position, so equal keys keep that order as sparrow's sorted rows do."""
    if lib == "torch":
        v, order = vals.sort(dim=-1, descending=largest, stable=True)
        return v, idx.gather(-1, order)
    import cupy

    # A stable ascending sort puts NaN last and keeps equal keys by position; for the largest
    # first, sort the reversed row and reverse the order, which keeps that position order.
    if largest:
        n = vals.shape[-1]
        order = n - 1 - cupy.argsort(vals[..., ::-1], axis=-1)[..., ::-1]
    else:
        order = cupy.argsort(vals, axis=-1)
    return cupy.take_along_axis(vals, order, -1), cupy.take_along_axis(idx, order, -1)


def topk_cuda(x, k, dim, largest, sorted, tie_break, device, stream):
    dev = cuda_index(x)
    if device is not None and device not in (f"cuda:{dev}",) and not (device == "cuda" and dev == 0):
        raise ValueError(f"invalid argument `device`: {device!r}, but x is on cuda:{dev} (sparrow does not move GPU arrays)")
    lib = kind(x)
    if x.ndim == 0:
        raise ValueError("invalid argument `x`: a 0-dimensional array has no dimension to select along")
    if isinstance(dim, bool) or not isinstance(dim, int) or not -x.ndim <= dim < x.ndim:
        raise ValueError(f"invalid argument `dim`: {dim!r} is not in {-x.ndim}..{x.ndim - 1}")
    dim %= x.ndim
    n = x.shape[dim]
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= n:
        raise ValueError(f"invalid argument `k`: {k!r} is not in 0..={n} (the size of the selected dimension)")
    if cupy_float8(x):
        raise ValueError(f"invalid argument `x`: sparrow does not select over {x.dtype}")
    raw = current_stream(x) if stream is None else int(stream)
    with _on_stream(x, stream):
        if lib == "torch":
            import torch

            moved = x.movedim(dim, -1).contiguous()
            lead = tuple(moved.shape[:-1])
            flat = moved.reshape(-1, n)
            vals = torch.empty((flat.shape[0], k), dtype=x.dtype, device=x.device)
            idx = torch.empty((flat.shape[0], k), dtype=torch.int64, device=x.device)
        else:
            import cupy

            moved = cupy.ascontiguousarray(cupy.moveaxis(x, dim, -1))
            lead = tuple(moved.shape[:-1])
            flat = moved.reshape(-1, n)
            vals = cupy.empty((flat.shape[0], k), dtype=x.dtype)
            idx = cupy.empty((flat.shape[0], k), dtype=cupy.int64)
        host_sort = sorted and k > SORT_MAX
        if flat.shape[0] > 0 and k > 0:
            _native.topk_cuda(flat, vals, idx, k, largest, sorted and not host_sort, tie_break, raw)
            if host_sort:
                vals, idx = _sort_rows(vals, idx, largest, lib)
        vals = vals.reshape(lead + (k,))
        idx = idx.reshape(lead + (k,))
        if lib == "torch":
            return vals.movedim(-1, dim), idx.movedim(-1, dim)
        import cupy

        return cupy.moveaxis(vals, -1, dim), cupy.moveaxis(idx, -1, dim)


def cupy_float8(x):
    return "float8" in str(x.dtype)
