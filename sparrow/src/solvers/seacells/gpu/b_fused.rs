//! The B update's gradient read on the GPU by cells: one fused kernel sums each cell's row of
//! G = K B (A A^T) - K A^T in registers and reduces it to every archetype's argmin cell and
//! duality-gap terms, so no n x N gradient is ever stored or re-read.
//!
//! A step is first read by the lower bound G >= -K A^T (see [`super::super::bounds`]): each column
//! is evaluated at B's cells and the last pick, then only at the cells whose K A^T entry can
//! beat that, with the fused kernel's sums, so the picks are the same. A column whose bound is
//! not negative is read at every cell by a block of its own; a step where more than one column
//! in eight is so (or where A A^T has a negative entry) goes to the fused kernel.
//!
//! K B and -K A^T are built on the device once per update, as M (M X) by rows (see
//! [`super::rowprod`]), K B in the layout's row order; K B is blended on the device at every
//! step (the picked cells' K columns expanded there) and comes back after the last step. A A^T
//! goes up once per update as sparse rows with a segment table per thread. The device's
//! products sum in the CPU's order, so every pick is the CPU's bit for bit;
//! [`KatSource::Host`] uploads the CPU's own products instead, the reference the GPU tests
//! hold the device's to.

use std::time::Instant;

use cudarc::driver::CudaSlice;
use rayon::prelude::*;

use super::super::bounds::TCols;
use super::super::fw::BSteps;
use super::super::rows::{blocks_of, cols_from_rows, kat_blocks, Aat, Layout};
use super::super::sparse::kb_cols;
use super::super::sparse::SpVec;
use super::b_layout::{
    expansion_fits, flatten, hash_slots, max_metacells, tier, BRows, KatSource, NegKat, SegRows,
    MAX_HASH, MIN_SPAN, OPEN_SHARE,
};
use super::scan_counts;
use super::solver::{Cols, Solver};
use crate::device::{Args, Gpu, LaunchShape};
use crate::kernels::SEACELLS;
use crate::matrix::Csr;
use crate::{Error, Result};

/// The B update's steps on the GPU: the fused gradient kernel, and K B kept and blended on
/// the device (see seacells.cu).
pub struct GpuSteps<'s, 'a> {
    sv: &'s Solver<'a>,
    kat_source: KatSource,
    w: usize,
    /// Slots per K column (see [`two_hop_bound`]) and the hash set's size.
    cap: usize,
    hs: usize,
    state: Option<Update>,
    /// Seconds: setup per update (less K A^T), B's upload per step, gradient kernels, K B's
    /// blend, K B's download, K A^T.
    secs: [f64; 6],
    /// Steps read by the bound, and by the fused kernel over every cell.
    steps_by: [usize; 2],
    /// The last step's picks (-1 before the first), the bound's seeds.
    last: Vec<i32>,
}

/// The bound's device state (see `seacells_bb_*`): t1 by columns, dense, and per column its
/// bound, gap dot, smallest key, lowest cell and whether it stayed open.
struct Bound {
    tt: CudaSlice<f64>,
    bound: CudaSlice<f64>,
    dot: CudaSlice<f64>,
    key: CudaSlice<u64>,
    best: CudaSlice<i32>,
    open: CudaSlice<i32>,
}

/// K B on the device, CSR in the layout's row order.
struct DevKb {
    ptr: CudaSlice<i64>,
    col: CudaSlice<i32>,
    val: CudaSlice<f64>,
    /// Entries the arrays hold room for.
    room: usize,
}

/// What one B update keeps on the device.
struct Update {
    /// The bound's state, where t1 is non-negative (the bound needs it).
    bound: Option<Bound>,
    seg: CudaSlice<i32>,
    t_col: CudaSlice<i32>,
    t_val: CudaSlice<f64>,
    kat: NegKat,
    cells: CudaSlice<u32>,
    pos: CudaSlice<u32>,
    kb: DevKb,
    spare: Option<DevKb>,
    pick: CudaSlice<i32>,
    share: CudaSlice<f64>,
    // The blend's scratch.
    row_cnt: CudaSlice<i32>,
    row_fill: CudaSlice<i32>,
    row_off: CudaSlice<i64>,
    new_cnt: CudaSlice<i32>,
    total: CudaSlice<i64>,
    seg_row: CudaSlice<i32>,
    seg_val: CudaSlice<f64>,
    add_n: CudaSlice<i32>,
    add_col: CudaSlice<i32>,
    add_val: CudaSlice<f64>,
}

impl<'s, 'a> GpuSteps<'s, 'a> {
    /// The GPU steps for `nm` archetypes; an `Unsupported` error beyond [`max_metacells`] or
    /// where M's two-hop neighbourhoods outgrow the expansion's hash set.
    pub fn new(sv: &'s Solver<'a>, nm: usize, kat_source: KatSource) -> Result<Self> {
        let w = tier(nm).ok_or_else(|| {
            Error::unsupported(format!(
                "{nm} metacells exceed the fused B kernel's {}",
                max_metacells()
            ))
        })?;
        if i32::try_from(sv.n).is_err() {
            return Err(Error::unsupported(format!(
                "{} cells exceed the fused B kernel's 2^31",
                sv.n
            )));
        }
        let cap = sv.two_hop;
        if !expansion_fits(cap) {
            return Err(Error::unsupported(format!(
                "two-hop neighbourhoods of up to {cap} cells exceed the K-column expansion's {}",
                3 * MAX_HASH / 4
            )));
        }
        let hs = hash_slots(cap);
        Ok(GpuSteps {
            sv,
            kat_source,
            w,
            cap,
            hs,
            state: None,
            secs: [0.0; 6],
            steps_by: [0; 2],
            last: Vec::new(),
        })
    }

    /// Steps read by the bound and steps read by the fused kernel over every cell, since this
    /// was made.
    pub fn steps_by(&self) -> (usize, usize) {
        (self.steps_by[0], self.steps_by[1])
    }

    /// The bound's reading of one step (see `seacells_bb_*` in the kernels): the picks and
    /// gap shares, or `None` when some column's bound was not negative.
    fn pick_bounded(
        &self,
        st: &Update,
        bd: &Bound,
        b: &[SpVec],
    ) -> Result<Option<Vec<(u32, f64)>>> {
        let (gpu, n, nm) = (self.sv.gpu, self.sv.n, b.len());
        let bc = Cols::upload(gpu, b)?;
        let seed = if self.last.len() == nm {
            gpu.upload(&self.last)?
        } else {
            gpu.upload(&vec![-1i32; nm])?
        };
        let per_col = LaunchShape::linear(nm.div_ceil(256).clamp(1, 132 * 16) as u32, 256);
        let gq = gpu.alloc_zeroed::<f64>(bc.w.len())?;
        unsafe {
            gpu.launch(
                &gpu.kernel(&SEACELLS, "seacells_bb_seed")?,
                LaunchShape::linear(nm.div_ceil(8).clamp(1, 132 * 16) as u32, 256),
                g_args(gpu, st, bd, nm, &mut Args::new())
                    .ptr(gpu.ptr(&bc.ptr))
                    .ptr(gpu.ptr(&bc.cell))
                    .ptr(gpu.ptr(&bc.w))
                    .ptr(gpu.ptr(&seed))
                    .ptr(gpu.ptr(&gq))
                    .ptr(gpu.ptr(&bd.bound))
                    .ptr(gpu.ptr(&bd.dot))
                    .ptr(gpu.ptr(&bd.key))
                    .ptr(gpu.ptr(&bd.best)),
            )
        }?;
        let scan = gpu.kernel(&SEACELLS, "seacells_bb_scan")?;
        for pass in 0..2 {
            unsafe {
                gpu.launch(
                    &scan,
                    LaunchShape::linear((n.div_ceil(8)).clamp(1, 132 * 16) as u32, 256),
                    g_args(gpu, st, bd, nm, Args::new().i32(pass).i64(n as i64))
                        .ptr(gpu.ptr(&bd.bound))
                        .ptr(gpu.ptr(&bd.key))
                        .ptr(gpu.ptr(&bd.best)),
                )
            }?;
        }
        gpu.fill_bytes(&st.pick, 0xff, nm * 4)?;
        unsafe {
            gpu.launch(
                &gpu.kernel(&SEACELLS, "seacells_bb_final")?,
                per_col,
                Args::new()
                    .i64(nm as i64)
                    .ptr(gpu.ptr(&bd.bound))
                    .ptr(gpu.ptr(&bd.dot))
                    .ptr(gpu.ptr(&bd.key))
                    .ptr(gpu.ptr(&bd.best))
                    .ptr(gpu.ptr(&st.pick))
                    .ptr(gpu.ptr(&st.share))
                    .ptr(gpu.ptr(&bd.open)),
            )
        }?;
        let open: Vec<i32> = gpu.download(&bd.open, nm)?;
        let open: Vec<i32> = (0..nm as i32).filter(|&c| open[c as usize] != 0).collect();
        if open.len() > nm.div_ceil(OPEN_SHARE) {
            return Ok(None);
        }
        if !open.is_empty() {
            // The few open columns at every cell, each split over enough blocks to fill the GPU.
            let split = (gpu.limits().sms as usize * 8)
                .div_ceil(open.len())
                .clamp(1, 64)
                .min(n.max(1));
            let cols = gpu.upload(&open)?;
            let part_v = gpu.alloc_zeroed::<f64>(open.len() * split)?;
            let part_i = gpu.alloc_zeroed::<i32>(open.len() * split)?;
            unsafe {
                gpu.launch(
                    &gpu.kernel(&SEACELLS, "seacells_bb_open")?,
                    LaunchShape::linear((open.len() * split) as u32, 256),
                    g_args(
                        gpu,
                        st,
                        bd,
                        nm,
                        Args::new()
                            .ptr(gpu.ptr(&cols))
                            .i64(split as i64)
                            .i64(n as i64),
                    )
                    .ptr(gpu.ptr(&part_v))
                    .ptr(gpu.ptr(&part_i)),
                )
            }?;
            unsafe {
                gpu.launch(
                    &gpu.kernel(&SEACELLS, "seacells_bb_open_final")?,
                    LaunchShape::linear(open.len().div_ceil(256) as u32, 256),
                    Args::new()
                        .ptr(gpu.ptr(&cols))
                        .i64(open.len() as i64)
                        .i64(split as i64)
                        .ptr(gpu.ptr(&part_v))
                        .ptr(gpu.ptr(&part_i))
                        .ptr(gpu.ptr(&bd.dot))
                        .ptr(gpu.ptr(&st.pick))
                        .ptr(gpu.ptr(&st.share)),
                )
            }?;
        }
        read_picks(gpu, st, n, nm, "the bounded B kernels").map(Some)
    }

    /// -K A^T on the device, by cells: -(M (M A^T)) by rows (see [`super::rowprod`]).
    fn device_kat(&self, a: &[SpVec], nm: usize) -> Result<NegKat> {
        let sv = self.sv;
        let a_d = Cols::upload(sv.gpu, a)?;
        let one = sv.m_times((&a_d.ptr, &a_d.cell, &a_d.w), nm, None, 1.0)?;
        drop(a_d);
        let k = sv.m_times(one.as_ref(), nm, None, -1.0)?;
        Ok(NegKat {
            ptr: k.ptr,
            col: k.col,
            val: k.val,
        })
    }

    /// K B on the device in the layout's row order (`cells`): M (M B) by rows.
    fn device_kb(&self, b: &[SpVec], cells: &CudaSlice<u32>) -> Result<DevKb> {
        let sv = self.sv;
        let bt = Cols::upload_transposed(sv.gpu, b, sv.n)?;
        let one = sv.m_times((&bt.ptr, &bt.cell, &bt.w), b.len(), None, 1.0)?;
        drop(bt);
        let k = sv.m_times(one.as_ref(), b.len(), Some(cells), 1.0)?;
        Ok(DevKb {
            ptr: k.ptr,
            col: k.col,
            val: k.val,
            room: k.nnz,
        })
    }

    /// -K A^T from the CPU's row blocks, by cells.
    fn host_kat(&self, m: &Csr<f64>, a: &[SpVec], nm: usize, lay: &Layout) -> Result<NegKat> {
        let gpu = self.sv.gpu;
        let blocks = kat_blocks(m, a, nm, lay);
        let n = lay.pos.len();
        let mut ptr = vec![0i64; n + 1];
        for (i, &p) in lay.pos.iter().enumerate() {
            let blk = &blocks[p as usize / super::super::rows::BLOCK_ROWS];
            ptr[i + 1] = blk.row(p as usize % super::super::rows::BLOCK_ROWS).0.len() as i64;
        }
        for i in 0..n {
            ptr[i + 1] += ptr[i];
        }
        let (mut col, mut val) = (Vec::with_capacity(ptr[n] as usize + 1), Vec::new());
        for &p in &lay.pos {
            let blk = &blocks[p as usize / super::super::rows::BLOCK_ROWS];
            let (c, v) = blk.row(p as usize % super::super::rows::BLOCK_ROWS);
            col.extend(c.iter().map(|&c| c as i32));
            val.extend(v.iter().map(|&v| -v));
        }
        col.push(0);
        val.push(0.0);
        Ok(NegKat {
            ptr: gpu.upload(&ptr)?,
            col: gpu.upload(&col)?,
            val: gpu.upload(&val)?,
        })
    }
}

impl BSteps for GpuSteps<'_, '_> {
    fn begin(
        &mut self,
        m: &Csr<f64>,
        a: &[SpVec],
        b: &[SpVec],
        aat: &Aat,
        lay: &Layout,
    ) -> Result<()> {
        let clock = Instant::now();
        let (gpu, n) = (self.sv.gpu, self.sv.n);
        let nm = aat.nm();
        if tier(nm) != Some(self.w) {
            return Err(Error::invalid(
                "metacells",
                format!("the GPU B steps were made for another width than {nm} archetypes"),
            ));
        }
        // The old state goes first, so two updates' buffers never coexist.
        self.state = None;
        let t = SegRows::new(aat, self.w);
        let cells = gpu.upload(&lay.order)?;
        // K A^T and the starting K B: on the device, or the CPU's (their arithmetic is the
        // same; the host's are the reference the GPU tests hold the device's to).
        let kat_clock = Instant::now();
        let (kat, kb) = match self.kat_source {
            KatSource::Device => (self.device_kat(a, nm)?, self.device_kb(b, &cells)?),
            KatSource::Host => (self.host_kat(m, a, nm, lay)?, host_kb(gpu, m, b, lay, n)?),
        };
        gpu.synchronize()?;
        let t_kat = kat_clock.elapsed().as_secs_f64();
        self.secs[5] += t_kat;
        let slots = nm * self.cap;
        gpu.ensure_fits(
            (slots * 24 + (kb.room + slots) * 12) as u64,
            "the B update's K B blend",
        )?;
        // t1 by columns for the bound, where every entry is non-negative.
        let tt = TCols::new(aat);
        let bound = if tt.nonneg() {
            gpu.ensure_fits((nm * nm * 8 + nm * 40) as u64, "the B update's bound")?;
            Some(Bound {
                tt: gpu.upload(tt.data())?,
                bound: gpu.alloc_zeroed(nm)?,
                dot: gpu.alloc_zeroed(nm)?,
                key: gpu.alloc_zeroed(nm)?,
                best: gpu.alloc_zeroed(nm)?,
                open: gpu.alloc_zeroed(nm)?,
            })
        } else {
            None
        };
        drop(tt);
        self.last = vec![-1; nm];
        self.state = Some(Update {
            bound,
            seg: gpu.upload(&t.seg)?,
            t_col: gpu.upload(&t.col)?,
            t_val: gpu.upload(&t.val)?,
            kat,
            cells,
            pos: gpu.upload(&lay.pos)?,
            kb,
            spare: None,
            pick: gpu.alloc_zeroed(nm)?,
            share: gpu.alloc_zeroed(nm)?,
            row_cnt: gpu.alloc_zeroed(n)?,
            row_fill: gpu.alloc_zeroed(n)?,
            row_off: gpu.alloc_zeroed(n + 1)?,
            new_cnt: gpu.alloc_zeroed(n)?,
            total: gpu.alloc_zeroed(1)?,
            seg_row: gpu.alloc_zeroed(slots)?,
            seg_val: gpu.alloc_zeroed(slots)?,
            add_n: gpu.alloc_zeroed(nm)?,
            add_col: gpu.alloc_zeroed(slots)?,
            add_val: gpu.alloc_zeroed(slots)?,
        });
        gpu.synchronize()?;
        self.secs[0] += clock.elapsed().as_secs_f64() - t_kat;
        Ok(())
    }

    fn pick(&mut self, b: &[SpVec], aat: &Aat, _lay: &Layout) -> Result<Vec<(u32, f64)>> {
        let st = self
            .state
            .as_ref()
            .ok_or_else(|| Error::invalid("b-update", "a step before the update began"))?;
        let (gpu, n, nm) = (self.sv.gpu, self.sv.n, aat.nm());
        if let Some(bd) = &st.bound {
            let clock = Instant::now();
            let got = self.pick_bounded(st, bd, b)?;
            self.secs[2] += clock.elapsed().as_secs_f64();
            if let Some(picks) = got {
                self.steps_by[0] += 1;
                self.last = picks.iter().map(|p| p.0 as i32).collect();
                return Ok(picks);
            }
        }
        self.steps_by[1] += 1;
        let clock = Instant::now();
        let br = BRows::new(b, n);
        let bnnz = *br.at.last().unwrap() as usize;
        if i32::try_from(bnnz).is_err() {
            return Err(Error::unsupported(format!(
                "{bnnz} entries of B exceed the fused B kernel's 2^31"
            )));
        }
        let (b_ptr, b_col, b_pos, b_w) = (
            gpu.upload(&br.ptr)?,
            gpu.upload(&br.col)?,
            gpu.upload(&br.pos)?,
            gpu.upload(&br.w)?,
        );
        let b_at = gpu.upload(&br.at)?;
        let (parts, span) = split(n, gpu);
        let part_v = gpu.alloc_zeroed::<f64>(parts * nm)?;
        let part_i = gpu.alloc_zeroed::<i32>(parts * nm)?;
        let prod = gpu.alloc_zeroed::<f64>(bnnz)?;
        // Sentinels: a pick the kernels did not write reads as -1.
        gpu.fill_bytes(&st.pick, 0xff, nm * 4)?;
        let grad = gpu.kernel(&SEACELLS, &format!("seacells_b_grad_w{}", self.w))?;
        gpu.synchronize()?;
        self.secs[1] += clock.elapsed().as_secs_f64();
        let clock = Instant::now();
        // Only the threads that own columns run.
        let threads = nm.div_ceil(self.w).div_ceil(32) * 32;
        unsafe {
            gpu.launch(
                &grad,
                LaunchShape::linear(parts as u32, threads as u32),
                Args::new()
                    .ptr(gpu.ptr(&st.kb.ptr))
                    .ptr(gpu.ptr(&st.cells))
                    .ptr(gpu.ptr(&st.kb.col))
                    .ptr(gpu.ptr(&st.kb.val))
                    .i64(n as i64)
                    .i64(span as i64)
                    .ptr(gpu.ptr(&st.kat.ptr))
                    .ptr(gpu.ptr(&st.kat.col))
                    .ptr(gpu.ptr(&st.kat.val))
                    .ptr(gpu.ptr(&st.seg))
                    .ptr(gpu.ptr(&st.t_col))
                    .ptr(gpu.ptr(&st.t_val))
                    .i64(nm as i64)
                    .ptr(gpu.ptr(&b_ptr))
                    .ptr(gpu.ptr(&b_col))
                    .ptr(gpu.ptr(&b_pos))
                    .ptr(gpu.ptr(&b_w))
                    .ptr(gpu.ptr(&part_v))
                    .ptr(gpu.ptr(&part_i))
                    .ptr(gpu.ptr(&prod)),
            )
        }?;
        let fin = gpu.kernel(&SEACELLS, "seacells_b_final")?;
        unsafe {
            gpu.launch(
                &fin,
                LaunchShape::linear(nm.div_ceil(256).clamp(1, 132 * 16) as u32, 256),
                Args::new()
                    .ptr(gpu.ptr(&part_v))
                    .ptr(gpu.ptr(&part_i))
                    .i64(parts as i64)
                    .i64(nm as i64)
                    .ptr(gpu.ptr(&b_at))
                    .ptr(gpu.ptr(&prod))
                    .ptr(gpu.ptr(&st.pick))
                    .ptr(gpu.ptr(&st.share)),
            )
        }?;
        let got = read_picks(gpu, st, n, nm, "the fused B kernel")?;
        self.secs[2] += clock.elapsed().as_secs_f64();
        self.last = got.iter().map(|p| p.0 as i32).collect();
        Ok(got)
    }

    fn advance(
        &mut self,
        _m: &Csr<f64>,
        picks: &[(u32, f64)],
        gamma: f64,
        _lay: &Layout,
    ) -> Result<()> {
        let clock = Instant::now();
        let (gpu, n) = (self.sv.gpu, self.sv.n);
        let (cap, hs) = (self.cap, self.hs);
        let st = self
            .state
            .as_mut()
            .ok_or_else(|| Error::invalid("b-update", "a step before the update began"))?;
        let nm = picks.len();
        let dm = &self.sv.m;
        gpu.fill_bytes(&st.row_cnt, 0, n * 4)?;
        gpu.fill_bytes(&st.row_fill, 0, n * 4)?;
        let k = |name: &str| gpu.kernel(&SEACELLS, name);
        let rows = LaunchShape::linear(n.div_ceil(256).clamp(1, 132 * 16) as u32, 256);
        // The picks the gradient kernels left on the device are these.
        unsafe {
            gpu.launch(
                &k("seacells_kb_expand")?,
                LaunchShape::linear(nm as u32, 256).with_smem((hs * 12) as u32),
                Args::new()
                    .ptr(gpu.ptr(&dm.row_ptr))
                    .ptr(gpu.ptr(&dm.col_idx))
                    .ptr(gpu.ptr(&dm.values))
                    .ptr(gpu.ptr(&st.pick))
                    .ptr(gpu.ptr(&st.pos))
                    .i64(cap as i64)
                    .i32(hs as i32)
                    .ptr(gpu.ptr(&st.seg_row))
                    .ptr(gpu.ptr(&st.seg_val))
                    .ptr(gpu.ptr(&st.add_n))
                    .ptr(gpu.ptr(&st.row_cnt)),
            )
        }?;
        scan_counts(gpu, &st.row_cnt, n, &st.row_off, &st.total)?;
        unsafe {
            gpu.launch(
                &k("seacells_kb_scatter")?,
                LaunchShape::linear(nm as u32, 256),
                Args::new()
                    .ptr(gpu.ptr(&st.seg_row))
                    .ptr(gpu.ptr(&st.seg_val))
                    .ptr(gpu.ptr(&st.add_n))
                    .i64(cap as i64)
                    .ptr(gpu.ptr(&st.row_off))
                    .ptr(gpu.ptr(&st.row_fill))
                    .ptr(gpu.ptr(&st.add_col))
                    .ptr(gpu.ptr(&st.add_val)),
            )
        }?;
        unsafe {
            gpu.launch(
                &k("seacells_kb_count")?,
                rows,
                Args::new()
                    .ptr(gpu.ptr(&st.kb.ptr))
                    .ptr(gpu.ptr(&st.kb.col))
                    .i64(n as i64)
                    .ptr(gpu.ptr(&st.row_off))
                    .ptr(gpu.ptr(&st.add_col))
                    .ptr(gpu.ptr(&st.add_val))
                    .ptr(gpu.ptr(&st.new_cnt)),
            )
        }?;
        // The new rows' offsets go to the spare buffer's pointer array.
        let mut spare = match st.spare.take() {
            Some(s) => s,
            None => DevKb {
                ptr: gpu.alloc_zeroed(n + 1)?,
                col: gpu.alloc_zeroed(st.kb.room)?,
                val: gpu.alloc_zeroed(st.kb.room)?,
                room: st.kb.room,
            },
        };
        scan_counts(gpu, &st.new_cnt, n, &spare.ptr, &st.total)?;
        let total = gpu.download(&st.total, 1)?[0] as usize;
        if total > spare.room {
            let room = total + total / 4;
            gpu.ensure_fits((room * 12) as u64, "K B's growth")?;
            spare.col = gpu.alloc_zeroed(room)?;
            spare.val = gpu.alloc_zeroed(room)?;
            spare.room = room;
        }
        unsafe {
            gpu.launch(
                &k("seacells_kb_merge")?,
                rows,
                Args::new()
                    .ptr(gpu.ptr(&st.kb.ptr))
                    .ptr(gpu.ptr(&st.kb.col))
                    .ptr(gpu.ptr(&st.kb.val))
                    .i64(n as i64)
                    .ptr(gpu.ptr(&st.row_off))
                    .ptr(gpu.ptr(&st.add_col))
                    .ptr(gpu.ptr(&st.add_val))
                    .f64(gamma)
                    .ptr(gpu.ptr(&spare.ptr))
                    .ptr(gpu.ptr(&spare.col))
                    .ptr(gpu.ptr(&spare.val)),
            )
        }?;
        let old = std::mem::replace(&mut st.kb, spare);
        st.spare = Some(old);
        self.secs[3] += clock.elapsed().as_secs_f64();
        Ok(())
    }

    fn finish(&mut self, lay: &Layout, nm: usize) -> Result<Vec<SpVec>> {
        let clock = Instant::now();
        let (gpu, n) = (self.sv.gpu, self.sv.n);
        let st = self
            .state
            .take()
            .ok_or_else(|| Error::invalid("b-update", "finished before the update began"))?;
        let ptr: Vec<i64> = gpu.download(&st.kb.ptr, n + 1)?;
        let nnz = ptr[n] as usize;
        let col: Vec<i32> = gpu.download(&st.kb.col, nnz)?;
        let val: Vec<f64> = gpu.download(&st.kb.val, nnz)?;
        if let Some(q) = col.par_iter().position_any(|&c| c < 0 || c as usize >= nm) {
            let p = ptr.partition_point(|&x| x as usize <= q) - 1;
            return Err(Error::device(
                "K B on the device",
                format!("row {p} names archetype {} of {nm}", col[q]),
            ));
        }
        let cols = cols_from_rows(n, nm, |p, f| {
            for q in ptr[p] as usize..ptr[p + 1] as usize {
                f(col[q] as u32, val[q]);
            }
            lay.order[p]
        });
        self.secs[4] += clock.elapsed().as_secs_f64();
        Ok(cols)
    }

    fn parts(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("begin-kat", self.secs[5]),
            ("begin", self.secs[0]),
            ("b-upload", self.secs[1]),
            ("gradient", self.secs[2]),
            ("kb-blend", self.secs[3]),
            ("kb-download", self.secs[4]),
        ]
    }
}

/// K B from the CPU's row blocks, uploaded in the layout's row order.
fn host_kb(gpu: &Gpu, m: &Csr<f64>, b: &[SpVec], lay: &Layout, n: usize) -> Result<DevKb> {
    let (ptr, col, val) = flatten(&blocks_of(&kb_cols(m, b), lay));
    if ptr.len() != n + 1 {
        return Err(Error::invalid(
            "kb",
            format!("{} rows for {n} cells", ptr.len() - 1),
        ));
    }
    Ok(DevKb {
        ptr: gpu.upload(&ptr)?,
        col: gpu.upload(&col)?,
        val: gpu.upload(&val)?,
        room: col.len(),
    })
}

/// The step's picks and gap shares the kernels left in `st`, each pick checked to be a cell:
/// a kernel that did not write its column shows as an error, never as a pick.
fn read_picks(gpu: &Gpu, st: &Update, n: usize, nm: usize, what: &str) -> Result<Vec<(u32, f64)>> {
    let picks: Vec<i32> = gpu.download(&st.pick, nm)?;
    let shares: Vec<f64> = gpu.download(&st.share, nm)?;
    picks
        .iter()
        .zip(&shares)
        .enumerate()
        .map(|(c, (&p, &s))| {
            if p < 0 || p as usize >= n {
                Err(Error::device(
                    what,
                    format!("archetype {c} got no cell (pick {p})"),
                ))
            } else {
                Ok((p as u32, s))
            }
        })
        .collect()
}

/// Appends what `bb_g` reads in the bound's kernels: the layout positions, K B's rows, t1 by
/// columns and N, -K A^T's rows.
fn g_args<'x>(gpu: &Gpu, st: &Update, bd: &Bound, nm: usize, args: &'x mut Args) -> &'x mut Args {
    args.ptr(gpu.ptr(&st.pos))
        .ptr(gpu.ptr(&st.kb.ptr))
        .ptr(gpu.ptr(&st.kb.col))
        .ptr(gpu.ptr(&st.kb.val))
        .ptr(gpu.ptr(&bd.tt))
        .i64(nm as i64)
        .ptr(gpu.ptr(&st.kat.ptr))
        .ptr(gpu.ptr(&st.kat.col))
        .ptr(gpu.ptr(&st.kat.val))
}

/// Blocks of the fused kernel and K B rows per block: about eight blocks per SM, each at
/// least [`MIN_SPAN`] rows.
fn split(rows: usize, gpu: &Gpu) -> (usize, usize) {
    let target = (gpu.limits().sms as usize * 8).max(1);
    let span = rows.div_ceil(target).max(MIN_SPAN);
    (rows.div_ceil(span).max(1), span)
}
