#!/usr/bin/env bash
# GPU batch (tenth session): v8's k4 form (four packs a thread, 32 registers, twice the
# threads; rows one CTA holds that way) against its K = 8 form (KERNLAB_V8=k4=0), interleaved
# twice at odd and 16-bit widths where auto runs v8 with one CTA a row; auto and v3 beside
# them once; then the softmax GPU tests on this build.
# (Ran on a build with the k4 form; it was slower and removed, so KERNLAB_V8=k4 no longer
# exists: docs/perf-notes.md, tenth session.)
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
W=1025,2001,3001,4097,6007,8193,12345,16385,24577,32768
tab2() { python3 -c "
import csv
print(*[r['dtype']+':'+r['cols']+':'+r['variant'][:4]+(('('+r['picked'][:4]+')') if r.get('picked') else '')+'='+(str(round(float(r['gbps']))) if r['status']=='ok' else r['status'][:10]) for r in csv.DictReader(open('$1'))])"; }
for rep in 1 2; do
  for k4 in 1 0; do
    env KERNLAB_V8=k4=$k4 timeout 90 $K sweep softmax --rows 4096 --cols $W --dtype f32,bf16 --variants v8_onchip --rep-ms 10 --warmup-ms 4 --csv "$OUT/k4-$k4.csv" > "$OUT/k4-$k4-$rep.log" 2>&1
    echo "v8 k4=$k4: $(tab "$OUT/k4-$k4.csv")" >> "$S"
  done
done
el ab
timeout 120 $K sweep softmax --rows 4096 --cols $W --dtype f32,bf16 --variants v3_block_regs,auto --rep-ms 10 --warmup-ms 4 --csv "$OUT/auto.csv" > "$OUT/auto.log" 2>&1
echo "v3, auto: $(tab2 "$OUT/auto.csv")" >> "$S"
el auto
gpu_tests 200 softmax
el tests
cat "$S"
