#!/usr/bin/env bash
# GPU batch: tests, softmax across widths (v3/v4/v5/auto), and the issue-3 sweep with --torch.
set -uo pipefail
OUT=${OUT:-/tmp/kernlab-out}; mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=/tmp/kernlab-cache
K=.gpu/bin/kernlab
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 .gpu/run-tests > "$OUT/tests.log" 2>&1
echo "tests exit: $?"; grep -E "^test result|FAILED|panicked|checked through the driver" "$OUT/tests.log" | head -20
: > "$OUT/widths.txt"
for spec in "8192x4096 f32" "8192x4096 bf16" "4096x12672 f32" "4096x32768 f32" "1024x131072 f32" "1024x131072 bf16" "512x262144 f32" "256x1048576 bf16" "256x1048576 f32"; do
  set -- $spec
  $K bench softmax --shape $1 --dtype $2 --variants v3_block_regs,v4_online,v5_cluster,auto --rep-ms 50 > "$OUT/w.txt" 2>&1; echo "softmax $spec exit $?"
  grep -E "^│ " "$OUT/w.txt" | grep -v variant | sed "s/^/$1 $2 /" | cut -c1-120 >> "$OUT/widths.txt"
  grep -E "^note" "$OUT/w.txt" | cut -c1-200 >> "$OUT/widths.txt"
done
rm -f "$OUT/w.txt"
timeout 300 $K sweep softmax --rows 4096 --cols 256..12672:1024 --torch --plot "$OUT/sweep.svg" --json "$OUT/sweep.json" --rep-ms 40 > "$OUT/sweep.txt" 2>"$OUT/sweep.err"; echo "sweep exit $?"
cat "$OUT/widths.txt"; cut -c1-220 "$OUT/sweep.txt" | tail -30; tail -3 "$OUT/sweep.err"
