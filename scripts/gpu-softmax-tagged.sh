#!/usr/bin/env bash
# GPU batch (issue 5): v6/v7 exchange through tagged slots (relaxed 64-bit words, no
# release/acquire), v8 removed, v7 defaults from the knob runs. Every test, racecheck on v6,
# then the wide widths across v3–v7 and auto.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
row() { grep -E "^│ (v|auto)" "$OUT/b.log" | grep -v variant | awk -v s="$1" -F'┆' '{print s, $1, $3, $6, $10}' >> "$S"; grep -iE "error|fail|panic" "$OUT/b.log" | head -3 >> "$S"; }
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 300 .gpu/run-tests > "$OUT/tests.log" 2>&1; echo "run-tests exit $?" >> "$S"
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests.log" | head -12 >> "$S"
el tests
timeout 90 compute-sanitizer --tool racecheck $K bench softmax --shape 300x40000 --variants v6_split,v7_stream --rep-ms 1 --warmup-ms 1 > "$OUT/race.log" 2>&1; echo "racecheck exit $?: $(grep -E 'RACECHECK SUMMARY' "$OUT/race.log" | tr '\n' ' ')" >> "$S"
el race
for s in 4096x32768 4096x65536 2048x131072 512x524288 256x1048576 64x4194304; do
  timeout 90 $K bench softmax --shape $s --dtype f32,bf16 --variants v3_block_regs,v4_online,v5_cluster,v6_split,v7_stream,auto --rep-ms 20 > "$OUT/b.log" 2>&1; row "$s"
done
el bench
cat "$S"
