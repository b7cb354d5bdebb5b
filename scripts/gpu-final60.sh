#!/usr/bin/env bash
# GPU batch (thirteenth session), last: the final build's softmax tests (v10's second form, the
# shared workspace code) and the autotune test (now rotated), then v10 beside auto at two
# wide shapes for the record.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_tests 200 softmax
gpu_tests 60 autotune
el tests
timeout 60 $K sweep softmax --rows 4096 --cols 262144,1048576 --max-elements 2^28 --dtype f32 --variants auto,v9_gridsync,v10_l2pass --rep-ms 20 --rotate auto --csv "$OUT/w.csv" > "$OUT/w.log" 2>&1; echo "sweep exit $?" >> "$S"
echo "$(tab "$OUT/w.csv")" >> "$S"
python3 -c "
import csv
print(*[r['variant'][:3]+':'+r['cols']+'='+(str(round(float(r['gbps']))) if r['status']=='ok' else r['status'][:10]) for r in csv.DictReader(open('$OUT/w.csv'))])" >> "$S"
el sweep
cat "$S"
