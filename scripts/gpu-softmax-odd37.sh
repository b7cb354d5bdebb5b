#!/usr/bin/env bash
# GPU batch (tenth session): odd widths (rows that cannot move 16-byte packs from their start)
# from 255 to 4095, f32 and bf16: v3's scalar path against v8 (which peels a scalar head and
# tail around packs), with auto sending odd widths from 1025 to v8; then the softmax GPU tests.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
tab2() { python3 -c "
import csv
t = {}
for r in csv.DictReader(open('$1')):
    t.setdefault((r['dtype'], int(r['cols'])), []).append(r['variant'][:4]+(('('+r['picked'][:4]+')') if r.get('picked') else '')+'='+(str(round(float(r['gbps']))) if r['status']=='ok' else r['status'][:10]))
for k in sorted(t): print(*k, *t[k])"; }
timeout 200 $K sweep softmax --rows 4096 --cols 255,257,385,511,641,781,901,1023,1025,1537,2001,3001,4095 --dtype f32,bf16 --variants v3_block_regs,v8_onchip,auto --rep-ms 10 --warmup-ms 4 --csv "$OUT/odd.csv" > "$OUT/odd.log" 2>&1
echo "sweep exit $?" >> "$S"; tab2 "$OUT/odd.csv" >> "$S"
el odd
gpu_tests 200 softmax
el tests
cat "$S"
