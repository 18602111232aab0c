"""SEACells metacells on an AnnData or an embedding, and per-metacell summaries."""

import json

import numpy as np

from . import _native
from ._arrays import check_device, check_int, from_bytes, host_array


class SeacellsResult:
    """A SEACells fit.

    Attributes
    ----------
    assignments : numpy.ndarray of int32
        Per cell, its metacell (the largest weight of its soft assignment).
    archetypes : numpy.ndarray of int64
        Per metacell, the cell that stands for it.
    soft : scipy.sparse.csr_matrix, cells x metacells
        The soft assignments; each row sums to 1. (A tuple (data, indices, indptr) without scipy.)
    rss : list of float
        The residual sum of squares after the first A update and after each iteration.
    iterations : int
    converged : bool
    summary : dict
        What the CLI writes as summary.json: stage times, metrics, purity with labels.
    """

    def __init__(self, raw, cells, n_metacells):
        self.assignments = from_bytes(raw["assignments"], np.int32, (cells,))
        self.archetypes = from_bytes(raw["archetypes"], np.int64, (n_metacells,))
        data = from_bytes(raw["soft_data"], np.float64, (-1,))
        indices = from_bytes(raw["soft_indices"], np.int32, (-1,))
        indptr = from_bytes(raw["soft_indptr"], np.int64, (cells + 1,))
        try:
            import scipy.sparse as sp

            self.soft = sp.csr_matrix((data, indices, indptr), shape=(cells, n_metacells))
        except ImportError:  # pragma: no cover - scipy is optional
            self.soft = (data, indices, indptr)
        self.rss = list(raw["rss"])
        self.iterations = int(raw["iterations"])
        self.converged = bool(raw["converged"])
        self.summary = json.loads(raw["summary"])

    def __repr__(self):
        return (f"SeacellsResult({len(self.assignments)} cells -> {len(self.archetypes)} metacells, "
                f"{self.iterations} iterations, {'converged' if self.converged else 'not converged'}, "
                f"RSS {self.rss[-1]:.6e})")


def _is_anndata(x):
    return hasattr(x, "obsm") and hasattr(x, "obs") and hasattr(x, "obs_names")


def seacells(data, n_metacells, use_rep="X_pca", n_neighbors=15, graph="union", min_iter=10, max_iter=100,
             epsilon=1e-3, seed=0, device=None, key_added="SEACell", labels=None, progress=None):
    """Fits SEACells metacells.

    Parameters
    ----------
    data : anndata.AnnData or 2-D array (cells x dims)
        For an AnnData, the embedding is ``data.obsm[use_rep]``.
    n_metacells : int
        Metacells to fit, 1..cells.
    use_rep : str, default "X_pca"
        The AnnData embedding to read.
    n_neighbors : int, default 15
        Neighbours of the kernel's kNN graph, the cell included.
    graph : {"union", "intersection"}, default "union"
        How the kNN graph is made symmetric.
    min_iter, max_iter : int, default 10 and 100
        Outer iterations at least and at most.
    epsilon : float, default 1e-3
        Converged when the RSS moves less than epsilon times its first value.
    seed : int, default 0
    device : None, "cpu", "cuda" or "cuda:N"
        None: the first usable GPU, else the CPU (as the CLI's default).
    key_added : str, default "SEACell"
        For an AnnData: ``obs[key_added]`` gets each cell's metacell as a categorical of the
        archetype cells' obs_names, and ``obsm[key_added + "_soft"]`` the soft assignments.
    labels : sequence of str, optional
        One label per cell (or an obs column name for an AnnData): adds purity to `summary`.
    progress : callable(iteration, rss), optional
        Called after each iteration. Ctrl-C stops the fit after the iteration under way.

    Returns
    -------
    SeacellsResult
        The same fit as ``sparrow seacells`` gives for the same embedding and arguments.
    """
    ad = data if _is_anndata(data) else None
    if ad is not None:
        if use_rep not in ad.obsm:
            raise ValueError(f"invalid argument `use_rep`: {use_rep!r} is not in obsm (it holds {list(ad.obsm.keys())})")
        x = ad.obsm[use_rep]
        if isinstance(labels, str):
            if labels not in ad.obs:
                raise ValueError(f"invalid argument `labels`: {labels!r} is not an obs column")
            labels = ad.obs[labels]
    else:
        x = data
    a, _ = host_array(x, "data")
    if a.ndim != 2:
        raise ValueError(f"invalid argument `data`: has {a.ndim} dimensions, not 2 (cells x dims)")
    if a.dtype not in (np.float32, np.float64):
        a = a.astype(np.float64)
    for name, v in (("n_metacells", n_metacells), ("n_neighbors", n_neighbors), ("min_iter", min_iter),
                    ("max_iter", max_iter)):
        check_int(v, name)
    check_int(seed, "seed", 0, 2**64 - 1)
    if progress is not None and not callable(progress):
        raise ValueError("invalid argument `progress`: not callable")
    labs = None if labels is None else [str(v) for v in labels]
    try:
        raw = _native.seacells(np.ascontiguousarray(a), int(n_metacells), int(n_neighbors), graph, int(min_iter),
                               int(max_iter), float(epsilon), int(seed), check_device(device), labs, progress)
    except ValueError as e:
        # The library names the kNN size as the CLI does.
        raise ValueError(str(e).replace("`knn`", "`n_neighbors`").replace("`embedding`", "`data`")) from None
    res = SeacellsResult(raw, a.shape[0], int(n_metacells))
    if ad is not None:
        import pandas as pd

        names = np.asarray(ad.obs_names)
        arche = names[res.archetypes]
        cats = pd.Categorical(arche[res.assignments], categories=pd.unique(arche))
        ad.obs[key_added] = pd.Series(cats, index=ad.obs_names)
        ad.obsm[key_added + "_soft"] = res.soft
    return res


def summarize_by_metacell(adata, key="SEACell", layer=None, soft=False, minimum_weight=0.05):
    """Metacells x genes: the sums of each metacell's cells, or soft weighted means.

    Parameters
    ----------
    adata : anndata.AnnData
        Fitted by `seacells` (``obs[key]``, and ``obsm[key + "_soft"]`` for `soft`).
    key : str, default "SEACell"
    layer : str, optional
        Summarise ``adata.layers[layer]`` instead of ``adata.X``; "raw" reads ``adata.raw.X``
        (with ``adata.raw.var``) when the AnnData has no layer of that name, as SEACells'
        ``summarize_layer="raw"``.
    soft : bool, default False
        False: per metacell, the sum over the cells assigned to it (as SEACells'
        summarize_by_SEACell). True: each cell's soft weights below `minimum_weight` are dropped
        and the rest renormalised, and metacell c gets sum_i w_ic x_i / sum_i w_ic (as
        summarize_by_soft_SEACell).
    minimum_weight : float, default 0.05

    Returns
    -------
    anndata.AnnData
        One row per metacell, named by its archetype cell, with ``adata.var``; X is a scipy
        CSR matrix (float64).
    """
    import anndata
    import pandas as pd
    import scipy.sparse as sp

    if key not in adata.obs:
        raise ValueError(f"invalid argument `key`: {key!r} is not an obs column (run sparrow.seacells first)")
    var = adata.var
    if layer is None:
        X = adata.X
    elif layer in adata.layers:
        X = adata.layers[layer]
    elif layer == "raw" and adata.raw is not None:
        X, var = adata.raw.X, adata.raw.var
    else:
        raise ValueError(f"invalid argument `layer`: {layer!r} is not in layers (it holds {list(adata.layers.keys())})")
    X = sp.csr_matrix(X, dtype=np.float64)
    col = adata.obs[key]
    cats = col.cat.categories if hasattr(col, "cat") else pd.Index(pd.unique(col))
    if soft:
        skey = key + "_soft"
        if skey not in adata.obsm:
            raise ValueError(f"invalid argument `soft`: obsm has no {skey!r} (run sparrow.seacells first)")
        W = sp.csr_matrix(adata.obsm[skey], dtype=np.float64)
        if W.shape != (adata.n_obs, len(cats)):
            raise ValueError(f"invalid argument `key`: obsm[{skey!r}] has shape {W.shape}, not "
                             f"({adata.n_obs}, {len(cats)}) (cells x metacells)")
        W = W.copy()
        W.data[W.data < minimum_weight] = 0.0
        W.eliminate_zeros()
        rows = np.asarray(W.sum(axis=1)).ravel()
        W = sp.diags(np.divide(1.0, rows, out=np.zeros_like(rows), where=rows > 0)) @ W
        tot = np.asarray(W.sum(axis=0)).ravel()
        M = sp.diags(np.divide(1.0, tot, out=np.zeros_like(tot), where=tot > 0)) @ (W.T @ X)
    else:
        codes = pd.Categorical(col, categories=cats).codes
        keep = codes >= 0
        ind = sp.csr_matrix((np.ones(keep.sum()), (codes[keep], np.flatnonzero(keep))), shape=(len(cats), adata.n_obs))
        M = ind @ X
    return anndata.AnnData(X=sp.csr_matrix(M), obs=pd.DataFrame(index=pd.Index(cats.astype(str), name=key)),
                           var=var.copy())
