//! NVRTC compilation for the live architecture, with an in-process cache (per GPU, in
//! [`super::Gpu`]) and an on-disk cache of cubins keyed by everything that changes the output:
//! source and headers, options, NVRTC version and target architecture.

use std::ffi::{CStr, CString};
use std::path::PathBuf;

use cudarc::nvrtc::sys as nv;

use crate::kernels::KernelModule;
use crate::{Error, Result};

/// The options every kernel is compiled with. No fast-math: products must round as the CPU
/// reference does (no flushed denormals, no approximate division).
pub fn nvrtc_options(arch: &str) -> Vec<String> {
    vec![
        format!("--gpu-architecture={arch}"),
        "-std=c++17".to_string(),
        "-lineinfo".to_string(),
        "-default-device".to_string(),
    ]
}

/// NVRTC's version as (major, minor), or an error when libnvrtc cannot be loaded.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    if !nvrtc_present() {
        return Err(Error::unsupported(
            "libnvrtc was not found; install the CUDA NVRTC library and add its folder to LD_LIBRARY_PATH",
        ));
    }
    let (mut maj, mut min) = (0, 0);
    let r = unsafe { nv::nvrtcVersion(&mut maj, &mut min) };
    if r != nv::nvrtcResult::NVRTC_SUCCESS {
        return Err(Error::device("nvrtcVersion", format!("{r:?}")));
    }
    Ok((maj, min))
}

/// True when libnvrtc can be loaded (looked up once).
pub fn nvrtc_present() -> bool {
    static PRESENT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PRESENT.get_or_init(|| unsafe { nv::is_culib_present() })
}

fn check(r: nv::nvrtcResult, what: &str, module: &str) -> Result<()> {
    if r == nv::nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(Error::device(
            format!("{what} for module {module}"),
            format!("{r:?}"),
        ))
    }
}

/// Compiles `module` for `arch` (such as `sm_90`) to a cubin. ptxas runs inside NVRTC here,
/// so success means the kernels assemble for that architecture, not only that they parse.
pub fn compile_cubin(module: &KernelModule, arch: &str) -> Result<Vec<u8>> {
    compile_logged(module, arch, &[]).map(|(cubin, _)| cubin)
}

/// What ptxas reported for one entry point: its occupancy rests on the registers, and spills
/// turn register pressure into local-memory traffic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelResources {
    /// The entry point.
    pub name: String,
    /// Registers per thread.
    pub registers: u32,
    /// Bytes of spill stores per thread.
    pub spill_stores: u32,
    /// Bytes of spill loads per thread.
    pub spill_loads: u32,
    /// Static shared memory in bytes.
    pub smem: u32,
}

/// [`compile_cubin`] with ptxas's report of every entry point's registers, spills and static
/// shared memory.
pub fn compile_with_resources(
    module: &KernelModule,
    arch: &str,
) -> Result<(Vec<u8>, Vec<KernelResources>)> {
    let (cubin, log) = compile_logged(module, arch, &["-Xptxas=-v"])?;
    Ok((cubin, parse_ptxas_log(&log)))
}

/// ptxas's verbose log: per entry, "Compiling entry function 'NAME'", then a line with
/// "N bytes spill stores, M bytes spill loads" and one with "Used R registers ... S bytes smem".
pub fn parse_ptxas_log(log: &str) -> Vec<KernelResources> {
    fn number_before(line: &str, unit: &str) -> Option<u32> {
        let at = line.find(unit)?;
        line[..at].split_whitespace().last()?.parse().ok()
    }
    let mut out = Vec::new();
    let mut cur: Option<KernelResources> = None;
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            if let Some(name) = rest.split('\'').next() {
                cur = Some(KernelResources {
                    name: name.to_string(),
                    registers: 0,
                    spill_stores: 0,
                    spill_loads: 0,
                    smem: 0,
                });
            }
        } else if let Some(k) = cur.as_mut() {
            if line.contains("spill stores") {
                k.spill_stores = number_before(line, "bytes spill stores").unwrap_or(0);
                k.spill_loads = number_before(line, "bytes spill loads").unwrap_or(0);
            } else if line.contains("Used") && line.contains("registers") {
                k.registers = number_before(line, "registers").unwrap_or(0);
                k.smem = number_before(line, "bytes smem").unwrap_or(0);
                out.extend(cur.take());
            }
        }
    }
    out
}

fn compile_logged(module: &KernelModule, arch: &str, extra: &[&str]) -> Result<(Vec<u8>, String)> {
    nvrtc_version()?;
    let src = CString::new(module.source).expect("kernel source has no NUL");
    let name = CString::new(format!("{}.cu", module.name)).expect("no NUL");
    let hdr_src: Vec<CString> = module
        .headers
        .iter()
        .map(|(_, s)| CString::new(*s).expect("no NUL"))
        .collect();
    let hdr_name: Vec<CString> = module
        .headers
        .iter()
        .map(|(n, _)| CString::new(*n).expect("no NUL"))
        .collect();
    let hdr_src_p: Vec<*const std::ffi::c_char> = hdr_src.iter().map(|s| s.as_ptr()).collect();
    let hdr_name_p: Vec<*const std::ffi::c_char> = hdr_name.iter().map(|s| s.as_ptr()).collect();
    let mut prog: nv::nvrtcProgram = std::ptr::null_mut();
    unsafe {
        check(
            nv::nvrtcCreateProgram(
                &mut prog,
                src.as_ptr(),
                name.as_ptr(),
                hdr_src_p.len() as i32,
                hdr_src_p.as_ptr(),
                hdr_name_p.as_ptr(),
            ),
            "nvrtcCreateProgram",
            module.name,
        )?;
    }
    let opts: Vec<CString> = nvrtc_options(arch)
        .into_iter()
        .chain((module.options)())
        .chain(extra.iter().map(|o| o.to_string()))
        .map(|o| CString::new(o).unwrap())
        .collect();
    let opt_p: Vec<*const std::ffi::c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    let result = unsafe {
        let r = nv::nvrtcCompileProgram(prog, opt_p.len() as i32, opt_p.as_ptr());
        let mut size = 0usize;
        nv::nvrtcGetProgramLogSize(prog, &mut size);
        let mut log = vec![0u8; size.max(1)];
        nv::nvrtcGetProgramLog(prog, log.as_mut_ptr() as *mut _);
        let log = CStr::from_bytes_until_nul(&log)
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default();
        if r != nv::nvrtcResult::NVRTC_SUCCESS {
            Err(Error::Compile {
                module: module.name.to_string(),
                arch: arch.to_string(),
                log,
            })
        } else {
            let mut size = 0usize;
            check(
                nv::nvrtcGetCUBINSize(prog, &mut size),
                "nvrtcGetCUBINSize",
                module.name,
            )
            .and_then(|_| {
                let mut cubin = vec![0u8; size];
                check(
                    nv::nvrtcGetCUBIN(prog, cubin.as_mut_ptr() as *mut _),
                    "nvrtcGetCUBIN",
                    module.name,
                )
                .map(|_| (cubin, log))
            })
        }
    };
    unsafe {
        nv::nvrtcDestroyProgram(&mut prog);
    }
    result
}

/// FNV-1a over bytes: stable across Rust versions and platforms, unlike `DefaultHasher`,
/// which matters because the key names files that outlive the process.
fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
    let mut h = seed;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// The cache key of a module compiled for `arch`: 128 bits from two FNV streams.
pub fn cache_key(module: &KernelModule, arch: &str) -> Result<String> {
    let (maj, min) = nvrtc_version()?;
    let mut parts: Vec<u8> = Vec::new();
    parts.extend_from_slice(module.name.as_bytes());
    parts.push(0);
    parts.extend_from_slice(module.source.as_bytes());
    for (n, s) in module.headers {
        parts.push(0);
        parts.extend_from_slice(n.as_bytes());
        parts.push(0);
        parts.extend_from_slice(s.as_bytes());
    }
    for o in nvrtc_options(arch).into_iter().chain((module.options)()) {
        parts.push(0);
        parts.extend_from_slice(o.as_bytes());
    }
    parts.extend_from_slice(format!("\0nvrtc {maj}.{min}\0{arch}").as_bytes());
    let a = fnv1a(0xcbf2_9ce4_8422_2325, &parts);
    let b = fnv1a(0x6c62_272e_07bb_0142, &parts);
    Ok(format!("{}-{arch}-{a:016x}{b:016x}", module.name))
}

/// The on-disk cache folder: `$SPARROW_CACHE_DIR`, else `$XDG_CACHE_HOME/sparrow/kernels`,
/// else `~/.cache/sparrow/kernels`. None when no home is known.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("SPARROW_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("sparrow").join("kernels"))
}

/// Reads a cached cubin, if present.
pub fn disk_get(key: &str) -> Option<Vec<u8>> {
    let p = cache_dir()?.join(format!("{key}.cubin"));
    std::fs::read(p).ok().filter(|b| !b.is_empty())
}

/// Stores a cubin; failures are ignored because the cache only saves time.
pub fn disk_put(key: &str, cubin: &[u8]) {
    let _ = disk_store(key, cubin);
}

/// Stores a cubin in the cache folder and returns its path. The write goes to a temporary name
/// first so a concurrent reader never sees half a file.
pub fn disk_store(key: &str, cubin: &[u8]) -> Result<PathBuf> {
    let dir = cache_dir().ok_or_else(|| {
        Error::unsupported("no kernel cache folder: set SPARROW_CACHE_DIR (or HOME)")
    })?;
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let tmp = dir.join(format!("{key}.{}.tmp", std::process::id()));
    let path = dir.join(format!("{key}.cubin"));
    std::fs::write(&tmp, cubin).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
    Ok(path)
}

/// For checks that need libnvrtc but not a GPU (kernel assembly, filling the cache): whether
/// libnvrtc is here. Without it the check is skipped with a note on stderr, unless
/// `SPARROW_REQUIRE_NVRTC=1` (as CI sets), which makes its absence a panic.
pub fn nvrtc_for_checks(what: &str) -> bool {
    if nvrtc_present() {
        return true;
    }
    let required = std::env::var("SPARROW_REQUIRE_NVRTC").is_ok_and(|v| v == "1");
    assert!(
        !required,
        "SPARROW_REQUIRE_NVRTC=1 but libnvrtc was not found on LD_LIBRARY_PATH"
    );
    eprintln!("libnvrtc not found: {what} NOT checked (set SPARROW_REQUIRE_NVRTC=1 to make this a failure)");
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptxas_log_gives_each_entrys_resources() {
        let log = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function 'topk_warp_f32' for 'sm_90'\n\
ptxas info    : Function properties for topk_warp_f32\n\
    16 bytes stack frame, 16 bytes spill stores, 28 bytes spill loads\n\
ptxas info    : Used 80 registers, used 1 barriers, 16 bytes cumulative stack size, 6144 bytes smem, 400 bytes cmem[0]\n\
ptxas info    : Compiling entry function 'topk_pad_f32' for 'sm_90'\n\
ptxas info    : Function properties for topk_pad_f32\n\
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
ptxas info    : Used 16 registers, used 0 barriers, 392 bytes cmem[0]\n";
        let got = parse_ptxas_log(log);
        assert_eq!(
            got,
            vec![
                KernelResources {
                    name: "topk_warp_f32".into(),
                    registers: 80,
                    spill_stores: 16,
                    spill_loads: 28,
                    smem: 6144,
                },
                KernelResources {
                    name: "topk_pad_f32".into(),
                    registers: 16,
                    spill_stores: 0,
                    spill_loads: 0,
                    smem: 0,
                },
            ]
        );
    }
}
