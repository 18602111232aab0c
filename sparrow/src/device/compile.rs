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
        .chain(module.options.iter().map(|o| o.to_string()))
        .map(|o| CString::new(o).unwrap())
        .collect();
    let opt_p: Vec<*const std::ffi::c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    let result = unsafe {
        let r = nv::nvrtcCompileProgram(prog, opt_p.len() as i32, opt_p.as_ptr());
        if r != nv::nvrtcResult::NVRTC_SUCCESS {
            let mut size = 0usize;
            nv::nvrtcGetProgramLogSize(prog, &mut size);
            let mut log = vec![0u8; size.max(1)];
            nv::nvrtcGetProgramLog(prog, log.as_mut_ptr() as *mut _);
            let log = CStr::from_bytes_until_nul(&log)
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_default();
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
                .map(|_| cubin)
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
    for o in nvrtc_options(arch)
        .into_iter()
        .chain(module.options.iter().map(|o| o.to_string()))
    {
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

/// Stores a cubin; failures are ignored because the cache only saves time. The write goes to
/// a temporary name first so a concurrent reader never sees half a file.
pub fn disk_put(key: &str, cubin: &[u8]) {
    let Some(dir) = cache_dir() else { return };
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let tmp = dir.join(format!("{key}.{}.tmp", std::process::id()));
    if std::fs::write(&tmp, cubin).is_ok() {
        let _ = std::fs::rename(&tmp, dir.join(format!("{key}.cubin")));
    }
}
