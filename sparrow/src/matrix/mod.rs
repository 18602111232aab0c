//! Matrices: validated CSR, row-major dense with a leading dimension, their file formats and
//! reproducible generators.

pub mod analysis;
mod csr;
mod dense;
pub mod diagonals;
pub mod gen;
pub mod io;
pub mod near;
mod rng;
pub mod row_blocks;
pub mod slices;
pub mod work;

pub use csr::{
    len_class, Csr, RowStats, CHUNK, LEN_CLASSES, LONG_ROW, NEAR_REACH, SCATTER_WINDOW, SPREAD_RUN,
    WINDOW_ROWS,
};
pub use dense::Dense;
pub use rng::Rng;
