//! SEACells metacells (Persad et al., 2023) by kernel archetypal analysis: the
//! adaptive Gaussian kernel M on the symmetrised kNN graph ([`kernel`]), a diffusion map and
//! waypoint plus greedy column-subset initialisation ([`diffusion`], [`init`], [`greedy`]; the map taken
//! per connected component when its graph falls apart, [`graph`]), the A and B Frank-Wolfe
//! updates with K = M M applied through products with M and every n x N matrix held sparse
//! ([`fw`]), and the fit loop with its outputs and metrics ([`fit`]). The kNN and both updates
//! also run on the GPU ([`gpu`]) with the CPU's picks; [`bounds`], [`rows`] and [`sparse`]
//! are the B update's lower bound, its row blocks and the sparse columns everything shares;
//! [`synthetic`] generates branching trajectories for tests and benchmarks.

pub mod bounds;
pub mod diffusion;
pub mod fit;
pub mod fw;
pub mod gpu;
pub mod graph;
pub mod greedy;
pub mod init;
pub mod kernel;
pub mod rows;
pub mod sparse;
pub mod synthetic;
