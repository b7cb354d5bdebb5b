#!/usr/bin/env bash
# GPU batch: every test (the profiler's launch-blocking check included), and a launch-blocking
# profile of the manual GeLU for docs/profile/.
set -uo pipefail
OUT=${OUT:-/tmp/kernlab-out}; mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=/tmp/kernlab-cache
K=.gpu/bin/kernlab
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 .gpu/run-tests > "$OUT/tests.log" 2>&1
echo "tests exit: $?"; grep -E "^test result|FAILED|panicked" "$OUT/tests.log" | head -20
$K profile gelu --variant manual --shape 8192x8192 --sync-each-launch --trace "$OUT/trace-gelu-manual-sync.json" > "$OUT/profile-sync.txt" 2>&1; echo "profile exit $?"
$K profile gelu --variant manual --shape 8192x8192 > "$OUT/profile-async.txt" 2>&1; echo "profile exit $?"
grep -E "GPU busy|per iteration|overhead|cuStreamSynchronize|cuLaunchKernel" "$OUT/profile-sync.txt" "$OUT/profile-async.txt" | cut -c1-200
