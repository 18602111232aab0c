"""A short run of every GPU entry point of the Python package, small enough for
compute-sanitizer: topk on CUDA tensors of each float type through each top-k path (warp,
on-chip, filter, tiled, split, and the wide sorted rows), and spmv/spmm on a torch CSR."""

import numpy as np
import scipy.sparse as sp
import torch

import sparrow

torch.manual_seed(0)
for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
    for rows, n, k in ((8, 64, 5), (4, 3000, 40), (2, 40000, 300), (3, 300000, 64), (1, 2_000_000, 1000), (2, 20000, 5000)):
        x = torch.randn(rows, n, device="cuda").to(dtype)
        v, i = sparrow.topk(x, k)
        cv, ci = sparrow.topk(x.cpu(), k, device="cpu")
        assert torch.equal(i.cpu(), ci), (dtype, rows, n, k)
A = sp.random(500, 400, density=0.05, format="csr", dtype=np.float32, random_state=0)
t = torch.sparse_csr_tensor(torch.from_numpy(A.indptr.astype(np.int64)), torch.from_numpy(A.indices.astype(np.int64)),
                            torch.from_numpy(A.data), size=A.shape).cuda()
B = torch.randn(400, 8, device="cuda")
np.testing.assert_allclose(sparrow.spmm(t, B).cpu().numpy(), A @ B.cpu().numpy(), rtol=1e-4, atol=1e-4)
np.testing.assert_allclose(sparrow.spmv(t, B[:, 0].contiguous()).cpu().numpy(), A @ B[:, 0].cpu().numpy(), rtol=1e-4, atol=1e-4)
torch.cuda.synchronize()
print("smoke passed")
