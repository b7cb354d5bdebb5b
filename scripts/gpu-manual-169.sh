#!/usr/bin/env bash
# GPU batch (thirty-fourth session), one call (~2-3 min): after manual softmax and manual gelu
# took their f32 copy of a 16-bit input from one helper (ops::manual_x_f32), the ops GPU tests
# and both manual tiers in bench (validated against the f64 reference before timing), every
# dtype, softmax and log_softmax. Prediction: all pass, as before the change.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_tests 240 ops::
for op in gelu softmax; do
  timeout 60 $K bench $op --shape 1000x4097 --dtype f32,bf16,f16 --variants manual --rep-ms 2 --csv "$OUT/$op.csv" > "$OUT/$op.log" 2>&1
  echo "$op exit $? $(tab "$OUT/$op.csv")" >> "$S"
done
timeout 60 $K bench softmax --log-softmax --shape 1000x4097 --dtype f32,bf16,f16 --variants manual --rep-ms 2 --csv "$OUT/log.csv" > "$OUT/log.log" 2>&1
echo "log_softmax exit $? $(tab "$OUT/log.csv")" >> "$S"
el done
cat "$S"
