//! The correlation Phi^T r: plain, with rows staged by TMA (sm_90), and with an FP8 Phi
//! (sm_89+, f32), whose random matrices are drawn only where those kernels run.

use super::{outcome, Ctx, N};
use crate::device::{Args, LaunchShape};
use crate::kernels::CS;
use crate::solvers::cs::gpu::Real;
use crate::solvers::cs::linalg::Phi;
use crate::validate::Outcome;
use crate::Result;

/// Correlate Phi^T r for one signal, m = 77 rows, n = 300 columns.
pub(super) fn correlate<T: Real>(c: &Ctx<T>) -> Result<Vec<Outcome>> {
    let &Ctx { ref d, ty, .. } = c;
    let gpu = d.gpu;
    let name = |k: &str| c.name(k);
    let mut out = Vec::new();
    let (pm, pn) = (77usize, N);
    let phi = c.rand(pm * pn);
    let r = c.rand(pm);
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
            let phi8 = c.rand(pm * fn_);
            let (q, sc) = crate::solvers::cs::fp8::quantize_rows(&phi8, pm, fn_);
            let rf: Vec<f64> = rr.iter().map(|&v| v as f32 as f64).collect();
            let (qd, scd) = (gpu.upload(&q)?, gpu.upload(&sc)?);
            let rd32 = gpu.upload(&rf.iter().map(|&v| v as f32).collect::<Vec<f32>>())?;
            let o = gpu.alloc_zeroed::<f32>(fn_)?;
            gpu.fill_bytes(&o, 0xFF, fn_ * 4)?;
            let k = gpu.kernel(&CS, "cs_correlate_fp8")?;
            unsafe {
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
                )
            }?;
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
    Ok(out)
}
