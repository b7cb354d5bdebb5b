#!/usr/bin/env bash
# GPU batch (written in the thirty-third session; run 164 in the thirty-fourth, on fd0d230, which
# still had the knob: it was removed after this run), one call (~2 min warm): v3 at K = 12 and
# 16 (`KERNLAB_V3=k=12|16`: one warp a row where the row's packs allow, blocks of at most 128
# threads). Run 160 found v8 14% faster where 32 rows an SM fit
# (bf16 2049) than where 16 did (2177); v3 at K = 4 holds 16 rows an SM at 2177 (96 threads,
# 40 registers). At K = 12 a 16-bit row of 257-384 packs is one warp: the shifted kernels take
# 89-96 registers (ptxas, sm_90a), so 21-23 rows an SM; K = 16 (120-121 registers) only 16.
# Prediction: if rows an SM decide it, K = 12 gains 5-10% over auto (v3 at K = 4) at bf16 and
# f16 2057-3065 (odd) and aligned 2176-3072; K = 16 gains nothing at 3073-4089.
# Measured: K = 12 ran 9-24% and K = 16 14-29% slower than auto everywhere (docs/perf-notes.md).
# Every point is validated against the f64 reference before it is timed (bench).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
W="4096x2057 4096x2177 4096x2433 4096x2817 4096x3001 4096x3065 4096x3457 4096x4089 4096x2176 4096x3072"
for r in 1 2; do
  for dt in bf16 f16; do
    bench_points a$r$dt "$W" auto $dt
    bench_points k12$r$dt "$W" v3_block_regs $dt KERNLAB_V3=k=12
    bench_points k16$r$dt "$W" v3_block_regs $dt KERNLAB_V3=k=16
  done
  el "round $r"
done
cat "$S"
