//! The host half of a GPU upload's analysis: everything [`DeviceCsr`](crate::device::DeviceCsr)
//! computes from a matrix before it copies the results over. Kept apart from the copies so
//! its cost, paid once a matrix like cuSPARSE's preprocessing, can be timed on any machine
//! (`sparrow bench analysis`).

use super::formats::diagonals::{consecutive, follow_bits, longest_run, offsets_at};
use super::formats::near::near_offsets;
use super::formats::row_blocks::{row_blocks, RowBlocks};
use super::formats::slices::{self, SliceLayout};
use super::formats::work::{pack_columns, rows_by_length, stream_partition, PackedColumns};
use super::formats::Formats;
use crate::matrix::Csr;
use crate::ops::products::plan::ProductsTuning;
use crate::ops::products::stats::{RowStats, CHUNK, LONG_ROW};
use crate::{Error, Result, Scalar};

/// Rows longer than [`LONG_ROW`] and their chunks of [`CHUNK`] entries.
#[derive(Debug, Default)]
pub struct LongRowChunks {
    /// Each long row's index.
    pub rows: Vec<i64>,
    /// Chunks of long row i are `chunk_ptr[i]..chunk_ptr[i + 1]`.
    pub chunk_ptr: Vec<i64>,
    /// Each chunk's first entry.
    pub starts: Vec<i64>,
    /// One past each chunk's last entry.
    pub ends: Vec<i64>,
}

impl LongRowChunks {
    /// The long rows of a matrix given by its row pointers.
    pub fn of(row_ptr: &[i64]) -> Self {
        let mut c = LongRowChunks {
            chunk_ptr: vec![0],
            ..Default::default()
        };
        for (r, w) in row_ptr.windows(2).enumerate() {
            if (w[1] - w[0]) as usize > LONG_ROW {
                c.rows.push(r as i64);
                let mut s = w[0];
                while s < w[1] {
                    c.starts.push(s);
                    s = (s + CHUNK as i64).min(w[1]);
                    c.ends.push(s);
                }
                c.chunk_ptr.push(c.starts.len() as i64);
            }
        }
        c
    }
}

/// The pattern of diagonals most rows repeat, and which rows follow it.
#[derive(Debug)]
pub struct DiagPattern {
    /// Column offsets of the diagonals from the row.
    pub offsets: Vec<i32>,
    /// One bit a row: whether it follows the pattern.
    pub bits: Vec<u32>,
    /// The longest run of rows that follow it ([`longest_run`]).
    pub run: std::ops::Range<usize>,
    /// The entry where the run's first row starts.
    pub run_at: i64,
    /// The first offset when the offsets are consecutive ([`consecutive`]).
    pub first: Option<i32>,
}

/// The column-slice layout with its records as the kernel reads them
/// ([`SliceLayout::f32_records`]).
pub struct Slices<T> {
    /// The layout.
    pub layout: SliceLayout<T>,
    /// Its records end to end, word and f32 value each.
    pub records: Vec<u32>,
}

/// What an upload computes on the host, beside the matrix's own arrays.
pub struct HostAnalysis<T> {
    /// The formats asked for; those left out are empty or None below.
    pub formats: Formats,
    /// The long rows' chunks.
    pub long_rows: LongRowChunks,
    /// The SpMV work blocks, six i64 each ([`stream_partition`]).
    pub work: Vec<i64>,
    /// Number of work blocks.
    pub work_blocks: usize,
    /// The columns packed over the work blocks, where the statistics say they fit
    /// ([`RowStats::packable`]).
    pub packed: Option<PackedColumns>,
    /// The pattern of diagonals, where the statistics found one ([`RowStats::diagonals`]).
    pub diag: Option<DiagPattern>,
    /// Each entry's column as a 16-bit offset from its row, where every entry lies near the
    /// diagonal ([`RowStats::near`]).
    pub near: Option<Vec<i16>>,
    /// The column-slice layout, where the statistics say these values take it on the caller's
    /// GPU ([`RowStats::sliced_for`]) and that GPU runs its kernel.
    pub slices: Option<Slices<T>>,
    /// The rows by length, longest first ([`rows_by_length`]).
    pub sorted_rows: Vec<i64>,
    /// The row blocks, where neighbouring rows share enough columns
    /// ([`RowStats::block_rows`]).
    pub row_blocks: Option<RowBlocks<T>>,
}

impl<T: Scalar> HostAnalysis<T> {
    /// Device bytes an upload of this analysis adds beside the CSR arrays and the long rows'
    /// chunks: the formats' buffers [`super::PreparedCsr`] copies and the scratch it allocates,
    /// so a caller can compare what each choice of formats costs the device.
    pub fn device_bytes(&self) -> u64 {
        let s = std::mem::size_of::<T>();
        let mut b = 8 * self.work.len()
            + if self.formats.stream {
                (s + 4) * self.work_blocks
            } else {
                0
            };
        if let Some(p) = &self.packed {
            b += 2 * p.cols.len() + 4 * p.base.len() + 2 * p.ends.len();
        }
        if let Some(d) = &self.diag {
            b += 4 * (d.offsets.len() + d.bits.len());
        }
        if let Some(n) = &self.near {
            b += 2 * n.len();
        }
        if let Some(sl) = &self.slices {
            let l = &sl.layout;
            b += 4 * sl.records.len()
                + 8 * l.block_base.len()
                + 4 * (l.stage0.len() + l.desc.len() + l.piece0.len() + l.piece_out.len())
                + 4 * (l.cut_rows.len() + l.cut_start.len())
                + s * *l.cut_start.last().unwrap_or(&0) as usize;
        }
        b += 8 * self.sorted_rows.len();
        if let Some(r) = &self.row_blocks {
            b += 8 * r.ptr.len() + 4 * r.cols.len() + s * r.vals.len();
        }
        b as u64
    }

    /// Analyses `a` with its statistics `stats` (`crate::ops::products::RowStats::of(&a)`) for
    /// a GPU whose tuning is `slices` where it runs the column-slice kernel
    /// ([`slices::runs_on`]), None where it does not: whether the slices pay, and the groups
    /// their layout deals rows to, are that GPU's ([`ProductsTuning::slice_groups`]).
    /// Statistics that claim a pattern, packing or reach the matrix lacks are refused, naming
    /// `stats`.
    pub fn of(a: &Csr<T>, stats: &RowStats, slices: Option<&ProductsTuning>) -> Result<Self> {
        Self::of_formats(a, stats, slices, Formats::ALL)
    }

    /// [`HostAnalysis::of`] building only the formats in `want` (the long rows' chunks always).
    pub fn of_formats(
        a: &Csr<T>,
        stats: &RowStats,
        slices: Option<&ProductsTuning>,
        want: Formats,
    ) -> Result<Self> {
        let mut work = Vec::new();
        let work_blocks = if want.stream || want.packed {
            stream_partition(a.row_ptr(), stats.stream_items, |b| {
                work.extend_from_slice(&b)
            })
        } else {
            0
        };
        let packed = if want.packed && stats.packable() {
            Some(
                pack_columns(a.row_ptr(), a.col_idx(), &work).ok_or_else(|| {
                    Error::invalid(
                        "stats",
                        "say the matrix packs, but a work block spans more than 2^16 columns",
                    )
                })?,
            )
        } else {
            None
        };
        let diag = if want.diag && stats.diagonals > 0 {
            // The pattern off the row the statistics name, checked against the rows they count.
            let off = (stats.diag_row < a.nrows())
                .then(|| offsets_at(a.row_ptr(), a.col_idx(), stats.diag_row))
                .flatten()
                .filter(|o| o.len() == stats.diagonals);
            let (bits, count) = match &off {
                Some(o) => follow_bits(a.row_ptr(), a.col_idx(), o),
                None => (Vec::new(), 0),
            };
            let Some(offsets) = off.filter(|_| count == stats.diag_rows) else {
                return Err(Error::invalid(
                    "stats",
                    format!(
                        "say {} rows repeat {} diagonals (those of row {}), but the matrix has no such pattern",
                        stats.diag_rows, stats.diagonals, stats.diag_row
                    ),
                ));
            };
            let run = longest_run(&bits, a.nrows());
            Some(DiagPattern {
                first: consecutive(&offsets),
                run_at: a.row_ptr()[run.start],
                run,
                offsets,
                bits,
            })
        } else {
            None
        };
        let near = if want.near && stats.near() {
            Some(near_offsets(a.row_ptr(), a.col_idx()).ok_or_else(|| {
                Error::invalid(
                    "stats",
                    format!(
                        "say every column lies within {} of its row, but one lies farther",
                        stats.reach
                    ),
                )
            })?)
        } else {
            None
        };
        let slices = match slices {
            Some(t) if want.slices && stats.sliced_for(std::mem::size_of::<T>(), t) => {
                let layout = slices::build(
                    a.nrows(),
                    a.row_ptr(),
                    a.col_idx(),
                    a.values(),
                    t.slice_groups,
                )
                .ok_or_else(|| {
                    Error::unsupported("the column-slice layout: a block's records pass 2^26")
                })?;
                let records = layout.f32_records();
                Some(Slices { layout, records })
            }
            _ => None,
        };
        Ok(HostAnalysis {
            formats: Formats {
                stream: want.stream || want.packed,
                ..want
            },
            long_rows: LongRowChunks::of(a.row_ptr()),
            work,
            work_blocks,
            packed,
            diag,
            near,
            slices,
            sorted_rows: if want.sorted {
                rows_by_length(a.row_ptr())
            } else {
                Vec::new()
            },
            row_blocks: if want.row_blocks {
                for_upload(a, stats)?
            } else {
                None
            },
        })
    }
}

/// The row blocks an upload of `a` with statistics `stats` builds for values of `T`
/// ([`RowStats::block_rows`]), or none. Statistics whose count of distinct columns for that
/// height is not this matrix's are refused, naming `stats`, before the blocks reach a device.
pub fn for_upload<T: Scalar>(a: &Csr<T>, stats: &RowStats) -> Result<Option<RowBlocks<T>>> {
    let Some(rows) = stats.block_rows(std::mem::size_of::<T>()) else {
        return Ok(None);
    };
    let b = row_blocks(a.row_ptr(), a.col_idx(), a.values(), rows)?;
    if b.cols.len() != stats.union_for(rows) {
        return Err(Error::invalid(
            "stats",
            format!(
                "count {} distinct columns over the blocks of {rows} rows, the matrix has {}",
                stats.union_for(rows),
                b.cols.len()
            ),
        ));
    }
    Ok(Some(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::gen;
    use crate::ops::products::plan::SM90;

    fn refusal<T: Scalar>(a: &Csr<T>, st: &RowStats) -> String {
        match HostAnalysis::of(a, st, Some(&SM90)) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted {st:?}"),
        }
    }

    /// Statistics that claim a pattern, a packing or a reach the matrix lacks are refused by
    /// name before anything reaches a device.
    #[test]
    fn statistics_the_matrix_contradicts_are_refused() {
        let a = gen::banded::<f32>(300, 5, 1).unwrap();
        let mut st = crate::ops::products::RowStats::of(&a);
        assert_eq!(st.diagonals, 5);
        st.diagonals = 6;
        let e = refusal(&a, &st);
        assert!(e.contains("stats") && e.contains("6 diagonals"), "{e}");
        let mut st = crate::ops::products::RowStats::of(&a);
        st.diag_rows -= 1;
        let e = refusal(&a, &st);
        assert!(e.contains("stats") && e.contains("5 diagonals"), "{e}");
        let wide =
            Csr::<f32>::from_triplets(40_000, 90_000, &[0, 1], &[1, 89_000], &[1.0, 2.0]).unwrap();
        let mut st = crate::ops::products::RowStats::of(&wide);
        st.reach = 5;
        let e = refusal(&wide, &st);
        assert!(e.contains("stats") && e.contains("lies farther"), "{e}");
        let mut st = crate::ops::products::RowStats::of(&wide);
        assert!(!st.packable());
        st.stream_span = 1;
        let e = refusal(&wide, &st);
        assert!(e.contains("stats") && e.contains("2^16 columns"), "{e}");
    }

    /// What the analysis builds follows the statistics and the caller's GPU: the column slices
    /// for scattered f32 rows on a GPU that runs them, dealt to its tuning's groups, with their
    /// records end to end; the long rows' chunks cover each long row once; the rows by length
    /// hold every row.
    #[test]
    fn the_analysis_builds_what_the_statistics_call_for() {
        let a = gen::power_law::<f32>(150_000, 150_000, 16.0, 5_000, 1.5, 8).unwrap();
        let st = crate::ops::products::RowStats::of(&a);
        assert!(st.sliced_for(4, &SM90), "{st:?}");
        let h = HostAnalysis::of(&a, &st, Some(&SM90)).unwrap();
        let s = h.slices.as_ref().expect("column slices");
        let recs: usize = s.layout.enc.iter().map(Vec::len).sum();
        assert_eq!(s.records.len(), 2 * recs);
        assert!(recs >= a.nnz());
        assert!(HostAnalysis::of(&a, &st, None).unwrap().slices.is_none());
        // The rows go to the groups of the GPU's tuning.
        let half = ProductsTuning {
            slice_groups: SM90.slice_groups / 2,
            ..SM90
        };
        let h2 = HostAnalysis::of(&a, &st, Some(&half)).unwrap();
        let g2 = h2.slices.as_ref().expect("column slices").layout.groups();
        assert_eq!(
            (s.layout.groups(), g2),
            (SM90.slice_groups, half.slice_groups)
        );
        assert_eq!(h.sorted_rows.len(), a.nrows());
        assert_eq!(h.work.len(), 6 * h.work_blocks);
        assert!(h.diag.is_none() && h.row_blocks.is_none());

        let l = gen::long_rows::<f64>(3_000, 40_000, 2, 30_000, 3, 5).unwrap();
        let h = HostAnalysis::of(&l, &crate::ops::products::RowStats::of(&l), Some(&SM90)).unwrap();
        let c = &h.long_rows;
        let long: Vec<i64> = (0..l.nrows())
            .filter(|&r| l.row_range(r).len() > LONG_ROW)
            .map(|r| r as i64)
            .collect();
        assert!(!long.is_empty());
        assert_eq!(c.rows, long);
        for (i, &r) in c.rows.iter().enumerate() {
            let (p, q) = (c.chunk_ptr[i] as usize, c.chunk_ptr[i + 1] as usize);
            let range = l.row_range(r as usize);
            assert_eq!(c.starts[p], range.start as i64);
            assert_eq!(c.ends[q - 1], range.end as i64);
            for k in p..q {
                assert!(c.ends[k] - c.starts[k] <= CHUNK as i64);
                if k + 1 < q {
                    assert_eq!(c.ends[k], c.starts[k + 1]);
                }
            }
        }
        // f64 builds no slices.
        assert!(h.slices.is_none());
    }

    /// An analysis for one path builds that path's formats, equal to the full analysis's, and
    /// nothing else; the long rows' chunks come with every one.
    #[test]
    fn an_analysis_for_one_path_builds_only_its_formats() {
        use crate::ops::products::GpuPath;
        let a = gen::banded::<f32>(3_000, 5, 1).unwrap();
        let st = crate::ops::products::RowStats::of(&a);
        let all = HostAnalysis::of(&a, &st, Some(&SM90)).unwrap();
        assert!(all.packed.is_some() && all.diag.is_some() && all.near.is_some());
        let none = HostAnalysis::of_formats(&a, &st, Some(&SM90), Formats::NONE).unwrap();
        assert_eq!(none.formats, Formats::NONE);
        assert!(none.work.is_empty() && none.work_blocks == 0 && none.sorted_rows.is_empty());
        assert!(none.packed.is_none() && none.diag.is_none() && none.near.is_none());
        assert!(none.slices.is_none() && none.row_blocks.is_none());
        assert_eq!(none.long_rows.rows, all.long_rows.rows);

        let packed =
            HostAnalysis::of_formats(&a, &st, Some(&SM90), GpuPath::Packed.formats()).unwrap();
        assert!(packed.formats.stream && packed.formats.packed);
        assert_eq!(packed.work, all.work);
        let (p, q) = (packed.packed.unwrap(), all.packed.unwrap());
        assert_eq!((p.cols, p.base, p.ends), (q.cols, q.base, q.ends));
        assert!(packed.diag.is_none() && packed.near.is_none() && packed.sorted_rows.is_empty());

        let diag = HostAnalysis::of_formats(&a, &st, Some(&SM90), GpuPath::Diag.formats()).unwrap();
        let (d, e) = (diag.diag.unwrap(), all.diag.unwrap());
        assert_eq!((d.offsets, d.bits, d.run), (e.offsets, e.bits, e.run));
        assert!(diag.work.is_empty() && diag.packed.is_none() && diag.near.is_none());

        let sorted = GpuPath::Sorted {
            cols: 1,
            lane_entries: 8,
            deep: false,
        };
        let h = HostAnalysis::of_formats(&a, &st, Some(&SM90), sorted.formats()).unwrap();
        assert_eq!(h.sorted_rows, all.sorted_rows);
        assert!(h.work.is_empty() && h.diag.is_none() && h.row_blocks.is_none());
    }
}
