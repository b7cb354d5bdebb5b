#!/usr/bin/env bash
# GPU batch (fifteenth session, last): f16, which issue 5 names with f32 and bf16 and which the
# done-means sweeps leave out, at seven widths of that sweep (4096 rows, 2^31-element cap,
# rotated, --torch): `auto` with the 16-bit rule against PyTorch native and torch.compile.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 230 $K sweep softmax --rows 4096 --cols 4096,16385,65536,131072,262144,524288,1048576 --max-elements 2^31 --dtype f16 --variants auto --torch --rep-ms 30 --rotate auto --csv "$OUT/f16.csv" > "$OUT/f16.log" 2>&1; echo "f16 exit $?" >> "$S"
el f16
grep -m1 -i "copy ceiling" "$OUT/f16.log" | cut -c1-120 >> "$S"
done_table "$OUT/f16.csv" >> "$S"
cat "$S"
