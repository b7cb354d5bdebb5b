#!/usr/bin/env bash
# GPU batch (twelfth session): the 16-bit v8 rule extended to 65536 columns. The dispatch tests
# (softmax), `auto` at bf16/f16 32768–65536 (should now run v8), and v3 against v8 below the
# rule (16-bit 8192–16384) and for f32 16384–32768, where v3 stays, two repeats.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_tests 200 softmax
el tests
timeout 60 $K sweep softmax --rows 4096 --cols 32768,49152,65536 --dtype bf16,f16 --variants auto --rep-ms 20 --warmup-ms 5 --csv "$OUT/a.csv" > "$OUT/a.log" 2>&1
python3 -c "
import csv
print('auto:', *[r['dtype']+':'+r['cols']+'='+(str(round(float(r['gbps']))) if r['status']=='ok' else r['status'][:8])+'('+r['picked'][:2]+')' for r in csv.DictReader(open('$OUT/a.csv'))])" >> "$S"
timeout 120 $K sweep softmax --rows 4096 --cols 8192,12288,16384 --dtype bf16 --variants v3_block_regs,v8_onchip --rep-ms 20 --warmup-ms 5 --repeat 2 --csv "$OUT/b.csv" > "$OUT/b.log" 2>&1
timeout 120 $K sweep softmax --rows 4096 --cols 16384,24576,32768 --dtype f32 --variants v3_block_regs,v8_onchip --rep-ms 20 --warmup-ms 5 --repeat 2 --csv "$OUT/c.csv" > "$OUT/c.log" 2>&1
for f in b c; do python3 -c "
import csv
print(*[r['variant'][:2]+':'+r['dtype']+':'+r['cols']+'='+(str(round(float(r['gbps'])))+'±'+str(round(100*float(r['spread'] or 0),1)) if r['status']=='ok' else r['status'][:8]) for r in csv.DictReader(open('$OUT/$f.csv'))])" >> "$S"; done
el ab
cat "$S"
