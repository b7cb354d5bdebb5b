#!/usr/bin/env bash
# GPU batch (thirty-second session), one call (~3 min warm): two things.
# 1. The thirty-first session's inference on v3's shifted form at bf16 4097 (2786 GB/s against
#    the aligned 4096's 3236): its 513 packs and shifted head make the block 160 threads, not
#    128, and at 40 registers an SM holds 10 rows instead of 12. A control that takes the shift
#    out: aligned rows of 4104 columns (513 packs, the vec path, also 160 threads at K = 4).
#    Prediction: if the block's shape is the cause, aligned 4104 reads as low as shifted 4097
#    (about 2800), well under aligned 4096; K = 8 (96 threads; more registers) is no better.
#    Two rounds, v3 and v8, bf16.
# 2. TARGETS.md's f32 softmax shapes, one round (not run since the twenty-ninth session).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
for r in 1 2; do
  bench_points g$r "4096x4096 4096x4104 4096x4097" v3_block_regs,v8_onchip bf16
  bench_points k8r$r "4096x4104 4096x4097" v3_block_regs bf16 KERNLAB_V3=k=8
done
el geometry
timeout 200 $K bench softmax --dtype f32 --shape 8192x4096 --shape 4096x256 --shape 4096x1024 --shape 4096x12672 --shape 4096x32768 --shape 1024x131072 --shape 256x1048576 --variants auto --torch --rep-ms 30 --rotate auto --csv "$OUT/targets.csv" > "$OUT/targets.log" 2>&1
echo "targets exit $?" >> "$S"
grep "against PyTorch native\|settled" "$OUT/targets.log" | cut -c1-500 >> "$S"
done_table "$OUT/targets.csv" >> "$S"
el targets
cat "$S"
