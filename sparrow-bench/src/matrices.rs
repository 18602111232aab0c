//! The benchmark matrices, by name, built by the generators in `matrix::gen` with fixed
//! seeds so every run and every machine measures the same data.

use sparrow::matrix::{gen, Csr};
use sparrow::{Error, Result, Scalar};

/// Names `bench` accepts; `all` runs the first three, `--suite` all of them.
pub const NAMES: [&str; 10] = [
    "powerlaw",
    "banded",
    "empty90",
    "blockdiag",
    "uniform",
    "longrows",
    "stencil2d",
    "stencil3d",
    "fem",
    "powerlaw-small",
];

/// The matrices of the SpMM performance panel.
pub const SUITE: [&str; 9] = [
    "banded",
    "blockdiag",
    "uniform",
    "powerlaw",
    "longrows",
    "empty90",
    "stencil2d",
    "stencil3d",
    "fem",
];

/// Builds the benchmark matrix `name`.
///
/// - `powerlaw`: 1,000,000 x 1,000,000, Pareto(1.5) row lengths with mean 16, rows up to
///   100,000 long, uniform columns.
/// - `banded`: 62,451 x 62,451 with 64 consecutive entries per row.
/// - `empty90`: 1,000,000 x 1,000,000 with 90% empty rows and 32 uniform entries in the rest.
/// - `blockdiag`: 500,000 rows of dense 32 x 32 diagonal blocks.
/// - `uniform`: 1,000,000 x 1,000,000 with 16 uniform entries per row.
/// - `longrows`: 2,000,000 x 2,000,000, two rows of 1,200,000 entries, the rest 4 per row.
/// - `stencil2d`: 5-point stencil on a 1000 x 1000 grid.
/// - `stencil3d`: 27-point stencil on a 100^3 grid.
/// - `fem`: symmetric, 1,000,000 nodes, 1,500,000 random 4-node elements in local windows.
/// - `powerlaw-small`: 100,000 rows of the power law with rows up to 10,000 (quick checks).
pub fn build<T: Scalar>(name: &str) -> Result<Csr<T>> {
    match name {
        "powerlaw" => gen::power_law(1_000_000, 1_000_000, 16.0, 100_000, 1.5, 11),
        "banded" => gen::banded(62_451, 64, 12),
        "empty90" => gen::sparse_rows(1_000_000, 1_000_000, 0.9, 32, 13),
        "blockdiag" => gen::block_diagonal(15_625, 32, 14),
        "uniform" => gen::uniform(1_000_000, 1_000_000, 16, 15),
        "longrows" => gen::long_rows(2_000_000, 2_000_000, 2, 1_200_000, 4, 16),
        "stencil2d" => gen::stencil_2d(1000, 1000, 17),
        "stencil3d" => gen::stencil_3d(100, 18),
        "fem" => gen::fem_like(1_000_000, 1_500_000, 19),
        "powerlaw-small" => gen::power_law(100_000, 100_000, 16.0, 10_000, 1.5, 20),
        other => Err(Error::invalid(
            "--matrix",
            format!(
                "unknown matrix {other:?}; choose from {} or all",
                NAMES.join(", ")
            ),
        )),
    }
}
