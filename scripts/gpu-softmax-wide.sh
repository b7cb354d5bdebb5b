#!/usr/bin/env bash
# GPU batch (issue 5): softmax autotune at two shapes, then the sweep from 32 to 4 Mi columns
# (powers of two and odd widths), 4096 rows or fewer (≤ 2^28 elements), with the PyTorch columns.
set -uo pipefail
OUT=${OUT:-/tmp/kernlab-out}; mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=/tmp/kernlab-cache
K=.gpu/bin/kernlab
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
timeout 60 $K autotune softmax --shape 4096x1280 --shape 1024x131072 --dtype f32,bf16 --dry-run > "$OUT/tune-sm.txt" 2>&1; el "autotune softmax exit $?"
timeout 450 $K sweep softmax --rows 4096 --cols 32..4194304:x2,1000,4097,65537,1048577 --max-elements 2^28 \
  --dtype f32,bf16 --variants v1_block_row,v2_warp_row,v3_block_regs,v4_online,v5_cluster,auto --torch --rep-ms 50 \
  --plot "$OUT/softmax-wide.svg" --csv "$OUT/softmax-wide.csv" > "$OUT/wide.txt" 2> "$OUT/wide.err"; el "sweep exit $?"
grep -E "^│ |^cached|^would" "$OUT/tune-sm.txt" | cut -c1-120 | head -24
tail -2 "$OUT/wide.err"; grep -E "^│" "$OUT/wide.txt" | cut -c1-230 | head -30
