"""SpMV and SpMM with A as a scipy, torch or CuPy CSR matrix."""

import numpy as np

from . import _native
from ._arrays import check_device, cuda_index, device_index, from_bytes, host_array, kind, like


class Prepared:
    """A CSR matrix converted once for repeated products (`sparrow.prepare`).

    Holds A's arrays converted to int64 row pointers and int32 column indices (a snapshot: a
    later change to A is not seen), and on each GPU it was used with, A analysed and uploaded,
    so products with GPU operands skip that work.
    """

    def __init__(self, shape, indptr, indices, data):
        self.shape = (int(shape[0]), int(shape[1]))
        self.indptr, self.indices, self.data = indptr, indices, data
        self.dtype = data.dtype
        self._gpu = {}  # device index -> A uploaded there (built by the first CUDA product)

    def __repr__(self):
        return f"sparrow.Prepared(shape={self.shape}, nnz={len(self.data)}, dtype={self.dtype})"


def _csr_parts(A):
    """(shape, indptr int64, indices int32, data) of A on the host."""
    if isinstance(A, Prepared):
        return A.shape, A.indptr, A.indices, A.data
    k = kind(A)
    if k == "torch":
        torch = __import__("torch")
        if A.layout != torch.sparse_csr:
            raise ValueError(f"invalid argument `A`: a torch tensor of layout {A.layout}, not torch.sparse_csr")
        if A.device.type != "cpu":
            raise ValueError("invalid argument `A`: on a GPU; GPU operands take the CUDA path")
        shape = tuple(A.shape)
        ip, ix, v = A.crow_indices().numpy(), A.col_indices().numpy(), A.values().numpy()
    else:
        try:
            import scipy.sparse as sp
        except ImportError:  # pragma: no cover - scipy is optional
            sp = None
        if sp is None or not sp.issparse(A):
            raise ValueError(
                f"invalid argument `A`: a {type(A).__name__}, not a scipy sparse matrix, a torch sparse_csr "
                "tensor, a CuPy CSR matrix or a sparrow.Prepared")
        if A.format != "csr":
            A = A.tocsr()
        shape, ip, ix, v = A.shape, A.indptr, A.indices, A.data
    if v.dtype not in (np.float32, np.float64):
        raise ValueError(f"invalid argument `A`: holds {v.dtype}; sparrow's products take float32 or float64")
    if shape[1] > np.iinfo(np.int32).max + 1:
        raise ValueError(f"invalid argument `A`: {shape[1]} columns pass 32-bit column indices")
    return (shape, np.ascontiguousarray(ip, dtype=np.int64), np.ascontiguousarray(ix, dtype=np.int32),
            np.ascontiguousarray(v))


def prepare(A, device=None):
    """Converts A once for repeated `spmv` and `spmm` calls.

    Parameters
    ----------
    A : scipy.sparse matrix or array, torch sparse_csr tensor, or cupyx CSR matrix
    device : None, "cuda" or "cuda:N", optional
        Also analyse A and upload it to that GPU now, for products with GPU operands (else the
        first such product does it).

    Returns
    -------
    Prepared
        Pass it as `A` to `spmv` and `spmm`.
    """
    from ._products_cuda import _host_parts, gpu_matrix

    shape, ip, ix, v = _host_parts(A)
    p = Prepared(shape, ip, ix, v)
    dev = device_index(device)
    if dev is not None:
        gpu_matrix(p, dev)
    return p


def _dense(x, arg, dtype):
    a, bf16 = host_array(x, arg)
    if bf16 or a.dtype != dtype:
        raise ValueError(f"invalid argument `{arg}`: is {'bfloat16' if bf16 else a.dtype} but A is {np.dtype(dtype)}; "
                         "give both the same type")
    return np.ascontiguousarray(a)


def spmv(A, x, alpha=1.0, beta=0.0, y=None, device=None):
    """``alpha * A @ x + beta * y`` for a sparse A.

    Parameters
    ----------
    A : scipy.sparse CSR (or any scipy sparse format), torch sparse_csr tensor, or Prepared
        float32 or float64; rows may be unsorted or hold duplicates (summed, as scipy does).
    x : 1-D array of A.shape[1] values, of A's type
    alpha, beta : float
        beta = 0 means y is not read (NaN in y does not reach the result).
    y : 1-D array of A.shape[0] values, optional
        Read when beta != 0, and written with the result.
    device : None, "cpu", "cuda" or "cuda:N"

    Returns
    -------
    y : array of the kind of `x`
    """
    if cuda_index(x) is not None or cuda_index(A) is not None:
        from ._products_cuda import spmv_cuda

        return spmv_cuda(A, x, alpha, beta, y, device)
    shape, ip, ix, v = _csr_parts(A)
    xa = _dense(x, "x", v.dtype)
    if xa.shape != (shape[1],):
        raise ValueError(f"invalid argument `x`: has shape {xa.shape}, not ({shape[1]},) (A's columns)")
    ya = None
    if y is not None:
        ya = _dense(y, "y", v.dtype)
        if ya.shape != (shape[0],):
            raise ValueError(f"invalid argument `y`: has shape {ya.shape}, not ({shape[0]},) (A's rows)")
    out = from_bytes(_native.spmv_host(shape, ip, ix, v, xa, ya, float(alpha), float(beta), check_device(device)),
                     v.dtype, (shape[0],))
    return _into(y, out, x)


def spmm(A, B, alpha=1.0, beta=0.0, C=None, device=None):
    """``alpha * A @ B + beta * C`` for a sparse A and dense B.

    Parameters
    ----------
    A : as in `spmv`
    B : 2-D array, A.shape[1] x N, of A's type
    alpha, beta : float
        beta = 0 means C is not read.
    C : 2-D array, A.shape[0] x N, optional
        Read when beta != 0, and written with the result.
    device : None, "cpu", "cuda" or "cuda:N"

    Returns
    -------
    C : array of the kind of `B`
    """
    if cuda_index(B) is not None or cuda_index(A) is not None:
        from ._products_cuda import spmm_cuda

        return spmm_cuda(A, B, alpha, beta, C, device)
    shape, ip, ix, v = _csr_parts(A)
    ba = _dense(B, "B", v.dtype)
    if ba.ndim != 2 or ba.shape[0] != shape[1]:
        raise ValueError(f"invalid argument `B`: has shape {ba.shape}, not ({shape[1]}, N) (A's columns)")
    ca = None
    if C is not None:
        ca = _dense(C, "C", v.dtype)
        if ca.shape != (shape[0], ba.shape[1]):
            raise ValueError(f"invalid argument `C`: has shape {ca.shape}, not {(shape[0], ba.shape[1])}")
    out = from_bytes(_native.spmm_host(shape, ip, ix, v, ba, ca, float(alpha), float(beta), check_device(device)),
                     v.dtype, (shape[0], ba.shape[1]))
    return _into(C, out, B)


def _into(given, out, template):
    """The result written into the caller's output when one was given, else as `template`'s kind."""
    if given is None:
        return like(template, out)
    if kind(given) == "torch":
        given.copy_(like(given, out))
    else:
        np.copyto(given, out)
    return given
