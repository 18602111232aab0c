//! Kernel launches through `cuLaunchKernelEx`, plain or as thread-block clusters, after the
//! shape has been checked against the device's limits: a rejected or empty launch must never
//! read as a result.

use std::fmt;

use cudarc::driver::sys;
use cudarc::driver::CudaFunction;

use super::limits::Limits;
use crate::{Error, Result};

/// Grid, block, dynamic shared memory and optional cluster shape of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LaunchShape {
    /// Blocks per dimension.
    pub grid: [u32; 3],
    /// Threads per block per dimension.
    pub block: [u32; 3],
    /// Dynamic shared memory per block, bytes.
    pub smem: u32,
    /// Cluster shape in blocks, or None for a plain launch.
    pub cluster: Option<[u32; 3]>,
    /// Launched as a programmatic dependent (sm_90 and later): the kernel may start while
    /// the kernel before it on the stream finishes, so that launch's latency and its last
    /// wave overlap this one's start. The kernel must call `grid_dep_wait()` (common.cuh)
    /// before any global memory access. Ignored on older devices.
    pub pdl: bool,
}

impl LaunchShape {
    /// A one-dimensional plain launch.
    pub fn linear(blocks: u32, threads: u32) -> Self {
        LaunchShape {
            grid: [blocks, 1, 1],
            block: [threads, 1, 1],
            smem: 0,
            cluster: None,
            pdl: false,
        }
    }
    /// The same launch as clusters of `width` blocks along x.
    pub fn with_cluster(mut self, width: u32) -> Self {
        self.cluster = Some([width, 1, 1]);
        self
    }
    /// The same launch as a programmatic dependent of the kernel before it (see `pdl`).
    pub fn dependent(mut self) -> Self {
        self.pdl = true;
        self
    }
    /// The same launch with `bytes` of dynamic shared memory.
    pub fn with_smem(mut self, bytes: u32) -> Self {
        self.smem = bytes;
        self
    }

    /// Checks the shape against the device and the kernel's own limits: threads per block,
    /// and the shared memory it declares statically (which counts against the same budget as
    /// the dynamic bytes asked for here).
    pub fn check(
        &self,
        limits: &Limits,
        kernel_max_threads: u32,
        kernel_static_smem: u32,
    ) -> Result<()> {
        let bad = |why: String| Err(Error::invalid("launch shape", format!("{self}: {why}")));
        if self.grid.contains(&0) || self.block.contains(&0) {
            return bad("a zero dimension launches no work".into());
        }
        for d in 0..3 {
            if self.grid[d] > limits.max_grid[d] {
                return bad(format!(
                    "grid dimension {d} exceeds the device limit {}",
                    limits.max_grid[d]
                ));
            }
            if self.block[d] > limits.max_block[d] {
                return bad(format!(
                    "block dimension {d} exceeds the device limit {}",
                    limits.max_block[d]
                ));
            }
        }
        let threads = self.block.iter().map(|&b| b as u64).product::<u64>();
        let cap = (limits.max_threads_per_block as u64).min(kernel_max_threads as u64);
        if threads > cap {
            return bad(format!(
                "{threads} threads per block exceed the limit {cap} for this kernel"
            ));
        }
        let smem = self.smem as u64 + kernel_static_smem as u64;
        if smem > limits.smem_per_block_optin as u64 {
            return bad(format!(
                "{smem} bytes of shared memory exceed the device's {} per block",
                limits.smem_per_block_optin
            ));
        }
        if let Some(c) = self.cluster {
            let size = c.iter().map(|&x| x as u64).product::<u64>();
            if c.contains(&0) {
                return bad("a zero cluster dimension".into());
            }
            if size > limits.max_cluster as u64 {
                return bad(format!(
                    "cluster of {size} blocks exceeds the device's {}",
                    limits.max_cluster
                ));
            }
            for (d, (&g, &w)) in self.grid.iter().zip(&c).enumerate() {
                if !g.is_multiple_of(w) {
                    return bad(format!(
                        "grid dimension {d} is not a multiple of the cluster's {w}"
                    ));
                }
            }
        }
        Ok(())
    }
}

impl fmt::Display for LaunchShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "grid ({}, {}, {}) x block ({}, {}, {}), {} B shared",
            self.grid[0],
            self.grid[1],
            self.grid[2],
            self.block[0],
            self.block[1],
            self.block[2],
            self.smem
        )?;
        if let Some(c) = self.cluster {
            write!(f, ", cluster ({}, {}, {})", c[0], c[1], c[2])?;
        }
        if self.pdl {
            write!(f, ", dependent")?;
        }
        Ok(())
    }
}

/// Kernel parameters, each held in an 8-byte slot: the driver reads as many bytes as the
/// parameter's size from the slot's address, and every parameter we pass is at most 8 bytes.
#[derive(Default, Debug)]
pub struct Args {
    slots: Vec<u64>,
}

impl Args {
    /// No parameters yet.
    pub fn new() -> Self {
        Self::default()
    }
    /// A device pointer.
    pub fn ptr(&mut self, p: sys::CUdeviceptr) -> &mut Self {
        self.slots.push(p);
        self
    }
    /// A 64-bit integer.
    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.slots.push(v as u64);
        self
    }
    /// A 32-bit integer.
    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.slots.push(v as u32 as u64);
        self
    }
    /// A float.
    pub fn f32(&mut self, v: f32) -> &mut Self {
        self.slots.push(v.to_bits() as u64);
        self
    }
    /// A double.
    pub fn f64(&mut self, v: f64) -> &mut Self {
        self.slots.push(v.to_bits());
        self
    }
    /// A value of the op's scalar type.
    pub fn scalar<T: crate::Scalar>(&mut self, v: T) -> &mut Self {
        match T::NAME {
            "f32" => self.f32(v.to_f64() as f32),
            _ => self.f64(v.to_f64()),
        }
    }
}

/// A loaded kernel entry point with its name, for error messages.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// The `extern "C"` name.
    pub name: String,
    pub(crate) func: CudaFunction,
    pub(crate) max_threads: u32,
    /// Shared memory the kernel declares statically: dynamic memory beyond the default
    /// per-block limit minus this needs the opt-in.
    pub(crate) static_smem: u32,
}

/// Launches `kernel` with `shape` on `stream` after checking the shape.
pub(crate) fn launch(
    limits: &Limits,
    stream: sys::CUstream,
    kernel: &Kernel,
    shape: LaunchShape,
    args: &mut Args,
) -> Result<()> {
    shape
        .check(limits, kernel.max_threads, kernel.static_smem)
        .map_err(|e| Error::device(format!("launch of {}", kernel.name), e))?;
    let ctx = |what: &str| format!("{what} of {} with {shape}", kernel.name);
    let f = kernel.func.cu_function();
    if shape.smem > 0 && shape.smem + kernel.static_smem > limits.smem_per_block {
        kernel
            .func
            .set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shape.smem as i32,
            )
            .map_err(|e| Error::device(ctx("opting in to shared memory"), e))?;
    }
    let mut attrs: Vec<sys::CUlaunchAttribute> = Vec::new();
    if let Some(c) = shape.cluster {
        if c.iter().product::<u32>() > limits.max_cluster_portable {
            kernel
                .func
                .set_attribute(
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                    1,
                )
                .map_err(|e| Error::device(ctx("allowing a non-portable cluster"), e))?;
        }
        let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
        value.clusterDim.x = c[0];
        value.clusterDim.y = c[1];
        value.clusterDim.z = c[2];
        attrs.push(sys::CUlaunchAttribute {
            id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
            pad: [0; 4],
            value,
        });
    }
    if shape.pdl && limits.compute_capability.0 >= 9 {
        let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
        value.programmaticStreamSerializationAllowed = 1;
        attrs.push(sys::CUlaunchAttribute {
            id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
            pad: [0; 4],
            value,
        });
    }
    let cfg = sys::CUlaunchConfig {
        gridDimX: shape.grid[0],
        gridDimY: shape.grid[1],
        gridDimZ: shape.grid[2],
        blockDimX: shape.block[0],
        blockDimY: shape.block[1],
        blockDimZ: shape.block[2],
        sharedMemBytes: shape.smem,
        hStream: stream,
        attrs: attrs.as_mut_ptr(),
        numAttrs: attrs.len() as u32,
    };
    let mut params: Vec<*mut std::ffi::c_void> = args
        .slots
        .iter_mut()
        .map(|s| s as *mut u64 as *mut std::ffi::c_void)
        .collect();
    let r = unsafe { sys::cuLaunchKernelEx(&cfg, f, params.as_mut_ptr(), std::ptr::null_mut()) };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(Error::device(ctx("launch"), format!("{r:?}")));
    }
    Ok(())
}
