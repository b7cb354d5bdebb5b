#!/usr/bin/env bash
# GPU batch (twentieth session): the split-row GPU test (v9 after its packed kernels went);
# then `auto` with the PyTorch columns at ../shared/TARGETS.md's softmax shapes (f32, rotated,
# three repeats of ours); then the small widths the done-means sweep found short of native or
# torch.compile (f32 32, 64, 256; bf16 32, 64), two rounds, each with its own PyTorch run, to
# see whether those gaps outlast the run-to-run spread of 5–7 µs calls; then f32 2048×1 Mi twice
# with its PyTorch run (1.81× native in the nineteenth session's sweep, 1.78× in the twentieth's).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
gpu_tests 150 split softmax_split
el tests
timeout 240 $K bench softmax --dtype f32 --shape 8192x4096 --shape 4096x256 --shape 4096x1024 --shape 4096x12672 --shape 4096x32768 --shape 1024x131072 --shape 256x1048576 --variants auto --torch --rep-ms 30 --rotate auto --repeat 3 --seed 1 --csv "$OUT/targets.csv" > "$OUT/targets.log" 2>&1
echo "targets exit $?" >> "$S"
done_table "$OUT/targets.csv" >> "$S"
el targets
for r in 1 2; do
  for dt in f32 bf16; do
    sh="--shape 4096x32 --shape 4096x64"; [ $dt = f32 ] && sh="$sh --shape 4096x256"
    n=small-$dt-$r
    timeout 120 $K bench softmax --dtype $dt $sh --variants auto --torch --rep-ms 30 --rotate auto --seed $r --csv "$OUT/$n.csv" > "$OUT/$n.log" 2>&1
    echo "$n exit $?" >> "$S"; done_table "$OUT/$n.csv" | tail -n +2 >> "$S"
  done
done
el small
for r in 1 2; do
  n=mi-f32-$r
  timeout 150 $K bench softmax --dtype f32 --shape 2048x1048576 --variants auto --torch --rep-ms 30 --rotate auto --seed $r --csv "$OUT/$n.csv" > "$OUT/$n.log" 2>&1
  echo "$n exit $?" >> "$S"; done_table "$OUT/$n.csv" | tail -n +2 >> "$S"
done
el mi
cat "$S"
