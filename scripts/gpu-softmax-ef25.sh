#!/usr/bin/env bash
# GPU batch (eighth session, experiment): ncu put v3's kernel alone at 62.9 / 127.2 µs at f32
# 4096×8192 / 4096×16384 (4.2 TB/s), against 70 / 135 µs per call in do_bench, where the L2
# is flushed by a write before each call, so the kernel also evicts those dirty lines.
# Inductor marks its reads L2 evict-first/last. v3 with its packed loads marked L2
# evict-first (KERNLAB_V3_EF=1) against plain, interleaved; then the softmax tests with it on.
# (Ran on a build with the evict-first loads; they were slower and removed, so KERNLAB_V3_EF no
# longer exists: docs/perf-notes.md, eighth session.)
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
tab() { python3 -c "
import csv
print(*[r['dtype']+':'+r['cols']+':'+r['variant'][:6]+'='+(str(round(float(r['gbps']))) if r['status']=='ok' else r['status'][:10]) for r in csv.DictReader(open('$1'))])"; }
for rep in 1 2; do for ef in 0 1; do
  env KERNLAB_V3_EF=$ef timeout 60 $K sweep softmax --rows 4096 --cols 4096,8192,16384,32768 --dtype f32,bf16 --variants v3_block_regs --rep-ms 15 --warmup-ms 5 --csv "$OUT/e.csv" > "$OUT/e$ef.log" 2>&1
  echo "ef=$ef: $(tab "$OUT/e.csv")" >> "$S"
done; done
el ab
env KERNLAB_V3_EF=1 timeout 120 $K sweep softmax --rows 4096 --cols 8192,16384 --dtype f32 --variants v3_block_regs --torch --rep-ms 15 --warmup-ms 5 --csv "$OUT/t.csv" > "$OUT/t.log" 2>&1
echo "ef=1 with torch: $(tab "$OUT/t.csv")" >> "$S"
el torch
KERNLAB_V3_EF=1 KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 200 .gpu/run-tests softmax > "$OUT/tests.log" 2>&1; echo "run-tests softmax (EF) exit $?" >> "$S"
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests.log" | grep -v " 0 passed" | head -8 >> "$S"
el tests
cat "$S"
