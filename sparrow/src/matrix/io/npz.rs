//! CSR matrices in the `.npz` layout that `scipy.sparse.save_npz` writes: members `indptr`,
//! `indices`, `data`, `shape` and `format` (`b"csr"`), stored or deflated.

use std::io::{Read, Seek, Write};

use npyz::WriterBuilder;
use std::path::Path;

use super::npy::{read_header, read_npy_limited, read_npy_text, write_npy_to, NpyArray};
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

/// Opens the zip archive of an `.npz` file.
fn open_zip(path: &Path) -> Result<zip::ZipArchive<std::io::BufReader<std::fs::File>>> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    zip::ZipArchive::new(std::io::BufReader::new(f))
        .map_err(|e| Error::format(path, format!("not a valid .npz (zip) file: {e}")))
}

/// Opens member `file`, answering its declared uncompressed size and a reader that yields no
/// more than that many bytes (a deflate stream that inflates past its declared size ends
/// there instead of filling memory).
fn open_member<'a, R: Read + Seek>(
    zip: &'a mut zip::ZipArchive<R>,
    path: &Path,
    file: &str,
) -> Result<(
    u64,
    std::io::BufReader<std::io::Take<zip::read::ZipFile<'a, R>>>,
)> {
    let entry = zip.by_name(file).map_err(|e| match e {
        zip::result::ZipError::FileNotFound => Error::format(
            path,
            format!("member {file} is missing; not a matrix written by scipy.sparse.save_npz"),
        ),
        e => Error::format(path, format!("member {file}: {e}")),
    })?;
    let size = entry.size();
    Ok((size, std::io::BufReader::new(entry.take(size))))
}

/// Rewrites an error about the member's own bytes (named `path/file`) as one naming the
/// `.npz` file; a too-large member stays [`Error::TooLarge`].
fn in_member(path: &Path, file: &str, e: Error) -> Error {
    match e {
        Error::Format { why, .. } => Error::format(path, format!("member {file}: {why}")),
        other => other,
    }
}

fn member<R: Read + Seek>(
    zip: &mut zip::ZipArchive<R>,
    path: &Path,
    name: &str,
) -> Result<NpyArray> {
    let file = format!("{name}.npy");
    let (size, reader) = open_member(zip, path, &file)?;
    let member_path = path.join(&file);
    read_npy_limited(reader, &member_path, Some(size), false).map_err(|e| in_member(path, &file, e))
}

fn read_format<R: Read + Seek>(zip: &mut zip::ZipArchive<R>, path: &Path) -> Result<String> {
    let file = "format.npy";
    let (size, reader) = open_member(zip, path, file)?;
    read_npy_text(reader, &path.join(file), Some(size)).map_err(|e| in_member(path, file, e))
}

/// The value type of member `data.npy`, from the zip directory and that member's header.
pub(super) fn value_dtype(path: &Path) -> Result<Option<&'static str>> {
    let mut zip = open_zip(path)?;
    let file = "data.npy";
    let (size, mut reader) = open_member(&mut zip, path, file)?;
    let member_path = path.join(file);
    read_header(&mut reader, &member_path, Some(size))
        .and_then(|h| h.value_dtype(&member_path))
        .map_err(|e| in_member(path, file, e))
}

/// Reads a CSR matrix written by `scipy.sparse.save_npz`.
pub fn read_npz_csr<T: Scalar>(path: impl AsRef<Path>, normalize: Normalize) -> Result<Csr<T>> {
    let path = path.as_ref();
    let mut zip = open_zip(path)?;
    let format = read_format(&mut zip, path)?;
    if format != "csr" {
        return Err(Error::format(
            path,
            format!(
                "holds a sparse matrix in format {:?}; sparrow reads \"csr\" (convert with .tocsr())",
                format.chars().take(40).collect::<String>()
            ),
        ));
    }
    let shape = member(&mut zip, path, "shape")?
        .data
        .to_i64(path, "shape")?;
    if shape.len() != 2 || shape.iter().any(|&d| d < 0) {
        return Err(Error::format(
            path,
            format!(
                "shape {:?} is not two non-negative sizes",
                &shape[..shape.len().min(8)]
            ),
        ));
    }
    let (nrows, ncols) = (shape[0] as usize, shape[1] as usize);
    if ncols > i32::MAX as usize {
        return Err(Error::format(
            path,
            format!("{ncols} columns do not fit 32-bit column indices"),
        ));
    }
    let indptr = member(&mut zip, path, "indptr")?
        .data
        .to_i64(path, "indptr")?;
    if indptr.len() as u64 != nrows as u64 + 1 {
        return Err(Error::format(
            path,
            format!(
                "indptr has {} entries but shape {nrows} x {ncols} needs {}",
                indptr.len(),
                nrows as u64 + 1
            ),
        ));
    }
    let indices = member(&mut zip, path, "indices")?;
    let data = member(&mut zip, path, "data")?;
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
    drop(indices);
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
    drop(idx64);
    let values = data.data.to_scalar::<T>(path, "data")?;
    drop(data);
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

/// Writes a CSR matrix in the layout `scipy.sparse.load_npz` reads (deflated, as scipy's
/// default), atomically (see [`write_atomic`](super::write_atomic)).
pub fn write_npz_csr<T: Scalar>(path: impl AsRef<Path>, m: &Csr<T>) -> Result<()> {
    super::write_atomic_file(path.as_ref(), |f| {
        let mut zip = zip::ZipWriter::new(f);
        let zerr = |e: zip::result::ZipError| std::io::Error::other(format!("writing zip: {e}"));
        // Members past 4 GiB need zip64 records; a margin covers the .npy header.
        let opts = |elems: usize, elem: usize| {
            zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated)
                .large_file(elems as u64 * elem as u64 >= u32::MAX as u64 - (1 << 16))
        };
        zip.start_file("indptr.npy", opts(m.row_ptr().len(), 8))
            .map_err(zerr)?;
        write_npy_to(&mut zip, &[m.row_ptr().len() as u64], m.row_ptr())?;
        zip.start_file("indices.npy", opts(m.nnz(), 4))
            .map_err(zerr)?;
        write_npy_to(&mut zip, &[m.nnz() as u64], m.col_idx())?;
        zip.start_file("data.npy", opts(m.nnz(), std::mem::size_of::<T>()))
            .map_err(zerr)?;
        write_npy_to(&mut zip, &[m.nnz() as u64], m.values())?;
        zip.start_file("shape.npy", opts(2, 8)).map_err(zerr)?;
        write_npy_to(&mut zip, &[2], &[m.nrows() as i64, m.ncols() as i64])?;
        zip.start_file("format.npy", opts(1, 3)).map_err(zerr)?;
        zip.write_all(&format_npy_bytes()?)?;
        zip.finish().map_err(zerr)?;
        Ok(())
    })
}
