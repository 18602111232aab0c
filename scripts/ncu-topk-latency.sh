#!/usr/bin/env bash
# The cluster top-k path's latency on the GPU host, from the repository root with the bundle
# (scripts/gpu-bundle.sh) in bundle/: phase L times the serving shapes' kernels one by one under
# ncu (gpu__time_duration, every path); phase S prints the cluster kernel's per-instruction
# stall samples (ncu's source page, SASS); phase R times the filter and the cluster around the
# rule's boundary (segments x blocks per cluster against the SMs). Logs go to $OUT.
set -uo pipefail
out=${OUT:-$PWD/ncu-lat}; mkdir -p "$out"
b=$PWD/bundle
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
[ -d "$b/kc" ] || tar -xzf "$b/kc.tar.gz" -C "$b"
export SPARROW_CACHE_DIR=$b/kc
ncu=/usr/local/cuda/bin/ncu
for phase in "$@"; do
  case $phase in
    L)
      for shape in 163840x2048x4 131072x2048x1 131072x50x1 131072x50x64 32768x2048x16; do
        timeout 120 $ncu --clock-control none --metrics gpu__time_duration.sum --csv -k regex:topk_ --launch-count 100 \
          "$b/sparrow" bench topk --reps 10 --shapes "$shape" --sweep > "$out/dur-$shape.csv" 2>&1
        echo "dur $shape rc=$?" | tee -a "$out/round.log"
      done
      ;;
    S)
      for shape in 131072x50x1 163840x2048x4; do
        timeout 150 $ncu --clock-control none --set full --import-source yes -k regex:cluster --launch-skip 3 --launch-count 1 \
          -o "$out/cl-$shape" "$b/sparrow" bench topk --reps 10 --shapes "$shape" --sweep > "$out/cl-$shape.log" 2>&1
        echo "profile $shape rc=$?" | tee -a "$out/round.log"
        timeout 60 $ncu -i "$out/cl-$shape.ncu-rep" --page source --print-source sass --csv > "$out/sass-$shape.csv" 2>&1
        echo "sass $shape rc=$?" | tee -a "$out/round.log"
        rm -f "$out/cl-$shape.ncu-rep"
      done
      ;;
    R)
      timeout 200 "$b/sparrow" bench topk --reps 30 --sweep \
        --shapes 131072x2048x2,131072x2048x4,131072x2048x6,131072x2048x7,131072x2048x8,131072x2048x12,65536x2048x8,65536x2048x16,65536x2048x24,32768x2048x32,32768x2048x33,32768x2048x48,16384x2048x64,16384x2048x66,16384x2048x100 \
        > "$out/rule.log" 2>&1
      echo "rule rc=$?" | tee -a "$out/round.log"
      ;;
  esac
done
