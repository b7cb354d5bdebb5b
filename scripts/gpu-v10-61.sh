#!/usr/bin/env bash
# GPU batch (thirteenth session): two guesses at v10's L2 misses (gpu-v10-59: 16% L2 hit rate
# for loads at f32 131072). Streaming stores (KL_V10_CS=1: the outputs leave L2 first) and a
# smaller window (KERNLAB_V10=grid=132: one CTA an SM, half the tiles in flight), alone and
# together; v10's test on the capped grid first. f32 131072 and 1 Mi, rotated.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_tests 100 softmax_v10
el tests
for c in none:x cs:KL_V10_CS=1 grid132:x cs-grid132:KL_V10_CS=1; do
  lab=${c%%:*}; def=${c#*:}; [ "$def" = x ] && def=
  g=; case $lab in *grid132) g=grid=132;; esac
  KERNLAB_V10=$g KERNLAB_NVRTC_DEFINES=$def timeout 60 $K sweep softmax --rows 4096 --cols 131072,1048576 --max-elements 2^28 --dtype f32 --variants v10_l2pass --rep-ms 20 --rotate auto --csv "$OUT/h.csv" > "$OUT/h.log" 2>&1
  echo "$lab: $(tab "$OUT/h.csv")" >> "$S"
done
el sweeps
SEC="--clock-control none --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --print-details all"
KERNLAB_NVRTC_DEFINES=KL_V10_CS=1 timeout 60 ncu $SEC -k regex:softmax_v10 -c 1 $K bench softmax --shape 2048x131072 --variants v10_l2pass --rep-ms 1 --warmup-ms 1 > "$OUT/ncu-cs.txt" 2>&1
echo "ncu cs: $(grep -E 'L2 Hit Rate For Loads|Stall Barrier|Warp Cycles Per Issued' "$OUT/ncu-cs.txt" | awk '{$1=$1};1' | tr '\n' ';')" >> "$S"
el ncu
cat "$S"
