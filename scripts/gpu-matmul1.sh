#!/usr/bin/env bash
# GPU batch (issue 4, first run): smoke-test each GEMM version on small shapes (launch
# blocking, so a fault names its kernel), the test suite, the 8192³ benches, the cuBLAS
# kernels at 2048 vs 128 (issue 6), and whether libnvToolsExt is there.
set -uo pipefail
OUT=${OUT:-/tmp/kernlab-out}; mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=/tmp/kernlab-cache
K=.gpu/bin/kernlab
for v in v1_naive v2_smem v3_regs v4_grouped v5_mma v6_wgmma cublas cublaslt auto; do
  for s in 128x128x64 127x255x72 1024x768x2048; do
    KERNLAB_LAUNCH_BLOCKING=1 timeout 60 $K bench matmul --variants $v --shape $s --dtype bf16 --rep-ms 5 --warmup-ms 1 > "$OUT/smoke.txt" 2>&1
    rc=$?; st=$(grep -E "^│ $v" "$OUT/smoke.txt" | head -1 | awk -F'┆' '{print $NF, $(NF-1), $6}' | tr -s ' ')
    echo "smoke $v $s rc=$rc $st"; [ $rc -ne 0 ] && grep -iE "error|fail|note" "$OUT/smoke.txt" | head -3
  done
done 2>&1 | tee "$OUT/smoke-all.txt" | grep -vE "rc=0 ok" | head -40
grep -c "rc=0 ok" "$OUT/smoke-all.txt"
timeout 300 env KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 .gpu/run-tests > "$OUT/tests.log" 2>&1
echo "tests exit: $?"; grep -E "^test result|FAILED|panicked" "$OUT/tests.log" | head -20
timeout 150 $K bench matmul --shape 8192x8192x8192 --dtype bf16 > "$OUT/mm-bf16.txt" 2>&1; echo "bench matmul exit $?"
timeout 100 $K bench linear --shape 8192x8192x8192 --dtype bf16 --variants manual,v5_mma,v6_wgmma,auto,cublaslt > "$OUT/lin-bf16.txt" 2>&1; echo "bench linear exit $?"
$K profile matmul --variant cublas --shape 2048x2048x2048 --dtype bf16 --row-limit 4 > "$OUT/prof-2048.txt" 2>&1; echo "profile exit $?"
$K profile matmul --variant cublas --shape 128x128x128 --dtype bf16 --row-limit 4 > "$OUT/prof-128.txt" 2>&1; echo "profile exit $?"
(ldconfig -p | grep -i nvtoolsext; find / -name "libnvToolsExt*" -not -path "/proc/*" 2>/dev/null | head -5) > "$OUT/nvtx.txt"
echo "nvtx libs: $(wc -l < "$OUT/nvtx.txt")"; head -3 "$OUT/nvtx.txt"
grep -E "^│ " "$OUT/mm-bf16.txt" "$OUT/lin-bf16.txt" | cut -c1-175
grep -hE "^│ [a-z_]|^note" "$OUT/prof-2048.txt" "$OUT/prof-128.txt" | cut -c1-150 | head -14
