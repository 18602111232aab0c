#!/usr/bin/env python3
"""Compares the machine code of two kernel caches section by section.

A refactor of kernel sources that must not change any kernel (headers split, sizes passed as -D)
can be checked without a GPU: fill a cache with each build (`sparrow info --fill-cache sm_90`
with SPARROW_CACHE_DIR set) and run this on the two folders. For each module it reports the
`.text.*` sections (one per kernel) that differ and the other sections that differ; line tables
and the embedded PTX text move with the source lines and say nothing about the code.
"""
import glob
import os
import struct
import sys


def sections(path):
    b = open(path, "rb").read()
    (shoff,) = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize) for i in range(shnum)]
    names_at = hdrs[shstrndx][4]
    out = {}
    for h in hdrs:
        name = b[names_at + h[0] : b.index(b"\0", names_at + h[0])].decode()
        out[name] = b[h[4] : h[4] + h[5]] if h[1] != 8 else b""  # SHT_NOBITS has no bytes
    return out


def module(path):
    return os.path.basename(path).split("-sm_")[0]


def main(before, after):
    new = {module(p): p for p in glob.glob(os.path.join(after, "*.cubin"))}
    same = True
    for p in sorted(glob.glob(os.path.join(before, "*.cubin"))):
        m = module(p)
        if m not in new:
            print(f"{m}: not in {after}")
            same = False
            continue
        a, c = sections(p), sections(new[m])
        texts = [n for n in a if n.startswith(".text.")]
        code = [n for n in set(a) | set(c) if n.startswith(".text.") and a.get(n) != c.get(n)]
        other = sorted(n for n in set(a) | set(c) if not n.startswith(".text.") and a.get(n) != c.get(n))
        same &= not code
        print(f"{m}: {len(texts)} kernels, {len(code)} with other code; other sections differing: {', '.join(other) or 'none'}")
    print("machine code identical" if same else "machine code differs")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
