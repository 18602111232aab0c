//! Segmented top-k: the k largest (or smallest) keys of every segment, with their positions
//! in the segment and optionally a value payload.
//!
//! Semantics, on every backend:
//! - Order of keys: the radix order of [`Key`]: NaN of any sign above +inf, -0.0 tied with
//!   +0.0, the original bits returned.
//! - Output: `num_segments x width` row-major, `width` = k (or the largest per-segment k),
//!   capped at the longest segment. A
//!   segment shorter than its k is padded with index -1 and the key type's lowest value
//!   (largest) or highest value (smallest; for floats -inf and +inf), values 0; `counts` holds
//!   how many entries of each row are real.
//! - Unsorted output lists the selected keys in ascending position (with [`TieBreak::Fast`]
//!   the GPU may list them in any order); sorted output orders them by key (largest first for
//!   largest-k, smallest first for smallest-k), ties by ascending position.
//! - Ties at the k boundary: [`TieBreak::SmallerIndex`] takes the tied keys with the smallest
//!   positions, [`TieBreak::LargerIndex`] the largest; both give identical bytes on every run
//!   and backend. [`TieBreak::Fast`] only promises a correct top-k set.
//!
//! Cost: every key is read once per 8-bit digit of its width on the GPU's radix passes (with
//! early stop), plus one read for the compaction; the CPU backend does the same on the host.

pub mod check;
pub mod cpu;
mod cuda;
pub mod data;
mod device;
pub mod key;
pub mod oracle;
pub mod plan;

pub use cuda::GpuTopK;
pub use device::DeviceTopK;
pub use key::Key;
pub use plan::GpuPath;

use super::Plan;
use crate::{Device, Error, Result};

/// Which keys win a tie at the k boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum TieBreak {
    /// Any correct top-k set.
    Fast,
    /// Prefer the smaller position.
    SmallerIndex,
    /// Prefer the larger position.
    LargerIndex,
}

/// The integer type of the output positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum IndexType {
    /// 32-bit positions (segments up to 2^31 - 1 keys).
    I32,
    /// 64-bit positions.
    I64,
}

/// How the keys are cut into segments.
#[derive(Clone, Copy, Debug)]
pub enum Segments<'a> {
    /// `count` segments of `len` keys each (a 2-D array, one row per segment).
    Fixed {
        /// Number of segments.
        count: usize,
        /// Keys per segment.
        len: usize,
    },
    /// Segment i is `keys[offsets[i]..offsets[i + 1]]`.
    Offsets(&'a [i64]),
}

/// How many keys to select.
#[derive(Clone, Debug, PartialEq)]
pub enum KSpec {
    /// The same k for every segment.
    Uniform(usize),
    /// One k per segment.
    PerSegment(Vec<i64>),
}

/// A top-k request: which end, how many per segment, the order and tie-break of the output.
///
/// ```
/// use sparrow::{Segments, TieBreak, TopK};
/// use sparrow::Device;
///
/// // Two segments of four keys; the two largest of each, sorted.
/// let keys = [0.5f32, 3.0, -1.0, 2.0, 7.0, 7.0, 1.0, f32::NAN];
/// let segs = Segments::Fixed { count: 2, len: 4 };
/// let req = TopK::largest(2).sorted(true).tie_break(TieBreak::SmallerIndex);
/// let (out, _plan) = req.run_keys(&Device::Cpu, &keys, segs)?;
/// assert_eq!(out.keys[..2], [3.0, 2.0]);
/// assert!(out.keys[2].is_nan() && out.keys[3] == 7.0); // NaN ranks above +inf
/// assert_eq!((out.indices.get(0), out.indices.get(3)), (1, 0)); // ties: the smaller index
/// # Ok::<(), sparrow::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct TopK {
    k: KSpec,
    largest: bool,
    sorted: bool,
    tie: TieBreak,
    index: IndexType,
    path: Option<GpuPath>,
    staging: bool,
}

/// Output positions, in the requested integer type.
#[derive(Clone, Debug, PartialEq)]
pub enum Indices {
    /// 32-bit positions.
    I32(Vec<i32>),
    /// 64-bit positions.
    I64(Vec<i64>),
}

impl Indices {
    /// 64-bit positions in the requested type.
    pub(crate) fn from_i64(ty: IndexType, v: Vec<i64>) -> Self {
        match ty {
            IndexType::I64 => Indices::I64(v),
            IndexType::I32 => Indices::I32(v.into_iter().map(|x| x as i32).collect()),
        }
    }
    /// Position `i` as i64.
    pub fn get(&self, i: usize) -> i64 {
        match self {
            Indices::I32(v) => v[i] as i64,
            Indices::I64(v) => v[i],
        }
    }
    /// Number of entries.
    pub fn len(&self) -> usize {
        match self {
            Indices::I32(v) => v.len(),
            Indices::I64(v) => v.len(),
        }
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The result of a top-k.
#[derive(Clone, Debug, PartialEq)]
pub struct TopKOutput<K, V> {
    /// Entries per row.
    pub width: usize,
    /// Selected keys, `num_segments x width`.
    pub keys: Vec<K>,
    /// Their positions within the segment, -1 for padding.
    pub indices: Indices,
    /// Their values, when values were given.
    pub values: Option<Vec<V>>,
    /// Real entries per row: min(k, segment length).
    pub counts: Vec<i64>,
}

/// The validated shape of a request: where each segment starts, its length and its k.
#[derive(Clone, Debug)]
pub struct Layout {
    /// First key of each segment.
    pub starts: Vec<i64>,
    /// Length of each segment.
    pub lens: Vec<i64>,
    /// min(k, length) of each segment.
    pub kk: Vec<i64>,
    /// Entries per output row.
    pub width: usize,
}

impl Layout {
    /// Number of segments.
    pub fn count(&self) -> usize {
        self.lens.len()
    }
}

impl TopK {
    /// The `k` largest keys of every segment.
    pub fn largest(k: usize) -> Self {
        Self::new(KSpec::Uniform(k), true)
    }
    /// The `k` smallest keys of every segment.
    pub fn smallest(k: usize) -> Self {
        Self::new(KSpec::Uniform(k), false)
    }
    /// A k per segment.
    pub fn per_segment(ks: Vec<i64>, largest: bool) -> Self {
        Self::new(KSpec::PerSegment(ks), largest)
    }
    fn new(k: KSpec, largest: bool) -> Self {
        TopK {
            k,
            largest,
            sorted: false,
            tie: TieBreak::Fast,
            index: IndexType::I64,
            path: None,
            staging: true,
        }
    }
    /// Sort each row by key (ties by position).
    pub fn sorted(mut self, sorted: bool) -> Self {
        self.sorted = sorted;
        self
    }
    /// How ties at the boundary are broken.
    pub fn tie_break(mut self, tie: TieBreak) -> Self {
        self.tie = tie;
        self
    }
    /// The integer type of the output positions.
    pub fn index_type(mut self, index: IndexType) -> Self {
        self.index = index;
        self
    }
    testing_hook! {
        /// Forces a GPU path where the plan would pick another (`None`: the plan picks), so tests
        /// reach every path on every shape. Forcing the on-chip path on segments too long for it
        /// is an error when the request runs.
        fn force_path(mut self, path: Option<GpuPath>) -> Self {
            self.path = path;
            self
        }
    }
    testing_hook! {
        /// Whether the filter path may stage the keys into shared memory by bulk copies where the
        /// GPU has them (sm_90; the default). Off, it runs the register filter every architecture
        /// has, so tests reach both on one GPU.
        fn staging(mut self, on: bool) -> Self {
            self.staging = on;
            self
        }
    }
    /// Whether the filter path may stage its keys (`TopK::staging`).
    pub fn allows_staging(&self) -> bool {
        self.staging
    }
    /// The forced GPU path, if any.
    pub fn forced_path(&self) -> Option<GpuPath> {
        self.path
    }
    /// True for largest-k.
    pub fn is_largest(&self) -> bool {
        self.largest
    }
    /// True when rows are sorted.
    pub fn is_sorted(&self) -> bool {
        self.sorted
    }
    /// The tie-break.
    pub fn tie(&self) -> TieBreak {
        self.tie
    }
    /// The index type.
    pub fn index(&self) -> IndexType {
        self.index
    }

    /// Validates everything and computes the layout, before any work.
    pub fn layout(&self, nkeys: usize, segs: Segments, nvalues: Option<usize>) -> Result<Layout> {
        let (starts, lens): (Vec<i64>, Vec<i64>) = match segs {
            Segments::Fixed { count, len } => {
                if count.checked_mul(len) != Some(nkeys) {
                    return Err(Error::invalid(
                        "keys",
                        format!("{nkeys} keys do not make {count} segments of {len}"),
                    ));
                }
                (
                    (0..count).map(|s| (s * len) as i64).collect(),
                    vec![len as i64; count],
                )
            }
            Segments::Offsets(o) => {
                if o.is_empty() {
                    return Err(Error::invalid(
                        "offsets",
                        "is empty; n segments need n + 1 offsets",
                    ));
                }
                for (i, w) in o.windows(2).enumerate() {
                    if w[1] < w[0] {
                        return Err(Error::invalid(
                            "offsets",
                            format!("offsets[{}] = {} is below offsets[{i}] = {}; offsets must not decrease", i + 1, w[1], w[0]),
                        ));
                    }
                }
                if o[0] < 0 {
                    return Err(Error::invalid(
                        "offsets",
                        format!("offsets[0] = {} is negative", o[0]),
                    ));
                }
                let last = *o.last().unwrap();
                if last > nkeys as i64 {
                    return Err(Error::invalid(
                        "offsets",
                        format!(
                            "offsets[{}] = {last} is past the end of the {nkeys} keys",
                            o.len() - 1
                        ),
                    ));
                }
                (
                    o[..o.len() - 1].to_vec(),
                    o.windows(2).map(|w| w[1] - w[0]).collect(),
                )
            }
        };
        if let Some(nv) = nvalues {
            if nv != nkeys {
                return Err(Error::invalid(
                    "values",
                    format!("has {nv} entries but there are {nkeys} keys"),
                ));
            }
        }
        let (kk, width) = match &self.k {
            KSpec::Uniform(k) => (
                lens.iter().map(|&l| l.min(*k as i64)).collect::<Vec<_>>(),
                *k,
            ),
            KSpec::PerSegment(ks) => {
                if ks.len() != lens.len() {
                    return Err(Error::invalid(
                        "k",
                        format!(
                            "the per-segment k array has {} entries but there are {} segments",
                            ks.len(),
                            lens.len()
                        ),
                    ));
                }
                if let Some(i) = ks.iter().position(|&k| k < 0) {
                    return Err(Error::invalid(
                        "k",
                        format!("k[{i}] = {} is negative", ks[i]),
                    ));
                }
                (
                    ks.iter().zip(&lens).map(|(&k, &l)| k.min(l)).collect(),
                    ks.iter().copied().max().unwrap_or(0) as usize,
                )
            }
        };
        if self.index == IndexType::I32 {
            if let Some(i) = lens.iter().position(|&l| l > i32::MAX as i64) {
                return Err(Error::invalid(
                    "index type",
                    format!(
                        "segment {i} has {} keys; positions past 2^31 need 64-bit indices",
                        lens[i]
                    ),
                ));
            }
        }
        // A row never holds more than its segment's keys, so the width stops at the longest
        // segment: a k of 10^12 over short segments costs nothing, rather than rows of padding.
        let width = width.min(lens.iter().copied().max().unwrap_or(0).max(0) as usize);
        // Keys, positions and values of every output slot, at their widest (8 bytes each).
        crate::memory::ensure_elems("the top-k output", &[lens.len(), width], 24)?;
        Ok(Layout {
            starts,
            lens,
            kk,
            width,
        })
    }

    /// Which backend and kernels would run.
    pub fn plan<K: Key>(&self, device: &Device, layout: &Layout) -> Result<Plan> {
        plan::plan::<K>(self, device, layout)
    }

    /// Selects keys only.
    pub fn run_keys<K: Key>(
        &self,
        device: &Device,
        keys: &[K],
        segs: Segments,
    ) -> Result<(TopKOutput<K, K>, Plan)> {
        self.run::<K, K>(device, keys, segs, None)
    }

    /// Selects keys and carries `values` along.
    pub fn run<K: Key, V: Key>(
        &self,
        device: &Device,
        keys: &[K],
        segs: Segments,
        values: Option<&[V]>,
    ) -> Result<(TopKOutput<K, V>, Plan)> {
        let layout = self.layout(keys.len(), segs, values.map(|v| v.len()))?;
        let plan = self.plan::<K>(device, &layout)?;
        let out = match device {
            Device::Cpu => cpu::topk(self, keys, &layout, values),
            Device::Cuda(gpu) => cuda::topk(gpu, self, keys, &layout, values)?,
        };
        Ok((out, plan))
    }
}

/// The padding key of rows shorter than their k, shared by the backends and the oracle so
/// padding is written one way.
pub(crate) fn padding<K: Key>(largest: bool) -> K {
    if largest {
        K::lowest()
    } else {
        K::highest()
    }
}
