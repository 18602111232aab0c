//! A top-k over keys in the caller's memory, its buffers in the caller's workspace, captured
//! in a CUDA graph on the caller's stream: 100 replays over new keys must give the CPU
//! backend's outputs byte for byte, which holds only if a run allocates nothing, waits for
//! nothing on the host and reads nothing back (any of those fails or breaks the capture).

use cudarc::driver::{result, sys, CudaSlice};
use sparrow::matrix::Rng;
use sparrow::ops::topk::{DeviceTopK, Segments, TieBreak, TopK};
use sparrow::Device;

fn ptr<T>(g: &sparrow::Gpu, s: &CudaSlice<T>) -> u64 {
    g.ptr(s)
}

#[test]
fn device_topk_in_a_workspace_replays_in_a_captured_graph() {
    let g = crate::gpu();
    let stream = g.context().new_stream().expect("a stream of the caller's");
    let raw = stream.cu_stream();
    let mut rng = Rng::new(31);
    // The filter path (serving), the on-chip path and the split path; sorted and not.
    for (rows, len, k, sorted) in [
        (4usize, 163_840usize, 2_048usize, false),
        (64, 8_192, 256, true),
        (1, 1_500_000, 1_000, true),
    ] {
        let req = TopK::largest(k)
            .sorted(sorted)
            .tie_break(TieBreak::SmallerIndex);
        let bytes = req.workspace_bytes::<f32>(&g, rows, len).unwrap();
        assert!(bytes > 0);
        let keys: CudaSlice<f32> = stream.alloc_zeros(rows * len).unwrap();
        let out_keys: CudaSlice<f32> = stream.alloc_zeros(rows * k).unwrap();
        let out_idx: CudaSlice<i64> = stream.alloc_zeros(rows * k).unwrap();
        let ws: CudaSlice<u8> = stream.alloc_zeros(bytes).unwrap();
        stream.synchronize().unwrap();
        // SAFETY: the workspace is this test's, idle, and outlives the plan.
        let mut plan =
            unsafe { DeviceTopK::<f32>::with_workspace(&g, &req, rows, len, ptr(&g, &ws), bytes) }
                .unwrap();
        // A workspace one byte short is refused.
        assert!(unsafe {
            DeviceTopK::<f32>::with_workspace(&g, &req, rows, len, ptr(&g, &ws), bytes - 1)
        }
        .is_err());
        let (pk, po, pi) = (ptr(&g, &keys), ptr(&g, &out_keys), ptr(&g, &out_idx));
        let fresh = |rng: &mut Rng| -> Vec<f32> {
            (0..rows * len).map(|_| rng.below(1000) as f32).collect()
        };
        // A warm run, then the capture (nothing runs while capturing).
        let host = fresh(&mut rng);
        unsafe {
            result::memcpy_htod_async(pk, &host, raw).unwrap();
            plan.run(pk, po, pi, raw as usize).unwrap();
            result::stream::begin_capture(
                raw,
                sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
            )
            .unwrap();
            plan.run(pk, po, pi, raw as usize).unwrap();
        }
        let graph = unsafe { result::stream::end_capture(raw) }.unwrap();
        let exec =
            unsafe { result::graph::instantiate(graph, sys::CUgraphInstantiate_flags(0)) }.unwrap();
        for rep in 0..100 {
            let host = fresh(&mut rng);
            unsafe {
                result::memcpy_htod_async(pk, &host, raw).unwrap();
                result::graph::launch(exec, raw).unwrap();
            }
            stream.synchronize().unwrap();
            let got_keys = stream.clone_dtoh(&out_keys).unwrap();
            let got_idx = stream.clone_dtoh(&out_idx).unwrap();
            let (want, _) = req
                .run_keys(&Device::Cpu, &host, Segments::Fixed { count: rows, len })
                .unwrap();
            let want_idx: Vec<i64> = (0..want.indices.len())
                .map(|i| want.indices.get(i))
                .collect();
            assert_eq!(got_idx, want_idx, "{rows} x {len}, k {k}: replay {rep}");
            assert_eq!(
                got_keys.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                want.keys.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            );
        }
        unsafe {
            result::graph::exec_destroy(exec).unwrap();
            result::graph::destroy(graph).unwrap();
        }
    }
}
