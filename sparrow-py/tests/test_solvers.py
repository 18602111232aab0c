import numpy as np
import pytest
import scipy.sparse as sp

import sparrow


def planted(dtype, m=80, n=200, k=5, batch=3, seed=0):
    rng = np.random.default_rng(seed)
    phi = (rng.standard_normal((m, n)) / np.sqrt(m)).astype(dtype)
    x = np.zeros((n, batch), dtype=dtype)
    for b in range(batch):
        x[rng.choice(n, k, replace=False), b] = rng.choice([-1.0, 1.0], k) * (1 + rng.random(k))
    return phi, x, (phi.astype(np.float64) @ x.astype(np.float64)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("method", ["cosamp", "omp", "htp", "sp", "niht"])
def test_recover_finds_the_planted_signals(dtype, method):
    phi, x, y = planted(dtype)
    got, info = sparrow.recover(phi, y, method=method, sparsity=5, device="cpu", return_info=True)
    assert got.shape == x.shape and got.dtype == dtype
    np.testing.assert_allclose(got, x, atol=1e-3 if dtype == np.float32 else 1e-5)
    assert len(info["support"]) == 3


def test_recover_one_signal_gives_a_vector():
    phi, x, y = planted(np.float64, batch=1)
    got = sparrow.recover(phi, y[:, 0], sparsity=5, device="cpu")
    assert got.shape == (200,)
    np.testing.assert_allclose(got, x[:, 0], atol=1e-8)


def test_recover_bad_arguments():
    phi, x, y = planted(np.float64)
    with pytest.raises(ValueError, match="`method`"):
        sparrow.recover(phi, y, method="lasso")
    with pytest.raises(ValueError, match="sparsity"):
        sparrow.recover(phi, y, method="cosamp", device="cpu")
    with pytest.raises(ValueError, match="`y`"):
        sparrow.recover(phi, y.astype(np.float32), sparsity=5)
    with pytest.raises(ValueError, match="`max_iter`"):
        sparrow.recover(phi, y, sparsity=5, max_iter=-1)
    with pytest.raises(ValueError, match="`sparsity`"):
        sparrow.recover(phi, y, sparsity=-1)


def test_complete_recovers_a_low_rank_matrix():
    rng = np.random.default_rng(2)
    m, n, r = 60, 50, 2
    M = rng.standard_normal((m, r)) @ rng.standard_normal((r, n))
    mask = rng.random((m, n)) < 0.5
    obs = sp.csr_matrix(np.where(mask, M, 0.0))
    obs = sp.csr_matrix((M[mask], np.nonzero(mask)), shape=(m, n))
    X, info = sparrow.complete(obs, rank_hint=r, max_iter=2000, tol=1e-6, device="cpu", return_info=True)
    assert X.shape == (m, n)
    assert np.linalg.norm(X - M) / np.linalg.norm(M) < 1e-2, info
    with pytest.raises(ValueError, match="`observed`"):
        sparrow.complete(M, rank_hint=2)
    with pytest.raises(ValueError, match="`rank_hint`"):
        sparrow.complete(obs, rank_hint=-1)
