//! Host side of the GPU top-k: tiles, per-segment state, the pass loop and the downloads.
//! With the GPU's sentinels on (`Gpu::set_sentinels`), outputs are filled with the byte 0xA5
//! before the kernels run, so an element no kernel wrote cannot pass for a result.

use cudarc::driver::CudaSlice;

use super::key::directed;
use super::plan::{
    cand_kernel, cluster_launch, filter_blocks, filter_staging, gpu_path, needs_padding,
    radix_bytes, rblock_items, split_stages, thresh_kernel, tile, tiles, FilterShape, GpuPath,
    FT_THREADS, SORT_MAX,
};
use super::{padding, IndexType, Indices, Key, Layout, TieBreak, TopK, TopKOutput};
use crate::device::{Args, Gpu, LaunchShape};
use crate::kernels::{topk_module, topk_name, KernelModule};
use crate::{Error, Result};
pub(crate) use arena::Arena;
use arena::Mem;
use shapes::{
    as_bytes, flags, from_bytes, grid, ordered, per_segment, per_segment_of, tiles_shape,
};

mod arena;
mod passes;
mod shapes;

struct Run<'a> {
    gpu: &'a Gpu,
    module: KernelModule,
    ty: &'static str,
}

impl Run<'_> {
    fn launch(&self, kernel: &str, shape: LaunchShape, args: &mut Args) -> Result<()> {
        let k = self.gpu.kernel(&self.module, &topk_name(kernel, self.ty))?;
        // SAFETY: the callers in this module pass each kernel's arguments over the buffers this
        // top-k allocated for the run's layout.
        unsafe { self.gpu.launch(&k, shape, args) }
    }
}

/// A top-k prepared on the GPU: inputs uploaded, state and outputs allocated, ready to be
/// enqueued (repeatedly, for benchmarks) and downloaded.
pub struct GpuTopK<'a, K, V> {
    gpu: &'a Gpu,
    req: TopK,
    layout: Layout,
    has_values: bool,
    /// Whether the padding kernel runs ([`needs_padding`], decided once).
    pads: bool,
    bufs: Option<Buffers>,
    split: Option<Box<Split<'a, K>>>,
    /// Where the keys are when the caller owns them ([`Source::External`]): set by
    /// [`GpuTopK::enqueue_at`] before each run.
    keys_at: std::cell::Cell<Option<u64>>,
    _types: std::marker::PhantomData<(K, V)>,
}

/// Where the keys come from: the host, or a device buffer of that many keys that the caller
/// fills before each enqueue (the split path's second stage).
enum Source<'k, K> {
    Host(&'k [K]),
    Device(usize),
    /// Keys in the caller's device memory, given at each enqueue ([`GpuTopK::enqueue_at`]):
    /// no buffer of their own.
    External(usize),
}

/// The split path: the first stage's winners of every chunk are copied into the second
/// stage's input, whose winners are mapped back to positions in the segments.
struct Split<'a, K> {
    first: GpuTopK<'a, K, K>,
    second: GpuTopK<'a, K, K>,
    cand_start: Mem<i64>,
    chunk_rel: Mem<i64>,
    start: Mem<i64>,
    kk: Mem<i64>,
    vals: Mem<u8>,
    out_keys: Mem<u8>,
    out_idx: Mem<u8>,
    out_vals: Mem<u8>,
}

struct Buffers {
    nt: usize,
    sorted_here: bool,
    path: GpuPath,
    filter: FilterShape,
    /// Longest segment (the on-chip path's shared memory).
    max_len: usize,
    keys: Mem<u8>,
    vals: Mem<u8>,
    lens: Mem<i64>,
    kk: Mem<i64>,
    start: Mem<i64>,
    tseg: Mem<i32>,
    tst: Mem<i64>,
    ten: Mem<i64>,
    tptr: Mem<i64>,
    prefix: Mem<u64>,
    remaining: Mem<u64>,
    ties: Mem<u64>,
    lo: Mem<u64>,
    shift: Mem<i32>,
    done: Mem<i32>,
    ghist: Mem<u64>,
    tile_gt: Mem<u64>,
    tile_tie: Mem<u64>,
    tile_out: Mem<u64>,
    tile_rank: Mem<u64>,
    out_keys: Mem<u8>,
    out_idx: Mem<u8>,
    out_vals: Mem<u8>,
    w_keys: Mem<u8>,
    w_idx: Mem<u8>,
    w_vals: Mem<u8>,
    perm: Mem<i32>,
    thresh: Mem<u64>,
    cand_key: Mem<u8>,
    cand_off: Mem<u16>,
    tile_cnt: Mem<u32>,
    /// Keys equal to the threshold, per tile (filter path).
    tile_eq: Mem<u32>,
    /// Whether the filter counts keys equal to the threshold, per segment (filter path).
    count_eq: Mem<u32>,
}

impl<'a, K: Key, V: Key> GpuTopK<'a, K, V> {
    /// Uploads the keys (and values) and allocates everything the kernels use; the layout must
    /// come from `req.layout` for these keys.
    pub fn new(
        gpu: &'a Gpu,
        req: &TopK,
        keys: &[K],
        layout: &Layout,
        values: Option<&[V]>,
    ) -> Result<Self> {
        Self::build(
            gpu,
            req,
            Source::Host(keys),
            layout,
            values,
            &mut Arena::Own,
        )
    }

    /// A top-k of keys that live on the device: the caller writes `nkeys` keys into
    /// [`GpuTopK::input`] before each enqueue.
    pub(crate) fn on_device(
        gpu: &'a Gpu,
        req: &TopK,
        nkeys: usize,
        layout: &Layout,
    ) -> Result<Self> {
        Self::build(
            gpu,
            req,
            Source::Device(nkeys),
            layout,
            None,
            &mut Arena::Own,
        )
    }

    fn build(
        gpu: &'a Gpu,
        req: &TopK,
        keys: Source<'_, K>,
        layout: &Layout,
        values: Option<&[V]>,
        arena: &mut Arena,
    ) -> Result<Self> {
        topk_module(K::NAME)
            .ok_or_else(|| Error::unsupported(format!("no GPU top-k for key type {}", K::NAME)))?;
        let (n, w) = (layout.count(), layout.width);
        let mut me = GpuTopK {
            gpu,
            req: req.clone(),
            layout: layout.clone(),
            has_values: values.is_some(),
            pads: needs_padding(layout),
            bufs: None,
            split: None,
            keys_at: std::cell::Cell::new(None),
            _types: std::marker::PhantomData,
        };
        if n == 0 || w == 0 {
            return Ok(me);
        }
        let (path, filter) = gpu_path(req, layout, gpu.limits(), std::mem::size_of::<K>())?;
        if let GpuPath::Split { chunk } = path {
            me.split = Some(Box::new(me.split_stages(keys, values, chunk, arena)?));
            return Ok(me);
        }
        let nkeys = match keys {
            Source::Host(k) => k.len(),
            Source::Device(n) | Source::External(n) => n,
        };
        // The caller's keys take no memory of this top-k's.
        let own_keys = if matches!(keys, Source::External(_)) {
            0
        } else {
            nkeys
        };
        let ks = std::mem::size_of::<K>();
        let vs = me.vs();
        let is = me.is();
        let (tseg, tst, ten, tptr) = tiles(layout, tile(ks));
        let nt = tseg.len();
        let out_elems = n * w;
        let sorted_here = req.is_sorted() && w <= SORT_MAX;
        let max_len = layout.lens.iter().copied().max().unwrap_or(0) as usize;
        let slots = if path == GpuPath::Filter {
            nt * filter.ct
        } else {
            0
        };
        let need = (own_keys * ks + nkeys * vs) as u64
            + (slots * (ks + 2)) as u64
            + (out_elems * (ks + is + vs)) as u64 * if sorted_here { 2 } else { 1 }
            + if sorted_here { out_elems as u64 * 4 } else { 0 }
            + (nt * (4 + 8 * 6)) as u64
            + (n * (256 * 8 + 8 * 8)) as u64;
        if !arena.is_workspace() {
            gpu.ensure_fits(need, "this top-k")?;
        }
        let scratch = |len: usize| if sorted_here { len } else { 0 };
        me.bufs = Some(Buffers {
            nt,
            sorted_here,
            path,
            filter,
            max_len,
            keys: match keys {
                Source::Host(k) => arena.upload(gpu, as_bytes(k))?,
                Source::Device(n) => arena.zeroed(gpu, n * ks)?,
                Source::External(_) => arena.zeroed(gpu, 0)?,
            },
            vals: arena.upload(gpu, values.map_or(&[][..], as_bytes))?,
            lens: arena.upload(gpu, &layout.lens)?,
            kk: arena.upload(gpu, &layout.kk)?,
            start: arena.upload(gpu, &layout.starts)?,
            tseg: arena.upload(gpu, &tseg)?,
            tst: arena.upload(gpu, &tst)?,
            ten: arena.upload(gpu, &ten)?,
            tptr: arena.upload(gpu, &tptr)?,
            prefix: arena.zeroed(gpu, n)?,
            remaining: arena.zeroed(gpu, n)?,
            ties: arena.zeroed(gpu, n)?,
            lo: arena.zeroed(gpu, n)?,
            shift: arena.zeroed(gpu, n)?,
            done: arena.zeroed(gpu, n)?,
            ghist: arena.zeroed(gpu, n * 256)?,
            tile_gt: arena.zeroed(gpu, nt)?,
            tile_tie: arena.zeroed(gpu, nt)?,
            tile_out: arena.zeroed(gpu, nt)?,
            tile_rank: arena.zeroed(gpu, nt)?,
            out_keys: arena.zeroed(gpu, out_elems * ks)?,
            out_idx: arena.zeroed(gpu, out_elems * is)?,
            out_vals: arena.zeroed(gpu, out_elems * vs)?,
            w_keys: arena.zeroed(gpu, scratch(out_elems * ks))?,
            w_idx: arena.zeroed(gpu, scratch(out_elems * is))?,
            w_vals: arena.zeroed(gpu, scratch(out_elems * vs))?,
            perm: arena.zeroed(gpu, if sorted_here { out_elems } else { 0 })?,
            thresh: arena.zeroed(gpu, n)?,
            cand_key: arena.zeroed(gpu, slots * ks)?,
            cand_off: arena.zeroed(gpu, slots)?,
            tile_cnt: arena.zeroed(gpu, if path == GpuPath::Filter { nt } else { 0 })?,
            tile_eq: arena.zeroed(gpu, if path == GpuPath::Filter { nt } else { 0 })?,
            count_eq: arena.zeroed(gpu, if path == GpuPath::Filter { n } else { 0 })?,
        });
        Ok(me)
    }

    /// Both stages of the split path, and the outputs they map into.
    fn split_stages(
        &self,
        keys: Source<'_, K>,
        values: Option<&[V]>,
        chunk: usize,
        arena: &mut Arena,
    ) -> Result<Split<'a, K>> {
        let gpu = self.gpu;
        let (req, layout) = (&self.req, &self.layout);
        let st = split_stages(layout, chunk);
        let w = layout.width;
        let base = if req.is_largest() {
            TopK::largest(w)
        } else {
            TopK::smallest(w)
        }
        .tie_break(req.tie())
        .staging(req.allows_staging());
        // Sorted rows order equal keys by their slot among the chunks' winners, which is
        // position order only when the chunks keep it: fast ties take the smaller index there.
        let first_tie = if req.tie() == TieBreak::Fast && req.is_sorted() {
            TieBreak::SmallerIndex
        } else {
            req.tie()
        };
        let first = GpuTopK::build(
            gpu,
            &base.clone().tie_break(first_tie).index_type(IndexType::I32),
            keys,
            &st.first,
            None,
            arena,
        )?;
        let second = GpuTopK::build(
            gpu,
            &base.sorted(req.is_sorted()).index_type(IndexType::I64),
            Source::Device(st.first.count() * w),
            &st.second,
            None,
            arena,
        )?;
        let out_elems = layout.count() * w;
        let ks = std::mem::size_of::<K>();
        Ok(Split {
            first,
            second,
            cand_start: arena.upload(gpu, &st.second.starts)?,
            chunk_rel: arena.upload(gpu, &st.chunk_rel)?,
            start: arena.upload(gpu, &layout.starts)?,
            kk: arena.upload(gpu, &layout.kk)?,
            vals: arena.upload(gpu, values.map_or(&[][..], as_bytes))?,
            out_keys: arena.zeroed(gpu, out_elems * ks)?,
            out_idx: arena.zeroed(gpu, out_elems * self.is())?,
            out_vals: arena.zeroed(gpu, out_elems * self.vs())?,
        })
    }

    /// A top-k of keys in the caller's device memory, `nkeys` of them, whose address each
    /// run gives ([`GpuTopK::enqueue_at`]); 64-bit indices.
    pub(crate) fn external(
        gpu: &'a Gpu,
        req: &TopK,
        nkeys: usize,
        layout: &Layout,
        arena: &mut Arena,
    ) -> Result<Self> {
        Self::build(gpu, req, Source::External(nkeys), layout, None, arena)
    }

    /// Where the kernels read the keys: the caller's memory, else this top-k's buffer.
    fn keys_ptr(&self, b: &Buffers) -> u64 {
        self.keys_at.get().unwrap_or_else(|| self.gpu.ptr(&b.keys))
    }

    /// [`GpuTopK::enqueue`] on keys at device address `keys`.
    ///
    /// # Safety
    /// `keys` must hold the layout's keys (of type `K`) in this GPU's context and stay valid
    /// until the enqueued work has run.
    pub(crate) unsafe fn enqueue_at(&self, keys: u64) -> Result<()> {
        match &self.split {
            Some(sp) => sp.first.keys_at.set(Some(keys)),
            None => self.keys_at.set(Some(keys)),
        }
        self.enqueue()
    }

    /// Enqueues copies of the outputs (keys, and 64-bit positions) to device addresses;
    /// refuses sorted rows wider than the GPU sort, which only the host sorts.
    ///
    /// # Safety
    /// `keys` and `idx` must hold count x width keys and i64 in this GPU's context, valid
    /// until the copies have run.
    pub(crate) unsafe fn copy_outputs_to(&self, keys: u64, idx: u64) -> Result<()> {
        let (n, w) = (self.layout.count(), self.layout.width);
        let Some((ok, oi, _, sorted_here)) = self.outputs() else {
            return Ok(());
        };
        if self.req.is_sorted() && !sorted_here {
            return Err(Error::unsupported(format!(
                "sorted rows of {w} > {SORT_MAX} keys in device memory (the host sorts them): ask for unsorted rows"
            )));
        }
        if self.is() != 8 {
            return Err(Error::invalid(
                "index_type",
                "device outputs take 64-bit positions",
            ));
        }
        let gpu = self.gpu;
        gpu.copy_to_raw(ok, keys, n * w * std::mem::size_of::<K>())?;
        gpu.copy_to_raw(oi, idx, n * w * 8)
    }

    /// The key input buffer (the first stage's, for the split path).
    pub(crate) fn input(&self) -> Option<&CudaSlice<u8>> {
        match (&self.bufs, &self.split) {
            (Some(b), _) => Some(&b.keys),
            (_, Some(sp)) => sp.first.input(),
            _ => None,
        }
    }

    /// The output keys, indices and values, and whether the rows leave the GPU sorted.
    #[allow(clippy::type_complexity)]
    pub(crate) fn outputs(&self) -> Option<(&CudaSlice<u8>, &CudaSlice<u8>, &CudaSlice<u8>, bool)> {
        match (&self.bufs, &self.split) {
            (Some(b), _) => Some((&b.out_keys, &b.out_idx, &b.out_vals, b.sorted_here)),
            (_, Some(sp)) => Some((
                &sp.out_keys,
                &sp.out_idx,
                &sp.out_vals,
                sp.second.outputs().is_some_and(|o| o.3),
            )),
            _ => None,
        }
    }

    fn run(&self) -> Run<'a> {
        Run {
            gpu: self.gpu,
            module: topk_module(K::NAME).expect("checked in new"),
            ty: K::NAME,
        }
    }

    /// Gathers the values of the selected keys by their indices.
    fn values(
        &self,
        run: &Run,
        (vals, start, kk): (&CudaSlice<u8>, &CudaSlice<i64>, &CudaSlice<i64>),
        idx: &CudaSlice<u8>,
        out_vals: &CudaSlice<u8>,
    ) -> Result<()> {
        let (n, w) = (self.layout.count(), self.layout.width);
        let gpu = self.gpu;
        run.launch(
            &format!("values_v{}", self.vs()),
            grid(n * w)?,
            Args::new()
                .ptr(gpu.ptr(vals))
                .ptr(gpu.ptr(start))
                .ptr(gpu.ptr(kk))
                .i64(n as i64)
                .i64(w as i64)
                .ptr(gpu.ptr(idx))
                .ptr(gpu.ptr(out_vals))
                .i32(flags(&self.req).1),
        )
    }

    /// Positions kk..width of every row: the padding key, index -1, value 0.
    fn pad(
        &self,
        run: &Run,
        kk: &CudaSlice<i64>,
        (keys, idx, vals): (&CudaSlice<u8>, &CudaSlice<u8>, &CudaSlice<u8>),
    ) -> Result<()> {
        if !self.pads {
            return Ok(());
        }
        let (n, w) = (self.layout.count(), self.layout.width);
        let gpu = self.gpu;
        let pad_bits = padding::<K>(self.req.is_largest()).to_bits();
        run.launch(
            "pad",
            grid(n * w)?,
            Args::new()
                .i64(n as i64)
                .i64(w as i64)
                .ptr(gpu.ptr(kk))
                .i64(pad_bits as i64)
                .ptr(gpu.ptr(keys))
                .ptr(gpu.ptr(idx))
                .ptr(gpu.ptr(vals))
                .i32(self.vs() as i32)
                .i32(flags(&self.req).1),
        )
    }

    /// The split path: the first stage, its winners copied into the second stage's input,
    /// the second stage, its indices mapped back, then values and padding.
    fn enqueue_split(&self, sp: &Split<'a, K>) -> Result<()> {
        let gpu = self.gpu;
        let run = self.run();
        let (n, w) = (self.layout.count(), self.layout.width);
        let (ks, vs, is) = (std::mem::size_of::<K>(), self.vs(), self.is());
        let outs: (&CudaSlice<u8>, &CudaSlice<u8>, &CudaSlice<u8>) =
            (&sp.out_keys, &sp.out_idx, &sp.out_vals);
        for (buf, len) in [(outs.0, ks), (outs.1, is), (outs.2, vs)] {
            gpu.fill_sentinel(buf, 0xA5, n * w * len)?;
        }
        let missing = || Error::unsupported("the split top-k path lost a stage's buffers");
        sp.first.enqueue()?;
        let (k1, i1, _, _) = sp.first.outputs().ok_or_else(missing)?;
        let input = sp.second.input().ok_or_else(missing)?;
        gpu.copy_bytes(k1, input, sp.first.layout.count() * w * ks)?;
        sp.second.enqueue()?;
        let (k2, i2, _, _) = sp.second.outputs().ok_or_else(missing)?;
        run.launch(
            "remap",
            grid(n * w)?,
            Args::new()
                .i64(n as i64)
                .i64(w as i64)
                .ptr(gpu.ptr(&sp.kk))
                .ptr(gpu.ptr(&sp.cand_start))
                .ptr(gpu.ptr(k2))
                .ptr(gpu.ptr(i2))
                .ptr(gpu.ptr(i1))
                .i64(w as i64)
                .ptr(gpu.ptr(&sp.chunk_rel))
                .ptr(gpu.ptr(outs.0))
                .ptr(gpu.ptr(outs.1))
                .i32(flags(&self.req).1),
        )?;
        if vs > 0 {
            self.values(&run, (&sp.vals, &sp.start, &sp.kk), outs.1, outs.2)?;
        }
        self.pad(&run, &sp.kk, outs)
    }

    fn vs(&self) -> usize {
        if self.has_values {
            std::mem::size_of::<V>()
        } else {
            0
        }
    }

    fn is(&self) -> usize {
        if self.req.index() == IndexType::I64 {
            8
        } else {
            4
        }
    }

    /// Enqueues every kernel on the GPU's stream (the outputs first filled with the sentinel
    /// byte 0xA5 when the GPU's sentinels are on). Does not wait.
    pub fn enqueue(&self) -> Result<()> {
        if let Some(sp) = &self.split {
            return self.enqueue_split(sp);
        }
        let Some(b) = &self.bufs else { return Ok(()) };
        let gpu = self.gpu;
        let (req, layout) = (&self.req, &self.layout);
        let run = self.run();
        let (n, w) = (layout.count(), layout.width);
        let (ks, vs, is) = (std::mem::size_of::<K>(), self.vs(), self.is());
        let out_elems = n * w;
        let (largest, idx64, larger) = flags(req);
        for (buf, len) in [(&b.out_keys, ks), (&b.out_idx, is), (&b.out_vals, vs)] {
            gpu.fill_sentinel(buf, 0xA5, out_elems * len)?;
        }
        // Sorted rows that fit are written to scratch, sorted, and gathered into the outputs.
        let (tk, ti, tv) = if b.sorted_here {
            (&b.w_keys, &b.w_idx, &b.w_vals)
        } else {
            (&b.out_keys, &b.out_idx, &b.out_vals)
        };
        match b.path {
            GpuPath::Warp => {
                run.launch(
                    "warp",
                    grid(n * 32)?,
                    Args::new()
                        .ptr(self.keys_ptr(b))
                        .ptr(gpu.ptr(&b.start))
                        .ptr(gpu.ptr(&b.lens))
                        .ptr(gpu.ptr(&b.kk))
                        .i64(n as i64)
                        .ptr(gpu.ptr(tk))
                        .ptr(gpu.ptr(ti))
                        .i64(w as i64)
                        .i32(idx64)
                        .i32(largest)
                        .i32(larger),
                )?;
            }
            GpuPath::OnChip | GpuPath::Cluster => {
                // One kernel, a block (or a cluster of blocks) per segment.
                let (name, shape) = match (b.path, rblock_items(b.max_len)) {
                    (GpuPath::Cluster, _) => {
                        let (shape, items) = cluster_launch(n, b.max_len, gpu.limits())
                            .ok_or_else(|| {
                                Error::unsupported(
                                    "the cluster top-k path does not take this layout here",
                                )
                            })?;
                        (format!("cluster_v{items}"), shape)
                    }
                    (_, Some(items)) => (format!("rblock_v{items}"), per_segment(n, 0)?),
                    (_, None) => (
                        "block".to_string(),
                        per_segment(n, b.max_len.max(1) * radix_bytes::<K>())?,
                    ),
                };
                run.launch(
                    &name,
                    shape,
                    Args::new()
                        .ptr(self.keys_ptr(b))
                        .ptr(gpu.ptr(&b.start))
                        .ptr(gpu.ptr(&b.lens))
                        .ptr(gpu.ptr(&b.kk))
                        .ptr(gpu.ptr(tk))
                        .ptr(gpu.ptr(ti))
                        .i64(w as i64)
                        .i32(idx64)
                        .i32(largest)
                        .i32(larger),
                )?;
            }
            GpuPath::Filter => self.filter(&run, b, tk, ti)?,
            GpuPath::Tiled => self.tiled(&run, b, tk, ti)?,
            GpuPath::Split { .. } => unreachable!("the split path has no buffers of its own"),
        }
        if vs > 0 {
            self.values(&run, (&b.vals, &b.start, &b.kk), ti, tv)?;
        }
        self.finish(&run, b)
    }

    /// The sort and gather of sorted rows, and the padding: common to both paths.
    fn finish(&self, run: &Run, b: &Buffers) -> Result<()> {
        let gpu = self.gpu;
        let (req, layout) = (&self.req, &self.layout);
        let (n, w) = (layout.count(), layout.width);
        let out_elems = n * w;
        let vs = self.vs();
        let (largest, idx64, _) = flags(req);
        if b.sorted_here {
            let pw = w.next_power_of_two();
            run.launch(
                "sort",
                per_segment(n, pw * 12)?,
                Args::new()
                    .ptr(gpu.ptr(&b.w_keys))
                    .ptr(gpu.ptr(&b.kk))
                    .i64(w as i64)
                    .i32(pw as i32)
                    .i32(largest)
                    .ptr(gpu.ptr(&b.perm)),
            )?;
            run.launch(
                &format!("gather_v{vs}"),
                grid(out_elems)?,
                Args::new()
                    .ptr(gpu.ptr(&b.w_keys))
                    .ptr(gpu.ptr(&b.w_idx))
                    .ptr(gpu.ptr(&b.w_vals))
                    .ptr(gpu.ptr(&b.perm))
                    .ptr(gpu.ptr(&b.kk))
                    .i64(n as i64)
                    .i64(w as i64)
                    .ptr(gpu.ptr(&b.out_keys))
                    .ptr(gpu.ptr(&b.out_idx))
                    .ptr(gpu.ptr(&b.out_vals))
                    .i32(idx64),
            )?;
        }
        self.pad(run, &b.kk, (&b.out_keys, &b.out_idx, &b.out_vals))
    }

    /// Copies the outputs back (waits for the stream); rows too wide for the GPU sort are
    /// sorted here.
    pub fn download(&self) -> Result<TopKOutput<K, V>> {
        let (n, w) = (self.layout.count(), self.layout.width);
        let Some((ok, oi, ov, sorted_here)) = self.outputs() else {
            let empty: Option<&[V]> = if self.has_values { Some(&[]) } else { None };
            return Ok(super::cpu::topk(&self.req, &[], &self.layout, empty));
        };
        let out_elems = n * w;
        let (ks, vs, is) = (std::mem::size_of::<K>(), self.vs(), self.is());
        let gpu = self.gpu;
        let keys_out: Vec<K> = from_bytes(&gpu.download(ok, out_elems * ks)?);
        let idx_bytes = gpu.download(oi, out_elems * is)?;
        let mut indices = if is == 8 {
            Indices::I64(from_bytes(&idx_bytes))
        } else {
            Indices::I32(from_bytes(&idx_bytes))
        };
        let values = if self.has_values {
            Some(from_bytes(&gpu.download(ov, out_elems * vs)?))
        } else {
            None
        };
        let mut out = TopKOutput {
            width: w,
            keys: keys_out,
            indices: Indices::I64(Vec::new()),
            values,
            counts: self.layout.kk.clone(),
        };
        if self.req.is_sorted() && !sorted_here {
            sort_rows_on_host(&self.req, &mut out, &mut indices, &self.layout);
        }
        out.indices = indices;
        Ok(out)
    }
}

/// Top-k of every segment on the GPU; the layout is validated by the caller.
pub(crate) fn topk<K: Key, V: Key>(
    gpu: &Gpu,
    req: &TopK,
    keys: &[K],
    layout: &Layout,
    values: Option<&[V]>,
) -> Result<TopKOutput<K, V>> {
    let t = GpuTopK::new(gpu, req, keys, layout, values)?;
    t.enqueue()?;
    t.download()
}

/// Sorts each row's first kk entries by (key order, position), for rows too wide for the GPU
/// sort.
fn sort_rows_on_host<K: Key, V: Key>(
    req: &TopK,
    out: &mut TopKOutput<K, V>,
    idx: &mut Indices,
    layout: &Layout,
) {
    let w = out.width;
    for s in 0..layout.count() {
        let n = layout.kk[s] as usize;
        let base = s * w;
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_unstable_by_key(|&j| {
            (
                std::cmp::Reverse(directed(out.keys[base + j], req.is_largest())),
                idx.get(base + j),
            )
        });
        let k: Vec<K> = order.iter().map(|&j| out.keys[base + j]).collect();
        out.keys[base..base + n].copy_from_slice(&k);
        match idx {
            Indices::I32(v) => {
                let x: Vec<i32> = order.iter().map(|&j| v[base + j]).collect();
                v[base..base + n].copy_from_slice(&x);
            }
            Indices::I64(v) => {
                let x: Vec<i64> = order.iter().map(|&j| v[base + j]).collect();
                v[base..base + n].copy_from_slice(&x);
            }
        }
        if let Some(vals) = out.values.as_mut() {
            let x: Vec<V> = order.iter().map(|&j| vals[base + j]).collect();
            vals[base..base + n].copy_from_slice(&x);
        }
    }
}
