#!/usr/bin/env bash
# GPU batch (issue 5): the softmax tests on the GPU (v6 and the new width heuristic), then the
# 32 … 4 Mi sweep of docs/softmax.md with every version, auto and the PyTorch columns.
set -uo pipefail
OUT=${OUT:-/tmp/kernlab-out}; mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=/tmp/kernlab-cache
K=.gpu/bin/kernlab
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
for t in .gpu/tests/*; do KERNLAB_REQUIRE_GPU=1 timeout 100 "$t" --test-threads=1 softmax >> "$OUT/tests.log" 2>&1; echo "tests $(basename $t) exit $?" >> "$OUT/summary.txt"; done
grep -E "^test .*FAILED|panicked|^test result: F" "$OUT/tests.log" | head -5 >> "$OUT/summary.txt"
el tests >> "$OUT/summary.txt"
timeout 470 $K sweep softmax --rows 4096 --cols 32..4194304:x2,33,255,1000,4097,16385,65537,1048577 \
  --max-elements 2^28 --dtype f32,bf16 \
  --variants v1_block_row,v2_warp_row,v3_block_regs,v4_online,v5_cluster,v6_split,auto \
  --torch --rep-ms 30 --plot "$OUT/softmax-sweep-wide.svg" --csv "$OUT/softmax-sweep-wide.csv" \
  > "$OUT/sweep.txt" 2> "$OUT/sweep.err"
echo "sweep exit $?" >> "$OUT/summary.txt"
el sweep >> "$OUT/summary.txt"
tail -3 "$OUT/sweep.err" >> "$OUT/summary.txt"
grep -E "copy" "$OUT/sweep.txt" | head -3 >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
