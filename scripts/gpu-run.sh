#!/usr/bin/env bash
# Runs on the GPU host from the bundle folder: every GPU test (the library's and the
# benchmarks'), then `sparrow validate`.
# Logs go to ${1:-.}; exits non-zero when either fails.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export SPARROW_DATA=${SPARROW_DATA:-$here/data}
# The kernels gpu-bundle.sh compiled ahead, where it could (see there).
if [ -z "${SPARROW_CACHE_DIR:-}" ] && [ -f "$here/kc.tar.gz" ] && [ ! -d "$here/kc" ]; then
  tar -xzf "$here/kc.tar.gz" -C "$here"
fi
export SPARROW_CACHE_DIR=${SPARROW_CACHE_DIR:-$here/kc}
status=0
"$here/gpu-tests" --test-threads=1 --nocapture 2>&1 | tee "$out/gpu-tests.log" || status=1
"$here/bench-tests" --test-threads=1 2>&1 | tee "$out/bench-tests.log" || status=1
"$here/sparrow" validate --device cuda 2>&1 | tee "$out/validate.log" || status=1
exit $status
