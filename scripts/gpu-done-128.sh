#!/usr/bin/env bash
# GPU batch (twenty-eighth session). (1) The replay's and the real baselines script's GPU tests:
# the script now writes each timed call's queued median (`queued_ms`, its GPU time with no host
# time in it) and the verdict adds a line judging kernel against kernel where a host-bound
# time has one. (2) The f32 done-means sweep (run 125's command) with the replay's one-call
# launch, the host check and the verdict. Prediction: f32 1 Mi at 1.74-1.81x native as before;
# the same-process column within ~0.5 us of `auto` at the few-us widths; compile's GPU time
# level with ours at f32 256 and within ~0.5 us at 512. (3) If time is left, v2 with 32-thread
# CTAs against its 128 at f32 4096x{256,512,1024}, one process each (the setting run 127 did
# not reach). Prediction: no change beyond the ~0.5 us the same setting moves between processes.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
gpu_tests 200 kernlab_do_bench kernlab_do_bench
gpu_tests 200 baselines real_baselines_script
el tests
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
DT=f32
done_sweep "$DT" 300
el sweep
sweep_summary "$DT"
for t in 32 128; do
  [ $SECONDS -lt 500 ] || break
  KERNLAB_NVRTC_DEFINES=KL_V2_THREADS=$t KERNLAB_V2=threads=$t timeout 40 $K bench softmax --shape 4096x256 --shape 4096x512 --shape 4096x1024 --dtype f32 --variants auto --torch --rotate auto --rep-ms 30 --csv "$OUT/t$t.csv" > "$OUT/t$t.log" 2>&1
  echo "threads $t exit $?" >> "$S"; ustab "$OUT/t$t.csv" >> "$S"; el "threads $t"
done
cat "$S"
