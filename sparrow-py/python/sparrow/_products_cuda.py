"""SpMV and SpMM with dense operands in GPU memory (torch or CuPy): B, C, x and y stay on the
GPU and the products are ordered on the caller's stream. A is read, analysed and uploaded by
each call, so a change to A's values is always seen; `sparrow.prepare(A, device=...)` does it
once for every later product with the prepared matrix."""

import numpy as np

from . import _native
from ._arrays import cuda_index, current_stream, device_index, kind


def _host_parts(A):
    """(shape, indptr int64, indices int32, data) of A on the host, from any CSR it may be."""
    from ._products import Prepared, _csr_parts

    if isinstance(A, Prepared):
        return A.shape, A.indptr, A.indices, A.data
    k = kind(A)
    if k == "torch" and A.device.type == "cuda":
        import torch

        if A.layout != torch.sparse_csr:
            raise ValueError(f"invalid argument `A`: a torch tensor of layout {A.layout}, not torch.sparse_csr")
        parts = (A.crow_indices().cpu().numpy(), A.col_indices().cpu().numpy(), A.values().cpu().numpy())
        shape = tuple(A.shape)
    elif type(A).__module__.startswith("cupyx"):
        if A.format != "csr":
            A = A.tocsr()
        parts, shape = (A.indptr.get(), A.indices.get(), A.data.get()), A.shape
    else:
        return _csr_parts(A)
    ip, ix, v = parts
    if v.dtype not in (np.float32, np.float64):
        raise ValueError(f"invalid argument `A`: holds {v.dtype}; sparrow's products take float32 or float64")
    return shape, np.ascontiguousarray(ip, dtype=np.int64), np.ascontiguousarray(ix, dtype=np.int32), np.ascontiguousarray(v)


def gpu_matrix(A, dev):
    """A analysed and uploaded to CUDA device `dev`: once for a Prepared, else for this call."""
    from ._products import Prepared

    if isinstance(A, Prepared):
        got = A._gpu.get(dev)
        if got is None:
            got = A._gpu[dev] = _native.GpuCsr(A.shape, A.indptr, A.indices, A.data, dev)
        return got
    shape, ip, ix, v = _host_parts(A)
    return _native.GpuCsr(shape, ip, ix, v, dev)


def _device_of(A, x, device):
    dev = cuda_index(x)
    if dev is None:
        raise ValueError("invalid argument `x`: in host memory while A is on a GPU; give both on one device")
    a_dev = cuda_index(A) if kind(A) != "numpy" else None
    if a_dev is not None and a_dev != dev:
        raise ValueError(f"invalid argument `A`: on cuda:{a_dev} but the dense operand is on cuda:{dev}")
    if device is not None and device_index(device) != dev:
        raise ValueError(f"invalid argument `device`: {device!r}, but the operands are on cuda:{dev}")
    return dev


def _empty_like(x, shape, dtype):
    if kind(x) == "torch":
        import torch

        return torch.empty(shape, dtype=x.dtype, device=x.device)
    import cupy

    with cupy.cuda.Device(x.device.id):
        return cupy.empty(shape, dtype=dtype)


def _contiguous(x):
    if kind(x) == "torch":
        return x.detach().contiguous()
    import cupy

    return cupy.ascontiguousarray(x)


def spmv_cuda(A, x, alpha, beta, y, device):
    dev = _device_of(A, x, device)
    m = gpu_matrix(A, dev)
    rows, _ = m.shape()
    out = y.detach() if y is not None and kind(y) == "torch" else y
    out = out if out is not None else _empty_like(x, (rows,), m.dtype_name)
    m.spmv(_contiguous(x), out, float(alpha), float(beta if y is not None else 0.0), current_stream(x))
    return y if y is not None else out


def spmm_cuda(A, B, alpha, beta, C, device):
    dev = _device_of(A, B, device)
    m = gpu_matrix(A, dev)
    rows, _ = m.shape()
    if B.ndim != 2:
        raise ValueError(f"invalid argument `B`: has {B.ndim} dimensions, not 2")
    out = C.detach() if C is not None and kind(C) == "torch" else C
    out = out if out is not None else _empty_like(B, (rows, B.shape[1]), m.dtype_name)
    m.spmm(_contiguous(B), out, float(alpha), float(beta if C is not None else 0.0), current_stream(B))
    return C if C is not None else out
