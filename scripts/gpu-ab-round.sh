#!/usr/bin/env bash
# A before/after round on one GPU host, for a change that must keep every result and every
# kernel's time: the new build (a/) against an old one (b/), in the same call.
#
# Here, build both bundles (scripts/gpu-bundle.sh in each checkout), then collect into one
# ignored folder, say bundle/ab/: gpu-tests.gz, bench-tests.gz and sparrow.gz (gzip of the new
# bundle's binaries), sparrow-before.gz, kc-after.tar.gz and kc-before.tar.gz (each bundle's
# kc.tar.gz), data/ (the bundle's), cli_hashes.py and this script. Compressed, both builds fit
# the 64 MiB a call may carry. There: `bash bundle/ab/gpu-ab-round.sh A`, then `... B`, with OUT
# set to the log folder and DEADLINE to the seconds the call may use; every step is capped so a
# short call still returns its logs.
set -uo pipefail
cd "$(dirname "$0")"; here=$PWD; out=${OUT:-/tmp/out}; phase=${1:-A}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export SPARROW_DATA=$here/data
t_start=$SECONDS; deadline=${DEADLINE:-570}
mkdir -p "$out"
if [ ! -d a ]; then
  mkdir -p a b
  for f in gpu-tests bench-tests sparrow; do gunzip -c $f.gz > a/$f; chmod +x a/$f; done
  gunzip -c sparrow-before.gz > b/sparrow; chmod +x b/sparrow
  tar -xzf kc-after.tar.gz -C a; tar -xzf kc-before.tar.gz -C b
fi
nvidia-smi --query-gpu=name --format=csv,noheader > "$out/gpu-$phase.txt"
# s NAME CAP DIR CMD...: runs CMD with DIR's kernel cache, capped at min(CAP, time left).
s() { local n=$1 cap=$2 d=$3; shift 3; local left=$((deadline-(SECONDS-t_start)))
  [ $left -lt 15 ] && { echo "$n skipped (no time)" | tee -a "$out/summary.txt"; return; }
  [ $cap -gt $left ] && cap=$left
  local t0=$SECONDS; SPARROW_CACHE_DIR=$here/$d/kc timeout $cap "$@" > "$out/$n.log" 2>&1
  echo "$n rc=$? $((SECONDS-t0))s $(tail -n1 "$out/$n.log" | cut -c1-110)" | tee -a "$out/summary.txt"; }
if [ "$phase" = A ]; then
  s hash-after 40 a python3 cli_hashes.py --sparrow a/sparrow --device cuda --out "$out/after-cuda.txt"
  s hash-before 40 b python3 cli_hashes.py --sparrow b/sparrow --device cuda --out "$out/before-cuda.txt"
  cmp "$out/after-cuda.txt" "$out/before-cuda.txt" && echo "cuda hashes identical" | tee -a "$out/summary.txt"
  s validate 100 a a/sparrow validate --device cuda
  s sea-b 60 b b/sparrow bench seacells --device cuda --sizes 50000x50x666,100000x50x1333
  s sea-a 60 a a/sparrow bench seacells --device cuda --sizes 50000x50x666,100000x50x1333
  s spmv-b 80 b b/sparrow bench spmv --suite --jsonl "$out/spmv-b.jsonl"
  s spmv-a 80 a a/sparrow bench spmv --suite --jsonl "$out/spmv-a.jsonl"
  s topk-b 70 b b/sparrow bench topk --jsonl "$out/topk-b.jsonl"
  s topk-a 70 a a/sparrow bench topk --jsonl "$out/topk-a.jsonl"
else
  s spmm-b 120 b b/sparrow bench spmm --suite --jsonl "$out/spmm-b.jsonl"
  s spmm-a 120 a a/sparrow bench spmm --suite --jsonl "$out/spmm-a.jsonl"
  s gpu-tests 240 a a/gpu-tests --test-threads=1
  s bench-tests 60 a a/bench-tests --test-threads=1
  for tool in memcheck racecheck synccheck; do
    s "san-$tool" 60 a compute-sanitizer --tool $tool a/gpu-tests --test-threads=1 small_upload_for_one_path small_seacells
  done
fi
