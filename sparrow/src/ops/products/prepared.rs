//! A CSR matrix prepared on a GPU for the products: its arrays with the row statistics and the
//! acceleration formats the GPU paths read, built once like cuSPARSE's preprocessing.

use cudarc::driver::CudaSlice;

use crate::device::{DeviceCsr, Gpu};
use crate::matrix::Csr;
use crate::ops::products::analysis::{HostAnalysis, LongRowChunks};
#[cfg(doc)]
use crate::ops::products::formats::diagonals::{consecutive, follow_bits, longest_run};
use crate::ops::products::formats::row_blocks::RowBlocks;
use crate::ops::products::formats::slices::{self, SliceLayout};
#[cfg(doc)]
use crate::ops::products::formats::work::{pack_columns, rows_by_length, stream_partition};
use crate::ops::products::formats::work::{PackedColumns, STREAM_ITEMS_EVEN};
use crate::ops::products::formats::Formats;
use crate::ops::products::plan::ProductsTuning;
use crate::ops::products::stats::RowStats;
use crate::{Error, Result, Scalar};

use crate::device::VEC_ENTRIES;

/// The long rows of a matrix and their chunks, on the GPU.
pub struct LongRows {
    /// Number of long rows.
    pub nrows: usize,
    /// Number of chunks over all long rows.
    pub nchunks: usize,
    /// Row index of each long row.
    pub rows: CudaSlice<i64>,
    /// Chunks of long row i are `chunk_ptr[i]..chunk_ptr[i + 1]`.
    pub chunk_ptr: CudaSlice<i64>,
    /// First entry of each chunk.
    pub starts: CudaSlice<i64>,
    /// One past the last entry of each chunk.
    pub ends: CudaSlice<i64>,
}

impl LongRows {
    fn upload(gpu: &Gpu, c: &LongRowChunks) -> Result<Option<Self>> {
        if c.rows.is_empty() {
            return Ok(None);
        }
        Ok(Some(LongRows {
            nrows: c.rows.len(),
            nchunks: c.starts.len(),
            rows: gpu.upload(&c.rows)?,
            chunk_ptr: gpu.upload(&c.chunk_ptr)?,
            starts: gpu.upload(&c.starts)?,
            ends: gpu.upload(&c.ends)?,
        }))
    }
}

/// The SpMV work blocks of a matrix ([`stream_partition`]) with the scratch their long-row
/// chunks share: one partial sum per block and one arrival counter per long row, which the
/// last chunk of the row to finish resets, so one matrix serves one SpMV at a time.
pub struct StreamWork<T> {
    /// Number of work blocks.
    pub nblocks: usize,
    /// Entries of a block of short rows at most (the launch's shared memory holds as many
    /// products).
    pub items: usize,
    /// Six i64 per block.
    pub work: CudaSlice<i64>,
    /// One partial sum per block.
    pub partial: CudaSlice<T>,
    /// Zero between calls.
    pub counters: CudaSlice<u32>,
}

impl<T: Scalar> StreamWork<T> {
    /// The work blocks ([`HostAnalysis::work`]) on the GPU, with their scratch.
    fn upload(gpu: &Gpu, work: &[i64], nblocks: usize, items: usize) -> Result<Self> {
        Ok(StreamWork {
            nblocks,
            items,
            work: gpu.upload(work)?,
            partial: gpu.alloc_zeroed(nblocks)?,
            counters: gpu.alloc_zeroed(nblocks)?,
        })
    }
}

/// A matrix's columns packed for SpMV ([`PackedColumns`]) on the GPU.
pub struct PackedCols {
    /// 16-bit column offsets, padded to `VEC_ENTRIES` like the indices.
    pub cols: CudaSlice<u16>,
    /// First column of each work block.
    pub base: CudaSlice<i32>,
    /// 16-bit row ends relative to their block's first entry.
    pub ends: CudaSlice<u16>,
}

impl PackedCols {
    /// Packs the columns on the host ([`pack_columns`]) and uploads them: the packed blocks ran
    /// no slower over host-packed buffers than over a packing kernel's, at some cost to the
    /// upload's analysis. See docs/tuning/products.md#packed-columns.
    fn upload(gpu: &Gpu, p: &PackedColumns) -> Result<Self> {
        Ok(PackedCols {
            cols: gpu.upload_padded(&p.cols, VEC_ENTRIES)?,
            base: gpu.upload(&p.base)?,
            ends: gpu.upload(&p.ends)?,
        })
    }
}

/// A matrix's pattern of diagonals and the bits of the rows that follow it
/// ([`follow_bits`]) on the GPU.
pub struct DeviceDiag {
    /// Diagonals in the pattern.
    pub ndiag: usize,
    /// Their column offsets from the row.
    pub offsets: CudaSlice<i32>,
    /// One bit a row.
    pub bits: CudaSlice<u32>,
    /// The longest run of rows that follow the pattern ([`longest_run`]).
    pub run: std::ops::Range<usize>,
    /// The entry where the run's first row starts.
    pub run_at: i64,
    /// The first offset when the offsets are consecutive ([`consecutive`]).
    pub first: Option<i32>,
}

/// A matrix's row blocks ([`RowBlocks`]) on the GPU.
pub struct DeviceRowBlocks<T> {
    /// Rows per block.
    pub rows: usize,
    /// Number of blocks.
    pub nblocks: usize,
    /// Offsets of each block's listed columns.
    pub ptr: CudaSlice<i64>,
    /// The listed columns.
    pub cols: CudaSlice<i32>,
    /// `rows` values per listed column.
    pub vals: CudaSlice<T>,
}

impl<T: Scalar> DeviceRowBlocks<T> {
    fn upload(gpu: &Gpu, b: &RowBlocks<T>) -> Result<Self> {
        Ok(DeviceRowBlocks {
            rows: b.rows,
            nblocks: b.ptr.len() - 1,
            ptr: gpu.upload(&b.ptr)?,
            cols: gpu.upload(&b.cols)?,
            vals: gpu.upload(&b.vals)?,
        })
    }
}

/// The column-slice layout of an f32 matrix on the GPU ([`slices`]).
pub struct DeviceSlices<T> {
    /// Groups of blocks sharing their pieces: a cluster of
    /// [`SLICE_MEMBERS`](slices::SLICE_MEMBERS) blocks each with bulk copies, a block each
    /// without.
    pub groups: usize,
    /// Rows cut into pieces.
    pub cut: usize,
    /// Each record: its column in its slice << 16 | piece in its group, then its f32 value's
    /// bits, so a stage's records arrive by one bulk copy.
    pub recs: CudaSlice<u32>,
    /// Each block's first record.
    pub block_base: CudaSlice<i64>,
    /// Each block's first stage (`blocks + 1`).
    pub stage0: CudaSlice<i32>,
    /// The stages' descriptors.
    pub desc: CudaSlice<u32>,
    /// Each group's first piece (`groups + 1`).
    pub piece0: CudaSlice<i32>,
    /// Each piece's row, or -1 - its slot.
    pub piece_out: CudaSlice<i32>,
    /// The rows cut into pieces.
    pub cut_rows: CudaSlice<i32>,
    /// Each cut row's first slot (`cut + 1`).
    pub cut_start: CudaSlice<i32>,
    /// The cut rows' pieces' sums.
    pub slots: CudaSlice<T>,
}

impl<T: Scalar> DeviceSlices<T> {
    fn upload(gpu: &Gpu, l: &SliceLayout<T>, records: &[u32]) -> Result<Self> {
        let nslots = *l.cut_start.last().unwrap_or(&0) as usize;
        Ok(DeviceSlices {
            groups: l.groups(),
            cut: l.cut_rows.len(),
            recs: gpu.upload(records)?,
            block_base: gpu.upload(&l.block_base)?,
            stage0: gpu.upload(&l.stage0)?,
            desc: gpu.upload(&l.desc)?,
            piece0: gpu.upload(&l.piece0)?,
            piece_out: gpu.upload(&l.piece_out)?,
            cut_rows: gpu.upload(&l.cut_rows)?,
            cut_start: gpu.upload(&l.cut_start)?,
            slots: gpu.alloc_zeroed(nslots.max(1))?,
        })
    }
}

/// A CSR matrix on the GPU with its analysis, done once on upload like cuSPARSE's
/// preprocessing: the row statistics plans read, the long rows' chunks, and the formats the
/// caller's paths read (`Formats`; [`PreparedCsr::upload`] builds them all): the SpMV work
/// blocks (with the packed columns where they fit), the pattern of diagonals and the 16-bit
/// column offsets where the matrix has them, the column-slice layout for scattered columns
/// where it pays, the rows sorted by length and, where neighbouring rows share their
/// columns, the row blocks. The host half of the analysis is `HostAnalysis`.
pub struct PreparedCsr<T> {
    /// The CSR arrays.
    pub csr: DeviceCsr<T>,
    /// Row-length statistics.
    pub stats: RowStats,
    /// Rows longer than `LONG_ROW`, split into chunks; None when there are none.
    pub long_rows: Option<LongRows>,
    /// The formats built (those the statistics say the matrix lacks are None even when asked).
    pub formats: Formats,
    /// The SpMV work blocks, when asked for.
    pub stream: Option<StreamWork<T>>,
    /// The columns packed over the work blocks, when the statistics say they fit
    /// (`RowStats::packable`).
    pub packed: Option<PackedCols>,
    /// The pattern of diagonals most rows repeat, when the statistics found one
    /// (`RowStats::diagonals`).
    pub diag: Option<DeviceDiag>,
    /// Each entry's column as a 16-bit offset from its row, when every entry lies within
    /// `NEAR_REACH` of the diagonal (`RowStats::near`), for
    /// the SpMV path that reads 2 bytes a column instead of 4.
    pub near: Option<CudaSlice<i16>>,
    /// The column-slice layout, where the statistics say these values take it on this GPU
    /// (`RowStats::sliced_for` with its architecture's tuning) and it runs the kernel
    /// (`slices::runs_on`).
    pub slices: Option<DeviceSlices<T>>,
    /// The rows by length, longest first (`rows_by_length`), for the sorted SpMM path, when
    /// asked for.
    pub sorted_rows: Option<CudaSlice<i64>>,
    /// The row blocks, when the statistics say neighbouring rows share enough columns
    /// (`RowStats::blockable`).
    pub row_blocks: Option<DeviceRowBlocks<T>>,
    /// Host time of the analysis (statistics, long rows, work blocks, the packed columns, the
    /// diagonals, the column offsets and the column-slice layout with their uploads, rows by
    /// length, the row blocks and their upload), milliseconds.
    pub analysis_ms: f64,
}

impl<T: Scalar> PreparedCsr<T> {
    /// Copies `a` to the GPU with every format it has, for any path.
    pub fn upload(gpu: &Gpu, a: &Csr<T>) -> Result<Self> {
        let t = std::time::Instant::now();
        let stats = crate::ops::products::RowStats::of(a);
        let mut d = Self::upload_with_stats(gpu, a, stats)?;
        d.analysis_ms += t.elapsed().as_secs_f64() * 1e3;
        Ok(d)
    }

    /// Copies `a` to the GPU with statistics the caller already has (`crate::ops::products::RowStats::of(&a)`), so a
    /// host-side op reads the row pointers once for its plan, its memory check and the upload.
    /// The analysis time counts only the long rows and work blocks then.
    /// Statistics of another matrix, or a block capacity the SpMV kernel cannot hold, are
    /// refused.
    pub fn upload_with_stats(gpu: &Gpu, a: &Csr<T>, stats: RowStats) -> Result<Self> {
        Self::upload_for(gpu, a, stats, Formats::ALL)
    }

    /// [`PreparedCsr::upload_with_stats`] building only the formats in `want`: a caller that
    /// knows its paths (`GpuPath::formats`) skips
    /// the analysis and the device memory of the others.
    pub fn upload_for(gpu: &Gpu, a: &Csr<T>, stats: RowStats, want: Formats) -> Result<Self> {
        if (stats.nrows, stats.nnz) != (a.nrows(), a.nnz()) {
            return Err(Error::invalid(
                "stats",
                format!(
                    "describe {} rows and {} entries, the matrix has {} and {}",
                    stats.nrows,
                    stats.nnz,
                    a.nrows(),
                    a.nnz()
                ),
            ));
        }
        if stats.stream_items == 0 || stats.stream_items > STREAM_ITEMS_EVEN {
            return Err(Error::invalid(
                "stats",
                format!(
                    "stream_items {} is outside 1..={STREAM_ITEMS_EVEN}, what the SpMV blocks hold",
                    stats.stream_items
                ),
            ));
        }
        let csr = DeviceCsr::upload(gpu, a)?;
        let t = std::time::Instant::now();
        let limits = gpu.limits();
        let sliced_on =
            slices::runs_on(limits).then(|| ProductsTuning::for_arch(limits.compute_capability));
        let h = HostAnalysis::of_formats(a, &stats, sliced_on, want)?;
        let long_rows = LongRows::upload(gpu, &h.long_rows)?;
        let stream = if h.formats.stream {
            Some(StreamWork::upload(
                gpu,
                &h.work,
                h.work_blocks,
                stats.stream_items,
            )?)
        } else {
            None
        };
        let packed = h
            .packed
            .as_ref()
            .map(|p| PackedCols::upload(gpu, p))
            .transpose()?;
        let diag = match &h.diag {
            Some(d) => Some(DeviceDiag {
                ndiag: d.offsets.len(),
                run_at: d.run_at,
                run: d.run.clone(),
                first: d.first,
                offsets: gpu.upload(&d.offsets)?,
                bits: gpu.upload(&d.bits)?,
            }),
            None => None,
        };
        let near = h.near.as_deref().map(|o| gpu.upload(o)).transpose()?;
        let slices = h
            .slices
            .as_ref()
            .map(|s| DeviceSlices::upload(gpu, &s.layout, &s.records))
            .transpose()?;
        let sorted_rows = if h.formats.sorted {
            Some(gpu.upload(&h.sorted_rows)?)
        } else {
            None
        };
        let row_blocks = h
            .row_blocks
            .as_ref()
            .map(|b| DeviceRowBlocks::upload(gpu, b))
            .transpose()?;
        Ok(PreparedCsr {
            csr,
            stats,
            formats: h.formats,
            long_rows,
            stream,
            packed,
            diag,
            near,
            slices,
            sorted_rows,
            row_blocks,
            analysis_ms: t.elapsed().as_secs_f64() * 1e3,
        })
    }
}

impl<T> std::ops::Deref for PreparedCsr<T> {
    type Target = DeviceCsr<T>;
    fn deref(&self) -> &DeviceCsr<T> {
        &self.csr
    }
}
