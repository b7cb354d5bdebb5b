#!/usr/bin/env bash
# GPU batch (twenty-ninth session), one call of ~6 min: TARGETS.md's f32 softmax shapes with both
# sides rotated and timed in three interleaved rounds (--repeat 3 on both sides: the median round
# kept and the rounds' spread shown), then the done-means 1.8x point, f32 2048x1048576, in three
# rounds likewise. Prediction: 8192x4096 at 3950-4010 (0-1% short of 4000), 12672 and 32768 over
# 4000, 1024x131072 at 3850-3880 (short of 3900), 256x1 Mi at 3450-3520 (short of 3900, ~2x
# native), f32 2048x1 Mi at 1.74-1.81x native (nine runs so far).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
timeout 330 $K bench softmax --dtype f32 --shape 8192x4096 --shape 4096x256 --shape 4096x1024 --shape 4096x12672 --shape 4096x32768 --shape 1024x131072 --shape 256x1048576 --variants auto --torch --rep-ms 30 --rotate auto --repeat 3 --csv "$OUT/targets.csv" > "$OUT/targets.log" 2>&1
echo "targets exit $?" >> "$S"
grep "PyTorch baselines (\|against PyTorch native\|against their queued times" "$OUT/targets.log" | cut -c1-700 >> "$S"
done_table "$OUT/targets.csv" >> "$S"
el targets
timeout 200 $K bench softmax --dtype f32 --shape 2048x1048576 --variants auto --torch --rep-ms 30 --rotate auto --repeat 3 --csv "$OUT/mi.csv" > "$OUT/mi.log" 2>&1
echo "1 Mi exit $?" >> "$S"
done_table "$OUT/mi.csv" >> "$S"
python3 -c "
import csv
for r in csv.DictReader(open('$OUT/mi.csv')):
    if r['status'] == 'ok': print('mi', r['variant'], r['gbps'], r['spread'], r.get('repeat_medians_ms', ''))" >> "$S"
el mi
cat "$S"
