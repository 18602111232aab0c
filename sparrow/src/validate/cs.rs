//! Validation cases of compressed sensing: every `cs.cu` kernel, f32 and f64, on ragged sizes
//! (300 items for 256-thread blocks, two signals) against the CPU references of
//! `solvers::cs::prox` and `linalg` (outputs NaN-filled first, so an element no thread wrote
//! fails); and the GPU solvers (IHT, AMP, FISTA) against the CPU solvers on one batch. Without
//! a GPU, the CPU's IHT is checked against the planted signals.

use cudarc::driver::CudaSlice;

use super::{Case, Outcome, Reference};
use crate::device::{Args, Gpu, LaunchShape};
use crate::kernels::{cs_name, CS};
use crate::matrix::{Dense, Rng};
use crate::solvers::cs::data::{gaussian_phi, measure, sparse_signals};
use crate::solvers::cs::gpu::Real;
use crate::solvers::cs::linalg::Phi;
use crate::solvers::cs::prox;
use crate::solvers::cs::{Method, Recover};
use crate::{Device, Result, Scalar};

pub(super) fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "cs-kernels/f32",
            run: kernels::<f32>,
        },
        Case {
            name: "cs-kernels/f64",
            run: kernels::<f64>,
        },
        Case {
            name: "cs-solvers/f32",
            run: solvers::<f32>,
        },
        Case {
            name: "cs-solvers/f64",
            run: solvers::<f64>,
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
        self.gpu.launch(&k, shape, args)
    }
    fn ptr<U>(&self, b: &CudaSlice<U>) -> u64 {
        self.gpu.ptr(b)
    }
}

fn rand(rng: &mut Rng, n: usize) -> Vec<f64> {
    (0..n).map(|_| rng.range_f64(-2.0, 2.0)).collect()
}

fn kernels<T: Real>(device: &Device) -> Result<Vec<Outcome>> {
    let Device::Cuda(gpu) = device else {
        return Ok(Vec::new());
    };
    let d = Dev::<T> {
        gpu,
        _t: std::marker::PhantomData,
    };
    let ty = <T as Scalar>::NAME;
    let name = |k: &str| cs_name(k, ty);
    // Elementwise results are within a rounding or two of the f64 reference.
    let tol = if ty == "f32" { 4e-7 } else { 4e-16 };
    let mut rng = Rng::new(29);
    let x = rand(&mut rng, N);
    let g = rand(&mut rng, N);
    let mag = |a: &[f64], b: &[f64]| -> Vec<f64> {
        a.iter().zip(b).map(|(p, q)| p.abs() + q.abs()).collect()
    };
    let one = LaunchShape::linear(1, 256);
    let two = LaunchShape::linear(2, 256);
    let shapes = format!("{N} items, 256-thread blocks");
    let mut out = Vec::new();
    let (xd, gd) = (d.up(&x)?, d.up(&g)?);
    let rx: Vec<f64> = d.down(&xd, N)?; // x as the device holds it
    let rg: Vec<f64> = d.down(&gd, N)?;

    // Hard and soft thresholds, over a grid smaller than the data (grid-stride).
    let o = d.out(N)?;
    d.launch(
        "hard",
        one,
        Args::new()
            .ptr(d.ptr(&xd))
            .scalar(T::from_f64(0.5))
            .ptr(d.ptr(&o))
            .i64(N as i64),
    )?;
    let t = T::from_f64(0.5).to_f64();
    out.push(outcome(
        name("hard"),
        &shapes,
        &d.down(&o, N)?,
        &prox::hard_threshold(&rx, t),
        &mag(&rx, &rx),
        0.0,
    ));
    let o = d.out(N)?;
    d.launch(
        "soft",
        one,
        Args::new()
            .ptr(d.ptr(&xd))
            .scalar(T::from_f64(0.3))
            .ptr(d.ptr(&o))
            .i64(N as i64),
    )?;
    let l = T::from_f64(0.3).to_f64();
    out.push(outcome(
        name("soft"),
        &shapes,
        &d.down(&o, N)?,
        &prox::soft_threshold(&rx, l),
        &mag(&rx, &rx),
        tol,
    ));

    // IHT step with |z|; the second signal (items 150..300) has stopped and keeps x.
    let per = N / 2;
    let active = gpu.upload(&[1i32, 0])?;
    let mu = T::from_f64(0.7).to_f64();
    let (z, za) = (d.out(N)?, d.out(N)?);
    d.launch(
        "iht_step",
        two,
        Args::new()
            .ptr(d.ptr(&xd))
            .ptr(d.ptr(&gd))
            .scalar(T::from_f64(mu))
            .ptr(0)
            .ptr(d.ptr(&z))
            .ptr(d.ptr(&za))
            .ptr(d.ptr(&active))
            .i64(per as i64)
            .i64(N as i64),
    )?;
    let mut wz = prox::iht_step(&rx[..per], &rg[..per], mu);
    wz.extend_from_slice(&rx[per..]);
    let scale: Vec<f64> = (0..N).map(|i| rx[i].abs() + mu * rg[i].abs()).collect();
    out.push(outcome(
        name("iht_step"),
        &shapes,
        &d.down(&z, N)?,
        &wz,
        &scale,
        tol,
    ));
    let wa: Vec<f64> = wz.iter().map(|v| v.abs()).collect();
    out.push(outcome(
        format!("{} |z|", name("iht_step")),
        &shapes,
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
            .ptr(d.ptr(&xd))
            .ptr(d.ptr(&gd))
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
        &shapes,
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
            .ptr(d.ptr(&gd))
            .ptr(d.ptr(&xzd))
            .ptr(d.ptr(&o))
            .i64(N as i64),
    )?;
    let want: Vec<f64> = (0..N)
        .map(|i| if i % 4 == 1 { 0.0 } else { rg[i] })
        .collect();
    out.push(outcome(
        name("mask_support"),
        &shapes,
        &d.down(&o, N)?,
        &want,
        &vec![1.0; N],
        0.0,
    ));
    // The same step with x and g staged by cp.async: 3,001 items in one block, so it strides
    // over several tiles (4 of 1,024 f32, 6 of 512 f64) and ends in a partial chunk.
    let na = 3001usize;
    let (xa, ga) = (rand(&mut rng, na), rand(&mut rng, na));
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

    // Scatter of 7 selected positions per signal (one unused slot, -1), into zeros.
    let k = 7usize;
    let idx: Vec<i32> = vec![0, 3, 149, 77, 5, 6, -1, 1, 2, 148, 100, 50, 60, 70];
    let idx_d = gpu.upload(&idx)?;
    let o = d.up(&vec![0.0; N])?;
    d.launch(
        "scatter",
        one,
        Args::new()
            .ptr(d.ptr(&xd))
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
        &mag(&rx, &rx),
        0.0,
    ));

    // AMP residual, one block per signal: m = 300 measurements, n = 150 entries with zeros.
    let (m, n) = (N, per);
    let y = rand(&mut rng, 2 * m);
    let px = rand(&mut rng, 2 * m);
    let zp = rand(&mut rng, 2 * m);
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

    // Singular-value shrink over two blocks, with the nuclear norm by atomics.
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
        &shapes,
        &d.down(&so, N)?,
        &ws,
        &rs,
        tol,
    ));
    let total: f64 = rs.iter().sum();
    out.push(outcome(
        format!("{} nuclear norm", name("sv_shrink")),
        &shapes,
        &d.down(&nuc, 1)?,
        &[wn],
        &[total],
        8.0 * tol,
    ));

    // TV forward difference per signal.
    let o = d.out(N)?;
    d.launch(
        "tv_grad",
        two,
        Args::new()
            .ptr(d.ptr(&xd))
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

    // Correlate Phi^T r for one signal, m = 77 rows, n = 300 columns.
    let (pm, pn) = (77usize, N);
    let phi = rand(&mut rng, pm * pn);
    let r = rand(&mut rng, pm);
    let (phid, rd) = (d.up(&phi)?, d.up(&r)?);
    let p = Phi {
        m: pm,
        n: pn,
        a: d.down(&phid, pm * pn)?,
    };
    let rr = d.down(&rd, pm)?;
    let o = d.out(pn)?;
    d.launch(
        "correlate",
        LaunchShape::linear(pn.div_ceil(32) as u32, 256),
        Args::new()
            .ptr(d.ptr(&phid))
            .ptr(d.ptr(&rd))
            .ptr(d.ptr(&o))
            .i64(pm as i64)
            .i64(pn as i64),
    )?;
    let scale: Vec<f64> = (0..pn)
        .map(|j| (0..pm).map(|i| (p.a[i * pn + j] * rr[i]).abs()).sum())
        .collect();
    let sum_tol = if ty == "f32" { 2e-6 } else { 4e-15 };
    out.push(outcome(
        name("correlate"),
        "m = 77, n = 300",
        &d.down(&o, pn)?,
        &p.correlate(&rr),
        &scale,
        sum_tol,
    ));

    let cc = gpu.limits().compute_capability;
    // The same correlate with Phi's rows staged by TMA bulk copies (sm_90): 77 rows make ten
    // stages of 8, so both stage buffers wrap several times; 300 columns take two blocks.
    if cc >= (9, 0) {
        let o = d.out(pn)?;
        d.launch(
            "correlate_tma",
            LaunchShape::linear(pn.div_ceil(256) as u32, 256),
            Args::new()
                .ptr(d.ptr(&phid))
                .ptr(d.ptr(&rd))
                .ptr(d.ptr(&o))
                .i64(pm as i64)
                .i64(pn as i64),
        )?;
        out.push(outcome(
            name("correlate_tma"),
            "m = 77, n = 300, stages of 8 rows",
            &d.down(&o, pn)?,
            &p.correlate(&rr),
            &scale,
            sum_tol,
        ));
    }
    // FP8 e4m3 Phi with per-row scales (sm_89+), f32: the exact sum of the quantized terms,
    // and the distance to the unquantized correlation within the quantization's bound. An odd
    // n takes the byte-load path, an even one the 16-bit loads.
    if ty == "f32" && cc >= (8, 9) {
        for fn_ in [300usize, 301] {
            let phi8 = rand(&mut rng, pm * fn_);
            let (q, sc) = crate::solvers::cs::fp8::quantize_rows(&phi8, pm, fn_);
            let rf: Vec<f64> = rr.iter().map(|&v| v as f32 as f64).collect();
            let (qd, scd) = (gpu.upload(&q)?, gpu.upload(&sc)?);
            let rd32 = gpu.upload(&rf.iter().map(|&v| v as f32).collect::<Vec<f32>>())?;
            let o = gpu.alloc_zeroed::<f32>(fn_)?;
            gpu.fill_bytes(&o, 0xFF, fn_ * 4)?;
            let k = gpu.kernel(&CS, "cs_correlate_fp8")?;
            gpu.launch(
                &k,
                LaunchShape::linear(fn_.div_ceil(64) as u32, 256),
                Args::new()
                    .ptr(gpu.ptr(&qd))
                    .ptr(gpu.ptr(&scd))
                    .ptr(gpu.ptr(&rd32))
                    .ptr(gpu.ptr(&o))
                    .i64(pm as i64)
                    .i64(fn_ as i64),
            )?;
            let got: Vec<f64> = gpu.download(&o, fn_)?.iter().map(|&v| v as f64).collect();
            let dec = |i: usize, j: usize| {
                sc[i] as f64 * crate::solvers::cs::fp8::decode(q[i * fn_ + j]) as f64
            };
            let (mut want, mut mags, mut exact, mut bound) = (vec![], vec![], vec![], vec![]);
            for j in 0..fn_ {
                let (mut w, mut a, mut e, mut b) = (0.0, 0.0, 0.0, 0.0);
                for i in 0..pm {
                    w += dec(i, j) * rf[i];
                    a += (dec(i, j) * rf[i]).abs();
                    e += phi8[i * fn_ + j] * rf[i];
                    b += (dec(i, j) - phi8[i * fn_ + j]).abs() * rf[i].abs();
                }
                want.push(w);
                mags.push(a);
                exact.push(e);
                // The quantization bound plus the f32 accumulation's share.
                bound.push(b + 2e-6 * a);
            }
            let shapes = format!("m = 77, n = {fn_}, e4m3 with per-row scales");
            out.push(outcome(
                "cs_correlate_fp8".into(),
                &shapes,
                &got,
                &want,
                &mags,
                2e-6,
            ));
            out.push(outcome(
                "cs_correlate_fp8 within its error bound".into(),
                &shapes,
                &got,
                &exact,
                &bound,
                1.0,
            ));
        }
    }

    // Least squares on supports from the Gram matrix: a short support, a full one, a
    // stopped signal that keeps its x; against linalg's lsq.
    {
        let (lm, ln, smax) = (40usize, 30usize, 6usize);
        let a = rand(&mut rng, lm * ln);
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
        let ys: Vec<Vec<f64>> = (0..3).map(|_| rand(&mut rng, lm)).collect();
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
        let keep = rand(&mut rng, 3 * ln);
        let xo = d.up(&keep)?;
        let rkeep = d.down(&xo, 3 * ln)?;
        let act = gpu.upload(&[1i32, 1, 0])?;
        d.launch(
            "lsq",
            LaunchShape::linear(3, 256).with_smem(((smax * smax + smax) * 8) as u32),
            Args::new()
                .ptr(d.ptr(&gd))
                .ptr(d.ptr(&cyd))
                .ptr(d.ptr(&idd))
                .i64(smax as i64)
                .i64(ln as i64)
                .ptr(d.ptr(&act))
                .ptr(d.ptr(&xo))
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
            &d.down(&xo, 3 * ln)?,
            &want,
            &vec![top; 3 * ln],
            if ty == "f32" { 1e-6 } else { 1e-13 },
        ));
        // The same in global-memory scratch (the path for supports beyond shared memory).
        let xg = d.up(&keep)?;
        let scratch = gpu.alloc_zeroed::<f64>(3 * (smax * smax + smax))?;
        d.launch(
            "lsq",
            LaunchShape::linear(3, 256),
            Args::new()
                .ptr(d.ptr(&gd))
                .ptr(d.ptr(&cyd))
                .ptr(d.ptr(&idd))
                .i64(smax as i64)
                .i64(ln as i64)
                .ptr(d.ptr(&act))
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
        // OMP's growing least squares, one column per launch, against GrowingCholesky on the
        // same rounded Gram entries: signal 0 stops after 4 columns, signal 2 never runs.
        let supd = gpu.upload(&vec![-1i32; 3 * smax])?;
        let lf = gpu.alloc_zeroed::<f64>(3 * smax * smax)?;
        let (vf, zf) = (
            gpu.alloc_zeroed::<f64>(3 * smax)?,
            gpu.alloc_zeroed::<f64>(3 * smax)?,
        );
        let xc = d.up(&keep)?;
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
                    .ptr(d.ptr(&gd))
                    .ptr(d.ptr(&cyd))
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
        // The sorted union of two lists per signal (one list ends early with -1).
        let la: Vec<i32> = vec![1, 4, 9, -1, 0, 5, 6, 7];
        let lb: Vec<i32> = vec![2, 4, 10, 5, 8, 9];
        let (lad, lbd) = (gpu.upload(&la)?, gpu.upload(&lb)?);
        let uo = gpu.upload(&[i32::MIN; 2 * 7])?;
        let k = gpu.kernel(&CS, "cs_union")?;
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
        )?;
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
        // Restriction to the selected positions; the stopped signal keeps its values.
        let v = rand(&mut rng, 3 * ln);
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
                .ptr(d.ptr(&act))
                .ptr(d.ptr(&xo))
                .ptr(d.ptr(&o)),
        )?;
        let xs = d.down(&xo, 3 * ln)?;
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
    }

    // Per-signal squared norms in f64.
    let (sq, dsq) = (gpu.alloc_zeroed::<f64>(2)?, gpu.alloc_zeroed::<f64>(2)?);
    gpu.fill_bytes(&sq, 0xFF, 16)?;
    gpu.fill_bytes(&dsq, 0xFF, 16)?;
    d.launch(
        "norms",
        two,
        Args::new()
            .ptr(d.ptr(&xd))
            .ptr(d.ptr(&gd))
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

    // FISTA's step; the second signal has stopped.
    let w = rand(&mut rng, N);
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
            .ptr(d.ptr(&gd))
            .ptr(d.ptr(&xd))
            .scalar(T::from_f64(st))
            .scalar(T::from_f64(la))
            .scalar(T::from_f64(co))
            .ptr(d.ptr(&active))
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
        &shapes,
        &d.down(&xn, N)?,
        &wx,
        &scale,
        2.0 * tol,
    ));
    out.push(outcome(
        format!("{} w", name("fista")),
        &shapes,
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
            .ptr(d.ptr(&xd))
            .ptr(d.ptr(&gd))
            .ptr(d.ptr(&theta))
            .ptr(d.ptr(&active))
            .i64(per as i64)
            .ptr(d.ptr(&o))
            .i64(N as i64),
    )?;
    let mut want = prox::soft_threshold(&prox::iht_step(&rx[..per], &rg[..per], 1.0), th[0]);
    want.extend_from_slice(&rx[per..]);
    out.push(outcome(
        name("amp_step"),
        &shapes,
        &d.down(&o, N)?,
        &want,
        &mag(&rx, &rg),
        tol,
    ));

    // Copy for running signals only: the stopped one keeps its values.
    let dst = d.up(&w)?;
    d.launch(
        "keep_running",
        two,
        Args::new()
            .ptr(d.ptr(&xd))
            .ptr(d.ptr(&dst))
            .ptr(d.ptr(&active))
            .i64(per as i64)
            .i64(N as i64),
    )?;
    let mut want = rx[..per].to_vec();
    want.extend_from_slice(&rw[per..]);
    out.push(outcome(
        name("keep_running"),
        &shapes,
        &d.down(&dst, N)?,
        &want,
        &mag(&rx, &rw),
        0.0,
    ));
    Ok(out)
}

/// A batch with planted K-sparse signals: m = 128, n = 256, K = 8, 24 signals.
fn problem(seed: u64) -> Result<(Dense<f64>, Dense<f64>, Dense<f64>)> {
    let (m, n, k, nb) = (128, 256, 8, 24);
    let phi = gaussian_phi(m, n, seed)?;
    let x = sparse_signals(n, k, nb, false, seed + 1)?;
    let y = measure(&phi, &x)?;
    Ok((phi, x, y))
}

fn convert<T: Scalar>(a: &Dense<f64>) -> Result<Dense<T>> {
    Dense::from_rows(
        a.nrows(),
        a.ncols(),
        (0..a.nrows())
            .flat_map(|i| a.row(i).iter().map(|&v| T::from_f64(v)))
            .collect(),
    )
}

/// The GPU solvers against the CPU solvers on the same batch: the same support per signal and
/// coefficients within 1e-4 relative (f32) or 1e-9 (f64) of the largest.
fn solvers<T: Real>(device: &Device) -> Result<Vec<Outcome>> {
    let (phi, planted, y) = problem(41)?;
    let (phi_t, y_t) = (convert::<T>(&phi)?, convert::<T>(&y)?);
    let tol = if <T as Scalar>::NAME == "f32" {
        1e-4
    } else {
        1e-9
    };
    let mut out = Vec::new();
    if let (Device::Cuda(_), "f64") = (device, <T as Scalar>::NAME) {
        out.push(svt_agreement(device)?);
    }
    let mut methods = vec![(Method::Iht, Recover::new(Method::Iht).sparsity(8))];
    for m in [
        Method::Niht,
        Method::Htp,
        Method::Cosamp,
        Method::Sp,
        Method::Omp,
    ] {
        methods.push((m, Recover::new(m).sparsity(8)));
    }
    // AMP and FISTA shrink their estimates, so only their agreement with the CPU is exact.
    if let Device::Cuda(_) = device {
        methods.push((Method::Amp, Recover::new(Method::Amp)));
        methods.push((
            Method::Fista,
            Recover::new(Method::Fista).lambda(0.01).max_iter(300),
        ));
    }
    for (method, req) in methods {
        let (cpu, _) = req.run(&Device::Cpu, &phi_t, &y_t)?;
        let (got, plan, reference, want) = match device {
            Device::Cuda(_) => {
                let (g, plan) = req.run(device, &phi_t, &y_t)?;
                // Every method runs on the GPU at this size; one that fell back to the CPU
                // would be compared with itself.
                if plan.backend != crate::ops::Backend::Cuda {
                    let mut o = outcome(
                        format!("recover {method:?}"),
                        "m = 128, n = 256, K = 8, 24 signals",
                        &[],
                        &[],
                        &[],
                        tol,
                    );
                    o.pass = false;
                    o.note = format!("ran on the CPU: {}", plan.reason);
                    out.push(o);
                    continue;
                }
                (g, plan, Reference::CrossBackend, cpu)
            }
            Device::Cpu => {
                let planted_t = convert::<T>(&planted)?;
                let support = (0..planted.ncols())
                    .map(|b| {
                        (0..planted.nrows())
                            .filter(|&j| planted.get(j, b) != 0.0)
                            .collect()
                    })
                    .collect();
                let want = crate::solvers::cs::Recovery {
                    x: planted_t,
                    support,
                    residual_norm: Vec::new(),
                    iterations: Vec::new(),
                    stop: Vec::new(),
                };
                (
                    cpu,
                    req.plan(device, phi.ncols()),
                    Reference::Rederivation,
                    want,
                )
            }
        };
        let flat = |d: &Dense<T>| -> Vec<f64> {
            (0..d.nrows())
                .flat_map(|i| d.row(i).iter().map(|v| v.to_f64()).collect::<Vec<_>>())
                .collect()
        };
        let (got_x, want_x) = (flat(&got.x), flat(&want.x));
        let scale = want_x.iter().map(|v| v.abs()).fold(0.0, f64::max);
        // IHT's support is exact. AMP and FISTA soft-threshold, so an entry at the threshold
        // may be zero in one precision and a rounding above it in the other: their supports
        // are compared on the entries above the tolerance.
        let support_ok = if method == Method::Iht {
            got.support == want.support
        } else {
            let sig =
                |x: &[f64]| -> Vec<bool> { x.iter().map(|v| v.abs() > tol * scale).collect() };
            sig(&got_x) == sig(&want_x)
        };
        let mut o = outcome(
            format!(
                "recover {method:?} [{}]",
                plan.reason.split(':').next().unwrap_or("")
            ),
            "m = 128, n = 256, K = 8, 24 signals",
            &got_x,
            &want_x,
            &vec![scale; want_x.len()],
            if reference == Reference::Rederivation {
                1e-3
            } else {
                tol
            },
        );
        o.reference = reference;
        if !support_ok {
            o.pass = false;
            o.note = "supports differ".into();
        }
        out.push(o);
    }
    Ok(out)
}

/// SVT on the GPU (randomized SVD) against the CPU (full SVD): a rank-3 60 x 50 matrix with
/// half its entries observed; the completions agree within 1e-3 of the largest entry.
fn svt_agreement(device: &Device) -> Result<Outcome> {
    use crate::matrix::Csr;
    use crate::solvers::completion::Complete;
    let (m, n, r) = (60usize, 50usize, 3usize);
    let mut rng = Rng::new(23);
    let u: Vec<f64> = (0..m * r).map(|_| rng.range_f64(-1.0, 1.0)).collect();
    let v: Vec<f64> = (0..n * r).map(|_| rng.range_f64(-1.0, 1.0)).collect();
    let full = |i: usize, j: usize| (0..r).map(|k| u[i * r + k] * v[j * r + k]).sum::<f64>();
    let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..m {
        for j in 0..n {
            if rng.uniform() < 0.5 {
                rows.push(i);
                cols.push(j);
                vals.push(full(i, j));
            }
        }
    }
    let obs = Csr::from_triplets(m, n, &rows, &cols, &vals)?;
    let req = Complete::new(10);
    let cpu = req.run(&obs)?;
    let (gpu, plan) = req.run_on(device, &obs)?;
    let flat = |d: &Dense<f64>| -> Vec<f64> { (0..m).flat_map(|i| d.row(i).to_vec()).collect() };
    let (got, want) = (flat(&gpu.x), flat(&cpu.x));
    let top = want.iter().fold(0f64, |x, v| x.max(v.abs()));
    let mut o = outcome(
        format!(
            "complete (SVT) [{}]",
            plan.reason.split(':').next().unwrap_or("")
        ),
        "60 x 50, rank 3, half observed",
        &got,
        &want,
        &vec![top; m * n],
        1e-3,
    );
    o.reference = Reference::CrossBackend;
    if gpu.rank != cpu.rank {
        o.pass = false;
        o.note = format!("rank {} on the GPU, {} on the CPU", gpu.rank, cpu.rank);
    } else {
        o.note = format!(
            "{} GPU and {} CPU iterations, rank {}",
            gpu.iterations, cpu.iterations, gpu.rank
        );
    }
    Ok(o)
}
