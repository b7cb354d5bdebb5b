#!/usr/bin/env bash
# GPU batch (end of the third session): every test on the GPU; whether libnvtx3interop
# exports the NVTX C API and whether `ncu --nvtx` sees kernlab's ranges around a kernel.
set -uo pipefail
OUT=${OUT:-/tmp/kernlab-out}; mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=/tmp/kernlab-cache
K=.gpu/bin/kernlab
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
L=/usr/local/cuda-13.0/targets/x86_64-linux/lib/libnvtx3interop.so.1
nm -D "$L" 2>/dev/null | grep -E " T nvtx(RangePushA|RangePop)$" > "$OUT/summary.txt"
$K doctor 2>&1 | grep -i nvtx >> "$OUT/summary.txt"
timeout 60 ncu --clock-control none --nvtx -k regex:softmax_v3 -c 1 $K bench softmax --shape 1024x1024 --variants v3_block_regs --rep-ms 1 > "$OUT/ncu-nvtx.log" 2>&1
grep -iE "nvtx|push/pop|softmax/v3" "$OUT/ncu-nvtx.log" | head -8 >> "$OUT/summary.txt"
el nvtx >> "$OUT/summary.txt"
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 200 .gpu/run-tests > "$OUT/tests.log" 2>&1; echo "run-tests exit $?" >> "$OUT/summary.txt"
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests.log" >> "$OUT/summary.txt"
el tests >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
