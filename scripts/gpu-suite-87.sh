#!/usr/bin/env bash
# GPU batch (prepared in the nineteenth session for the next one; run it first): every GPU test
# executable (KERNLAB_REQUIRE_GPU=1, KERNLAB_REQUIRE_NVRTC=1) on v8's packed kernel
# (softmax_v8_packed_*, measured by bench only), then `auto` at the aligned v8 rows the
# nineteenth session measured, for the kept form at 4096 rows and at f32.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
gpu_tests 400
el tests
for dt in bf16 f32; do
  timeout 60 $K bench softmax --dtype $dt --shape 4096x65536 --shape 4096x131072 --shape 2048x262144 --variants auto --rep-ms 30 --rotate auto --csv "$OUT/aligned-$dt.csv" > "$OUT/aligned-$dt.log" 2>&1
  echo "$(ptab "$OUT/aligned-$dt.csv")" >> "$S"
done
el bench
cat "$S"
