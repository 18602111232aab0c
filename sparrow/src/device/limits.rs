//! What the live GPU allows, read once when it is opened; launches are checked against it.

use cudarc::driver::sys::CUdevice_attribute as A;
use cudarc::driver::CudaContext;

use crate::{Error, Result};

/// Device properties and launch limits.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Limits {
    /// Marketing name, such as "NVIDIA H200".
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
    /// Number of streaming multiprocessors.
    pub sms: u32,
    /// Device memory in bytes.
    pub total_memory: usize,
    /// Largest block, in threads.
    pub max_threads_per_block: u32,
    /// Largest block per dimension.
    pub max_block: [u32; 3],
    /// Largest grid per dimension.
    pub max_grid: [u32; 3],
    /// Shared memory per block without opt-in, bytes.
    pub smem_per_block: u32,
    /// Shared memory per block with opt-in, bytes.
    pub smem_per_block_optin: u32,
    /// Shared memory per SM, bytes (what the blocks resident on one SM share).
    pub smem_per_sm: u32,
    /// Largest portable cluster (8 on sm_90), or 1 where clusters do not exist.
    pub max_cluster_portable: u32,
    /// Largest cluster with the non-portable attribute (16 on sm_90), or 1.
    pub max_cluster: u32,
    /// L2 cache size in bytes.
    pub l2_bytes: u32,
}

impl Limits {
    /// Reads the limits of the context's device.
    pub fn query(ctx: &CudaContext) -> Result<Self> {
        let a = |attr: A| -> Result<u32> {
            ctx.attribute(attr)
                .map(|v| v as u32)
                .map_err(|e| Error::device(format!("cuDeviceGetAttribute({attr:?})"), e))
        };
        let cc = ctx
            .compute_capability()
            .map_err(|e| Error::device("cuDeviceGetAttribute(compute capability)", e))?;
        let clusters = a(A::CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH)? != 0;
        Ok(Limits {
            name: ctx
                .name()
                .map_err(|e| Error::device("cuDeviceGetName", e))?,
            compute_capability: cc,
            sms: a(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            total_memory: ctx
                .total_mem()
                .map_err(|e| Error::device("cuDeviceTotalMem", e))?,
            max_threads_per_block: a(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_block: [
                a(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                a(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                a(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ],
            max_grid: [
                a(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                a(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                a(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
            smem_per_block: a(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
            smem_per_block_optin: a(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
            smem_per_sm: a(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
            // The driver reports no attribute for these; they are fixed by the architecture
            // (CUDA programming guide, thread block clusters).
            max_cluster_portable: if clusters { 8 } else { 1 },
            max_cluster: if clusters { 16 } else { 1 },
            l2_bytes: a(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
        })
    }

    /// The NVRTC target for this device, such as `sm_90`.
    pub fn arch(&self) -> String {
        format!(
            "sm_{}{}",
            self.compute_capability.0, self.compute_capability.1
        )
    }
}
