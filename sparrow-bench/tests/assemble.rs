//! The benchmarks' own kernel module compiles with NVRTC for sm_80 and sm_90 and exports its
//! entry points, as the library's modules do in `sparrow/tests/kernels_assemble.rs`.

use sparrow::device::compile::compile_cubin;
use sparrow_bench::timing::BENCH;

#[test]
fn bench_kernels_assemble_for_sm80_and_sm90() {
    if !sparrow::device::compile::nvrtc_for_checks("bench kernel assembly") {
        return;
    }
    for arch in ["sm_80", "sm_90"] {
        let cubin = compile_cubin(&BENCH, arch).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            cubin.starts_with(b"\x7fELF"),
            "bench for {arch} is not a cubin"
        );
        for name in (BENCH.entry_points)() {
            let needle = format!("{name}\0");
            assert!(
                cubin.windows(needle.len()).any(|w| w == needle.as_bytes()),
                "entry point {name} is missing from the bench module for {arch}"
            );
        }
    }
}
