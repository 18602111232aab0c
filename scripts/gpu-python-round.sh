#!/usr/bin/env bash
# The Python package's GPU round, from the repository root on the GPU host, with the bundle
# (scripts/gpu-bundle.sh, plus the wheel as bundle/*.whl) in bundle/: phase P installs the
# wheel and runs the GPU pytest tests, the overhead benchmark and compute-sanitizer on the
# smoke script; phase R runs racecheck and synccheck on it; phase S times SEACells through
# Python against the CLI; phase T runs the split every-pattern top-k tests and the sanitize_
# tests under memcheck; phase G runs the graph-capture tests (Rust workspace plan, Python),
# the products and formats GPU tests, the trajectories agreement test and the serving shapes
# against torch.topk; phase C runs the cluster path's GPU tests and memcheck on it, phase D
# racecheck and synccheck; phase K runs the on-chip/cluster path bounds test; phase O times the
# serving shapes on this build and on bundle/sparrow-old; phase Y runs the SEACells GPU tests;
# phase W runs bench seacells on bundle/sparrow-old at $SEACELLS_OLD_SIZES; phase Q runs bench
# seacells on the GPU at $SEACELLS_SIZES (100,000 and 200,000 cells by default); phase Z runs
# compute-sanitizer on the SEACells GPU tests $SEACELLS_SAN_FILTER names; phase B times the serving shapes (this build with --sweep, the build before the
# cluster path as bundle/sparrow-base, torch.topk) and the target shapes. Logs go to $OUT.
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
    C)
      step cluster-tests 300 "$b/gpu-tests" --test-threads=1 topk_cluster
      step cluster-memcheck 200 "$sanitizer" --tool memcheck "$b/gpu-tests" --test-threads=1 sanitize_topk_cluster
      ;;
    D)
      for tool in racecheck synccheck; do
        step "cluster-$tool" 200 "$sanitizer" --tool "$tool" "$b/gpu-tests" --test-threads=1 sanitize_topk_cluster
      done
      ;;
    B)
      # The build before the cluster path travels compressed (bundle/sparrow-base.gz).
      [ -f "$b/sparrow-base.gz" ] && gunzip -f "$b/sparrow-base.gz"
      step serving-new 90 "$b/sparrow" bench topk --reps 50 --set serving --sweep --tie-break fast,smaller-index
      step serving-base 60 "$b/sparrow-base" bench topk --reps 50 --set serving
      step serving-torch 60 python bench/torch_topk.py --set serving --reps 50
      step targets-new 200 "$b/sparrow" bench topk --reps 20 --sweep
      ;;
    K)
      step path-bounds 200 "$b/gpu-tests" --test-threads=1 small_topk_path_bounds
      ;;
    O)
      # The build before a kernel change travels compressed as bundle/sparrow-old.gz: its
      # forced paths beside this build's, on the same machine.
      [ -f "$b/sparrow-old.gz" ] && gunzip -f "$b/sparrow-old.gz" && chmod +x "$b/sparrow-old"
      step serving-old 60 "$b/sparrow-old" bench topk --reps 50 --set serving --sweep
      step serving-this 60 "$b/sparrow" bench topk --reps 50 --set serving --sweep
      ;;
    Y)
      # The SEACells GPU tests: every kernel against its CPU function, the CPU/GPU identity
      # fits, the trajectories agreement.
      step seacells-gpu-tests 400 "$b/gpu-tests" --test-threads=1 seacells
      ;;
    Z)
      # compute-sanitizer (memcheck, racecheck, synccheck) on the SEACells GPU tests that
      # $SEACELLS_SAN_FILTER names (the row products by default).
      for tool in memcheck racecheck synccheck; do
        step "seacells-san-$tool" 240 "$sanitizer" --tool "$tool" --error-exitcode 9 \
          "$b/gpu-tests" --test-threads=1 "${SEACELLS_SAN_FILTER:-seacells_row_products}"
      done
      ;;
    W)
      # bench seacells on bundle/sparrow-old, the build before a change, at $SEACELLS_OLD_SIZES.
      [ -f "$b/sparrow-old.gz" ] && gunzip -f "$b/sparrow-old.gz" && chmod +x "$b/sparrow-old"
      step seacells-old 300 "$b/sparrow-old" bench seacells --device cuda --sizes "${SEACELLS_OLD_SIZES:-100000x50x1333}"
      ;;
    Q)
      step seacells-scale 400 "$b/sparrow" bench seacells --device cuda --sizes "${SEACELLS_SIZES:-100000x50x1333,200000x50x2666}"
      ;;
    N)
      # ncu on one call of each shape whose fraction of copy is short of its target: every
      # kernel of the call, with the sections that say what limits it.
      sections="--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats"
      for shape in 163840x2048x4 131072x50x64 131072x2048x64 8192x256x4096 2097152x1024x16; do
        step "ncu-$shape" 120 /usr/local/cuda/bin/ncu --clock-control none $sections -k regex:topk_ --launch-skip 12 --launch-count 6 \
          "$b/sparrow" bench topk --reps 10 --shapes "$shape"
      done
      ;;
  esac
done
