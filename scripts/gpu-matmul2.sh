#!/usr/bin/env bash
# GPU batch (issue 4, second run): autotune v5/v6 at 8192³ bf16, then the benches with the
# PyTorch columns, cuBLAS + a separate GeLU, the square sweep, and f32.
set -uo pipefail
OUT=${OUT:-/tmp/kernlab-out}; mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=/tmp/kernlab-cache
K=.gpu/bin/kernlab
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
timeout 120 $K autotune matmul --shape 8192x8192x8192 --dtype bf16 --variants v5_mma,v6_wgmma > "$OUT/tune-mm.txt" 2>&1; el "autotune matmul exit $?"
timeout 60 $K autotune linear --shape 8192x8192x8192 --dtype bf16 --variants v6_wgmma > "$OUT/tune-lin.txt" 2>&1; el "autotune linear exit $?"
timeout 150 $K bench linear --shape 8192x8192x8192 --dtype bf16 --variants manual,v5_mma,v6_wgmma,auto,cublaslt --torch > "$OUT/lin.txt" 2>&1; el "bench linear exit $?"
timeout 150 $K bench matmul --shape 8192x8192x8192 --dtype bf16 --variants v3_regs,v4_grouped,v5_mma,v6_wgmma,auto,cublas,cublaslt --torch > "$OUT/mm.txt" 2>&1; el "bench matmul exit $?"
timeout 30 $K bench gelu --shape 8192x8192 --dtype bf16 --variants v2_vec16 > "$OUT/gelu.txt" 2>&1; el "bench gelu exit $?"
timeout 200 $K sweep matmul --square 1024..16384 --dtype bf16 --variants v3_regs,v4_grouped,v5_mma,v6_wgmma,auto,cublas --plot "$OUT/matmul-sweep.svg" --csv "$OUT/matmul-sweep.csv" > "$OUT/sweep.txt" 2>&1; el "sweep exit $?"
timeout 60 $K bench matmul --shape 4096x4096x4096 --dtype f32 --variants v2_smem,v3_regs,v4_grouped,auto,cublas,cublaslt > "$OUT/mm-f32.txt" 2>&1; el "f32 exit $?"
grep -E "^│ " "$OUT/tune-mm.txt" | head -8 | cut -c1-140; grep -E "^cached" "$OUT/tune-mm.txt" "$OUT/tune-lin.txt" | cut -c1-160
grep -hE "^│ |^copy|^PyTorch|^note" "$OUT/lin.txt" "$OUT/mm.txt" "$OUT/gelu.txt" "$OUT/mm-f32.txt" | grep -v "variant  " | cut -c1-150
grep -E "^│" "$OUT/sweep.txt" | cut -c1-150
