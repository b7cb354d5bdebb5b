#!/usr/bin/env bash
# GPU batch (eleventh session): the narrow widths where auto trailed PyTorch native by µs
# (f32/bf16 32, 33, f32 512 in the done sweep). auto (v2's 16-byte packs), v2 forced to its
# scalar form (KERNLAB_V2=scalar: one element a lane, four times the lanes a row, as
# PyTorch's warp softmax) and torch.softmax by baselines/torch_baselines.py, interleaved three
# times; then auto and scalar without the L2 flush.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
W=32,33,64,128,256,512
SH=4096x32,4096x33,4096x64,4096x128,4096x256,4096x512
for rep in 1 2 3; do
  for dt in f32 bf16; do
    timeout 60 $K sweep softmax --rows 4096 --cols $W --dtype $dt --variants auto --rep-ms 30 --csv "$OUT/auto.csv" > "$OUT/auto.log" 2>&1
    echo "auto:   $(tab "$OUT/auto.csv")" >> "$S"
    KERNLAB_V2=scalar timeout 60 $K sweep softmax --rows 4096 --cols $W --dtype $dt --variants v2_warp_row --rep-ms 30 --csv "$OUT/scalar.csv" > "$OUT/scalar.log" 2>&1
    echo "scalar: $(tab "$OUT/scalar.csv")" >> "$S"
    timeout 120 python3 baselines/torch_baselines.py --op softmax --shapes $SH --dtype $dt --variants torch_native --rep-ms 30 --json "$OUT/native.json" --quiet > "$OUT/native.log" 2>&1
    echo "native: $(ttab "$OUT/native.json" 2>&1 | tail -1)" >> "$S"
  done
done
el interleaved
for dt in f32 bf16; do
  timeout 60 $K sweep softmax --rows 4096 --cols $W --dtype $dt --variants auto --rep-ms 30 --no-flush --csv "$OUT/auto.csv" > "$OUT/auto.log" 2>&1
  echo "auto no flush:   $(tab "$OUT/auto.csv")" >> "$S"
  KERNLAB_V2=scalar timeout 60 $K sweep softmax --rows 4096 --cols $W --dtype $dt --variants v2_warp_row --rep-ms 30 --no-flush --csv "$OUT/scalar.csv" > "$OUT/scalar.log" 2>&1
  echo "scalar no flush: $(tab "$OUT/scalar.csv")" >> "$S"
done
el noflush
cat "$S"
