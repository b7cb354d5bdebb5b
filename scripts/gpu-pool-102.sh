#!/usr/bin/env bash
# Ran on the H200 against commit 6bc75f0 (the pool form, reverted in 2be6c53: measured slower).
# GPU batch (twenty-third session): v9's pool form (KERNLAB_V9=pool=P: each CTA claims its part
# of a row on arrival, up to P% past the even share). First its GPU test (every shape valid
# against f64 over launches, the counters cleared between them, the refusal); then its row
# timeline at f32 256×1 Mi (pool=30: the trace prints "pool"); then default against pool=15,
# 30 and 60, each setting in its own process, two rounds interleaved, at f32 256×1 Mi and
# 64×4 Mi and bf16 128×2 Mi (8, 2 and 8 groups), every point validated before it is timed.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
gpu_tests 200 pool softmax_v9_pool
el tests
echo "trace pool=30 256 1048576 f32" >> "$S"
KERNLAB_V9=pool=30 KERNLAB_NVRTC_DEFINES=KL_V9_TRACE=1 timeout 100 .gpu/bin/v9_trace 256 1048576 f32 1 > "$OUT/trace-pool.log" 2>&1
echo "exit $?" >> "$S"; grep -E "call|skew|loads|apart|lateness|valid|rror" "$OUT/trace-pool.log" | cut -c1-300 >> "$S"
el trace
b() {  # b NAME [env...]
  local n=$1; shift
  timeout 80 env "$@" $K bench softmax --dtype f32 --shape 256x1048576 --shape 64x4194304 --variants v9_gridsync --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n-f32.csv" > "$OUT/$n-f32.log" 2>&1
  timeout 60 env "$@" $K bench softmax --dtype bf16 --shape 128x2097152 --variants v9_gridsync --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n-bf16.csv" > "$OUT/$n-bf16.log" 2>&1
  echo "$n $(tab "$OUT/$n-f32.csv") $(tab "$OUT/$n-bf16.csv")" >> "$S"
}
for r in 1 2; do
  b default-$r
  b pool15-$r KERNLAB_V9=pool=15
  b pool30-$r KERNLAB_V9=pool=30
  b pool60-$r KERNLAB_V9=pool=60
  el round $r
done
cat "$S"
