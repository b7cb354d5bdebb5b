#!/usr/bin/env bash
# GPU batch (eighth session): what a pure stream (GeLU v2: one 16-byte read and one write an
# element, no reduction) reaches under the same do_bench timing at the sizes of the softmax
# sweep's medium widths (4096 rows, f32), beside softmax auto, with and without the L2 flush:
# how much of the gap to 4.0 TB/s at 4096–16384 columns is the problem size, not the kernel.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
SH="--shape 4096x4096 --shape 4096x8192 --shape 4096x16384 --shape 4096x32768 --shape 4096x65536"
for fl in "" "--no-flush"; do
  timeout 60 $K bench gelu $SH --dtype f32 --variants v2_vec16 --rep-ms 15 --warmup-ms 5 $fl --csv "$OUT/g.csv" > "$OUT/g.log" 2>&1
  timeout 60 $K bench softmax $SH --dtype f32 --variants auto --rep-ms 15 --warmup-ms 5 $fl --csv "$OUT/s.csv" > "$OUT/s.log" 2>&1
  echo "flush${fl:+ off}: $(python3 -c "
import csv
g={r['shape']: r for r in csv.DictReader(open('$OUT/g.csv'))}
print(*[r['shape']+' gelu '+str(round(float(g.get(r['shape'],{}).get('gbps') or 0)))+' softmax '+str(round(float(r['gbps'] or 0)))+' ('+r.get('picked','')+')' for r in csv.DictReader(open('$OUT/s.csv'))], sep=' | ')")" >> "$S"
done
grep -m1 -i "copy" "$OUT/s.log" | cut -c1-160 >> "$S"
cat "$S"
