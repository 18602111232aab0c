//! The device's kernel cache and the cold benchmark's flush.

use sparrow::device::Gpu;
use sparrow::kernels::SPMM;
use sparrow::ops::spmm::GpuPath;

use super::gpu;

/// The second opening of the device loads kernels from the disk cache instead of compiling.
#[test]
fn small_disk_cache_serves_the_second_load() {
    let dir = std::env::temp_dir().join(format!("sparrow-cache-test-{}", std::process::id()));
    std::env::set_var("SPARROW_CACHE_DIR", &dir);
    let g1 = Gpu::open(0).unwrap();
    g1.kernel(&SPMM, &GpuPath::Stream.kernel_name("f32"))
        .unwrap();
    let st = g1.compile_stats();
    assert_eq!(st.compiled.len(), 1, "{st:?}");
    assert!(std::fs::read_dir(&dir).unwrap().any(|e| e
        .unwrap()
        .path()
        .extension()
        .is_some_and(|x| x == "cubin")));
    let g2 = Gpu::open(0).unwrap();
    g2.kernel(&SPMM, &GpuPath::Stream.kernel_name("f32"))
        .unwrap();
    let st = g2.compile_stats();
    assert_eq!((st.compiled.len(), st.from_disk.len()), (0, 1), "{st:?}");
    eprintln!(
        "compile {:.3} s, disk load {:.3} s",
        g1.compile_stats().compiled[0].1,
        st.from_disk[0].1
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// `bench spmv --cold` runs, the flush kernel before every repetition of ours and cuSPARSE's,
/// and its answers still agree with cuSPARSE's (the flush reads its own buffer only).
#[test]
fn small_bench_cold_spmv() {
    let g = gpu();
    // As the CLI runs the bench: no sentinel fills among the timed calls.
    g.set_sentinels(false);
    let cfg = sparrow::bench::BenchConfig {
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
    let records = sparrow::bench::run(&g, &cfg, &mut |_| {}).expect("bench runs cold");
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
