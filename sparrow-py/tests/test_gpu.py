"""GPU tests: run where torch sees a CUDA device (and CuPy where installed); skipped elsewhere."""

import os

import numpy as np
import pytest
import scipy.sparse as sp

import sparrow

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def keys(shape, dtype, seed=0):
    """Few distinct values (ties), NaN and both zeros, on the GPU."""
    g = torch.Generator().manual_seed(seed)
    pool = torch.tensor([float("nan"), -0.0, 0.0, 1.5, -2.0, float("inf"), -float("inf"), 3.25, 7.0, 0.125])
    return pool[torch.randint(0, len(pool), shape, generator=g)].to(dtype).cuda()


def same_bits(a, b):
    a, b = a.cpu(), b.cpu()
    if a.dtype.is_floating_point:
        view = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        a, b = a.view(view), b.view(view)
    return torch.equal(a, b)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,k,dim", [((64, 5000), 100, -1), ((3, 40000), 2048, 1), ((700, 9, 33), 4, 0)])
@pytest.mark.parametrize("sorted_", [True, False])
def test_topk_on_cuda_tensors_equals_the_cpu(dtype, shape, k, dim, sorted_):
    x = keys(shape, dtype)
    for largest in (True, False):
        for tie in ("smaller-index", "larger-index"):
            v, i = sparrow.topk(x, k, dim=dim, largest=largest, sorted=sorted_, tie_break=tie)
            assert v.is_cuda and i.is_cuda and v.device == x.device and i.dtype == torch.int64
            cv, ci = sparrow.topk(x.cpu(), k, dim=dim, largest=largest, sorted=sorted_, tie_break=tie, device="cpu")
            assert torch.equal(i.cpu(), ci), (largest, tie)
            assert same_bits(v, cv)


def test_topk_sorted_rows_wider_than_the_gpu_sort():
    x = keys((4, 50000), torch.float32, seed=3)
    v, i = sparrow.topk(x, 6000)
    cv, ci = sparrow.topk(x.cpu(), 6000, device="cpu")
    assert torch.equal(i.cpu(), ci) and same_bits(v, cv)


def test_topk_matches_torch_on_distinct_keys():
    x = torch.randn(64, 131072, device="cuda")
    v, i = sparrow.topk(x, 2048)
    tv, _ = torch.topk(x, 2048)
    assert torch.equal(v, tv)
    assert torch.equal(torch.gather(x, 1, i), v)


def slow_keys(a, stream):
    """Keys that exist only once a chain of products on `stream` has run."""
    with torch.cuda.stream(stream):
        y = a
        for _ in range(8):
            y = (y @ a).tanh()
        return y[:64].contiguous()


def test_stream_order_input_made_on_a_side_stream():
    side = torch.cuda.Stream()
    a = torch.randn(4096, 4096, device="cuda")
    torch.cuda.synchronize()
    # Consumed at once on the producer's stream, as its current stream.
    with torch.cuda.stream(side):
        x = slow_keys(a, side)
        v, i = sparrow.topk(x, 500)
    side.synchronize()
    tv, _ = torch.topk(x, 500)
    assert torch.equal(v, tv) and torch.equal(torch.gather(x, 1, i), tv)
    # Made on the current (default) stream, consumed on another stream given explicitly:
    # that stream must first wait for the producer.
    other = torch.cuda.Stream()
    x = slow_keys(a, torch.cuda.current_stream())
    v, i = sparrow.topk(x, 500, stream=other)
    other.synchronize()
    torch.cuda.synchronize()
    tv, _ = torch.topk(x, 500)
    assert torch.equal(v, tv) and torch.equal(torch.gather(x, 1, i), tv)


def test_tensors_that_require_grad_and_repeated_shapes():
    x = torch.randn(16, 5000, device="cuda", requires_grad=True)
    v, i = sparrow.topk(x, 7)
    tv, _ = torch.topk(x.detach(), 7)
    assert torch.equal(v, tv)
    # The same shape with other requests must not reuse another request's plan.
    for largest in (True, False):
        for k in (7, 9):
            v, i = sparrow.topk(x.detach(), k, largest=largest)
            tv, _ = torch.topk(x.detach(), k, largest=largest)
            assert torch.equal(v, tv)


def test_host_arrays_on_the_gpu():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((50, 3000)).astype(np.float32)
    v, i = sparrow.topk(x, 20, device="cuda")
    cv, ci = sparrow.topk(x, 20, device="cpu")
    assert isinstance(v, np.ndarray)
    np.testing.assert_array_equal(i, ci)
    A = sp.random(2000, 1500, density=0.01, format="csr", dtype=np.float64, random_state=2)
    B = rng.standard_normal((1500, 4))
    np.testing.assert_allclose(sparrow.spmm(A, B, device="cuda"), A @ B, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(sparrow.spmv(A, B[:, 0].copy(), device="cuda"), A @ B[:, 0], rtol=1e-11, atol=1e-11)


def test_products_see_a_change_of_a_values():
    A = sp.random(300, 200, density=0.05, format="csr", dtype=np.float32, random_state=6)
    t = torch.sparse_csr_tensor(torch.from_numpy(A.indptr.astype(np.int64)), torch.from_numpy(A.indices.astype(np.int64)),
                                torch.from_numpy(A.data.copy()), size=A.shape).cuda()
    B = torch.randn(200, 3, device="cuda")
    C1 = sparrow.spmm(t, B)
    t.values().mul_(2)
    C2 = sparrow.spmm(t, B)
    torch.testing.assert_close(C2, 2 * C1)


def rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def test_host_memory_does_not_grow_over_calls_on_a_1gb_tensor():
    x = torch.rand(1024, 262144, device="cuda")  # 1 GiB of float32
    sparrow.topk(x, 16)
    torch.cuda.synchronize()
    before = rss_bytes()
    for _ in range(100):
        v, i = sparrow.topk(x, 16)
    torch.cuda.synchronize()
    grown = rss_bytes() - before
    assert grown < 64 * 2**20, f"host memory grew by {grown / 2**20:.1f} MiB"
    assert v.is_cuda and i.is_cuda


def test_cupy_arrays_stay_cupy():
    cupy = pytest.importorskip("cupy")
    x = cupy.asarray(keys((32, 3000), torch.float32).cpu().numpy())
    v, i = sparrow.topk(x, 10)
    assert isinstance(v, cupy.ndarray) and isinstance(i, cupy.ndarray) and i.dtype == np.int64
    cv, ci = sparrow.topk(x.get(), 10, device="cpu")
    np.testing.assert_array_equal(i.get(), ci)
    np.testing.assert_array_equal(v.get().view(np.uint32), cv.view(np.uint32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_spmm_and_spmv_on_torch_csr_equal_scipy(dtype):
    A = sp.random(3000, 2000, density=0.01, format="csr", dtype=dtype, random_state=4)
    t = torch.sparse_csr_tensor(torch.from_numpy(A.indptr.astype(np.int64)), torch.from_numpy(A.indices.astype(np.int64)),
                                torch.from_numpy(A.data), size=A.shape).cuda()
    B = torch.randn(2000, 16, dtype=getattr(torch, np.dtype(dtype).name), device="cuda")
    C = sparrow.spmm(t, B)
    assert C.is_cuda
    tol = 1e-4 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(C.cpu().numpy(), A @ B.cpu().numpy(), rtol=tol, atol=tol)
    C2 = torch.ones_like(C)
    sparrow.spmm(t, B, alpha=2.0, beta=-1.0, C=C2)
    np.testing.assert_allclose(C2.cpu().numpy(), 2 * (A @ B.cpu().numpy()) - 1, rtol=tol, atol=tol)
    x = B[:, 0].contiguous()
    y = sparrow.spmv(t, x)
    np.testing.assert_allclose(y.cpu().numpy(), A @ x.cpu().numpy(), rtol=tol, atol=tol)
    P = sparrow.prepare(A, device="cuda")
    np.testing.assert_allclose(sparrow.spmm(P, B).cpu().numpy(), A @ B.cpu().numpy(), rtol=tol, atol=tol)


def test_spmm_on_cupy_csr_equals_scipy():
    cupy = pytest.importorskip("cupy")
    cpsp = pytest.importorskip("cupyx.scipy.sparse")
    A = sp.random(2500, 1800, density=0.02, format="csr", dtype=np.float32, random_state=5)
    Ag = cpsp.csr_matrix(A)
    B = cupy.random.standard_normal((1800, 8), dtype=cupy.float32)
    C = sparrow.spmm(Ag, B)
    assert isinstance(C, cupy.ndarray)
    np.testing.assert_allclose(C.get(), A @ B.get(), rtol=1e-4, atol=1e-4)


def test_gpu_fit_equals_the_cpu_fit(root):
    x = np.load(root / "data" / "pbmc68k_reduced" / "X_pca.npy")
    g = sparrow.seacells(x, 20, device="cuda")
    c = sparrow.seacells(x, 20, device="cpu")
    np.testing.assert_array_equal(g.assignments, c.assignments)
    assert g.rss == c.rss


def test_devices_lists_the_gpu():
    d = sparrow.devices()
    assert d and d[0]["usable"] and d[0]["arch"].startswith("sm_")


def test_topk_captured_in_a_cuda_graph_replays_like_eager_calls():
    """A prepared top-k allocates nothing, waits for nothing and reads nothing back, so a CUDA
    graph can capture it: 100 replays over new keys equal eager calls on the same keys."""
    x = torch.rand(4, 163840, device="cuda")
    for sorted_ in (False, True):
        sparrow.topk(x, 2048, sorted=sorted_)  # the plan is made and its kernels loaded here
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            v, i = sparrow.topk(x, 2048, sorted=sorted_)
        gen = torch.Generator(device="cuda").manual_seed(1)
        for rep in range(100):
            x.copy_(torch.rand(x.shape, device="cuda", generator=gen))
            g.replay()
            ev, ei = sparrow.topk(x, 2048, sorted=sorted_)
            assert torch.equal(v, ev) and torch.equal(i, ei), rep
