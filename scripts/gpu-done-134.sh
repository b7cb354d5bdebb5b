#!/usr/bin/env bash
# GPU batch (twenty-ninth session), one call of ~5 min: f16's µs-sized widths with `--repeat 5` on
# both sides (run 132's f16 sweep had `auto` behind native at 32, 33 and 255 columns by
# 0.18-0.45 µs in one round), then the bf16 done-means sweep again with the code of the f32 and
# f16 sweeps (run 127's predates `queued_ms`, so its verdict had no second line).
# Predictions: the f16 points come out level within the rounds' spread or ahead; bf16 as run 127
# (1 Mi 2.0-2.1x native, 131072 ~2.07x; at or ahead at 26-27 of 27 points).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
DT=f16
timeout 150 $K bench softmax --shape 4096x32 --shape 4096x33 --shape 4096x64 --shape 4096x128 --shape 4096x255 --shape 4096x256 --shape 4096x512 --shape 4096x1024 --dtype $DT --variants auto --torch --rotate auto --rep-ms 30 --repeat 5 --csv "$OUT/rounds-$DT.csv" > "$OUT/rounds-$DT.log" 2>&1
echo "rounds $DT exit $?" >> "$S"
grep "against PyTorch native\|against their queued times" "$OUT/rounds-$DT.log" | cut -c1-900 >> "$S"
ustab "$OUT/rounds-$DT.csv" >> "$S"
el "rounds $DT"
DT=bf16
done_sweep "$DT" 400
el sweep
sweep_summary "$DT"
cat "$S"
