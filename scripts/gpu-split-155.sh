#!/usr/bin/env bash
# GPU batch (thirty-second session), one call (~4 min warm): v3's shifted load with its whole
# packs' loads issued before the partial packs' (KL_V3_SHIFT_SPLIT=1, the new default) against
# the one-loop form (=0). Run 154 put 10% of the shifted form's lag at bf16 4097 on the shift
# itself (2778 / 2689 against aligned 4104's 3081 / 3099, the same 160-thread block). The SASS
# of the one-loop form waits for the partial pack's lane loads inside its slot's branch before
# the warp sends its next slot's 16-byte load: the warps holding a row's first and last packs
# load in two round trips. Prediction: the split form reads 5-10% over the one-loop form at
# bf16 and f16 odd widths (4097 toward 3000-3080, at or past v8's 2920-3010), and f32's less
# (its K = 4 rows hold more packs a warp). First the softmax GPU tests that run the shifted
# form (the new code), then two interleaved rounds: v3 split, v3 one-loop, v8.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_tests 150 ops::softmax_v3_shifts_odd_rows ops::softmax_matches_reference_on_awkward_shapes \
  ops::softmax_special_values_follow_pytorch ops::softmax_strided_rows ops::softmax_cuda_writes_rows_at_the_output_stride \
  ops::softmax_auto_sends_odd_widths_to_v8_on_hopper
el tests
W="4096x1025 4096x2049 4096x3001 4096x4097 4096x8193 4096x12345"
for r in 1 2; do
  for dt in bf16 f16; do
    bench_points s$r$dt "$W" v3_block_regs,v8_onchip $dt
    bench_points o$r$dt "$W" v3_block_regs $dt KERNLAB_NVRTC_DEFINES=KL_V3_SHIFT_SPLIT=0
  done
  el "round $r"
done
bench_points sf32 "4096x4097 4096x12345" v3_block_regs,v8_onchip f32
bench_points of32 "4096x4097 4096x12345" v3_block_regs f32 KERNLAB_NVRTC_DEFINES=KL_V3_SHIFT_SPLIT=0
el f32
cat "$S"
