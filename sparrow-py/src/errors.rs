//! sparrow's errors as Python exceptions: a bad argument is a `ValueError` naming it as the
//! Python signature spells it, a request too large a `MemoryError`, a stopped call a
//! `KeyboardInterrupt`, the rest (device, compiler, numerical failures) a `RuntimeError`.

use pyo3::exceptions::{PyKeyboardInterrupt, PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::PyErr;
use sparrow::Error;

/// The Python spelling of an argument the library names as the CLI does (`--device`).
fn python_name(arg: &str) -> String {
    arg.trim_start_matches("--").replace('-', "_")
}

/// Converts a library error.
pub fn to_py(e: Error) -> PyErr {
    match e {
        Error::InvalidArgument { arg, why } => {
            PyValueError::new_err(format!("invalid argument `{}`: {why}", python_name(&arg)))
        }
        e @ Error::TooLarge { .. } => PyMemoryError::new_err(e.to_string()),
        e @ Error::Interrupted { .. } => PyKeyboardInterrupt::new_err(e.to_string()),
        e => PyRuntimeError::new_err(e.to_string()),
    }
}

/// A `ValueError` for `arg`.
pub fn invalid(arg: &str, why: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("invalid argument `{arg}`: {why}"))
}

/// Library results as Python results.
pub trait OrPy<T> {
    /// The value, or the error as its exception.
    fn py(self) -> pyo3::PyResult<T>;
}

impl<T> OrPy<T> for sparrow::Result<T> {
    fn py(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}
