//! The user's data: validated CSR and row-major dense matrices with a leading dimension, their
//! file formats and reproducible generators. Nothing here knows of devices or operations.

mod csr;
mod dense;
pub mod gen;
pub mod io;
mod rng;

pub use csr::Csr;
pub use dense::Dense;
pub use rng::Rng;
