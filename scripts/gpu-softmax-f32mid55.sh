#!/usr/bin/env bash
# GPU batch (twelfth session): packed f32 rows of 16385–32768 columns, where v3 runs eight
# slots a thread in blocks of 544–1024 threads; b16rule54 had v8 ahead at 24576 (4068 against
# 3927) and behind at 32768. v3 against v8 at widths between, two repeats.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 150 $K sweep softmax --rows 4096 --cols 18432..30720:2048 --dtype f32 --variants v3_block_regs,v8_onchip --rep-ms 15 --warmup-ms 5 --repeat 2 --csv "$OUT/f.csv" > "$OUT/f.log" 2>&1; echo "sweep exit $?" >> "$S"
python3 -c "
import csv
print(*[r['variant'][:2]+':'+r['cols']+'='+(str(round(float(r['gbps'])))+'±'+str(round(100*float(r['spread'] or 0),1)) if r['status']=='ok' else r['status'][:8]) for r in csv.DictReader(open('$OUT/f.csv'))])" >> "$S"
el f32mid
cat "$S"
