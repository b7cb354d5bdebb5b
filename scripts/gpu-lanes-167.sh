#!/usr/bin/env bash
# GPU batch (thirty-fourth session), one call (~3 min warm): v3's shifted rows with their partial
# first and last packs read and written in the widest aligned pieces (ld_lanes / st_lanes: an
# 8-byte half, a 4-byte word, or one 16-bit element) against one access an element as before
# (KERNLAB_NVRTC_DEFINES=KL_V3_LANES_BYTE=1). Run 166's ncu: bf16 4097 (shifted) issued 36% more
# store requests than the aligned 4104 (94,720 against 69,632: ~6 more a row) and 15% more
# instructions, in a 11% longer kernel. First the GPU tests of the shifted form (16 rows of
# 4097 and 1001 columns: every offset in a pack), then `v3_block_regs` both ways, two rounds.
# Prediction: 16-bit shifted rows gain 2-4% at 2177-4097 (about 2 piece accesses a partial pack
# instead of up to 7) and less at 1001; f32 (at most 3 elements a partial pack) within 1%.
# Run 167 ran it on a working tree over 6329f7f with ld_lanes/st_lanes in pieces and the
# KL_V3_LANES_BYTE switch, both removed after it (the kernels are as before, so this script no
# longer compares anything). Measured: level at 1001-3001, 1.5-4% slower at 16-bit 4097; ptxas
# branched where the element loop was predicated (264 branches against 52 in the SASS of
# shiftsplit_k4_bf16, 2072 instructions against 1576). Not kept.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
gpu_tests 240 softmax_v3_shifts_odd_rows
el tests
W="4096x1001 4096x2177 4096x3001 4096x4097"
for r in 1 2; do
  for dt in bf16 f16 f32; do
    bench_points new$r$dt "$W" v3_block_regs $dt
    bench_points old$r$dt "$W" v3_block_regs $dt KERNLAB_NVRTC_DEFINES=KL_V3_LANES_BYTE=1
  done
  el "round $r"
done
cat "$S"
