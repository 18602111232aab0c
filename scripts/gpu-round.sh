#!/usr/bin/env bash
# A whole round on a GPU host, from the bundle folder: GPU tests, sanitizers on the small tests,
# validate, info, the compile-cache check (demo twice on an empty cache), and every benchmark
# (the upload's host analysis and the CPU backend's SpMV on the host's CPUs too) with the torch.topk side-by-side. Logs and JSON lines go to ${1:-.}; prints a summary last.
# Needs bench/torch_topk.py next to the bundle's parent (the repository) for the torch column.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export SPARROW_DATA=${SPARROW_DATA:-$here/data}
export SPARROW_CACHE_DIR=$(mktemp -d)
summary=()
step() {
  local name=$1; shift
  local t0=$SECONDS
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  summary+=("$(printf '%-16s rc=%-3s %4ss  %s' "$name" "$rc" "$((SECONDS - t0))" "$(tail -n 1 "$out/$name.log" | cut -c1-90)")")
}
step info "$here/sparrow" info --bandwidth
step demo-cold "$here/sparrow" demo --explain
step demo-warm "$here/sparrow" demo
step gpu-tests "$here/gpu-tests" --test-threads=1
step bench-tests "$here/bench-tests" --test-threads=1
for tool in memcheck racecheck synccheck; do
  # Racecheck of the candidate builds at twice the SMs' segments (the compact build's count)
  # outgrows the host's memory (130 GB on a 128 GB host): memcheck and synccheck only.
  # Synccheck cannot allocate its tracking memory for the staged filter's launches in
  # small_topk_every_pattern_* (internal sanitizer errors, no kernel errors); the
  # sanitize_topk tests cover those kernels at sizes it takes.
  skip=()
  [ "$tool" = racecheck ] && skip=(--skip sanitize_topk_candidate_kernel_builds)
  [ "$tool" = synccheck ] && skip=(--skip small_topk_every_pattern_)
  step "san-$tool" compute-sanitizer --tool "$tool" "$here/gpu-tests" --test-threads=1 small_ sanitize_ ${skip[@]+"${skip[@]}"}
done
step validate "$here/sparrow" validate --device cuda
step bench-suite "$here/sparrow" bench spmm --suite --dtype f32,f64 --jsonl "$out/bench.jsonl" --plot "$out/spmm-suite.svg"
step bench-spmv "$here/sparrow" bench spmv --matrix powerlaw,banded,empty90,longrows --dtype f32,f64 --cpu --jsonl "$out/bench.jsonl"
step bench-topk "$here/sparrow" bench topk --jsonl "$out/bench.jsonl"
step bench-analysis "$here/sparrow" bench analysis --suite --dtype f32,f64 --jsonl "$out/bench.jsonl"
step bench-cpu-products "$here/sparrow" --device cpu bench spmv --suite --dtype f32,f64 --jsonl "$out/bench.jsonl"
if [ -f "$here/../bench/torch_topk.py" ]; then
  step torch-topk python3 "$here/../bench/torch_topk.py" --jsonl "$out/bench.jsonl"
fi
printf '%s\n' "${summary[@]}"
