#!/usr/bin/env bash
# GPU batch (thirty-third session), one call (~5 min warm): v3's split shifted load as kernels
# of their own (softmax_v3_block_regs_shiftsplit_*, 16-bit rows from 1018 columns), and
# `auto`'s band of 16-bit odd widths kept on them (V3_SPLIT_16_BAND, 2305-3329) rather than v8.
# 1. The softmax GPU tests that run the shifted forms and the rule, and the PTX tests.
# 2. Two rounds in bf16 and f16 at 4096 rows across and past the band (2049-3585): auto, v8 and
#    v3. Prediction: auto reads as v3 inside the band, 2-10% over v8 (run 158's figures with the
#    split built behind a width branch), and as v8 outside it.
# 3. v3's one-loop kernels, now built with no split branch at all, at bf16 511 and 1001: as
#    before the split existed (run 157's one-loop build: 1494 / 1548 at 1001); v3 at 4097 and
#    12345 now on the split kernels: as run 158's KL_V3_SHIFT_SPLIT=1 build or better.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
gpu_tests 240 ops::softmax_v3_shifts_odd_rows ops::softmax_matches_reference_on_awkward_shapes \
  ops::softmax_special_values_follow_pytorch ops::softmax_strided_rows ops::softmax_cuda_writes_rows_at_the_output_stride \
  ops::softmax_auto_sends_odd_widths_to_v8_on_hopper softmax_auto_launch_replays_exactly ptx
el tests
W="4096x2049 4096x2177 4096x2241 4096x2305 4096x2433 4096x2561 4096x2817 4096x3001 4096x3201 4096x3329 4096x3457 4096x3585"
for r in 1 2; do
  for dt in bf16 f16; do
    bench_points b$r$dt "$W" auto,v8_onchip,v3_block_regs $dt
  done
  bench_points n$r "4096x511 4096x1001 4096x4097 4096x12345" v3_block_regs bf16
  el "round $r"
done
cat "$S"
