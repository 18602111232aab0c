//! Every kernel module compiles with NVRTC for sm_80 and sm_90 (ptxas runs inside NVRTC for a
//! real architecture, so this is an assembly check), and every entry point an op can ask for is
//! in the resulting cubin; on sm_90 the kernels tuned for occupancy stay within the registers
//! they were measured at. Without libnvrtc the test fails when `SPARROW_REQUIRE_NVRTC=1` (CI
//! sets it) and otherwise says it did not run.

#[cfg(not(feature = "internals"))]
compile_error!("the library's integration tests use its layers: run `cargo test --workspace`, or `cargo test -p sparrow --features testing`");

use sparrow::device::compile::{compile_cubin, compile_with_resources};
use sparrow::kernels::all_modules;

/// Entry points (by name prefix, keys of up to 32 bits) whose timings rest on their
/// occupancy: most registers and spill-store bytes per thread on sm_90. ptxas's choices move
/// with small source changes (one more live value took the warp kernel from 80 registers to
/// 127), so a change that crosses these shows here, before any timing.
const BUDGETS: &[(&str, u32, u32)] = &[
    // 64 registers (its launch bounds): four 256-thread blocks per SM; the few bytes it spills
    // are on the paths past the prefilter (ties, few distinct values).
    ("topk_warp_", 64, 16),
    // Capped at 64 by its launch bounds (128 for keys of 16 bits or fewer: `NARROW_FILTER`);
    // spills past a few bytes would cost the stream.
    ("topk_filter_", 64, 16),
    // The staged filter: 288 threads, four blocks per SM cap it at 56 registers; it keeps no
    // next tile in registers, so it has no reason to spill.
    ("topk_filter_tma_", 56, 0),
    // The candidate kernel: three 256-thread blocks per SM cap it at 80 registers; its
    // candidates (8 bytes each for 32-bit keys) fit three blocks' shared memory. 8-bit keys
    // spill 20 bytes.
    ("topk_cand_", 80, 24),
    // Its radix-keeping build: uncapped, but the plan counts two blocks per SM
    // (`CAND_RAD_BLOCKS`), so at most 128 registers, and nothing to spill.
    ("topk_cand_rad_", 128, 0),
    // Its 512-thread build (`cand_wide`): capped at 128 by its launch bounds, the same code.
    ("topk_cand_wide_", 128, 0),
    // The cluster kernel: 1,024 threads cap it at 64 registers; a spill would put the keys
    // each pass reads in local memory.
    ("topk_cluster_", 64, 0),
];

/// The register filter of keys of 16 bits or fewer: 32 keys per thread in each of two tiles,
/// two blocks per SM (its launch bounds), and nothing to spill.
const NARROW_FILTER: (&str, u32, u32) = ("topk_filter_", 128, 0);

/// The candidate kernel's compact build for 16-bit keys: four blocks per SM (64 registers) for
/// one wave fewer of 1,024 segments, which outweighs its spills (see
/// docs/tuning/topk.md#filter-path).
const CAND_16: (&str, u32, u32) = ("topk_cand_", 64, 96);

/// The same for the spmm module's SpMV kernels.
const SPMM_BUDGETS: &[(&str, u32, u32)] = &[
    // Eight 256-thread blocks per SM (its launch bounds): worth the 16 bytes it spills at that
    // cap (see docs/tuning/products.md#vector-a-and-row-lanes).
    ("spmv_avec_f32_", 32, 16),
    // Six blocks per SM at 40 registers; the f64 build (62) stays off even rows.
    ("spmv_stream_f32", 40, 0),
    // The same kernel over packed 16-bit columns: no more than the plain one.
    ("spmv_packed_f32", 40, 0),
    // Eight blocks per SM (its launch bounds) without spilling, in both value types: the f64
    // build took 40 registers without the cap.
    ("spmv_near_", 32, 0),
    // The column slices: 1,024 threads a block (its launch bounds) cap it at 64 registers;
    // a spill would sit in every step of the sums.
    ("spmv_sliced_", 64, 0),
];

#[test]
fn every_kernel_assembles_for_sm80_and_sm90() {
    if !sparrow::device::compile::nvrtc_for_checks("kernel assembly") {
        return;
    }
    // SPARROW_ASSEMBLE_ONLY=name checks one module (for timing a kernel change).
    let only = std::env::var("SPARROW_ASSEMBLE_ONLY").ok();
    let mut checked = 0;
    for m in all_modules() {
        if only.as_deref().is_some_and(|o| o != m.name) {
            continue;
        }
        for arch in ["sm_80", "sm_90"] {
            let t0 = std::time::Instant::now();
            let cubin = if arch == "sm_90" {
                let (cubin, res) =
                    compile_with_resources(&m, arch).unwrap_or_else(|e| panic!("{e}"));
                within_budgets(m.name, &res);
                cubin
            } else {
                compile_cubin(&m, arch).unwrap_or_else(|e| panic!("{e}"))
            };
            eprintln!("{} for {arch}: {:.2} s", m.name, t0.elapsed().as_secs_f64());
            assert!(
                cubin.starts_with(b"\x7fELF"),
                "{} for {arch} is not an ELF cubin",
                m.name
            );
            for name in (m.entry_points)() {
                let needle = format!("{name}\0");
                assert!(
                    cubin.windows(needle.len()).any(|w| w == needle.as_bytes()),
                    "entry point {name} is missing from module {} for {arch}",
                    m.name
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 0);
    eprintln!("{checked} entry points assembled");
}

/// Checks the budgeted entry points of a module compiled for sm_90.
fn within_budgets(module: &str, res: &[sparrow::device::compile::KernelResources]) {
    let budgets = if module == "spmm" {
        SPMM_BUDGETS
    } else if module.starts_with("topk_") && !module.ends_with("64") {
        BUDGETS
    } else {
        return;
    };
    let narrow = ["8", "16"].iter().any(|b| module.ends_with(b));
    for &(prefix, regs, spills) in budgets {
        let (regs, spills) = if narrow && prefix == NARROW_FILTER.0 {
            (NARROW_FILTER.1, NARROW_FILTER.2)
        } else if module.ends_with("16") && prefix == CAND_16.0 {
            (CAND_16.1, CAND_16.2)
        } else {
            (regs, spills)
        };
        // An entry answers to the longest prefix it has (`topk_cand_rad_f32` to its own).
        let owns = |name: &str| {
            name.starts_with(prefix)
                && !budgets.iter().any(|&(p, _, _)| {
                    p.len() > prefix.len() && p.starts_with(prefix) && name.starts_with(p)
                })
        };
        let found: Vec<_> = res.iter().filter(|k| owns(&k.name)).collect();
        assert!(
            !found.is_empty(),
            "ptxas reported no {prefix}* entry for module {module}"
        );
        for k in found {
            eprintln!(
                "{}: {} registers, {} bytes spilled",
                k.name, k.registers, k.spill_stores
            );
            assert!(
                k.registers <= regs && k.spill_stores <= spills,
                "{} uses {} registers and {} bytes of spill stores on sm_90; its budget is {regs} and {spills}",
                k.name,
                k.registers,
                k.spill_stores
            );
        }
    }
}
