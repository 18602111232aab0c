import numpy as np
import pytest
import scipy.sparse as sp

import sparrow


def matrix(dtype, m=300, n=200, density=0.05, seed=0):
    return sp.random(m, n, density=density, format="csr", dtype=dtype, random_state=seed)


def tol(dtype):
    return 1e-5 if dtype == np.float32 else 1e-12


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_spmv_against_scipy(dtype):
    rng = np.random.default_rng(0)
    A = matrix(dtype)
    x = rng.standard_normal(200).astype(dtype)
    y0 = rng.standard_normal(300).astype(dtype)
    np.testing.assert_allclose(sparrow.spmv(A, x, device="cpu"), A @ x, rtol=tol(dtype), atol=tol(dtype))
    y = y0.copy()
    out = sparrow.spmv(A, x, alpha=2.0, beta=-0.5, y=y, device="cpu")
    assert out is y and y.dtype == dtype
    np.testing.assert_allclose(y, 2.0 * (A @ x) - 0.5 * y0, rtol=tol(dtype), atol=tol(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_spmm_against_scipy(dtype):
    rng = np.random.default_rng(1)
    A = sp.csr_array(matrix(dtype, seed=1))
    B = rng.standard_normal((200, 7)).astype(dtype)
    C0 = rng.standard_normal((300, 7)).astype(dtype)
    np.testing.assert_allclose(sparrow.spmm(A, B, device="cpu"), A @ B, rtol=tol(dtype), atol=tol(dtype))
    C = C0.copy()
    sparrow.spmm(A, B, alpha=0.5, beta=2.0, C=C, device="cpu")
    np.testing.assert_allclose(C, 0.5 * (A @ B) + 2.0 * C0, rtol=tol(dtype), atol=tol(dtype))


def test_beta_zero_never_reads_the_output():
    A = matrix(np.float64)
    x = np.ones(200)
    y = np.full(300, np.nan)
    sparrow.spmv(A, x, y=y, device="cpu")
    assert np.isfinite(y).all()


def test_unsorted_rows_and_duplicates_are_summed_as_scipy_does():
    indptr = np.array([0, 3, 5])
    indices = np.array([2, 0, 2, 1, 1])
    data = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    A = sp.csr_matrix((data, indices, indptr), shape=(2, 3))
    x = np.array([1.0, 10.0, 100.0])
    np.testing.assert_array_equal(sparrow.spmv(A, x, device="cpu"), A @ x)


def test_other_scipy_formats_and_prepare():
    A = matrix(np.float64).tocoo()
    x = np.arange(200, dtype=np.float64)
    np.testing.assert_allclose(sparrow.spmv(A, x, device="cpu"), A @ x, rtol=1e-12)
    P = sparrow.prepare(A)
    B = np.ones((200, 3))
    np.testing.assert_allclose(sparrow.spmm(P, B, device="cpu"), A @ B, rtol=1e-12)
    np.testing.assert_allclose(sparrow.spmv(P, x, device="cpu"), A @ x, rtol=1e-12)


def test_empty_and_read_only_operands():
    A = sp.csr_matrix((3, 4))
    np.testing.assert_array_equal(sparrow.spmv(A, np.ones(4), device="cpu"), np.zeros(3))
    B = matrix(np.float64)
    assert sparrow.spmm(B, np.ones((200, 0)), device="cpu").shape == (300, 0)
    x = np.ones(200)
    x.flags.writeable = False
    np.testing.assert_allclose(sparrow.spmv(B, x, device="cpu"), B @ x, rtol=1e-12)


def test_bad_arguments_name_themselves():
    A = matrix(np.float64)
    cases = [
        (lambda: sparrow.spmv(A, np.ones(199)), "`x`"),
        (lambda: sparrow.spmv(A, np.ones(200, dtype=np.float32)), "`x`"),
        (lambda: sparrow.spmv(A, np.ones(200), y=np.ones(3)), "`y`"),
        (lambda: sparrow.spmv(np.ones((3, 3)), np.ones(3)), "`A`"),
        (lambda: sparrow.spmv(A.astype(np.int64), np.ones(200)), "`A`"),
        (lambda: sparrow.spmm(A, np.ones((201, 2))), "`B`"),
        (lambda: sparrow.spmm(A, np.ones((200, 2)), C=np.ones((300, 3))), "`C`"),
        (lambda: sparrow.spmm(A, np.ones((200, 2)), device="cuda:x"), "`device`"),
        (lambda: sparrow.prepare(A, device="cuda:x"), "`device`"),
    ]
    for call, name in cases:
        with pytest.raises(ValueError, match=name):
            call()


def test_torch_cpu_csr_when_torch_is_present():
    torch = pytest.importorskip("torch")
    A = matrix(np.float32)
    t = torch.sparse_csr_tensor(torch.from_numpy(A.indptr.astype(np.int64)), torch.from_numpy(A.indices.astype(np.int64)),
                                torch.from_numpy(A.data), size=A.shape)
    B = torch.randn(200, 4)
    C = sparrow.spmm(t, B, device="cpu")
    assert isinstance(C, torch.Tensor)
    np.testing.assert_allclose(C.numpy(), A @ B.numpy(), rtol=1e-5, atol=1e-5)
