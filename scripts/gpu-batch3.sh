#!/usr/bin/env bash
# GPU batch: tests; the issue-2 tables with PyTorch columns; softmax widths; the issue-3 sweep.
set -uo pipefail
OUT=${OUT:-/tmp/kernlab-out}; mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=/tmp/kernlab-cache
K=.gpu/bin/kernlab
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 .gpu/run-tests > "$OUT/tests.log" 2>&1
echo "tests exit: $?"; grep -E "^test result|FAILED|panicked|no ptxas report" "$OUT/tests.log" | head -20
$K bench gelu --shape 16384x16384 --dtype f32,bf16 --torch --json "$OUT/gelu.json" > "$OUT/gelu.txt" 2>&1; echo "gelu exit $?"
$K bench softmax --shape 8192x4096 --dtype f32,bf16 --torch > "$OUT/softmax.txt" 2>&1; echo "softmax exit $?"
: > "$OUT/widths.txt"
for spec in "4096x12672 f32" "4096x32768 f32" "1024x131072 bf16"; do
  set -- $spec
  $K bench softmax --shape $1 --dtype $2 --variants v3_block_regs,v4_online,v5_cluster,auto --rep-ms 50 > "$OUT/w.txt" 2>&1; echo "softmax $spec exit $?"
  grep -E "^│ " "$OUT/w.txt" | grep -v variant | sed "s/^/$1 $2 /" | cut -c1-120 >> "$OUT/widths.txt"
done
rm -f "$OUT/w.txt"
timeout 240 $K sweep softmax --rows 4096 --cols 256..12672:1024 --variants manual,v1_block_row,auto --torch --plot "$OUT/sweep.svg" --json "$OUT/sweep.json" --rep-ms 40 > "$OUT/sweep.txt" 2>"$OUT/sweep.err"; echo "sweep exit $?"
grep -hE "^│|copy ceiling|MB moved" "$OUT/gelu.txt" "$OUT/softmax.txt" | cut -c1-160
cat "$OUT/widths.txt"; grep -E "^│" "$OUT/sweep.txt" | cut -c1-200
