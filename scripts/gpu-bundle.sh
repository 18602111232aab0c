#!/usr/bin/env bash
# Builds the release GPU test binary and the CLI, strips them, and puts them with run.sh into
# bundle/ (ignored by git). Copy bundle/ to a GPU host and run `bash bundle/run.sh [OUT_DIR]`:
# all GPU tests, then `sparrow validate`; `bash bundle/round.sh OUT_DIR` runs a whole round
# (tests, sanitizers, validate, compile-cache check, every benchmark). The host needs the NVIDIA driver and libnvrtc
# (run.sh adds /usr/local/cuda/lib64 to LD_LIBRARY_PATH), not a Rust toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."

# The executable of test target `gpu` of package $1 built with its `gpu-tests` feature.
gpu_test_bin() {
  cargo test --release -p "$1" --features gpu-tests --test gpu --no-run --message-format=json \
    | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "gpu" and m.get("executable"):
        print(m["executable"])'
}
test_bin=$(gpu_test_bin sparrow)
bench_test_bin=$(gpu_test_bin sparrow-bench)
cargo build --release -p sparrow-cli

rm -rf bundle
mkdir -p bundle
cp "$test_bin" bundle/gpu-tests
cp "$bench_test_bin" bundle/bench-tests
cp target/release/sparrow bundle/sparrow
strip bundle/gpu-tests bundle/bench-tests bundle/sparrow
cp scripts/gpu-run.sh bundle/run.sh
cp scripts/gpu-round.sh bundle/round.sh
# Data the GPU tests read (SPARROW_DATA points here on the GPU host).
mkdir -p bundle/data
cp -r data/pbmc68k_reduced bundle/data/
# Every kernel module compiled for sm_90 ahead into bundle/kc.tar.gz (run.sh unpacks it into its
# kernel cache, bundle/kc), so the GPU host's first use loads them instead of spending about 10 s
# per module in NVRTC; needs libnvrtc 13.0 here (CI's, or SPARROW_NVRTC_LIB). Without it the GPU
# host compiles them as usual. Compressed, the cubins take about a fifth of their 40-odd MB.
nvrtc_lib=${SPARROW_NVRTC_LIB:-${SPARROW_CI_CACHE:-$HOME/.cache/sparrow-ci}/nvrtc-13.0.88/nvidia/cu13/lib}
if [ -f "$nvrtc_lib/libnvrtc.so.13" ]; then
  if SPARROW_CACHE_DIR=$PWD/bundle/kc LD_LIBRARY_PATH=$nvrtc_lib:${LD_LIBRARY_PATH:-} \
    bundle/sparrow info --fill-cache sm_90 | tail -n 1; then
    tar -czf bundle/kc.tar.gz -C bundle kc
  else
    echo "filling the kernel cache failed: the GPU host will compile the kernels"
  fi
  rm -rf bundle/kc
else
  echo "libnvrtc 13 not found at $nvrtc_lib: no kernel cache in the bundle"
fi
du -sh bundle
