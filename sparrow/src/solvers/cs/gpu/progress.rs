//! Each signal's stop tests on the host, fed by the norms the kernels reduce per iteration.

use cudarc::driver::CudaSlice;

use super::super::StopReason;
use crate::device::Gpu;
use crate::Result;

/// The per-signal stop tests of the CPU solvers, applied to the norms of each iteration.
pub struct Progress {
    pub(crate) running: Vec<bool>,
    /// Iterations each signal ran.
    pub iterations: Vec<usize>,
    pub(crate) stop: Vec<StopReason>,
    pub(crate) r_norm: Vec<f64>,
    pub(crate) y_norm: Vec<f64>,
    pub(crate) tol: f64,
}

impl Progress {
    /// Every signal running, none past `max_iter`.
    pub fn new(ys: &[Vec<f64>], tol: f64, max_iter: usize) -> Self {
        let y_norm: Vec<f64> = ys.iter().map(|y| super::super::linalg::norm(y)).collect();
        Progress {
            running: y_norm.iter().map(|&v| v != 0.0).collect(),
            iterations: y_norm
                .iter()
                .map(|&v| if v == 0.0 { 0 } else { max_iter })
                .collect(),
            stop: vec![StopReason::MaxIterations; ys.len()]
                .into_iter()
                .zip(&y_norm)
                .map(|(s, &v)| if v == 0.0 { StopReason::Residual } else { s })
                .collect(),
            r_norm: y_norm.clone(),
            y_norm,
            tol,
        }
    }

    /// Stops signal `b` at iteration `i` when its residual norm or its estimate's squared norm
    /// is non-finite or the residual is past the divergence bound: the estimate stays frozen
    /// as it is and `Recover::run`'s check of the returned estimates reports it, naming this
    /// iteration. Returns whether it stopped.
    pub(crate) fn diverged(&mut self, b: usize, i: usize, x2: f64) -> bool {
        let r = self.r_norm[b];
        if r.is_finite() && x2.is_finite() && r <= super::super::DIVERGENCE_FACTOR * self.y_norm[b]
        {
            return false;
        }
        if !x2.is_finite() {
            self.r_norm[b] = f64::INFINITY;
        }
        self.running[b] = false;
        self.iterations[b] = i;
        true
    }

    /// Takes iteration `i`'s squared norms (residual, new estimate, step); says whether any
    /// signal stopped.
    pub(crate) fn update(&mut self, i: usize, r2: &[f64], x2: &[f64], d2: &[f64]) -> bool {
        let mut changed = false;
        for b in 0..self.running.len() {
            if !self.running[b] {
                continue;
            }
            self.r_norm[b] = r2[b].sqrt();
            if self.diverged(b, i, x2[b]) {
                changed = true;
                continue;
            }
            let stop = if self.r_norm[b] <= self.tol * self.y_norm[b] {
                Some(StopReason::Residual)
            } else if d2[b].sqrt() <= self.tol * x2[b].sqrt().max(f64::MIN_POSITIVE) {
                Some(StopReason::Stalled)
            } else {
                None
            };
            if let Some(s) = stop {
                self.running[b] = false;
                self.iterations[b] = i;
                self.stop[b] = s;
                changed = true;
            }
        }
        changed
    }

    /// OMP's test: only the residual (returns whether a signal stopped).
    pub(crate) fn update_residual(&mut self, i: usize, r2: &[f64]) -> bool {
        let mut changed = false;
        for (b, &rr) in r2.iter().enumerate() {
            if self.running[b] {
                self.r_norm[b] = rr.sqrt();
                if self.diverged(b, i, 0.0) {
                    changed = true;
                } else if self.r_norm[b] <= self.tol * self.y_norm[b] {
                    self.running[b] = false;
                    self.iterations[b] = i;
                    self.stop[b] = StopReason::Residual;
                    changed = true;
                }
            }
        }
        changed
    }

    /// Subspace pursuit's stop: from the second iteration, a signal whose residual did not
    /// shrink stops and keeps its previous estimate. Returns the flags of those signals.
    pub(crate) fn sp_revert(&mut self, i: usize, r2: &[f64]) -> Option<Vec<i32>> {
        if i == 1 {
            return None;
        }
        let mut flags = vec![0i32; self.running.len()];
        let mut any = false;
        for b in 0..self.running.len() {
            if self.running[b] && r2[b].sqrt() >= self.r_norm[b] {
                self.running[b] = false;
                self.iterations[b] = i;
                self.stop[b] = StopReason::Stalled;
                flags[b] = 1;
                any = true;
            }
        }
        any.then_some(flags)
    }

    pub(crate) fn flags(&self) -> Vec<i32> {
        self.running.iter().map(|&r| r as i32).collect()
    }

    pub(crate) fn any(&self) -> bool {
        self.running.iter().any(|&r| r)
    }
}

/// Per-iteration device scratch for the norms.
pub(crate) struct Norms {
    pub(crate) r2: CudaSlice<f64>,
    pub(crate) x2: CudaSlice<f64>,
    pub(crate) d2: CudaSlice<f64>,
    pub(crate) unused: CudaSlice<f64>,
}

impl Norms {
    pub(crate) fn new(gpu: &Gpu, nb: usize) -> Result<Self> {
        Ok(Norms {
            r2: gpu.alloc_zeroed(nb)?,
            x2: gpu.alloc_zeroed(nb)?,
            d2: gpu.alloc_zeroed(nb)?,
            unused: gpu.alloc_zeroed(nb)?,
        })
    }

    pub(crate) fn take(&self, gpu: &Gpu, nb: usize) -> Result<(Vec<f64>, Vec<f64>, Vec<f64>)> {
        Ok((
            gpu.download(&self.r2, nb)?,
            gpu.download(&self.x2, nb)?,
            gpu.download(&self.d2, nb)?,
        ))
    }
}
