#!/usr/bin/env bash
# GPU batch (twenty-eighth session), after gpu-done-128.sh's f32 sweep ran past its 300 s
# (run 125's f32 sweep had 540): the f32 done-means sweep without its four largest points
# other than 1 Mi (300007, 1048577, 2 Mi, 4 Mi columns), for the verdict's lines, kernel against
# kernel where a PyTorch time was host-bound, and f32 1 Mi against native (prediction:
# 1.74-1.81x as in seven runs).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
DT=f32
timeout 420 $K sweep softmax --rows 4096 --cols 32..1048576:x2,33,255,1000,4097,12345,16385,65537 --max-elements 2^31 --dtype $DT --variants auto --torch --rep-ms 30 --rotate auto --plot "$OUT/softmax-sweep-done-$DT.svg" --csv "$OUT/softmax-sweep-done-$DT.csv" > "$OUT/sweep.log" 2>&1
echo "sweep exit $?" >> "$S"
el sweep
grep -m1 -i "copy ceiling" "$OUT/sweep.log" | cut -c1-200 >> "$S"
grep "against PyTorch native\|against their GPU times" "$OUT/sweep.log" | cut -c1-900 >> "$S"
python3 -c "
import csv
for r in csv.DictReader(open('$OUT/softmax-sweep-done-$DT.csv')):
    if r['variant'] in ('torch_native','torch_compile','kernlab_do_bench') and r.get('queued_ms'):
        print('q', r['variant'], r['cols'], round(float(r['median_ms'])*1e3,2), round(float(r['queued_ms'])*1e3,2), 'hb' if 'host-bound' in (r['note'] or '') else '')" >> "$S"
done_table "$OUT/softmax-sweep-done-$DT.csv" >> "$S"
cat "$S"
