#!/usr/bin/env bash
# GPU batch (tenth session): the softmax GPU tests (the new auto-pick test among them) on the
# build where auto sends odd widths from 641 columns to v8; auto at a few odd widths.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_tests 200 softmax
grep -E "softmax_auto_sends" "$OUT/tests-softmax.log" | head -5 >> "$S"
el tests
timeout 60 $K bench softmax --shape 4096x639 --shape 4096x641 --shape 4096x781 --shape 4096x3001 --dtype f32,bf16 --variants auto --rep-ms 10 --warmup-ms 4 --csv "$OUT/auto.csv" > "$OUT/auto.log" 2>&1
python3 -c "
import csv
print(*[r['dtype']+':'+r['cols']+':'+r.get('picked','')+'='+(str(round(float(r['gbps']))) if r['status']=='ok' else r['status'][:10]) for r in csv.DictReader(open('$OUT/auto.csv'))])" >> "$S"
el auto
cat "$S"
