#!/usr/bin/env bash
# GPU batch (prepared in the nineteenth session for the next one; run it first): every GPU test
# executable (KERNLAB_REQUIRE_GPU=1, KERNLAB_REQUIRE_NVRTC=1) on v8's packed kernel
# (softmax_v8_packed_*, measured by bench only) and v9's packed kernels (run by the split-row
# test as `run_v9_packed`); then v9's packed kernels (KERNLAB_V9=packed=1) against the default
# at aligned rows v9 runs, v9_gridsync itself (a refused packed kernel then fails the point,
# where `auto` would fall back), rotated, interleaved twice; then v3 against v8 (now packed)
# at the aligned widths `auto` gives v3; each point validated first.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
gpu_tests 380
el tests
v9() { timeout 40 env "$@" $K bench softmax --dtype $dt --shape 256x1048576 --shape 128x2097152 --shape 64x4194304 --variants v9_gridsync --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n.csv" > "$OUT/$n.log" 2>&1; echo "$n $(ptab "$OUT/$n.csv")" | tee -a "$S"; }
for r in 1 2; do
  for dt in bf16 f32; do
    n=v9-default-$dt-$r; v9 KERNLAB_V9=
    n=v9-packed-$dt-$r; v9 KERNLAB_V9=packed=1
  done
done
el v9
# Does v8's packed kernel now lead v3 where auto picks v3 (aligned 8192–32768)? Once each.
for dt in f32 bf16; do
  n=v3v8-$dt; timeout 40 $K bench softmax --dtype $dt --shape 4096x8192 --shape 4096x16384 --shape 4096x32768 --variants v3_block_regs,v8_onchip --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n.csv" > "$OUT/$n.log" 2>&1
  echo "$n $(vtab "$OUT/$n.csv")" | tee -a "$S"
done
el v3v8
cat "$S"
