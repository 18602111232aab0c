#!/usr/bin/env bash
# Builds the release GPU test binary and the CLI, strips them, and puts them with run.sh into
# bundle/ (ignored by git). Copy bundle/ to a GPU host and run `bash bundle/run.sh [OUT_DIR]`:
# all GPU tests, then `sparrow validate`; `bash bundle/round.sh OUT_DIR` runs a whole round
# (tests, sanitizers, validate, compile-cache check, every benchmark). The host needs the NVIDIA driver and libnvrtc
# (run.sh adds /usr/local/cuda/lib64 to LD_LIBRARY_PATH), not a Rust toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."

test_bin=$(cargo test --release -p sparrow --features gpu-tests --test gpu --no-run --message-format=json \
  | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "gpu" and m.get("executable"):
        print(m["executable"])')
cargo build --release -p sparrow-cli

rm -rf bundle
mkdir -p bundle
cp "$test_bin" bundle/gpu-tests
cp target/release/sparrow bundle/sparrow
strip bundle/gpu-tests bundle/sparrow
cp scripts/gpu-run.sh bundle/run.sh
cp scripts/gpu-round.sh bundle/round.sh
# Data the GPU tests read (SPARROW_DATA points here on the GPU host).
mkdir -p bundle/data
cp -r ../shared/data/pbmc68k_reduced bundle/data/
du -sh bundle
