//! Bad input across the commands: each answered with one readable line naming what is wrong.

use sparrow::matrix::gen;
use sparrow::matrix::io;

use super::{failure, s, sparrow, tmp};

#[test]
fn bad_inputs_give_one_line_errors() {
    let a = gen::banded::<f32>(20, 3, 1).unwrap();
    let (pa, pb, pout) = (tmp("ba.npz"), tmp("bb.npy"), tmp("bout.npy"));
    io::write_npz_csr(&pa, &a).unwrap();
    io::write_dense(&pb, &gen::dense::<f32>(19, 2, 2, 1).unwrap()).unwrap();
    let e = failure(&sparrow(&[
        "spmm",
        "--device",
        "cpu",
        "--a",
        s(&pa),
        "--b",
        s(&pb),
        "--out",
        s(&pout),
    ]));
    assert_eq!(
        e,
        "error: invalid argument `--b`: has 19 rows but A has 20 columns"
    );

    io::write_dense(&pb, &gen::dense::<f32>(20, 2, 2, 1).unwrap()).unwrap();
    let e = failure(&sparrow(&[
        "spmm",
        "--device",
        "cpu",
        "--a",
        s(&pa),
        "--b",
        s(&pb),
        "--beta",
        "1",
        "--out",
        s(&pout),
    ]));
    assert_eq!(
        e,
        "error: invalid argument `--c`: beta is 1, so --c must be given"
    );

    let e = failure(&sparrow(&[
        "spmm",
        "--device",
        "cpu",
        "--a",
        "/nonexistent/a.npz",
        "--b",
        s(&pb),
        "--out",
        s(&pout),
    ]));
    assert!(e.starts_with("error: /nonexistent/a.npz: "), "{e}");

    io::write_dense(&pb, &gen::dense::<f64>(20, 2, 2, 1).unwrap()).unwrap();
    let e = failure(&sparrow(&[
        "spmm",
        "--device",
        "cpu",
        "--a",
        s(&pa),
        "--b",
        s(&pb),
        "--dtype",
        "f32",
        "--out",
        s(&pout),
    ]));
    assert_eq!(
        e,
        format!(
            "error: {}: the array holds float64; reading it as float32 would round it",
            s(&pb)
        )
    );

    let e = failure(&sparrow(&[
        "spmm",
        "--device",
        "gpu",
        "--a",
        s(&pa),
        "--b",
        s(&pb),
        "--out",
        s(&pout),
    ]));
    assert_eq!(
        e,
        "error: invalid argument `--device`: \"gpu\" is not one of auto, cpu, cuda, cuda:N"
    );

    let e = failure(&sparrow(&["bench", "spmm", "--matrix", "nope"]));
    assert_eq!(e, "error: invalid argument `--matrix`: unknown matrix \"nope\"; choose from powerlaw, banded, empty90, blockdiag, uniform, longrows, stencil2d, stencil3d, fem, powerlaw-small or all");

    let e = failure(&sparrow(&["bench", "topk", "--cold"]));
    assert_eq!(
        e,
        "error: invalid argument `--cold`: applies to bench spmm and spmv, not topk"
    );

    // bench topk checks its key types, patterns and tie-breaks before it looks for a GPU.
    let e = failure(&sparrow(&["bench", "topk", "--pattern", "uniform,nope"]));
    assert_eq!(e, "error: invalid argument `--pattern`: unknown pattern \"nope\"; choose from uniform, all-equal, two-values, heavy-ties, ascending, shared-high-bits");
    let e = failure(&sparrow(&["bench", "topk", "--dtype", "f64"]));
    assert_eq!(
        e,
        "error: invalid argument `--dtype`: bench topk times f32 or bf16 keys, not \"f64\""
    );
    let e = failure(&sparrow(&["bench", "topk", "--tie-break", "first"]));
    assert_eq!(
        e,
        "error: invalid argument `--tie-break`: \"first\" is not fast, smaller-index or larger-index"
    );

    // bench analysis needs no GPU, and refuses the GPU comparison's options.
    let e = failure(&sparrow(&["bench", "analysis", "--plot", "x.svg"]));
    assert_eq!(
        e,
        "error: invalid argument `--plot`: applies to bench spmm and spmv, not analysis"
    );
    let e = failure(&sparrow(&["bench", "analysis", "--n", "8"]));
    assert_eq!(
        e,
        "error: invalid argument `--n`: applies to bench spmm and spmv, not analysis"
    );
    let e = failure(&sparrow(&["bench", "analysis", "--dtype", "f16"]));
    assert_eq!(
        e,
        "error: invalid argument `--dtype`: \"f16\" is not f32 or f64"
    );
    let e = failure(&sparrow(&["bench", "nope"]));
    assert_eq!(
        e,
        "error: invalid argument `op`: \"nope\" is not spmm, spmv, topk, cs, seacells or analysis"
    );

    // info --kernels checks its filter before it compiles anything (or needs libnvrtc).
    let e = failure(&sparrow(&[
        "info",
        "--kernels",
        "sm_90",
        "--filter",
        "topk_nope",
    ]));
    assert_eq!(
        e,
        "error: invalid argument `--filter`: no kernel entry point contains \"topk_nope\""
    );
}
