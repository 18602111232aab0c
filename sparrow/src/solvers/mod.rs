//! Algorithms written against ops: compressed-sensing recovery today.

pub mod cs;
