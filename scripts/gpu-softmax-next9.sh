#!/usr/bin/env bash
# GPU batch prepared at the end of the fourth session (not yet run): verify the review's
# guards (v7 lag clamp, occupancy check, fenced zeroing, G = 1 skip) and the sm_90 gating of
# auto's rules with every test and racecheck (`check`), then the full width sweep with this
# binary (`sweep`): two device calls, each under the 600 s limit.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
PHASE=${1:-check}
if [ "$PHASE" = check ]; then
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 300 .gpu/run-tests > "$OUT/tests.log" 2>&1; echo "run-tests exit $?" >> "$S"
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests.log" | head -12 >> "$S"
el tests
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
timeout 60 compute-sanitizer --tool racecheck $K bench softmax --shape 300x40000 --variants v6_split,v7_stream --rep-ms 1 --warmup-ms 1 > "$OUT/race.log" 2>&1; echo "racecheck exit $?: $(grep -E 'RACECHECK SUMMARY' "$OUT/race.log" | tr '\n' ' ')" >> "$S"
el race
else
timeout 540 $K sweep softmax --rows 4096 --cols 32..4194304:x2,33,255,1000,4097,16385,65537,1048577 --max-elements 2^28 --dtype f32,bf16 --variants v2_warp_row,v3_block_regs,v4_online,v5_cluster,v6_split,v7_stream,auto --torch --rep-ms 30 --plot "$OUT/softmax-sweep-wide.svg" --csv "$OUT/softmax-sweep-wide.csv" > "$OUT/sweep.log" 2>&1; echo "sweep exit $?" >> "$S"
el sweep
tail -c 6000 "$OUT/sweep.log"
fi
cat "$S"
