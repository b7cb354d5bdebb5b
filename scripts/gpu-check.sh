#!/usr/bin/env bash
# One call on the GPU machine: the tests with KERNLAB_REQUIRE_GPU=1, then the bench tables the
# issues ask for. Build here first with ../shared/gpu/pack; run there from the repo root with
# the device tool (carry .gpu). Logs and JSON go to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/kernlab-out}
mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=/tmp/kernlab-cache
K=.gpu/bin/kernlab
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$OUT/smi.csv"
echo "== tests"
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 .gpu/run-tests > "$OUT/tests.log" 2>&1
echo "tests exit: $?"; grep -E "^test result|FAILED|panicked" "$OUT/tests.log" | head -20
echo "== bench"
$K bench gelu --shape 16384x16384 --dtype f32,bf16 --json "$OUT/gelu.json" > "$OUT/gelu.txt" 2>"$OUT/gelu.err"; echo "gelu exit $?"
$K bench softmax --shape 8192x4096 --dtype f32,bf16 --json "$OUT/softmax.json" > "$OUT/softmax.txt" 2>"$OUT/softmax.err"; echo "softmax exit $?"
for s in 4096x256 4096x1024 4096x12672 4096x32768 1024x131072 256x1048576; do
  $K bench softmax --shape $s --variants manual,v1_block_row,v4_online,auto --rep-ms 50 --json "$OUT/softmax-$s.json" > "$OUT/softmax-$s.txt" 2>&1; echo "softmax $s exit $?"
done
cat "$OUT/gelu.txt" "$OUT/softmax.txt"
for s in 4096x256 4096x1024 4096x12672 4096x32768 1024x131072 256x1048576; do grep -E "^│ (auto|v4|v1|manual)" "$OUT/softmax-$s.txt" | sed "s/^/$s /"; done
