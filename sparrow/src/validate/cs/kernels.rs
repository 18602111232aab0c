//! The table of kernel families, and the families of elementwise and per-signal kernels:
//! thresholds, scatter, the AMP residual, the singular-value shrink, TV's difference and the
//! squared norms.

use super::correlate::correlate;
use super::lsq::least_squares;
use super::steps::{iht, running};
use super::{mag, outcome, Ctx, N};
use crate::device::Args;
use crate::solvers::cs::gpu::Real;
use crate::solvers::cs::prox;
use crate::validate::Outcome;
use crate::{Device, Result};

/// One family of kernel cases: launches its kernels on the shared inputs and compares each
/// with its CPU reference.
type Family<T> = for<'c, 'a> fn(&'c Ctx<'a, T>) -> Result<Vec<Outcome>>;

impl<T: Real> Ctx<'_, T> {
    /// The families in the order they run (the order of their random draws).
    const FAMILIES: &'static [(&'static str, Family<T>)] = &[
        ("thresholds", thresholds::<T>),
        ("iht", iht::<T>),
        ("scatter", scatter::<T>),
        ("amp_residual", amp_residual::<T>),
        ("sv_shrink", sv_shrink::<T>),
        ("tv_grad", tv_grad::<T>),
        ("correlate", correlate::<T>),
        ("least_squares", least_squares::<T>),
        ("norms", norms::<T>),
        ("running", running::<T>),
    ];
}

/// Every `cs.cu` kernel against its reference, family by family; nothing without a GPU.
pub(super) fn kernels<T: Real>(device: &Device) -> Result<Vec<Outcome>> {
    let Device::Cuda(gpu) = device else {
        return Ok(Vec::new());
    };
    let c = Ctx::<T>::new(gpu)?;
    let mut out = Vec::new();
    for (_family, run) in Ctx::<T>::FAMILIES {
        out.extend(run(&c)?);
    }
    Ok(out)
}

/// Hard and soft thresholds, over a grid smaller than the data (grid-stride).
fn thresholds<T: Real>(c: &Ctx<T>) -> Result<Vec<Outcome>> {
    let &Ctx {
        ref d,
        ref xd,
        ref rx,
        ref shapes,
        tol,
        one,
        ..
    } = c;
    let name = |k: &str| c.name(k);
    let mut out = Vec::new();
    let o = d.out(N)?;
    d.launch(
        "hard",
        one,
        Args::new()
            .ptr(d.ptr(xd))
            .scalar(T::from_f64(0.5))
            .ptr(d.ptr(&o))
            .i64(N as i64),
    )?;
    let t = T::from_f64(0.5).to_f64();
    out.push(outcome(
        name("hard"),
        shapes,
        &d.down(&o, N)?,
        &prox::hard_threshold(rx, t),
        &mag(rx, rx),
        0.0,
    ));
    let o = d.out(N)?;
    d.launch(
        "soft",
        one,
        Args::new()
            .ptr(d.ptr(xd))
            .scalar(T::from_f64(0.3))
            .ptr(d.ptr(&o))
            .i64(N as i64),
    )?;
    let l = T::from_f64(0.3).to_f64();
    out.push(outcome(
        name("soft"),
        shapes,
        &d.down(&o, N)?,
        &prox::soft_threshold(rx, l),
        &mag(rx, rx),
        tol,
    ));
    Ok(out)
}

/// Scatter of 7 selected positions per signal (one unused slot, -1), into zeros.
fn scatter<T: Real>(c: &Ctx<T>) -> Result<Vec<Outcome>> {
    let &Ctx {
        ref d,
        ref xd,
        ref rx,
        one,
        per,
        ..
    } = c;
    let gpu = d.gpu;
    let name = |k: &str| c.name(k);
    let mut out = Vec::new();
    let k = 7usize;
    let idx: Vec<i32> = vec![0, 3, 149, 77, 5, 6, -1, 1, 2, 148, 100, 50, 60, 70];
    let idx_d = gpu.upload(&idx)?;
    let o = d.up(&vec![0.0; N])?;
    d.launch(
        "scatter",
        one,
        Args::new()
            .ptr(d.ptr(xd))
            .ptr(d.ptr(&idx_d))
            .i64(k as i64)
            .i64(per as i64)
            .i64(2)
            .ptr(d.ptr(&o)),
    )?;
    let mut want = vec![0.0; N];
    for (e, &j) in idx.iter().enumerate() {
        if j >= 0 {
            let p = (e / k) * per + j as usize;
            want[p] = rx[p];
        }
    }
    out.push(outcome(
        name("scatter"),
        "2 signals of 150, 7 slots each, one empty",
        &d.down(&o, N)?,
        &want,
        &mag(rx, rx),
        0.0,
    ));
    Ok(out)
}

/// AMP residual, one block per signal: m = 300 measurements, n = 150 entries with zeros.
fn amp_residual<T: Real>(c: &Ctx<T>) -> Result<Vec<Outcome>> {
    let &Ctx {
        ref d,
        ref rx,
        tol,
        two,
        per,
        ..
    } = c;
    let name = |k: &str| c.name(k);
    let mut out = Vec::new();
    let (m, n) = (N, per);
    let y = c.rand(2 * m);
    let px = c.rand(2 * m);
    let zp = c.rand(2 * m);
    let xs: Vec<f64> = (0..2 * n)
        .map(|i| if i % 3 == 0 { 0.0 } else { rx[i % N] })
        .collect();
    let (yd, pxd, zpd, xsd) = (d.up(&y)?, d.up(&px)?, d.up(&zp)?, d.up(&xs)?);
    let (ry, rpx, rzp) = (
        d.down(&yd, 2 * m)?,
        d.down(&pxd, 2 * m)?,
        d.down(&zpd, 2 * m)?,
    );
    let zo = d.out(2 * m)?;
    d.launch(
        "amp_residual",
        two,
        Args::new()
            .ptr(d.ptr(&yd))
            .ptr(d.ptr(&pxd))
            .ptr(d.ptr(&xsd))
            .ptr(d.ptr(&zpd))
            .ptr(d.ptr(&zo))
            .i64(m as i64)
            .i64(n as i64),
    )?;
    let mut want = Vec::new();
    for b in 0..2 {
        let r = b * m..(b + 1) * m;
        want.extend(prox::amp_residual(
            &ry[r.clone()],
            &rpx[r.clone()],
            &xs[b * n..(b + 1) * n],
            &rzp[r],
        ));
    }
    let scale: Vec<f64> = (0..2 * m)
        .map(|i| ry[i].abs() + rpx[i].abs() + rzp[i].abs())
        .collect();
    out.push(outcome(
        name("amp_residual"),
        "2 signals, m = 300, n = 150",
        &d.down(&zo, 2 * m)?,
        &want,
        &scale,
        2.0 * tol,
    ));
    Ok(out)
}

/// Singular-value shrink over two blocks, with the nuclear norm by atomics.
fn sv_shrink<T: Real>(c: &Ctx<T>) -> Result<Vec<Outcome>> {
    let &Ctx {
        ref d,
        ref shapes,
        tol,
        two,
        ..
    } = c;
    let name = |k: &str| c.name(k);
    let mut out = Vec::new();
    let sigma: Vec<f64> = (0..N).map(|i| 3.0 * (-(i as f64) / 60.0).exp()).collect();
    let sd = d.up(&sigma)?;
    let rs = d.down(&sd, N)?;
    let tau = T::from_f64(0.4).to_f64();
    let (so, nuc) = (d.out(N)?, d.up(&[0.0])?);
    d.launch(
        "sv_shrink",
        two,
        Args::new()
            .ptr(d.ptr(&sd))
            .scalar(T::from_f64(tau))
            .ptr(d.ptr(&so))
            .i64(N as i64)
            .ptr(d.ptr(&nuc)),
    )?;
    let (ws, wn) = prox::sv_shrink(&rs, tau);
    out.push(outcome(
        name("sv_shrink"),
        shapes,
        &d.down(&so, N)?,
        &ws,
        &rs,
        tol,
    ));
    let total: f64 = rs.iter().sum();
    out.push(outcome(
        format!("{} nuclear norm", name("sv_shrink")),
        shapes,
        &d.down(&nuc, 1)?,
        &[wn],
        &[total],
        8.0 * tol,
    ));
    Ok(out)
}

/// TV forward difference per signal.
fn tv_grad<T: Real>(c: &Ctx<T>) -> Result<Vec<Outcome>> {
    let &Ctx {
        ref d,
        ref xd,
        ref rx,
        tol,
        two,
        per,
        ..
    } = c;
    let name = |k: &str| c.name(k);
    let mut out = Vec::new();
    let o = d.out(N)?;
    d.launch(
        "tv_grad",
        two,
        Args::new()
            .ptr(d.ptr(xd))
            .ptr(d.ptr(&o))
            .i64(per as i64)
            .i64(N as i64),
    )?;
    let mut want = prox::tv_forward_difference(&rx[..per]);
    want.extend(prox::tv_forward_difference(&rx[per..]));
    let scale: Vec<f64> = (0..N)
        .map(|i| rx[i].abs() + rx.get(i + 1).map_or(0.0, |v| v.abs()))
        .collect();
    out.push(outcome(
        name("tv_grad"),
        "2 signals of 150",
        &d.down(&o, N)?,
        &want,
        &scale,
        tol,
    ));
    Ok(out)
}

/// Per-signal squared norms in f64.
fn norms<T: Real>(c: &Ctx<T>) -> Result<Vec<Outcome>> {
    let &Ctx {
        ref d,
        ref xd,
        ref gd,
        ref rx,
        ref rg,
        two,
        per,
        ..
    } = c;
    let gpu = d.gpu;
    let name = |k: &str| c.name(k);
    let mut out = Vec::new();
    let (sq, dsq) = (gpu.alloc_zeroed::<f64>(2)?, gpu.alloc_zeroed::<f64>(2)?);
    gpu.fill_bytes(&sq, 0xFF, 16)?;
    gpu.fill_bytes(&dsq, 0xFF, 16)?;
    d.launch(
        "norms",
        two,
        Args::new()
            .ptr(d.ptr(xd))
            .ptr(d.ptr(gd))
            .i64(per as i64)
            .ptr(d.ptr(&sq))
            .ptr(d.ptr(&dsq)),
    )?;
    let mut want = Vec::new();
    let mut scale = Vec::new();
    for b in 0..2 {
        let r = b * per..(b + 1) * per;
        want.push(rx[r.clone()].iter().map(|v| v * v).sum::<f64>());
        scale.push(want[b]);
    }
    for b in 0..2 {
        let r = b * per..(b + 1) * per;
        let s: f64 = r.clone().map(|i| (rx[i] - rg[i]).powi(2)).sum();
        want.push(s);
        scale.push(s);
    }
    let mut got = gpu.download(&sq, 2)?;
    got.extend(gpu.download(&dsq, 2)?);
    out.push(outcome(
        name("norms"),
        "2 signals of 150",
        &got,
        &want,
        &scale,
        1e-14,
    ));
    Ok(out)
}
