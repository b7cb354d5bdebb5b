#!/usr/bin/env bash
# GPU batch (fifteenth session): issue 5's done-means sweep at its own 4096 rows, one dtype a
# call (`bash scripts/gpu-done69.sh f32`, then `bf16`): `auto` (with the 16-bit cluster rule)
# against PyTorch native, torch.compile and the lecture's Triton kernel, 32…4 Mi columns
# (powers of two and odd widths between), rotated, every point validated before it is timed.
# The cap is 2^31 elements, what the GPU machine's 128 GiB of host memory allows for a point
# (input, output, f64 values while the input is made; past 2^28 elements the reference is
# sampled rows): 4096 rows to 524288 columns, 2048 at 1 Mi, 512 at 4 Mi. Then, with the time
# left, a stream (GeLU v2, one read and one write an element) over the same wide shapes.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
DT=${1:?dtype}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
timeout 470 $K sweep softmax --rows 4096 --cols 32..4194304:x2,33,255,1000,4097,12345,16385,65537,300007,1048577 --max-elements 2^31 --dtype "$DT" --variants auto --torch --rep-ms 30 --rotate auto --plot "$OUT/softmax-sweep-done-$DT.svg" --csv "$OUT/softmax-sweep-done-$DT.csv" > "$OUT/sweep.log" 2>&1; echo "sweep exit $?" >> "$S"
el sweep
# The stream one width a call while the time lasts (the f32 call's one sweep of all nine wide
# widths ran out of time: making 2^31 random inputs on the host takes most of a point).
for c in 131072 1048576 4194304 262144; do
  left=$(( 555 - $(date +%s) + t0 ))
  [ "$left" -gt 40 ] || break
  timeout "$left" $K sweep gelu --rows 4096 --cols $c --max-elements 2^31 --dtype "$DT" --variants v2_vec16 --rep-ms 30 --rotate auto --csv "$OUT/stream-$DT-$c.csv" > "$OUT/stream-$c.log" 2>&1; echo "stream $c exit $?" >> "$S"
done
el stream
python3 - "$OUT" "$DT" <<'PY'
import csv, glob, sys
rows = [r for f in sorted(glob.glob(f"{sys.argv[1]}/stream-{sys.argv[2]}-*.csv")) for r in csv.DictReader(open(f))]
if rows:
    w = csv.DictWriter(open(f"{sys.argv[1]}/stream-{sys.argv[2]}.csv", "w"), fieldnames=list(rows[0]))
    w.writeheader(); w.writerows(rows)
PY
grep -m2 -i "copy\|ceiling" "$OUT/sweep.log" | cut -c1-200 >> "$S"
grep -i "sampled\|note:" "$OUT/sweep.log" | head -5 | cut -c1-200 >> "$S"
done_table "$OUT/softmax-sweep-done-$DT.csv" "$OUT/stream-$DT.csv" >> "$S"
cat "$S"
