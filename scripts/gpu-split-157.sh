#!/usr/bin/env bash
# GPU batch (thirty-second session), one call (~1 min warm): the rule runs 155-156 gave v3's
# shifted load, in one kernel: the split form for 16-bit rows from 1018 columns, the one loop
# below and for f32 (KL_V3_SPLIT_FROM). The softmax GPU tests that run the shifted form, then v3
# where each form now runs, against the one loop everywhere (KL_V3_SHIFT_SPLIT=0).
# Prediction: the tests pass; bf16 511 and 1001 and f32 511 and 4097 read as the one loop;
# bf16 3001, 4097 and 12345 read 3-8% over it.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_tests 150 ops::softmax_v3_shifts_odd_rows ops::softmax_matches_reference_on_awkward_shapes \
  ops::softmax_special_values_follow_pytorch ops::softmax_strided_rows ops::softmax_cuda_writes_rows_at_the_output_stride \
  ops::softmax_auto_sends_odd_widths_to_v8_on_hopper
el tests
for r in 1 2; do
  bench_points r${r}bf16 "4096x511 4096x1001 4096x3001 4096x4097 4096x12345" v3_block_regs bf16
  bench_points o${r}bf16 "4096x511 4096x1001 4096x3001 4096x4097 4096x12345" v3_block_regs bf16 KERNLAB_NVRTC_DEFINES=KL_V3_SHIFT_SPLIT=0
  bench_points r${r}f32 "4096x511 4096x4097" v3_block_regs f32
  bench_points o${r}f32 "4096x511 4096x4097" v3_block_regs f32 KERNLAB_NVRTC_DEFINES=KL_V3_SHIFT_SPLIT=0
  el "round $r"
done
cat "$S"
