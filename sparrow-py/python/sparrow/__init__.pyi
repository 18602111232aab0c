from typing import Any, Callable, Optional, Sequence, Tuple, Union

import numpy as np

__version__: str

ArrayLike = Any  # numpy.ndarray, torch.Tensor or cupy.ndarray
SparseLike = Any  # scipy.sparse matrix/array, torch sparse_csr tensor, cupyx CSR matrix, or Prepared
Device = Optional[str]  # None, "cpu", "cuda" or "cuda:N"

def devices() -> list[dict[str, Any]]: ...
def topk(
    x: ArrayLike,
    k: int,
    dim: int = -1,
    largest: bool = True,
    sorted: bool = True,
    tie_break: str = "smaller-index",
    device: Device = None,
    stream: Optional[int] = None,
) -> Tuple[ArrayLike, ArrayLike]: ...
def segmented_topk(
    keys: ArrayLike,
    offsets: ArrayLike,
    k: Optional[int] = None,
    k_per_segment: Optional[ArrayLike] = None,
    largest: bool = True,
    sorted: bool = False,
    tie_break: str = "smaller-index",
    device: Device = None,
) -> Tuple[ArrayLike, ArrayLike]: ...

class Prepared:
    shape: Tuple[int, int]
    dtype: np.dtype

def prepare(A: SparseLike, device: Device = None) -> Prepared: ...
def spmv(
    A: SparseLike, x: ArrayLike, alpha: float = 1.0, beta: float = 0.0, y: Optional[ArrayLike] = None, device: Device = None
) -> ArrayLike: ...
def spmm(
    A: SparseLike, B: ArrayLike, alpha: float = 1.0, beta: float = 0.0, C: Optional[ArrayLike] = None, device: Device = None
) -> ArrayLike: ...
def recover(
    phi: ArrayLike,
    y: ArrayLike,
    method: str = "cosamp",
    sparsity: Optional[int] = None,
    lam: Optional[float] = None,
    max_iter: int = 500,
    tol: float = 1e-6,
    device: Device = None,
    return_info: bool = False,
) -> Union[np.ndarray, Tuple[np.ndarray, dict[str, Any]]]: ...
def complete(
    observed: Any, rank_hint: int, max_iter: int = 500, tol: float = 1e-4, device: Device = None, return_info: bool = False
) -> Union[np.ndarray, Tuple[np.ndarray, dict[str, Any]]]: ...

class SeacellsResult:
    assignments: np.ndarray
    archetypes: np.ndarray
    soft: Any
    rss: list[float]
    iterations: int
    converged: bool
    summary: dict[str, Any]

def seacells(
    data: Any,
    n_metacells: int,
    use_rep: str = "X_pca",
    n_neighbors: int = 15,
    graph: str = "union",
    min_iter: int = 10,
    max_iter: int = 100,
    epsilon: float = 1e-3,
    seed: int = 0,
    device: Device = None,
    key_added: str = "SEACell",
    labels: Optional[Union[str, Sequence[str]]] = None,
    progress: Optional[Callable[[int, float], None]] = None,
) -> SeacellsResult: ...
def summarize_by_metacell(
    adata: Any, key: str = "SEACell", layer: Optional[str] = None, soft: bool = False, minimum_weight: float = 0.05
) -> Any: ...
