#!/usr/bin/env bash
# GPU batch (seventh session): ncu of v8 (clusters of 4, one CTA an SM) against v9 (one and
# two CTAs an SM) at f32 1024×262144, where v8 ran at 3.8 TB/s and v9 at 3.0 / 3.4: where
# does v9's time go?
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
SEC="--clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --print-details all"
run() {  # label, env, variant
  env $2 timeout 80 ncu $SEC -k regex:softmax_v[89] -c 1 $K bench softmax --shape 1024x262144 --variants $3 --rep-ms 1 --warmup-ms 1 > "$OUT/ncu-$1.txt" 2>&1
  echo "ncu $1: $(grep -E ' Duration|DRAM Throughput|Achieved Occupancy|Warp Cycles Per Issued|Issue Slots Busy' "$OUT/ncu-$1.txt" | awk '{$1=$1};1' | tr '\n' ';' | cut -c1-400)" >> "$S"
}
run v8 KERNLAB_NONE=1 v8_onchip
run v9-1 KERNLAB_V9=per_sm=1 v9_gridsync
run v9-2 KERNLAB_V9=per_sm=2 v9_gridsync
el ncu
cat "$S"
