//! Top-k over keys that already live on the GPU, in memory the caller owns (a torch or CuPy
//! tensor taken through DLPack): nothing goes through host memory, and the work is ordered on
//! the caller's stream by two events, so the result is ready there as if its own kernels had
//! made it.

use super::cuda::{Arena, GpuTopK};
use super::{IndexType, Key, Layout, Segments, TopK};
use crate::device::{Fence, Gpu};
use crate::{Error, Result};

/// A top-k prepared for `rows` segments of `len` keys in device memory: its state and
/// scratch are allocated once, so repeated runs (a serving loop) allocate nothing.
///
/// Sorted rows wider than the GPU's row sort (4,096) are refused: ask for unsorted rows and
/// sort them on the device.
pub struct DeviceTopK<'g, K: Key> {
    gpu: &'g Gpu,
    inner: GpuTopK<'g, K, K>,
    layout: Layout,
    fence: Fence,
}

// SAFETY: the state is the GPU's and owned buffers, used by one caller at a time (`run` takes
// `&mut self`); the cell that holds the keys' address is set only inside `run`.
unsafe impl<K: Key> Send for DeviceTopK<'_, K> {}

/// The request with 64-bit positions, and the layout of `rows` rows of `len` keys.
fn shaped(req: &TopK, rows: usize, len: usize) -> Result<(TopK, Layout, usize)> {
    let req = req.clone().index_type(IndexType::I64);
    let nkeys = rows
        .checked_mul(len)
        .ok_or_else(|| Error::invalid("rows", "rows x length overflows"))?;
    let layout = req.layout(nkeys, Segments::Fixed { count: rows, len }, None)?;
    Ok((req, layout, nkeys))
}

impl TopK {
    /// Bytes of the workspace a [`DeviceTopK::with_workspace`] of this request over `rows`
    /// rows of `len` keys of type `K` takes on `gpu` (as CUB's temporary-storage query): its
    /// state, its scratch and the outputs it stages, regions aligned to 256 bytes.
    pub fn workspace_bytes<K: Key>(&self, gpu: &Gpu, rows: usize, len: usize) -> Result<usize> {
        let (req, layout, nkeys) = shaped(self, rows, len)?;
        let mut arena = Arena::measure();
        GpuTopK::<K, K>::external(gpu, &req, nkeys, &layout, &mut arena)?;
        Ok(arena.used())
    }
}

impl<'g, K: Key> DeviceTopK<'g, K> {
    /// Prepares `req` (its index type becomes 64-bit) over `rows` rows of `len` keys,
    /// allocating its buffers.
    pub fn new(gpu: &'g Gpu, req: &TopK, rows: usize, len: usize) -> Result<Self> {
        Self::build(gpu, req, rows, len, &mut Arena::Own)
    }

    /// As [`DeviceTopK::new`], with every buffer in the caller's `workspace` of `bytes` bytes
    /// (at least [`TopK::workspace_bytes`]): the plan allocates nothing, and its runs neither
    /// allocate, wait for the host nor read anything back, so a CUDA graph can capture them.
    /// The workspace is written here (on sparrow's stream, which later runs wait behind) and
    /// by every run.
    ///
    /// # Safety
    /// `workspace` must be device memory of this GPU's context holding `bytes` bytes, used by
    /// nothing else while the plan lives.
    pub unsafe fn with_workspace(
        gpu: &'g Gpu,
        req: &TopK,
        rows: usize,
        len: usize,
        workspace: u64,
        bytes: usize,
    ) -> Result<Self> {
        Self::build(gpu, req, rows, len, &mut Arena::workspace(workspace, bytes))
    }

    fn build(gpu: &'g Gpu, req: &TopK, rows: usize, len: usize, arena: &mut Arena) -> Result<Self> {
        let (req, layout, nkeys) = shaped(req, rows, len)?;
        let inner = GpuTopK::external(gpu, &req, nkeys, &layout, arena)?;
        let fence = Fence::new(gpu)?;
        Ok(DeviceTopK {
            gpu,
            inner,
            layout,
            fence,
        })
    }

    /// Keys selected per row: k, capped at the row length.
    pub fn width(&self) -> usize {
        self.layout.width
    }

    /// Selects from the keys at device address `keys` into `out_keys` (rows x width keys) and
    /// `out_idx` (rows x width i64), after the work already on `stream` (a raw `CUstream`
    /// of this GPU's context; 0 is the legacy default stream) and before any work the caller
    /// puts on it next. Does not wait for the GPU.
    ///
    /// # Safety
    /// The three addresses must be device memory of this GPU's context holding the sizes
    /// above, the keys of type `K`, valid until the work on `stream` has run; `stream` must be
    /// a live stream of this context.
    pub unsafe fn run(
        &mut self,
        keys: u64,
        out_keys: u64,
        out_idx: u64,
        stream: usize,
    ) -> Result<()> {
        unsafe {
            self.fence.after(self.gpu, stream)?;
            self.inner.enqueue_at(keys)?;
            self.inner.copy_outputs_to(out_keys, out_idx)?;
            self.fence.before(self.gpu, stream)?;
        }
        Ok(())
    }
}
