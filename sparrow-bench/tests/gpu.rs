//! The benchmarks on a GPU (feature `gpu-tests`): they fail without one.
#![cfg(feature = "gpu-tests")]

use std::sync::Arc;

use sparrow::device::{DeviceSpec, Gpu};
use sparrow::Device;

fn gpu() -> Arc<Gpu> {
    match Device::open(DeviceSpec::Cuda(0)) {
        Ok((Device::Cuda(g), _)) => g,
        Ok(_) => unreachable!(),
        Err(e) => panic!("GPU tests need a GPU: {e}"),
    }
}

/// `bench spmv --cold` runs, the flush kernel before every repetition of ours and cuSPARSE's,
/// and its answers still agree with cuSPARSE's (the flush reads its own buffer only).
#[test]
fn small_bench_cold_spmv() {
    let g = gpu();
    // As the CLI runs the bench: no sentinel fills among the timed calls.
    g.set_sentinels(false);
    let cfg = sparrow_bench::BenchConfig {
        op: "spmv".into(),
        matrices: vec!["powerlaw-small".into()],
        ns: vec![1],
        dtypes: vec!["f32".into(), "f64".into()],
        reps: 10,
        cpu: false,
        sweep: false,
        sweep_kernels: vec![],
        cold: true,
    };
    let records = sparrow_bench::run(&g, &cfg, &mut |_| {}).expect("bench runs cold");
    assert!(records.iter().any(|r| r.backend == "cusparse"));
    for r in &records {
        assert!(r.cold, "{r:?}");
        assert!(r.median_ms > 0.0 && r.reps == 10, "{r:?}");
        if r.backend == "sparrow" {
            let tol = if r.dtype == "f32" { 1e-5 } else { 1e-12 };
            let agree = r.agreement.expect("compared with cuSPARSE");
            assert!(agree <= tol, "{} {}: agreement {agree}", r.matrix, r.dtype);
        }
    }
}
