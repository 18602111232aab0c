#!/usr/bin/env python3
"""Hashes the outputs of every CLI command on a fixed input set.

A refactor that claims to change no result runs this with the binary before and after it, on
the CPU and on the GPU, and compares the two listings line by line:

    python3 scripts/cli_hashes.py --sparrow OLD/sparrow --device cpu --out before-cpu.txt
    python3 scripts/cli_hashes.py --sparrow NEW/sparrow --device cpu --out after-cpu.txt
    diff before-cpu.txt after-cpu.txt

The inputs are written with the standard library only (Python's seeded `random`, whose stream is
fixed across versions), so the script needs no numpy and gives the same files on every host.
Each line is `name sha256` over the output files a command writes; summary.json, phase-transition
JSON and stdout are left out because they carry timings. A failed command is a line too.
"""

import argparse
import hashlib
import io
import os
import random
import struct
import subprocess
import sys
import tempfile
import zipfile


def npy_bytes(values, dtype, shape):
    codes = {"<f8": "d", "<f4": "f", "<i8": "q", "<i4": "i", "<u2": "H"}
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        dtype,
        ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else ""),
    )
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    body = struct.pack("<%d%s" % (len(values), codes[dtype]), *values)
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + body


def write_npy(path, values, dtype, shape):
    with open(path, "wb") as f:
        f.write(npy_bytes(values, dtype, shape))


def write_csr_npz(path, rows, cols, entries, dtype):
    """entries: {row: [(col, value), ...]} with sorted columns."""
    indptr, indices, data = [0], [], []
    for r in range(rows):
        for c, v in entries.get(r, []):
            indices.append(c)
            data.append(v)
        indptr.append(len(indices))
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("indptr.npy", npy_bytes(indptr, "<i4", [len(indptr)]))
        z.writestr("indices.npy", npy_bytes(indices, "<i4", [len(indices)]))
        z.writestr("data.npy", npy_bytes(data, dtype, [len(data)]))
        z.writestr("shape.npy", npy_bytes([rows, cols], "<i8", [2]))
        z.writestr("format.npy", b"\x93NUMPY\x01\x00" + _str_header())


def _str_header():
    header = "{'descr': '<U3', 'fortran_order': False, 'shape': (), }"
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    return struct.pack("<H", len(header)) + header.encode() + "csr".encode("utf-32-le")


def random_csr(rng, rows, cols, per_row):
    entries = {}
    for r in range(rows):
        n = rng.randint(0, 2 * per_row)
        if r % 97 == 0:
            n = min(cols, 40 * per_row)  # a few long rows
        picked = sorted(rng.sample(range(cols), n))
        entries[r] = [(c, rng.uniform(-1, 1)) for c in picked]
    return entries


def make_inputs(d, data_dir):
    rng = random.Random(20261205)
    m, n, nb = 2000, 1500, 16
    a = random_csr(rng, m, n, 6)
    write_csr_npz(f"{d}/a64.npz", m, n, a, "<f8")
    write_csr_npz(f"{d}/a32.npz", m, n, a, "<f4")
    write_npy(f"{d}/x.npy", [rng.gauss(0, 1) for _ in range(n)], "<f8", [n])
    write_npy(f"{d}/y.npy", [rng.gauss(0, 1) for _ in range(m)], "<f8", [m])
    write_npy(f"{d}/x32.npy", [rng.gauss(0, 1) for _ in range(n)], "<f4", [n])
    write_npy(f"{d}/b.npy", [rng.gauss(0, 1) for _ in range(n * nb)], "<f8", [n, nb])
    write_npy(f"{d}/c.npy", [rng.gauss(0, 1) for _ in range(m * nb)], "<f8", [m, nb])
    write_npy(f"{d}/b32.npy", [rng.gauss(0, 1) for _ in range(n * 64)], "<f4", [n, 64])

    # Top-k: ties, repeated values, signed zeros.
    segs, length = 64, 1000
    keys = [float(rng.randint(-50, 50)) * 0.5 for _ in range(segs * length)]
    keys[3] = -0.0
    keys[4] = 0.0
    write_npy(f"{d}/keys2d.npy", keys, "<f4", [segs, length])
    write_npy(f"{d}/keys64.npy", [rng.gauss(0, 1) for _ in range(segs * length)], "<f8", [segs, length])
    write_npy(f"{d}/keysi32.npy", [rng.randint(-1000, 1000) for _ in range(segs * length)], "<i4", [segs, length])
    write_npy(f"{d}/keysbf16.npy", [rng.randint(0x3f00, 0x4100) for _ in range(segs * length)], "<u2", [segs, length])
    flat = [rng.gauss(0, 1) for _ in range(50000)]
    write_npy(f"{d}/keys1d.npy", flat, "<f4", [len(flat)])
    offsets = sorted(rng.sample(range(1, len(flat)), 30))
    offsets = [0] + offsets + [len(flat)]
    write_npy(f"{d}/offsets.npy", offsets, "<i8", [len(offsets)])
    write_npy(f"{d}/kper.npy", [rng.randint(0, 40) for _ in range(len(offsets) - 1)], "<i8", [len(offsets) - 1])
    write_npy(f"{d}/vals1d.npy", [float(i) for i in range(len(flat))], "<f8", [len(flat)])
    write_npy(f"{d}/long.npy", [rng.random() for _ in range(4 * 200000)], "<f4", [4, 200000])

    # Compressed sensing: Y = Phi X with 8-sparse columns.
    cm, cn, cb, ck = 128, 512, 4, 8
    phi = [rng.gauss(0, 1) / cm ** 0.5 for _ in range(cm * cn)]
    write_npy(f"{d}/phi.npy", phi, "<f8", [cm, cn])
    xs = [0.0] * (cn * cb)
    for j in range(cb):
        for i in rng.sample(range(cn), ck):
            xs[i * cb + j] = rng.choice([-1.0, 1.0]) * (1 + rng.random())
    ys = [sum(phi[r * cn + i] * xs[i * cb + j] for i in range(cn)) for r in range(cm) for j in range(cb)]
    write_npy(f"{d}/ycs.npy", ys, "<f8", [cm, cb])
    write_npy(f"{d}/phi32.npy", phi, "<f4", [cm, cn])
    write_npy(f"{d}/ycs32.npy", ys, "<f4", [cm, cb])

    # Completion: rank 3, 100 x 80, 40% observed.
    u = [[rng.gauss(0, 1) for _ in range(3)] for _ in range(100)]
    v = [[rng.gauss(0, 1) for _ in range(3)] for _ in range(80)]
    obs = {}
    for r in range(100):
        cols = sorted(rng.sample(range(80), 32))
        obs[r] = [(c, sum(u[r][t] * v[c][t] for t in range(3))) for c in cols]
    write_csr_npz(f"{d}/observed.npz", 100, 80, obs, "<f8")

    # SEACells counts for the bundled embedding.
    cells = 700
    counts = random_csr(rng, cells, 200, 10)
    write_csr_npz(f"{d}/counts.npz", cells, 200, counts, "<f8")


def cases(d, data_dir):
    emb = f"{data_dir}/pbmc68k_reduced/X_pca.npy"
    labels = f"{data_dir}/pbmc68k_reduced/labels.txt"
    c = []
    for dt, a in (("f64", "a64"), ("f32", "a32")):
        c.append((f"spmv-{dt}", ["spmv", "--a", f"{d}/{a}.npz", "--x", f"{d}/x.npy"], ["out"]))
        c.append((f"spmv-beta-{dt}", ["spmv", "--a", f"{d}/{a}.npz", "--x", f"{d}/x.npy", "--y", f"{d}/y.npy",
                                       "--alpha", "0.5", "--beta", "-2"], ["out"]))
        c.append((f"spmm-{dt}", ["spmm", "--a", f"{d}/{a}.npz", "--b", f"{d}/b.npy"], ["out"]))
        c.append((f"spmm-beta-{dt}", ["spmm", "--a", f"{d}/{a}.npz", "--b", f"{d}/b.npy", "--c", f"{d}/c.npy",
                                       "--alpha", "2", "--beta", "0.25"], ["out"]))
    c.append(("spmv-f32-only", ["spmv", "--a", f"{d}/a32.npz", "--x", f"{d}/x32.npy"], ["out"]))
    c.append(("spmm-f32-64", ["spmm", "--a", f"{d}/a32.npz", "--b", f"{d}/b32.npy"], ["out"]))
    topk_outs = ["out-keys", "out-indices"]
    for tb in ("fast", "smaller-index", "larger-index"):
        c.append((f"topk-2d-{tb}", ["topk", "--keys", f"{d}/keys2d.npy", "-k", "37", "--tie-break", tb], topk_outs))
        c.append((f"topk-2d-sorted-smallest-{tb}", ["topk", "--keys", f"{d}/keys2d.npy", "-k", "200", "--sorted",
                                                     "--smallest", "--tie-break", tb], topk_outs))
    c.append(("topk-f64", ["topk", "--keys", f"{d}/keys64.npy", "-k", "10", "--sorted", "--tie-break", "smaller-index"], topk_outs))
    c.append(("topk-i32", ["topk", "--keys", f"{d}/keysi32.npy", "-k", "50", "--sorted", "--tie-break", "smaller-index",
                           "--index-type", "i32"], topk_outs))
    c.append(("topk-bf16", ["topk", "--keys", f"{d}/keysbf16.npy", "--key-type", "bf16", "-k", "16", "--sorted",
                            "--tie-break", "larger-index"], topk_outs))
    c.append(("topk-1d", ["topk", "--keys", f"{d}/keys1d.npy", "--offsets", f"{d}/offsets.npy", "-k", "25", "--sorted",
                          "--values", f"{d}/vals1d.npy"], topk_outs + ["out-values", "out-counts"]))
    c.append(("topk-kper", ["topk", "--keys", f"{d}/keys1d.npy", "--offsets", f"{d}/offsets.npy", "--k-per-segment",
                            f"{d}/kper.npy", "--sorted", "--tie-break", "smaller-index"], topk_outs + ["out-counts"]))
    c.append(("topk-long", ["topk", "--keys", f"{d}/long.npy", "-k", "2048", "--sorted", "--tie-break", "smaller-index"], topk_outs))
    for method in ("iht", "niht", "htp", "cosamp", "sp", "omp"):
        c.append((f"recover-{method}", ["recover", "--phi", f"{d}/phi.npy", "--y", f"{d}/ycs.npy", "--method", method,
                                        "--sparsity", "8"], ["out"]))
    c.append(("recover-cosamp-f32", ["recover", "--phi", f"{d}/phi32.npy", "--y", f"{d}/ycs32.npy", "--method", "cosamp",
                                     "--sparsity", "8"], ["out"]))
    c.append(("recover-amp", ["recover", "--phi", f"{d}/phi.npy", "--y", f"{d}/ycs.npy", "--method", "amp"], ["out"]))
    c.append(("recover-fista", ["recover", "--phi", f"{d}/phi.npy", "--y", f"{d}/ycs.npy", "--method", "fista",
                                "--lambda", "0.01", "--max-iter", "200"], ["out"]))
    c.append(("complete", ["complete", "--observed", f"{d}/observed.npz", "--rank-hint", "5", "--max-iter", "200"], ["out"]))
    c.append(("seacells", ["seacells", "--embedding", emb, "--n-metacells", "24", "--labels", labels,
                           "--counts", f"{d}/counts.npz"], ["out-dir"]))
    return c


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sparrow", required=True)
    p.add_argument("--device", default="cpu")
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--data", default=os.environ.get("SPARROW_DATA", os.path.join(here, "..", "data")),
                   help="the repository's data/ folder (default $SPARROW_DATA, else ../data)")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        make_inputs(d, args.data)
        lines = []
        for name, argv, outs in cases(d, args.data):
            work = os.path.join(d, "run-" + name)
            os.mkdir(work)
            cmd = [args.sparrow, "--device", args.device] + argv
            paths = []
            for o in outs:
                path = os.path.join(work, o if o == "out-dir" else o + ".npy")
                cmd += ["--" + o, path]
                paths.append(path)
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                lines.append(f"{name} FAILED rc={r.returncode} {r.stderr.strip().splitlines()[-1:]}")
                continue
            h = hashlib.sha256()
            for path in paths:
                files = [path] if os.path.isfile(path) else sorted(
                    os.path.join(path, f) for f in os.listdir(path) if f != "summary.json")
                for f in files:
                    h.update(os.path.basename(f).encode())
                    with open(f, "rb") as fh:
                        h.update(fh.read())
            lines.append(f"{name} {h.hexdigest()}")
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
        print("\n".join(lines))
        failed = sum(" FAILED " in l for l in lines)
        print(f"{len(lines)} commands, {failed} failed", file=sys.stderr)


if __name__ == "__main__":
    main()
