//! MatrixMarket coordinate files: read real, integer and pattern matrices, general or
//! symmetric; write general real.

use std::io::BufRead;
use std::path::Path;

use crate::matrix::Csr;
use crate::{memory, Error, Result, Scalar};

#[derive(Clone, Copy, PartialEq)]
enum Field {
    Real,
    Integer,
    Pattern,
}

/// Shortest bytes of an entry line: "1 1 1\n", or "1 1\n" in a pattern file.
const MIN_LINE: u64 = 6;
const MIN_PATTERN_LINE: u64 = 4;

/// At most `max` characters of `s`, to quote in an error.
fn quote(s: &str) -> String {
    const MAX: usize = 60;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{:?}...", &s[..i]),
        None => format!("{s:?}"),
    }
}

/// Reads a MatrixMarket coordinate file; duplicates are summed, symmetric files are expanded.
///
/// Nothing is allocated on the size line's word alone: the entries reserved are as many as
/// the file's bytes can hold, and the row pointers a size line asks for are checked against
/// the machine's memory ([`Error::TooLarge`]) before a single entry is read.
pub fn read_mtx<T: Scalar>(path: impl AsRef<Path>) -> Result<Csr<T>> {
    let path = path.as_ref();
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let file_len = f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
    let mut reader = std::io::BufReader::new(f);
    let bad = |line: usize, why: String| Error::format(path, format!("line {}: {why}", line + 1));
    let mut buf = Vec::new();
    let mut ln = 0usize;
    // The next line without its line ending, or None at the end of the file.
    let mut next_line = |buf: &mut Vec<u8>| -> Result<Option<(usize, String)>> {
        buf.clear();
        let n = reader
            .read_until(b'\n', buf)
            .map_err(|e| Error::io(path, e))?;
        if n == 0 {
            return Ok(None);
        }
        let this = ln;
        ln += 1;
        if buf.last() == Some(&b'\n') {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
        }
        match std::str::from_utf8(buf) {
            Ok(s) => Ok(Some((this, s.to_string()))),
            Err(_) => Err(bad(this, "is not valid UTF-8 text".to_string())),
        }
    };

    let (_, header) = next_line(&mut buf)?
        .ok_or_else(|| Error::format(path, "empty file; expected a %%MatrixMarket header"))?;
    let words: Vec<String> = header
        .split_whitespace()
        .take(6)
        .map(|w| w.to_ascii_lowercase())
        .collect();
    if words.len() != 5 || words[0] != "%%matrixmarket" || words[1] != "matrix" {
        return Err(bad(
            0,
            format!(
                "expected '%%MatrixMarket matrix coordinate <field> <symmetry>', found {}",
                quote(&header)
            ),
        ));
    }
    if words[2] != "coordinate" {
        return Err(bad(
            0,
            format!(
                "format {} is not supported; sparrow reads coordinate files",
                quote(&words[2])
            ),
        ));
    }
    let field = match words[3].as_str() {
        "real" | "double" => Field::Real,
        "integer" => Field::Integer,
        "pattern" => Field::Pattern,
        other => {
            return Err(bad(
                0,
                format!(
                    "field {} is not supported (real, integer, pattern)",
                    quote(other)
                ),
            ))
        }
    };
    let symmetric = match words[4].as_str() {
        "general" => false,
        "symmetric" => true,
        other => {
            return Err(bad(
                0,
                format!(
                    "symmetry {} is not supported (general, symmetric)",
                    quote(other)
                ),
            ))
        }
    };

    let mut size: Option<(usize, usize, usize)> = None;
    let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
    let mut seen = 0usize;
    let mut last_line = 0usize;
    while let Some((ln, line)) = next_line(&mut buf)? {
        last_line = ln;
        let t = line.trim();
        if t.is_empty() || t.starts_with('%') {
            continue;
        }
        let mut it = t.split_whitespace();
        let Some((m, n, nnz)) = size else {
            let parse = |s: Option<&str>| s.and_then(|s| s.parse::<usize>().ok());
            let (m, n, z) = (parse(it.next()), parse(it.next()), parse(it.next()));
            match (m, n, z, it.next()) {
                (Some(m), Some(n), Some(z), None) => {
                    if symmetric && m != n {
                        return Err(bad(
                            ln,
                            format!("a symmetric matrix must be square, found {m} x {n}"),
                        ));
                    }
                    let cap = reserve_for::<T>(path, m, n, z, symmetric, field, file_len)?;
                    size = Some((m, n, z));
                    rows.reserve_exact(cap);
                    cols.reserve_exact(cap);
                    vals.reserve_exact(cap);
                    continue;
                }
                _ => {
                    return Err(bad(
                        ln,
                        format!("expected the size line 'rows cols nnz', found {}", quote(t)),
                    ))
                }
            }
        };
        if seen == nnz {
            return Err(bad(
                ln,
                format!("more entries than the {nnz} the size line declares"),
            ));
        }
        let idx = |s: Option<&str>, what: &str, lim: usize| -> Result<usize> {
            let v: usize = s
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| bad(ln, format!("expected a {what} index, found {}", quote(t))))?;
            if v == 0 || v > lim {
                return Err(bad(
                    ln,
                    format!("{what} index {v} is out of range 1..={lim}"),
                ));
            }
            Ok(v - 1)
        };
        let i = idx(it.next(), "row", m)?;
        let j = idx(it.next(), "column", n)?;
        let v = match field {
            Field::Pattern => 1.0,
            Field::Real => it
                .next()
                .and_then(|s| s.parse::<f64>().ok())
                .ok_or_else(|| bad(ln, format!("expected a real value, found {}", quote(t))))?,
            Field::Integer => it
                .next()
                .and_then(|s| s.parse::<i64>().ok())
                .ok_or_else(|| bad(ln, format!("expected an integer value, found {}", quote(t))))?
                as f64,
        };
        if it.next().is_some() {
            return Err(bad(ln, format!("too many fields in {}", quote(t))));
        }
        if symmetric && j > i {
            return Err(bad(
                ln,
                format!(
                    "entry ({}, {}) is above the diagonal in a symmetric file",
                    i + 1,
                    j + 1
                ),
            ));
        }
        rows.push(i);
        cols.push(j);
        vals.push(T::from_f64(v));
        if symmetric && i != j {
            rows.push(j);
            cols.push(i);
            vals.push(T::from_f64(v));
        }
        seen += 1;
    }
    let Some((m, n, nnz)) = size else {
        return Err(Error::format(path, "no size line; the file is truncated"));
    };
    if seen < nnz {
        return Err(bad(
            last_line,
            format!("the file is truncated: {seen} entries of the {nnz} the size line declares"),
        ));
    }
    Csr::from_triplets(m, n, &rows, &cols, &vals).map_err(|e| match e {
        e @ Error::TooLarge { .. } => e,
        e => Error::format(path, e.to_string()),
    })
}

/// Checks the size line `m x n` with `nnz` entries against the machine and answers how many
/// entries to reserve: no more than the file's bytes can hold. The row pointers (two arrays of
/// `m + 1` while the matrix is built) must fit, whatever the entries; columns must fit the
/// 32-bit column indices.
fn reserve_for<T: Scalar>(
    path: &Path,
    m: usize,
    n: usize,
    nnz: usize,
    symmetric: bool,
    field: Field,
    file_len: Option<u64>,
) -> Result<usize> {
    let what = format!("the {m} x {n} matrix in {}", path.display());
    let overflow = || Error::TooLarge {
        what: what.clone(),
        needed: u64::MAX,
        limit: "its row pointers overflow 64 bits".to_string(),
    };
    let row_ptr = (m as u64)
        .checked_add(1)
        .and_then(|r| r.checked_mul(2 * 8))
        .ok_or_else(overflow)?;
    memory::ensure_fits(&what, row_ptr)?;
    if n > i32::MAX as usize {
        return Err(Error::format(
            path,
            format!("{n} columns do not fit 32-bit column indices"),
        ));
    }
    let per_line = if field == Field::Pattern {
        MIN_PATTERN_LINE
    } else {
        MIN_LINE
    };
    let lines = file_len.map_or(0, |l| l / per_line);
    let copies = if symmetric { 2 } else { 1 };
    let cap = (nnz as u64).min(lines).saturating_mul(copies);
    // Each entry is held as a triplet (two indices, a value) and then in the matrix (a
    // column index and a value).
    let entry = (2 * std::mem::size_of::<usize>() + 4 + 2 * std::mem::size_of::<T>()) as u64;
    memory::ensure_fits(&what, row_ptr.saturating_add(cap.saturating_mul(entry)))?;
    Ok(usize::try_from(cap).unwrap_or(usize::MAX))
}

/// Writes a general real MatrixMarket coordinate file, values in shortest round-trip form,
/// atomically (see [`write_atomic`](super::write_atomic)).
pub fn write_mtx<T: Scalar>(path: impl AsRef<Path>, m: &Csr<T>) -> Result<()> {
    super::write_atomic(path.as_ref(), |w| {
        writeln!(w, "%%MatrixMarket matrix coordinate real general")?;
        writeln!(w, "{} {} {}", m.nrows(), m.ncols(), m.nnz())?;
        for r in 0..m.nrows() {
            for p in m.row_range(r) {
                writeln!(
                    w,
                    "{} {} {:?}",
                    r + 1,
                    m.col_idx()[p] + 1,
                    m.values()[p].to_f64()
                )?;
            }
        }
        Ok(())
    })
}
