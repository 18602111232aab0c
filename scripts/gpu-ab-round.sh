#!/usr/bin/env bash
# A before/after round on one GPU host, for a change that must keep every result and every
# kernel's time: the new build (a/) against an old one (b/), in the same call.
#
# Here, build both bundles (scripts/gpu-bundle.sh in each checkout), then collect into one
# ignored folder, say bundle/ab/: gpu-tests.gz, bench-tests.gz and sparrow.gz (gzip of the new
# bundle's binaries), sparrow-before.gz, kc-after.tar.gz and kc-before.tar.gz (each bundle's
# kc.tar.gz), data/ (the bundle's), cli_hashes.py, ab_compare.py and this script. Compressed, both builds fit
# the 64 MiB a call may carry. There: `bash bundle/ab/gpu-ab-round.sh A`, then `... B`, with OUT
# set to the log folder and DEADLINE to the seconds the call may use; every step is capped so a
# short call still returns its logs. Phase C runs what a short A or B left: validate and the
# SEACells benchmarks with longer caps, one size at a time, and the GPU tests the long product
# acceptance tests leave. Phases G (hashes with seacells, SEACells at 50,000 cells, top-k per
# shape, the shared tests, racecheck), H (100,000 cells, validate), I (synccheck, memcheck of
# the shared tests, the f64 acceptance) and J (the top-k GPU tests) are what C left, in calls of
# under 10 minutes. The logs are kept in one archive, $OUT/logs-PHASE.tgz, rewritten after every
# step, since a call returns only a few files.
set -uo pipefail
cd "$(dirname "$0")"; here=$PWD; out=${OUT:-/tmp/out}; phase=${1:-A}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export SPARROW_DATA=$here/data
t_start=$SECONDS; deadline=${DEADLINE:-570}
logs=$here/logs-$phase; mkdir -p "$out" "$logs"
if [ ! -d a ]; then
  mkdir -p a b
  for f in gpu-tests bench-tests sparrow; do gunzip -c $f.gz > a/$f; chmod +x a/$f; done
  gunzip -c sparrow-before.gz > b/sparrow; chmod +x b/sparrow
  tar -xzf kc-after.tar.gz -C a; tar -xzf kc-before.tar.gz -C b
  # Optionally a third build (c/, sparrow-next.gz) after the change, for a benchmark of what
  # comes next; it shares a/'s kernel cache.
  if [ -f sparrow-next.gz ]; then mkdir -p c; gunzip -c sparrow-next.gz > c/sparrow; chmod +x c/sparrow; ln -s ../a/kc c/kc; fi
fi
nvidia-smi --query-gpu=name --format=csv,noheader > "$logs/gpu.txt"
# s NAME CAP DIR CMD...: runs CMD with DIR's kernel cache, capped at min(CAP, time left).
s() { local n=$1 cap=$2 d=$3; shift 3; local left=$((deadline-(SECONDS-t_start)))
  [ $left -lt 15 ] && { echo "$n skipped (no time)" | tee -a "$logs/summary.txt"; return; }
  [ $cap -gt $left ] && cap=$left
  local t0=$SECONDS; SPARROW_CACHE_DIR=$here/$d/kc timeout $cap "$@" > "$logs/$n.log" 2>&1
  echo "$n rc=$? $((SECONDS-t0))s $(tail -n1 "$logs/$n.log" | cut -c1-110)" | tee -a "$logs/summary.txt"
  tar -czf "$out/logs-$phase.tgz" -C "$logs" .; cp "$logs/summary.txt" "$out/summary-$phase.txt"; }
if [ "$phase" = A ]; then
  s hash-after 40 a python3 cli_hashes.py --sparrow a/sparrow --device cuda --out "$logs/after-cuda.txt"
  s hash-before 40 b python3 cli_hashes.py --sparrow b/sparrow --device cuda --out "$logs/before-cuda.txt"
  cmp "$logs/after-cuda.txt" "$logs/before-cuda.txt" && echo "cuda hashes identical" | tee -a "$logs/summary.txt"
  s validate 100 a a/sparrow validate --device cuda
  s sea-b 60 b b/sparrow bench seacells --device cuda --sizes 50000x50x666,100000x50x1333
  s sea-a 60 a a/sparrow bench seacells --device cuda --sizes 50000x50x666,100000x50x1333
  s spmv-b 80 b b/sparrow bench spmv --suite --jsonl "$logs/spmv-b.jsonl"
  s spmv-a 80 a a/sparrow bench spmv --suite --jsonl "$logs/spmv-a.jsonl"
  s topk-b 70 b b/sparrow bench topk --jsonl "$logs/topk-b.jsonl"
  s topk-a 70 a a/sparrow bench topk --jsonl "$logs/topk-a.jsonl"
elif [ "$phase" = G ]; then
  # One call's worth of D, E and F, most needed first.
  s hash-after 45 a python3 cli_hashes.py --sparrow a/sparrow --device cuda --out "$logs/after-cuda.txt"
  s hash-before 45 b python3 cli_hashes.py --sparrow b/sparrow --device cuda --out "$logs/before-cuda.txt"
  cmp "$logs/after-cuda.txt" "$logs/before-cuda.txt" && echo "cuda hashes identical" | tee -a "$logs/summary.txt"
  s sea50-b 60 b b/sparrow bench seacells --device cuda --sizes 50000x50x666 --jsonl "$logs/sea-b.jsonl"
  s sea50-a 60 a a/sparrow bench seacells --device cuda --sizes 50000x50x666 --jsonl "$logs/sea-a.jsonl"
  [ -x c/sparrow ] && s sea50-c 60 c c/sparrow bench seacells --device cuda --sizes 50000x50x666 --jsonl "$logs/sea-c.jsonl"
  s topk-b 45 b b/sparrow bench topk --jsonl "$logs/topk-b.jsonl"
  s topk-a 45 a a/sparrow bench topk --jsonl "$logs/topk-a.jsonl"
  python3 ab_compare.py "$logs/topk-b.jsonl" "$logs/topk-a.jsonl" > "$logs/topk-compare.txt" 2>&1; tail -n 3 "$logs/topk-compare.txt" >> "$logs/summary.txt"
  s shared-tests 90 a a/gpu-tests --test-threads=1 topk::values_of topk::lengths_one topk::long_segments topk::k_past topk::many_segments topk::invalid products::beta_zero products::shape_errors
  s san-racecheck 150 a compute-sanitizer --tool racecheck --error-exitcode 1 a/gpu-tests --test-threads=1 small_seacells
elif [ "$phase" = H ]; then
  # SEACells at 100,000 cells in each build, then validate.
  s sea100-b 120 b b/sparrow bench seacells --device cuda --sizes 100000x50x1333 --jsonl "$logs/sea-b.jsonl"
  s sea100-a 120 a a/sparrow bench seacells --device cuda --sizes 100000x50x1333 --jsonl "$logs/sea-a.jsonl"
  [ -x c/sparrow ] && s sea100-c 80 c c/sparrow bench seacells --device cuda --sizes 100000x50x1333 --jsonl "$logs/sea-c.jsonl"
  s validate 130 a a/sparrow validate --device cuda
elif [ "$phase" = I ]; then
  # The sanitizers G left, and the f64 acceptance.
  s san-synccheck 90 a compute-sanitizer --tool synccheck --error-exitcode 1 a/gpu-tests --test-threads=1 small_seacells
  s san-memcheck-shared 60 a compute-sanitizer --tool memcheck --error-exitcode 1 a/gpu-tests --test-threads=1 topk::k_past topk::many_segments topk::invalid products::beta_zero products::shape_errors
  s acceptance-f64 140 a a/gpu-tests --test-threads=1 products::acceptance_f64
elif [ "$phase" = J ]; then
  # Every top-k GPU test, then the benchmarks' own GPU tests.
  s gpu-tests-topk 190 a a/gpu-tests --test-threads=1 topk::
  s bench-tests 50 a a/bench-tests --test-threads=1
elif [ "$phase" = C ]; then
  s spmv-b 40 b b/sparrow bench spmv --suite --jsonl "$logs/spmv-b.jsonl"
  s spmv-a 40 a a/sparrow bench spmv --suite --jsonl "$logs/spmv-a.jsonl"
  s topk-b 40 b b/sparrow bench topk --jsonl "$logs/topk-b.jsonl"
  s topk-a 40 a a/sparrow bench topk --jsonl "$logs/topk-a.jsonl"
  s banded64-b 30 b b/sparrow bench spmm --matrix banded --n 64 --reps 200 --jsonl "$logs/banded64-b.jsonl"
  s banded64-a 30 a a/sparrow bench spmm --matrix banded --n 64 --reps 200 --jsonl "$logs/banded64-a.jsonl"
  s gpu-tests-key 90 a a/gpu-tests --test-threads=1 seacells:: small_entry_order
  s sea50-b 45 b b/sparrow bench seacells --device cuda --sizes 50000x50x666 --jsonl "$logs/sea-b.jsonl"
  s sea50-a 45 a a/sparrow bench seacells --device cuda --sizes 50000x50x666 --jsonl "$logs/sea-a.jsonl"
  s validate 130 a a/sparrow validate --device cuda
  s san-memcheck 60 a compute-sanitizer --tool memcheck a/gpu-tests --test-threads=1 small_entry_order small_seacells
  if grep -q "sea50-b rc=0" "$logs/summary.txt"; then
    s sea100-b 60 b b/sparrow bench seacells --device cuda --sizes 100000x50x1333 --jsonl "$logs/sea-b.jsonl"
    s sea100-a 60 a a/sparrow bench seacells --device cuda --sizes 100000x50x1333 --jsonl "$logs/sea-a.jsonl"
  fi
  s gpu-tests-rest 120 a a/gpu-tests --test-threads=1 --skip products::acceptance --skip cs:: --skip device:: --skip formats:: --skip seacells::
else
  s spmm-b 120 b b/sparrow bench spmm --suite --jsonl "$logs/spmm-b.jsonl"
  s spmm-a 120 a a/sparrow bench spmm --suite --jsonl "$logs/spmm-a.jsonl"
  s gpu-tests 240 a a/gpu-tests --test-threads=1
  s bench-tests 60 a a/bench-tests --test-threads=1
  for tool in memcheck racecheck synccheck; do
    s "san-$tool" 60 a compute-sanitizer --tool $tool a/gpu-tests --test-threads=1 small_upload_for_one_path small_seacells
  done
fi
