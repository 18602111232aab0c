//! The A update on the GPU: one block per cell with the CPU's arithmetic.

use std::time::Instant;

use super::super::fit::add_part;
use super::super::sparse::SpVec;
use super::solver::{Cols, Solver};
use super::BLOCK;
use crate::device::{Args, LaunchShape};
use crate::kernels::SEACELLS;
use crate::{Error, Result};

/// Largest archetype count whose A update runs on the GPU (two f64 vectors of it per block in
/// shared memory).
pub const A_MAX_METACELLS: usize = 12_000;
/// Cells per piece of the A update's download (0.6 MB at 50 atoms): small enough that the
/// GPU tests' 3,000 cells come back in three pieces, the last one short.
const A_DOWNLOAD_CELLS: usize = 1024;

impl<'a> Solver<'a> {
    /// The A update of [`super::super::fw::update_a`] on the GPU, one block per cell with the CPU's
    /// arithmetic: the same atoms bit for bit. `kb` is K B by archetype (the CPU takes its
    /// transpose); beyond [`A_MAX_METACELLS`] it runs on the CPU.
    pub fn update_a(
        &self,
        kb: &[SpVec],
        t1: &[f64],
        prev: Option<&[SpVec]>,
        steps: usize,
    ) -> Result<Vec<SpVec>> {
        self.update_a_timed(kb, t1, prev, steps, &mut Vec::new())
    }

    /// [`Solver::update_a`], adding its seconds to `parts` under "a-upload" (t1, K B by cell
    /// and the previous atoms), "a-kernel" and "a-atoms" (their download and assembly).
    pub fn update_a_timed(
        &self,
        kb: &[SpVec],
        t1: &[f64],
        prev: Option<&[SpVec]>,
        steps: usize,
        parts: &mut Vec<(&'static str, f64)>,
    ) -> Result<Vec<SpVec>> {
        let clock = Instant::now();
        let (gpu, n, nm) = (self.gpu, self.n, kb.len());
        if nm > A_MAX_METACELLS || n == 0 {
            let rows = super::super::rows::transpose(kb, n);
            return Ok(super::super::fw::update_a(&rows, t1, nm, prev, steps));
        }
        // Each step adds at most one atom, and there are nm archetypes.
        let cap = steps.min(nm).max(1);
        let t1_d = gpu.upload(t1)?;
        let kb = Cols::upload_transposed(gpu, kb, n)?;
        let prev_d = match prev {
            Some(p) => Some(Cols::upload(gpu, p)?),
            None => None,
        };
        let w0: Vec<f64> = (0..nm)
            .map(|m| t1[m * nm..(m + 1) * nm].iter().sum::<f64>() / nm as f64)
            .collect();
        let w0_d = gpu.upload(&w0)?;
        let out_c = gpu.alloc_zeroed::<i32>(n * cap)?;
        let out_w = gpu.alloc_zeroed::<f64>(n * cap)?;
        let k = gpu.kernel(&SEACELLS, "seacells_a_update")?;
        gpu.synchronize()?;
        add_part(parts, "a-upload", clock.elapsed().as_secs_f64());
        let clock = Instant::now();
        let cells = u32::try_from(n)
            .map_err(|_| Error::unsupported(format!("{n} cells exceed 2^32 blocks")))?;
        unsafe {
            gpu.launch(
                &k,
                LaunchShape::linear(cells, BLOCK).with_smem(((2 * nm + cap) * 8 + cap * 4) as u32),
                Args::new()
                    .ptr(gpu.ptr(&t1_d))
                    .i64(nm as i64)
                    .ptr(gpu.ptr(&kb.ptr))
                    .ptr(gpu.ptr(&kb.cell))
                    .ptr(gpu.ptr(&kb.w))
                    .ptr(prev_d.as_ref().map_or(0, |p| gpu.ptr(&p.ptr)))
                    .ptr(prev_d.as_ref().map_or(0, |p| gpu.ptr(&p.cell)))
                    .ptr(prev_d.as_ref().map_or(0, |p| gpu.ptr(&p.w)))
                    .ptr(gpu.ptr(&w0_d))
                    .i64(steps as i64)
                    .f64(super::super::fw::PRUNE)
                    .i64(cap as i64)
                    .ptr(gpu.ptr(&out_c))
                    .ptr(gpu.ptr(&out_w)),
            )
        }?;
        gpu.synchronize()?;
        add_part(parts, "a-kernel", clock.elapsed().as_secs_f64());
        let clock = Instant::now();
        // The atoms come back a slice of cells at a time: the host holds one slice of the
        // n x cap output beside A, not all of it (30 MB at 50,000 cells).
        let mut a = Vec::with_capacity(n);
        for c0 in (0..n).step_by(A_DOWNLOAD_CELLS) {
            let cn = A_DOWNLOAD_CELLS.min(n - c0);
            let cs: Vec<i32> = gpu.download_range(&out_c, c0 * cap, cn * cap)?;
            let ws: Vec<f64> = gpu.download_range(&out_w, c0 * cap, cn * cap)?;
            for i in 0..cn {
                // Counted first, so each cell's atoms are allocated at their size.
                let row = &cs[i * cap..(i + 1) * cap];
                let len = row.iter().take_while(|&&c| c >= 0).count();
                if len == 0 && steps > 0 {
                    return Err(Error::device(
                        "the GPU A update",
                        format!("cell {} came back without atoms", c0 + i),
                    ));
                }
                let mut atoms: SpVec = (0..len).map(|j| (row[j] as u32, ws[i * cap + j])).collect();
                atoms.sort_unstable_by_key(|a| a.0);
                a.push(atoms);
            }
        }
        add_part(parts, "a-atoms", clock.elapsed().as_secs_f64());
        Ok(a)
    }
}
