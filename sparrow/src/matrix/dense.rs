//! Row-major dense matrices with a leading dimension, the layout of B and C in the products.

use crate::{memory, Error, Result, Scalar};

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
        let need = Self::required_len(nrows, ncols, ld).ok_or_else(|| {
            Error::invalid(
                "ld",
                format!("{nrows} rows of leading dimension {ld} overflow the element count"),
            )
        })?;
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
        if nrows.checked_mul(ncols).is_none() {
            return Err(Error::TooLarge {
                what: format!("a {nrows} x {ncols} dense matrix"),
                needed: u64::MAX,
                limit: "its element count overflows".to_string(),
            });
        }
        if Some(data.len()) != nrows.checked_mul(ncols) {
            return Err(Error::invalid(
                "data",
                format!("{} elements do not make {nrows} x {ncols}", data.len()),
            ));
        }
        Self::new(nrows, ncols, ncols, data)
    }

    /// An `nrows x ncols` matrix with every element `value`, leading dimension `ld`.
    ///
    /// Zero rows or columns give an empty matrix. A shape whose elements overflow or exceed
    /// the machine's memory is [`Error::TooLarge`], checked before anything is allocated;
    /// `ld < ncols` is [`Error::InvalidArgument`].
    pub fn filled(nrows: usize, ncols: usize, ld: usize, value: T) -> Result<Self> {
        if ld < ncols {
            return Err(Error::invalid(
                "ld",
                format!("leading dimension {ld} is smaller than the {ncols} columns"),
            ));
        }
        let what = format!("a {nrows} x {ncols} dense matrix (leading dimension {ld})");
        let need = Self::required_len(nrows, ncols, ld).ok_or_else(|| Error::TooLarge {
            what: what.clone(),
            needed: u64::MAX,
            limit: "its element count overflows".to_string(),
        })?;
        let data = memory::try_filled(&what, need, value)?;
        Self::new(nrows, ncols, ld, data)
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
    ///
    /// # Panics
    /// When `i >= nrows` (a matrix of 0 rows has no row 0); [`Dense::row_checked`] answers
    /// `None` instead.
    pub fn row(&self, i: usize) -> &[T] {
        match self.row_checked(i) {
            Some(r) => r,
            None => panic!("row {i} is outside a matrix of {} rows", self.nrows),
        }
    }
    /// Row `i` without padding, or `None` when the matrix has no row `i`.
    pub fn row_checked(&self, i: usize) -> Option<&[T]> {
        if i >= self.nrows {
            return None;
        }
        self.data.get(i * self.ld..i * self.ld + self.ncols)
    }
    /// The same matrix packed with `ld == ncols`.
    pub fn to_packed(&self) -> Dense<T> {
        if self.ld == self.ncols || self.ncols == 0 {
            // Already packed (or no elements at all): the rows are the buffer's front.
            let len = self.nrows.saturating_mul(self.ncols);
            return Dense {
                nrows: self.nrows,
                ncols: self.ncols,
                ld: self.ncols,
                data: self.data[..len].to_vec(),
            };
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_dimensions_make_empty_matrices() {
        for (r, c, ld) in [(0, 0, 0), (0, 5, 5), (3, 0, 0), (3, 0, 4), (0, 0, 7)] {
            let d = Dense::<f32>::filled(r, c, ld, 1.0).unwrap();
            assert_eq!((d.nrows(), d.ncols()), (r, c));
            let p = d.to_packed();
            assert!(p.data().is_empty());
        }
        assert!(Dense::<f64>::from_rows(0, 4, vec![]).is_ok());
        assert!(Dense::<f64>::from_rows(4, 0, vec![]).is_ok());
        // Many rows of no columns hold nothing and pack at once.
        let wide = Dense::<f64>::from_rows(usize::MAX / 2, 0, vec![]).unwrap();
        assert!(wide.to_packed().data().is_empty());
    }

    #[test]
    fn huge_or_inconsistent_shapes_are_errors_not_panics() {
        let e = Dense::<f64>::filled(1 << 40, 1 << 30, 1 << 30, 0.0).unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }), "{e}");
        assert!(e.to_string().contains("too large"), "{e}");
        let e = Dense::<f64>::filled(1 << 30, 1 << 20, 1 << 20, 0.0).unwrap_err();
        assert!(e.to_string().contains("1073741824 x 1048576"), "{e}");
        let empty = Dense::<f32>::filled(0, 4, 4, 0.0).unwrap();
        assert_eq!(empty.row_checked(0), None);
        let one = Dense::<f32>::filled(1, 2, 3, 5.0).unwrap();
        assert_eq!(one.row_checked(0), Some(&[5.0f32, 5.0][..]));
        let e = Dense::<f64>::filled(usize::MAX, 2, 2, 0.0).unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }), "{e}");
        let e = Dense::<f64>::filled(2, 5, 3, 0.0).unwrap_err();
        assert_eq!(e.argument(), Some("ld"), "{e}");
        let e = Dense::<f64>::from_rows(usize::MAX, 2, vec![]).unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }), "{e}");
        let e = Dense::<f64>::from_rows(2, 2, vec![1.0]).unwrap_err();
        assert_eq!(e.argument(), Some("data"), "{e}");
        let e = Dense::<f64>::new(usize::MAX, 2, usize::MAX, vec![]).unwrap_err();
        assert_eq!(e.argument(), Some("ld"), "{e}");
    }
}
