//! SEACells metacells (Persad et al., 2023). Built so far: the kernel stage, exact kNN and the
//! adaptive Gaussian kernel M on the symmetrised kNN graph; the optimiser applies K = M M^T
//! through products with M, so neither K nor K^2 is ever formed.

pub mod kernel;
