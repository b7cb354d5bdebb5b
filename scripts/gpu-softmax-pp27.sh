#!/usr/bin/env bash
# GPU batch (ninth session): v9 "ping-pong" (KERNLAB_V9=pp=1: groups g and g + half take turns
# to read, so one half reads while the other exchanges and writes) against v9 as it is.
# (1) correctness of the ping-pong kernel: the softmax tests with it, a bench (validates first)
# at odd shapes whose groups take several rows, compute-sanitizer racecheck;
# (2) interleaved A/B, twice, f32 and bf16 at 262144 / 1 Mi / 4 Mi; one run at one CTA an SM.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
for rep in 1 2; do
  for pp in 0 1; do
    env KERNLAB_V9=pp=$pp timeout 80 $K sweep softmax --rows 4096 --cols 262144,1048576,4194304 --max-elements 2^28 --dtype f32,bf16 --variants v9_gridsync --rep-ms 15 --warmup-ms 5 --csv "$OUT/ab$pp.csv" > "$OUT/ab$pp-$rep.log" 2>&1
    echo "v9 pp=$pp: $(tab "$OUT/ab$pp.csv")" >> "$S"
  done
done
el ab
env KERNLAB_V9=pp=1,per_sm=1 timeout 80 $K sweep softmax --rows 4096 --cols 262144,1048576,4194304 --max-elements 2^28 --dtype f32,bf16 --variants v9_gridsync --rep-ms 15 --warmup-ms 5 --csv "$OUT/pp1sm1.csv" > "$OUT/pp1sm1.log" 2>&1
echo "v9 pp=1 per_sm=1: $(tab "$OUT/pp1sm1.csv")" >> "$S"
el per_sm1
env KERNLAB_V9=pp=1 timeout 90 $K bench softmax --shape 300x65537 --shape 200x131072 --shape 3x1048577 --shape 7x2097153 --shape 61x4194304 --dtype f32,bf16,f16 --variants v9_gridsync --rep-ms 2 --warmup-ms 1 --csv "$OUT/ppodd.csv" > "$OUT/ppodd.log" 2>&1
echo "pp=1 odd shapes exit $?: $(python3 -c "import csv; print(*[r['rows']+'x'+r['cols']+':'+r['dtype']+'='+r['status'][:20] for r in csv.DictReader(open('$OUT/ppodd.csv'))])")" >> "$S"
el odd
KERNLAB_V9=pp=1 gpu_tests 150 softmax
el tests
env KERNLAB_V9=pp=1 timeout 100 compute-sanitizer --tool racecheck $K bench softmax --shape 300x65537 --shape 3x1048577 --dtype f32 --variants v9_gridsync --rep-ms 1 --warmup-ms 1 > "$OUT/racecheck.log" 2>&1
echo "pp=1 racecheck exit $?: $(grep -E 'SUMMARY' "$OUT/racecheck.log" | tr '\n' ' ')" >> "$S"
el racecheck
cat "$S"
