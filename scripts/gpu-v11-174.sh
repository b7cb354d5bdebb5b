#!/usr/bin/env bash
# GPU batch (written in the thirty-fifth session, run in the thirty-sixth; the sweeps moved to
# run 175 so each call stays under ten minutes), one call (~9 min): every GPU test executable on the code with v11_deal
# (KERNLAB_REQUIRE_GPU=1, KERNLAB_REQUIRE_NVRTC=1): v11 then meets the tests that every
# registered softmax version runs (the width list, special values, strided rows, log_softmax),
# which runs 170-173 did not run; then `auto` at the points the routing moved, with the
# PyTorch columns, both sides rotated: f32 256×1 Mi (TARGETS: ≥ 3900); then ncu on v11 (and v8).
# Prediction: all tests pass (run 165: 220; now 222); f32 256×1 Mi ~3700 GB/s, 2× native or
# more (TARGETS' 3900 stays 5% short).
# Every point is validated against the f64 reference before it is timed (bench).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_tests 380
el tests
timeout 150 $K bench softmax --dtype f32 --shape 256x1048576 --variants auto,v9_gridsync --torch \
  --rep-ms 30 --rotate auto --repeat 3 --csv "$OUT/targets.csv" > "$OUT/targets.log" 2>&1
rtab "$OUT/targets.csv" targets >> "$S"; tail -4 "$OUT/targets.log" >> "$S"
el targets
# ncu, one launch each: v11 at TARGETS' 256x1 Mi and at 1024x131072 (where v8 leads it by 4%),
# v8 at 1024x131072 beside it: duration, DRAM throughput, where the warps stall.
SEC="--clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --print-details all"
KEYS=' Duration|DRAM Throughput|L2 Hit Rate|L1/TEX Hit|Achieved Occupancy|Registers Per Thread|Warp Cycles Per Issued|Issued Warp Per Scheduler|No Eligible|Stall (Long Scoreboard|Barrier|LG Throttle|Drain|Wait|Short|Math|Not Selected|Selected|No Instruction|Membar|Branch|Sleeping|MIO|Dispatch)|Memory Throughput|Block Size|Grid Size'
for c in v11_deal:256x1048576 v11_deal:1024x131072 v8_onchip:1024x131072; do
  v=${c%%:*}; sh=${c##*:}
  timeout 90 ncu $SEC -k regex:softmax_${v} -c 1 $K bench softmax --dtype f32 --shape $sh --variants $v --rep-ms 1 --warmup-ms 1 > "$OUT/ncu-$v-$sh.txt" 2>&1
  echo "ncu $v $sh: $(grep -E "$KEYS" "$OUT/ncu-$v-$sh.txt" | awk '{$1=$1};1' | tr '\n' ';' | cut -c1-1500)" >> "$S"
done
el ncu
cat "$S"
