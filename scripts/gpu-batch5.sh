#!/usr/bin/env bash
# GPU batch: every test; the profiler on manual vs fused GeLU; v4's write pass without cache
# hints on wide rows; the copy ceiling against PyTorch's copy_ in the same run; auto's pick.
set -uo pipefail
OUT=${OUT:-/tmp/kernlab-out}; mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=/tmp/kernlab-cache
K=.gpu/bin/kernlab
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 .gpu/run-tests > "$OUT/tests.log" 2>&1
echo "tests exit: $?"; grep -E "^test result|FAILED|panicked" "$OUT/tests.log" | head -20
{ $K profile gelu --variant manual --shape 8192x8192 --trace "$OUT/trace-gelu-manual.json" --json "$OUT/manual_profile.json"
  $K profile gelu --variant v2_vec16 --shape 8192x8192 --trace "$OUT/trace-gelu-v2.json"
  $K profile softmax --variant manual --shape 8192x4096 --row-limit 8; } > "$OUT/profile.txt" 2>&1; echo "profile exit $?"
: > "$OUT/wide.txt"
for spec in "1024x131072 f32" "256x1048576 f32" "256x1048576 bf16"; do
  set -- $spec
  $K bench softmax --shape $1 --dtype $2 --variants v4_online,auto --rep-ms 50 2>&1 | grep -E "^│ " | grep -v variant | sed "s/^/$1 $2 /" | cut -c1-130 >> "$OUT/wide.txt"
done
$K bench softmax --shape 8192x4096 --torch > "$OUT/softmax-torch.txt" 2>&1; echo "softmax --torch exit $?"
cat "$OUT/profile.txt" | cut -c1-200 | head -60
cat "$OUT/wide.txt"; grep -E "copy|^│" "$OUT/softmax-torch.txt" | cut -c1-190
