//! The naive references of the products, in f64, with each output's summed magnitude.

mod spmm;
mod spmv;

pub use spmm::spmm;
pub use spmv::spmv;
