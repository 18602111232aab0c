//! The benchmark matrices, by name, built by the generators in `matrix::gen` with fixed
//! seeds so every run and every machine measures the same data.

use crate::matrix::{gen, Csr};
use crate::{Error, Result, Scalar};

/// Names `bench` accepts, in the order `all` runs them.
pub const NAMES: [&str; 3] = ["powerlaw", "banded", "empty90"];

/// Builds the benchmark matrix `name`.
///
/// - `powerlaw`: 1,000,000 x 1,000,000, Pareto(1.5) row lengths with mean 16, rows up to
///   100,000 long, uniform columns.
/// - `banded`: 62,451 x 62,451 with 64 consecutive entries per row.
/// - `empty90`: 1,000,000 x 1,000,000 with 90% empty rows and 32 uniform entries in the rest.
pub fn build<T: Scalar>(name: &str) -> Result<Csr<T>> {
    match name {
        "powerlaw" => gen::power_law(1_000_000, 1_000_000, 16.0, 100_000, 1.5, 11),
        "banded" => gen::banded(62_451, 64, 12),
        "empty90" => gen::sparse_rows(1_000_000, 1_000_000, 0.9, 32, 13),
        other => Err(Error::invalid(
            "--matrix",
            format!(
                "unknown matrix {other:?}; choose from {} or all",
                NAMES.join(", ")
            ),
        )),
    }
}
