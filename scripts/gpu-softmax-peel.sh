#!/usr/bin/env bash
# GPU batch (issue 5): v4's peeled kernel for odd widths — the softmax tests on the GPU, then
# odd and even wide widths before/after (auto and v4).
set -uo pipefail
OUT=${OUT:-/tmp/kernlab-out}; mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=/tmp/kernlab-cache
K=.gpu/bin/kernlab
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
for t in .gpu/tests/*; do KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 150 "$t" --test-threads=1 softmax ptx > "$OUT/tests.log" 2>&1; el "tests exit $?"; done
grep -E "^test result|FAILED|panicked" "$OUT/tests.log" | head
for s in 4095x65537 255x1048577 4096x4097; do
  timeout 40 $K bench softmax --shape $s --dtype f32,bf16 --variants v4_online,auto --rep-ms 50 2>&1 | grep -E "^│ (v4|auto)" | sed "s/^/$s /" | cut -c1-150
done
el done
