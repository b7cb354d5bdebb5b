#!/usr/bin/env bash
# GPU batch (nineteenth session): v8's kernel without the scalar head/tail code for rows that
# have none (softmax_v8_packed_*), against the code before it (.gpu/bin/kernlab-cur, built from
# f64a359), and with the packed kernel's row taken as blockIdx.x / csize (KL_V8_ROWDIV=1, the
# fifteenth session's prologue); `auto` (v8), rotated, interleaved twice; each point validated
# by bench before it is timed. (KL_V8_ROWDIV was then folded into the packed kernel and the macro
# removed: run again, the last two columns would measure the same code.)
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 20 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1
b16() { timeout 30 "$@" bench softmax --dtype bf16 --shape 2048x65536 --shape 2048x131072 --shape 1024x262144 --variants auto --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n.csv" > "$OUT/$n.log" 2>&1; echo "$n $(ptab "$OUT/$n.csv")" | tee -a "$S"; }
f32() { timeout 30 "$@" bench softmax --dtype f32 --shape 2048x65536 --shape 1024x262144 --variants auto --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n.csv" > "$OUT/$n.log" 2>&1; echo "$n $(ptab "$OUT/$n.csv")" | tee -a "$S"; }
for r in 1 2; do
  n=cur-$r; b16 .gpu/bin/kernlab-cur
  n=packed-$r; b16 $K
  n=rowdiv-$r; KERNLAB_NVRTC_DEFINES=KL_V8_ROWDIV=1 b16 $K
done
n=f32-cur; f32 .gpu/bin/kernlab-cur
n=f32-packed; f32 $K
el done
