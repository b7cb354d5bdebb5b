#!/usr/bin/env bash
# GPU batch (thirty-first session): the three short runs after scripts/gpu-shift-147.sh, as
# they were run (each one call of ~10-20 s on a warm machine), by their run numbers:
# `148`: v3's shifted form at bf16 4097 and 8193 with K forced to 1, 2 and 4 slots a thread
#   (KERNLAB_V3=k=N), against v8 (does the block's shape explain its lag at 4097?);
# `149`: v3, v8 and `auto` at the odd widths around V8_ODD_FROM (257-781), bf16 and f32;
# `150`: v3 against v8 at 16-bit odd widths 641-1025, bf16 and f16, two rounds.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
case "${1:?148, 149 or 150}" in
148) for k in 1 2 4; do
       bench_points k$k "4096x4097 4096x8193" v3_block_regs,v8_onchip bf16 KERNLAB_V3=k=$k
     done ;;
149) for dt in bf16 f32; do
       bench_points n$dt "4096x257 4096x385 4096x511 4096x639 4096x781" v3_block_regs,v8_onchip,auto $dt
     done ;;
150) for r in 1 2; do for dt in bf16 f16; do
       bench_points r$r$dt "4096x641 4096x701 4096x781 4096x901 4096x1001 4096x1025" v3_block_regs,v8_onchip $dt
     done; done ;;
esac
cat "$S"
