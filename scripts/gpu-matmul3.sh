#!/usr/bin/env bash
# GPU batch (issue 4, third run): v7 (v6 + TMA-store epilogue) on edge shapes under launch
# blocking, the whole suite, autotune v6/v7, and the 8192³ benches with the PyTorch columns.
set -uo pipefail
OUT=${OUT:-/tmp/kernlab-out}; mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=/tmp/kernlab-cache
K=.gpu/bin/kernlab
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
for s in 128x128x64 127x255x72 50x264x64 1x8x8 100x100x64 513x520x136 1024x768x2048; do
  KERNLAB_LAUNCH_BLOCKING=1 timeout 60 $K bench linear --variants v7_wgmma_tma_store --shape $s --dtype bf16,f16 --rep-ms 5 --warmup-ms 1 > "$OUT/smoke.txt" 2>&1
  echo "smoke v7 $s rc=$? $(grep -E '^│ v7' "$OUT/smoke.txt" | awk -F'┆' '{printf "%s/%s ", $(NF-1), $NF}' | tr -s ' ')"
  grep -iE "^note|error" "$OUT/smoke.txt" | head -2
done
el smoke
timeout 240 env KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 .gpu/run-tests > "$OUT/tests.log" 2>&1
el "tests exit: $?"; grep -E "^test result|FAILED|panicked" "$OUT/tests.log" | head -12
timeout 90 $K autotune linear --shape 8192x8192x8192 --dtype bf16 --variants v6_wgmma,v7_wgmma_tma_store > "$OUT/tune-lin.txt" 2>&1; el "autotune linear exit $?"
timeout 90 $K autotune matmul --shape 8192x8192x8192 --dtype bf16 --variants v6_wgmma,v7_wgmma_tma_store > "$OUT/tune-mm.txt" 2>&1; el "autotune matmul exit $?"
timeout 150 $K bench linear --shape 8192x8192x8192 --dtype bf16 --variants manual,v6_wgmma,v7_wgmma_tma_store,auto,cublaslt --torch > "$OUT/lin.txt" 2>&1; el "bench linear exit $?"
timeout 120 $K bench matmul --shape 8192x8192x8192 --dtype bf16 --variants v6_wgmma,v7_wgmma_tma_store,auto,cublas,cublaslt > "$OUT/mm.txt" 2>&1; el "bench matmul exit $?"
grep -E "^│ " "$OUT/tune-lin.txt" "$OUT/tune-mm.txt" | cut -c1-130 | head -30
grep -hE "^│ |^note" "$OUT/lin.txt" "$OUT/mm.txt" | grep -v "variant  " | cut -c1-160
