#!/usr/bin/env bash
# GPU batch (issue 5): softmax v6_split (a row split across co-resident CTAs). Every test on
# the GPU first (also re-checks the matmul refactors), then wide rows v3/v4/v5/v6 side by
# side, then a quick matmul v6/v7/cuBLAS check.
set -uo pipefail
OUT=${OUT:-/tmp/kernlab-out}; mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=/tmp/kernlab-cache
K=.gpu/bin/kernlab
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 300 .gpu/run-tests > "$OUT/tests.log" 2>&1; el "tests exit $?"
grep -E "^test result|FAILED|panicked|failed" "$OUT/tests.log" | sort | uniq -c | head -20
for s in 4096x16384 4096x32768 4096x65536 4095x65537 2048x131072 1024x262144 256x1048576 255x1048577 128x2097152 64x4194304; do
  timeout 60 $K bench softmax --shape $s --dtype f32,bf16 --variants v3_block_regs,v4_online,v5_cluster,v6_split --rep-ms 40 > "$OUT/b-$s.log" 2>&1
  grep -E "^│ (v3|v4|v5|v6)" "$OUT/b-$s.log" | sed "s/^/$s /" | cut -c1-140
  grep -iE "error|refused|unsupported" "$OUT/b-$s.log" | head -3
done
el softmax
timeout 120 $K bench matmul --shape 8192x8192x8192 --dtype bf16 --variants v6_wgmma,v7_wgmma_tma_store,cublas --rep-ms 100 2>&1 | grep -E "^│ " | cut -c1-140
el done
