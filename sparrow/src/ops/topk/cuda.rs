//! Host side of the GPU top-k: tiles, per-segment state, the pass loop and the downloads.
//! Outputs are filled with a sentinel byte (0xA5) before the kernels run, so an element no
//! kernel wrote cannot pass for a result.

use cudarc::driver::CudaSlice;

use super::key::directed;
use super::plan::{tiles, SORT_MAX};
use super::{padding, IndexType, Indices, Key, Layout, TieBreak, TopK, TopKOutput};
use crate::device::{Args, Gpu, LaunchShape};
use crate::kernels::{topk_module, topk_name, KernelModule};
use crate::{Error, Result};

const BLOCK: u32 = 256;

fn as_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: plain-old-data keys and values (floats and integers), read as bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

fn from_bytes<T: Copy + Default>(b: &[u8]) -> Vec<T> {
    let n = b.len() / std::mem::size_of::<T>();
    let mut v = vec![T::default(); n];
    // SAFETY: every bit pattern is a valid key or value type (floats and integers).
    unsafe {
        std::ptr::copy_nonoverlapping(
            b.as_ptr(),
            v.as_mut_ptr() as *mut u8,
            n * std::mem::size_of::<T>(),
        )
    };
    v
}

fn grid(items: usize) -> Result<LaunchShape> {
    let b = u32::try_from(items.div_ceil(BLOCK as usize).max(1)).map_err(|_| {
        Error::unsupported(format!("{items} work items need more than 2^32 blocks"))
    })?;
    Ok(LaunchShape::linear(b, BLOCK))
}

struct Run<'a> {
    gpu: &'a Gpu,
    module: KernelModule,
    ty: &'static str,
}

impl Run<'_> {
    fn launch(&self, kernel: &str, shape: LaunchShape, args: &mut Args) -> Result<()> {
        let k = self.gpu.kernel(&self.module, &topk_name(kernel, self.ty))?;
        self.gpu.launch(&k, shape, args)
    }
}

/// Top-k of every segment on the GPU; the layout is validated by the caller.
pub(crate) fn topk<K: Key, V: Key>(
    gpu: &Gpu,
    req: &TopK,
    keys: &[K],
    layout: &Layout,
    values: Option<&[V]>,
) -> Result<TopKOutput<K, V>> {
    let module = topk_module(K::NAME)
        .ok_or_else(|| Error::unsupported(format!("no GPU top-k for key type {}", K::NAME)))?;
    let (n, w) = (layout.count(), layout.width);
    let ks = std::mem::size_of::<K>();
    let vs = values.map_or(0, |_| std::mem::size_of::<V>());
    let is = if req.index() == IndexType::I64 { 8 } else { 4 };
    if n == 0 || w == 0 {
        return Ok(super::cpu::topk(req, keys, layout, values));
    }
    let (tseg, tst, ten, tptr) = tiles(layout);
    let nt = tseg.len();
    let out_elems = n * w;
    let sorted_here = req.is_sorted() && w <= SORT_MAX;
    let need = (keys.len() * (ks + vs)) as u64
        + (out_elems * (ks + is + vs)) as u64 * if sorted_here { 2 } else { 1 }
        + if sorted_here { out_elems as u64 * 4 } else { 0 }
        + (nt * (4 + 8 * 6)) as u64
        + (n * (256 * 8 + 8 * 8)) as u64;
    gpu.ensure_fits(need, "this top-k")?;

    let run = Run {
        gpu,
        module,
        ty: K::NAME,
    };
    let largest = req.is_largest() as i32;
    let idx64 = (req.index() == IndexType::I64) as i32;
    let d_keys = gpu.upload(as_bytes(keys))?;
    let d_vals: CudaSlice<u8> = gpu.upload(values.map_or(&[][..], as_bytes))?;
    let d_lens = gpu.upload(&layout.lens)?;
    let d_kk = gpu.upload(&layout.kk)?;
    let d_start = gpu.upload(&layout.starts)?;
    let (d_tseg, d_tst, d_ten, d_tptr) = (
        gpu.upload(&tseg)?,
        gpu.upload(&tst)?,
        gpu.upload(&ten)?,
        gpu.upload(&tptr)?,
    );
    let prefix = gpu.alloc_zeroed::<u64>(n)?;
    let remaining = gpu.alloc_zeroed::<u64>(n)?;
    let ties = gpu.alloc_zeroed::<u64>(n)?;
    let lo = gpu.alloc_zeroed::<u64>(n)?;
    let shift = gpu.alloc_zeroed::<i32>(n)?;
    let done = gpu.alloc_zeroed::<i32>(n)?;
    let ghist = gpu.alloc_zeroed::<u64>(n * 256)?;
    let (tile_gt, tile_tie, tile_out, tile_rank) = (
        gpu.alloc_zeroed::<u64>(nt)?,
        gpu.alloc_zeroed::<u64>(nt)?,
        gpu.alloc_zeroed::<u64>(nt)?,
        gpu.alloc_zeroed::<u64>(nt)?,
    );
    let out_keys = gpu.alloc_zeroed::<u8>(out_elems * ks)?;
    let out_idx = gpu.alloc_zeroed::<u8>(out_elems * is)?;
    let out_vals = gpu.alloc_zeroed::<u8>(out_elems * vs)?;
    for (b, len) in [(&out_keys, ks), (&out_idx, is), (&out_vals, vs)] {
        gpu.fill_bytes(b, 0xA5, out_elems * len)?;
    }

    run.launch(
        "init",
        grid(n)?,
        Args::new()
            .i64(n as i64)
            .ptr(gpu.ptr(&d_lens))
            .ptr(gpu.ptr(&d_kk))
            .ptr(gpu.ptr(&prefix))
            .ptr(gpu.ptr(&remaining))
            .ptr(gpu.ptr(&ties))
            .ptr(gpu.ptr(&shift))
            .ptr(gpu.ptr(&done)),
    )?;
    if nt > 0 {
        let tiles_shape = LaunchShape::linear(
            u32::try_from(nt)
                .map_err(|_| Error::unsupported(format!("{nt} tiles exceed the grid")))?,
            BLOCK,
        );
        for digit in (0..K::BITS as i32).step_by(8).rev() {
            run.launch(
                "hist",
                tiles_shape,
                Args::new()
                    .ptr(gpu.ptr(&d_keys))
                    .ptr(gpu.ptr(&d_tseg))
                    .ptr(gpu.ptr(&d_tst))
                    .ptr(gpu.ptr(&d_ten))
                    .ptr(gpu.ptr(&prefix))
                    .ptr(gpu.ptr(&done))
                    .ptr(gpu.ptr(&ghist))
                    .i32(digit)
                    .i32(largest),
            )?;
            run.launch(
                "pick",
                grid(n)?,
                Args::new()
                    .i64(n as i64)
                    .ptr(gpu.ptr(&ghist))
                    .ptr(gpu.ptr(&prefix))
                    .ptr(gpu.ptr(&remaining))
                    .ptr(gpu.ptr(&ties))
                    .ptr(gpu.ptr(&shift))
                    .ptr(gpu.ptr(&done))
                    .i32(digit),
            )?;
        }
        run.launch(
            "count",
            tiles_shape,
            Args::new()
                .ptr(gpu.ptr(&d_keys))
                .ptr(gpu.ptr(&d_tseg))
                .ptr(gpu.ptr(&d_tst))
                .ptr(gpu.ptr(&d_ten))
                .ptr(gpu.ptr(&prefix))
                .ptr(gpu.ptr(&shift))
                .ptr(gpu.ptr(&tile_gt))
                .ptr(gpu.ptr(&tile_tie))
                .i32(largest),
        )?;
    }
    run.launch(
        "scan",
        grid(n)?,
        Args::new()
            .i64(n as i64)
            .ptr(gpu.ptr(&d_tptr))
            .ptr(gpu.ptr(&remaining))
            .ptr(gpu.ptr(&ties))
            .ptr(gpu.ptr(&tile_gt))
            .ptr(gpu.ptr(&tile_tie))
            .ptr(gpu.ptr(&tile_out))
            .ptr(gpu.ptr(&tile_rank))
            .ptr(gpu.ptr(&lo))
            .i32((req.tie() == TieBreak::LargerIndex) as i32),
    )?;
    // Sorted rows that fit are written to scratch, sorted, and gathered into the outputs.
    let (w_keys, w_idx, w_vals) = if sorted_here {
        (
            gpu.alloc_zeroed::<u8>(out_elems * ks)?,
            gpu.alloc_zeroed::<u8>(out_elems * is)?,
            gpu.alloc_zeroed::<u8>(out_elems * vs)?,
        )
    } else {
        (
            gpu.alloc_zeroed::<u8>(0)?,
            gpu.alloc_zeroed::<u8>(0)?,
            gpu.alloc_zeroed::<u8>(0)?,
        )
    };
    let (tk, ti, tv) = if sorted_here {
        (&w_keys, &w_idx, &w_vals)
    } else {
        (&out_keys, &out_idx, &out_vals)
    };
    if nt > 0 {
        run.launch(
            &format!("write_v{vs}"),
            LaunchShape::linear(nt as u32, BLOCK),
            Args::new()
                .ptr(gpu.ptr(&d_keys))
                .ptr(gpu.ptr(&d_vals))
                .ptr(gpu.ptr(&d_tseg))
                .ptr(gpu.ptr(&d_tst))
                .ptr(gpu.ptr(&d_ten))
                .ptr(gpu.ptr(&d_start))
                .ptr(gpu.ptr(&prefix))
                .ptr(gpu.ptr(&shift))
                .ptr(gpu.ptr(&remaining))
                .ptr(gpu.ptr(&lo))
                .ptr(gpu.ptr(&tile_out))
                .ptr(gpu.ptr(&tile_rank))
                .ptr(gpu.ptr(tk))
                .ptr(gpu.ptr(ti))
                .ptr(gpu.ptr(tv))
                .i64(w as i64)
                .i32(idx64)
                .i32(largest),
        )?;
    }
    if sorted_here {
        let pw = w.next_power_of_two();
        let perm = gpu.alloc_zeroed::<i32>(out_elems)?;
        run.launch(
            "sort",
            LaunchShape::linear(n as u32, BLOCK).with_smem((pw * 12) as u32),
            Args::new()
                .ptr(gpu.ptr(&w_keys))
                .ptr(gpu.ptr(&d_kk))
                .i64(w as i64)
                .i32(pw as i32)
                .i32(largest)
                .ptr(gpu.ptr(&perm)),
        )?;
        run.launch(
            &format!("gather_v{vs}"),
            grid(out_elems)?,
            Args::new()
                .ptr(gpu.ptr(&w_keys))
                .ptr(gpu.ptr(&w_idx))
                .ptr(gpu.ptr(&w_vals))
                .ptr(gpu.ptr(&perm))
                .ptr(gpu.ptr(&d_kk))
                .i64(n as i64)
                .i64(w as i64)
                .ptr(gpu.ptr(&out_keys))
                .ptr(gpu.ptr(&out_idx))
                .ptr(gpu.ptr(&out_vals))
                .i32(idx64),
        )?;
    }
    let pad_bits = padding::<K>(req.is_largest()).to_bits();
    run.launch(
        "pad",
        grid(out_elems)?,
        Args::new()
            .i64(n as i64)
            .i64(w as i64)
            .ptr(gpu.ptr(&d_kk))
            .i64(pad_bits as i64)
            .ptr(gpu.ptr(&out_keys))
            .ptr(gpu.ptr(&out_idx))
            .ptr(gpu.ptr(&out_vals))
            .i32(vs as i32)
            .i32(idx64),
    )?;
    let keys_out: Vec<K> = from_bytes(&gpu.download(&out_keys, out_elems * ks)?);
    let idx_bytes = gpu.download(&out_idx, out_elems * is)?;
    let mut indices = if idx64 == 1 {
        Indices::I64(from_bytes(&idx_bytes))
    } else {
        Indices::I32(from_bytes(&idx_bytes))
    };
    let vals_out: Option<Vec<V>> = match values {
        Some(_) => Some(from_bytes(&gpu.download(&out_vals, out_elems * vs)?)),
        None => None,
    };
    let mut out = TopKOutput {
        width: w,
        keys: keys_out,
        indices: Indices::I64(Vec::new()),
        values: vals_out,
        counts: layout.kk.clone(),
    };
    if req.is_sorted() && !sorted_here {
        sort_rows_on_host(req, &mut out, &mut indices, layout);
    }
    out.indices = indices;
    Ok(out)
}

/// Sorts each row's first kk entries by (key order, position), for rows too wide for the GPU
/// sort.
fn sort_rows_on_host<K: Key, V: Key>(
    req: &TopK,
    out: &mut TopKOutput<K, V>,
    idx: &mut Indices,
    layout: &Layout,
) {
    let w = out.width;
    for s in 0..layout.count() {
        let n = layout.kk[s] as usize;
        let base = s * w;
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_unstable_by_key(|&j| {
            (
                std::cmp::Reverse(directed(out.keys[base + j], req.is_largest())),
                idx.get(base + j),
            )
        });
        let k: Vec<K> = order.iter().map(|&j| out.keys[base + j]).collect();
        out.keys[base..base + n].copy_from_slice(&k);
        match idx {
            Indices::I32(v) => {
                let x: Vec<i32> = order.iter().map(|&j| v[base + j]).collect();
                v[base..base + n].copy_from_slice(&x);
            }
            Indices::I64(v) => {
                let x: Vec<i64> = order.iter().map(|&j| v[base + j]).collect();
                v[base..base + n].copy_from_slice(&x);
            }
        }
        if let Some(vals) = out.values.as_mut() {
            let x: Vec<V> = order.iter().map(|&j| vals[base + j]).collect();
            vals[base..base + n].copy_from_slice(&x);
        }
    }
}
