#!/usr/bin/env bash
# GPU batch (thirtieth session), one call (~4 min): the final code's GPU tests (the settled
# timer, the replay with its settled lines, the real baselines script), then v2's block size and
# scalar form at the narrowest widths, judged by kernlab's settled medians (two interleaved
# rounds). The replay trailed compile by 0.03-0.13 µs at bf16 4096x32 in runs 137 and 139.
# Prediction: a block of 64 or 256 threads, or the scalar form, moves a 4-5 µs call by under
# 0.1 µs (one DRAM round trip and the launch dominate it); a change past 0.1 µs is worth a rule.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
gpu_tests 120 settled settled
gpu_tests 200 kernlab_do_bench kernlab_do_bench
gpu_tests 200 baselines real_baselines_script
el tests
for round in 1 2; do
  for cfg in "X=1" "KERNLAB_V2=threads=64 KERNLAB_NVRTC_DEFINES=KL_V2_THREADS=64" "KERNLAB_V2=threads=256 KERNLAB_NVRTC_DEFINES=KL_V2_THREADS=256" "KERNLAB_V2=threads=512 KERNLAB_NVRTC_DEFINES=KL_V2_THREADS=512" "KERNLAB_V2=scalar"; do
    for DT in bf16 f32; do
      n="r$round-$DT-$(echo "$cfg" | cut -d' ' -f1 | tr '=' '_')"
      timeout 60 env $cfg $K bench softmax --shape 4096x32 --shape 4096x64 --shape 4096x128 --dtype $DT --variants v2_warp_row --rotate auto --rep-ms 20 --seed 1 --csv "$OUT/$n.csv" > "$OUT/$n.log" 2>&1
      stab "$OUT/$n.csv" "$n" >> "$S"
    done
  done
  el "round $round"
done
cat "$S"
