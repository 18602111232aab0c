//! The one error type of the crate. Every failure a user can cause is a value of [`Error`]
//! that names the argument, file or kernel involved; nothing reachable from user input panics.

use std::path::PathBuf;

/// Everything that can go wrong in sparrow.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An argument is invalid; `arg` names it and `why` says what is wrong.
    #[error("invalid argument `{arg}`: {why}")]
    InvalidArgument {
        /// The argument's name as the caller knows it.
        arg: String,
        /// What is wrong with it.
        why: String,
    },
    /// No backend can serve the request; `what` names what is missing.
    #[error("unsupported: {what}")]
    Unsupported {
        /// What the request needs that is not available.
        what: String,
    },
    /// The CUDA driver, NVRTC or a CUDA library failed.
    #[error("device error in {context}: {message}")]
    Device {
        /// What was being done: a kernel name and its launch shape, a library call.
        context: String,
        /// The driver's or library's message.
        message: String,
    },
    /// NVRTC rejected a kernel source.
    #[error("NVRTC failed to compile {module} for {arch}: {log}")]
    Compile {
        /// The kernel module name.
        module: String,
        /// The target architecture, such as `sm_90`.
        arch: String,
        /// The compiler's log.
        log: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// An iterative solver's iterates became non-finite or grew without bound: no result is
    /// returned, because none would be trustworthy.
    #[error("{what} failed: {why}")]
    Numerical {
        /// The solver or step that failed.
        what: String,
        /// What was seen, and what the user may change.
        why: String,
    },
    /// A request needs more memory than the machine can give; `needed` is in bytes.
    #[error("{what} is too large: it needs {} and {limit}", human_bytes(*needed))]
    TooLarge {
        /// What would have been allocated.
        what: String,
        /// Bytes it needs (saturated at u64::MAX when even that overflows).
        needed: u64,
        /// What the limit is, in words.
        limit: String,
    },
    /// A long call was stopped by its caller (a cancel flag, Ctrl-C in Python) between two of
    /// its steps; no result is returned.
    #[error("{what} was interrupted {when}")]
    Interrupted {
        /// The call.
        what: String,
        /// Where it stopped, such as "after iteration 3".
        when: String,
    },
    /// A file's contents are malformed or do not match what was asked for.
    #[error("{path}: {why}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong with its contents.
        why: String,
    },
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An [`Error::InvalidArgument`] for `arg`.
    pub fn invalid(arg: impl Into<String>, why: impl Into<String>) -> Self {
        Error::InvalidArgument {
            arg: arg.into(),
            why: why.into(),
        }
    }

    /// An [`Error::Unsupported`].
    pub fn unsupported(what: impl Into<String>) -> Self {
        Error::Unsupported { what: what.into() }
    }

    /// An [`Error::Device`] from any displayable driver or library error.
    pub fn device(context: impl Into<String>, err: impl std::fmt::Display) -> Self {
        Error::Device {
            context: context.into(),
            message: err.to_string(),
        }
    }

    /// An [`Error::Format`] for `path`.
    pub fn format(path: impl Into<PathBuf>, why: impl Into<String>) -> Self {
        Error::Format {
            path: path.into(),
            why: why.into(),
        }
    }

    /// An [`Error::Numerical`] for the solver or step `what`.
    pub fn numerical(what: impl Into<String>, why: impl Into<String>) -> Self {
        Error::Numerical {
            what: what.into(),
            why: why.into(),
        }
    }

    /// The argument this error names, for machine-readable reports.
    pub fn argument(&self) -> Option<&str> {
        match self {
            Error::InvalidArgument { arg, .. } => Some(arg),
            _ => None,
        }
    }

    /// A short name of the error's kind, for machine-readable reports.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::InvalidArgument { .. } => "invalid_argument",
            Error::Unsupported { .. } => "unsupported",
            Error::Device { .. } => "device",
            Error::Compile { .. } => "compile",
            Error::Io { .. } => "io",
            Error::Numerical { .. } => "numerical",
            Error::TooLarge { .. } => "too_large",
            Error::Format { .. } => "format",
            Error::Interrupted { .. } => "interrupted",
        }
    }

    /// An [`Error::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// Bytes in the largest binary unit that keeps the number at least 1, as "8.0 TiB".
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} bytes")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}
