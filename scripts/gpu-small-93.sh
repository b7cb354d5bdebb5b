#!/usr/bin/env bash
# GPU batch (twenty-first session): the µs-sized softmax points against PyTorch native, with
# enough rounds to tell a gap from the run-to-run spread. Five rounds, interleaved: kernlab's
# `auto` (rotated, three repeats a process) and PyTorch native alone (baselines/
# torch_baselines.py, do_bench) at 4096×{32, 64, 128, 256}, f32 and bf16; every point of both
# validated against the f64 reference before it is timed. The comparison is made here, from
# the CSVs and JSONs (scripts/small-rounds.py).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
SH="--shape 4096x32 --shape 4096x64 --shape 4096x128 --shape 4096x256"
for r in 1 2 3 4 5; do
  for dt in f32 bf16; do
    n=kl-$dt-$r
    timeout 60 $K bench softmax --dtype $dt $SH --variants auto --rep-ms 50 --rotate auto --repeat 3 --seed $r --csv "$OUT/$n.csv" > "$OUT/$n.log" 2>&1
    echo "$n $(tab "$OUT/$n.csv")" >> "$S"
    n=pt-$dt-$r
    timeout 90 python3 baselines/torch_baselines.py --op softmax --dtype $dt --shapes 4096x32,4096x64,4096x128,4096x256 --variants torch_native --rep-ms 50 --seed $r --quiet --json "$OUT/$n.json" > "$OUT/$n.log" 2>&1
    echo "$n $(ttab "$OUT/$n.json")" >> "$S"
  done
  el round $r
done
cat "$S"
