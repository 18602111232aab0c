//! `sparrow bench`: our kernels beside cuSPARSE (and optionally the CPU backend) on the same
//! data in the same process, timed with CUDA events, reported against the copy bandwidth
//! measured in the same run; `analysis` times the host half of an upload's analysis alone.

pub mod analysis;
pub mod cs;
pub mod matrices;
mod products;
pub mod seacells;
pub mod timing;
pub mod topk;

pub use products::{run, BenchConfig, Record};
pub use timing::{copy_bandwidth, time_cpu, time_gpu, time_gpu_flushed, L2Flush, Timing};
