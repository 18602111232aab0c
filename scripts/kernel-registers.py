#!/usr/bin/env python3
"""Registers, spills and shared memory of each kernel, as ptxas reports them inside NVRTC.

Needs only libnvrtc (the CI's wheel is enough), no GPU: a change that raises a kernel's
register count lowers its occupancy, and that shows here before any timing. For example, the
f32 top-k module's warp kernel:

    LD_LIBRARY_PATH=$HOME/.cache/sparrow-ci/nvrtc-13.0.88/nvidia/cu13/lib \\
      python3 scripts/kernel-registers.py sparrow/src/kernels/topk.cu --filter topk_warp \\
      -DTOPK_U=u32 -DTOPK_KIND=0 -DTOPK_INF=0x7f800000ull -DTOPK_NAME=f32

The -D options are a module's `options` in sparrow/src/kernels/mod.rs; the other options are
those of `nvrtc_options` in sparrow/src/device/compile.rs.
"""

import argparse
import ctypes
import ctypes.util
import os
import re
import sys


def load_nvrtc():
    for name in ("libnvrtc.so.13", "libnvrtc.so", ctypes.util.find_library("nvrtc")):
        if not name:
            continue
        try:
            return ctypes.CDLL(name)
        except OSError:
            pass
    sys.exit("kernel-registers: libnvrtc was not found; add its folder to LD_LIBRARY_PATH")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", help="a .cu file of sparrow/src/kernels")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--filter", default="", help="only kernels whose name contains this")
    args, defines = ap.parse_known_args()
    bad = [d for d in defines if not d.startswith("-D")]
    if bad:
        sys.exit(f"kernel-registers: unknown arguments {bad} (only -DNAME=VALUE passes through)")

    lib = load_nvrtc()
    src_dir = os.path.dirname(os.path.abspath(args.source))
    with open(args.source, "rb") as f:
        src = f.read()
    headers = [n for n in os.listdir(src_dir) if n.endswith(".cuh")]
    hdr_src = [open(os.path.join(src_dir, n), "rb").read() for n in headers]
    prog = ctypes.c_void_p()
    n = len(headers)
    r = lib.nvrtcCreateProgram(
        ctypes.byref(prog),
        src,
        os.path.basename(args.source).encode(),
        n,
        (ctypes.c_char_p * n)(*hdr_src),
        (ctypes.c_char_p * n)(*[h.encode() for h in headers]),
    )
    if r != 0:
        sys.exit(f"kernel-registers: nvrtcCreateProgram failed ({r})")
    opts = [
        f"--gpu-architecture={args.arch}",
        "-std=c++17",
        "-lineinfo",
        "-default-device",
        "-Xptxas=-v",
    ] + defines
    r = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts]))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    buf = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, buf)
    log = buf.value.decode(errors="replace")
    if r != 0:
        sys.exit(f"kernel-registers: compilation failed ({r}):\n{log}")

    # ptxas prints, per entry: "Compiling entry function 'NAME'", a stack/spill line and a
    # "Used N registers" line.
    rows, name, spill = [], None, ""
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            name, spill = m.group(1), ""
            continue
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and name:
            spill = f"{m.group(1)}/{m.group(2)}"
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and name:
            smem = re.search(r"(\d+) bytes smem", line)
            if args.filter in name:
                rows.append((name, int(m.group(1)), spill, int(smem.group(1)) if smem else 0))
            name = None
    if not rows:
        sys.exit(f"kernel-registers: no kernel matched {args.filter!r}")
    width = max(len(r[0]) for r in rows)
    print(f"{'kernel':<{width}}  registers  spill st/ld B  static smem B")
    for k, regs, sp, smem in rows:
        print(f"{k:<{width}}  {regs:>9}  {sp:>13}  {smem:>13}")


if __name__ == "__main__":
    main()
