//! The commands about the device: `info --fill-cache`, `--device cuda` without a GPU, and
//! `validate` and `demo` on the CPU.

use std::process::Command;

use super::{failure, sparrow, tmp};

/// `info --fill-cache` stores each module as the first use on a GPU would compile it, under the
/// key that use looks up, and says which argument is wrong before it compiles anything.
#[test]
fn info_fill_cache_stores_what_a_gpu_looks_up() {
    let e = failure(&sparrow(&[
        "info",
        "--fill-cache",
        "sm_90",
        "--filter",
        "nope",
    ]));
    assert_eq!(
        e,
        "error: invalid argument `--filter`: no kernel entry point contains \"nope\""
    );
    if !sparrow::device::compile::nvrtc_for_checks("info --fill-cache") {
        return;
    }
    let dir = tmp("kernel-cache");
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(env!("CARGO_BIN_EXE_sparrow"))
        .env("SPARROW_CACHE_DIR", &dir)
        .args(["info", "--fill-cache", "sm_90", "--filter", "cs_union"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let cs = sparrow::kernels::CS;
    let key = sparrow::device::compile::cache_key(&cs, "sm_90").unwrap();
    let stored = std::fs::read(dir.join(format!("{key}.cubin"))).unwrap();
    assert_eq!(
        stored,
        sparrow::device::compile::compile_cubin(&cs, "sm_90").unwrap()
    );
    // Only the module the filter names, and no temporary file left behind.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec![format!("{key}.cubin")]);
}

#[test]
fn cuda_without_a_gpu_says_why() {
    if sparrow::device::driver_present() {
        eprintln!("a CUDA driver is present here; the GPU bundle covers this case");
        return;
    }
    let e = failure(&sparrow(&["validate", "--device", "cuda"]));
    assert_eq!(e, "error: unsupported: --device cuda:0: unsupported: the NVIDIA driver library libcuda.so was not found");
}

#[test]
fn validate_and_demo_run_on_the_cpu() {
    let out = sparrow(&["validate", "--device", "cpu"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("spmm cpu (rayon)") && text.contains(" 0 failed"),
        "{text}"
    );
    let out = sparrow(&["demo", "--device", "cpu", "--rows", "20000", "--n", "5"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("spmv on cpu")
            && text.contains("spmm N=5 on cpu")
            && !text.contains("MISMATCH"),
        "{text}"
    );
}
