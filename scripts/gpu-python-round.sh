#!/usr/bin/env bash
# The Python package's GPU round, from the repository root on the GPU host, with the bundle
# (scripts/gpu-bundle.sh, plus the wheel as bundle/*.whl) in bundle/: phase P installs the
# wheel and runs the GPU pytest tests, the overhead benchmark and compute-sanitizer on the
# smoke script; phase R runs racecheck and synccheck on it; phase S times SEACells through
# Python against the CLI; phase T runs the split every-pattern top-k tests and the sanitize_
# tests under memcheck; phase G runs the graph-capture tests (Rust workspace plan, Python),
# the products and formats GPU tests, the trajectories agreement test and the serving shapes
# against torch.topk. Logs go to $OUT.
set -uo pipefail
out=${OUT:-$PWD/py-round}
mkdir -p "$out"
b=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export SPARROW_DATA=$b/data
[ -d "$b/kc" ] || tar -xzf "$b/kc.tar.gz" -C "$b"
export SPARROW_CACHE_DIR=$b/kc
step() {
  local name=$1 lim=$2
  shift 2
  local s=$SECONDS
  timeout "$lim" "$@" >"$out/$name.log" 2>&1
  echo "$name rc=$? $((SECONDS - s))s" | tee -a "$out/round.log"
}
sanitizer=/usr/local/cuda/bin/compute-sanitizer
for phase in "$@"; do
  case $phase in
    P)
      python -m pip install --quiet --no-deps --force-reinstall "$b"/*.whl >"$out/install.log" 2>&1
      python -c "import torch, sparrow; print(torch.__version__, torch.cuda.get_device_name(), sparrow.devices())" >>"$out/install.log" 2>&1
      step pytest-gpu 240 python -m pytest -q -p no:cacheprovider sparrow-py/tests/test_gpu.py
      step overhead 120 python bench/python_overhead.py --breakdown --json "$out/overhead.json"
      step smoke-memcheck 150 "$sanitizer" --tool memcheck --target-processes all python scripts/gpu_python_smoke.py
      ;;
    R)
      step smoke-racecheck 200 "$sanitizer" --tool racecheck --target-processes all python scripts/gpu_python_smoke.py
      step smoke-synccheck 200 "$sanitizer" --tool synccheck --target-processes all python scripts/gpu_python_smoke.py
      ;;
    S)
      step seacells-py-vs-cli 300 python scripts/seacells_py_vs_cli.py "$b/sparrow" "$out"
      ;;
    T)
      step every-pattern 300 "$b/gpu-tests" --test-threads=1 small_topk_every_pattern
      step sanitize-memcheck 240 "$sanitizer" --tool memcheck "$b/gpu-tests" --test-threads=1 sanitize_
      ;;
    G)
      step graph-rust 120 "$b/gpu-tests" --test-threads=1 graph
      step products 300 "$b/gpu-tests" --test-threads=1 products:: formats::
      step trajectories 200 "$b/gpu-tests" --test-threads=1 --nocapture branching
      step serving-sparrow 60 "$b/sparrow" bench topk --reps 50 --set serving
      step serving-torch 60 python bench/torch_topk.py --set serving --reps 50
      ;;
  esac
done
