#!/usr/bin/env bash
# GPU batch (thirteenth session): why v10 (second form) is slow. ncu at f32 2048×131072 (2.2
# TB/s) and 1024×262144 (2.9): the L2 hit rate of the second read, DRAM throughput, the
# stalls. Then the cache hints A/B (evict_last first read, evict_first re-read, each made a
# plain load) at those shapes.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
SEC="--clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --print-details all"
for shape in 2048x131072 1024x262144; do
  timeout 80 ncu $SEC -k regex:softmax_v10 -c 1 $K bench softmax --shape $shape --variants v10_l2pass --rep-ms 1 --warmup-ms 1 > "$OUT/ncu-$shape.txt" 2>&1
  echo "ncu $shape: $(grep -E ' Duration|DRAM Throughput|L2 Hit Rate|L1/TEX Hit|Warp Cycles Per Issued|Stall (Long Scoreboard|Barrier|LG Throttle|Drain|Wait|Short)' "$OUT/ncu-$shape.txt" | awk '{$1=$1};1' | tr '\n' ';' | cut -c1-900)" >> "$S"
done
el ncu
for d in none KL_REREAD_HINT=0 KL_ROW_LOAD_HINT=0 KL_ROW_LOAD_HINT=0,KL_REREAD_HINT=0; do
  DEF=$d; [ "$d" = none ] && DEF=
  KERNLAB_NVRTC_DEFINES=$DEF timeout 60 $K sweep softmax --rows 4096 --cols 131072,1048576 --max-elements 2^28 --dtype f32 --variants v10_l2pass --rep-ms 20 --rotate auto --csv "$OUT/h.csv" > "$OUT/h.log" 2>&1
  echo "hints $d: $(tab "$OUT/h.csv")" >> "$S"
done
el hints
cat "$S"
