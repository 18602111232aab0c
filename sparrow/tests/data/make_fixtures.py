"""Writes the scipy-made fixtures the I/O tests read. Run with scipy installed:
python3 make_fixtures.py. The matrix is the 4 x 5 one in tests/matrix_io.rs (`expected()`)."""
import numpy as np
import scipy.sparse as sp

dense = np.array(
    [
        [1.5, 0, 0, -2.0, 0],
        [0, 0, 0, 0, 0],
        [0, 3.25, 0, 0, 4.0],
        [-0.5, 0, 6.0, 0, 0],
    ]
)
m = sp.csr_matrix(dense)
sp.save_npz("small_f64.npz", m)  # deflated, int32 indices
sp.save_npz("small_f32_stored.npz", m.astype(np.float32), compressed=False)
m64 = m.copy()
m64.indices = m64.indices.astype(np.int64)
m64.indptr = m64.indptr.astype(np.int64)
sp.save_npz("small_f64_int64.npz", m64)
mi = m.astype(np.int64)
sp.save_npz("small_int64_values.npz", mi)
sp.save_npz("small_csc.npz", sp.csc_matrix(dense))
# Row 0 stored in reverse column order with a duplicate: scipy keeps it as given.
u = sp.csr_matrix((np.array([-2.0, 1.0, 0.5, 3.25, 4.0, 6.0, -0.5]),
                   np.array([3, 0, 0, 1, 4, 2, 0]),
                   np.array([0, 3, 3, 5, 7])), shape=(4, 5))
sp.save_npz("small_unsorted.npz", u)
np.save("fortran_3x2.npy", np.asfortranarray(np.arange(6, dtype=np.float64).reshape(3, 2)))
