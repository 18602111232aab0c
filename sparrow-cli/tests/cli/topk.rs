//! `topk` from files on the CPU: outputs against the library, offsets, overlapping outputs and
//! bf16 keys.

use sparrow::matrix::io;

use super::{failure, s, sparrow, tmp};

#[test]
fn topk_from_files() {
    use sparrow::ops::topk::data::{keys, Pattern};
    let k: Vec<f32> = keys(6 * 50, Pattern::HeavyTies, 3);
    let (pk, po, pi, pv, pov, pc) = (
        tmp("tk.npy"),
        tmp("tko.npy"),
        tmp("tki.npy"),
        tmp("tkv.npy"),
        tmp("tkov.npy"),
        tmp("tkc.npy"),
    );
    io::write_npy(&pk, &[6, 50], &k).unwrap();
    let vals: Vec<i16> = (0..300).map(|x| x as i16 - 150).collect();
    io::write_npy(&pv, &[300], &vals).unwrap();
    let out = sparrow(&[
        "topk",
        "--device",
        "cpu",
        "--keys",
        s(&pk),
        "-k",
        "7",
        "--sorted",
        "--tie-break",
        "larger-index",
        "--values",
        s(&pv),
        "--out-values",
        s(&pov),
        "--out-keys",
        s(&po),
        "--out-indices",
        s(&pi),
        "--out-counts",
        s(&pc),
        "--index-type",
        "i32",
    ]);
    assert!(out.status.success(), "{out:?}");
    let req = sparrow::ops::topk::TopK::largest(7)
        .sorted(true)
        .tie_break(sparrow::ops::topk::TieBreak::LargerIndex);
    let (want, _) = req
        .run(
            &sparrow::Device::Cpu,
            &k,
            sparrow::ops::topk::Segments::Fixed { count: 6, len: 50 },
            Some(&vals),
        )
        .unwrap();
    let got_k = io::read_npy(&po).unwrap();
    assert_eq!(got_k.shape, vec![6, 7]);
    assert_eq!(got_k.data, io::NpyData::F32(want.keys.clone()));
    let got_i = io::read_npy(&pi).unwrap();
    assert_eq!(
        got_i.data,
        io::NpyData::I32((0..42).map(|e| want.indices.get(e) as i32).collect())
    );
    assert_eq!(
        io::read_npy(&pc).unwrap().data,
        io::NpyData::I64(vec![7; 6])
    );
    let raw = std::fs::read(&pov).unwrap();
    assert!(
        raw.windows(3).any(|w| w == b"<i2"),
        "values keep their dtype"
    );

    // 1-D keys need offsets; offsets must not run past the keys.
    io::write_npy(&pk, &[300], &k).unwrap();
    let e = failure(&sparrow(&[
        "topk",
        "--device",
        "cpu",
        "--keys",
        s(&pk),
        "-k",
        "3",
        "--out-keys",
        s(&po),
        "--out-indices",
        s(&pi),
    ]));
    assert_eq!(
        e,
        "error: invalid argument `--offsets`: 1-D keys need --offsets"
    );
    let pof = tmp("tkoff.npy");
    io::write_npy(&pof, &[3], &[0i64, 100, 301]).unwrap();
    // These keys and offsets, 3 per segment, with `more` arguments.
    let with_offsets = |more: &[&str]| {
        let mut args = vec![
            "topk",
            "--device",
            "cpu",
            "--keys",
            s(&pk),
            "--offsets",
            s(&pof),
            "-k",
            "3",
        ];
        args.extend_from_slice(more);
        failure(&sparrow(&args))
    };
    let outs = ["--out-keys", s(&po), "--out-indices", s(&pi)];
    assert_eq!(
        with_offsets(&outs),
        "error: invalid argument `--offsets`: offsets[2] = 301 is past the end of the 300 keys"
    );
    assert_eq!(
        with_offsets(&[&outs[..], &["--tie-break", "random"]].concat()),
        "error: invalid argument `--tie-break`: \"random\" is not fast, smaller-index or larger-index"
    );
    // Two outputs in one file, or an output over an input, would lose data: refused before
    // anything is read or written.
    let before = std::fs::read(&pk).unwrap();
    assert_eq!(
        with_offsets(&["--out-keys", s(&po), "--out-indices", s(&po)]),
        format!(
            "error: invalid argument `--out-indices`: {} is also --out-keys; give each output its own file",
            s(&po)
        )
    );
    assert_eq!(
        with_offsets(&[&outs[..], &["--out-counts", s(&pk)]].concat()),
        format!(
            "error: invalid argument `--out-counts`: {} is the --keys input; write the output elsewhere",
            s(&pk)
        )
    );
    assert_eq!(
        std::fs::read(&pk).unwrap(),
        before,
        "the keys are untouched"
    );
    // bf16 keys arrive as uint16.
    io::write_npy(
        &pk,
        &[2, 3],
        &[0x3f80u16, 0x4000, 0xbf80, 0x7fc0, 0x0000, 0x8000],
    )
    .unwrap();
    let out = sparrow(&[
        "topk",
        "--device",
        "cpu",
        "--keys",
        s(&pk),
        "--key-type",
        "bf16",
        "-k",
        "1",
        "--out-keys",
        s(&po),
        "--out-indices",
        s(&pi),
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        io::read_npy(&pi).unwrap().data,
        io::NpyData::I64(vec![1, 0]),
        "2.0 wins row 0, NaN wins row 1"
    );
}
