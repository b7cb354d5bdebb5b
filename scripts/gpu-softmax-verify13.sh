#!/usr/bin/env bash
# GPU batch (fifth session, after the final sweep): every test on the final binary with
# KERNLAB_REQUIRE_GPU=1, and racecheck over v6 (its per-thread state is now two passes).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 300 .gpu/run-tests > "$OUT/tests.log" 2>&1; echo "run-tests exit $?" >> "$S"
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests.log" | head -12 >> "$S"
el tests
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
timeout 90 compute-sanitizer --tool racecheck $K bench softmax --shape 300x40000 --dtype f32,bf16 --variants v6_split --rep-ms 1 --warmup-ms 1 > "$OUT/race.log" 2>&1; echo "racecheck exit $?: $(grep -E 'RACECHECK SUMMARY' "$OUT/race.log" | tr '\n' ' ')" >> "$S"
el race
cat "$S"
