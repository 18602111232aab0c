#!/usr/bin/env python3
"""Compares two `sparrow bench ... --jsonl` files case by case: the new build's median time over
the old one's, for sparrow's own records (baselines are ignored). A case is slower when the ratio
exceeds 1 + --tolerance; the exit status is 1 if any case is.

    python3 scripts/ab_compare.py before.jsonl after.jsonl [--tolerance 0.03]
"""
import argparse
import json
import math
import sys

# Fields that name a case; whichever a record carries are used.
KEY_FIELDS = ("op", "matrix", "nrows", "ncols", "nnz", "n", "dtype", "key_type", "distribution",
              "tie_break", "segment_len", "k", "segments", "cells", "dims", "metacells")


def cases(path):
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            if r.get("backend", "sparrow") != "sparrow":
                continue
            key = tuple((k, r[k]) for k in KEY_FIELDS if k in r)
            t = r.get("median_ms", r.get("seconds"))
            if t is None:
                continue
            if key in out:
                sys.exit(f"{path}: two records for case {dict(key)}")
            out[key] = t
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--tolerance", type=float, default=0.03)
    a = ap.parse_args()
    before, after = cases(a.before), cases(a.after)
    missing = sorted(set(before) ^ set(after), key=str)
    for k in missing:
        side = "before" if k in before else "after"
        print(f"only {side}: {dict(k)}")
    ratios = []
    slower = 0
    for k in sorted(set(before) & set(after), key=str):
        r = after[k] / before[k]
        ratios.append(r)
        mark = ""
        if r > 1 + a.tolerance:
            mark = "  SLOWER"
            slower += 1
        name = " ".join(str(v) for f, v in k if f not in ("op", "nrows", "ncols", "nnz"))
        print(f"{name:60s} {before[k]:10.4f} {after[k]:10.4f} {r:6.3f}{mark}")
    if ratios:
        g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"{len(ratios)} cases: geometric mean after/before {g:.4f}, "
              f"best {min(ratios):.3f}, worst {max(ratios):.3f}, "
              f"{slower} over +{a.tolerance:.0%}")
    return 1 if slower or missing else 0


if __name__ == "__main__":
    sys.exit(main())
