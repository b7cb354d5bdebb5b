#!/usr/bin/env bash
# GPU batch (issue 5, end of the fourth session): racecheck over v6 and v7 (after a plain
# bench has cached the ceilings, so the sanitizer reaches them), then the wide widths at
# 4096 rows (fewer where memory asks) with the PyTorch columns, through the new heuristic.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1
timeout 50 compute-sanitizer --tool racecheck $K bench softmax --shape 300x40000 --variants v6_split,v7_stream --rep-ms 1 --warmup-ms 1 > "$OUT/race.log" 2>&1; echo "racecheck exit $?: $(grep -cE 'softmax_v[67]' "$OUT/race.log") softmax lines; $(grep -E 'RACECHECK SUMMARY' "$OUT/race.log" | tr '\n' ' ')" >> "$S"
el race
timeout 150 $K sweep softmax --rows 4096 --cols 65536,131072,1048576,4194304 --max-elements 2^28 --dtype f32,bf16 --variants auto --torch --rep-ms 20 --csv "$OUT/wide.csv" > "$OUT/sweep.log" 2>&1; echo "sweep exit $?" >> "$S"
el sweep
cat "$S"; tail -c 5000 "$OUT/sweep.log"
