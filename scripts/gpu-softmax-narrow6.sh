#!/usr/bin/env bash
# GPU batch (issue 5): v2 with several rows per warp for narrow rows, v6 for odd widths past
# 4096 in auto. The softmax tests, then the changed widths with the PyTorch columns.
set -uo pipefail
OUT=${OUT:-/tmp/kernlab-out}; mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=/tmp/kernlab-cache
K=.gpu/bin/kernlab
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
for t in .gpu/tests/*; do KERNLAB_REQUIRE_GPU=1 timeout 100 "$t" --test-threads=1 softmax >> "$OUT/tests.log" 2>&1; echo "tests $(basename $t) exit $?" >> "$OUT/summary.txt"; done
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests.log" | head -5 >> "$OUT/summary.txt"
el tests >> "$OUT/summary.txt"
timeout 200 $K sweep softmax --rows 4096 --cols 32,33,64,128,255,256,512,4097,16385 --dtype f32,bf16 \
  --variants v2_warp_row,v3_block_regs,v6_split,auto --torch --rep-ms 30 --csv "$OUT/narrow.csv" \
  > "$OUT/narrow.txt" 2> "$OUT/narrow.err"
echo "sweep exit $?" >> "$OUT/summary.txt"; el sweep >> "$OUT/summary.txt"
grep -E "copy" "$OUT/narrow.txt" | head -2 >> "$OUT/summary.txt"
find / -xdev \( -name 'libnvToolsExt*' -o -name 'libnvtx*' -o -name 'nsys' \) 2>/dev/null | head -5 >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
