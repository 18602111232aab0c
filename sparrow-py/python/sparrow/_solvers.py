"""Compressed-sensing recovery and matrix completion."""

import numpy as np

from . import _native
from ._arrays import check_device, check_int, from_bytes, host_array

_METHODS = ("iht", "niht", "htp", "cosamp", "sp", "omp", "amp", "fista")


def recover(phi, y, method="cosamp", sparsity=None, lam=None, max_iter=500, tol=1e-6, device=None,
            return_info=False):
    """Recovers sparse x from ``y = phi @ x`` for one signal or a batch.

    Parameters
    ----------
    phi : 2-D array, m x n, float32 or float64
    y : 1-D array of m values, or m x B (one signal per column), of phi's type
    method : {"iht", "niht", "htp", "cosamp", "sp", "omp", "amp", "fista"}, default "cosamp"
    sparsity : int, optional
        K, the nonzeros of each signal; needed by every method but "amp" and "fista".
    lam : float, optional
        The LASSO weight, for "fista".
    max_iter : int, default 500
    tol : float, default 1e-6
        Relative tolerance of the stop tests.
    device : None, "cpu", "cuda" or "cuda:N"
    return_info : bool, default False
        Also return a dict with each signal's support, residual norm, iterations and stop reason.

    Returns
    -------
    x : numpy array, n (for 1-D y) or n x B
    """
    if method not in _METHODS:
        raise ValueError(f"invalid argument `method`: {method!r} is not one of {', '.join(_METHODS)}")
    p, _ = host_array(phi, "phi")
    ya, _ = host_array(y, "y")
    if p.ndim != 2:
        raise ValueError(f"invalid argument `phi`: has {p.ndim} dimensions, not 2")
    one = ya.ndim == 1
    y2 = ya.reshape(-1, 1) if one else ya
    if y2.ndim != 2:
        raise ValueError(f"invalid argument `y`: has {ya.ndim} dimensions, not 1 or 2")
    sparsity = None if sparsity is None else check_int(sparsity, "sparsity")
    info = _native.recover(np.ascontiguousarray(p), np.ascontiguousarray(y2), method, sparsity,
                           None if lam is None else float(lam), check_int(max_iter, "max_iter"), float(tol),
                           check_device(device))
    x = from_bytes(info.pop("x"), p.dtype, (p.shape[1], y2.shape[1]))
    x = x[:, 0].copy() if one else x
    return (x, info) if return_info else x


def complete(observed, rank_hint, max_iter=500, tol=1e-4, device=None, return_info=False):
    """Completes a low-rank matrix from its observed entries (singular value thresholding).

    Parameters
    ----------
    observed : scipy sparse matrix (any format), m x n
        The observed entries; entries not stored are unknown (not zero).
    rank_hint : int
        The expected rank, which sizes the randomized SVD on a GPU.
    max_iter : int, default 500
    tol : float, default 1e-4
        Stop when the relative residual on the observed entries falls below it.
    device : None, "cpu", "cuda" or "cuda:N"
    return_info : bool, default False
        Also return a dict with the rank, iterations, stop reason and relative residual.

    Returns
    -------
    X : numpy float64 array, m x n
    """
    try:
        import scipy.sparse as sp
    except ImportError as e:  # pragma: no cover - scipy is optional
        raise ImportError("sparrow.complete takes a scipy sparse matrix: install scipy") from e
    if not sp.issparse(observed):
        raise ValueError(f"invalid argument `observed`: a {type(observed).__name__}, not a scipy sparse matrix")
    o = sp.csr_matrix(observed, dtype=np.float64)
    info = _native.complete(o.shape, np.ascontiguousarray(o.indptr, dtype=np.int64),
                            np.ascontiguousarray(o.indices, dtype=np.int32), np.ascontiguousarray(o.data),
                            check_int(rank_hint, "rank_hint"), check_int(max_iter, "max_iter"), float(tol),
                            check_device(device))
    x = from_bytes(info.pop("x"), np.float64, o.shape)
    return (x, info) if return_info else x
