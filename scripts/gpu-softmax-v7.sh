#!/usr/bin/env bash
# GPU batch (issue 5): v7_stream (tiles through shared memory by TMA bulk copies). First its
# validation on a few shapes, then every test (also the v6 G = 1 race fix and the matmul
# refactors not yet run on the GPU), racecheck over v6 and v7, then wide and medium benches
# and v7's tuning knobs.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
row() { grep -E "^│ (v|auto)" "$OUT/b.log" | awk -v s="$1" -F'┆' '{print s, $1, $3, $6}' >> "$S"; grep -iE "error|fail|panic" "$OUT/b.log" | head -3 >> "$S"; }
timeout 60 $K bench softmax --shape 300x4096 --dtype f32,bf16,f16 --variants v7_stream --rep-ms 2 > "$OUT/b.log" 2>&1; row first
el first
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 300 .gpu/run-tests > "$OUT/tests.log" 2>&1; echo "run-tests exit $?" >> "$S"
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests.log" | head -12 >> "$S"
el tests
timeout 90 compute-sanitizer --tool racecheck $K bench softmax --shape 2000x4099 --variants v6_split --rep-ms 1 --warmup-ms 1 > "$OUT/race6.log" 2>&1; echo "racecheck v6 exit $?: $(grep -E 'RACECHECK SUMMARY|hazard' "$OUT/race6.log" | head -2 | tr '\n' ' ')" >> "$S"
timeout 90 compute-sanitizer --tool racecheck $K bench softmax --shape 600x4100 --variants v7_stream --rep-ms 1 --warmup-ms 1 > "$OUT/race7.log" 2>&1; echo "racecheck v7 exit $?: $(grep -E 'RACECHECK SUMMARY|hazard' "$OUT/race7.log" | head -2 | tr '\n' ' ')" >> "$S"
timeout 90 compute-sanitizer --tool memcheck $K bench softmax --shape 7x1048577 --dtype bf16 --variants v7_stream --rep-ms 1 --warmup-ms 1 > "$OUT/mem7.log" 2>&1; echo "memcheck v7 exit $?: $(grep -E 'ERROR SUMMARY' "$OUT/mem7.log" | head -1)" >> "$S"
el sanitizers
for s in 8192x4096 4096x16384 4096x32768 2048x131072 256x1048576 64x4194304; do
  timeout 60 $K bench softmax --shape $s --dtype f32,bf16 --variants v3_block_regs,v6_split,v7_stream,auto --rep-ms 30 > "$OUT/b.log" 2>&1; row $s
done
el bench
for cfg in tile=16 tile=64 whole=16,part=16 part=64 part=16; do
  for s in 8192x4096 2048x131072 256x1048576; do
    KERNLAB_V7=$cfg timeout 60 $K bench softmax --shape $s --dtype f32 --variants v7_stream --rep-ms 30 > "$OUT/b.log" 2>&1; row "$cfg $s"
  done
done
el tuning
cat "$S"
