"""Plain numpy references the tests compare sparrow with."""

import numpy as np


def order_ranks(row):
    """Dense ranks of a row under sparrow's key order: NaN (any sign) above +inf, -0.0 == +0.0."""
    a = np.asarray(row)
    if a.dtype.kind == "f":
        f = a.astype(np.float64)
        nan = np.isnan(f)
        f = np.where(f == 0, 0.0, f)
        f[nan] = 0.0
        uniq, inv = np.unique(f, return_inverse=True)
        inv = inv.astype(np.int64)
        inv[nan] = len(uniq)
        return inv
    _, inv = np.unique(a, return_inverse=True)
    return inv.astype(np.int64)


def topk_rows(a2, k, largest=True, sorted=True, tie="smaller-index"):
    """Top-k positions of each row of a 2-D array, in sparrow's output order: the tie-break
    picks which equal keys are selected; sorted rows then list equal keys by ascending position,
    unsorted rows list every selected key by ascending position."""
    out = np.empty((a2.shape[0], k), dtype=np.int64)
    for r in range(a2.shape[0]):
        rank = order_ranks(a2[r])
        pos = np.arange(a2.shape[1])
        primary = -rank if largest else rank
        secondary = pos if tie == "smaller-index" else -pos
        chosen = np.sort(np.lexsort((secondary, primary))[:k])
        out[r] = chosen[np.lexsort((chosen, primary[chosen]))] if sorted else chosen
    return out
