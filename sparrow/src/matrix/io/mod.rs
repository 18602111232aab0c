//! Reading and writing matrices: `.npy` dense arrays, scipy's `.npz` CSR layout, MatrixMarket.
//! Every error names the file.

mod mtx;
mod npy;
mod npz;

pub use mtx::{read_mtx, write_mtx};
pub use npy::{
    read_dense, read_npy, read_npy_from, write_dense, write_npy, write_npy_to, NpyArray, NpyData,
};
pub use npz::{read_npz_csr, write_npz_csr, Normalize};

use std::path::Path;

use crate::matrix::Csr;
use crate::{Error, Result, Scalar};

/// Reads a sparse matrix, choosing the format by extension: `.npz` or `.mtx`.
pub fn read_sparse<T: Scalar>(path: impl AsRef<Path>, normalize: Normalize) -> Result<Csr<T>> {
    let path = path.as_ref();
    match path.extension().and_then(|e| e.to_str()) {
        Some("npz") => read_npz_csr(path, normalize),
        Some("mtx") => read_mtx(path),
        _ => Err(Error::format(
            path,
            "unknown sparse format; expected a .npz or .mtx file",
        )),
    }
}

/// The value dtype a sparse file holds, when it says (`f32` or `f64`); integer and pattern
/// data report `None`, leaving the choice to the caller.
pub fn sparse_value_dtype(path: impl AsRef<Path>) -> Result<Option<&'static str>> {
    let path = path.as_ref();
    if path.extension().and_then(|e| e.to_str()) != Some("npz") {
        return Ok(None);
    }
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(f))
        .map_err(|e| Error::format(path, format!("not a valid .npz (zip) file: {e}")))?;
    let entry = zip
        .by_name("data.npy")
        .map_err(|_| Error::format(path, "member data.npy is missing"))?;
    let npy = npyz::NpyFile::new(std::io::BufReader::new(entry))
        .map_err(|e| Error::format(path, format!("member data.npy: {e}")))?;
    Ok(match npy.dtype() {
        npyz::DType::Plain(ts) if ts.to_string() == "<f4" => Some("f32"),
        npyz::DType::Plain(ts) if ts.to_string() == "<f8" => Some("f64"),
        _ => None,
    })
}
