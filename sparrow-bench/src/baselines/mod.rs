//! Other libraries run beside ours on the same data, in the same process, for benchmarks and
//! cross-backend checks.

pub mod cusparse;
