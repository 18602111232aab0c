"""sparrow: sparse and selection work on NVIDIA GPUs, with a real CPU backend.

Segmented top-k, CSR SpMV and SpMM, compressed-sensing recovery, matrix completion and SEACells
metacells, on numpy, scipy, torch, CuPy and AnnData objects. GPU arrays stay on their GPU.
"""

from . import _native
from ._products import Prepared, prepare, spmm, spmv
from ._seacells import SeacellsResult, seacells, summarize_by_metacell
from ._solvers import complete, recover
from ._topk import segmented_topk, topk

__version__ = _native.__version__


def devices():
    """The GPUs the driver sees.

    Returns
    -------
    list of dict
        Per GPU: ``device`` ("cuda:N"), ``usable``, and for usable ones ``name``, ``arch``
        (such as "sm_90"), ``memory`` (bytes) and ``sms``; for unusable ones ``why``. Empty
        without an NVIDIA driver.
    """
    return _native.devices()


__all__ = [
    "__version__", "devices", "topk", "segmented_topk", "spmv", "spmm", "prepare", "Prepared", "recover",
    "complete", "seacells", "summarize_by_metacell", "SeacellsResult",
]
