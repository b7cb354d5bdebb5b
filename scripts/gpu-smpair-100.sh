#!/usr/bin/env bash
# GPU batch (written in the twenty-second session for the next one; not yet run): v9's smpair
# form (KERNLAB_V9=smpair=1: each CTA takes its group and rank from its SM, so that an SM's
# two CTAs are ping-pong partners). First its GPU test (every place valid against f64, the
# places cleared between launches, the refusals) with the split-row tests and the flush test;
# then its row timeline (places b and b + 132 should share an SM in 132 of 132 pairs — the
# places taken as designed — and the late SMs should be gone; the trace prints the form it
# ran, "smpair"); then default against smpair, each setting in its own process,
# three rounds interleaved, at the aligned widths v9 runs (f32 256×1 Mi, 2048×1 Mi, 64×4 Mi;
# bf16 128×2 Mi: 8, 8, 2 and 8 groups, all of which smpair takes on the H200),
# every point validated before it is timed.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
gpu_tests 240 smpair softmax_v9_smpair softmax_split_rows cuda_both_flush_forms
el tests
for shape in "256 1048576 f32" "128 2097152 bf16"; do
  set -- $shape
  echo "trace smpair $shape" >> "$S"
  KERNLAB_V9=smpair=1 KERNLAB_NVRTC_DEFINES=KL_V9_TRACE=1 timeout 100 .gpu/bin/v9_trace $1 $2 $3 1 > "$OUT/trace-smpair-$1x$2-$3.log" 2>&1
  echo "exit $?" >> "$S"; grep -E "call|skew|loads|apart|lateness|latest|earliest|SMs;|valid|rror" "$OUT/trace-smpair-$1x$2-$3.log" | cut -c1-400 >> "$S"
done
el trace
b() {  # b NAME [env...]
  local n=$1; shift
  timeout 90 env "$@" $K bench softmax --dtype f32 --shape 256x1048576 --shape 2048x1048576 --shape 64x4194304 --variants v9_gridsync --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n-f32.csv" > "$OUT/$n-f32.log" 2>&1
  timeout 60 env "$@" $K bench softmax --dtype bf16 --shape 128x2097152 --variants v9_gridsync --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n-bf16.csv" > "$OUT/$n-bf16.log" 2>&1
  echo "$n $(tab "$OUT/$n-f32.csv") $(tab "$OUT/$n-bf16.csv")" >> "$S"
}
for r in 1 2 3; do
  b default-$r
  b smpair-$r KERNLAB_V9=smpair=1
  el round $r
done
cat "$S"
