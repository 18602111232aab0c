//! Validation cases of compressed sensing: every `cs.cu` kernel, f32 and f64, on ragged sizes
//! (300 items for 256-thread blocks, two signals) against the CPU references of
//! `solvers::cs::prox` and `linalg` (outputs NaN-filled first, so an element no thread wrote
//! fails); and the GPU solvers (IHT, AMP, FISTA) against the CPU solvers on one batch. Without
//! a GPU, the CPU's IHT is checked against the planted signals.
//!
//! The kernel cases are a table of families (one function per group of related kernels, each
//! launching them and comparing with its reference) over a shared `Ctx`, so a new kernel is
//! one more function and one more row rather than more of one long function; the files split
//! by family so that each stays readable.

mod correlate;
mod kernels;
mod lsq;
mod solvers;
mod steps;

use std::cell::RefCell;

use cudarc::driver::CudaSlice;

use super::{Case, Outcome, Reference};
use crate::device::{Args, Gpu, LaunchShape};
use crate::kernels::{cs_name, CS};
use crate::matrix::Rng;
use crate::solvers::cs::gpu::Real;
use crate::{Result, Scalar};

pub(super) fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "cs-kernels/f32",
            run: kernels::kernels::<f32>,
        },
        Case {
            name: "cs-kernels/f64",
            run: kernels::kernels::<f64>,
        },
        Case {
            name: "cs-solvers/f32",
            run: solvers::solvers::<f32>,
        },
        Case {
            name: "cs-solvers/f64",
            run: solvers::solvers::<f64>,
        },
    ]
}

/// Items per kernel test: not a multiple of the 256-thread block.
const N: usize = 300;

/// Compares `got` with `want` element by element, relative to `scale` (the summed magnitudes
/// behind each element).
fn outcome(
    kernel: String,
    shapes: &str,
    got: &[f64],
    want: &[f64],
    scale: &[f64],
    tol: f64,
) -> Outcome {
    let (mut max_rel, mut max_abs, mut note) = (0f64, 0f64, String::new());
    let mut pass = got.len() == want.len();
    for i in 0..want.len().min(got.len()) {
        let d = (got[i] - want[i]).abs();
        let rel = d / scale[i].max(f64::MIN_POSITIVE);
        if rel.is_nan() || rel > tol {
            if pass {
                note = format!("element {i}: got {}, want {}", got[i], want[i]);
            }
            pass = false;
        }
        if d.is_finite() {
            max_abs = max_abs.max(d);
            max_rel = max_rel.max(rel);
        } else {
            max_abs = f64::INFINITY;
            max_rel = f64::INFINITY;
        }
    }
    Outcome {
        kernel,
        reference: Reference::NaiveOracle,
        shapes: shapes.to_string(),
        max_rel,
        max_abs,
        tolerance: tol,
        pass,
        note,
    }
}

struct Dev<'a, T> {
    gpu: &'a Gpu,
    _t: std::marker::PhantomData<T>,
}

impl<T: Real> Dev<'_, T> {
    fn up(&self, v: &[f64]) -> Result<CudaSlice<T>> {
        let t: Vec<T> = v.iter().map(|&x| T::from_f64(x)).collect();
        self.gpu.upload(&t)
    }
    /// An output buffer filled with NaN bytes.
    fn out(&self, len: usize) -> Result<CudaSlice<T>> {
        let b = self.gpu.alloc_zeroed::<T>(len)?;
        self.gpu
            .fill_bytes(&b, 0xFF, len * std::mem::size_of::<T>())?;
        Ok(b)
    }
    fn down(&self, b: &CudaSlice<T>, len: usize) -> Result<Vec<f64>> {
        Ok(self
            .gpu
            .download(b, len)?
            .iter()
            .map(|v| v.to_f64())
            .collect())
    }
    fn launch(&self, kernel: &str, shape: LaunchShape, args: &mut Args) -> Result<()> {
        let k = self
            .gpu
            .kernel(&CS, &cs_name(kernel, <T as Scalar>::NAME))?;
        // SAFETY: each case passes its kernel's arguments over buffers it allocated for N items.
        unsafe { self.gpu.launch(&k, shape, args) }
    }
    fn ptr<U>(&self, b: &CudaSlice<U>) -> u64 {
        self.gpu.ptr(b)
    }
}

fn rand(rng: &mut Rng, n: usize) -> Vec<f64> {
    (0..n).map(|_| rng.range_f64(-2.0, 2.0)).collect()
}

/// The summed magnitudes of two inputs, element by element.
fn mag(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(p, q)| p.abs() + q.abs()).collect()
}

/// What every family of kernel cases shares: the device, the random inputs x and g of `N`
/// items (as uploaded, and as the device holds them), the launch shapes, the tolerance, and
/// the two-signal split with its `active` flags.
struct Ctx<'a, T> {
    d: Dev<'a, T>,
    /// `f32` or `f64`.
    ty: &'static str,
    /// Elementwise results are within a rounding or two of the f64 reference.
    tol: f64,
    /// The random inputs beyond x and g, drawn by each family as it runs: the families run
    /// in table order, so each sees the same draws on every run.
    rng: RefCell<Rng>,
    xd: CudaSlice<T>,
    gd: CudaSlice<T>,
    /// x as the device holds it.
    rx: Vec<f64>,
    rg: Vec<f64>,
    one: LaunchShape,
    two: LaunchShape,
    shapes: String,
    /// Items per signal: two signals of 150.
    per: usize,
    /// The first signal runs, the second (items 150..300) has stopped and keeps its x.
    active: CudaSlice<i32>,
    /// The IHT step size, as the device rounds it.
    mu: f64,
}

impl<'a, T: Real> Ctx<'a, T> {
    fn new(gpu: &'a Gpu) -> Result<Self> {
        let d = Dev::<T> {
            gpu,
            _t: std::marker::PhantomData,
        };
        let ty = <T as Scalar>::NAME;
        let tol = if ty == "f32" { 4e-7 } else { 4e-16 };
        let mut rng = Rng::new(29);
        let x = rand(&mut rng, N);
        let g = rand(&mut rng, N);
        let one = LaunchShape::linear(1, 256);
        let two = LaunchShape::linear(2, 256);
        let shapes = format!("{N} items, 256-thread blocks");
        let (xd, gd) = (d.up(&x)?, d.up(&g)?);
        let rx: Vec<f64> = d.down(&xd, N)?;
        let rg: Vec<f64> = d.down(&gd, N)?;
        let per = N / 2;
        let active = gpu.upload(&[1i32, 0])?;
        let mu = T::from_f64(0.7).to_f64();
        Ok(Ctx {
            d,
            ty,
            tol,
            rng: RefCell::new(rng),
            xd,
            gd,
            rx,
            rg,
            one,
            two,
            shapes,
            per,
            active,
            mu,
        })
    }

    /// The next `n` random inputs, between -2 and 2.
    fn rand(&self, n: usize) -> Vec<f64> {
        rand(&mut self.rng.borrow_mut(), n)
    }

    /// A kernel's full name, such as `cs_hard_f32`.
    fn name(&self, kernel: &str) -> String {
        cs_name(kernel, self.ty)
    }
}
