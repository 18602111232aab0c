//! Row-major dense matrices with a leading dimension, the layout of B and C in the products.

use crate::{Error, Result, Scalar};

/// A row-major dense matrix: element (i, j) lives at `data[i * ld + j]`.
///
/// `ld >= ncols` lets a matrix be a view of columns of a wider buffer, as BLAS does. Elements
/// between `ncols` and `ld` in each row are padding: products never read or write them.
#[derive(Clone, Debug, PartialEq)]
pub struct Dense<T> {
    nrows: usize,
    ncols: usize,
    ld: usize,
    data: Vec<T>,
}

impl<T: Scalar> Dense<T> {
    /// Wraps `data` as an `nrows x ncols` matrix with leading dimension `ld`.
    ///
    /// Fails when `ld < ncols` or when `data` is shorter than the last row's end.
    pub fn new(nrows: usize, ncols: usize, ld: usize, data: Vec<T>) -> Result<Self> {
        if ld < ncols {
            return Err(Error::invalid(
                "ld",
                format!("leading dimension {ld} is smaller than the {ncols} columns"),
            ));
        }
        let need = Self::required_len(nrows, ncols, ld)
            .ok_or_else(|| Error::invalid("ld", "nrows * ld overflows"))?;
        if data.len() < need {
            return Err(Error::invalid(
                "data",
                format!(
                    "{} elements are too few for {nrows} x {ncols} with leading dimension {ld} (needs {need})",
                    data.len()
                ),
            ));
        }
        Ok(Dense {
            nrows,
            ncols,
            ld,
            data,
        })
    }

    /// Wraps tightly packed rows (`ld == ncols`).
    pub fn from_rows(nrows: usize, ncols: usize, data: Vec<T>) -> Result<Self> {
        if Some(data.len()) != nrows.checked_mul(ncols) {
            return Err(Error::invalid(
                "data",
                format!("{} elements do not make {nrows} x {ncols}", data.len()),
            ));
        }
        Self::new(nrows, ncols, ncols, data)
    }

    /// An `nrows x ncols` matrix with every element `value`, leading dimension `ld`.
    pub fn filled(nrows: usize, ncols: usize, ld: usize, value: T) -> Result<Self> {
        let need = Self::required_len(nrows, ncols, ld.max(ncols))
            .ok_or_else(|| Error::invalid("ld", "nrows * ld overflows"))?;
        Self::new(nrows, ncols, ld, vec![value; need])
    }

    /// The fewest elements a buffer needs to hold this shape.
    pub fn required_len(nrows: usize, ncols: usize, ld: usize) -> Option<usize> {
        if nrows == 0 {
            Some(0)
        } else {
            (nrows - 1).checked_mul(ld)?.checked_add(ncols)
        }
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    /// Leading dimension: the distance between the starts of consecutive rows.
    pub fn ld(&self) -> usize {
        self.ld
    }
    /// The underlying buffer, padding included.
    pub fn data(&self) -> &[T] {
        &self.data
    }
    /// The underlying buffer, mutable.
    pub fn data_mut(&mut self) -> &mut [T] {
        &mut self.data
    }
    /// Consumes the matrix, returning its buffer.
    pub fn into_data(self) -> Vec<T> {
        self.data
    }
    /// Element (i, j).
    pub fn get(&self, i: usize, j: usize) -> T {
        self.data[i * self.ld + j]
    }
    /// Row `i` without padding.
    pub fn row(&self, i: usize) -> &[T] {
        &self.data[i * self.ld..i * self.ld + self.ncols]
    }
    /// The same matrix packed with `ld == ncols`.
    pub fn to_packed(&self) -> Dense<T> {
        let mut out = Vec::with_capacity(self.nrows * self.ncols);
        for i in 0..self.nrows {
            out.extend_from_slice(self.row(i));
        }
        Dense {
            nrows: self.nrows,
            ncols: self.ncols,
            ld: self.ncols,
            data: out,
        }
    }
}
