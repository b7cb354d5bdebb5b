#!/usr/bin/env bash
# GPU batch (issue 5): v5 with clusters of ≤ 8 larger CTAs before clusters of 16; v6 back to
# CTAs of 512 threads × 8 slots. The softmax and PTX tests, then wide rows v4/v5/v6.
set -uo pipefail
OUT=${OUT:-/tmp/kernlab-out}; mkdir -p "$OUT"
export KERNLAB_CACHE_DIR=/tmp/kernlab-cache
K=.gpu/bin/kernlab
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
for t in .gpu/tests/*; do KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 150 "$t" --test-threads=1 softmax ptx >> "$OUT/tests.log" 2>&1; echo "tests $(basename $t) exit $?" >> "$OUT/summary.txt"; done
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests.log" | head -8 >> "$OUT/summary.txt"
el tests
for s in 4096x65536 2048x131072 1024x262144 512x524288 256x1048576 128x2097152 64x4194304; do
  timeout 60 $K bench softmax --shape $s --dtype f32,bf16 --variants v4_online,v5_cluster,v6_split --rep-ms 30 > "$OUT/b.log" 2>&1
  grep -E "^│ v" "$OUT/b.log" | awk -v s=$s -F'┆' '{print s, $1, $3, $6}' >> "$OUT/summary.txt"
done
el bench
cat "$OUT/summary.txt"
