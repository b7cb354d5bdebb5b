#!/usr/bin/env bash
# GPU batch (written in the twenty-eighth session for the next lease), two calls:
# `bash scripts/gpu-done-130.sh rounds` (~5 min): the replay's and the real baselines script's GPU
# tests (the script now times gelu/softmax in --repeat rounds, asserted there), then the µs-sized
# f32 and bf16 widths with `--repeat 5` on both sides: every variant of a shape timed in five
# interleaved rounds, and the verdict counting a gap within both sides' spreads as level.
# Prediction: the f32 32-1024 points that single runs listed as behind compile by 0.2-0.9 µs
# (runs 125, 128b) come out level within the spread, or ahead; any still behind beyond it is a
# real gap to work on.
# `bash scripts/gpu-done-130.sh sweep` (~9 min): the f32 done-means sweep whole (run 128's was
# cut off at 300 s; run 125's command with the 540 s it needs), with the queued medians and the
# verdict's lines; the CSV is rewritten after each point, so a cut-off run still returns
# kernlab's points. Prediction: f32 1 Mi at 1.74-1.81x native (eight runs).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
case "${1:?rounds or sweep}" in
rounds)
  gpu_tests 200 kernlab_do_bench kernlab_do_bench
  gpu_tests 200 baselines real_baselines_script
  el tests
  for DT in f32 bf16; do
    timeout 150 $K bench softmax --shape 4096x32 --shape 4096x33 --shape 4096x64 --shape 4096x128 --shape 4096x255 --shape 4096x256 --shape 4096x512 --shape 4096x1024 --dtype $DT --variants auto --torch --rotate auto --rep-ms 30 --repeat 5 --csv "$OUT/rounds-$DT.csv" > "$OUT/rounds-$DT.log" 2>&1
    echo "rounds $DT exit $?" >> "$S"
    grep "PyTorch baselines (\|against PyTorch native\|against their queued times" "$OUT/rounds-$DT.log" | cut -c1-900 >> "$S"
    ustab "$OUT/rounds-$DT.csv" >> "$S"
    python3 -c "
import csv
for r in csv.DictReader(open('$OUT/rounds-$DT.csv')):
    if r['status'] == 'ok' and r['spread']: print('spread', r['variant'], r['cols'], round(float(r['spread']), 3))" >> "$S"
    el "rounds $DT"
  done ;;
sweep)
  DT=f32
  done_sweep "$DT" 540
  el sweep
  sweep_summary "$DT" ;;
esac
cat "$S"
