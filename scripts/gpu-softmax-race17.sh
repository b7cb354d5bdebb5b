#!/usr/bin/env bash
# GPU batch (sixth session): compute-sanitizer over v8 — racecheck (shared memory: each thread
# reads only the packs it copied itself; the cluster's DSMEM exchange) and memcheck — at one
# CTA a row with a shared-memory part (f32 70000, bf16 131072 odd-offset rows) and at clusters
# of 2 and 4 (f32 131072, 300001).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
for tool in racecheck memcheck; do
  timeout 100 compute-sanitizer --tool $tool $K bench softmax --shape 40x70000 --shape 8x131072 --shape 8x300001 --shape 8x131071 --dtype f32,bf16 --variants v8_onchip --rep-ms 1 --warmup-ms 1 > "$OUT/$tool.log" 2>&1
  echo "$tool exit $?: $(grep -E 'SUMMARY' "$OUT/$tool.log" | tr '\n' ' ') ok-lines $(grep -c '✓\|ok' "$OUT/$tool.log")" >> "$S"
  grep -iE "error|fail|invalid" "$OUT/$tool.log" | head -3 >> "$S"
  grep -E "v8_onchip" "$OUT/$tool.log" | head -8 | cut -c1-160 >> "$S"
  el $tool
done
cat "$S"
