//! MatrixMarket coordinate files: read real, integer and pattern matrices, general or
//! symmetric; write general real.

use std::io::{BufRead, Write};
use std::path::Path;

use crate::matrix::Csr;
use crate::{Error, Result, Scalar};

#[derive(Clone, Copy, PartialEq)]
enum Field {
    Real,
    Integer,
    Pattern,
}

/// Reads a MatrixMarket coordinate file; duplicates are summed, symmetric files are expanded.
pub fn read_mtx<T: Scalar>(path: impl AsRef<Path>) -> Result<Csr<T>> {
    let path = path.as_ref();
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut lines = std::io::BufReader::new(f).lines().enumerate();
    let bad = |line: usize, why: String| Error::format(path, format!("line {}: {why}", line + 1));

    let (_, header) = lines
        .next()
        .ok_or_else(|| Error::format(path, "empty file; expected a %%MatrixMarket header"))?;
    let header = header.map_err(|e| Error::io(path, e))?;
    let words: Vec<String> = header
        .split_whitespace()
        .map(|w| w.to_ascii_lowercase())
        .collect();
    if words.len() != 5 || words[0] != "%%matrixmarket" || words[1] != "matrix" {
        return Err(bad(
            0,
            format!(
                "expected '%%MatrixMarket matrix coordinate <field> <symmetry>', found {header:?}"
            ),
        ));
    }
    if words[2] != "coordinate" {
        return Err(bad(
            0,
            format!(
                "format {:?} is not supported; sparrow reads coordinate files",
                words[2]
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
                format!("field {other:?} is not supported (real, integer, pattern)"),
            ))
        }
    };
    let symmetric = match words[4].as_str() {
        "general" => false,
        "symmetric" => true,
        other => {
            return Err(bad(
                0,
                format!("symmetry {other:?} is not supported (general, symmetric)"),
            ))
        }
    };

    let mut size: Option<(usize, usize, usize)> = None;
    let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
    let mut seen = 0usize;
    let mut last_line = 0usize;
    for (ln, line) in lines {
        let line = line.map_err(|e| Error::io(path, e))?;
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
                    size = Some((m, n, z));
                    let cap = if symmetric { 2 * z } else { z };
                    rows.reserve(cap);
                    cols.reserve(cap);
                    vals.reserve(cap);
                    continue;
                }
                _ => {
                    return Err(bad(
                        ln,
                        format!("expected the size line 'rows cols nnz', found {t:?}"),
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
                .ok_or_else(|| bad(ln, format!("expected a {what} index, found {t:?}")))?;
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
                .ok_or_else(|| bad(ln, format!("expected a real value, found {t:?}")))?,
            Field::Integer => it
                .next()
                .and_then(|s| s.parse::<i64>().ok())
                .ok_or_else(|| bad(ln, format!("expected an integer value, found {t:?}")))?
                as f64,
        };
        if it.next().is_some() {
            return Err(bad(ln, format!("too many fields in {t:?}")));
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
    Csr::from_triplets(m, n, &rows, &cols, &vals).map_err(|e| Error::format(path, e.to_string()))
}

/// Writes a general real MatrixMarket coordinate file, values in shortest round-trip form.
pub fn write_mtx<T: Scalar>(path: impl AsRef<Path>, m: &Csr<T>) -> Result<()> {
    let path = path.as_ref();
    let io = |e| Error::io(path, e);
    let f = std::fs::File::create(path).map_err(io)?;
    let mut w = std::io::BufWriter::new(f);
    writeln!(w, "%%MatrixMarket matrix coordinate real general").map_err(io)?;
    writeln!(w, "{} {} {}", m.nrows(), m.ncols(), m.nnz()).map_err(io)?;
    for r in 0..m.nrows() {
        for p in m.row_range(r) {
            writeln!(
                w,
                "{} {} {:?}",
                r + 1,
                m.col_idx()[p] + 1,
                m.values()[p].to_f64()
            )
            .map_err(io)?;
        }
    }
    w.flush().map_err(io)
}
