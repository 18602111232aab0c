//! Compressed sparse row matrices: 64-bit row pointers so nnz may pass 2^31, 32-bit column
//! indices because every column count we serve fits and it halves index traffic on the GPU.

use crate::{Error, Result, Scalar};

/// A CSR matrix whose structure has been fully validated.
///
/// Invariants, checked by every constructor: `row_ptr` has `nrows + 1` entries, starts at 0,
/// never decreases and ends at `nnz`; every column index is in `0..ncols`; within a row the
/// column indices are strictly increasing (sorted and unique). Kernels rely on these, so no
/// public path builds a `Csr` without them.
#[derive(Clone, Debug, PartialEq)]
pub struct Csr<T> {
    nrows: usize,
    ncols: usize,
    row_ptr: Vec<i64>,
    col_idx: Vec<i32>,
    values: Vec<T>,
}

impl<T: Scalar> Csr<T> {
    /// Builds a matrix from its parts, requiring sorted, unique column indices within each row.
    pub fn new(
        nrows: usize,
        ncols: usize,
        row_ptr: Vec<i64>,
        col_idx: Vec<i32>,
        values: Vec<T>,
    ) -> Result<Self> {
        check_shape(nrows, ncols)?;
        check_row_ptr(nrows, &row_ptr, col_idx.len(), values.len())?;
        for r in 0..nrows {
            let (s, e) = (row_ptr[r] as usize, row_ptr[r + 1] as usize);
            let mut prev: i64 = -1;
            for (p, &c) in col_idx[s..e].iter().enumerate() {
                check_col(r, s + p, c, ncols)?;
                if (c as i64) <= prev {
                    let why = if c as i64 == prev {
                        "repeats the previous index"
                    } else {
                        "is smaller than the previous index"
                    };
                    return Err(Error::invalid(
                        "col_idx",
                        format!(
                            "row {r}: column index {c} at position {} {why}; rows must hold sorted, unique column indices",
                            s + p
                        ),
                    ));
                }
                prev = c as i64;
            }
        }
        Ok(Csr {
            nrows,
            ncols,
            row_ptr,
            col_idx,
            values,
        })
    }

    /// Builds a matrix from parts whose rows may be unsorted or hold duplicates: each row is
    /// sorted by column (stably) and duplicates are summed in that order. Everything else is
    /// validated as in [`Csr::new`]. The work is done in the given arrays, so a large matrix
    /// is never held twice.
    pub fn normalized(
        nrows: usize,
        ncols: usize,
        mut row_ptr: Vec<i64>,
        mut col_idx: Vec<i32>,
        mut values: Vec<T>,
    ) -> Result<Self> {
        check_shape(nrows, ncols)?;
        check_row_ptr(nrows, &row_ptr, col_idx.len(), values.len())?;
        for r in 0..nrows {
            let (s, e) = (row_ptr[r] as usize, row_ptr[r + 1] as usize);
            for (p, &c) in col_idx[s..e].iter().enumerate() {
                check_col(r, s + p, c, ncols)?;
            }
        }
        // Rows are compacted towards the front: a row is written no further than where it
        // was read from, so the rows after it are intact when their turn comes.
        let mut out = 0usize;
        let mut row: Vec<(i32, T)> = Vec::new();
        // Where the next row was read from, before its pointer is overwritten.
        let mut s = 0usize;
        for r in 0..nrows {
            let e = row_ptr[r + 1] as usize;
            row.clear();
            row.extend(
                col_idx[s..e]
                    .iter()
                    .copied()
                    .zip(values[s..e].iter().copied()),
            );
            row.sort_by_key(|&(c, _)| c);
            let start = out;
            for &(c, v) in row.iter() {
                if out > start && col_idx[out - 1] == c {
                    values[out - 1] += v;
                } else {
                    col_idx[out] = c;
                    values[out] = v;
                    out += 1;
                }
            }
            row_ptr[r + 1] = out as i64;
            s = e;
        }
        col_idx.truncate(out);
        values.truncate(out);
        col_idx.shrink_to_fit();
        values.shrink_to_fit();
        Ok(Csr {
            nrows,
            ncols,
            row_ptr,
            col_idx,
            values,
        })
    }

    /// Builds a matrix from the coordinate triplets that `emit` hands to its sink, duplicates
    /// summed as in [`Csr::from_triplets`] (the same matrix for the same stream). `emit` runs
    /// twice, to count each row's entries and then to place them, so the triplets are never
    /// stored: the matrix's own arrays are all the memory it takes. Both runs must hand over
    /// the same stream; a second run whose rows hold more or fewer entries is refused.
    pub fn from_triplet_stream(
        nrows: usize,
        ncols: usize,
        emit: impl Fn(&mut dyn FnMut(usize, usize, T)),
    ) -> Result<Self> {
        check_shape(nrows, ncols)?;
        // nrows comes from a file's size line in the readers: refuse what cannot be held.
        let mut counts = crate::memory::try_filled("the row pointers", nrows + 1, 0i64)?;
        let mut bad: Option<Error> = None;
        let mut k = 0usize;
        emit(&mut |r, c, _| {
            if bad.is_none() {
                if r >= nrows {
                    bad = Some(Error::invalid(
                        "rows",
                        format!("entry {k}: row index {r} is out of range for {nrows} rows"),
                    ));
                } else if c >= ncols {
                    bad = Some(Error::invalid(
                        "cols",
                        format!("entry {k}: column index {c} is out of range for {ncols} columns"),
                    ));
                } else {
                    counts[r + 1] += 1;
                }
            }
            k += 1;
        });
        if let Some(e) = bad {
            return Err(e);
        }
        for r in 0..nrows {
            counts[r + 1] += counts[r];
        }
        let total = counts[nrows] as usize;
        let mut next = counts.clone();
        let mut col_idx = vec![0i32; total];
        let mut values = vec![T::ZERO; total];
        let mut placed = 0usize;
        let mut differs = false;
        emit(&mut |r, c, v| {
            if r < nrows && c < ncols && next[r] < counts[r + 1] {
                let p = next[r] as usize;
                col_idx[p] = c as i32;
                values[p] = v;
                next[r] += 1;
                placed += 1;
            } else {
                differs = true;
            }
        });
        if differs || placed != total {
            return Err(Error::invalid(
                "triplets",
                "the second pass over the stream gave other entries than the first",
            ));
        }
        drop(next);
        Self::normalized(nrows, ncols, counts, col_idx, values)
    }

    /// Builds a matrix from coordinate triplets in any order; duplicates are summed.
    pub fn from_triplets(
        nrows: usize,
        ncols: usize,
        rows: &[usize],
        cols: &[usize],
        vals: &[T],
    ) -> Result<Self> {
        check_shape(nrows, ncols)?;
        if rows.len() != cols.len() || rows.len() != vals.len() {
            return Err(Error::invalid(
                "triplets",
                format!(
                    "rows, cols and vals have lengths {}, {} and {}",
                    rows.len(),
                    cols.len(),
                    vals.len()
                ),
            ));
        }
        Self::from_triplet_stream(nrows, ncols, |put| {
            for k in 0..rows.len() {
                put(rows[k], cols[k], vals[k]);
            }
        })
    }

    /// An `nrows x ncols` matrix with no entries.
    pub fn empty(nrows: usize, ncols: usize) -> Result<Self> {
        Self::new(nrows, ncols, vec![0; nrows + 1], vec![], vec![])
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.col_idx.len()
    }
    /// Row pointers, `nrows + 1` of them.
    pub fn row_ptr(&self) -> &[i64] {
        &self.row_ptr
    }
    /// Column indices, row by row.
    pub fn col_idx(&self) -> &[i32] {
        &self.col_idx
    }
    /// Stored values, row by row.
    pub fn values(&self) -> &[T] {
        &self.values
    }
    /// The range of entry positions of row `r`.
    pub fn row_range(&self, r: usize) -> std::ops::Range<usize> {
        self.row_ptr[r] as usize..self.row_ptr[r + 1] as usize
    }
    /// Consumes the matrix, returning `(row_ptr, col_idx, values)`.
    pub fn into_parts(self) -> (Vec<i64>, Vec<i32>, Vec<T>) {
        (self.row_ptr, self.col_idx, self.values)
    }

    /// The same structure with values converted to `U` (rounding when narrowing).
    pub fn cast<U: Scalar>(&self) -> Csr<U> {
        Csr {
            nrows: self.nrows,
            ncols: self.ncols,
            row_ptr: self.row_ptr.clone(),
            col_idx: self.col_idx.clone(),
            values: self
                .values
                .iter()
                .map(|v| U::from_f64(v.to_f64()))
                .collect(),
        }
    }
}

fn check_shape(nrows: usize, ncols: usize) -> Result<()> {
    if ncols > i32::MAX as usize {
        return Err(Error::invalid(
            "ncols",
            format!("{ncols} columns do not fit 32-bit column indices"),
        ));
    }
    if nrows > i64::MAX as usize / 2 {
        return Err(Error::invalid("nrows", format!("{nrows} rows is too many")));
    }
    Ok(())
}

fn check_row_ptr(nrows: usize, row_ptr: &[i64], n_idx: usize, n_val: usize) -> Result<()> {
    if row_ptr.len() != nrows + 1 {
        return Err(Error::invalid(
            "row_ptr",
            format!(
                "has {} entries; {nrows} rows need {}",
                row_ptr.len(),
                nrows + 1
            ),
        ));
    }
    if n_idx != n_val {
        return Err(Error::invalid(
            "values",
            format!("has {n_val} entries but col_idx has {n_idx}"),
        ));
    }
    if row_ptr[0] != 0 {
        return Err(Error::invalid(
            "row_ptr",
            format!("row 0: starts at {}, must start at 0", row_ptr[0]),
        ));
    }
    for r in 0..nrows {
        if row_ptr[r + 1] < row_ptr[r] {
            return Err(Error::invalid(
                "row_ptr",
                format!(
                    "row {r}: ends at {} before it starts at {}; row pointers must never decrease",
                    row_ptr[r + 1],
                    row_ptr[r]
                ),
            ));
        }
    }
    if row_ptr[nrows] != n_idx as i64 {
        return Err(Error::invalid(
            "row_ptr",
            format!(
                "last entry is {} but there are {n_idx} column indices (nnz)",
                row_ptr[nrows]
            ),
        ));
    }
    Ok(())
}

fn check_col(r: usize, p: usize, c: i32, ncols: usize) -> Result<()> {
    if c < 0 || c as usize >= ncols {
        return Err(Error::invalid(
            "col_idx",
            format!(
                "row {r}: column index {c} at position {p} is out of range for {ncols} columns"
            ),
        ));
    }
    Ok(())
}
