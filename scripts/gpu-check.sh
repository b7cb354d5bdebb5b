#!/usr/bin/env bash
# One call on the GPU machine: the tests with KERNLAB_REQUIRE_GPU=1, then the bench tables the
# issues ask for. Build here first with ../shared/gpu/pack; run there from the repo root with
# the device tool (carry .gpu). Logs go to $OUT (at most 8 files come back).
set -uo pipefail
OUT=${OUT:-/tmp/kernlab-out}
mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=/tmp/kernlab-cache
K=.gpu/bin/kernlab
WIDTHS=${WIDTHS:-"4096x256 4096x1024 4096x12672 4096x32768 1024x131072 256x1048576"}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$OUT/smi.csv"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 .gpu/run-tests > "$OUT/tests.log" 2>&1
  echo "tests exit: $?"; grep -E "^test result|FAILED|panicked" "$OUT/tests.log" | head -20
fi
if [ "${SKIP_GELU:-0}" != 1 ]; then
  $K bench gelu --shape 16384x16384 --dtype f32,bf16 --json "$OUT/gelu.json" > "$OUT/gelu.txt" 2>&1; echo "gelu exit $?"
fi
$K bench softmax --shape 8192x4096 --dtype f32,bf16 --json "$OUT/softmax.json" > "$OUT/softmax.txt" 2>&1; echo "softmax exit $?"
: > "$OUT/widths.txt"
for s in $WIDTHS; do
  $K bench softmax --shape $s --rep-ms 50 > "$OUT/w.txt" 2>&1; echo "softmax $s exit $?"
  grep -E "^│ " "$OUT/w.txt" | grep -v variant | sed "s/^/$s /" >> "$OUT/widths.txt"
done
rm -f "$OUT/w.txt"
grep -hE "^│|copy ceiling|^[a-z]+ .*MB moved" "$OUT"/gelu.txt "$OUT/softmax.txt" 2>/dev/null | grep -v "variant" | cut -c1-150
cut -c1-140 "$OUT/widths.txt"
