#!/usr/bin/env bash
# GPU batch (twelfth session): 16-bit rows of 32768–65536 columns. The width rule sends
# 16385–32768 to v8 and 32769–65536 to v3 (eight slots a thread); the rotated done sweep had
# bf16 65536 (v3) at 3741 GB/s against 65537 (v8) at 3982. v3 against v8 there, bf16 and f16,
# two repeats.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 150 $K sweep softmax --rows 4096 --cols 32768,40960,49152,65536 --dtype bf16,f16 --variants v3_block_regs,v8_onchip --rep-ms 20 --warmup-ms 5 --repeat 2 --csv "$OUT/w.csv" > "$OUT/w.log" 2>&1; echo "sweep exit $?" >> "$S"
python3 -c "
import csv
print(*[r['variant'][:2]+':'+r['dtype']+':'+r['cols']+'='+(str(round(float(r['gbps'])))+'±'+str(round(100*float(r['spread'] or 0),1)) if r['status']=='ok' else r['status'][:8]) for r in csv.DictReader(open('$OUT/w.csv'))])" >> "$S"
el b16wide
cat "$S"
