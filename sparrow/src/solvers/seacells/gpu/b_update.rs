//! The B update on the GPU by the path [`Solver::b_path`] picks: the fused by-cell kernel
//! ([`super::b_fused`]) or G = M (M V) in SpMM column chunks reduced per column.

use super::super::fw::{a_at, kb_cols, update_b_with, BUpdate};
use super::super::sparse::{blend, SpVec};
use super::b_fused::GpuSteps;
use super::b_layout::{expansion_fits, tier, KatSource};
use super::solver::{BPath, Cols, Solver};
use super::{grid_for, BLOCK};
use crate::device::{Args, LaunchShape};
use crate::kernels::SEACELLS;
use crate::matrix::Csr;
use crate::{Error, Result};

/// Cells one partial argmin block scans.
const PICK_SPAN: usize = 4096;

impl<'a> Solver<'a> {
    /// How the B update runs for `nm` archetypes: the fused by-cell kernel with K B kept on
    /// the device up to [`super::b_layout::max_metacells`] (and while M's two-hop
    /// neighbourhoods fit the K-column expansion), SpMM chunks beyond.
    pub fn b_path(&self, nm: usize) -> BPath {
        if tier(nm).is_some() && expansion_fits(self.two_hop) {
            BPath::Fused(KatSource::Device)
        } else {
            BPath::Chunked
        }
    }

    /// The B update of [`super::super::fw::update_b`] with its gradient read on the GPU, by the path
    /// [`Solver::b_path`] picks.
    pub fn update_b(
        &self,
        m: &Csr<f64>,
        a: &[SpVec],
        b_prev: &[SpVec],
        steps: usize,
        min_steps: usize,
        gap_tol: f64,
    ) -> Result<BUpdate> {
        let path = self.b_path(b_prev.len());
        self.update_b_on(path, m, a, b_prev, steps, min_steps, gap_tol)
    }

    /// [`Solver::update_b`] by a given path. The fused path takes the CPU's steps around
    /// each pick (so with [`KatSource::Host`] it is the CPU's update bit for bit); the chunked
    /// path's gradient sums run in another order, so near-ties may pick other cells.
    #[allow(clippy::too_many_arguments)]
    pub fn update_b_on(
        &self,
        path: BPath,
        m: &Csr<f64>,
        a: &[SpVec],
        b_prev: &[SpVec],
        steps: usize,
        min_steps: usize,
        gap_tol: f64,
    ) -> Result<BUpdate> {
        match path {
            BPath::Fused(src) => {
                let mut on = GpuSteps::new(self, b_prev.len(), src)?;
                update_b_with(m, a, b_prev, steps, min_steps, gap_tol, &mut on)
            }
            BPath::Chunked => self.update_b_chunked(m, a, b_prev, steps, min_steps, gap_tol),
        }
    }

    fn update_b_chunked(
        &self,
        m: &Csr<f64>,
        a: &[SpVec],
        b_prev: &[SpVec],
        steps: usize,
        min_steps: usize,
        gap_tol: f64,
    ) -> Result<BUpdate> {
        let (gpu, n) = (self.gpu, self.n);
        let nm = b_prev.len();
        let ch = self.chunk;
        // t1 = A A^T, dense N x N (as the CPU forms it).
        let t1_d = gpu.upload(&a_at(a, nm))?;
        // A by cell, as given.
        let a_d = Cols::upload(gpu, a)?;
        let rhs = gpu.kernel(&SEACELLS, "seacells_b_rhs")?;
        let pick_k = gpu.kernel(&SEACELLS, "seacells_b_pick")?;
        let gap_k = gpu.kernel(&SEACELLS, "seacells_b_gap")?;
        // Partial argmins: PICK_SPAN cells per block.
        let parts = n.div_ceil(PICK_SPAN);
        let pv = gpu.alloc_zeroed::<f64>(ch * parts)?;
        let pi = gpu.alloc_zeroed::<i64>(ch * parts)?;
        let pick_d = gpu.upload(&vec![-1i32; nm])?;
        let gap_d = gpu.alloc_zeroed::<f64>(nm)?;
        let mut b: Vec<SpVec> = b_prev.to_vec();
        let (mut gap0, mut taken) = (0.0, 0);
        let elems = grid_for(n * ch);
        for t in 0..steps {
            // B by column (for the gap) and by cell (for V).
            let bc = Cols::upload(gpu, &b)?;
            let br = Cols::upload_transposed(gpu, &b, n)?;
            for c0 in (0..nm).step_by(ch) {
                let nc = ch.min(nm - c0);
                unsafe {
                    gpu.launch(
                        &rhs,
                        elems,
                        Args::new()
                            .ptr(gpu.ptr(&br.ptr))
                            .ptr(gpu.ptr(&br.cell))
                            .ptr(gpu.ptr(&br.w))
                            .ptr(gpu.ptr(&t1_d))
                            .i64(nm as i64)
                            .i64(n as i64)
                            .i64(c0 as i64)
                            .i64(nc as i64)
                            .i64(ch as i64)
                            .ptr(gpu.ptr(&self.v)),
                    )
                }?;
                self.minus_a_then_mm(&a_d, c0, nc)?;
                let gp = gpu.ptr(&self.g);
                unsafe {
                    gpu.launch(
                        &pick_k,
                        LaunchShape {
                            grid: [nc as u32, parts as u32, 1],
                            block: [BLOCK, 1, 1],
                            smem: 0,
                            cluster: None,
                            pdl: false,
                        },
                        Args::new()
                            .ptr(gp)
                            .i64(n as i64)
                            .i64(ch as i64)
                            .i64(PICK_SPAN as i64)
                            .ptr(gpu.ptr(&pv))
                            .ptr(gpu.ptr(&pi)),
                    )
                }?;
                unsafe {
                    gpu.launch(
                        &gap_k,
                        grid_for(nc),
                        Args::new()
                            .ptr(gp)
                            .i64(ch as i64)
                            .i64(c0 as i64)
                            .i64(nc as i64)
                            .i64(parts as i64)
                            .ptr(gpu.ptr(&pv))
                            .ptr(gpu.ptr(&pi))
                            .ptr(gpu.ptr(&bc.ptr))
                            .ptr(gpu.ptr(&bc.cell))
                            .ptr(gpu.ptr(&bc.w))
                            .ptr(gpu.ptr(&pick_d))
                            .ptr(gpu.ptr(&gap_d)),
                    )
                }?;
            }
            let picks: Vec<i32> = gpu.download(&pick_d, nm)?;
            let gaps: Vec<f64> = gpu.download(&gap_d, nm)?;
            if let Some(c) = picks.iter().position(|&p| p < 0 || p as usize >= n) {
                return Err(Error::device(
                    "the GPU B update",
                    format!("archetype {c} got no cell (pick {})", picks[c]),
                ));
            }
            let gap: f64 = gaps.iter().sum();
            if t == 0 {
                gap0 = gap;
            }
            if t >= min_steps && gap <= gap_tol * gap0 {
                break;
            }
            let gamma = 2.0 / (t as f64 + 2.0);
            for (col, &p) in b.iter_mut().zip(&picks) {
                *col = blend(col, &[(p as u32, 1.0)], gamma);
            }
            taken = t + 1;
        }
        let kb = kb_cols(m, &b);
        // One part: the chunked path does not split its time.
        Ok(BUpdate {
            b,
            kb,
            steps: taken,
            parts: Vec::new(),
        })
    }
}
