#!/usr/bin/env bash
# GPU batch (thirty-first session), one call (~30 s on a warm machine): `auto`'s new rule, 16-bit
# odd widths up to V3_SHIFT_16_UPTO (1017) on v3's shifted form. The heuristic's odd-width GPU
# test, the shifted form's own (its K = 8 kernels, the widest row it holds, the kernel each
# layout takes; written after runs 147-150), then `auto` beside v3 and v8 at bf16 and f16 odd widths either side of the bound.
# Prediction: the test passes; `auto` picks v3 to 1017 and v8 from 1019 and reads as its pick.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_tests 90 softmax_v3_shifts_odd_rows ops::softmax_auto_sends_odd_widths_to_v8_on_hopper \
  ops::softmax_auto_launch_replays_exactly
el tests
for dt in bf16 f16; do
  bench_points a$dt "4096x701 4096x1017 4096x1019 4096x1025" auto,v3_block_regs,v8_onchip $dt
done
el bench
cat "$S"
