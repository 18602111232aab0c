//! The rayon CPU backend of the products.

mod spmm;
mod spmv;

pub use spmm::spmm;
pub use spmv::spmv;
