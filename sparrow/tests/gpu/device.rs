//! The device's kernel cache.

use sparrow::device::Gpu;
use sparrow::kernels::SPMM;
use sparrow::ops::spmm::GpuPath;

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
