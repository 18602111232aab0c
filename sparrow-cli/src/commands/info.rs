//! `sparrow info`.

use std::process::ExitCode;

use sparrow::device::{compile, device_count, driver_version, Gpu};
use sparrow::Result;

#[derive(clap::Args)]
pub struct Args {
    /// Also measure each GPU's device-to-device copy bandwidth (a 1 GiB copy, median of 10).
    #[arg(long)]
    bandwidth: bool,
    /// Instead: compile every kernel module for this architecture (such as sm_90) and print
    /// each entry point's registers, spills and static shared memory as ptxas reports them.
    /// Needs libnvrtc, not a GPU.
    #[arg(long, value_name = "ARCH")]
    kernels: Option<String>,
    /// With --kernels: only entry points whose name contains this (and only their modules are
    /// compiled).
    #[arg(long, default_value = "")]
    filter: String,
    /// With --kernels: also write each compiled module's cubin here as MODULE.ARCH.cubin, for
    /// reading its machine code with `nvdisasm` or `cuobjdump -sass`.
    #[arg(long, value_name = "DIR")]
    cubin_dir: Option<std::path::PathBuf>,
    /// Instead: compile every kernel module for this architecture (such as sm_90) as a GPU
    /// would at first use and store it in the kernel cache (see `kernel cache` above, or
    /// SPARROW_CACHE_DIR), so GPU hosts that share that folder and an NVRTC of the same
    /// major.minor version load the kernels instead of compiling them. Needs libnvrtc, not a
    /// GPU; --filter applies.
    #[arg(long, value_name = "ARCH", conflicts_with_all = ["kernels", "cubin_dir", "bandwidth"])]
    fill_cache: Option<String>,
}

pub fn run(ctx: &super::Ctx, args: Args) -> Result<ExitCode> {
    if let Some(arch) = &args.kernels {
        return kernel_resources(arch, &args.filter, args.cubin_dir.as_deref());
    }
    if let Some(arch) = &args.fill_cache {
        return fill_cache(arch, &args.filter);
    }
    let mut report = serde_json::Map::new();
    let driver = driver_version();
    let nvrtc = compile::nvrtc_version();
    let show = |r: &Result<(i32, i32)>| match r {
        Ok((a, b)) => format!("{a}.{b}"),
        Err(e) => format!("unavailable ({e})"),
    };
    report.insert("driver_cuda_version".into(), show(&driver).into());
    report.insert("nvrtc_version".into(), show(&nvrtc).into());
    report.insert(
        "kernel_cache".into(),
        compile::cache_dir()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
            .into(),
    );
    let mut gpus = Vec::new();
    let count = if driver.is_ok() {
        device_count().unwrap_or(0)
    } else {
        0
    };
    for i in 0..count {
        match Gpu::open(i) {
            Ok(gpu) => {
                let mut v = serde_json::to_value(gpu.limits()).expect("limits serialize");
                v["arch"] = gpu.limits().arch().into();
                if args.bandwidth {
                    let bw = sparrow_bench::copy_bandwidth(&gpu, 1 << 30)?;
                    v["copy_bandwidth_gbs"] = bw.into();
                }
                gpus.push(v);
            }
            Err(e) => gpus.push(serde_json::json!({"ordinal": i, "error": e.to_string()})),
        }
    }
    report.insert("gpus".into(), gpus.clone().into());
    report.insert("cpu_threads".into(), rayon_threads().into());
    if ctx.json {
        println!("{}", serde_json::Value::Object(report));
        return Ok(ExitCode::SUCCESS);
    }
    println!("driver (CUDA version): {}", show(&driver));
    println!("NVRTC:                 {}", show(&nvrtc));
    println!(
        "kernel cache:          {}",
        report["kernel_cache"].as_str().unwrap_or("")
    );
    println!("CPU threads:           {}", rayon_threads());
    if gpus.is_empty() {
        println!("GPUs:                  none usable; work runs on the CPU");
    }
    for (i, g) in gpus.iter().enumerate() {
        if let Some(e) = g.get("error") {
            println!("GPU {i}: unusable: {}", e.as_str().unwrap_or(""));
            continue;
        }
        println!(
            "GPU {i}: {} ({}), {} SMs, {:.1} GiB, {} KiB shared memory per block (opt-in), L2 {} MiB, clusters up to {} ({} portable)",
            g["name"].as_str().unwrap_or(""),
            g["arch"].as_str().unwrap_or(""),
            g["sms"],
            g["total_memory"].as_f64().unwrap_or(0.0) / (1u64 << 30) as f64,
            g["smem_per_block_optin"].as_u64().unwrap_or(0) / 1024,
            g["l2_bytes"].as_u64().unwrap_or(0) >> 20,
            g["max_cluster"],
            g["max_cluster_portable"],
        );
        if let Some(bw) = g.get("copy_bandwidth_gbs") {
            println!(
                "       copy bandwidth {:.0} GB/s (read + write)",
                bw.as_f64().unwrap_or(0.0)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The modules (the library's and the benchmarks') that export an entry point containing
/// `filter` (compiling one takes seconds).
fn modules_for(filter: &str) -> Result<Vec<sparrow::kernels::KernelModule>> {
    let modules: Vec<_> = sparrow::kernels::all_modules()
        .into_iter()
        .chain([sparrow_bench::timing::BENCH])
        .filter(|m| (m.entry_points)().iter().any(|e| e.contains(filter)))
        .collect();
    if modules.is_empty() {
        return Err(sparrow::Error::invalid(
            "--filter",
            format!("no kernel entry point contains \"{filter}\""),
        ));
    }
    Ok(modules)
}

/// `--fill-cache`: each module compiled exactly as the first use on a GPU would compile it,
/// stored under the key that use looks up (module source, NVRTC options and major.minor
/// version, architecture).
fn fill_cache(arch: &str, filter: &str) -> Result<ExitCode> {
    let modules = modules_for(filter)?;
    compile::nvrtc_version()?;
    let dir = compile::cache_dir().ok_or_else(|| {
        sparrow::Error::invalid(
            "--fill-cache",
            "no kernel cache folder: set SPARROW_CACHE_DIR (or HOME)",
        )
    })?;
    for m in &modules {
        let t = std::time::Instant::now();
        let key = compile::cache_key(m, arch)?;
        let cubin = compile::compile_cubin(m, arch)?;
        let path = compile::disk_store(&key, &cubin)?;
        println!(
            "{:<16} {:>7} KiB  {:>5.1} s  {}",
            m.name,
            cubin.len() / 1024,
            t.elapsed().as_secs_f64(),
            path.display()
        );
    }
    println!("{} modules for {arch} in {}", modules.len(), dir.display());
    Ok(ExitCode::SUCCESS)
}

/// The table of `--kernels`: ptxas's report through NVRTC, with the options the kernels are
/// compiled with at run time.
fn kernel_resources(
    arch: &str,
    filter: &str,
    cubin_dir: Option<&std::path::Path>,
) -> Result<ExitCode> {
    let modules = modules_for(filter)?;
    compile::nvrtc_version()?;
    if let Some(dir) = cubin_dir {
        std::fs::create_dir_all(dir).map_err(|e| sparrow::Error::io(dir, e))?;
    }
    println!(
        "{:<32} {:>9} {:>14} {:>14}",
        "kernel", "registers", "spill st/ld B", "static smem B"
    );
    for m in modules {
        let (cubin, res) = compile::compile_with_resources(&m, arch)?;
        if let Some(dir) = cubin_dir {
            let path = dir.join(format!("{}.{arch}.cubin", m.name));
            std::fs::write(&path, cubin).map_err(|e| sparrow::Error::io(&path, e))?;
        }
        for k in res.iter().filter(|k| k.name.contains(filter)) {
            println!(
                "{:<32} {:>9} {:>14} {:>14}",
                k.name,
                k.registers,
                format!("{}/{}", k.spill_stores, k.spill_loads),
                k.smem
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}
