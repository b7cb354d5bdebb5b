#!/usr/bin/env bash
# GPU batch (twenty-first session): v9's knobs again, now that v9 has its ping-pong form and
# its prefetched scalars (the seventh session chose parts at most half in shared memory and
# two CTAs an SM before either existed). v9 alone at the three shapes `auto` gives it
# (f32 256×1 Mi and 64×4 Mi, bf16 128×2 Mi), each setting in its own process (KERNLAB_V9 is
# read once a process), two rounds interleaved; every point validated before it is timed.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
b() {  # b NAME [env...]
  local n=$1; shift
  timeout 90 env "$@" $K bench softmax --dtype f32 --shape 256x1048576 --shape 64x4194304 --variants v9_gridsync --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n-f32.csv" > "$OUT/$n-f32.log" 2>&1
  timeout 60 env "$@" $K bench softmax --dtype bf16 --shape 128x2097152 --variants v9_gridsync --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n-bf16.csv" > "$OUT/$n-bf16.log" 2>&1
  echo "$n $(tab "$OUT/$n-f32.csv") $(tab "$OUT/$n-bf16.csv")" >> "$S"
}
for r in 1 2; do
  b default-$r
  b smem96-$r KERNLAB_V9=smem_kb=96
  b smem0-$r KERNLAB_V9=smem_kb=0
  b pp0-$r KERNLAB_V9=pp=0
  b persm1-$r KERNLAB_V9=per_sm=1
  b persm1-smem0-$r KERNLAB_V9=per_sm=1,smem_kb=0
  b plain-$r KERNLAB_NVRTC_DEFINES=KL_ROW_LOAD_HINT=0
  el round $r
done
cat "$S"
