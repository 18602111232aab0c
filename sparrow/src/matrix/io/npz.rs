//! CSR matrices in the `.npz` layout that `scipy.sparse.save_npz` writes: members `indptr`,
//! `indices`, `data`, `shape` and `format` (`b"csr"`), stored or deflated.

use std::io::{Read, Seek, Write};

use npyz::WriterBuilder;
use std::path::Path;

use super::npy::{read_npy_from, write_npy_to, NpyArray};
use crate::matrix::Csr;
use crate::{Error, Result, Scalar};

/// Whether rows with unsorted or repeated column indices are an error or are normalised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Normalize {
    /// Unsorted or repeated indices are an error naming the row.
    #[default]
    Require,
    /// Rows are sorted and duplicates summed (what `sum_duplicates()` does in scipy).
    SortAndSum,
}

fn member<R: Read + Seek>(
    zip: &mut zip::ZipArchive<R>,
    path: &Path,
    name: &str,
) -> Result<NpyArray> {
    let file = format!("{name}.npy");
    let entry = zip.by_name(&file).map_err(|e| match e {
        zip::result::ZipError::FileNotFound => Error::format(
            path,
            format!("member {file} is missing; not a matrix written by scipy.sparse.save_npz"),
        ),
        e => Error::format(path, format!("member {file}: {e}")),
    })?;
    let member_path = path.join(&file);
    read_npy_from(std::io::BufReader::new(entry), &member_path)
        .map_err(|e| Error::format(path, format!("member {file}: {}", strip_path(&e))))
}

fn strip_path(e: &Error) -> String {
    match e {
        Error::Format { why, .. } => why.clone(),
        other => other.to_string(),
    }
}

fn read_format<R: Read + Seek>(zip: &mut zip::ZipArchive<R>, path: &Path) -> Result<String> {
    let entry = zip.by_name("format.npy").map_err(|_| {
        Error::format(
            path,
            "member format.npy is missing; not a matrix written by scipy.sparse.save_npz",
        )
    })?;
    let npy = npyz::NpyFile::new(std::io::BufReader::new(entry))
        .map_err(|e| Error::format(path, format!("member format.npy: {e}")))?;
    let bytes: Vec<Vec<u8>> = npy
        .into_vec()
        .map_err(|e| Error::format(path, format!("member format.npy is not a byte string: {e}")))?;
    let s = bytes.into_iter().next().unwrap_or_default();
    Ok(String::from_utf8_lossy(&s)
        .trim_end_matches('\0')
        .to_string())
}

/// Reads a CSR matrix written by `scipy.sparse.save_npz`.
pub fn read_npz_csr<T: Scalar>(path: impl AsRef<Path>, normalize: Normalize) -> Result<Csr<T>> {
    let path = path.as_ref();
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(f))
        .map_err(|e| Error::format(path, format!("not a valid .npz (zip) file: {e}")))?;
    let format = read_format(&mut zip, path)?;
    if format != "csr" {
        return Err(Error::format(
            path,
            format!("holds a sparse matrix in format {format:?}; sparrow reads \"csr\" (convert with .tocsr())"),
        ));
    }
    let shape = member(&mut zip, path, "shape")?
        .data
        .to_i64(path, "shape")?;
    if shape.len() != 2 || shape.iter().any(|&d| d < 0) {
        return Err(Error::format(
            path,
            format!("shape {shape:?} is not two non-negative sizes"),
        ));
    }
    let (nrows, ncols) = (shape[0] as usize, shape[1] as usize);
    let indptr = member(&mut zip, path, "indptr")?
        .data
        .to_i64(path, "indptr")?;
    let indices = member(&mut zip, path, "indices")?;
    let data = member(&mut zip, path, "data")?;
    if indptr.len() != nrows + 1 {
        return Err(Error::format(
            path,
            format!(
                "indptr has {} entries but shape {nrows} x {ncols} needs {}",
                indptr.len(),
                nrows + 1
            ),
        ));
    }
    if indices.data.len() != data.data.len() {
        return Err(Error::format(
            path,
            format!(
                "indices has {} entries but data has {}",
                indices.data.len(),
                data.data.len()
            ),
        ));
    }
    let idx64 = indices.data.to_i64(path, "indices")?;
    let mut col_idx = Vec::with_capacity(idx64.len());
    for (p, &c) in idx64.iter().enumerate() {
        if c < 0 || c >= ncols as i64 {
            return Err(Error::format(
                path,
                format!("indices[{p}] = {c} is out of range for {ncols} columns"),
            ));
        }
        col_idx.push(c as i32);
    }
    let values = data.data.to_scalar::<T>(path, "data")?;
    let built = match normalize {
        Normalize::Require => Csr::new(nrows, ncols, indptr, col_idx, values),
        Normalize::SortAndSum => Csr::normalized(nrows, ncols, indptr, col_idx, values),
    };
    built.map_err(|e| Error::format(path, e.to_string()))
}

fn format_npy_bytes() -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut w = npyz::WriteOptions::<[u8]>::new()
        .dtype(npyz::DType::Plain(
            "|S3".parse().expect("valid type string"),
        ))
        .shape(&[])
        .writer(&mut out)
        .begin_nd()?;
    w.push(&b"csr"[..])?;
    w.finish()?;
    Ok(out)
}

/// Writes a CSR matrix in the layout `scipy.sparse.load_npz` reads (deflated, as scipy's default).
pub fn write_npz_csr<T: Scalar>(path: impl AsRef<Path>, m: &Csr<T>) -> Result<()> {
    let path = path.as_ref();
    let io = |e: std::io::Error| Error::io(path, e);
    let f = std::fs::File::create(path).map_err(io)?;
    let mut zip = zip::ZipWriter::new(std::io::BufWriter::new(f));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(m.nnz() > (1 << 26));
    let zerr = |e: zip::result::ZipError| Error::format(path, format!("writing zip: {e}"));
    let members: Vec<(&str, Vec<u8>)> = {
        let mut v = Vec::new();
        let mut buf = Vec::new();
        write_npy_to(&mut buf, &[m.row_ptr().len() as u64], m.row_ptr()).map_err(io)?;
        v.push(("indptr.npy", std::mem::take(&mut buf)));
        write_npy_to(&mut buf, &[m.nnz() as u64], m.col_idx()).map_err(io)?;
        v.push(("indices.npy", std::mem::take(&mut buf)));
        write_npy_to(&mut buf, &[m.nnz() as u64], m.values()).map_err(io)?;
        v.push(("data.npy", std::mem::take(&mut buf)));
        write_npy_to(&mut buf, &[2], &[m.nrows() as i64, m.ncols() as i64]).map_err(io)?;
        v.push(("shape.npy", std::mem::take(&mut buf)));
        v.push(("format.npy", format_npy_bytes().map_err(io)?));
        v
    };
    for (name, bytes) in members {
        zip.start_file(name, opts).map_err(zerr)?;
        zip.write_all(&bytes).map_err(io)?;
    }
    let mut inner = zip.finish().map_err(zerr)?;
    inner.flush().map_err(io)
}
