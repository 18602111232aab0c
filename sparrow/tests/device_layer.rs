//! The device layer without a GPU: `--device` parsing, what happens when no GPU is usable, and
//! launch-shape checks against device limits (a rejected shape must never be launched).

#[cfg(not(feature = "internals"))]
compile_error!("the library's integration tests use its layers: run `cargo test --workspace`, or `cargo test -p sparrow --features testing`");

use sparrow::device::{driver_present, DeviceSpec, LaunchShape, Limits};
use sparrow::{Device, Error};

fn h200_like() -> Limits {
    Limits {
        name: "test".into(),
        compute_capability: (9, 0),
        sms: 132,
        total_memory: 1 << 30,
        max_threads_per_block: 1024,
        max_block: [1024, 1024, 64],
        max_grid: [i32::MAX as u32, 65535, 65535],
        smem_per_block: 48 * 1024,
        smem_per_block_optin: 227 * 1024,
        smem_per_sm: 228 * 1024,
        max_cluster_portable: 8,
        max_cluster: 16,
        l2_bytes: 50 << 20,
    }
}

#[test]
fn device_spec_parses() {
    assert_eq!("auto".parse::<DeviceSpec>().unwrap(), DeviceSpec::Auto);
    assert_eq!("cpu".parse::<DeviceSpec>().unwrap(), DeviceSpec::Cpu);
    assert_eq!("cuda".parse::<DeviceSpec>().unwrap(), DeviceSpec::Cuda(0));
    assert_eq!("cuda:3".parse::<DeviceSpec>().unwrap(), DeviceSpec::Cuda(3));
    let e = "gpu".parse::<DeviceSpec>().unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid argument `--device`: \"gpu\" is not one of auto, cpu, cuda, cuda:N"
    );
    assert!("cuda:x".parse::<DeviceSpec>().is_err());
}

#[test]
fn cpu_is_always_available() {
    let (d, why) = Device::open(DeviceSpec::Cpu).unwrap();
    assert!(matches!(d, Device::Cpu));
    assert_eq!(why, "the CPU was asked for");
}

/// Without the driver, auto falls back to the CPU with the reason and an explicit CUDA request
/// is an error that says why. Where a driver is present this is the GPU tests' business.
#[test]
fn without_a_driver_cuda_is_refused_and_auto_falls_back() {
    if driver_present() {
        eprintln!("a CUDA driver is present here; the GPU tests cover this machine");
        return;
    }
    let (d, why) = Device::open(DeviceSpec::Auto).unwrap();
    assert!(matches!(d, Device::Cpu));
    assert!(
        why.starts_with("auto: no usable GPU (") && why.contains("libcuda.so was not found"),
        "{why}"
    );
    let e = Device::open(DeviceSpec::Cuda(0)).unwrap_err();
    assert!(matches!(e, Error::Unsupported { .. }));
    assert_eq!(e.to_string(), "unsupported: --device cuda:0: unsupported: the NVIDIA driver library libcuda.so was not found");
}

#[test]
fn launch_shapes_are_checked_against_limits() {
    let l = h200_like();
    assert!(LaunchShape::linear(1000, 256).check(&l, 1024, 0).is_ok());
    let err = |s: LaunchShape, k: u32| s.check(&l, k, 0).unwrap_err().to_string();
    assert_eq!(
        err(LaunchShape::linear(0, 256), 1024),
        "invalid argument `launch shape`: grid (0, 1, 1) x block (256, 1, 1), 0 B shared: a zero dimension launches no work"
    );
    assert!(err(LaunchShape::linear(10, 2048), 1024)
        .ends_with("block dimension 0 exceeds the device limit 1024"));
    assert!(err(LaunchShape::linear(10, 512), 256)
        .ends_with("512 threads per block exceed the limit 256 for this kernel"));
    assert!(
        err(LaunchShape::linear(10, 256).with_smem(228 * 1024), 1024)
            .ends_with("233472 bytes of shared memory exceed the device's 232448 per block")
    );
    // The kernel's static shared memory counts against the same budget.
    assert!(LaunchShape::linear(10, 256)
        .with_smem(224 * 1024)
        .check(&l, 1024, 4096)
        .unwrap_err()
        .to_string()
        .ends_with("233472 bytes of shared memory exceed the device's 232448 per block"));
    assert!(LaunchShape::linear(10, 256)
        .with_smem(224 * 1024)
        .check(&l, 1024, 1024)
        .is_ok());
    assert!(LaunchShape::linear(32, 256)
        .with_smem(200 * 1024)
        .with_cluster(16)
        .check(&l, 1024, 0)
        .is_ok());
    assert!(err(LaunchShape::linear(34, 256).with_cluster(17), 1024)
        .ends_with("cluster of 17 blocks exceeds the device's 16"));
    assert!(err(LaunchShape::linear(30, 256).with_cluster(4), 1024)
        .ends_with("grid dimension 0 is not a multiple of the cluster's 4"));
    let mut no_clusters = l.clone();
    no_clusters.max_cluster = 1;
    assert!(LaunchShape::linear(4, 32)
        .with_cluster(2)
        .check(&no_clusters, 1024, 0)
        .is_err());
    let mut s = LaunchShape::linear(4, 32);
    s.grid[1] = 70000;
    assert!(s
        .check(&l, 1024, 0)
        .unwrap_err()
        .to_string()
        .ends_with("grid dimension 1 exceeds the device limit 65535"));
}
