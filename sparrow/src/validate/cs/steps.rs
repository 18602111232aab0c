//! The solvers' update steps: IHT's (plain, with per-signal steps, on a support, and staged by
//! cp.async), FISTA's and AMP's, and the copy for running signals; each leaves a stopped
//! signal alone.

use super::{mag, outcome, Ctx, N};
use crate::device::Args;
use crate::solvers::cs::gpu::Real;
use crate::solvers::cs::prox;
use crate::validate::Outcome;
use crate::Result;

/// The IHT step and its variants: with per-signal steps, g on x's support, and x and g staged
/// by cp.async.
pub(super) fn iht<T: Real>(c: &Ctx<T>) -> Result<Vec<Outcome>> {
    let &Ctx {
        ref d,
        ref xd,
        ref gd,
        ref rx,
        ref rg,
        ref shapes,
        ref active,
        tol,
        one,
        two,
        per,
        mu,
        ..
    } = c;
    let gpu = d.gpu;
    let name = |k: &str| c.name(k);
    let mut out = Vec::new();
    // IHT step with |z|; the second signal (items 150..300) has stopped and keeps x.
    let (z, za) = (d.out(N)?, d.out(N)?);
    d.launch(
        "iht_step",
        two,
        Args::new()
            .ptr(d.ptr(xd))
            .ptr(d.ptr(gd))
            .scalar(T::from_f64(mu))
            .ptr(0)
            .ptr(d.ptr(&z))
            .ptr(d.ptr(&za))
            .ptr(d.ptr(active))
            .i64(per as i64)
            .i64(N as i64),
    )?;
    let mut wz = prox::iht_step(&rx[..per], &rg[..per], mu);
    wz.extend_from_slice(&rx[per..]);
    let scale: Vec<f64> = (0..N).map(|i| rx[i].abs() + mu * rg[i].abs()).collect();
    out.push(outcome(
        name("iht_step"),
        shapes,
        &d.down(&z, N)?,
        &wz,
        &scale,
        tol,
    ));
    let wa: Vec<f64> = wz.iter().map(|v| v.abs()).collect();
    out.push(outcome(
        format!("{} |z|", name("iht_step")),
        shapes,
        &d.down(&za, N)?,
        &wa,
        &scale,
        tol,
    ));
    // Per-signal steps (normalised IHT, HTP): mus replaces mu.
    let mus = d.up(&[0.3, 0.9])?;
    let rmus = d.down(&mus, 2)?;
    let (z3, za3) = (d.out(N)?, d.out(N)?);
    d.launch(
        "iht_step",
        two,
        Args::new()
            .ptr(d.ptr(xd))
            .ptr(d.ptr(gd))
            .scalar(T::from_f64(mu))
            .ptr(d.ptr(&mus))
            .ptr(d.ptr(&z3))
            .ptr(d.ptr(&za3))
            .ptr(0)
            .i64(per as i64)
            .i64(N as i64),
    )?;
    let want: Vec<f64> = (0..N).map(|i| rx[i] + rmus[i / per] * rg[i]).collect();
    let scale3: Vec<f64> = (0..N).map(|i| rx[i].abs() + rg[i].abs()).collect();
    out.push(outcome(
        format!("{} per-signal mu", name("iht_step")),
        shapes,
        &d.down(&z3, N)?,
        &want,
        &scale3,
        tol,
    ));
    // g on x's support.
    let xz: Vec<f64> = (0..N)
        .map(|i| if i % 4 == 1 { 0.0 } else { rx[i] })
        .collect();
    let xzd = d.up(&xz)?;
    let o = d.out(N)?;
    d.launch(
        "mask_support",
        one,
        Args::new()
            .ptr(d.ptr(gd))
            .ptr(d.ptr(&xzd))
            .ptr(d.ptr(&o))
            .i64(N as i64),
    )?;
    let want: Vec<f64> = (0..N)
        .map(|i| if i % 4 == 1 { 0.0 } else { rg[i] })
        .collect();
    out.push(outcome(
        name("mask_support"),
        shapes,
        &d.down(&o, N)?,
        &want,
        &vec![1.0; N],
        0.0,
    ));
    // The same step with x and g staged by cp.async: 3,001 items in one block, so it strides
    // over several tiles (4 of 1,024 f32, 6 of 512 f64) and ends in a partial chunk.
    let na = 3001usize;
    let (xa, ga) = (c.rand(na), c.rand(na));
    let (xad, gad) = (d.up(&xa)?, d.up(&ga)?);
    let (rxa, rga) = (d.down(&xad, na)?, d.down(&gad, na)?);
    let (z2, za2) = (d.out(na)?, d.out(na)?);
    let pa = 1500usize;
    let active3 = gpu.upload(&[1i32, 0, 1])?;
    d.launch(
        "iht_step_async",
        one,
        Args::new()
            .ptr(d.ptr(&xad))
            .ptr(d.ptr(&gad))
            .scalar(T::from_f64(mu))
            .ptr(0)
            .ptr(d.ptr(&z2))
            .ptr(d.ptr(&za2))
            .ptr(d.ptr(&active3))
            .i64(pa as i64)
            .i64(na as i64),
    )?;
    let wza: Vec<f64> = (0..na)
        .map(|i| {
            if i / pa == 1 {
                rxa[i]
            } else {
                prox::iht_step(&rxa[i..i + 1], &rga[i..i + 1], mu)[0]
            }
        })
        .collect();
    let scale_a: Vec<f64> = (0..na).map(|i| rxa[i].abs() + mu * rga[i].abs()).collect();
    let shapes_a = "3,001 items, one 256-thread block, 3 signals";
    out.push(outcome(
        name("iht_step_async"),
        shapes_a,
        &d.down(&z2, na)?,
        &wza,
        &scale_a,
        tol,
    ));
    let wzaa: Vec<f64> = wza.iter().map(|v| v.abs()).collect();
    out.push(outcome(
        format!("{} |z|", name("iht_step_async")),
        shapes_a,
        &d.down(&za2, na)?,
        &wzaa,
        &scale_a,
        tol,
    ));
    Ok(out)
}

/// FISTA's step, AMP's step and the copy for running signals; the second signal has stopped
/// in each.
pub(super) fn running<T: Real>(c: &Ctx<T>) -> Result<Vec<Outcome>> {
    let &Ctx {
        ref d,
        ref xd,
        ref gd,
        ref rx,
        ref rg,
        ref shapes,
        ref active,
        tol,
        two,
        per,
        ..
    } = c;
    let name = |k: &str| c.name(k);
    let mut out = Vec::new();
    // FISTA's step; the second signal has stopped.
    let w = c.rand(N);
    let wd = d.up(&w)?;
    let rw = d.down(&wd, N)?;
    let (step, lam, coef) = (0.3, 0.2, 0.45);
    let (st, la, co) = (
        T::from_f64(step).to_f64(),
        T::from_f64(lam).to_f64(),
        T::from_f64(coef).to_f64(),
    );
    let (xn, wn) = (d.out(N)?, d.out(N)?);
    d.launch(
        "fista",
        two,
        Args::new()
            .ptr(d.ptr(&wd))
            .ptr(d.ptr(gd))
            .ptr(d.ptr(xd))
            .scalar(T::from_f64(st))
            .scalar(T::from_f64(la))
            .scalar(T::from_f64(co))
            .ptr(d.ptr(active))
            .i64(per as i64)
            .ptr(d.ptr(&xn))
            .ptr(d.ptr(&wn))
            .i64(N as i64),
    )?;
    let mut wx = prox::soft_threshold(&prox::iht_step(&rw[..per], &rg[..per], st), la * st);
    let mut ww: Vec<f64> = wx
        .iter()
        .zip(&rx[..per])
        .map(|(a, b)| a + co * (a - b))
        .collect();
    wx.extend_from_slice(&rx[per..]);
    ww.extend_from_slice(&rw[per..]);
    let scale: Vec<f64> = (0..N)
        .map(|i| 2.0 * (rw[i].abs() + st * rg[i].abs() + rx[i].abs() + la))
        .collect();
    out.push(outcome(
        format!("{} x", name("fista")),
        shapes,
        &d.down(&xn, N)?,
        &wx,
        &scale,
        2.0 * tol,
    ));
    out.push(outcome(
        format!("{} w", name("fista")),
        shapes,
        &d.down(&wn, N)?,
        &ww,
        &scale,
        4.0 * tol,
    ));

    // AMP's soft-thresholded step with a threshold per signal; the second has stopped.
    let theta = d.up(&[0.25, 0.6])?;
    let th = d.down(&theta, 2)?;
    let o = d.out(N)?;
    d.launch(
        "amp_step",
        two,
        Args::new()
            .ptr(d.ptr(xd))
            .ptr(d.ptr(gd))
            .ptr(d.ptr(&theta))
            .ptr(d.ptr(active))
            .i64(per as i64)
            .ptr(d.ptr(&o))
            .i64(N as i64),
    )?;
    let mut want = prox::soft_threshold(&prox::iht_step(&rx[..per], &rg[..per], 1.0), th[0]);
    want.extend_from_slice(&rx[per..]);
    out.push(outcome(
        name("amp_step"),
        shapes,
        &d.down(&o, N)?,
        &want,
        &mag(rx, rg),
        tol,
    ));

    // Copy for running signals only: the stopped one keeps its values.
    let dst = d.up(&w)?;
    d.launch(
        "keep_running",
        two,
        Args::new()
            .ptr(d.ptr(xd))
            .ptr(d.ptr(&dst))
            .ptr(d.ptr(active))
            .i64(per as i64)
            .i64(N as i64),
    )?;
    let mut want = rx[..per].to_vec();
    want.extend_from_slice(&rw[per..]);
    out.push(outcome(
        name("keep_running"),
        shapes,
        &d.down(&dst, N)?,
        &want,
        &mag(rx, &rw),
        0.0,
    ));
    Ok(out)
}
