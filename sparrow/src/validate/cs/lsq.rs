//! Least squares on supports from the Gram matrix, and the support bookkeeping around it
//! (OMP's growing Cholesky, the union of lists, restriction, keys and masks): kernels that
//! share one small problem of three signals, built once and passed to each.

use cudarc::driver::CudaSlice;

use super::{outcome, Ctx};
use crate::device::{Args, LaunchShape};
use crate::kernels::CS;
use crate::solvers::cs::gpu::Real;
use crate::solvers::cs::linalg::Phi;
use crate::validate::Outcome;
use crate::Result;

/// Least squares on supports from the Gram matrix: a short support, a full one, a
/// stopped signal that keeps its x; against linalg's lsq.
pub(super) fn least_squares<T: Real>(c: &Ctx<T>) -> Result<Vec<Outcome>> {
    let pb = Problem::new(c)?;
    let mut out = lsq(c, &pb)?;
    out.extend(omp_chol(c, &pb)?);
    out.extend(union_lists(c)?);
    out.extend(restrict(c, &pb)?);
    Ok(out)
}

/// Three signals of a 40 x 30 Phi with their supports (4 columns, 6, and 2 for the signal
/// that has stopped), as uploaded and as the device holds them.
struct Problem<T> {
    /// Columns of Phi.
    ln: usize,
    /// Slots per support.
    smax: usize,
    sups: [Vec<i32>; 3],
    /// The Gram matrix Phi^T Phi.
    gd: CudaSlice<T>,
    /// Phi^T y per signal.
    cyd: CudaSlice<T>,
    /// The supports, padded to `smax` with -1.
    idd: CudaSlice<i32>,
    rgram: Vec<f64>,
    rcy: Vec<f64>,
    /// The x a stopped signal keeps.
    keep: Vec<f64>,
    rkeep: Vec<f64>,
    /// Signals 0 and 1 run, signal 2 has stopped.
    act: CudaSlice<i32>,
    /// The x `lsq` solves into, starting at `keep`.
    xo: CudaSlice<T>,
}

impl<T: Real> Problem<T> {
    fn new(c: &Ctx<T>) -> Result<Self> {
        let d = &c.d;
        let gpu = d.gpu;
        let (lm, ln, smax) = (40usize, 30usize, 6usize);
        let a = c.rand(lm * ln);
        let p = Phi {
            m: lm,
            n: ln,
            a: a.iter().map(|&v| T::from_f64(v).to_f64()).collect(),
        };
        let mut gram = vec![0.0; ln * ln];
        for i in 0..ln {
            for j in 0..ln {
                gram[i * ln + j] = (0..lm).map(|r| p.a[r * ln + i] * p.a[r * ln + j]).sum();
            }
        }
        let ys: Vec<Vec<f64>> = (0..3).map(|_| c.rand(lm)).collect();
        let cy: Vec<f64> = ys.iter().flat_map(|y| p.correlate(y)).collect();
        let sups: [Vec<i32>; 3] = [vec![1, 4, 9, 20], vec![0, 3, 7, 11, 12, 29], vec![2, 5]];
        let idx: Vec<i32> = sups
            .iter()
            .flat_map(|s| {
                let mut v = s.clone();
                v.resize(smax, -1);
                v
            })
            .collect();
        let (gd, cyd, idd) = (d.up(&gram)?, d.up(&cy)?, gpu.upload(&idx)?);
        let (rgram, rcy) = (d.down(&gd, ln * ln)?, d.down(&cyd, 3 * ln)?);
        let keep = c.rand(3 * ln);
        let xo = d.up(&keep)?;
        let rkeep = d.down(&xo, 3 * ln)?;
        let act = gpu.upload(&[1i32, 1, 0])?;
        Ok(Problem {
            ln,
            smax,
            sups,
            gd,
            cyd,
            idd,
            rgram,
            rcy,
            keep,
            rkeep,
            act,
            xo,
        })
    }
}

/// `lsq` with its factors in shared memory, then in global-memory scratch.
fn lsq<T: Real>(c: &Ctx<T>, pb: &Problem<T>) -> Result<Vec<Outcome>> {
    let &Ctx { ref d, ty, .. } = c;
    let &Problem {
        ln,
        smax,
        ref sups,
        ref gd,
        ref cyd,
        ref idd,
        ref rgram,
        ref rcy,
        ref keep,
        ref rkeep,
        ref act,
        ref xo,
    } = pb;
    let gpu = d.gpu;
    let name = |k: &str| c.name(k);
    let mut out = Vec::new();
    d.launch(
        "lsq",
        LaunchShape::linear(3, 256).with_smem(((smax * smax + smax) * 8) as u32),
        Args::new()
            .ptr(d.ptr(gd))
            .ptr(d.ptr(cyd))
            .ptr(d.ptr(idd))
            .i64(smax as i64)
            .i64(ln as i64)
            .ptr(d.ptr(act))
            .ptr(d.ptr(xo))
            .ptr(0),
    )?;
    // The reference solves the same (rounded) normal equations as linalg's lsq does.
    let mut want = vec![0.0; 3 * ln];
    for (b, sup) in sups.iter().enumerate().take(2) {
        let k = sup.len();
        let mut g: Vec<f64> = (0..k * k)
            .map(|e| rgram[sup[e / k] as usize * ln + sup[e % k] as usize])
            .collect();
        let rhs: Vec<f64> = sup.iter().map(|&j| rcy[b * ln + j as usize]).collect();
        let coef = crate::solvers::cs::linalg::normal_solve(&mut g, k, rhs);
        for (a, &j) in sup.iter().enumerate() {
            want[b * ln + j as usize] = coef[a];
        }
    }
    want[2 * ln..].copy_from_slice(&rkeep[2 * ln..]);
    let top = want.iter().fold(0f64, |x, v| x.max(v.abs()));
    let want_lsq = want.clone();
    out.push(outcome(
        name("lsq"),
        "supports of 4 and 6 of 30 columns, one stopped signal",
        &d.down(xo, 3 * ln)?,
        &want,
        &vec![top; 3 * ln],
        if ty == "f32" { 1e-6 } else { 1e-13 },
    ));
    // The same in global-memory scratch (the path for supports beyond shared memory).
    let xg = d.up(keep)?;
    let scratch = gpu.alloc_zeroed::<f64>(3 * (smax * smax + smax))?;
    d.launch(
        "lsq",
        LaunchShape::linear(3, 256),
        Args::new()
            .ptr(d.ptr(gd))
            .ptr(d.ptr(cyd))
            .ptr(d.ptr(idd))
            .i64(smax as i64)
            .i64(ln as i64)
            .ptr(d.ptr(act))
            .ptr(d.ptr(&xg))
            .ptr(gpu.ptr(&scratch)),
    )?;
    out.push(outcome(
        format!("{} (global scratch)", name("lsq")),
        "supports of 4 and 6 of 30 columns, one stopped signal",
        &d.down(&xg, 3 * ln)?,
        &want_lsq,
        &vec![top; 3 * ln],
        if ty == "f32" { 1e-6 } else { 1e-13 },
    ));
    Ok(out)
}

/// OMP's growing least squares, one column per launch, against GrowingCholesky on the
/// same rounded Gram entries: signal 0 stops after 4 columns, signal 2 never runs.
fn omp_chol<T: Real>(c: &Ctx<T>, pb: &Problem<T>) -> Result<Vec<Outcome>> {
    let &Ctx { ref d, ty, .. } = c;
    let &Problem {
        ln,
        smax,
        ref sups,
        ref gd,
        ref cyd,
        ref rgram,
        ref rcy,
        ref keep,
        ref rkeep,
        ..
    } = pb;
    let gpu = d.gpu;
    let name = |k: &str| c.name(k);
    let mut out = Vec::new();
    let supd = gpu.upload(&vec![-1i32; 3 * smax])?;
    let lf = gpu.alloc_zeroed::<f64>(3 * smax * smax)?;
    let (vf, zf) = (
        gpu.alloc_zeroed::<f64>(3 * smax)?,
        gpu.alloc_zeroed::<f64>(3 * smax)?,
    );
    let xc = d.up(keep)?;
    for step in 0..smax {
        let pick: Vec<i32> = sups
            .iter()
            .map(|s| s.get(step).copied().unwrap_or(0))
            .collect();
        let running = [(step < sups[0].len()) as i32, 1, 0];
        let (pd, ad) = (gpu.upload(&pick)?, gpu.upload(&running)?);
        d.launch(
            "omp_chol",
            LaunchShape::linear(1, 256),
            Args::new()
                .ptr(d.ptr(gd))
                .ptr(d.ptr(cyd))
                .ptr(gpu.ptr(&pd))
                .ptr(gpu.ptr(&supd))
                .i64(smax as i64)
                .i64(step as i64 + 1)
                .i64(ln as i64)
                .i64(3)
                .ptr(gpu.ptr(&ad))
                .ptr(gpu.ptr(&lf))
                .ptr(gpu.ptr(&vf))
                .ptr(gpu.ptr(&zf))
                .ptr(d.ptr(&xc)),
        )?;
    }
    let mut want = rkeep.clone();
    for (b, sup) in sups.iter().enumerate().take(2) {
        let mut chol = crate::solvers::cs::linalg::GrowingCholesky::default();
        for (a, &j) in sup.iter().enumerate() {
            let j = j as usize;
            let cross: Vec<f64> = sup[..a]
                .iter()
                .map(|&p| rgram[p as usize * ln + j])
                .collect();
            chol.push(&cross, rgram[j * ln + j], rcy[b * ln + j]);
        }
        want[b * ln..(b + 1) * ln].fill(0.0);
        for (&j, z) in sup.iter().zip(chol.solve()) {
            want[b * ln + j as usize] = z;
        }
    }
    let top = want.iter().fold(0f64, |x, v| x.max(v.abs()));
    out.push(outcome(
        name("omp_chol"),
        "supports grown to 4 and 6 of 30 columns, one stopped signal",
        &d.down(&xc, 3 * ln)?,
        &want,
        &vec![top; 3 * ln],
        if ty == "f32" { 1e-6 } else { 1e-13 },
    ));
    let got_sup: Vec<f64> = gpu
        .download(&supd, 3 * smax)?
        .iter()
        .map(|&v| v as f64)
        .collect();
    let want_sup: Vec<f64> = sups
        .iter()
        .enumerate()
        .flat_map(|(b, s)| {
            let mut v: Vec<f64> = if b < 2 {
                s.iter().map(|&j| j as f64).collect()
            } else {
                Vec::new()
            };
            v.resize(smax, -1.0);
            v
        })
        .collect();
    out.push(outcome(
        format!("{} (support slots)", name("omp_chol")),
        "columns stored in the order chosen",
        &got_sup,
        &want_sup,
        &vec![1.0; 3 * smax],
        0.0,
    ));
    Ok(out)
}

/// The sorted union of two lists per signal (one list ends early with -1).
fn union_lists<T: Real>(c: &Ctx<T>) -> Result<Vec<Outcome>> {
    let gpu = c.d.gpu;
    let mut out = Vec::new();
    let la: Vec<i32> = vec![1, 4, 9, -1, 0, 5, 6, 7];
    let lb: Vec<i32> = vec![2, 4, 10, 5, 8, 9];
    let (lad, lbd) = (gpu.upload(&la)?, gpu.upload(&lb)?);
    let uo = gpu.upload(&[i32::MIN; 2 * 7])?;
    let k = gpu.kernel(&CS, "cs_union")?;
    unsafe {
        gpu.launch(
            &k,
            LaunchShape::linear(1, 256),
            Args::new()
                .ptr(gpu.ptr(&lad))
                .i64(4)
                .ptr(gpu.ptr(&lbd))
                .i64(3)
                .i64(2)
                .ptr(gpu.ptr(&uo))
                .i64(7),
        )
    }?;
    let got: Vec<f64> = gpu.download(&uo, 14)?.iter().map(|&v| v as f64).collect();
    let want: Vec<f64> = [1, 2, 4, 9, 10, -1, -1, 0, 5, 6, 7, 8, 9, -1]
        .iter()
        .map(|&v| v as f64)
        .collect();
    out.push(outcome(
        "cs_union".into(),
        "2 signals, lists of 4 and 3",
        &got,
        &want,
        &[1.0; 14],
        0.0,
    ));
    Ok(out)
}

/// Restriction to the selected positions; the stopped signal keeps its values. Then magnitudes
/// as keys and OMP's mask.
fn restrict<T: Real>(c: &Ctx<T>, pb: &Problem<T>) -> Result<Vec<Outcome>> {
    let &Ctx { ref d, one, .. } = c;
    let &Problem {
        ln,
        ref act,
        ref xo,
        ..
    } = pb;
    let gpu = d.gpu;
    let name = |k: &str| c.name(k);
    let mut out = Vec::new();
    let v = c.rand(3 * ln);
    let vd = d.up(&v)?;
    let rv = d.down(&vd, 3 * ln)?;
    let sel: Vec<i32> = vec![3, 17, 29, 0, 1, -1, 4, 5, 6];
    let seld = gpu.upload(&sel)?;
    let o = d.out(3 * ln)?;
    d.launch(
        "restrict",
        LaunchShape::linear(3, 256),
        Args::new()
            .ptr(d.ptr(&vd))
            .ptr(d.ptr(&seld))
            .i64(3)
            .i64(ln as i64)
            .ptr(d.ptr(act))
            .ptr(d.ptr(xo))
            .ptr(d.ptr(&o)),
    )?;
    let xs = d.down(xo, 3 * ln)?;
    let mut want = vec![0.0; 3 * ln];
    for (e, &j) in sel.iter().enumerate().take(6) {
        if j >= 0 {
            let p = (e / 3) * ln + j as usize;
            want[p] = rv[p];
        }
    }
    want[2 * ln..].copy_from_slice(&xs[2 * ln..]);
    out.push(outcome(
        name("restrict"),
        "3 signals of 30, 3 slots, one stopped",
        &d.down(&o, 3 * ln)?,
        &want,
        &vec![1.0; 3 * ln],
        0.0,
    ));
    // Magnitudes as keys, then OMP's mask of the chosen columns.
    let o = d.out(3 * ln)?;
    d.launch(
        "abs_keys",
        one,
        Args::new()
            .ptr(d.ptr(&vd))
            .ptr(d.ptr(&o))
            .i64((3 * ln) as i64),
    )?;
    let mut want: Vec<f64> = rv.iter().map(|v| v.abs()).collect();
    out.push(outcome(
        name("abs_keys"),
        "90 items",
        &d.down(&o, 3 * ln)?,
        &want,
        &vec![1.0; 3 * ln],
        0.0,
    ));
    d.launch(
        "omp_mask",
        one,
        Args::new()
            .ptr(d.ptr(&seld))
            .i64(3)
            .i64(2)
            .i64(ln as i64)
            .i64(3)
            .ptr(d.ptr(&o)),
    )?;
    for (e, &j) in sel.iter().enumerate() {
        if e % 3 < 2 && j >= 0 {
            want[(e / 3) * ln + j as usize] = -1.0;
        }
    }
    out.push(outcome(
        name("omp_mask"),
        "3 signals of 30, 2 of 3 slots used",
        &d.down(&o, 3 * ln)?,
        &want,
        &vec![1.0; 3 * ln],
        0.0,
    ));
    Ok(out)
}
