#!/usr/bin/env bash
# GPU batch (issue 5): v7_stream with the lagged exchange (reduce tile k, write tile k − lag)
# and two CTAs an SM. The softmax tests and PTX checks, then v7's knobs on wide and medium rows.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
row() { grep -E "^│ (v|auto)" "$OUT/b.log" | grep -v variant | awk -v s="$1" -F'┆' '{print s, $1, $3, $6}' >> "$S"; grep -iE "error|fail|panic" "$OUT/b.log" | head -3 >> "$S"; }
for t in .gpu/tests/*; do KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 200 "$t" --test-threads=1 softmax ptx >> "$OUT/tests.log" 2>&1; echo "tests $(basename $t) exit $?" >> "$S"; done
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests.log" | head -8 >> "$S"
el tests
for cfg in "" lag=0 lag=2 per_sm=1 part=16 part=64 part=16,lag=2 per_sm=1,lag=2; do
  for s in 2048x131072 256x1048576 4096x32768 8192x4096; do
    KERNLAB_V7=$cfg timeout 60 $K bench softmax --shape $s --dtype f32 --variants v7_stream --rep-ms 20 > "$OUT/b.log" 2>&1; row "[$cfg] $s"
  done
done
el knobs
cat "$S"
