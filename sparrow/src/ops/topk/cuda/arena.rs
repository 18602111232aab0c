//! Where a GPU top-k's buffers come from: allocations of its own, or regions of one workspace
//! the caller owns (a graph-safe plan, as CUB's temporary storage). Measuring a plan is a dry
//! carve of an empty workspace: the same code that lays the buffers out counts their bytes.

use std::mem::ManuallyDrop;
use std::ops::Deref;

use cudarc::driver::{result, CudaSlice, DeviceRepr, ValidAsZeroBits};

use crate::device::Gpu;
use crate::{Error, Result};

/// Regions start on 256-byte boundaries, as cudaMalloc's do, so vector loads stay aligned.
const ALIGN: usize = 256;

/// A device buffer: owned (freed on drop), or a region of the caller's workspace (never freed).
pub(crate) enum Mem<T> {
    Owned(CudaSlice<T>),
    Borrowed(ManuallyDrop<CudaSlice<T>>),
}

impl<T> Deref for Mem<T> {
    type Target = CudaSlice<T>;
    fn deref(&self) -> &CudaSlice<T> {
        match self {
            Mem::Owned(s) => s,
            Mem::Borrowed(s) => s,
        }
    }
}

impl<T> Drop for Mem<T> {
    fn drop(&mut self) {
        if let Mem::Borrowed(s) = self {
            // SAFETY: taken once, here; `leak` releases the handle without freeing the memory,
            // which is the caller's.
            let s = unsafe { ManuallyDrop::take(s) };
            let _ = s.leak();
        }
    }
}

/// How a plan gets its buffers.
pub(crate) enum Arena {
    /// One allocation per buffer.
    Own,
    /// Regions of `cap` bytes at `base`; with `write` false nothing is touched (measuring).
    Carve {
        base: u64,
        cap: usize,
        used: usize,
        write: bool,
    },
}

impl Arena {
    /// A workspace of `cap` bytes at device address `base`.
    pub(crate) fn workspace(base: u64, cap: usize) -> Self {
        Arena::Carve {
            base,
            cap,
            used: 0,
            write: true,
        }
    }

    /// A dry carve that only counts bytes.
    pub(crate) fn measure() -> Self {
        Arena::Carve {
            base: 0,
            cap: usize::MAX,
            used: 0,
            write: false,
        }
    }

    /// Bytes carved so far (0 for `Own`).
    pub(crate) fn used(&self) -> usize {
        match self {
            Arena::Own => 0,
            Arena::Carve { used, .. } => *used,
        }
    }

    /// Whether the buffers are the caller's: the GPU's free memory is not this plan's to check.
    pub(crate) fn is_workspace(&self) -> bool {
        matches!(self, Arena::Carve { .. })
    }

    /// The next region of `len` elements (at least one), and whether to write it.
    fn carve<T>(&mut self, gpu: &Gpu, len: usize) -> Result<Option<(Mem<T>, bool)>> {
        let Arena::Carve {
            base,
            cap,
            used,
            write,
        } = self
        else {
            return Ok(None);
        };
        let bytes = len.max(1) * std::mem::size_of::<T>();
        let at = used.next_multiple_of(ALIGN);
        if at.checked_add(bytes).is_none_or(|end| end > *cap) {
            return Err(Error::invalid(
                "workspace",
                format!("{cap} bytes hold less than the plan needs (see TopK::workspace_bytes)"),
            ));
        }
        *used = at + bytes;
        // SAFETY: the region lies inside the caller's workspace (or, measuring, is never used
        // as memory); `Mem::Borrowed` never frees it.
        let s = unsafe {
            gpu.stream()
                .upgrade_device_ptr::<T>(*base + at as u64, len.max(1))
        };
        Ok(Some((Mem::Borrowed(ManuallyDrop::new(s)), *write)))
    }

    /// A zero-filled buffer of `len` elements.
    pub(crate) fn zeroed<T: DeviceRepr + ValidAsZeroBits>(
        &mut self,
        gpu: &Gpu,
        len: usize,
    ) -> Result<Mem<T>> {
        match self.carve::<T>(gpu, len)? {
            None => Ok(Mem::Owned(gpu.alloc_zeroed(len)?)),
            Some((m, write)) => {
                if write {
                    let bytes = len.max(1) * std::mem::size_of::<T>();
                    // SAFETY: the region was carved from the caller's workspace above.
                    unsafe {
                        result::memset_d8_async(gpu.ptr(&m), 0, bytes, gpu.stream().cu_stream())
                    }
                    .map_err(|e| Error::device("cuMemsetD8Async", e))?;
                }
                Ok(m)
            }
        }
    }

    /// A buffer holding a copy of `data`.
    pub(crate) fn upload<T: DeviceRepr + ValidAsZeroBits>(
        &mut self,
        gpu: &Gpu,
        data: &[T],
    ) -> Result<Mem<T>> {
        match self.carve::<T>(gpu, data.len())? {
            None => Ok(Mem::Owned(gpu.upload(data)?)),
            Some((m, write)) => {
                if write && !data.is_empty() {
                    // SAFETY: the region holds data.len() elements; the copy from host memory
                    // is staged before the call returns.
                    unsafe {
                        result::memcpy_htod_async(gpu.ptr(&m), data, gpu.stream().cu_stream())
                    }
                    .map_err(|e| Error::device("cuMemcpyHtoDAsync", e))?;
                }
                Ok(m)
            }
        }
    }
}
