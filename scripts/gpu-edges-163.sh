#!/usr/bin/env bash
# GPU batch (thirty-third session), one call (~1 min warm): the edges of auto's band of 16-bit
# odd widths on v3 (V3_SPLIT_16_BAND, 2177-3457 from run 159's points). Run 160 put v8's drop
# at the row that no longer fits 32 threads of eight packs: from 257 packs (2056 16-bit columns)
# v8 takes 64 threads and two waves.
# Prediction: v3 leads v8 from 2057 columns already (the band's lower edge could be 2057); the
# upper crossover lies between 3457 and 3585, where v8's 64 threads fill toward eight packs.
# Two rounds, bf16 and f16, v8 and v3, 4096 rows.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
W="4096x2057 4096x2089 4096x2121 4096x2153 4096x3489 4096x3521 4096x3553"
for r in 1 2; do
  for dt in bf16 f16; do
    bench_points e$r$dt "$W" v8_onchip,v3_block_regs $dt
  done
  el "round $r"
done
cat "$S"
