"""torch.topk's call on CUDA tensors (torch or CuPy): the keys never leave the GPU, the work is
ordered on the caller's stream, and the result is ready there."""

import contextlib

from . import _native
from ._arrays import check_int, cuda_index, current_stream, device_index, kind, stream_handle

SORT_MAX = 4096  # rows wider than this are sorted here, on the device, after an unsorted select


def _on_stream(x, stream):
    """A context making the caller's `stream` current for the array's library, after it waits
    for the work queued so far on the current stream (which may still be writing x); None
    leaves the current stream as it is."""
    if stream is None:
        return contextlib.nullcontext()
    if kind(x) == "torch":
        import torch

        s = torch.cuda.ExternalStream(stream, device=x.device)
        s.wait_stream(torch.cuda.current_stream(x.device))
        return torch.cuda.stream(s)
    import cupy

    with cupy.cuda.Device(x.device.id):
        s = cupy.cuda.ExternalStream(stream)
        s.wait_event(cupy.cuda.get_current_stream().record())
    return s


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
    if device is not None and device_index(device) != dev:
        raise ValueError(f"invalid argument `device`: {device!r}, but x is on cuda:{dev} (sparrow does not move GPU arrays)")
    lib = kind(x)
    if lib == "torch":
        x = x.detach()
    if x.ndim == 0:
        raise ValueError("invalid argument `x`: a 0-dimensional array has no dimension to select along")
    dim = check_int(dim, "dim", -x.ndim, x.ndim - 1) % x.ndim
    n = x.shape[dim]
    k = check_int(k, "k", 0, n)
    if cupy_float8(x):
        raise ValueError(f"invalid argument `x`: sparrow does not select over {x.dtype}")
    stream = stream_handle(stream)
    raw = current_stream(x) if stream is None else stream
    with _device(x), _on_stream(x, stream):
        if lib == "torch":
            import torch

            if x.ndim == 2 and dim == 1 and x.is_contiguous():
                moved = flat = x
            else:
                moved = x.movedim(dim, -1).contiguous()
                flat = moved.reshape(-1, n)
            lead = tuple(moved.shape[:-1])
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


def _device(x):
    """CuPy's current device set to x's for the call (torch names devices explicitly)."""
    if kind(x) == "cupy":
        import cupy

        return cupy.cuda.Device(x.device.id)
    return contextlib.nullcontext()


def cupy_float8(x):
    return "float8" in str(x.dtype)
