//! The launches of the multi-kernel paths: the filter (threshold, filter, candidates) and the
//! tiled radix passes.

use cudarc::driver::CudaSlice;

use super::*;

impl<K: Key, V: Key> GpuTopK<'_, K, V> {
    /// The filter path: thresholds from samples, one filtering pass, selection among the
    /// candidates (or from memory, per segment, when they cannot hold the answer).
    pub(super) fn filter(
        &self,
        run: &Run,
        b: &Buffers,
        tk: &CudaSlice<u8>,
        ti: &CudaSlice<u8>,
    ) -> Result<()> {
        let gpu = self.gpu;
        let (n, w) = (self.layout.count(), self.layout.width);
        let (largest, idx64, larger) = flags(&self.req);
        let ordered = ordered(&self.req);
        let (thresh, threads) = thresh_kernel(n, gpu.limits());
        // The three kernels launch as programmatic dependents (each waits for the one before
        // it first thing), so each launch overlaps the previous kernel's last wave.
        run.launch(
            thresh,
            per_segment_of(n, 0, threads)?.dependent(),
            Args::new()
                .ptr(self.keys_ptr(b))
                .ptr(gpu.ptr(&b.start))
                .ptr(gpu.ptr(&b.lens))
                .ptr(gpu.ptr(&b.kk))
                .ptr(gpu.ptr(&b.thresh))
                .ptr(gpu.ptr(&b.count_eq))
                .i32(largest),
        )?;
        if b.nt > 0 {
            let staged = filter_staging::<K>(&self.req, b.nt, gpu.limits());
            let (name, shape) = match staged {
                Some(f) => (
                    "filter_tma",
                    LaunchShape::linear(f.blocks as u32, FT_THREADS).with_smem(f.smem() as u32),
                ),
                None => ("filter", tiles_shape(filter_blocks(b.nt, gpu.limits()))?),
            };
            let shape = shape.dependent();
            let mut args = Args::new();
            args.ptr(self.keys_ptr(b))
                .ptr(gpu.ptr(&b.tseg))
                .ptr(gpu.ptr(&b.tst))
                .ptr(gpu.ptr(&b.ten))
                .ptr(gpu.ptr(&b.thresh))
                .i64(b.nt as i64)
                .i32(b.filter.ct as i32)
                .ptr(gpu.ptr(&b.count_eq))
                .ptr(gpu.ptr(&b.cand_key))
                .ptr(gpu.ptr(&b.cand_off))
                .ptr(gpu.ptr(&b.tile_cnt))
                .ptr(gpu.ptr(&b.tile_eq))
                .i32(largest);
            if let Some(f) = staged {
                args.i32(f.stages as i32)
                    .i32(f.stage_bytes as i32)
                    .i32(ordered);
            }
            run.launch(name, shape, &mut args)?;
        }
        let (cand, cand_bytes) = cand_kernel::<K>(n, b.filter.cap, gpu.limits());
        run.launch(
            cand,
            per_segment_of(n, b.filter.cap * cand_bytes, threads)?.dependent(),
            Args::new()
                .ptr(self.keys_ptr(b))
                .ptr(gpu.ptr(&b.start))
                .ptr(gpu.ptr(&b.lens))
                .ptr(gpu.ptr(&b.kk))
                .ptr(gpu.ptr(&b.tptr))
                .ptr(gpu.ptr(&b.tst))
                .ptr(gpu.ptr(&b.tile_cnt))
                .ptr(gpu.ptr(&b.tile_eq))
                .ptr(gpu.ptr(&b.thresh))
                .ptr(gpu.ptr(&b.cand_key))
                .ptr(gpu.ptr(&b.cand_off))
                .i32(b.filter.ct as i32)
                .i32(b.filter.cap as i32)
                .ptr(gpu.ptr(tk))
                .ptr(gpu.ptr(ti))
                .i64(w as i64)
                .i32(idx64)
                .i32(largest)
                .i32(larger)
                .i32(ordered),
        )
    }

    /// The tiled path: digit passes over memory, counts, bases, the ordered write.
    pub(super) fn tiled(
        &self,
        run: &Run,
        b: &Buffers,
        tk: &CudaSlice<u8>,
        ti: &CudaSlice<u8>,
    ) -> Result<()> {
        let gpu = self.gpu;
        let (n, w, nt) = (self.layout.count(), self.layout.width, b.nt);
        let (largest, idx64, larger) = flags(&self.req);
        run.launch(
            "init",
            grid(n)?,
            Args::new()
                .i64(n as i64)
                .ptr(gpu.ptr(&b.lens))
                .ptr(gpu.ptr(&b.kk))
                .ptr(gpu.ptr(&b.prefix))
                .ptr(gpu.ptr(&b.remaining))
                .ptr(gpu.ptr(&b.ties))
                .ptr(gpu.ptr(&b.shift))
                .ptr(gpu.ptr(&b.done)),
        )?;
        let tiles_shape = tiles_shape(nt)?;
        if nt > 0 {
            for digit in (0..K::BITS as i32).step_by(8).rev() {
                run.launch(
                    "hist",
                    tiles_shape,
                    Args::new()
                        .ptr(self.keys_ptr(b))
                        .ptr(gpu.ptr(&b.tseg))
                        .ptr(gpu.ptr(&b.tst))
                        .ptr(gpu.ptr(&b.ten))
                        .ptr(gpu.ptr(&b.prefix))
                        .ptr(gpu.ptr(&b.done))
                        .ptr(gpu.ptr(&b.ghist))
                        .i32(digit)
                        .i32(largest),
                )?;
                run.launch(
                    "pick",
                    grid(n)?,
                    Args::new()
                        .i64(n as i64)
                        .ptr(gpu.ptr(&b.ghist))
                        .ptr(gpu.ptr(&b.prefix))
                        .ptr(gpu.ptr(&b.remaining))
                        .ptr(gpu.ptr(&b.ties))
                        .ptr(gpu.ptr(&b.shift))
                        .ptr(gpu.ptr(&b.done))
                        .i32(digit),
                )?;
            }
            run.launch(
                "count",
                tiles_shape,
                Args::new()
                    .ptr(self.keys_ptr(b))
                    .ptr(gpu.ptr(&b.tseg))
                    .ptr(gpu.ptr(&b.tst))
                    .ptr(gpu.ptr(&b.ten))
                    .ptr(gpu.ptr(&b.prefix))
                    .ptr(gpu.ptr(&b.shift))
                    .ptr(gpu.ptr(&b.tile_gt))
                    .ptr(gpu.ptr(&b.tile_tie))
                    .i32(largest),
            )?;
        }
        run.launch(
            "scan",
            grid(n)?,
            Args::new()
                .i64(n as i64)
                .ptr(gpu.ptr(&b.tptr))
                .ptr(gpu.ptr(&b.remaining))
                .ptr(gpu.ptr(&b.ties))
                .ptr(gpu.ptr(&b.tile_gt))
                .ptr(gpu.ptr(&b.tile_tie))
                .ptr(gpu.ptr(&b.tile_out))
                .ptr(gpu.ptr(&b.tile_rank))
                .ptr(gpu.ptr(&b.lo))
                .i32(larger),
        )?;
        if nt > 0 {
            run.launch(
                "write",
                tiles_shape,
                Args::new()
                    .ptr(self.keys_ptr(b))
                    .ptr(gpu.ptr(&b.tseg))
                    .ptr(gpu.ptr(&b.tst))
                    .ptr(gpu.ptr(&b.ten))
                    .ptr(gpu.ptr(&b.start))
                    .ptr(gpu.ptr(&b.prefix))
                    .ptr(gpu.ptr(&b.shift))
                    .ptr(gpu.ptr(&b.remaining))
                    .ptr(gpu.ptr(&b.lo))
                    .ptr(gpu.ptr(&b.tile_out))
                    .ptr(gpu.ptr(&b.tile_rank))
                    .ptr(gpu.ptr(tk))
                    .ptr(gpu.ptr(ti))
                    .i64(w as i64)
                    .i32(idx64)
                    .i32(largest),
            )?;
        }
        Ok(())
    }
}
