//! Ordering sparrow's stream against a caller's CUDA stream (torch's or CuPy's), for work on
//! memory the caller owns: sparrow's stream waits for what the caller's stream has queued, and
//! the caller's stream waits for sparrow's work, both through events, so neither host waits.

use cudarc::driver::{result, sys};

use super::Gpu;
use crate::{Error, Result};

/// Two events: one recorded on the caller's stream, one on sparrow's.
pub struct Fence {
    ready: sys::CUevent,
    done: sys::CUevent,
}

// SAFETY: event handles may be recorded and waited on from any thread of their context.
unsafe impl Send for Fence {}
unsafe impl Sync for Fence {}

impl Fence {
    /// Creates the events in the GPU's context.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        bind(gpu)?;
        let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING;
        let ready = result::event::create(flags).map_err(|e| Error::device("cuEventCreate", e))?;
        match result::event::create(flags) {
            Ok(done) => Ok(Fence { ready, done }),
            Err(e) => {
                // SAFETY: created above, never recorded.
                unsafe {
                    let _ = result::event::destroy(ready);
                }
                Err(Error::device("cuEventCreate", e))
            }
        }
    }

    /// Makes sparrow's stream wait for the work queued on `theirs` so far.
    ///
    /// # Safety
    /// `theirs` must be a live stream of the GPU's context (0: the legacy default stream).
    pub unsafe fn after(&self, gpu: &Gpu, theirs: usize) -> Result<()> {
        bind(gpu)?;
        unsafe {
            link(
                self.ready,
                theirs as sys::CUstream,
                gpu.stream().cu_stream(),
            )
        }
    }

    /// Makes `theirs` wait for the work queued on sparrow's stream so far.
    ///
    /// # Safety
    /// As [`Fence::after`].
    pub unsafe fn before(&self, gpu: &Gpu, theirs: usize) -> Result<()> {
        bind(gpu)?;
        unsafe { link(self.done, gpu.stream().cu_stream(), theirs as sys::CUstream) }
    }
}

fn bind(gpu: &Gpu) -> Result<()> {
    gpu.context()
        .bind_to_thread()
        .map_err(|e| Error::device("binding the context", e))
}

/// Records `event` on `from` and makes `to` wait for it.
unsafe fn link(event: sys::CUevent, from: sys::CUstream, to: sys::CUstream) -> Result<()> {
    unsafe {
        result::event::record(event, from).map_err(|e| Error::device("cuEventRecord", e))?;
        result::stream::wait_event(to, event, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT)
            .map_err(|e| Error::device("cuStreamWaitEvent", e))
    }
}

impl Drop for Fence {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once; the driver releases them after recorded
        // work completes.
        unsafe {
            let _ = result::event::destroy(self.ready);
            let _ = result::event::destroy(self.done);
        }
    }
}
