"""SEACells through Python against the CLI on the same embedding: a 100,000-cell Gaussian
mixture (50 dims, 20 clusters), 1,333 metacells, on the GPU; wall-clock seconds of each,
the CLI's including its file reads and writes. Usage: python scripts/seacells_py_vs_cli.py SPARROW_BIN OUT_DIR"""

import json
import subprocess
import sys
import time

import numpy as np

import sparrow

cli, out = sys.argv[1], sys.argv[2]
n, d, clusters, nm = 100_000, 50, 20, 1333
rng = np.random.default_rng(0)
centres = rng.standard_normal((clusters, d)) * 8
x = (centres[rng.integers(0, clusters, n)] + rng.standard_normal((n, d))).astype(np.float32)
np.save(f"{out}/mixture.npy", x)
t = time.perf_counter()
subprocess.run([cli, "seacells", "--embedding", f"{out}/mixture.npy", "--n-metacells", str(nm), "--device", "cuda",
                "--out-dir", f"{out}/cli-fit"], check=True)
t_cli = time.perf_counter() - t
t = time.perf_counter()
res = sparrow.seacells(x, nm, device="cuda")
t_py = time.perf_counter() - t
same = bool((np.load(f"{out}/cli-fit/assignments.npy") == res.assignments).all())
print(json.dumps({"cells": n, "metacells": nm, "cli_s": t_cli, "python_s": t_py,
                  "python_over_cli": t_py / t_cli - 1, "same_assignments": same,
                  "python_fit_s": res.summary["seconds_total"]}))
