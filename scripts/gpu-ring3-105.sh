#!/usr/bin/env bash
# GPU batch (written in the twenty-third session; run in the twenty-fourth against df4f517, the form since removed): v9's ring form (KERNLAB_V9=ring=3: three 320-thread CTAs an
# SM placed by SM, their groups taking turns in threes, so a CTA's exchange and writes have two
# others' reads to hide behind, not one). Its GPU test, then one process a setting: default
# (ping-pong), ring=3 and ring=3 with parts filling shared memory (smem_kb=0), at f32 256×1 Mi
# and 128×2 Mi and bf16 128×2 Mi; a trace of ring=3 at f32 1 Mi; a second round if time allows.
# Every point validated before it is timed.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_tests 90 ring softmax_v9_ring3
el tests
b() {  # b NAME [env...]
  local n=$1; shift
  timeout 40 env "$@" $K bench softmax --dtype f32 --shape 256x1048576 --shape 128x2097152 --variants v9_gridsync --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n-f32.csv" > "$OUT/$n-f32.log" 2>&1
  timeout 30 env "$@" $K bench softmax --dtype bf16 --shape 128x2097152 --variants v9_gridsync --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n-bf16.csv" > "$OUT/$n-bf16.log" 2>&1
  echo "$n $(tab "$OUT/$n-f32.csv") $(tab "$OUT/$n-bf16.csv")" >> "$S"
}
b default-1
b ring3-1 KERNLAB_V9=ring=3
b ring3all-1 KERNLAB_V9=ring=3,smem_kb=0
el round 1
KERNLAB_V9=ring=3 KERNLAB_NVRTC_DEFINES=KL_V9_TRACE=1 timeout 40 .gpu/bin/v9_trace 256 1048576 f32 1 > "$OUT/trace-ring3.log" 2>&1
echo "trace exit $?" >> "$S"; grep -E "call|skew|apart|spread|wait|row time|top →|share an SM" "$OUT/trace-ring3.log" | cut -c1-200 >> "$S"
el trace
b default-2
b ring3-2 KERNLAB_V9=ring=3
b ring3all-2 KERNLAB_V9=ring=3,smem_kb=0
el round 2
cat "$S"
