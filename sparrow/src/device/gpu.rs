//! One opened CUDA GPU: its context and stream, limits, loaded kernels and compile statistics.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use cudarc::driver::{
    CudaContext, CudaModule, CudaSlice, CudaStream, DevicePtr, DeviceRepr, ValidAsZeroBits,
};

use super::compile;
use super::launch::{self, Args, Kernel, LaunchShape};
use super::limits::Limits;
use crate::kernels::KernelModule;
use crate::{Error, Result};

const GIB: f64 = (1u64 << 30) as f64;

/// How each kernel module reached this process, for `--explain` and the compile-time report.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct CompileStats {
    /// Modules compiled by NVRTC in this process, with seconds spent.
    pub compiled: Vec<(String, f64)>,
    /// Modules loaded from the on-disk cache, with seconds spent.
    pub from_disk: Vec<(String, f64)>,
}

/// An opened CUDA GPU.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    limits: Limits,
    modules: Mutex<HashMap<&'static str, Arc<CudaModule>>>,
    kernels: Mutex<HashMap<String, Kernel>>,
    stats: Mutex<CompileStats>,
    sentinels: AtomicBool,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Gpu({} {}, {})",
            self.ctx.ordinal(),
            self.limits.name,
            self.limits.arch()
        )
    }
}

/// True when the CUDA driver library can be loaded (looked up once).
pub fn driver_present() -> bool {
    static PRESENT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PRESENT.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() })
}

/// The driver's CUDA version as (major, minor).
pub fn driver_version() -> Result<(i32, i32)> {
    if !driver_present() {
        return Err(Error::unsupported(
            "the NVIDIA driver library libcuda.so was not found",
        ));
    }
    let mut v = 0;
    let r = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) };
    if r != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        return Err(Error::device("cuDriverGetVersion", format!("{r:?}")));
    }
    Ok((v / 1000, (v % 1000) / 10))
}

/// Number of CUDA devices the driver sees.
pub fn device_count() -> Result<usize> {
    if !driver_present() {
        return Err(Error::unsupported(
            "the NVIDIA driver library libcuda.so was not found",
        ));
    }
    cudarc::driver::result::init().map_err(|e| Error::device("cuInit", e))?;
    CudaContext::device_count()
        .map(|n| n as usize)
        .map_err(|e| Error::device("cuDeviceGetCount", e))
}

impl Gpu {
    /// Opens GPU `ordinal`, failing with the reason when the driver, NVRTC or the device is
    /// missing.
    pub fn open(ordinal: usize) -> Result<Arc<Gpu>> {
        let count = device_count()?;
        compile::nvrtc_version()?;
        if ordinal >= count {
            return Err(Error::unsupported(format!(
                "CUDA device {ordinal} does not exist; the driver sees {count} device(s)"
            )));
        }
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| Error::device(format!("creating a context on device {ordinal}"), e))?;
        // One stream per Gpu and ordered launches: per-buffer event tracking would only add
        // an event record to every launch.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx
            .new_stream()
            .map_err(|e| Error::device("cuStreamCreate", e))?;
        let limits = Limits::query(&ctx)?;
        Ok(Arc::new(Gpu {
            ctx,
            stream,
            limits,
            modules: Mutex::new(HashMap::new()),
            kernels: Mutex::new(HashMap::new()),
            stats: Mutex::new(CompileStats::default()),
            sentinels: AtomicBool::new(false),
        }))
    }

    /// The device's limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }
    /// The stream every op of this device enqueues on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
    /// The CUDA context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }
    /// How the kernel modules were obtained so far.
    pub fn compile_stats(&self) -> CompileStats {
        self.stats.lock().unwrap().clone()
    }

    fn module(&self, m: &KernelModule) -> Result<Arc<CudaModule>> {
        let mut mods = self.modules.lock().unwrap();
        if let Some(x) = mods.get(m.name) {
            return Ok(x.clone());
        }
        let arch = self.limits.arch();
        let key = compile::cache_key(m, &arch)?;
        let t = Instant::now();
        let (cubin, from_disk) = match compile::disk_get(&key) {
            Some(c) => (c, true),
            None => {
                let c = compile::compile_cubin(m, &arch)?;
                compile::disk_put(&key, &c);
                (c, false)
            }
        };
        let loaded = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
            .map_err(|e| Error::device(format!("loading module {} ({arch})", m.name), e))?;
        let secs = t.elapsed().as_secs_f64();
        let mut st = self.stats.lock().unwrap();
        if from_disk {
            st.from_disk.push((m.name.to_string(), secs));
        } else {
            st.compiled.push((m.name.to_string(), secs));
        }
        mods.insert(m.name, loaded.clone());
        Ok(loaded)
    }

    /// The entry point `name` of module `m`, compiling or loading the module on first use.
    pub fn kernel(&self, m: &KernelModule, name: &str) -> Result<Kernel> {
        if let Some(k) = self.kernels.lock().unwrap().get(name) {
            return Ok(k.clone());
        }
        let module = self.module(m)?;
        let func = module.load_function(name).map_err(|e| {
            Error::device(format!("looking up kernel {name} in module {}", m.name), e)
        })?;
        let max_threads = func
            .max_threads_per_block()
            .map_err(|e| Error::device(format!("attributes of kernel {name}"), e))?
            as u32;
        let static_smem = func
            .shared_size_bytes()
            .map_err(|e| Error::device(format!("attributes of kernel {name}"), e))?
            as u32;
        let k = Kernel {
            name: name.to_string(),
            func,
            max_threads,
            static_smem,
        };
        self.kernels
            .lock()
            .unwrap()
            .insert(name.to_string(), k.clone());
        Ok(k)
    }

    /// Enqueues `kernel` on this device's stream after checking `shape` against the limits.
    ///
    /// # Safety
    ///
    /// `args` must match the kernel's parameters in its CUDA source, in order and type, and
    /// every device address among them must point to a live allocation of this device large
    /// enough for everything the kernel reads and writes with this shape, not freed before the
    /// stream has run it. The launch checks the shape and the argument count against the
    /// kernel; it cannot check what the addresses point to, and a wrong one corrupts memory
    /// or faults the context.
    pub unsafe fn launch(
        &self,
        kernel: &Kernel,
        shape: LaunchShape,
        args: &mut Args,
    ) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| Error::device("binding the context", e))?;
        launch::launch(&self.limits, self.stream.cu_stream(), kernel, shape, args)
    }

    /// Fails with the sizes in the message when `bytes` exceed the device's free memory, so a
    /// problem too large for the GPU is refused before any allocation rather than failing half
    /// way.
    pub fn ensure_fits(&self, bytes: u64, what: &str) -> Result<()> {
        let (free, total) = self
            .ctx
            .mem_get_info()
            .map_err(|e| Error::device("cuMemGetInfo", e))?;
        if bytes > free as u64 {
            return Err(Error::unsupported(format!(
                "{what} needs {:.2} GiB of GPU memory but {} has {:.2} GiB free of {:.2} GiB; run it with --device cpu or on a larger GPU",
                bytes as f64 / GIB,
                self.limits.name,
                free as f64 / GIB,
                total as f64 / GIB
            )));
        }
        Ok(())
    }

    /// Bytes of the device's memory in use (by every process), for peak-memory measurements.
    pub fn memory_in_use(&self) -> Result<u64> {
        let (free, total) = self
            .ctx
            .mem_get_info()
            .map_err(|e| Error::device("cuMemGetInfo", e))?;
        Ok(total.saturating_sub(free) as u64)
    }

    /// The device address of a buffer, for kernel arguments.
    pub fn ptr<T>(&self, s: &CudaSlice<T>) -> u64 {
        let (p, _sync) = s.device_ptr(&self.stream);
        p
    }

    /// Copies host data into a new device buffer (enqueued on the stream).
    pub fn upload<T: DeviceRepr + ValidAsZeroBits>(&self, data: &[T]) -> Result<CudaSlice<T>> {
        if data.is_empty() {
            return self.alloc_zeroed(0);
        }
        self.stream
            .clone_htod(data)
            .map_err(|e| htod_error(data, e))
    }

    /// Copies host data into a new device buffer whose length is rounded up to a multiple of
    /// `multiple` elements, the tail zero-filled, so kernels may read whole vectors of
    /// `multiple` elements at aligned positions without reading past the allocation.
    pub fn upload_padded<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        data: &[T],
        multiple: usize,
    ) -> Result<CudaSlice<T>> {
        let mut buf = self.alloc_zeroed::<T>(data.len().next_multiple_of(multiple.max(1)))?;
        if !data.is_empty() {
            let mut head = buf.slice_mut(..data.len());
            self.stream
                .memcpy_htod(data, &mut head)
                .map_err(|e| htod_error(data, e))?;
        }
        Ok(buf)
    }

    /// A zero-filled device buffer of `len` elements (at least one is allocated, so that
    /// empty inputs still have a valid address).
    pub fn alloc_zeroed<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
    ) -> Result<CudaSlice<T>> {
        self.stream.alloc_zeros(len.max(1)).map_err(|e| {
            Error::device(
                format!("allocating {} bytes", len * std::mem::size_of::<T>()),
                e,
            )
        })
    }

    /// Copies the first `len` elements of a device buffer back (all of it when shorter);
    /// waits for the stream. Buffers are often allocated larger than what they hold.
    pub fn download<T: DeviceRepr + Default + Clone>(
        &self,
        s: &CudaSlice<T>,
        len: usize,
    ) -> Result<Vec<T>> {
        self.download_range(s, 0, len.min(s.len()))
    }

    /// Copies elements `start..start + len` of a device buffer back; waits for the stream.
    /// Large results come back in pieces this way, so the host never holds all of them.
    pub fn download_range<T: DeviceRepr + Default + Clone>(
        &self,
        s: &CudaSlice<T>,
        start: usize,
        len: usize,
    ) -> Result<Vec<T>> {
        if len == 0 {
            return Ok(Vec::new());
        }
        let view = s.try_slice(start..start + len).ok_or_else(|| {
            Error::invalid(
                "download range",
                format!(
                    "elements {start}..{} of a {}-element buffer",
                    start + len,
                    s.len()
                ),
            )
        })?;
        self.stream
            .clone_dtoh(&view)
            .map_err(|e| Error::device("copying results to the host", e))
    }

    /// Fills `bytes` bytes of a buffer with `byte` (enqueued): the sentinel that shows any
    /// output element a kernel failed to write.
    pub fn fill_bytes<T>(&self, s: &CudaSlice<T>, byte: u8, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        let p = self.ptr(s);
        unsafe { cudarc::driver::result::memset_d8_async(p, byte, bytes, self.stream.cu_stream()) }
            .map_err(|e| Error::device("cuMemsetD8Async", e))
    }

    /// Makes the ops that allocate their outputs fill them with a sentinel before their
    /// kernels run, so an element no kernel writes cannot pass for a result: what the GPU
    /// tests and `sparrow validate` check with. Off by default, since the fill is one more
    /// pass over the outputs on every call.
    pub fn set_sentinels(&self, on: bool) {
        self.sentinels.store(on, Ordering::Relaxed);
    }

    /// Whether outputs are sentinel-filled (see [`Gpu::set_sentinels`]).
    pub fn sentinels(&self) -> bool {
        self.sentinels.load(Ordering::Relaxed)
    }

    /// Fills `bytes` bytes of an output with the sentinel `byte` when sentinels are on.
    pub fn fill_sentinel<T>(&self, s: &CudaSlice<T>, byte: u8, bytes: usize) -> Result<()> {
        if self.sentinels() {
            self.fill_bytes(s, byte, bytes)
        } else {
            Ok(())
        }
    }

    /// Copies `bytes` bytes from one device buffer to another (enqueued).
    pub fn copy_bytes<T, U>(
        &self,
        src: &CudaSlice<T>,
        dst: &CudaSlice<U>,
        bytes: usize,
    ) -> Result<()> {
        // SAFETY: `dst` is a live buffer of this GPU; the caller sizes `bytes` to both.
        unsafe { self.copy_to_raw(src, self.ptr(dst), bytes) }
    }

    /// Copies `bytes` bytes from a device buffer to a device address the caller owns
    /// (enqueued).
    ///
    /// # Safety
    /// `dst` must hold `bytes` bytes in this GPU's context until the copy has run.
    pub unsafe fn copy_to_raw<T>(&self, src: &CudaSlice<T>, dst: u64, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        let s = self.ptr(src);
        unsafe { cudarc::driver::result::memcpy_dtod_async(dst, s, bytes, self.stream.cu_stream()) }
            .map_err(|e| Error::device("cuMemcpyDtoDAsync", e))
    }

    /// Waits for a caller's raw CUDA stream (0: the legacy default stream).
    ///
    /// # Safety
    /// `stream` must be a live stream of the context current on this thread.
    pub unsafe fn synchronize_raw(stream: usize) -> Result<()> {
        unsafe {
            cudarc::driver::result::stream::synchronize(stream as cudarc::driver::sys::CUstream)
        }
        .map_err(|e| Error::device("cuStreamSynchronize", e))
    }

    /// Waits for all work on the stream, reporting asynchronous kernel failures.
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| Error::device("waiting for the stream", e))
    }
}

/// The error of a failed copy of `data` to the device.
fn htod_error<T, E: std::fmt::Display>(data: &[T], e: E) -> Error {
    Error::device(
        format!(
            "copying {} bytes to the device",
            std::mem::size_of_val(data)
        ),
        e,
    )
}
