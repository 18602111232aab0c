//! `sparrow bench`: our kernels beside cuSPARSE (and optionally the CPU backend) on the same
//! data in the same process, timed with CUDA events, reported against the copy bandwidth
//! measured in the same run; [`run_cpu`] times the CPU backend alone against the host's read
//! bandwidth, and `analysis` the host half of an upload's analysis.
//!
//! A crate of its own so that the library carries no code its users do not run: the cuSPARSE
//! baselines, the benchmarks' own kernels and the timing harness live here.
#![warn(missing_docs)]

pub mod analysis;
pub mod baselines;
pub mod cs;
pub mod matrices;
mod products;
pub mod seacells;
pub mod timing;
pub mod topk;

pub use products::{run, run_cpu, BenchConfig, Record};
pub use timing::{
    copy_bandwidth, host_read_bandwidth, time_cpu, time_gpu, time_gpu_flushed, L2Flush, Timing,
};
