//! GPU tests (`--features gpu-tests`): they fail when no GPU is usable. Reference kinds: the
//! SpMM/SpMV results are checked against the naive oracle's arithmetic (f64 sums and summed
//! magnitudes per element, rows split over threads only to finish in time); launches that must
//! be refused are checked to be refused with the kernel's name.
#![cfg(feature = "gpu-tests")]
//!
//! One binary, a module per operation: `products` (SpMM and SpMV paths) and `formats` (the
//! acceleration formats they read), `topk`, `cs`, `seacells`, and `device` (the kernel cache,
//! the cold benchmark).

use std::sync::Arc;

use sparrow::device::{DeviceSpec, Gpu};
use sparrow::{Device, Scalar};

#[macro_use]
mod per_device {
    include!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/shared/device.rs"
    ));
}

mod cs;
mod device;
mod formats;
mod products;
mod seacells;
mod topk;

/// The GPU, with outputs sentinel-filled before every launch (`Gpu::set_sentinels`).
fn gpu() -> Arc<Gpu> {
    match Device::open(DeviceSpec::Cuda(0)) {
        Ok((Device::Cuda(g), _)) => {
            g.set_sentinels(true);
            g
        }
        Ok(_) => unreachable!(),
        Err(e) => panic!("GPU tests need a GPU: {e}"),
    }
}

/// The first `n` values of a device vector, widened to f64 for `compare`.
fn download_f64<T: Scalar>(g: &Gpu, d: &cudarc::driver::CudaSlice<T>, n: usize) -> Vec<f64> {
    g.download(d, n)
        .unwrap()
        .iter()
        .map(|v| v.to_f64())
        .collect()
}
