#!/usr/bin/env bash
# GPU batch (nineteenth session): the done-means sweep of this session (gpu-done83) ran bf16
# 131072–524288 columns 2–3% under the fifteenth session's. Is that the code or the run?
# The fifteenth session's binary (.gpu/bin/kernlab-old, built from 9bc3dae) against this
# one, `auto`, rotated, interleaved twice, same shapes; then every GPU test executable
# (the eighteenth session's launcher and shared-memory-attribute changes have run only the
# one new test on a GPU).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1
for r in 1 2; do
  for b in old new; do
    bin=$K; [ $b = old ] && bin=.gpu/bin/kernlab-old
    timeout 60 $bin bench softmax --dtype bf16 --shape 4096x65536 --shape 4096x131072 --shape 2048x262144 --shape 1024x524288 --variants auto --rep-ms 30 --rotate auto --csv "$OUT/ab-$b-bf16-$r.csv" > "$OUT/ab-$b-bf16-$r.log" 2>&1
    timeout 40 $bin bench softmax --dtype f32 --shape 4096x4097 --shape 4096x131072 --variants auto --rep-ms 30 --rotate auto --csv "$OUT/ab-$b-f32-$r.csv" > "$OUT/ab-$b-f32-$r.log" 2>&1
    echo "$b r$r $(ptab "$OUT/ab-$b-bf16-$r.csv") $(ptab "$OUT/ab-$b-f32-$r.csv")" >> "$S"
  done
done
el ab
gpu_tests 400
el tests
cat "$S"
