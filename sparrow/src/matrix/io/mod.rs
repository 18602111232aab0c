//! Reading and writing matrices: `.npy` dense arrays, scipy's `.npz` CSR layout, MatrixMarket.
//! Every error names the file.
//!
//! Readers take no size in a file on trust: every allocation is bounded by the bytes the file
//! holds (or, inside a zip, the bytes a member declares and then delivers) and checked against
//! the machine's memory first, so a malformed file is an error, never a panic or an abort.
//! Writers are atomic ([`write_atomic`]): a failed write leaves an earlier file intact.

mod mtx;
mod npy;
mod npz;

pub use mtx::{read_mtx, write_mtx};
pub use npy::{
    dense_value_dtype, read_dense, read_npy, read_npy_from, write_dense, write_npy, write_npy_to,
    NpyArray, NpyData,
};
pub use npz::{read_npz_csr, write_npz_csr, Normalize};

use std::io::Write;
use std::path::{Path, PathBuf};

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
/// data report `None`, leaving the choice to the caller. Only the zip directory and the
/// header of the `.npz` member `data.npy` are read (a `.mtx` file is not opened).
pub fn sparse_value_dtype(path: impl AsRef<Path>) -> Result<Option<&'static str>> {
    let path = path.as_ref();
    if path.extension().and_then(|e| e.to_str()) != Some("npz") {
        return Ok(None);
    }
    npz::value_dtype(path)
}

/// Writes a file atomically: `write` fills a new temporary file in the destination's own
/// folder, which is flushed, synced to disk and only then renamed over `path`. On any error
/// (or a panic in `write`) the temporary file is removed, so an earlier file at `path` stays
/// as it was and no partial file is left. Where `path` is a symbolic link, the file it points
/// to is replaced and the link kept. The new file takes the permissions of the one it
/// replaces. Errors are [`Error::Io`] naming `path`.
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    write_atomic_file(path, |w| write(w))
}

/// [`write_atomic`] with the buffered file itself, for writers that seek (zip).
pub(crate) fn write_atomic_file(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<()> {
    let io = |e| Error::io(path, e);
    let target = resolve_links(path).map_err(io)?;
    let name = target.file_name().ok_or_else(|| {
        io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a file name",
        ))
    })?;
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (file, tmp) = create_temp(&dir, name).map_err(io)?;
    let guard = RemoveOnDrop(Some(tmp));
    let tmp_path = guard.0.as_deref().unwrap_or(Path::new(""));
    if let Ok(meta) = std::fs::metadata(&target) {
        // Best effort: a file we may not chmod is still written.
        let _ = file.set_permissions(meta.permissions());
    }
    let mut w = std::io::BufWriter::new(file);
    write(&mut w).map_err(io)?;
    let file = w.into_inner().map_err(|e| io(e.into_error()))?;
    file.sync_all().map_err(io)?;
    drop(file);
    std::fs::rename(tmp_path, &target).map_err(io)?;
    guard.keep();
    // The rename is durable once the folder is synced; not every system lets a folder be
    // opened for that, and the file's own bytes are already on disk.
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Follows symbolic links from `path` to the file they name (which need not exist yet).
fn resolve_links(path: &Path) -> std::io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let t = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(d) if t.is_relative() => d.join(t),
                    _ => t,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

/// Creates a new, uniquely named temporary file beside the destination.
fn create_temp(dir: &Path, name: &std::ffi::OsStr) -> std::io::Result<(std::fs::File, PathBuf)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut last = None;
    for _ in 0..100 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{}-{n}.tmp", std::process::id()));
        let tmp = dir.join(tmp_name);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(f) => return Ok((f, tmp)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary name")))
}

/// Removes the temporary file unless the write completed.
struct RemoveOnDrop(Option<PathBuf>);

impl RemoveOnDrop {
    fn keep(mut self) {
        self.0 = None;
    }
}

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}
